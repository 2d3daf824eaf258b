/* SPDX-License-Identifier: Apache-2.0 */
#include "common/net/metrics.h"
#include "common/core/error.h"
#include "common/core/mem.h"
#include "common/core/num.h"

#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <uv.h>

const double dp_metrics_default_buckets[DP_METRICS_DEFAULT_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

struct dp_metric {
	struct dp_metric_family *fam;
	char **label_values;   /* fam->n_labels copies */
	double value;          /* counter, gauge */
	uint64_t *counts;      /* histogram: per bucket, not cumulative;
				* [n_bounds] is the +Inf overflow */
	double sum;
	uint64_t count;
};

struct dp_metric_family {
	enum dp_metric_type type;
	char *name;
	char *help;
	size_t n_labels;
	char **label_names;
	double *bounds;
	size_t n_bounds;
	struct dp_metric **series;
	size_t n_series, cap_series;
};

/* The process metrics of dp_metrics_process, read from /proc/self at each
 * render. */
enum { PROC_CPU, PROC_RSS, PROC_FDS, PROC_START, PROC_N };

struct dp_metrics {
	struct dp_metric_family **fams;
	size_t n, cap;
	struct dp_metric *proc[PROC_N];   /* NULL until dp_metrics_process */
};

int dp_metrics_new(struct dp_metrics **out)
{
	struct dp_metrics *reg;

	DP_REQUIRE(out != NULL);
	reg = calloc(1, sizeof(*reg));
	if (reg == NULL)
		return dp_error_set(DP_ENOMEM, "metrics: out of memory");
	*out = reg;
	return 0;
}

static void free_strings(char **v, size_t n)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void series_free(struct dp_metric *m)
{
	if (m == NULL)
		return;
	free_strings(m->label_values, m->fam->n_labels);
	free(m->counts);
	free(m);
}

static void family_free(struct dp_metric_family *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->n_series; i++)
		series_free(f->series[i]);
	free(f->series);
	free_strings(f->label_names, f->n_labels);
	free(f->bounds);
	free(f->name);
	free(f->help);
	free(f);
}

void dp_metrics_destroy(struct dp_metrics *reg)
{
	if (reg == NULL)
		return;
	for (size_t i = 0; i < reg->n; i++)
		family_free(reg->fams[i]);
	free(reg->fams);
	free(reg);
}

static bool valid_name(const char *s, bool colon)
{
	if (s == NULL || *s == '\0')
		return false;
	for (const char *c = s; *c; c++) {
		bool alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
			     (colon && *c == ':');

		if (!alpha && !(c > s && *c >= '0' && *c <= '9'))
			return false;
	}
	return true;
}

/* Prometheus requires label values to be UTF-8; a scraper rejects the
 * whole page otherwise, so refuse bad bytes when the series is made. */
static bool valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		uint32_t cp;
		int n;

		if (*p < 0x80) {
			p++;
			continue;
		} else if ((*p & 0xE0) == 0xC0) {
			n = 1;
			cp = *p & 0x1F;
		} else if ((*p & 0xF0) == 0xE0) {
			n = 2;
			cp = *p & 0x0F;
		} else if ((*p & 0xF8) == 0xF0) {
			n = 3;
			cp = *p & 0x07;
		} else {
			return false;
		}
		for (int i = 1; i <= n; i++) {
			if ((p[i] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3F);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		p += n + 1;
	}
	return true;
}

static int series_new(struct dp_metric_family *f, const char *const values[],
			  struct dp_metric **out)
{
	struct dp_metric *m;

	if (dp_mem_reserve(&f->series, &f->cap_series, f->n_series + 1, sizeof(*f->series), 4) != 0)
		return dp_error_set(DP_ENOMEM, "metrics: out of memory");
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return dp_error_set(DP_ENOMEM, "metrics: out of memory");
	m->fam = f;
	if (f->n_labels) {
		m->label_values = calloc(f->n_labels, sizeof(char *));
		if (m->label_values == NULL)
			goto nomem;
		for (size_t i = 0; i < f->n_labels; i++) {
			m->label_values[i] = strdup(values[i]);
			if (m->label_values[i] == NULL)
				goto nomem;
		}
	}
	if (f->type == DP_METRIC_HISTOGRAM) {
		m->counts = calloc(f->n_bounds + 1, sizeof(*m->counts));
		if (m->counts == NULL)
			goto nomem;
	}
	f->series[f->n_series++] = m;
	*out = m;
	return 0;
nomem:
	series_free(m);
	return dp_error_set(DP_ENOMEM, "metrics: out of memory");
}

