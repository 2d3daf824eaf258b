/* SPDX-License-Identifier: Apache-2.0 */
/* The open files learnerd needs for a job (docs/learnerd.md
 * "Descriptors"), and the TLS listener's limits they come from
 * (docs/protocol.md §6 "Admission"): one formula, which learnerd's
 * listener is configured with (learner/server.c), learnerd raises its
 * RLIMIT_NOFILE to at start (learner/fdlimit.c) and `dpasync certs --kit`
 * writes as the LimitNOFILE= of the learner's systemd drop-in
 * (tools/lib/kit.c).  With the settings max-pending M and
 * max-pending-per-addr Ma, and N owners:
 *
 *   pending         M + N             connections not yet admitted: every
 *                                     owner back at once after a restart,
 *                                     and M strangers besides
 *   pending per address  Ma + N       the same from one address (every
 *                                     owner behind one NAT); 0 if Ma is 0
 *   conns = M + 2 N + 4               the listener's cap on live
 *                                     connections: the pending ones and
 *                                     every admitted owner, or M strangers,
 *                                     every owner and its reconnection
 *                                     racing its old connection
 *
 *   need  = conns
 *         + (64 + 1)                  with metrics: the HTTP server's cap
 *                                     and its listening socket
 *         + DP_NOFILE_OTHER           the rest
 *   least = N + DP_NOFILE_OTHER       one connection per owner and the rest */
#ifndef DP_NOFILE_H
#define DP_NOFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Descriptors besides connections: stdio, the TLS listener, the output
 * lock, trace.csv, a checkpoint or model being written, libuv's epoll,
 * eventfd and signal pipe, OpenSSL's files at start; with room to spare. */
#define DP_NOFILE_OTHER 32u

/* The TLS listener's admission limits (the table above), as
 * dp_listener_config and dp_conn_config take them. */
typedef struct dp_nofile_limits {
	size_t max_pending;            /* M + N */
	size_t max_pending_per_addr;   /* Ma + N, or 0 (no limit) when Ma is 0 */
	size_t max_conns;              /* M + 2 N + 4 */
} dp_nofile_limits;

/* The limits for the settings max_pending (M) and max_pending_per_addr
 * (Ma, 0: none) and n_owners owners.  Sums saturate at SIZE_MAX. */
dp_nofile_limits dp_nofile_listen(size_t max_pending, size_t max_pending_per_addr,
				  size_t n_owners);

/* What a learnerd with max_pending, n_owners owners and, when metrics, a
 * /metrics server (with its default connection cap) can use. */
uint64_t dp_nofile_need(size_t max_pending, size_t n_owners, bool metrics);

/* Below this not even one connection per owner fits. */
uint64_t dp_nofile_least(size_t n_owners);

#endif
