/* SPDX-License-Identifier: Apache-2.0 */
/* The spread of repeated measured psi curves: `dpasync plot --kind
 * psi-wall` draws INPUTs that share a label as the median of the repeats
 * against wall-clock time with a band from the lowest to the highest of
 * them (docs/plots.md "psi-wall"). */
#ifndef DP_TOOLS_WALLBAND_H
#define DP_TOOLS_WALLBAND_H

#include <stddef.h>

#include "tools/lib/rundata.h"

/* psi of the repeats at each time point. */
typedef struct dp_wallband {
	size_t n;                /* time points */
	double *t;               /* n seconds, strictly increasing */
	double *lo, *med, *hi;   /* n: the smallest, median and largest psi of the
				  * repeats that have a value at t[i] */
	size_t *runs;            /* n: how many repeats have a value at t[i] */
} dp_wallband;

/* The band of the nrun curves runs[0..nrun-1] (each as dp_rundata_wall_read
 * returns it: time non-decreasing).  Time points: the union of the
 * repeats' times.  A repeat's psi at time t is read off the curve as the
 * figure draws it: linear between its points around t, the later point's
 * psi where it has several at t, its last psi after its last point (its
 * run is over and its model stays), and no value before its first point.
 * The median is dp_rundata_percentile's 50 %.  On success *b is filled (free
 * with dp_wallband_free); on failure *b is untouched.  Errors: DP_EINVAL
 * (no curve has a point), DP_ENOMEM. */
int dp_wallband_build(const dp_rundata_wall *const *runs, size_t nrun, dp_wallband *b);

/* Release what dp_wallband_build filled; b may be zeroed. */
void dp_wallband_free(dp_wallband *b);

#endif
