/* SPDX-License-Identifier: Apache-2.0 */
/* report.json: the numbers of report.md for programs, from the same
 * fields of tools/lib/report.h (docs/plots.md).  A value
 * JSON cannot hold (NaN, infinity) is null, except an unlimited budget,
 * which is the string "inf". */
#ifndef DP_TOOLS_REPORT_JSON_H
#define DP_TOOLS_REPORT_JSON_H

#include <json-c/json.h>

#include "tools/lib/report.h"

/* The document of a learnerd run, or of a sim run, in *out (the caller
 * owns it: json_object_put).  0, or DP_ENOMEM with *out NULL. */
int dp_report_json_learner(const dp_report_learner *r, struct json_object **out);
int dp_report_json_sim(const dp_report_sim *r, struct json_object **out);

#endif
