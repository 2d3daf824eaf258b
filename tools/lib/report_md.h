/* SPDX-License-Identifier: Apache-2.0 */
/* report.md: the page `dpasync report` writes, from the numbers of
 * tools/lib/report.h (docs/plots.md). */
#ifndef DP_TOOLS_REPORT_MD_H
#define DP_TOOLS_REPORT_MD_H

#include <stdio.h>

#include "tools/lib/report.h"

/* The whole page of a learnerd run, or of a sim run, to m.  Write errors
 * stay in m's error state (a memory stream reports them when closed). */
void dp_report_md_learner(FILE *m, const dp_report_learner *r);
void dp_report_md_sim(FILE *m, const dp_report_sim *r);

#endif
