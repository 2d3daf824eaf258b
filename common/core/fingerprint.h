/* SPDX-License-Identifier: Apache-2.0 */
/* The fingerprint of what a row means (docs/protocol.md §5 "Schema
 * agreement"): owners of one job must agree on it, and the learner refuses
 * one that does not.
 *
 * SHA-256 over a canonical text, written "sha256:" and 64 lower-case hex
 * digits:
 *
 *     dpasync-schema 1\n
 *     feature <name>\n        one line per column of x, in order (the bias
 *                             column, when used, is the last, named "bias")
 *     target <name>\n
 *     bias 0|1\n
 *     schema <64 hex>\n       SHA-256 of the --schema file's bytes, or
 *     schema none\n           without one
 *
 * Only names and settings go in, never a cell of the data. */
#ifndef DP_FINGERPRINT_H
#define DP_FINGERPRINT_H

#include <stddef.h>

#include "common/core/dataset.h"

/* "sha256:" + 64 hex + NUL */
#define DP_FINGERPRINT_SIZE 72

/* Fingerprint of ds's columns and target, the bias setting and the schema
 * file (NULL: none) into out (DP_FINGERPRINT_SIZE bytes).
 * Errors: DP_ENOENT / DP_EIO (the schema file, detail names it), DP_ENOMEM.
 * out untouched on failure. */
int dp_fingerprint_schema(const dp_dataset *ds, int bias, const char *schema_path,
			  char out[DP_FINGERPRINT_SIZE]);

/* The schema a prepared file was made with (docs/ownerd.md "Prepared
 * data"): `dpasync prep` writes schema.json beside its owner files, and a
 * file loaded without --schema whose directory holds a schema.json with
 * ds's feature names (in order; the bias column aside when bias is set)
 * and ds's target was transformed by it already.  Its path goes into
 * path (size bytes) and the result is 1; 0 when there is none, it cannot
 * be read as a schema or it describes other columns (path ""); then the
 * file is judged as raw, as before.  DP_ENOMEM.  The fingerprint of such
 * a file is dp_fingerprint_schema with that path, so that two owners
 * prepared with different transforms differ. */
int dp_fingerprint_applied(const dp_dataset *ds, int bias, char *path, size_t size);

/* Whether s (not NULL) is a fingerprint: "sha256:" and 64 lower-case hex
 * digits. */
int dp_fingerprint_ok(const char *s);

#endif
