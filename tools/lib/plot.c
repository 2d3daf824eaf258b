/* SPDX-License-Identifier: Apache-2.0 */
/* Figures for `dpasync plot` and `dpasync report` (plot.h).  The data
 * goes into the gnuplot script as inline datablocks, so one script file is
 * the whole input and nothing else is left in the temporary directory. */
#include "tools/lib/plot.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libgen.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/json.h"
#include "common/core/mem.h"
#include "common/core/num.h"
#include "tools/lib/wallband.h"

extern char **environ;

/* Largest summary.json read (it holds p + 2 numbers per model coordinate
 * and one per owner and repeat). */
#define SUMMARY_MAX ((size_t)1 << 28)

/* Series colours (colour-blind-safe order of the Tableau palette). */
static const char *const colors[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
	"#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
};
#define NCOLORS (sizeof(colors) / sizeof(colors[0]))
/* Owners drawn as separate, labelled series up to this many; beyond, one series. */
#define MAX_LEGEND_OWNERS 12

/* ---- reading ---------------------------------------------------------- */

/* Natural order: digit runs compare as numbers, so owner-2 < owner-10. */
static int natcmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			const char *ea = a, *eb = b;
			size_t la, lb;
			while (*a == '0' && isdigit((unsigned char)a[1]))
				a++;
			while (*b == '0' && isdigit((unsigned char)b[1]))
				b++;
			for (ea = a; isdigit((unsigned char)*ea); ea++)
				;
			for (eb = b; isdigit((unsigned char)*eb); eb++)
				;
			la = (size_t)(ea - a);
			lb = (size_t)(eb - b);
			if (la != lb)
				return la < lb ? -1 : 1;
			for (; a < ea; a++, b++)
				if (*a != *b)
					return *a < *b ? -1 : 1;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a ? 1 : *b ? -1 : 0;
}

static int natcmp_p(const void *a, const void *b)
{
	return natcmp(*(char *const *)a, *(char *const *)b);
}

/* Growable arrays of the trace's columns. */
typedef struct cols {
	size_t n, cap;
	size_t *k, *owner;
	double *t, *wait, *rtt, *eps, *stale;
	size_t nnames, capnames;
	char **names;
	char *job;   /* the job column of the first row, or NULL */
} cols;

static void cols_free(cols *c)
{
	free(c->k);
	free(c->owner);
	free(c->t);
	free(c->wait);
	free(c->rtt);
	free(c->eps);
	free(c->stale);
	for (size_t i = 0; i < c->nnames; i++)
		free(c->names[i]);
	free(c->names);
	free(c->job);
	memset(c, 0, sizeof(*c));
}

/* Room for `need` rows in each of the n parallel columns arrs[i] (each a
 * T ** with elements of sizes[i] bytes), which share the capacity *cap:
 * dp_mem_reserve on each, from the same capacity to the same one. */
static int reserve_columns(void *const *arrs, const size_t *sizes, size_t n, size_t *cap,
			   size_t need, size_t first)
{
	size_t c = *cap;

	for (size_t i = 0; i < n; i++) {
		c = *cap;
		if (dp_mem_reserve(arrs[i], &c, need, sizes[i], first) != 0)
			return dp_error_set(DP_ENOMEM, "out of memory");
	}
	*cap = c;
	return 0;
}

/* Room for one more row: k and owner, and with `full` the timing columns. */
static int cols_reserve(cols *c, int full)
{
	void *const arrs[] = { &c->k, &c->owner, &c->t, &c->wait, &c->rtt, &c->eps, &c->stale };
	const size_t sizes[] = { sizeof(*c->k), sizeof(*c->owner), sizeof(*c->t),
				 sizeof(*c->wait), sizeof(*c->rtt), sizeof(*c->eps),
				 sizeof(*c->stale) };

	return reserve_columns(arrs, sizes, full >= 2 ? 7 : full ? 6 : 2, &c->cap, c->n + 1, 1024);
}

/* Index of `name` in c->names, added when new; SIZE_MAX on ENOMEM. */
static size_t cols_name(cols *c, const char *name, size_t hint)
{
	if (hint < c->nnames && strcmp(c->names[hint], name) == 0)
		return hint;
	for (size_t i = 0; i < c->nnames; i++)
		if (strcmp(c->names[i], name) == 0)
			return i;
	if (dp_mem_reserve(&c->names, &c->capnames, c->nnames + 1, sizeof(*c->names), 16) != 0)
		return SIZE_MAX;
	c->names[c->nnames] = strdup(name);
	if (c->names[c->nnames] == NULL)
		return SIZE_MAX;
	return c->nnames++;
}

/* learnerd's trace.csv; before the job column it had seven, before the
 * staleness column six. */
static const char trace_header[] = "k,time_unix,owner,wait_s,rtt_s,eps_spent,staleness,job";
static const char trace_header7[] = "k,time_unix,owner,wait_s,rtt_s,eps_spent,staleness";
static const char trace_header6[] = "k,time_unix,owner,wait_s,rtt_s,eps_spent";
static const char *const trace_headers[3] = { trace_header6, trace_header7, trace_header };

/* The job column of a row: every row of one trace names the same job (a
 * concatenation of several jobs' traces is refused here, by name, rather
 * than later as a k that does not increase). */
static int trace_job(cols *c, const char *job, const char *path, size_t line)
{
	if (job[0] == '\0')
		return dp_error_set(DP_EFORMAT, "%s:%zu: empty job", path, line);
	if (c->job == NULL) {
		c->job = strdup(job);
		return c->job == NULL ? dp_error_set(DP_ENOMEM, "out of memory") : 0;
	}
	if (strcmp(c->job, job) != 0)
		return dp_error_set(DP_EFORMAT, "%s:%zu: job '%s' after rows of job '%s': give one "
				    "job's rows", path, line, job, c->job);
	return 0;
}

/* Parse one trace row of nfields (6, 7 or 8) fields (buf is modified).  0 or
 * DP_EFORMAT with detail. */
static int trace_row(cols *c, char *buf, const char *path, size_t line, size_t *hint,
		     size_t nfields)
{
	char *f[8], *p = buf;
	size_t nf = 0, idx, stale = 0;
	double v[4];
	static const char *const what[4] = { "time_unix", "wait_s", "rtt_s", "eps_spent" };
	static const int col[4] = { 1, 3, 4, 5 };

	for (;;) {
		char *comma = strchr(p, ',');
		if (nf == nfields)
			return dp_error_set(DP_EFORMAT, "%s:%zu: more than %zu fields", path, line,
					    nfields);
		f[nf++] = p;
		if (comma == NULL)
			break;
		*comma = '\0';
		p = comma + 1;
	}
	if (nf != nfields)
		return dp_error_set(DP_EFORMAT, "%s:%zu: expected %zu fields (%s), got %zu", path,
				    line, nfields, trace_headers[nfields - 6], nf);
	if (nfields == 8) {
		int rc = trace_job(c, f[7], path, line);

		if (rc != 0)
			return rc;
	}
	if (nfields >= 7 && dp_num_parse_size("staleness", f[6], &stale) != 0)
		return dp_error_set(DP_EFORMAT, "%s:%zu: staleness: expected an integer >= 0, got '%s'",
				    path, line, f[6]);
	if (dp_num_parse_size("k", f[0], &c->k[c->n]) != 0 || c->k[c->n] == 0)
		return dp_error_set(DP_EFORMAT, "%s:%zu: k: expected a positive integer, got '%s'", path, line,
				    f[0]);
	if (c->n > 0 && c->k[c->n] <= c->k[c->n - 1])
		return dp_error_set(DP_EFORMAT, "%s:%zu: k = %zu does not increase (previous %zu)", path, line,
				    c->k[c->n], c->k[c->n - 1]);
	if (f[2][0] == '\0')
		return dp_error_set(DP_EFORMAT, "%s:%zu: empty owner", path, line);
	for (int i = 0; i < 4; i++) {
		if (dp_num_parse_double(what[i], f[col[i]], 0, &v[i]) != 0 || (i > 0 && v[i] < 0))
			return dp_error_set(DP_EFORMAT, "%s:%zu: %s: expected a finite number%s, got '%s'", path,
					    line, what[i], i > 0 ? " >= 0" : "", f[col[i]]);
	}
	idx = cols_name(c, f[2], *hint);
	if (idx == SIZE_MAX)
		return dp_error_set(DP_ENOMEM, "out of memory");
	*hint = idx;
	c->owner[c->n] = idx;
	c->t[c->n] = v[0];
	c->wait[c->n] = v[1];
	c->rtt[c->n] = v[2];
	c->eps[c->n] = v[3];
	if (nfields >= 7)
		c->stale[c->n] = (double)stale;
	c->n++;
	return 0;
}

