/* SPDX-License-Identifier: Apache-2.0 */
/* The open files learnerd needs (nofile.h). */
#include "common/net/nofile.h"

#include "common/net/httpd.h"

uint64_t dp_nofile_need(size_t max_pending, size_t n_owners, bool metrics)
{
	uint64_t conns = (uint64_t)max_pending + 2 * (uint64_t)n_owners + 4;

	return conns + (metrics ? DP_HTTPD_MAX_CONN_DEFAULT + 1 : 0) + DP_NOFILE_OTHER;
}

uint64_t dp_nofile_least(size_t n_owners)
{
	return (uint64_t)n_owners + DP_NOFILE_OTHER;
}
