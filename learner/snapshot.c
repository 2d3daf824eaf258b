/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: snapshots.csv, the model over the run (docs/learnerd.md §4):
 * with snapshot-every N, the model learnerd would output at training start
 * and after every N-th iteration (sync: round) and the last, so that `dpasync report --data` draws the psi the run itself
 * reached against time and k, not a replay.  One row
 * k,time_unix,theta_1..theta_p each, flushed as written; a resume cuts the
 * rows after the checkpoint's k_done, which the job does again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/log.h"
#include "learner/job.h"

#define SNAPSHOTS_MAX (1u << 30)   /* a file learnerd wrote: 1 GiB at most */

/* Keep the header and the rows with k <= J->k_done. */
static int cut(struct lrn_job *J)
{
	char *buf = NULL, *line, *save = NULL, *out;
	size_t len = 0, used = 0;
	int rc = dp_file_read_all(J->snapshots_path, SNAPSHOTS_MAX, &buf, &len);

	if (rc != 0)
		return rc;
	out = malloc(len + 1);
	if (out == NULL) {
		free(buf);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *end;
		unsigned long long k = strtoull(line, &end, 10);

		/* the header, and whole rows of iterations the checkpoint holds */
		if (used == 0 || (end != line && *end == ',' && k <= J->k_done)) {
			memcpy(out + used, line, strlen(line));
			used += strlen(line);
			out[used++] = '\n';
		}
	}
	rc = dp_file_write_atomic(J->snapshots_path, out, used, 0600);
	free(buf);
	free(out);
	return rc;
}

int lrn_snapshot_open(struct lrn_job *J, bool resume)
{
	int rc;

	DP_REQUIRE(J != NULL && J->s != NULL && J->snapshots == NULL);
	if (J->s->snapshot_every == 0 || J->snapshots_path == NULL)
		return 0;
	/* A new job, or a resumed one that wrote none yet: created with its
	 * header at the first row. */
	if (!resume || access(J->snapshots_path, F_OK) != 0)
		return 0;
	rc = cut(J);
	if (rc != 0)
		return dp_error_set(DP_EIO, "%s: %s", J->snapshots_path, dp_error_detail(rc));
	if (dp_file_fopen_private(J->snapshots_path, "a", &J->snapshots) < 0)
		return dp_error_set(DP_EIO, "%s: %s", J->snapshots_path, strerror(errno));
	return 0;
}

/* The file with its header, p coefficients. */
static int create(struct lrn_job *J)
{
	if (dp_file_fopen_private(J->snapshots_path, "w", &J->snapshots) < 0)
		return errno;
	if (fputs("k,time_unix", J->snapshots) == EOF)
		return errno;
	for (size_t q = 0; q < J->p; q++)
		if (fprintf(J->snapshots, ",theta_%zu", q + 1) < 0)
			return errno;
	return fputc('\n', J->snapshots) == EOF ? errno : 0;
}

void lrn_snapshot_take(struct lrn_job *J)
{
	uint64_t every, k;
	const double *theta;
	int err = 0;

	DP_REQUIRE(J != NULL && J->s != NULL);
	every = J->s->snapshot_every;
	k = J->k_done;
	if (every == 0 || J->snapshots_path == NULL || !J->started ||
	    (k % every != 0 && k != lrn_state_goal(J)))
		return;
	if (J->snapshots == NULL)
		err = create(J);
	theta = lrn_state_output(J);
	if (err == 0 && fprintf(J->snapshots, "%llu,%.6f", (unsigned long long)k,
				lrn_clock_wall()) < 0)
		err = errno;
	for (size_t q = 0; err == 0 && q < J->p; q++)
		if (fprintf(J->snapshots, ",%.17g", theta[q]) < 0)
			err = errno;
	if (err == 0 && (fputc('\n', J->snapshots) == EOF || fflush(J->snapshots) != 0))
		err = errno;
	if (err == 0)
		return;
	DP_WARN("learner", "%s: %s: no more snapshots of this run (the job goes on)",
		J->snapshots_path, strerror(err != 0 ? err : EIO));
	lrn_snapshot_close(J);
	free(J->snapshots_path);
	J->snapshots_path = NULL;
}

void lrn_snapshot_close(struct lrn_job *J)
{
	DP_REQUIRE(J != NULL);
	if (J->snapshots != NULL && fclose(J->snapshots) != 0)
		DP_ERROR("learner", "%s: %s", J->snapshots_path, strerror(errno));
	J->snapshots = NULL;
}