/* One owner number per line; owners are named owner-1..owner-max. */
static int sched_row(cols *c, const char *buf, const char *path, size_t line, size_t *maxo)
{
	size_t v;

	if (dp_num_parse_size("owner", buf, &v) != 0 || v == 0)
		return dp_error_set(DP_EFORMAT, "%s:%zu: expected an owner number >= 1, got '%s'", path, line, buf);
	c->k[c->n] = c->n + 1;
	c->owner[c->n] = v - 1;
	if (v > *maxo)
		*maxo = v;
	c->n++;
	return 0;
}

static int open_read(const char *path, FILE **f)
{
	*f = fopen(path, "r");
	if (*f == NULL)
		return dp_error_set(errno == ENOENT ? DP_ENOENT : DP_EIO, "%s: cannot open: %s", path,
				    strerror(errno));
	return 0;
}

int dp_plot_trace_read(const char *path, const char *const *extra, size_t nextra, dp_plot_trace *tr)
{
	cols c = { 0 };
	FILE *f;
	char *buf = NULL;
	size_t bufsz = 0, line = 0, hint = 0, maxo = 0, *map = NULL;
	int rc, is_trace = -1;

	DP_REQUIRE(path != NULL && tr != NULL && (extra != NULL || nextra == 0));
	rc = open_read(path, &f);
	if (rc != 0)
		return rc;
	for (;;) {
		ssize_t len = getline(&buf, &bufsz, f);
		int torn;

		if (len == -1)
			break;
		torn = len == 0 || buf[len - 1] != '\n';
		line++;
		buf[strcspn(buf, "\r\n")] = '\0';
		if (is_trace < 0) {
			/* 3: with the job column, 2: with staleness, 1: six. */
			is_trace = strcmp(buf, trace_header) == 0 ? 3
				: strcmp(buf, trace_header7) == 0 ? 2
				: strcmp(buf, trace_header6) == 0 ? 1 : 0;
			if (is_trace)
				continue;
			if (buf[0] < '0' || buf[0] > '9') {
				rc = dp_error_set(DP_EFORMAT, "%s: neither a learnerd trace.csv (header %s) nor a "
						  "schedule.txt (one owner number per line)", path, trace_header);
				goto out;
			}
		}
		if (buf[0] == '\0' && !is_trace)
			continue;
		rc = cols_reserve(&c, is_trace);
		if (rc != 0)
			goto out;
		rc = is_trace ? trace_row(&c, buf, path, line, &hint, 5 + (size_t)is_trace)
			: sched_row(&c, buf, path, line, &maxo);
		if (rc == DP_EFORMAT && torn) {
			rc = 0;   /* the last row of a crashed learner */
			break;
		}
		if (rc != 0)
			goto out;
	}
	if (ferror(f)) {
		rc = dp_error_set(DP_EIO, "%s: read error", path);
		goto out;
	}
	if (c.n == 0) {
		rc = dp_error_set(DP_EFORMAT, "%s: no iterations in the file", path);
		goto out;
	}
	if (!is_trace) {
		char name[32];
		for (size_t i = 1; i <= maxo; i++) {
			snprintf(name, sizeof(name), "owner-%zu", i);
			if (cols_name(&c, name, 0) == SIZE_MAX) {
				rc = dp_error_set(DP_ENOMEM, "out of memory");
				goto out;
			}
		}
	}
	for (size_t i = 0; i < nextra; i++)
		if (cols_name(&c, extra[i], 0) == SIZE_MAX) {
			rc = dp_error_set(DP_ENOMEM, "out of memory");
			goto out;
		}
	/* Sort the names and renumber the rows. */
	{
		char **sorted = malloc(c.nnames * sizeof(char *));
		map = malloc(c.nnames * sizeof(size_t));
		if (sorted == NULL || map == NULL) {
			free(sorted);
			rc = dp_error_set(DP_ENOMEM, "out of memory");
			goto out;
		}
		memcpy(sorted, c.names, c.nnames * sizeof(char *));
		qsort(sorted, c.nnames, sizeof(char *), natcmp_p);
		for (size_t i = 0; i < c.nnames; i++)
			for (size_t j = 0; j < c.nnames; j++)
				if (sorted[j] == c.names[i])
					map[i] = j;
		for (size_t r = 0; r < c.n; r++)
			c.owner[r] = map[c.owner[r]];
		free(c.names);
		c.names = sorted;
	}
	memset(tr, 0, sizeof(*tr));
	tr->n = c.n;
	tr->k = c.k;
	tr->owner = c.owner;
	tr->t = c.t;
	tr->wait = c.wait;
	tr->rtt = c.rtt;
	tr->eps = c.eps;
	tr->stale = c.stale;
	tr->N = c.nnames;
	tr->names = c.names;
	tr->job = c.job;
	memset(&c, 0, sizeof(c));
	rc = 0;
out:
	free(map);
	free(buf);
	fclose(f);
	cols_free(&c);
	return rc;
}

void dp_plot_trace_free(dp_plot_trace *tr)
{
	if (tr == NULL)
		return;
	free(tr->k);
	free(tr->owner);
	free(tr->t);
	free(tr->wait);
	free(tr->rtt);
	free(tr->eps);
	free(tr->stale);
	for (size_t i = 0; i < tr->N; i++)
		free(tr->names[i]);
	free(tr->names);
	free(tr->job);
	memset(tr, 0, sizeof(*tr));
}

double dp_plot_trace_start(const dp_plot_trace *tr)
{
	DP_REQUIRE(tr != NULL);
	double t0;

	if (tr->t == NULL || tr->n == 0)
		return NAN;
	/* With several queries in flight the first one sent need not be the
	 * first answered: the earliest send time over every row. */
	t0 = tr->t[0] - tr->rtt[0];
	for (size_t r = 1; r < tr->n; r++)
		if (tr->t[r] - tr->rtt[r] < t0)
			t0 = tr->t[r] - tr->rtt[r];
	return t0;
}

/* The "job" of a model.json or checkpoint.json: a string, or an object
 * with a string "id" or "name" (learnerd --job); NULL otherwise. */
static const char *job_id(struct json_object *root)
{
	struct json_object *j = NULL, *id = NULL;

	if (!json_object_object_get_ex(root, "job", &j))
		return NULL;
	if (json_object_is_type(j, json_type_string))
		return json_object_get_string(j);
	if (!json_object_is_type(j, json_type_object))
		return NULL;
	if (json_object_object_get_ex(j, "id", &id) && json_object_is_type(id, json_type_string))
		return json_object_get_string(id);
	if (json_object_object_get_ex(j, "name", &id) && json_object_is_type(id, json_type_string))
		return json_object_get_string(id);
	return NULL;
}

/* A run's directory as a name: its last two components ("exp1/learner"),
 * since learnerd's --out is often just "learner". */
static const char *run_name(const char *dir)
{
	const char *last = strrchr(dir, '/');

	if (last == NULL || last == dir)
		return dir;
	for (const char *p = last - 1; p >= dir; p--)
		if (*p == '/')
			return p + 1;
	return dir;
}

/* The job column of the trace's first row (buf, "" when the file is not a
 * trace with that column). */
static void first_row_job(const char *trace_path, char *buf, size_t size)
{
	FILE *f = fopen(trace_path, "r");
	char line[1024];
	const char *comma;

	buf[0] = '\0';
	if (f == NULL)
		return;
	if (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		if (strcmp(line, trace_header) == 0 && fgets(line, sizeof(line), f) != NULL &&
		    strchr(line, '\n') != NULL) {
			line[strcspn(line, "\r\n")] = '\0';
			comma = strrchr(line, ',');
			if (comma != NULL)
				snprintf(buf, size, "%s", comma + 1);
		}
	}
	fclose(f);
}

