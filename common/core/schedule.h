/* SPDX-License-Identifier: Apache-2.0 */
/* The wake-up schedule of a peer run (docs/p2p.md "Schedule file"): the
 * global order in which agents wake, so that `dpasync sim --mode p2p` and
 * networked agents can follow the same one.  CSV:
 *
 *   step,agent      header, exactly these two names in this order
 *   1,alice         step numbers 1, 2, 3, ... in order, one per record
 *   2,bob           agent: a known agent id (graph.h)
 *
 * Read with the strict CSV reader (csv.h).  A missing or out-of-order step,
 * an unknown agent and a file without steps are errors: DP_EFORMAT with one
 * line "file:line: ...". */
#ifndef DP_SCHEDULE_H
#define DP_SCHEDULE_H

#include <stddef.h>

/* Largest number of steps accepted. */
#define DP_SCHEDULE_MAX_STEPS (1u << 28)

/* Read `path` against the agents ids[n] (distinct; DP_REQUIRE n >= 1):
 * *agent receives a malloc'ed array of *steps agent indices (< n), the
 * agent of step 1, 2, ...  Errors: DP_ENOENT, DP_EIO, DP_EFORMAT,
 * DP_ENOMEM; outputs untouched on failure. */
int dp_schedule_load(const char *path, const char *const *ids, size_t n, size_t **agent,
		     size_t *steps);

/* Write agent[steps] (indices into ids) to `path` atomically (file.h).
 * Errors: DP_EIO, DP_ENOMEM. */
int dp_schedule_write(const char *path, const char *const *ids, const size_t *agent,
		      size_t steps);

#endif
