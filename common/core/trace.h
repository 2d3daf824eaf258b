/* SPDX-License-Identifier: Apache-2.0 */
/* trace.csv, learnerd's row per iteration (docs/learnerd.md §4): its
 * columns, their order and how a row is printed.  learnerd writes it
 * (learner/trace.c) and `dpasync plot` and `report` read it
 * (tools/lib/rundata.c); this header is the one place that says what the
 * file holds, so the writer and the readers cannot drift apart.
 *
 * Columns, in this order:
 *   k          the iteration, from 1, strictly increasing
 *   time_unix  Unix time the update was applied (s, 6 decimals)
 *   owner      the owner's id
 *   wait_s     seconds the request waited in the learner's queue
 *   rtt_s      the query's round trip (s)
 *   eps_spent  the epsilon the owner reported spent (9 significant digits)
 *   staleness  updates of theta_L between the query's point and the update
 *              its answer makes
 *   job        the job id, the same on every row
 * Older traces stop after staleness (7 columns) or after eps_spent (6):
 * readers accept all three, learnerd --resume only the current one. */
#ifndef DP_TRACE_H
#define DP_TRACE_H

/* Column indices (0-based) of a row. */
enum dp_trace_column {
	DP_TRACE_K,
	DP_TRACE_TIME,
	DP_TRACE_OWNER,
	DP_TRACE_WAIT,
	DP_TRACE_RTT,
	DP_TRACE_EPS,
	DP_TRACE_STALENESS,
	DP_TRACE_JOB,
	DP_TRACE_NCOLUMNS       /* 8: the current format */
};

/* Columns of the two older formats. */
#define DP_TRACE_NCOLUMNS_6 6   /* before the staleness column */
#define DP_TRACE_NCOLUMNS_7 7   /* before the job column */

/* The header lines (without the newline) of the 6-, 7- and 8-column
 * formats, each the one before with one more column. */
#define DP_TRACE_HEADER_6 "k,time_unix,owner,wait_s,rtt_s,eps_spent"
#define DP_TRACE_HEADER_7 DP_TRACE_HEADER_6 ",staleness"
#define DP_TRACE_HEADER DP_TRACE_HEADER_7 ",job"

/* printf format of one row (without the newline), for the arguments
 * (unsigned long long k, double time_unix, const char *owner, double wait,
 * double rtt, double eps, unsigned long long staleness, const char *job). */
#define DP_TRACE_ROW "%llu,%.6f,%s,%.6f,%.6f,%.9g,%llu,%s"

#endif