void dp_plot_run_context(const char *trace_path, const char *job, const char *dataset, char *buf,
			 size_t size)
{
	char dir[4096], path[4200], ds[300] = "", jb[300] = "", tjob[256];
	struct json_object *model = NULL, *ck = NULL, *v = NULL;
	const char *d, *id = NULL;

	DP_REQUIRE(trace_path != NULL && buf != NULL && size > 0);
	snprintf(dir, sizeof(dir), "%s", trace_path);
	d = dirname(dir);
	snprintf(path, sizeof(path), "%s/model.json", d);
	if (dp_json_read_file(path, SUMMARY_MAX, &model) != 0)
		model = NULL;
	snprintf(path, sizeof(path), "%s/checkpoint.json", d);
	if (dp_json_read_file(path, SUMMARY_MAX, &ck) != 0)
		ck = NULL;
	first_row_job(trace_path, tjob, sizeof(tjob));
	if (tjob[0] != '\0')
		id = tjob;   /* the trace says which job drew it */
	if (id == NULL && model)
		id = job_id(model);
	if (id == NULL && ck)
		id = job_id(ck);
	if (job)
		snprintf(jb, sizeof(jb), "job %s", job);
	else if (id)
		snprintf(jb, sizeof(jb), "job %s", id);
	else if (strcmp(d, ".") != 0 && strcmp(d, "/") != 0)
		snprintf(jb, sizeof(jb), "run %s", run_name(d));
	if (dataset) {
		snprintf(ds, sizeof(ds), "dataset %s", dataset);
	} else if (model && json_object_object_get_ex(model, "features", &v) &&
		   json_object_is_type(v, json_type_array)) {
		struct json_object *t = NULL;
		const char *target = json_object_object_get_ex(model, "target", &t) &&
			json_object_is_type(t, json_type_string) ? json_object_get_string(t) : NULL;

		if (target)
			snprintf(ds, sizeof(ds), "dataset: target %s, %zu features", target,
				 json_object_array_length(v));
		else
			snprintf(ds, sizeof(ds), "dataset: %zu features", json_object_array_length(v));
	} else if (ck && json_object_object_get_ex(ck, "job", &v) &&
		   json_object_is_type(v, json_type_object)) {
		/* Without feature names the learner knows the size of the data. */
		struct json_object *n = NULL, *pp = NULL;

		if (json_object_object_get_ex(v, "n_total", &n) &&
		    json_object_object_get_ex(v, "p", &pp))
			snprintf(ds, sizeof(ds), "dataset: %" PRId64 " rows, %" PRId64 " coefficients",
				 json_object_get_int64(n), json_object_get_int64(pp));
	}
	snprintf(buf, size, "%s%s%s", jb, jb[0] && ds[0] ? "; " : "", ds);
	json_object_put(model);
	json_object_put(ck);
}

int dp_plot_schedule_check(const char *path, const dp_plot_trace *tr)
{
	dp_plot_trace s;
	int rc;

	DP_REQUIRE(path != NULL && tr != NULL);
	rc = dp_plot_trace_read(path, NULL, 0, &s);
	if (rc != 0)
		return rc;
	if (s.t != NULL) {
		dp_plot_trace_free(&s);
		return dp_error_set(DP_EFORMAT, "%s: expected a schedule (one owner number per line)", path);
	}
	for (size_t r = 0; r < s.n && r < tr->n; r++)
		if (s.owner[r] != tr->owner[r]) {
			rc = dp_error_set(DP_EINVAL, "%s: k = %zu is owner %zu, the trace has %s (owner %zu in "
					  "natural order)", path, r + 1, s.owner[r] + 1, tr->names[tr->owner[r]],
					  tr->owner[r] + 1);
			break;
		}
	if (rc == 0 && s.n != tr->n)
		rc = dp_error_set(DP_EINVAL, "%s: %zu iterations, the trace has %zu", path, s.n, tr->n);
	dp_plot_trace_free(&s);
	return rc;
}

static const char psi_header[] = "k,psi_p25,psi_median,psi_p75,psi_mean";

int dp_plot_rates(const char *arg, const dp_plot_trace *tr, double **out)
{
	double *r = NULL;
	char *copy, *tok, *next;
	size_t n = 0;
	int err = 0;

	DP_REQUIRE(arg != NULL && tr != NULL && out != NULL);
	if (strchr(arg, '=') == NULL) {
		err = dp_num_parse_double_list("--rate", arg, 0, &r, &n);
		if (err != 0)
			return err == DP_ENOMEM ? dp_error_set(err, "out of memory") : err;
		if (n != tr->N) {
			free(r);
			return dp_error_set(DP_EINVAL, "--rate has %zu values for the trace's %zu "
					    "owners", n, tr->N);
		}
	} else {
		r = malloc((tr->N ? tr->N : 1) * sizeof(double));
		copy = strdup(arg);
		if (r == NULL || copy == NULL) {
			free(r);
			free(copy);
			return dp_error_set(DP_ENOMEM, "out of memory");
		}
		for (size_t i = 0; i < tr->N; i++)
			r[i] = NAN;
		for (tok = copy; tok != NULL && err == 0; tok = next, n++) {
			char *eq;
			size_t i = n;

			next = strchr(tok, ',');
			if (next != NULL)
				*next++ = '\0';
			eq = strchr(tok, '=');
			if (eq != NULL) {
				*eq = '\0';
				for (i = 0; i < tr->N && strcmp(tr->names[i], tok) != 0; i++)
					;
				if (i == tr->N)
					err = dp_error_set(DP_EINVAL, "--rate: '%s' is not an owner of "
							   "the trace", tok);
			} else if (i >= tr->N) {
				err = dp_error_set(DP_EINVAL, "--rate has more values than the "
						   "trace's %zu owners", tr->N);
			}
			if (err == 0)
				err = dp_num_parse_double("--rate", eq ? eq + 1 : tok, 0, &r[i]);
		}
		for (size_t i = 0; err == 0 && i < tr->N; i++)
			if (isnan(r[i]))
				err = dp_error_set(DP_EINVAL, "--rate: no rate for owner '%s'",
						   tr->names[i]);
		free(copy);
		if (err != 0) {
			free(r);
			return err;
		}
	}
	for (size_t i = 0; i < tr->N; i++) {
		if (!(r[i] > 0)) {
			err = dp_error_set(DP_EINVAL, "--rate must be > 0 (got %g)", r[i]);
			free(r);
			return err;
		}
	}
	*out = r;
	return 0;
}

/* One row of a small CSV table whose header read_table has checked: its nf
 * fields, split at the commas; the callback stores them or says why not. */
typedef int (*table_row_fn)(void *ctx, char **fld, const char *path, size_t line);

/* Read a CSV table of nf numeric columns under exactly the header `header`
 * (what: the file's name in messages), calling row() for each row.  At
 * least one row is required. */
static int read_table(const char *path, const char *header, const char *what, size_t nf,
		      table_row_fn row, void *ctx)
{
	FILE *f;
	char *buf = NULL, *fld[8];
	size_t bufsz = 0, line = 0, rows = 0;
	int rc;

	DP_REQUIRE(nf > 0 && nf <= sizeof(fld) / sizeof(fld[0]));
	rc = open_read(path, &f);
	if (rc != 0)
		return rc;
	while (getline(&buf, &bufsz, f) != -1) {
		char *q = buf;
		size_t n = 0;

		line++;
		buf[strcspn(buf, "\r\n")] = '\0';
		if (line == 1) {
			if (strcmp(buf, header) != 0) {
				rc = dp_error_set(DP_EFORMAT, "%s: not %s (expected the header %s)", path,
						  what, header);
				goto out;
			}
			continue;
		}
		for (;;) {
			char *comma = strchr(q, ',');

			fld[n++] = q;
			if (comma == NULL || n == nf)
				break;
			*comma = '\0';
			q = comma + 1;
		}
		if (n != nf || strchr(fld[nf - 1], ',') != NULL) {
			rc = dp_error_set(DP_EFORMAT, "%s:%zu: expected %zu fields (%s)", path, line, nf,
					  header);
			goto out;
		}
		rc = row(ctx, fld, path, line);
		if (rc != 0)
			goto out;
		rows++;
	}
	if (ferror(f))
		rc = dp_error_set(DP_EIO, "%s: read error", path);
	else if (line == 0)
		rc = dp_error_set(DP_EFORMAT, "%s: empty file", path);
	else if (rows == 0)
		rc = dp_error_set(DP_EFORMAT, "%s: no rows after the header", path);
	else
		rc = 0;
out:
	free(buf);
	fclose(f);
	return rc;
}

struct psi_rows {
	dp_plot_psi p;
	size_t cap;
};

static int psi_row(void *ctx, char **fld, const char *path, size_t line)
{
	struct psi_rows *r = ctx;
	dp_plot_psi *p = &r->p;
	double *dst[4];
	int rc;

	rc = reserve_columns((void *const[]){ &p->k, &p->p25, &p->p50, &p->p75, &p->mean },
			     (const size_t[]){ sizeof(*p->k), sizeof(*p->p25), sizeof(*p->p50),
					       sizeof(*p->p75), sizeof(*p->mean) },
			     5, &r->cap, p->n + 1, 256);
	if (rc != 0)
		return rc;
	if (dp_num_parse_size("k", fld[0], &p->k[p->n]) != 0 || p->k[p->n] == 0 ||
	    (p->n > 0 && p->k[p->n] <= p->k[p->n - 1]))
		return dp_error_set(DP_EFORMAT, "%s:%zu: k: expected a positive integer larger than "
				    "the previous row's, got '%s'", path, line, fld[0]);
	dst[0] = &p->p25[p->n];
	dst[1] = &p->p50[p->n];
	dst[2] = &p->p75[p->n];
	dst[3] = &p->mean[p->n];
	for (int i = 0; i < 4; i++)
		if (dp_num_parse_double("psi", fld[i + 1], 0, dst[i]) != 0)
			return dp_error_set(DP_EFORMAT, "%s:%zu: column %d: expected a finite number, "
					    "got '%s'", path, line, i + 2, fld[i + 1]);
	p->n++;
	return 0;
}

