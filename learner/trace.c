/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: trace.csv, one row per iteration (docs/learnerd.md §4):
 *   k,time_unix,owner,wait_s,rtt_s,eps_spent,staleness,job
 * staleness: updates of theta_L between the query's point and the update
 * its answer makes (docs/learnerd.md §4); 0 in strict mode and in sync.
 * job: the job id on every row, so that traces of successive jobs stay
 * apart when concatenated (main.c keeps commas out of job ids).
 * Rows are written as they happen; checkpoints fsync them first, so after
 * a crash the file holds at least the checkpoint's k_done rows and resume
 * cuts it back to exactly k_done.
 *
 * Sync modes add rounds.csv, one row per round (docs/learnerd.md §4):
 *   round,time_unix,round_s,answers,first_k,last_k,slowest,slowest_rtt_s
 * where trace.csv rows first_k..last_k are the round's answers (k counts
 * answers there) and slowest is the owner whose answer took longest. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/log.h"
#include "common/core/trace.h"
#include "learner/job.h"

#define TRACE_HEADER DP_TRACE_HEADER "\n"
/* The headers before the staleness and the job columns: their rows cannot
 * be continued in this format. */
#define TRACE_HEADER_6 DP_TRACE_HEADER_6 "\n"
#define TRACE_HEADER_7 DP_TRACE_HEADER_7 "\n"

static int trace_new(struct lrn_job *L)
{
	int rc = dp_file_fopen_private(L->trace_path, "w", &L->trace);

	if (rc < 0)
		return rc;
	if (fputs(TRACE_HEADER, L->trace) == EOF || fflush(L->trace) != 0)
		return dp_error_set(DP_EIO, "%s: %s", L->trace_path, strerror(errno));
	return 0;
}

/* Keep the header and the first k_done complete rows; drop the rest
 * (rows of iterations the checkpoint does not hold, a torn last line). */
static int trace_cut(struct lrn_job *L)
{
	FILE *f = NULL;
	char *line = NULL;
	size_t cap = 0, rows = 0;
	off_t keep = 0;
	ssize_t n;
	bool header = false;
	int rc;

	rc = dp_file_fopen_private(L->trace_path, "r+", &f);
	if (rc < 0) {
		if (rc != DP_ENOENT)
			return rc;
		if (L->k_done > 0)
			DP_WARN("learner", "%s is missing: it restarts at k=%llu", L->trace_path,
				(unsigned long long)L->k_done + 1);
		return trace_new(L);
	}
	for (;;) {
		n = getline(&line, &cap, f);
		if (n <= 0)
			break;
		if (line[n - 1] != '\n')
			break;   /* torn by a crash */
		if (!header) {
			if (strcmp(line, TRACE_HEADER) != 0) {
				bool older = strcmp(line, TRACE_HEADER_6) == 0 ||
					     strcmp(line, TRACE_HEADER_7) == 0;

				free(line);
				fclose(f);
				if (older)
					return dp_error_set(DP_EFORMAT, "%s: written by a learnerd before "
							    "the job column: finish this job with "
							    "that version, or restart it (new --out)",
							    L->trace_path);
				return dp_error_set(DP_EFORMAT, "%s: not a learnerd trace (header)",
						    L->trace_path);
			}
			header = true;
		} else {
			if (rows == L->k_done)
				break;
			rows++;
		}
		keep += n;
	}
	free(line);
	if (!header) {
		fclose(f);
		return trace_new(L);
	}
	if (rows < L->k_done)
		DP_WARN("learner", "%s holds %zu rows, the checkpoint %llu: rows are missing",
			L->trace_path, rows, (unsigned long long)L->k_done);
	if (fflush(f) != 0 || ftruncate(fileno(f), keep) != 0 || fseeko(f, keep, SEEK_SET) != 0) {
		int e = errno;

		fclose(f);
		return dp_error_set(DP_EIO, "%s: %s", L->trace_path, strerror(e));
	}
	L->trace = f;
	return 0;
}

int lrn_trace_open(struct lrn_job *L, bool resume)
{
	DP_REQUIRE(L != NULL && L->trace_path != NULL && L->trace == NULL);
	return resume ? trace_cut(L) : trace_new(L);
}

/* A write of the trace (or of rounds.csv) failed: its rows may be lost, so
 * no checkpoint may be written after it (one would count iterations the
 * trace lacks). */
static int failed(struct lrn_job *L, const char *path, int err)
{
	L->io_failed = true;
	return dp_error_set(DP_EIO, "%s: %s", path, strerror(err));
}

int lrn_trace_row(struct lrn_job *L, uint64_t k, double wall, const char *owner, double wait,
		  double rtt, double eps, uint64_t staleness)
{
	DP_REQUIRE(L != NULL && owner != NULL && L->s != NULL && L->s->job != NULL);
	if (L->trace == NULL)
		return dp_error_set(DP_EIO, "%s: not open", L->trace_path);
	/* Flushed row by row so that the file can be followed while the job
	 * runs; durability comes from the fsync before each checkpoint. */
	if (fprintf(L->trace, DP_TRACE_ROW "\n", (unsigned long long)k, wall,
		    owner, wait, rtt, eps, (unsigned long long)staleness, L->s->job) < 0 ||
	    fflush(L->trace) != 0)
		return failed(L, L->trace_path, errno);
	return 0;
}

#define ROUNDS_HEADER "round,time_unix,round_s,answers,first_k,last_k,slowest,slowest_rtt_s\n"

int lrn_trace_round(struct lrn_job *L, uint64_t round, double wall, double secs, size_t answers,
		    uint64_t first_k, uint64_t last_k, const char *slowest, double slowest_rtt)
{
	DP_REQUIRE(L != NULL && slowest != NULL && L->rounds_path != NULL);
	if (L->rounds == NULL) {
		if (dp_file_fopen_private(L->rounds_path, "w", &L->rounds) < 0)
			return failed(L, L->rounds_path, errno);
		if (fputs(ROUNDS_HEADER, L->rounds) == EOF)
			return failed(L, L->rounds_path, errno);
	}
	if (fprintf(L->rounds, "%llu,%.6f,%.6f,%zu,%llu,%llu,%s,%.6f\n", (unsigned long long)round,
		    wall, secs, answers, (unsigned long long)first_k, (unsigned long long)last_k,
		    slowest, slowest_rtt) < 0 || fflush(L->rounds) != 0)
		return failed(L, L->rounds_path, errno);
	return 0;
}

int lrn_trace_sync(struct lrn_job *L)
{
	DP_REQUIRE(L != NULL);
	if (L->trace == NULL)
		return 0;
	/* A failed write drops the stream's buffered rows and a later fflush
	 * reports success: the error flag is what remembers it. */
	if (ferror(L->trace))
		return failed(L, L->trace_path, EIO);
	if (fflush(L->trace) != 0 || dp_file_sync(fileno(L->trace), 0) != 0)
		return failed(L, L->trace_path, errno);
	return 0;
}

void lrn_trace_close(struct lrn_job *L)
{
	DP_REQUIRE(L != NULL);
	if (L->rounds != NULL && fclose(L->rounds) != 0)
		DP_ERROR("learner", "%s: %s", L->rounds_path, strerror(errno));
	L->rounds = NULL;
	if (L->trace == NULL)
		return;
	if (fclose(L->trace) != 0)
		DP_ERROR("learner", "%s: %s", L->trace_path, strerror(errno));
	L->trace = NULL;
}
