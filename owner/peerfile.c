/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd --peer: the address book of the neighbours (docs/peer-agents.md
 * "Files"), id,addr CSV read through the CSV reader, again at every dial,
 * so that a restarted neighbour on a new port is found without restarting
 * the others. */
#include <stdlib.h>
#include <string.h>

#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/net/addr.h"

#include "owner/own.h"

/* Columns a and b of t by name, or a DP_EFORMAT naming the header. */
static int columns(const dp_csv_table *t, const char *a, const char *b, long *ia, long *ib)
{
	*ia = dp_csv_find((const char *const *)t->header, t->ncols, a);
	*ib = dp_csv_find((const char *const *)t->header, t->ncols, b);
	if (*ia < 0 || *ib < 0 || t->ncols != 2)
		return dp_error_set(DP_EFORMAT, "%s: header must be '%s,%s'", t->source, a, b);
	return 0;
}

int own_peerfile_addr(const char *path, const char *id, char *host, size_t host_size,
		      uint16_t *port)
{
	dp_csv_table t;
	long ii, ia;
	int r;

	r = dp_csv_table_load(&t, path, 0);
	if (r < 0)
		return r;
	r = columns(&t, "id", "addr", &ii, &ia);
	if (r == 0)
		r = DP_ENOENT;
	for (size_t i = 0; r == DP_ENOENT && i < t.nrows; i++) {
		if (strcmp(dp_csv_cell(&t, i, (size_t)ii), id) != 0)
			continue;
		r = dp_addr_split(id, dp_csv_cell(&t, i, (size_t)ia), 0, host, host_size, port);
	}
	if (r == DP_ENOENT)
		dp_error_set(r, "%s: no address for '%s'", path, id);
	dp_csv_table_free(&t);
	return r;
}