int dp_plot_psi_read(const char *path, dp_plot_psi *ps)
{
	struct psi_rows r = { 0 };
	int rc;

	DP_REQUIRE(path != NULL && ps != NULL);
	rc = read_table(path, psi_header, "a sim psi.csv", 5, psi_row, &r);
	if (rc != 0) {
		dp_plot_psi_free(&r.p);
		return rc;
	}
	*ps = r.p;
	return 0;
}

void dp_plot_psi_free(dp_plot_psi *ps)
{
	if (ps == NULL)
		return;
	free(ps->k);
	free(ps->p25);
	free(ps->p50);
	free(ps->p75);
	free(ps->mean);
	memset(ps, 0, sizeof(*ps));
}

void dp_plot_sim_note(const char *psi_path, char *note, size_t size, size_t *runs)
{
	char dir[4096], path[4200], eps[64] = "";
	struct json_object *j = NULL, *e;
	dp_json_reader r = { .path = path };
	const char *mode, *model;
	uint64_t R, N, T;

	DP_REQUIRE(psi_path != NULL && note != NULL && size > 0 && runs != NULL);
	note[0] = '\0';
	*runs = 0;
	snprintf(dir, sizeof(dir), "%s", psi_path);
	snprintf(path, sizeof(path), "%s/summary.json", dirname(dir));
	if (dp_json_read_file(path, SUMMARY_MAX, &j) != 0)
		return;
	R = dp_json_get_u64(&r, j, "repeats", false, 0);
	mode = dp_json_get_string(&r, j, "mode", false, "?");
	model = dp_json_get_string(&r, j, "model", false, "?");
	N = dp_json_get_u64(&r, j, "N", false, 0);
	T = dp_json_get_u64(&r, j, "T", false, 0);
	e = dp_json_get(&r, j, "epsilon", json_type_array, false);
	if (e != NULL && json_object_array_length(e) > 0) {
		size_t n = json_object_array_length(e);
		bool same = true;
		/* summary.json writes an unlimited budget as null. */
		struct json_object *e0 = json_object_array_get_idx(e, 0);
		double v0 = e0 ? dp_json_number(&r, e0, "epsilon", 0) : 0;

		for (size_t i = 1; i < n; i++) {
			struct json_object *ei = json_object_array_get_idx(e, i);

			if ((ei == NULL) != (e0 == NULL) ||
			    (ei && dp_json_number(&r, ei, "epsilon", 0) != v0))
				same = false;
		}
		if (same && e0 == NULL)
			snprintf(eps, sizeof(eps), ", ε = ∞");
		else if (same)
			snprintf(eps, sizeof(eps), ", ε = %g", v0);
		else
			snprintf(eps, sizeof(eps), ", ε differs per owner");
	}
	if (r.rc == 0) {   /* a summary.json we did not write gives no note */
		snprintf(note, size, "%llu run%s, %s, %s, N = %llu, T = %llu%s",
			 (unsigned long long)R, R == 1 ? "" : "s", mode, model,
			 (unsigned long long)N, (unsigned long long)T, eps);
		*runs = (size_t)R;
	}
	json_object_put(j);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double dp_plot_percentile(double *v, size_t n, double pct)
{
	double pos, frac;
	size_t lo;

	DP_REQUIRE(v != NULL || n == 0);
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(double), cmp_double);
	pos = pct / 100.0 * (double)(n - 1);
	lo = (size_t)pos;
	frac = pos - (double)lo;
	if (lo + 1 >= n)
		return v[n - 1];
	return v[lo] + frac * (v[lo + 1] - v[lo]);
}

/* ---- gnuplot ---------------------------------------------------------- */

/* A gnuplot double-quoted string: backslash and quote escaped, control
 * characters (other than newline, which becomes a line break) dropped. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

/* A name as a field of a datablock: double-quoted, without quotes inside. */
static void put_data_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		fputc(*s == '"' || (unsigned char)*s < 0x20 ? '\'' : *s, f);
	fputc('"', f);
}

static int find_gnuplot(char *buf, size_t size)
{
	const char *path = getenv("PATH");
	const char *p = path && *path ? path : "/usr/bin:/bin";

	while (*p) {
		size_t len = strcspn(p, ":");
		struct stat st;
		if (len > 0 && (size_t)snprintf(buf, size, "%.*s/gnuplot", (int)len, p) < size &&
		    stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
			return 0;
		p += len;
		if (*p == ':')
			p++;
	}
	return dp_error_set(DP_ENOENT, "gnuplot not found on PATH (on Debian: apt-get install gnuplot-nox)");
}

int dp_plot_gnuplot_check(void)
{
	char buf[4096];

	return find_gnuplot(buf, sizeof(buf));
}

/* The last non-blank line of gnuplot's stderr, whitespace squeezed. */
static void last_line(const char *path, char *out, size_t size)
{
	FILE *f = fopen(path, "r");
	char line[512];

	snprintf(out, size, "no message");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *e;
		while (isspace((unsigned char)*s))
			s++;
		e = s + strlen(s);
		while (e > s && isspace((unsigned char)e[-1]))
			*--e = '\0';
		if (*s)
			snprintf(out, size, "%s", s);
	}
	fclose(f);
}

static int make_temp(char *buf, size_t size, const char *suffix)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(buf, size, "%s/dpasync-plot-XXXXXX%s", dir && *dir ? dir : "/tmp", suffix);
	fd = mkstemps(buf, (int)strlen(suffix));
	if (fd < 0)
		return dp_error_set(DP_EIO, "cannot create a temporary file in %s: %s", dir && *dir ? dir : "/tmp",
				    strerror(errno));
	return fd;
}

int dp_plot_format_of(const char *out, enum dp_plot_format *fmt)
{
	static const char *const ext[] = { ".png", ".svg", ".pdf" };
	size_t n;

	DP_REQUIRE(out != NULL && fmt != NULL);
	n = strlen(out);
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		if (n > 4 && strcasecmp(out + n - 4, ext[i]) == 0) {
			*fmt = (enum dp_plot_format)i;
			return 0;
		}
	return dp_error_set(DP_EINVAL, "%s: the figure's format comes from its extension: .png, "
			    ".svg or .pdf", out);
}

/* The terminal for the output's format.  PDF is sized in inches at 72
 * pixels per inch, so a figure has the proportions of its PNG. */
static void put_terminal(FILE *f, enum dp_plot_format fmt, unsigned w, unsigned h)
{
	if (fmt == DP_PLOT_SVG)
		fprintf(f, "set terminal svg size %u,%u font \"DejaVu Sans,11\" noenhanced "
			"background rgb \"white\"\n", w, h);
	else if (fmt == DP_PLOT_PDF)
		fprintf(f, "set terminal pdfcairo size %.3fin,%.3fin font \"DejaVu Sans,11\" "
			"noenhanced\n", w / 72.0, h / 72.0);
	else
		fprintf(f, "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
			"    set terminal pngcairo size %u,%u font \"DejaVu Sans,11\" noenhanced\n"
			"} else {\n"
			"    set terminal png size %u,%u noenhanced\n"
			"}\n", w, h, w, h);
}

/* Run gnuplot on prologue + body; the figure goes to a temporary name next
 * to `out` and is renamed over it only when gnuplot succeeded. */
