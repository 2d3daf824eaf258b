/* SPDX-License-Identifier: Apache-2.0 */
/* `dpasync report` for a peer-mode run (docs/peer-agents.md §4). */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/num.h"
#include "tools/lib/peerreport.h"

#define COLS 7   /* wakeup,step,time_unix,secs,eps_spent,eps_left,connected */

static const char *const header[COLS] = {
	"wakeup", "step", "time_unix", "secs", "eps_spent", "eps_left", "connected",
};

struct agent {
	char *name;
	size_t n;
	double first, last, gap_median, spent, left;
	long connected;
};

static int is_peer_trace(const char *path)
{
	char line[128];
	FILE *f = fopen(path, "r");
	int ok;

	if (f == NULL)
		return 0;
	ok = fgets(line, sizeof(line), f) != NULL && strncmp(line, "wakeup,", 7) == 0;
	fclose(f);
	return ok;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct agent *)a)->name, ((const struct agent *)b)->name);
}

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The peer trace of agent directory DIR/NAME into path: NAME/trace.csv,
 * or else trace.csv in a directory inside it (the agent's ledger
 * directory, where ownerd --peer keeps it by default: docs/peer-agents.md
 * §4; the first such name in byte order).  Whether one was found. */
static bool agent_trace(const char *dir, const char *name, char *path, size_t size)
{
	char sub[4200], best[256] = "";
	struct dirent *e;
	DIR *d;

	snprintf(path, size, "%s/%s/trace.csv", dir, name);
	if (is_peer_trace(path))
		return true;
	snprintf(sub, sizeof(sub), "%s/%s", dir, name);
	d = opendir(sub);
	if (d == NULL)
		return false;
	for (e = readdir(d); e != NULL; e = readdir(d)) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(best))
			continue;
		if (best[0] != '\0' && strcmp(e->d_name, best) >= 0)
			continue;
		snprintf(path, size, "%s/%s/trace.csv", sub, e->d_name);
		if (is_peer_trace(path))
			snprintf(best, sizeof(best), "%s", e->d_name);
	}
	closedir(d);
	if (best[0] == '\0')
		return false;
	snprintf(path, size, "%s/%s/trace.csv", sub, best);
	return true;
}

bool dp_peerreport_detect(const char *dir)
{
	char path[4600];
	struct dirent *e;
	DIR *d = opendir(dir);
	bool found = false;

	if (d == NULL)
		return false;
	for (e = readdir(d); !found && e != NULL; e = readdir(d)) {
		if (e->d_name[0] == '.')
			continue;
		found = agent_trace(dir, e->d_name, path, sizeof(path));
	}
	closedir(d);
	return found;
}

static int read_agent(const char *path, struct agent *a)
{
	dp_csv_table t;
	double *gaps = NULL, prev = 0, v[COLS];
	int r;

	r = dp_csv_table_load(&t, path, 0);
	if (r < 0)
		return r;
	if (t.ncols != COLS) {
		r = dp_error_set(DP_EFORMAT, "%s: not a peer trace (%zu columns)", path, t.ncols);
		goto out;
	}
	for (size_t c = 0; c < COLS; c++)
		if (strcmp(t.header[c], header[c]) != 0) {
			r = dp_error_set(DP_EFORMAT, "%s: column %zu is '%s', expected '%s'", path,
					 c + 1, t.header[c], header[c]);
			goto out;
		}
	gaps = calloc(t.nrows ? t.nrows : 1, sizeof(double));
	if (gaps == NULL) {
		r = DP_ENOMEM;
		goto out;
	}
	a->n = t.nrows;
	for (size_t i = 0; i < t.nrows; i++) {
		for (size_t c = 0; c < COLS; c++) {
			r = dp_csv_parse_number(dp_csv_cell(&t, i, c), &v[c]);
			if (r < 0) {
				r = dp_error_set(DP_EFORMAT, "%s:%zu: column %s is not a number", path,
						 t.line[i], header[c]);
				goto out;
			}
		}
		if (i == 0)
			a->first = v[2];
		else
			gaps[i - 1] = v[2] - prev;
		prev = v[2];
		a->last = v[2];
		a->spent = v[4];
		a->left = v[5];
		a->connected = (long)v[6];
	}
	a->gap_median = NAN;
	if (t.nrows >= 2) {
		qsort(gaps, t.nrows - 1, sizeof(double), by_double);
		a->gap_median = gaps[(t.nrows - 2) / 2];
	}
	r = 0;
out:
	free(gaps);
	dp_csv_table_free(&t);
	return r;
}

int dp_peerreport_write(const char *dir, FILE *m)
{
	char path[4600];
	struct agent *ag = NULL, *tmp;
	struct dirent *e;
	size_t n = 0, total = 0;
	double t0 = INFINITY, t1 = -INFINITY;
	DIR *d = opendir(dir);
	int r = 0;

	if (d == NULL)
		return dp_error_set(DP_ENOENT, "%s: cannot open", dir);
	for (e = readdir(d); r == 0 && e != NULL; e = readdir(d)) {
		if (e->d_name[0] == '.')
			continue;
		if (!agent_trace(dir, e->d_name, path, sizeof(path)))
			continue;
		tmp = realloc(ag, (n + 1) * sizeof(*ag));
		if (tmp == NULL) {
			r = DP_ENOMEM;
			break;
		}
		ag = tmp;
		memset(&ag[n], 0, sizeof(ag[n]));
		ag[n].name = strdup(e->d_name);
		if (ag[n].name == NULL) {
			r = DP_ENOMEM;
			break;
		}
		n++;
		r = read_agent(path, &ag[n - 1]);
	}
	closedir(d);
	if (r == 0 && n == 0)
		r = dp_error_set(DP_ENOENT, "%s: no agent directory with a peer trace.csv", dir);
	if (r < 0)
		goto out;
	qsort(ag, n, sizeof(*ag), by_name);
	for (size_t i = 0; i < n; i++) {
		total += ag[i].n;
		if (ag[i].n && ag[i].first < t0)
			t0 = ag[i].first;
		if (ag[i].n && ag[i].last > t1)
			t1 = ag[i].last;
	}
	fprintf(m, "# Peer-mode run: %s\n\n", dir);
	fprintf(m, "%zu agents, %zu wake-ups", n, total);
	if (t1 > t0)
		fprintf(m, " in %.3f s of wall-clock time (%.1f wake-ups/s)", t1 - t0,
			(double)total / (t1 - t0));
	fprintf(m, ".\n\n| agent | wake-ups | first (s) | last (s) | median gap (s) | "
		"epsilon spent | epsilon left | connected at last |\n"
		"|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < n; i++) {
		const struct agent *a = &ag[i];

		fprintf(m, "| %s | %zu | %.3f | %.3f | %.3f | %.6g | %.6g | %ld |\n", a->name, a->n,
			a->n ? a->first - t0 : NAN, a->n ? a->last - t0 : NAN, a->gap_median,
			a->spent, a->left, a->connected);
	}
	fputs("\nTimes are from the agents' traces (`trace.csv`), relative to the first "
	      "wake-up of the run; epsilon as the ledger stood after the agent's last "
	      "wake-up.\n", m);
out:
	for (size_t i = 0; i < n; i++)
		free(ag[i].name);
	free(ag);
	return r;
}