int dp_metrics_family(struct dp_metrics *reg, enum dp_metric_type type, const char *name,
		      const char *help, const char *const label_names[], const double *buckets,
		      size_t n_buckets, struct dp_metric_family **out)
{
	struct dp_metric_family *f;
	struct dp_metric *unused;
	size_t nl = 0;
	int rc;

	DP_REQUIRE(reg != NULL && out != NULL);
	if ((unsigned)type > DP_METRIC_HISTOGRAM)
		return dp_error_set(DP_EINVAL, "metric '%s': bad type", name ? name : "");
	if (!valid_name(name, true))
		return dp_error_set(DP_EINVAL, "metric name '%s': expected [a-zA-Z_:][a-zA-Z0-9_:]*",
				    name ? name : "");
	for (size_t i = 0; i < reg->n; i++)
		if (strcmp(reg->fams[i]->name, name) == 0)
			return dp_error_set(DP_EINVAL, "metric '%s': registered twice", name);
	for (; label_names && label_names[nl]; nl++) {
		const char *l = label_names[nl];

		if (!valid_name(l, false) || strncmp(l, "__", 2) == 0 ||
		    (type == DP_METRIC_HISTOGRAM && strcmp(l, "le") == 0))
			return dp_error_set(DP_EINVAL, "metric '%s': bad label name '%s'", name, l);
		for (size_t j = 0; j < nl; j++)
			if (strcmp(label_names[j], l) == 0)
				return dp_error_set(DP_EINVAL, "metric '%s': label '%s' twice",
						    name, l);
	}
	if (type == DP_METRIC_HISTOGRAM) {
		/* A trailing +Inf is the implicit last bucket. */
		if (buckets && n_buckets > 0 && isinf(buckets[n_buckets - 1]) &&
		    buckets[n_buckets - 1] > 0)
			n_buckets--;
		if (buckets == NULL || n_buckets == 0)
			return dp_error_set(DP_EINVAL, "histogram '%s': no buckets", name);
		for (size_t i = 0; i < n_buckets; i++)
			if (!isfinite(buckets[i]) || (i > 0 && !(buckets[i] > buckets[i - 1])))
				return dp_error_set(DP_EINVAL, "histogram '%s': bucket bounds must "
						    "be finite and strictly increasing", name);
	}
	if (dp_mem_reserve(&reg->fams, &reg->cap, reg->n + 1, sizeof(*reg->fams), 8) != 0)
		return dp_error_set(DP_ENOMEM, "metrics: out of memory");
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return dp_error_set(DP_ENOMEM, "metrics: out of memory");
	f->type = type;
	f->name = strdup(name);
	f->help = strdup(help ? help : "");
	if (f->name == NULL || f->help == NULL)
		goto nomem;
	if (nl) {
		f->label_names = calloc(nl, sizeof(char *));
		if (f->label_names == NULL)
			goto nomem;
		f->n_labels = nl;
		for (size_t i = 0; i < nl; i++) {
			f->label_names[i] = strdup(label_names[i]);
			if (f->label_names[i] == NULL)
				goto nomem;
		}
	}
	if (type == DP_METRIC_HISTOGRAM) {
		f->bounds = malloc(n_buckets * sizeof(double));
		if (f->bounds == NULL)
			goto nomem;
		memcpy(f->bounds, buckets, n_buckets * sizeof(double));
		f->n_bounds = n_buckets;
	}
	if (nl == 0) {
		rc = series_new(f, NULL, &unused);
		if (rc != 0) {
			family_free(f);
			return rc;
		}
	}
	reg->fams[reg->n++] = f;
	*out = f;
	return 0;
nomem:
	family_free(f);
	return dp_error_set(DP_ENOMEM, "metrics: out of memory");
}

/* Label values given for every label name of `fam`, each UTF-8. */
static int check_values(const struct dp_metric_family *fam, const char *const label_values[])
{
	if (label_values == NULL)
		return dp_error_set(DP_EINVAL, "metric '%s': label values missing", fam->name);
	for (size_t i = 0; i < fam->n_labels; i++) {
		if (label_values[i] == NULL)
			return dp_error_set(DP_EINVAL, "metric '%s': label '%s' has no value",
					    fam->name, fam->label_names[i]);
		if (!valid_utf8(label_values[i]))
			return dp_error_set(DP_EINVAL, "metric '%s': label '%s': value is not UTF-8",
					    fam->name, fam->label_names[i]);
	}
	return 0;
}