static int render(const char *body, size_t len, const dp_plot_opts *o, const char *out)
{
	char gp[4096], script[4096], log[4096], tmp_out[4096], msg[400];
	char *argv[3];
	unsigned w = o && o->width ? o->width : 1000, h = o && o->height ? o->height : 600;
	int sfd = -1, lfd = -1, status, rc;
	posix_spawn_file_actions_t fa;
	enum dp_plot_format fmt;
	FILE *f;
	pid_t pid;
	struct stat st;

	for (const char *s = out; *s; s++)
		if ((unsigned char)*s < 0x20)
			return dp_error_set(DP_EINVAL, "output path contains a control character");
	if ((size_t)snprintf(tmp_out, sizeof(tmp_out), "%s.tmp-%ld", out, (long)getpid()) >= sizeof(tmp_out))
		return dp_error_set(DP_EINVAL, "output path too long");
	rc = dp_plot_format_of(out, &fmt);
	if (rc != 0)
		return rc;
	rc = find_gnuplot(gp, sizeof(gp));
	if (rc != 0)
		return rc;
	sfd = make_temp(script, sizeof(script), ".gp");
	if (sfd < 0)
		return sfd;
	lfd = make_temp(log, sizeof(log), ".log");
	if (lfd < 0) {
		close(sfd);
		unlink(script);
		return lfd;
	}
	f = fdopen(sfd, "w");
	if (f == NULL) {
		close(sfd);
		rc = dp_error_set(DP_EIO, "%s: %s", script, strerror(errno));
		goto out;
	}
	fputs("set encoding utf8\n", f);
	put_terminal(f, fmt, w, h);
	fputs("set output '", f);
	for (const char *s = tmp_out; *s; s++)
		fputs(*s == '\'' ? "''" : (char[2]){ *s, 0 }, f);
	fputs("'\nset grid lc rgb \"#d0d0d0\"\nset border lc rgb \"#404040\"\n", f);
	fwrite(body, 1, len, f);
	fputs("unset output\n", f);
	if (fclose(f) != 0) {
		rc = dp_error_set(DP_EIO, "%s: write failed", script);
		goto out;
	}
	argv[0] = gp;
	argv[1] = script;
	argv[2] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, lfd, 1);
	posix_spawn_file_actions_adddup2(&fa, lfd, 2);
	rc = posix_spawn(&pid, gp, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		rc = dp_error_set(DP_EIO, "cannot run %s: %s", gp, strerror(rc));
		goto out;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			rc = dp_error_set(DP_EIO, "waiting for gnuplot: %s", strerror(errno));
			goto out;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		last_line(log, msg, sizeof(msg));
		rc = dp_error_set(DP_EIO, "gnuplot failed (%s %d): %s", WIFEXITED(status) ? "exit" : "signal",
				  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), msg);
		goto out;
	}
	if (stat(tmp_out, &st) != 0 || st.st_size == 0) {
		last_line(log, msg, sizeof(msg));
		rc = dp_error_set(DP_EIO, "gnuplot wrote no figure: %s", msg);
		goto out;
	}
	if (rename(tmp_out, out) != 0) {
		rc = dp_error_set(DP_EIO, "%s: cannot write: %s", out, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	close(lfd);
	unlink(script);
	unlink(log);
	if (rc != 0)
		unlink(tmp_out);
	return rc;
}

/* What a figure draws, as CSV for --data-out: built in memory beside the
 * script and written only once the figure is. */
typedef struct csvbuf {
	FILE *f;        /* NULL: no --data-out */
	char *buf;
	size_t len;
} csvbuf;

static int csv_open(csvbuf *c, const dp_plot_opts *o, const char *header)
{
	memset(c, 0, sizeof(*c));
	if (o == NULL || o->data_out == NULL)
		return 0;
	c->f = open_memstream(&c->buf, &c->len);
	if (c->f == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	fprintf(c->f, "%s\n", header);
	return 0;
}

static void csv_discard(csvbuf *c)
{
	if (c->f)
		fclose(c->f);
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

/* One CSV text field: quoted when it holds a comma, quote or line break. */
static void csv_text(FILE *f, const char *s)
{
	if (strpbrk(s, ",\"\r\n") == NULL) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* The script body is built in memory; this finishes it, renders, and then
 * writes the CSV of --data-out (always consumes c). */
static int finish(FILE *f, char **body, size_t *len, csvbuf *c, const dp_plot_opts *o,
		  const char *out)
{
	int rc;

	if (fclose(f) != 0 || *body == NULL) {
		free(*body);
		csv_discard(c);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	rc = render(*body, *len, o, out);
	free(*body);
	if (rc == 0 && c->f) {
		if (fclose(c->f) != 0 || c->buf == NULL)
			rc = dp_error_set(DP_ENOMEM, "out of memory");
		c->f = NULL;
		if (rc == 0)
			rc = dp_file_write_atomic(o->data_out, c->buf, c->len, 0644);
		if (rc != 0 && rc != DP_ENOMEM)
			rc = dp_error_set(DP_EIO, "--data-out %s: %s", o->data_out,
					  dp_error_detail(rc));
	}
	csv_discard(c);
	return rc;
}

/* The title: --title as given, or the figure's default with the run's
 * context (job and dataset) on a second line. */
static void put_title(FILE *f, const char *cmd, const dp_plot_opts *o, const char *deflt)
{
	char buf[1024];

	fprintf(f, "%s ", cmd);
	if (o && o->title) {
		put_quoted(f, o->title);
	} else {
		snprintf(buf, sizeof(buf), "%s%s%s", deflt, o && o->context && o->context[0] ? "\n" : "",
			 o && o->context ? o->context : "");
		put_quoted(f, buf);
	}
	fputc('\n', f);
}

/* A logarithmic axis ("x" or "y") with its minor ticks: nine per decade. */
static void put_logscale(FILE *f, const char *axis)
{
	fprintf(f, "set logscale %s\nset m%stics 10\n", axis, axis);
}

/* ---- figures ---------------------------------------------------------- */

/* owners and owners-wall: the owner of each iteration against k, or
 * against seconds since the first query (wall, dp_plot_trace_start). */
static int owners_fig(const dp_plot_trace *tr, size_t kmax, int wall, const dp_plot_opts *o,
		      const char *out)
{
	char *body = NULL, title[256];
	size_t len = 0, n = 0, *count;
	FILE *f;
	int per_owner, rc;
	double ps, t0 = wall ? dp_plot_trace_start(tr) : 0;
	csvbuf c;

	count = calloc(tr->N ? tr->N : 1, sizeof(size_t));
	per_owner = tr->N <= MAX_LEGEND_OWNERS;
	if (count == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t r = 0; r < tr->n && (kmax == 0 || tr->k[r] <= kmax); r++) {
		count[tr->owner[r]]++;
		n++;
	}
	if (n == 0) {
		free(count);
		return dp_error_set(DP_EINVAL, "no iteration with k <= %zu", kmax);
	}
	rc = csv_open(&c, o, wall ? "time_s,k,owner" : "k,owner");
	if (rc != 0) {
		free(count);
		return rc;
	}
	f = open_memstream(&body, &len);
	if (f == NULL) {
		free(count);
		csv_discard(&c);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	if (wall)
		snprintf(title, sizeof(title), "Owner of each iteration against wall-clock time (%zu owners, "
			 "%zu iterations)", tr->N, n);
	else
		snprintf(title, sizeof(title), "Owner of each iteration (%s: %zu owners, %zu iterations%s)",
			 tr->t ? "learnerd trace" : "sim schedule", tr->N, n,
			 kmax && n < tr->n ? " shown" : "");
	put_title(f, "set title", o, title);
	fprintf(f, "set xlabel \"%s\"\nset ylabel \"owner\"\n"
		"set yrange [0.5:%zu.5]\nset autoscale xfix\nset offsets graph 0.01, graph 0.01, 0, 0\n",
		wall ? "seconds since the learner's first query" : "iteration k", tr->N);
	if (tr->N <= 40) {
		fputs("set ytics (", f);
		for (size_t i = 0; i < tr->N; i++) {
			fprintf(f, "%s", i ? ", " : "");
			put_quoted(f, tr->names[i]);
			fprintf(f, " %zu", i + 1);
		}
		fputs(")\nset grid noytics\n", f);
	} else {
		fputs("set ylabel \"owner (index in natural order of names)\"\n", f);
	}
	/* The legend outside the plot, on the right: no point hides under it. */
	fputs("set key outside right top vertical title \"owner: iterations (share)\"\n", f);
	ps = n <= 500 ? 0.9 : n <= 5000 ? 0.5 : 0.3;
	fputs("$d << EOD\n", f);
	for (size_t r = 0; r < n; r++) {
		double x = wall ? tr->t[r] - t0 : (double)tr->k[r];

		fprintf(f, "%.10g %zu\n", x, tr->owner[r] + 1);
		if (c.f && wall)
			fprintf(c.f, "%.6f,%zu,", x, tr->k[r]);
		else if (c.f)
			fprintf(c.f, "%zu,", tr->k[r]);
		if (c.f) {
			csv_text(c.f, tr->names[tr->owner[r]]);
			fputc('\n', c.f);
		}
	}
	fputs("EOD\n", f);
	if (per_owner) {
		fputs("plot ", f);
		for (size_t i = 0; i < tr->N; i++) {
			char t[300];
			snprintf(t, sizeof(t), "%s: %zu (%.1f %%)", tr->names[i], count[i], 100.0 * (double)count[i] / (double)n);
			fprintf(f, "%s$d using 1:($2 == %zu ? $2 : NaN) with points pt 7 ps %.1f lc rgb \"%s\" title ",
				i ? ", \\\n     " : "", i + 1, ps, colors[i % NCOLORS]);
			put_quoted(f, t);
		}
		fputc('\n', f);
	} else {
		fprintf(f, "set key off\nplot $d using 1:2:2 with points pt 7 ps %.1f lc variable notitle\n", ps);
	}
	free(count);
	return finish(f, &body, &len, &c, o, out);
}

int dp_plot_owners(const dp_plot_trace *tr, size_t kmax, const dp_plot_opts *o, const char *out)
{
	DP_REQUIRE(tr != NULL && out != NULL);
	return owners_fig(tr, kmax, 0, o, out);
}

int dp_plot_owners_wall(const dp_plot_trace *tr, const dp_plot_opts *o, const char *out)
{
	DP_REQUIRE(tr != NULL && out != NULL);
	if (tr->t == NULL)
		return dp_error_set(DP_EINVAL, "owners-wall needs a learnerd trace.csv (with times), not a "
				    "schedule");
	return owners_fig(tr, 0, 1, o, out);
}

/* One psi series as a datablock: x p25 p50 p75; and as CSV rows
 * "[label,][time_s,]k,psi_p25,psi_median,psi_p75" when c is open. */
static void psi_block(FILE *f, int idx, const dp_plot_psi *ps, const double *x, csvbuf *c,
		      const char *label)
{
	fprintf(f, "$s%d << EOD\n", idx);
	for (size_t r = 0; r < ps->n; r++) {
		fprintf(f, "%.10g %.10g %.10g %.10g\n", x ? x[r] : (double)ps->k[r], ps->p25[r], ps->p50[r], ps->p75[r]);
		if (c->f == NULL)
			continue;
		if (label) {
			csv_text(c->f, label);
			fputc(',', c->f);
		}
		if (x)
			fprintf(c->f, "%.6f,", x[r]);
		fprintf(c->f, "%zu,%.10g,%.10g,%.10g\n", ps->k[r], ps->p25[r], ps->p50[r], ps->p75[r]);
	}
	fputs("EOD\n", f);
}

static int psi_logy(const dp_plot_psi *ps, size_t ns, const dp_plot_opts *o)
{
	if (o && o->linear)
		return 0;
	for (size_t s = 0; s < ns; s++)
		for (size_t r = 0; r < ps[s].n; r++)
			if (ps[s].p50[r] > 0)
				return 1;
	return 0;   /* nothing positive: a log axis would have no points */
}

static void psi_axes(FILE *f, int logy, int logx)
{
	fprintf(f, "set ylabel \"ψ = f(θ_L) / f(θ*) − 1%s\"\n", logy ? " (log scale)" : "");
	if (logy) {
		put_logscale(f, "y");
		fputs("set format y \"%g\"\n", f);
	}
	if (logx)
		put_logscale(f, "x");
	/* Outside the plot: a decreasing curve passes through the top right. */
	fputs("set key outside right top vertical\n", f);
}

static void psi_plot(FILE *f, int idx, const char *label, int first)
{
	char t[300];
	const char *c = colors[idx % NCOLORS];

	fprintf(f, "%s$s%d using 1:2:4 with filledcurves fs transparent solid 0.22 noborder lc rgb \"%s\" title ",
		first ? "plot " : ", \\\n     ", idx, c);
	snprintf(t, sizeof(t), "%s%s25–75 %% of runs", label ? label : "", label ? ": " : "");
	put_quoted(f, t);
	fprintf(f, ", \\\n     $s%d using 1:3 with lines lw 2 lc rgb \"%s\" title ", idx, c);
	snprintf(t, sizeof(t), "%s%smedian", label ? label : "", label ? ": " : "");
	put_quoted(f, t);
}

int dp_plot_psi_k(const dp_plot_psi *ps, const char *const *labels, size_t ns, const char *header_note,
		  const dp_plot_opts *o, const char *out)
{
	char *body = NULL, title[400];
	size_t len = 0;
	FILE *f;
	int logy, rc;
	csvbuf c;

	DP_REQUIRE(ps != NULL && labels != NULL && out != NULL);
	logy = psi_logy(ps, ns, o);
	if (ns == 0)
		return dp_error_set(DP_EINVAL, "no psi series to plot");
	rc = csv_open(&c, o, "series,k,psi_p25,psi_median,psi_p75");
	if (rc != 0)
		return rc;
	f = open_memstream(&body, &len);
	if (f == NULL) {
		csv_discard(&c);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	snprintf(title, sizeof(title), "ψ against iteration: median and 25–75 %% band over the runs%s%s%s",
		 header_note ? " (" : "", header_note ? header_note : "", header_note ? ")" : "");
	put_title(f, "set title", o, title);
	fputs("set xlabel \"iteration k\"\n", f);
	psi_axes(f, logy, o && o->logx);
	for (size_t s = 0; s < ns; s++)
		psi_block(f, (int)s, &ps[s], NULL, &c, labels[s] ? labels[s] : "psi");
	for (size_t s = 0; s < ns; s++)
		psi_plot(f, (int)s, labels ? labels[s] : NULL, s == 0);
	fputc('\n', f);
	return finish(f, &body, &len, &c, o, out);
}

/* Row of iteration k in the trace (k strictly increasing), or SIZE_MAX. */
static size_t find_k(const dp_plot_trace *tr, size_t k)
{
	size_t lo = 0, hi = tr->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (tr->k[mid] == k)
			return mid;
		if (tr->k[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

int dp_plot_psi_time(const dp_plot_psi *ps, const dp_plot_trace *tr, size_t runs, const dp_plot_opts *o,
		     const char *out)
{
	char *body = NULL, title[400];
	size_t len = 0;
	double *x, t0;
	FILE *f;
	int logy, rc;
	csvbuf c;

	DP_REQUIRE(ps != NULL && tr != NULL && out != NULL);
	logy = psi_logy(ps, 1, o);
	if (tr->t == NULL)
		return dp_error_set(DP_EINVAL, "psi-time needs a learnerd trace.csv (with times), not a schedule");
	x = malloc(ps->n * sizeof(double));
	if (x == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	t0 = dp_plot_trace_start(tr);
	for (size_t r = 0; r < ps->n; r++) {
		size_t row = find_k(tr, ps->k[r]);
		if (row == SIZE_MAX) {
			free(x);
			return dp_error_set(DP_EINVAL, "psi.csv has k = %zu but the trace has no such iteration "
					    "(it ends at k = %zu)", ps->k[r], tr->k[tr->n - 1]);
		}
		x[r] = tr->t[row] - t0;
	}
	rc = csv_open(&c, o, "time_s,k,psi_p25,psi_median,psi_p75");
	if (rc != 0) {
		free(x);
		return rc;
	}
	f = open_memstream(&body, &len);
	if (f == NULL) {
		free(x);
		csv_discard(&c);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	if (runs)
		snprintf(title, sizeof(title), "ψ against wall-clock time\nψ: median and 25–75 %% of %zu simulated "
			 "runs on the trace's owner order; time: when the trace applied iteration k", runs);
	else
		snprintf(title, sizeof(title), "ψ against wall-clock time\nψ: median and 25–75 %% of simulated "
			 "runs on the trace's owner order; time: when the trace applied iteration k");
	put_title(f, "set title", o, title);
	fputs("set xlabel \"seconds since the learner's first query\"\n", f);
	psi_axes(f, logy, o && o->logx);
	psi_block(f, 0, ps, x, &c, NULL);
	psi_plot(f, 0, NULL, 1);
	fputc('\n', f);
	free(x);
	rc = finish(f, &body, &len, &c, o, out);
	return rc;
}

static const char wall_header[] = "time_s,k,psi";

void dp_plot_wall_free(dp_plot_wall *w)
{
	DP_REQUIRE(w != NULL);
	free(w->t);
	free(w->k);
	free(w->psi);
	memset(w, 0, sizeof(*w));
}

struct wall_rows {
	dp_plot_wall p;
	size_t cap;
};

static int wall_row(void *ctx, char **fld, const char *path, size_t line)
{
	struct wall_rows *r = ctx;
	dp_plot_wall *p = &r->p;
	int rc;

	rc = reserve_columns((void *const[]){ &p->t, &p->k, &p->psi },
			     (const size_t[]){ sizeof(*p->t), sizeof(*p->k), sizeof(*p->psi) },
			     3, &r->cap, p->n + 1, 64);
	if (rc != 0)
		return rc;
	if (dp_num_parse_double("time_s", fld[0], 0, &p->t[p->n]) != 0 || p->t[p->n] < 0 ||
	    (p->n > 0 && p->t[p->n] < p->t[p->n - 1]))
		return dp_error_set(DP_EFORMAT, "%s:%zu: time_s: expected a number >= 0 and >= the "
				    "previous row's", path, line);
	if (dp_num_parse_size("k", fld[1], &p->k[p->n]) != 0 ||
	    dp_num_parse_double("psi", fld[2], 0, &p->psi[p->n]) != 0 || p->psi[p->n] < 0)
		return dp_error_set(DP_EFORMAT, "%s:%zu: expected k >= 0 and psi >= 0", path, line);
	p->n++;
	return 0;
}

int dp_plot_wall_read(const char *path, dp_plot_wall *w)
{
	struct wall_rows r = { 0 };
	int rc;

	DP_REQUIRE(path != NULL && w != NULL);
	rc = read_table(path, wall_header, "a measured psi curve", 3, wall_row, &r);
	if (rc != 0) {
		dp_plot_wall_free(&r.p);
		return rc;
	}
	*w = r.p;
	return 0;
}

/* Index of the first INPUT with the label of INPUT s: INPUTs that share a
 * label are repeats of one run, drawn as a band (docs/plots.md "psi-wall"). */
static size_t wall_group(const char *const *labels, size_t s)
{
	for (size_t i = 0; labels && labels[s] && i < s; i++)
		if (labels[i] && strcmp(labels[i], labels[s]) == 0)
			return i;
	return s;
}

/* The nrun repeats of group g (first INPUT g) as the datablock $wG of the
 * band, "t lo med hi", and their CSV rows. */
static int wall_band(FILE *f, csvbuf *c, const dp_plot_wall *w, const char *const *labels,
		     size_t ns, size_t g, size_t nrun)
{
	const dp_plot_wall **runs = calloc(nrun, sizeof(*runs));
	dp_wallband b = { 0 };
	size_t m = 0;
	int rc;

	if (runs == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t s = g; s < ns; s++)
		if (wall_group(labels, s) == g)
			runs[m++] = &w[s];
	rc = dp_wallband_build(runs, m, &b);
	free(runs);
	if (rc != 0)
		return rc;
	fprintf(f, "$w%zu << EOD\n", g);
	for (size_t r = 0; r < b.n; r++) {
		fprintf(f, "%.10g %.10g %.10g %.10g\n", b.t[r], b.lo[r], b.med[r], b.hi[r]);
		if (c->f) {
			csv_text(c->f, labels[g]);
			fprintf(c->f, ",%.10g,%zu,%.10g,%.10g,%.10g\n", b.t[r], b.runs[r], b.lo[r],
				b.med[r], b.hi[r]);
		}
	}
	fputs("EOD\n", f);
	dp_wallband_free(&b);
	return 0;
}

/* One curve as the datablock $wS, "t psi", and its CSV rows (banded: the
 * band's columns, one run). */
static void wall_line(FILE *f, csvbuf *c, const dp_plot_wall *w, const char *label, size_t s,
		      int banded)
{
	fprintf(f, "$w%zu << EOD\n", s);
	for (size_t r = 0; r < w->n; r++) {
		fprintf(f, "%.10g %.10g\n", w->t[r], w->psi[r]);
		if (c->f == NULL)
			continue;
		csv_text(c->f, label);
		if (banded)
			fprintf(c->f, ",%.10g,1,%.10g,%.10g,%.10g\n", w->t[r], w->psi[r], w->psi[r],
				w->psi[r]);
		else
			fprintf(c->f, ",%.10g,%zu,%.10g\n", w->t[r], w->k[r], w->psi[r]);
	}
	fputs("EOD\n", f);
}

int dp_plot_psi_wall(const dp_plot_wall *w, const char *const *labels, size_t ns,
		     const dp_plot_opts *o, const char *out)
{
	char *body = NULL, t[300];
	size_t len = 0, *nrun = NULL, groups = 0;
	FILE *f = NULL;
	int logy = !(o && o->linear), banded = 0, rc;
	csvbuf c = { 0 };

	DP_REQUIRE(w != NULL && out != NULL);
	if (ns == 0)
		return dp_error_set(DP_EINVAL, "no psi curve to plot");
	nrun = calloc(ns, sizeof(*nrun));
	if (nrun == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t s = 0; s < ns; s++) {
		for (size_t r = 0; r < w[s].n; r++)
			if (!(w[s].psi[r] > 0))
				logy = 0;   /* a log axis cannot show psi = 0 */
		nrun[wall_group(labels, s)]++;
		banded |= wall_group(labels, s) != s;
	}
	rc = csv_open(&c, o, banded ? "series,time_s,runs,psi_min,psi_median,psi_max" :
			     "series,time_s,k,psi");
	if (rc != 0)
		goto out;
	f = open_memstream(&body, &len);
	if (f == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	put_title(f, "set title", o, banded ? "ψ against wall-clock time (measured: ψ of the "
		  "learner's checkpointed model)\nrepeats: their median, and a band from the "
		  "lowest to the highest" :
		  "ψ against wall-clock time (measured: ψ of the learner's checkpointed model)");
	fputs("set xlabel \"seconds since training started\"\n", f);
	psi_axes(f, logy, o && o->logx);
	for (size_t s = 0; s < ns && rc == 0; s++) {
		if (nrun[s] > 1)
			rc = wall_band(f, &c, w, labels, ns, s, nrun[s]);
		else if (nrun[s] == 1)
			wall_line(f, &c, &w[s], labels && labels[s] ? labels[s] : "", s, banded);
	}
	if (rc != 0)
		goto out;
	for (size_t s = 0; s < ns; s++) {
		const char *col = colors[groups % NCOLORS], *lab = labels && labels[s] ? labels[s] : "";

		if (nrun[s] == 0)
			continue;
		fputs(groups++ == 0 ? "plot " : ", \\\n     ", f);
		if (nrun[s] == 1) {
			fprintf(f, "$w%zu using 1:2 with linespoints lw 2 pt 7 ps 0.5 lc rgb \"%s\" "
				"title ", s, col);
			put_quoted(f, lab);
			continue;
		}
		fprintf(f, "$w%zu using 1:2:4 with filledcurves fs transparent solid 0.22 noborder "
			"lc rgb \"%s\" title ", s, col);
		snprintf(t, sizeof(t), "%s: min–max, %zu runs", lab, nrun[s]);
		put_quoted(f, t);
		fprintf(f, ", \\\n     $w%zu using 1:3 with lines lw 2 lc rgb \"%s\" title ", s, col);
		snprintf(t, sizeof(t), "%s: median", lab);
		put_quoted(f, t);
	}
	fputc('\n', f);
	free(nrun);
	return finish(f, &body, &len, &c, o, out);
out:
	if (f != NULL)
		fclose(f);
	free(body);
	csv_discard(&c);
	free(nrun);
	return rc;
}

/* Log axis when all values are positive and span a factor 10 or more. */
static int auto_log(const double *v, size_t n)
{
	double lo = INFINITY, hi = 0;

	for (size_t i = 0; i < n; i++) {
		if (isnan(v[i]))
			continue;
		if (!(v[i] > 0))
			return 0;
		lo = fmin(lo, v[i]);
		hi = fmax(hi, v[i]);
	}
	return hi > 0 && hi / lo >= 10;
}

/* The owners of the $o block as points (x column xc, y column yc, point
 * type pt): one coloured series per owner, named in the legend when
 * `named`, while there are few enough to tell apart; else one series. */
static void share_series(FILE *f, char *const *names, size_t N, int xc, int yc, int pt,
			 int named)
{
	int bars = named && xc == 3;   /* the round-trip panel: 25-75 % bars */

	if (N > MAX_LEGEND_OWNERS) {
		fprintf(f, "$o using %d:%d%s with %s pt %d ps 1.6 lc rgb \"%s\" notitle", xc, yc,
			bars ? ":4:5" : "", bars ? "xerrorbars" : "points", pt, colors[0]);
		return;
	}
	for (size_t i = 0; i < N; i++) {
		fprintf(f, "%s$o every ::%zu::%zu using %d:%d%s with %s pt %d ps 1.6 lc rgb \"%s\" ",
			i ? ", \\\n     " : "", i, i, xc, yc, bars ? ":4:5" : "",
			bars ? "xerrorbars" : "points", pt, colors[i % NCOLORS]);
		if (named) {
			fputs("title ", f);
			put_quoted(f, names[i]);
		} else
			fputs("notitle", f);
	}
}

int dp_plot_shares(const dp_plot_trace *tr, const double *rates, const dp_plot_opts *o, const char *out)
{
	size_t N, *count, *fill;
	double *med, *lo, *hi, **v, rsum = 0;
	char *body = NULL, title[300];
	size_t len = 0;
	FILE *f = NULL;
	int rc;
	csvbuf c;

	DP_REQUIRE(tr != NULL && out != NULL);
	N = tr->N;
	count = calloc(N, sizeof(size_t));
	fill = calloc(N, sizeof(size_t));
	med = calloc(N, sizeof(double));
	lo = calloc(N, sizeof(double));
	hi = calloc(N, sizeof(double));
	v = calloc(N, sizeof(double *));
	if (tr->rtt == NULL) {
		rc = dp_error_set(DP_EINVAL, "shares needs a learnerd trace.csv (with round trips), not a schedule");
		goto out;
	}
	if (!count || !fill || !med || !lo || !hi || !v) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t r = 0; r < tr->n; r++)
		count[tr->owner[r]]++;
	for (size_t i = 0; i < N; i++) {
		v[i] = malloc((count[i] ? count[i] : 1) * sizeof(double));
		if (v[i] == NULL) {
			rc = dp_error_set(DP_ENOMEM, "out of memory");
			goto out;
		}
	}
	for (size_t r = 0; r < tr->n; r++)
		v[tr->owner[r]][fill[tr->owner[r]]++] = tr->rtt[r] * 1e3;
	for (size_t i = 0; i < N; i++) {
		med[i] = dp_plot_percentile(v[i], count[i], 50);
		lo[i] = dp_plot_percentile(v[i], count[i], 25);
		hi[i] = dp_plot_percentile(v[i], count[i], 75);
		rsum += rates ? rates[i] : 0;
	}
	rc = csv_open(&c, o, "owner,iterations,share_pct,rtt_median_ms,rtt_p25_ms,rtt_p75_ms,rate,"
		      "rate_share_pct");
	if (rc != 0)
		goto out;
	f = open_memstream(&body, &len);
	if (f == NULL) {
		csv_discard(&c);
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	fputs("$o << EOD\n# name share_pct rtt_med_ms rtt_p25_ms rtt_p75_ms rate rate_share_pct\n", f);
	for (size_t i = 0; i < N; i++) {
		double share = 100.0 * (double)count[i] / (double)tr->n;
		double rate = rates ? rates[i] : NAN, rshare = rates ? 100.0 * rates[i] / rsum : NAN;

		put_data_quoted(f, tr->names[i]);
		fprintf(f, " %.10g %.10g %.10g %.10g %.10g %.10g\n", share, med[i], lo[i], hi[i], rate,
			rshare);
		if (c.f) {
			csv_text(c.f, tr->names[i]);
			fprintf(c.f, ",%zu,%.10g,%.10g,%.10g,%.10g,", count[i], share, med[i], lo[i], hi[i]);
			if (rates)
				fprintf(c.f, "%.10g,%.10g", rate, rshare);
			else
				fputc(',', c.f);
			fputc('\n', c.f);
		}
	}
	fputs("EOD\n", f);
	snprintf(title, sizeof(title), "Share of iterations per owner (%zu owners, %zu iterations)", N, tr->n);
	/* Owners are told apart by colour and named in the legend below the
	 * panels, not by text next to the points, which overlapped when owners
	 * had close values. */
	fputs("set ylabel \"share of iterations (%)\"\nset yrange [0:*]\n"
	      "set offsets graph 0.12, graph 0.12, graph 0.12, 0\nset key below horizontal\n", f);
	fprintf(f, "set arrow 1 from graph 0, first %.10g to graph 1, first %.10g nohead dt 2 lc rgb \"#808080\"\n",
		100.0 / (double)N, 100.0 / (double)N);
	if (rates) {
		fputs("set multiplot layout 1,2 ", f);
		put_title(f, "title", o, title);
		fputs("set title \"against the owner's clock rate\"\n"
		      "set xlabel \"owner clock rate (requests/s)\"\n", f);
		if (auto_log(rates, N))
			put_logscale(f, "x");
		fputs("plot ", f);
		share_series(f, tr->names, N, 6, 2, 7, 0);
		fputs(", \\\n     ", f);
		share_series(f, tr->names, N, 6, 7, 6, 0);
		fputs(", \\\n     NaN with points pt 7 ps 1.6 lc rgb \"#404040\" title \"share of iterations\", \\\n"
		      "     NaN with points pt 6 ps 1.6 lc rgb \"#404040\" title \"clock-rate share r_i / Σr\", \\\n"
		      "     NaN with lines dt 2 lc rgb \"#808080\" title \"equal share 1/N\"\n", f);
		fputs("unset logscale x\nset mxtics default\nset title \"against the owner's query round trip\"\n", f);
	} else {
		put_title(f, "set title", o, title);
	}
	fputs("set xlabel \"query round trip of the owner, median (ms); bars: 25–75 %\"\n", f);
	if (auto_log(med, N))
		put_logscale(f, "x");
	fputs("plot ", f);
	share_series(f, tr->names, N, 3, 2, 7, 1);
	fputs(", \\\n     NaN with lines dt 2 lc rgb \"#808080\" title \"equal share 1/N\"\n", f);
	if (rates)
		fputs("unset multiplot\n", f);
	rc = finish(f, &body, &len, &c, o, out);
	f = NULL;
out:
	for (size_t i = 0; v && i < N; i++)
		free(v[i]);
	free(v);
	free(count);
	free(fill);
	free(med);
	free(lo);
	free(hi);
	return rc;
}

/* One CDF panel: values (seconds) of column col per owner and overall. */
static int cdf_panel(FILE *f, csvbuf *c, const dp_plot_trace *tr, const double *col,
		     const char *tag, const char *what, const char *xlabel, int want_log)
{
	size_t n = tr->n, npos = 0, nseries = tr->N <= MAX_LEGEND_OWNERS ? tr->N + 1 : 1;
	double *v = malloc(n * sizeof(double));
	int logx;

	if (v == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t r = 0; r < n; r++)
		npos += col[r] > 0;
	logx = want_log && npos > 0;
	/* The note about zeros is the panel title's second line: inside the
	 * plot it crossed the curves. */
	fprintf(f, "set title \"%s: empirical CDF", what);
	if (npos == 0)
		fprintf(f, "\\n(all %zu values are 0 ms)", n);
	else if (logx && npos < n)
		fprintf(f, "\\n(%zu of %zu are 0 ms, off the log axis: curves start at that fraction)",
			n - npos, n);
	fputs("\"\nset xlabel ", f);
	put_quoted(f, xlabel);
	fputs("\nset ylabel \"fraction of iterations with value ≤ x\"\nset yrange [0:1.02]\n", f);
	if (logx)
		put_logscale(f, "x");
	else
		fputs("unset logscale x\nset mxtics default\n", f);
	fputs("set format x \"%g\"\n", f);
	for (size_t s = 0; s < nseries; s++) {
		size_t m = 0, zeros = 0;
		for (size_t r = 0; r < n; r++)
			if (s == 0 || tr->owner[r] == s - 1)
				v[m++] = col[r] * 1e3;
		fprintf(f, "$%s%zu << EOD\n", tag, s);
		if (m > 0) {
			qsort(v, m, sizeof(double), cmp_double);
			if (logx)
				while (zeros < m && !(v[zeros] > 0))
					zeros++;
			if (zeros < m) {
				fprintf(f, "%.10g %.10g\n", v[zeros], (double)zeros / (double)m);
				for (size_t i = zeros; i < m; i++)
					fprintf(f, "%.10g %.10g\n", v[i], (double)(i + 1) / (double)m);
			}
			for (size_t i = 0; c->f && i < m; i++) {
				fprintf(c->f, "%s,", tag[0] == 'w' ? "wait" : "rtt");
				csv_text(c->f, s == 0 ? "all" : tr->names[s - 1]);
				fprintf(c->f, ",%.10g,%.10g\n", v[i], (double)(i + 1) / (double)m);
			}
		}
		fputs("EOD\n", f);
	}
	fputs("plot ", f);
	for (size_t s = 0, first = 1; s < nseries; s++) {
		size_t m = 0, pos = 0;
		for (size_t r = 0; r < n; r++)
			if (s == 0 || tr->owner[r] == s - 1) {
				m++;
				pos += col[r] > 0;
			}
		char t[300];
		if (m == 0)
			continue;
		/* A series with no point on a log axis still gets its legend entry. */
		if (logx && pos == 0)
			snprintf(t, sizeof(t), "NaN");
		else
			snprintf(t, sizeof(t), "$%s%zu using 1:2", tag, s);
		fprintf(f, "%s%s with steps lw %s lc rgb \"%s\" title ", first ? "" : ", \\\n     ", t,
			s == 0 ? "2.5" : "1.5", s == 0 ? "#000000" : colors[(s - 1) % NCOLORS]);
		snprintf(t, sizeof(t), "%s (%zu%s)", s == 0 ? "all owners" : tr->names[s - 1], m,
			 logx && pos == 0 ? ", all 0 ms" : "");
		put_quoted(f, t);
		first = 0;
	}
	fputc('\n', f);
	free(v);
	return 0;
}

int dp_plot_cdf(const dp_plot_trace *tr, const dp_plot_opts *o, const char *out)
{
	char *body = NULL, title[300];
	size_t len = 0;
	FILE *f;
	int rc;
	csvbuf c;

	DP_REQUIRE(tr != NULL && out != NULL);
	if (tr->rtt == NULL)
		return dp_error_set(DP_EINVAL, "cdf needs a learnerd trace.csv (with waits and round trips), not a schedule");
	rc = csv_open(&c, o, "quantity,series,value_ms,fraction");
	if (rc != 0)
		return rc;
	f = open_memstream(&body, &len);
	if (f == NULL) {
		csv_discard(&c);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	snprintf(title, sizeof(title), "Request wait and query round trip (%zu owners, %zu iterations)", tr->N, tr->n);
	fputs("set multiplot layout 1,2 ", f);
	put_title(f, "title", o, title);
	/* Below each panel: at the bottom right it covered the steep part of
	 * the curves of slow owners. */
	fputs("set key below horizontal\n", f);
	rc = cdf_panel(f, &c, tr, tr->wait, "w", "Request wait", "request wait in the learner's queue (ms)",
			   !(o && o->linear));
	if (rc == 0)
		rc = cdf_panel(f, &c, tr, tr->rtt, "r", "Query round trip", "query round trip, learner to owner and back (ms)",
				   !(o && o->linear));
	fputs("unset multiplot\n", f);
	if (rc != 0) {
		fclose(f);
		free(body);
		csv_discard(&c);
		return rc;
	}
	return finish(f, &body, &len, &c, o, out);
}
