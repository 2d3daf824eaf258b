/* SPDX-License-Identifier: Apache-2.0 */
/* The open files learnerd needs, and its listener's limits (nofile.h). */
#include "common/net/nofile.h"

#include "common/net/httpd.h"

/* a + b, or SIZE_MAX when it does not fit. */
static size_t add_sat(size_t a, size_t b)
{
	return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

dp_nofile_limits dp_nofile_listen(size_t max_pending, size_t max_pending_per_addr,
				  size_t n_owners)
{
	dp_nofile_limits lim;

	lim.max_pending = add_sat(max_pending, n_owners);
	lim.max_pending_per_addr = max_pending_per_addr ?
				   add_sat(max_pending_per_addr, n_owners) : 0;
	lim.max_conns = add_sat(add_sat(lim.max_pending, n_owners), 4);
	return lim;
}

uint64_t dp_nofile_need(size_t max_pending, size_t n_owners, bool metrics)
{
	uint64_t conns = dp_nofile_listen(max_pending, 0, n_owners).max_conns;

	return conns + (metrics ? DP_HTTPD_MAX_CONN_DEFAULT + 1 : 0) + DP_NOFILE_OTHER;
}

uint64_t dp_nofile_least(size_t n_owners)
{
	return (uint64_t)n_owners + DP_NOFILE_OTHER;
}
