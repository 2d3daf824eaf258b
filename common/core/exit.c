/* SPDX-License-Identifier: Apache-2.0 */
#include "common/core/exit.h"

#include <stddef.h>

#include "common/core/error.h"

#define PHASES (DP_EXIT_PHASE_RUN + 1)

/* The table of docs/design.md §10 "Exit status", row by row (a unit test
 * compares the two).  Columns: arguments and configuration, loading,
 * running.  A code not listed is the system's: 1 in every phase. */
static const struct {
	int err;
	unsigned char status[PHASES];
} policy[] = {
	/* What was asked is wrong whenever it is found. */
	{ DP_EINVAL, { 2, 2, 2 } },
	{ DP_EEXIST, { 2, 2, 2 } },
	{ DP_EREFUSED, { 2, 2, 2 } },
	/* A local input at fault when read; a peer or a program at run time. */
	{ DP_ENOENT, { 2, 2, 1 } },
	{ DP_EFORMAT, { 2, 2, 1 } },
	{ DP_ERANGE, { 2, 2, 1 } },
	{ DP_ECORRUPT, { 2, 2, 1 } },
	{ DP_ETLS, { 2, 2, 1 } },
	{ DP_EPROTO, { 2, 2, 1 } },
	{ DP_ENUMERIC, { 2, 2, 1 } },
	{ DP_EBUDGET, { 2, 2, 1 } },
	/* The configuration file the operator named cannot be read: a
	 * restart cannot help.  Later, the disk may. */
	{ DP_EIO, { 2, 1, 1 } },
	/* The machine or another process. */
	{ DP_ENOMEM, { 1, 1, 1 } },
	{ DP_ERNG, { 1, 1, 1 } },
	{ DP_ESTATE, { 1, 1, 1 } },
};

int dp_exit_status(int err, enum dp_exit_phase phase)
{
	DP_REQUIRE(err <= 0 && (unsigned)phase < PHASES);
	if (err == 0)
		return DP_EXIT_OK;
	for (size_t i = 0; i < sizeof(policy) / sizeof(policy[0]); i++)
		if (policy[i].err == err)
			return policy[i].status[phase];
	return DP_EXIT_FAIL;
}
