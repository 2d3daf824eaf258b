/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/opts.h"

#include <stdio.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "common/net/addr.h"

bool tst_opts_load(const struct dp_config_spec *spec, int argc, char **argv, int *status)
{
	enum dp_config_action action = DP_CONFIG_RUN;
	int rc;

	DP_REQUIRE(spec != NULL && spec->command && argc >= 1 && argv != NULL && status != NULL);
	rc = dp_config_load(spec, argc, argv, &action);
	if (rc == 0 && action == DP_CONFIG_HELP) {
		rc = dp_config_print_help(spec, stdout);
		*status = 0;
		if (rc == 0)
			return false;
	}
	if (rc != 0) {
		/* The test programs' usage status, whatever the cause: the
		 * tests that start them tell a refusal from a run by it. */
		dp_log_plain(spec->program, "%s", dp_error_detail(rc));
		*status = 2;
		return false;
	}
	return true;
}

int tst_opts_owners_check(void *owners)
{
	struct tst_opts_owners *o = owners;

	if (o->n == 0)
		return dp_error_set(DP_EINVAL, "--owners is required");
	return dp_addr_split("--learner", o->learner, 0, o->host, sizeof(o->host), &o->port);
}
