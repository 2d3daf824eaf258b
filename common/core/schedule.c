/* SPDX-License-Identifier: Apache-2.0 */
/* The wake-up schedule file (schedule.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/num.h"
#include "common/core/schedule.h"

/* Agent ids sorted for lookup: qsort has no context argument, so the ids
 * reach the comparison through a thread-local set just around the sort. */
static _Thread_local const char *const *sort_ids;

static int cmp_index(const void *x, const void *y)
{
	return strcmp(sort_ids[*(const size_t *)x], sort_ids[*(const size_t *)y]);
}

static long lookup(const char *const *ids, const size_t *sorted, size_t n, const char *id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ids[sorted[mid]], id);

		if (c == 0)
			return (long)sorted[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int dp_schedule_load(const char *path, const char *const *ids, size_t n, size_t **agent,
		     size_t *steps)
{
	dp_csv_table t = { 0 };
	size_t *sorted = NULL, *a = NULL;
	char shown[64];
	int rc;

	DP_REQUIRE(path != NULL && ids != NULL && n >= 1 && agent != NULL && steps != NULL);
	rc = dp_csv_table_load(&t, path, 0);
	if (rc != 0)
		return rc;
	if (t.ncols != 2 || strcmp(t.header[0], "step") || strcmp(t.header[1], "agent")) {
		rc = dp_error_set(DP_EFORMAT, "%s:1: the header must be exactly step,agent", path);
		goto out;
	}
	if (t.nrows == 0 || t.nrows > DP_SCHEDULE_MAX_STEPS) {
		rc = dp_error_set(DP_EFORMAT, "%s: %zu steps (a schedule has 1 to %u)", path,
				  t.nrows, DP_SCHEDULE_MAX_STEPS);
		goto out;
	}
	sorted = malloc(n * sizeof(size_t));
	a = malloc(t.nrows * sizeof(size_t));
	if (sorted == NULL || a == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		sorted[i] = i;
	sort_ids = ids;
	qsort(sorted, n, sizeof(size_t), cmp_index);
	sort_ids = NULL;
	for (size_t r = 0; r < t.nrows; r++) {
		size_t step;
		long i;

		if (dp_num_parse_size("step", dp_csv_cell(&t, r, 0), &step) != 0 || step != r + 1) {
			rc = dp_error_set(DP_EFORMAT, "%s:%zu: column 'step': expected %zu (steps "
					  "are 1, 2, 3, ... in order)", path, t.line[r], r + 1);
			goto out;
		}
		i = lookup(ids, sorted, n, dp_csv_cell(&t, r, 1));
		if (i < 0) {
			rc = dp_error_set(DP_EFORMAT, "%s:%zu: column 'agent': unknown agent id '%s'",
					  path, t.line[r],
					  dp_csv_show(dp_csv_cell(&t, r, 1), shown, sizeof(shown)));
			goto out;
		}
		a[r] = (size_t)i;
	}
	*agent = a;
	*steps = t.nrows;
	a = NULL;
out:
	free(sorted);
	free(a);
	dp_csv_table_free(&t);
	return rc;
}

int dp_schedule_write(const char *path, const char *const *ids, const size_t *agent,
		      size_t steps)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc = 0;

	DP_REQUIRE(path != NULL && ids != NULL && (agent != NULL || steps == 0));
	f = open_memstream(&buf, &len);
	if (f == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	fputs("step,agent\n", f);
	for (size_t k = 0; k < steps && rc == 0; k++) {
		if (fprintf(f, "%zu,", k + 1) < 0)
			rc = DP_EIO;
		if (rc == 0)
			rc = dp_csv_write_field(f, ids[agent[k]]);
		if (rc == 0 && fputc('\n', f) == EOF)
			rc = DP_EIO;
	}
	if (fclose(f) != 0 || rc != 0) {
		free(buf);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	rc = dp_file_write_atomic(path, buf, len, 0644);
	free(buf);
	return rc;
}
