/* SPDX-License-Identifier: Apache-2.0 */
/* The open files learnerd needs for a job (docs/learnerd.md
 * "Descriptors"): one formula, which learnerd raises its RLIMIT_NOFILE to
 * at start (learner/fdlimit.c) and `dpasync certs --kit` writes as the
 * LimitNOFILE= of the learner's systemd drop-in (tools/lib/kit.c).
 *
 *   need  = (max-pending + 2 N + 4)   the TLS listener's cap on live
 *                                     connections: pending strangers,
 *                                     every owner and its reconnection
 *                                     racing its old connection
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

/* What a learnerd with max_pending, n_owners owners and, when metrics, a
 * /metrics server (with its default connection cap) can use. */
uint64_t dp_nofile_need(size_t max_pending, size_t n_owners, bool metrics);

/* Below this not even one connection per owner fits. */
uint64_t dp_nofile_least(size_t n_owners);

#endif
