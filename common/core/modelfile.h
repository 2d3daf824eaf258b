/* SPDX-License-Identifier: Apache-2.0 */
/* The trained-model file (docs/design.md §9): JSON
 *   {"format": "dpasync-model", "version": 1, "model": "linear",
 *    "theta": [...], "features": [...], "target": "price", "bias": true,
 *    "T": 1000, "lambda": ..., "theta_max": ..., "clip_l1": ...,
 *    "mode": "async", "job": "job-20261124T111500Z-3f2a9c1e"}
 * "features" and "target" are optional (a writer that does not know them
 * leaves them out, and files written before "target" existed still read):
 * with them the file says which data it fits, and `dpasync eval` needs no
 * --target.  Written atomically (file.h).
 *
 * A partial model (docs/design.md §9 "Partial model"), the θ of a job that
 * stopped before T, is version 2 and says so:
 *   {..., "version": 2, "partial": true, "k": 483, "reason": "exhausted",
 *    "detail": "every owner has exhausted its budget at k=483 of T=627..."}
 * A complete model stays version 1, so that every reader reads it; a
 * reader that knows only version 1 refuses a partial one instead of
 * taking it for the job's result.  This reader reads both. */
#ifndef DP_MODELFILE_H
#define DP_MODELFILE_H

#include <stddef.h>
#include <stdint.h>
#include "common/core/file.h"
#include "common/core/fingerprint.h"
#include "common/core/model.h"

/* A partial model's reason, NUL included: 1 to 31 characters of [a-z0-9-]. */
#define DP_MODELFILE_REASON 32
/* The reasons learnerd writes (docs/learnerd.md "Partial model"). */
#define DP_MODELFILE_REASONS "exhausted, idle-timeout, round-timeout, refused, signal, error"

typedef struct dp_modelfile {
	dp_model model;
	size_t p;
	double *theta;      /* p */
	char **features;    /* p names, or NULL */
	char *target;       /* the target column's name, or NULL */
	int bias;
	size_t T;
	double lambda;
	double theta_max;
	double clip;
	char mode[16];      /* async | sync1 | sync2 | peer */
	/* The schema fingerprint the owners agreed on (fingerprint.h), ""
	 * when the writer does not know it (written, and read, as "schema"). */
	char schema[DP_FINGERPRINT_SIZE];
	const char *job;    /* the job that trained it, written when not NULL;
			     * the reader leaves it NULL (the file's "job" is
			     * for people and scripts) */
	/* A partial model (version 2): the job stopped after k of T
	 * iterations, for `reason`, one of DP_MODELFILE_REASONS' words or
	 * another short word (a reader accepts any); detail is the stop's
	 * message, or NULL.  partial 0: k, reason and detail unused. */
	int partial;
	uint64_t k;
	char reason[DP_MODELFILE_REASON];
	char *detail;
} dp_modelfile;

struct dp_dataset;

/* path and mf (with theta when p > 0) must not be NULL; features, target
 * and, for a partial model, detail are written when not NULL (the writer
 * keeps ownership).  mode: DP_FILE_MODE_PRIVATE for a daemon's model,
 * DP_FILE_MODE_SHARED for a subcommand's output (file.h).
 * Errors: DP_EIO, DP_ENOMEM, DP_EINVAL (non-finite theta; a partial model
 * whose reason is not a word of [a-z0-9-], or whose k is over T). */
int dp_modelfile_write(const char *path, const dp_modelfile *mf, int mode);
/* Errors: DP_ENOENT, DP_EIO, DP_EFORMAT (detail names the field). mf is
 * filled only on success (features, target and detail NULL when the file
 * has none; partial 0 for a version-1 file); free with dp_modelfile_free. */
int dp_modelfile_read(const char *path, dp_modelfile *mf);
/* Free what mf holds (a read file's arrays and strings) and zero it; NULL
 * is allowed. */
void dp_modelfile_free(dp_modelfile *mf);

/* Whether `ds` holds the data the model was trained on, as far as the file
 * says: the same number of columns (features, with bias) and, when the
 * file names its features, the same names in the same order.  `path` names
 * the model file in messages.  0, or DP_EFORMAT with "DATA: feature J is
 * 'A' but the model PATH has 'B'" (or the count). */
int dp_modelfile_check_data(const dp_modelfile *mf, const char *path,
			    const struct dp_dataset *ds);

/* Whether ds, loaded as `schema_path` says (NULL: without a schema, as
 * the owners' files; a prepared file then counts its schema.json,
 * dp_fingerprint_applied), means what the owners' rows meant: the fingerprint
 * of its columns, target, bias and schema file equals the one the file
 * records (docs/protocol.md §5 "Schema agreement").  0 also when the file
 * records none.  DP_EINVAL "DATA: ... not the schema ... (another target?
 * ...)", naming the target and both fingerprints; errors of
 * dp_fingerprint_schema. */
int dp_modelfile_check_schema(const dp_modelfile *mf, const char *path,
			      const struct dp_dataset *ds, const char *schema_path);

#endif