/* The series of `fam` with exactly these label values, or NULL. */
static struct dp_metric *find_series(const struct dp_metric_family *fam,
				     const char *const label_values[])
{
	for (size_t s = 0; s < fam->n_series; s++) {
		struct dp_metric *m = fam->series[s];
		size_t i = 0;

		while (i < fam->n_labels && strcmp(m->label_values[i], label_values[i]) == 0)
			i++;
		if (i == fam->n_labels)
			return m;
	}
	return NULL;
}

int dp_metrics_series(struct dp_metric_family *fam, const char *const label_values[],
		      struct dp_metric **out)
{
	struct dp_metric *m;
	int rc;

	DP_REQUIRE(fam != NULL && out != NULL);
	if (fam->n_labels == 0) {
		*out = fam->series[0];
		return 0;
	}
	rc = check_values(fam, label_values);
	if (rc != 0)
		return rc;
	m = find_series(fam, label_values);
	if (m != NULL) {
		*out = m;
		return 0;
	}
	return series_new(fam, label_values, out);
}

int dp_metrics_series_add(struct dp_metric_family *fam, const char *const label_values[],
			  struct dp_metric **out)
{
	int rc;

	DP_REQUIRE(fam != NULL && out != NULL && fam->n_labels > 0);
	rc = check_values(fam, label_values);
	return rc != 0 ? rc : series_new(fam, label_values, out);
}

int dp_metrics_relabel(struct dp_metric *m, const char *const label_values[])
{
	struct dp_metric_family *f;
	struct dp_metric *other = NULL;
	char **v;
	int rc;

	DP_REQUIRE(m != NULL);
	f = m->fam;
	if (f->n_labels == 0)
		return dp_error_set(DP_EINVAL, "metric '%s': no labels to change", f->name);
	rc = check_values(f, label_values);
	if (rc != 0)
		return rc;
	other = find_series(f, label_values);
	if (other == m)
		return 0;
	if (other != NULL)
		return dp_error_set(DP_EINVAL, "metric '%s': a series with these labels exists",
				    f->name);
	v = calloc(f->n_labels, sizeof(char *));
	if (v == NULL)
		return dp_error_set(DP_ENOMEM, "metrics: out of memory");
	for (size_t i = 0; i < f->n_labels; i++) {
		v[i] = strdup(label_values[i]);
		if (v[i] == NULL) {
			free_strings(v, f->n_labels);
			return dp_error_set(DP_ENOMEM, "metrics: out of memory");
		}
	}
	free_strings(m->label_values, f->n_labels);
	m->label_values = v;
	return 0;
}

static int unlabelled(struct dp_metrics *reg, enum dp_metric_type type, const char *name,
			  const char *help, const double *buckets, size_t n_buckets,
			  struct dp_metric **out)
{
	struct dp_metric_family *f;
	int rc;

	DP_REQUIRE(out != NULL);
	rc = dp_metrics_family(reg, type, name, help, NULL, buckets, n_buckets, &f);
	if (rc != 0)
		return rc;
	*out = f->series[0];
	return 0;
}

int dp_metrics_counter(struct dp_metrics *reg, const char *name, const char *help,
		       struct dp_metric **out)
{
	return unlabelled(reg, DP_METRIC_COUNTER, name, help, NULL, 0, out);
}

int dp_metrics_gauge(struct dp_metrics *reg, const char *name, const char *help,
		     struct dp_metric **out)
{
	return unlabelled(reg, DP_METRIC_GAUGE, name, help, NULL, 0, out);
}

int dp_metrics_histogram(struct dp_metrics *reg, const char *name, const char *help,
			 const double *buckets, size_t n_buckets, struct dp_metric **out)
{
	return unlabelled(reg, DP_METRIC_HISTOGRAM, name, help, buckets, n_buckets, out);
}

int dp_metrics_define(struct dp_metrics *reg, const struct dp_metrics_def *defs, size_t n)
{
	DP_REQUIRE(reg != NULL && (defs != NULL || n == 0));
	for (size_t i = 0; i < n; i++) {
		const struct dp_metrics_def *d = &defs[i];
		struct dp_metric_family *f;
		int rc;

		DP_REQUIRE(d->family != NULL ||
			   (d->series != NULL && (d->labels == NULL || d->labels[0] == NULL)));
		rc = dp_metrics_family(reg, d->type, d->name, d->help, d->labels, d->buckets,
				       d->n_buckets, &f);
		if (rc != 0)
			return rc;
		if (d->family != NULL)
			*d->family = f;
		else
			*d->series = f->series[0];
	}
	return 0;
}

/* ---- updates ------------------------------------------------------------- */

