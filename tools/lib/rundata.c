/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a run's outputs for `dpasync plot` and `dpasync report`
 * (rundata.h). */
#include "tools/lib/rundata.h"

/* Room for "target NAME, N features" in a figure's context line. */
#define DP_RUNDATA_CONTEXT_NAMES 160

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgen.h>

#include "common/core/error.h"
#include "common/core/json.h"
#include "common/core/mem.h"
#include "common/core/num.h"
#include "common/core/trace.h"

/* Largest summary.json, model.json or checkpoint.json read (summary.json
 * holds p + 2 numbers per model coordinate and one per owner and
 * repeat). */
#define SUMMARY_MAX ((size_t)1 << 28)

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

/* learnerd's trace.csv (common/core/trace.h); before the job column it
 * had seven, before the staleness column six. */
static const char trace_header[] = DP_TRACE_HEADER;
static const char trace_header7[] = DP_TRACE_HEADER_7;
static const char trace_header6[] = DP_TRACE_HEADER_6;
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
	char *f[DP_TRACE_NCOLUMNS], *p = buf;
	size_t nf = 0, idx, stale = 0;
	double v[4];
	static const char *const what[4] = { "time_unix", "wait_s", "rtt_s", "eps_spent" };
	static const int col[4] = { DP_TRACE_TIME, DP_TRACE_WAIT, DP_TRACE_RTT, DP_TRACE_EPS };

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
				    line, nfields, trace_headers[nfields - DP_TRACE_NCOLUMNS_6], nf);
	if (nfields == DP_TRACE_NCOLUMNS) {
		int rc = trace_job(c, f[DP_TRACE_JOB], path, line);

		if (rc != 0)
			return rc;
	}
	if (nfields >= DP_TRACE_NCOLUMNS_7 &&
	    dp_num_parse_size("staleness", f[DP_TRACE_STALENESS], &stale) != 0)
		return dp_error_set(DP_EFORMAT, "%s:%zu: staleness: expected an integer >= 0, got '%s'",
				    path, line, f[DP_TRACE_STALENESS]);
	if (dp_num_parse_size("k", f[DP_TRACE_K], &c->k[c->n]) != 0 || c->k[c->n] == 0)
		return dp_error_set(DP_EFORMAT, "%s:%zu: k: expected a positive integer, got '%s'", path, line,
				    f[DP_TRACE_K]);
	if (c->n > 0 && c->k[c->n] <= c->k[c->n - 1])
		return dp_error_set(DP_EFORMAT, "%s:%zu: k = %zu does not increase (previous %zu)", path, line,
				    c->k[c->n], c->k[c->n - 1]);
	if (f[DP_TRACE_OWNER][0] == '\0')
		return dp_error_set(DP_EFORMAT, "%s:%zu: empty owner", path, line);
	for (int i = 0; i < 4; i++) {
		if (dp_num_parse_double(what[i], f[col[i]], 0, &v[i]) != 0 || (i > 0 && v[i] < 0))
			return dp_error_set(DP_EFORMAT, "%s:%zu: %s: expected a finite number%s, got '%s'", path,
					    line, what[i], i > 0 ? " >= 0" : "", f[col[i]]);
	}
	idx = cols_name(c, f[DP_TRACE_OWNER], *hint);
	if (idx == SIZE_MAX)
		return dp_error_set(DP_ENOMEM, "out of memory");
	*hint = idx;
	c->owner[c->n] = idx;
	c->t[c->n] = v[0];
	c->wait[c->n] = v[1];
	c->rtt[c->n] = v[2];
	c->eps[c->n] = v[3];
	if (nfields >= DP_TRACE_NCOLUMNS_7)
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

int dp_rundata_trace_read(const char *path, const char *const *extra, size_t nextra,
			  dp_rundata_trace *tr)
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
		rc = is_trace ? trace_row(&c, buf, path, line, &hint,
					      DP_TRACE_NCOLUMNS_6 - 1 + (size_t)is_trace)
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

void dp_rundata_trace_free(dp_rundata_trace *tr)
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

double dp_rundata_trace_start(const dp_rundata_trace *tr)
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

