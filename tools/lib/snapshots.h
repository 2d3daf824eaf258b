/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd's snapshots.csv (docs/learnerd.md §4): the model
 * the run held at training start, every N iterations (sync: rounds) and at
 * its end, for the psi the run itself reached against time and k
 * (`dpasync report --data`). */
#ifndef DP_TOOLS_SNAPSHOTS_H
#define DP_TOOLS_SNAPSHOTS_H

#include <stddef.h>

typedef struct dp_snapshots {
	size_t n, p;      /* rows, coefficients */
	size_t *k;        /* n iterations (sync: rounds), strictly increasing */
	double *t;        /* n Unix times the row was written */
	double *theta;    /* n x p, row by row */
} dp_snapshots;

/* Read path, whose header must be k,time_unix,theta_1..theta_p for the p
 * given (the model's).  A last line without its newline is taken as torn
 * by a crash and left out, as for trace.csv.  Errors: DP_ENOENT, DP_EIO,
 * DP_EFORMAT ("file:line: ..."), DP_ENOMEM; *s untouched then, else free
 * it with dp_snapshots_free. */
int dp_snapshots_read(const char *path, size_t p, dp_snapshots *s);
void dp_snapshots_free(dp_snapshots *s);

#endif
