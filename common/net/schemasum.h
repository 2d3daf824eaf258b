/* SPDX-License-Identifier: Apache-2.0 */
/* The schema summary an owner sends in its Hello beside the fingerprint
 * (docs/protocol.md §5 "Schema summary"): the fingerprint says whether two
 * owners' rows mean the same, the summary says what differs when they do
 * not ("target 'price' vs 'y'", "feature 3 'carat': scale 0.474 vs 0.5")
 * instead of two hashes.  Names and settings only, never a cell of data. */
#ifndef DP_SCHEMASUM_H
#define DP_SCHEMASUM_H

#include <stddef.h>
#include <stdint.h>

#include "common/core/dataset.h"
#include "common/core/schema.h"
#include "proto/dpasync.pb-c.h"

/* The largest summary an owner sends (packed bytes): about 500 columns;
 * past it the Hello goes without one. */
#define DP_SCHEMASUM_MAX_BYTES (64u << 10)

/* Names and the target are cut to this many bytes in a summary, and a byte
 * outside printable ASCII becomes '?', so that any header makes a valid
 * Hello (docs/protocol.md §5 "Validation"). */
#define DP_SCHEMASUM_MAX_NAME 64

typedef struct dp_schemasum dp_schemasum;

/* The summary of ds's rows: ds->names and ds->target, the bias column
 * (named "bias", last) when bias is set, every feature as `schema` makes it
 * (NULL: none, every feature "raw").  ds->p must be the schema's features
 * plus the bias column.  *out is the caller's (dp_schemasum_free).
 * Errors: DP_EINVAL (ds and schema do not match), DP_ENOMEM. */
int dp_schemasum_new(const dp_dataset *ds, int bias, const dp_schema *schema,
		     dp_schemasum **out);

/* The message to put in a Hello (valid while s lives; NULL for NULL). */
Dpasync__SchemaSummary *dp_schemasum_msg(dp_schemasum *s);

/* Free; NULL is allowed. */
void dp_schemasum_free(dp_schemasum *s);

/* The first difference between a (this owner's) and b (the job's) as one
 * line "WHAT: A vs B" into buf (size bytes, truncated to fit): the bias
 * setting, the target, the number of features, then feature by feature
 * (numbered from 1) its name, kind, centre, scale, clamp and digest.  1 when
 * they differ, 0 when the summary shows no difference (buf ""; the schema
 * files then differ in what makes no feature, e.g. the target's scaling). */
int dp_schemasum_diff(const Dpasync__SchemaSummary *a, const Dpasync__SchemaSummary *b,
		      char *buf, size_t size);

/* dp_schemasum_diff of two packed summaries (as a learner keeps them); 0
 * (buf "") when either is absent (len 0) or cannot be decoded. */
int dp_schemasum_diff_packed(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
			     char *buf, size_t size);

#endif