int dp_metrics_add(struct dp_metric *m, double v)
{
	DP_REQUIRE(m != NULL);
	if (m->fam->type == DP_METRIC_HISTOGRAM || !isfinite(v) ||
	    (m->fam->type == DP_METRIC_COUNTER && v < 0))
		return dp_error_set(DP_EINVAL, "metric '%s': cannot add %g", m->fam->name, v);
	m->value += v;
	return 0;
}

int dp_metrics_inc(struct dp_metric *m)
{
	return dp_metrics_add(m, 1);
}

int dp_metrics_set(struct dp_metric *m, double v)
{
	DP_REQUIRE(m != NULL);
	if (m->fam->type != DP_METRIC_GAUGE)
		return dp_error_set(DP_EINVAL, "metric '%s': only a gauge can be set", m->fam->name);
	m->value = v;
	return 0;
}

int dp_metrics_observe(struct dp_metric *m, double v)
{
	size_t b = 0;

	DP_REQUIRE(m != NULL);
	if (m->fam->type != DP_METRIC_HISTOGRAM || isnan(v))
		return dp_error_set(DP_EINVAL, "metric '%s': cannot observe %g", m->fam->name, v);
	while (b < m->fam->n_bounds && v > m->fam->bounds[b])
		b++;
	m->counts[b]++;
	m->count++;
	m->sum += v;
	return 0;
}

double dp_metrics_value(const struct dp_metric *m)
{
	DP_REQUIRE(m != NULL);
	return m->fam->type == DP_METRIC_HISTOGRAM ? (double)m->count : m->value;
}

/* ---- exposition ---------------------------------------------------------- */

/* Shortest text that reads back as v (Prometheus parses it with Go's
 * ParseFloat, which takes any of these forms). */
static void format_value(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "NaN");
	else if (isinf(v))
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
	else
		dp_num_format(buf, len, v);
}

/* HELP text escapes backslash and newline; label values also the
 * double quote (format 0.0.4). */
static void write_escaped(FILE *f, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (quote && *s == '"')
			fputs("\\\"", f);
		else
			fputc(*s, f);
	}
}

/* name{l1="v1",...,extra} with extra already formatted (the le label). */
static void write_series_name(FILE *f, const struct dp_metric *m, const char *suffix,
			    const char *le)
{
	const struct dp_metric_family *fam = m->fam;

	fputs(fam->name, f);
	fputs(suffix, f);
	if (fam->n_labels == 0 && le == NULL)
		return;
	fputc('{', f);
	for (size_t i = 0; i < fam->n_labels; i++) {
		fprintf(f, "%s%s=\"", i ? "," : "", fam->label_names[i]);
		write_escaped(f, m->label_values[i], true);
		fputc('"', f);
	}
	if (le)
		fprintf(f, "%sle=\"%s\"", fam->n_labels ? "," : "", le);
	fputc('}', f);
}

static void render_series(FILE *f, const struct dp_metric *m)
{
	const struct dp_metric_family *fam = m->fam;
	char num[40], le[40];
	uint64_t cum = 0;

	if (fam->type != DP_METRIC_HISTOGRAM) {
		format_value(num, sizeof(num), m->value);
		write_series_name(f, m, "", NULL);
		fprintf(f, " %s\n", num);
		return;
	}
	for (size_t b = 0; b <= fam->n_bounds; b++) {
		cum += m->counts[b];
		if (b < fam->n_bounds)
			format_value(le, sizeof(le), fam->bounds[b]);
		else
			snprintf(le, sizeof(le), "+Inf");
		write_series_name(f, m, "_bucket", le);
		fprintf(f, " %llu\n", (unsigned long long)cum);
	}
	format_value(num, sizeof(num), m->sum);
	write_series_name(f, m, "_sum", NULL);
	fprintf(f, " %s\n", num);
	write_series_name(f, m, "_count", NULL);
	fprintf(f, " %llu\n", (unsigned long long)m->count);
}

/* ---- build and process metrics -------------------------------------------- */