void dp_rundata_run_context(const char *trace_path, const char *job, const char *dataset,
			    char *buf, size_t size)
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
	} else {
		char size_s[96] = "", names[DP_RUNDATA_CONTEXT_NAMES] = "";
		struct json_object *n = NULL, *pp = NULL;

		/* The size the learner knows, and the names the owners agreed on
		 * when model.json records them. */
		if (ck && json_object_object_get_ex(ck, "job", &v) &&
		    json_object_is_type(v, json_type_object) &&
		    json_object_object_get_ex(v, "n_total", &n) &&
		    json_object_object_get_ex(v, "p", &pp))
			snprintf(size_s, sizeof(size_s), "%" PRId64 " rows, %" PRId64 " coefficients",
				 json_object_get_int64(n), json_object_get_int64(pp));
		if (model && json_object_object_get_ex(model, "features", &v) &&
		    json_object_is_type(v, json_type_array)) {
			struct json_object *t = NULL;
			const char *target = json_object_object_get_ex(model, "target", &t) &&
				json_object_is_type(t, json_type_string) ?
				json_object_get_string(t) : NULL;

			if (target)
				snprintf(names, sizeof(names), "target %s, %zu features", target,
					 json_object_array_length(v));
			else
				snprintf(names, sizeof(names), "%zu features",
					 json_object_array_length(v));
		}
		if (size_s[0] || names[0])
			snprintf(ds, sizeof(ds), "dataset: %s%s%s", size_s,
				 size_s[0] && names[0] ? "; " : "", names);
	}
	snprintf(buf, size, "%s%s%s", jb, jb[0] && ds[0] ? "; " : "", ds);
	json_object_put(model);
	json_object_put(ck);
}

int dp_rundata_schedule_check(const char *path, const dp_rundata_trace *tr)
{
	dp_rundata_trace s;
	int rc;

	DP_REQUIRE(path != NULL && tr != NULL);
	rc = dp_rundata_trace_read(path, NULL, 0, &s);
	if (rc != 0)
		return rc;
	if (s.t != NULL) {
		dp_rundata_trace_free(&s);
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
	dp_rundata_trace_free(&s);
	return rc;
}

static const char psi_header[] = "k,psi_p25,psi_median,psi_p75,psi_mean";

int dp_rundata_rates(const char *arg, const dp_rundata_trace *tr, double **out)
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
	dp_rundata_psi p;
	size_t cap;
};

static int psi_row(void *ctx, char **fld, const char *path, size_t line)
{
	struct psi_rows *r = ctx;
	dp_rundata_psi *p = &r->p;
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

int dp_rundata_psi_read(const char *path, dp_rundata_psi *ps)
{
	struct psi_rows r = { 0 };
	int rc;

	DP_REQUIRE(path != NULL && ps != NULL);
	rc = read_table(path, psi_header, "a sim psi.csv", 5, psi_row, &r);
	if (rc != 0) {
		dp_rundata_psi_free(&r.p);
		return rc;
	}
	*ps = r.p;
	return 0;
}

void dp_rundata_psi_free(dp_rundata_psi *ps)
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

static const char wall_header[] = "time_s,k,psi";

void dp_rundata_wall_free(dp_rundata_wall *w)
{
	DP_REQUIRE(w != NULL);
	free(w->t);
	free(w->k);
	free(w->psi);
	memset(w, 0, sizeof(*w));
}

struct wall_rows {
	dp_rundata_wall p;
	size_t cap;
};

static int wall_row(void *ctx, char **fld, const char *path, size_t line)
{
	struct wall_rows *r = ctx;
	dp_rundata_wall *p = &r->p;
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

int dp_rundata_wall_read(const char *path, dp_rundata_wall *w)
{
	struct wall_rows r = { 0 };
	int rc;

	DP_REQUIRE(path != NULL && w != NULL);
	rc = read_table(path, wall_header, "a measured psi curve", 3, wall_row, &r);
	if (rc != 0) {
		dp_rundata_wall_free(&r.p);
		return rc;
	}
	*w = r.p;
	return 0;
}

void dp_rundata_sim_note(const char *psi_path, char *note, size_t size, size_t *runs)
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

void dp_rundata_sort(double *v, size_t n)
{
	DP_REQUIRE(v != NULL || n == 0);
	if (n > 0)
		qsort(v, n, sizeof(double), cmp_double);
}

double dp_rundata_percentile(double *v, size_t n, double pct)
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