int dp_metrics_process(struct dp_metrics *reg, const char *program)
{
	static const char *const labels[] = { "program", "version", "openssl", "libuv", NULL };
	const char *values[] = { program, DP_VERSION, OpenSSL_version(OPENSSL_VERSION),
				 uv_version_string() };
	const struct dp_metrics_def defs[] = {
		{ DP_METRIC_COUNTER, "process_cpu_seconds_total",
		  "Total user and system CPU time spent in seconds.", .series = &reg->proc[PROC_CPU] },
		{ DP_METRIC_GAUGE, "process_resident_memory_bytes", "Resident memory size in bytes.",
		  .series = &reg->proc[PROC_RSS] },
		{ DP_METRIC_GAUGE, "process_open_fds", "Number of open file descriptors.",
		  .series = &reg->proc[PROC_FDS] },
		{ DP_METRIC_GAUGE, "process_start_time_seconds",
		  "Start time of the process since unix epoch in seconds.",
		  .series = &reg->proc[PROC_START] },
	};
	struct dp_metric_family *fam;
	struct dp_metric *info;
	int rc;

	DP_REQUIRE(reg != NULL && program != NULL && reg->proc[PROC_CPU] == NULL);
	rc = dp_metrics_family(reg, DP_METRIC_GAUGE, "dpasync_build_info",
			       "Always 1; the labels name the program, its version and the "
			       "OpenSSL and libuv it runs with.", labels, NULL, 0, &fam);
	if (rc == 0)
		rc = dp_metrics_series(fam, values, &info);
	if (rc == 0)
		rc = dp_metrics_set(info, 1);
	if (rc == 0)
		rc = dp_metrics_define(reg, defs, sizeof(defs) / sizeof(defs[0]));
	return rc;
}

/* Fields 14 (utime), 15 (stime), 22 (starttime, ticks after boot) and 24
 * (rss, pages) of /proc/self/stat (proc(5)); field 2 may hold spaces and
 * parentheses, so parsing starts after its last ')'.  false when unreadable. */
static bool read_stat(double *cpu, double *rss, double *start)
{
	char buf[2048], *p;
	unsigned long long v[24] = { 0 };
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	double btime = NAN;
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;

	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (p == NULL || tck <= 0 || page <= 0)
		return false;
	p++;
	/* After ')': field 3 (state) then numbers; v[i] is field i + 4. */
	while (*p == ' ')
		p++;
	if (*p == '\0')
		return false;
	p++;
	for (int i = 0; i < 21; i++) {
		char *end;

		v[i] = strtoull(p, &end, 10);
		if (end == p)
			return false;
		p = end;
	}
	f = fopen("/proc/stat", "r");
	if (f != NULL) {
		char line[256];

		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, "btime ", 6) == 0)
				btime = strtod(line + 6, NULL);
		fclose(f);
	}
	*cpu = (double)(v[10] + v[11]) / (double)tck;
	*start = btime + (double)v[18] / (double)tck;
	*rss = (double)v[20] * (double)page;
	return true;
}

/* Entries of /proc/self/fd, or -1 when it cannot be read. */
static double count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	double n = 0;

	if (d == NULL)
		return -1;
	for (e = readdir(d); e != NULL; e = readdir(d))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;   /* the directory stream's own descriptor */
}

/* The values are the process's, not the registry's: writing them at render
 * time through the stored series is what keeps one source for them. */
static void proc_refresh(const struct dp_metrics *reg)
{
	double cpu, rss, start, fds;

	if (reg->proc[PROC_CPU] == NULL)
		return;
	if (read_stat(&cpu, &rss, &start)) {
		reg->proc[PROC_CPU]->value = cpu;
		reg->proc[PROC_RSS]->value = rss;
		reg->proc[PROC_START]->value = start;
	}
	fds = count_fds();
	if (fds >= 0)
		reg->proc[PROC_FDS]->value = fds;
}

int dp_metrics_render(const struct dp_metrics *reg, char **out, size_t *len)
{
	static const char *const type_names[] = { "counter", "gauge", "histogram" };
	char *buf = NULL;
	size_t n = 0;
	FILE *f;

	if (reg == NULL || out == NULL || len == NULL)
		return dp_error_set(DP_EINVAL, "metrics: render needs a registry and outputs");
	proc_refresh(reg);
	f = open_memstream(&buf, &n);
	if (f == NULL)
		return dp_error_set(DP_ENOMEM, "metrics: out of memory");
	for (size_t i = 0; i < reg->n; i++) {
		const struct dp_metric_family *fam = reg->fams[i];

		if (fam->n_series == 0)
			continue;
		if (*fam->help) {
			fprintf(f, "# HELP %s ", fam->name);
			write_escaped(f, fam->help, false);
			fputc('\n', f);
		}
		fprintf(f, "# TYPE %s %s\n", fam->name, type_names[fam->type]);
		for (size_t s = 0; s < fam->n_series; s++)
			render_series(f, fam->series[s]);
	}
	if (ferror(f)) {
		fclose(f);
		free(buf);
		return dp_error_set(DP_ENOMEM, "metrics: out of memory");
	}
	if (fclose(f) != 0) {
		free(buf);
		return dp_error_set(DP_ENOMEM, "metrics: out of memory");
	}
	*out = buf;
	*len = n;
	return 0;
}
