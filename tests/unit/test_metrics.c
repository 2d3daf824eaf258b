/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus registry and text exposition format 0.0.4. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "common/core/error.h"
#include "common/net/metrics.h"

static char *render(struct dp_metrics *reg)
{
	char *text = NULL;
	size_t len = 0;

	assert_int_equal(dp_metrics_render(reg, &text, &len), 0);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	return text;
}

/* assert_string_equal, but a mismatch shows where (cmocka cuts long
 * strings short). */
static void text_equal(const char *got, const char *want)
{
	size_t i = 0;

	while (got[i] && got[i] == want[i])
		i++;
	if (got[i] != want[i])
		print_error("texts differ at byte %zu:\n got: '%.80s'\nwant: '%.80s'\n", i,
			    got + i, want + i);
	assert_true(got[i] == want[i]);
}

/* The expected text below was written by hand from the format
 * description (prometheus.io "Exposition formats", text format 0.0.4):
 * "# HELP name text" with \\ and \n escaped, "# TYPE name type", one
 * "name{label="value"} number" line per series, label values with \\, \"
 * and \n escaped, histogram buckets cumulative with le="+Inf" equal to
 * _count.  Observations are dyadic so the sums are exact. */
static void test_exposition(void **state)
{
	struct dp_metrics *reg;
	struct dp_metric *iters, *owners, *rtt, *m, *m2;
	struct dp_metric_family *per_owner, *by_owner, *unused, *two;
	char *text;

	assert_int_equal(dp_metrics_new(&reg), 0);
	assert_int_equal(dp_metrics_counter(reg, "dpasync_learner_iterations_total",
					    "Iterations completed.", &iters), 0);
	assert_int_equal(dp_metrics_gauge(reg, "dpasync_learner_owners_connected",
					  "Owners connected now.", &owners), 0);
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_COUNTER,
					   "dpasync_owner_iterations_total",
					   "Answers used, per owner.",
					   (const char *[]){ "owner", NULL }, NULL, 0, &per_owner), 0);
	assert_int_equal(dp_metrics_histogram(reg, "dpasync_learner_round_trip_seconds",
					      "Round trip\\time\nper query.",
					      (const double[]){ 0.125, 0.5, 1 }, 3, &rtt), 0);
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_HISTOGRAM,
					   "dpasync_rtt_by_owner_seconds", NULL,
					   (const char *[]){ "owner", NULL },
					   (const double[]){ 1, 2, INFINITY }, 3, &by_owner), 0);
	/* A labelled family without series is not rendered at all. */
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_GAUGE, "dpasync_unused", "Never set.",
					   (const char *[]){ "owner", NULL }, NULL, 0, &unused), 0);
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_GAUGE, "dpasync_two_labels", "",
					   (const char *[]){ "owner", "mode", NULL }, NULL, 0, &two),
			 0);

	for (int i = 0; i < 3; i++)
		assert_int_equal(dp_metrics_inc(iters), 0);
	assert_int_equal(dp_metrics_add(iters, 2), 0);
	assert_int_equal(dp_metrics_set(owners, 2), 0);
	assert_int_equal(dp_metrics_add(owners, -0.5), 0);

	assert_int_equal(dp_metrics_series(per_owner, (const char *[]){ "owner-1" }, &m), 0);
	assert_int_equal(dp_metrics_inc(m), 0);
	assert_int_equal(dp_metrics_series(per_owner, (const char *[]){ "owner-2" }, &m2), 0);
	assert_int_equal(dp_metrics_add(m2, 0), 0);
	assert_int_equal(dp_metrics_series(per_owner, (const char *[]){ "owner-1" }, &m2), 0);
	assert_ptr_equal(m, m2);  /* same labels, same series */
	assert_int_equal(dp_metrics_inc(m2), 0);
	assert_int_equal(dp_metrics_series(per_owner, (const char *[]){ "we\"ird\\name\n" }, &m),
			 0);
	assert_int_equal(dp_metrics_inc(m), 0);

	assert_int_equal(dp_metrics_observe(rtt, 0.0625), 0);
	assert_int_equal(dp_metrics_observe(rtt, 0.125), 0);  /* le is inclusive */
	assert_int_equal(dp_metrics_observe(rtt, 0.25), 0);
	assert_int_equal(dp_metrics_observe(rtt, 0.75), 0);
	assert_int_equal(dp_metrics_observe(rtt, 2), 0);
	assert_true(dp_metrics_value(rtt) == 5);

	assert_int_equal(dp_metrics_series(by_owner, (const char *[]){ "a" }, &m), 0);
	assert_int_equal(dp_metrics_observe(m, 1.5), 0);

	assert_int_equal(dp_metrics_series(two, (const char *[]){ "o1", "async" }, &m), 0);
	assert_int_equal(dp_metrics_set(m, 0.30000000000000004), 0);
	assert_int_equal(dp_metrics_series(two, (const char *[]){ "o1", "sync1" }, &m), 0);
	assert_int_equal(dp_metrics_set(m, 1e6), 0);
	assert_int_equal(dp_metrics_series(two, (const char *[]){ "o2", "async" }, &m), 0);
	assert_int_equal(dp_metrics_set(m, INFINITY), 0);
	assert_int_equal(dp_metrics_series(two, (const char *[]){ "o3", "async" }, &m), 0);
	assert_int_equal(dp_metrics_set(m, -INFINITY), 0);
	assert_int_equal(dp_metrics_series(two, (const char *[]){ "o4", "async" }, &m), 0);
	assert_int_equal(dp_metrics_set(m, NAN), 0);
	assert_int_equal(dp_metrics_series(two, (const char *[]){ "o5", "async" }, &m), 0);
	assert_int_equal(dp_metrics_set(m, 1e-7), 0);
	assert_int_equal(dp_metrics_series(two, (const char *[]){ "\xc3\xa9t\xc3\xa9 \xe2\x82\xac"
								     "\xf0\x9f\x98\x80", "peer" },
					   &m), 0);
	assert_int_equal(dp_metrics_set(m, -3), 0);

	text = render(reg);
	text_equal(text,
		"# HELP dpasync_learner_iterations_total Iterations completed.\n"
		"# TYPE dpasync_learner_iterations_total counter\n"
		"dpasync_learner_iterations_total 5\n"
		"# HELP dpasync_learner_owners_connected Owners connected now.\n"
		"# TYPE dpasync_learner_owners_connected gauge\n"
		"dpasync_learner_owners_connected 1.5\n"
		"# HELP dpasync_owner_iterations_total Answers used, per owner.\n"
		"# TYPE dpasync_owner_iterations_total counter\n"
		"dpasync_owner_iterations_total{owner=\"owner-1\"} 2\n"
		"dpasync_owner_iterations_total{owner=\"owner-2\"} 0\n"
		"dpasync_owner_iterations_total{owner=\"we\\\"ird\\\\name\\n\"} 1\n"
		"# HELP dpasync_learner_round_trip_seconds Round trip\\\\time\\nper query.\n"
		"# TYPE dpasync_learner_round_trip_seconds histogram\n"
		"dpasync_learner_round_trip_seconds_bucket{le=\"0.125\"} 2\n"
		"dpasync_learner_round_trip_seconds_bucket{le=\"0.5\"} 3\n"
		"dpasync_learner_round_trip_seconds_bucket{le=\"1\"} 4\n"
		"dpasync_learner_round_trip_seconds_bucket{le=\"+Inf\"} 5\n"
		"dpasync_learner_round_trip_seconds_sum 3.1875\n"
		"dpasync_learner_round_trip_seconds_count 5\n"
		"# TYPE dpasync_rtt_by_owner_seconds histogram\n"
		"dpasync_rtt_by_owner_seconds_bucket{owner=\"a\",le=\"1\"} 0\n"
		"dpasync_rtt_by_owner_seconds_bucket{owner=\"a\",le=\"2\"} 1\n"
		"dpasync_rtt_by_owner_seconds_bucket{owner=\"a\",le=\"+Inf\"} 1\n"
		"dpasync_rtt_by_owner_seconds_sum{owner=\"a\"} 1.5\n"
		"dpasync_rtt_by_owner_seconds_count{owner=\"a\"} 1\n"
		"# TYPE dpasync_two_labels gauge\n"
		"dpasync_two_labels{owner=\"o1\",mode=\"async\"} 0.30000000000000004\n"
		"dpasync_two_labels{owner=\"o1\",mode=\"sync1\"} 1000000\n"
		"dpasync_two_labels{owner=\"o2\",mode=\"async\"} +Inf\n"
		"dpasync_two_labels{owner=\"o3\",mode=\"async\"} -Inf\n"
		"dpasync_two_labels{owner=\"o4\",mode=\"async\"} NaN\n"
		"dpasync_two_labels{owner=\"o5\",mode=\"async\"} 1e-07\n"
		"dpasync_two_labels{owner=\"\xc3\xa9t\xc3\xa9 \xe2\x82\xac\xf0\x9f\x98\x80\","
		"mode=\"peer\"} -3\n");
	free(text);
	dp_metrics_destroy(reg);
}

/* Bucket lines against an independent count: for each bound, the number
 * of observations <= bound, counted directly over the list. */
static void test_histogram_cumulative(void **state)
{
	static const double bounds[] = { 0.001, 0.01, 0.1, 1, 10 };
	struct dp_metrics *reg;
	struct dp_metric *h;
	double obs[200], sum = 0;
	char *text, *line;
	unsigned seen = 0;

	assert_int_equal(dp_metrics_new(&reg), 0);
	assert_int_equal(dp_metrics_histogram(reg, "h_seconds", "h", bounds, 5, &h), 0);
	for (int i = 0; i < 200; i++) {
		/* 10^-4 .. 10^2 on a grid, plus exact hits on the bounds. */
		obs[i] = (i % 25 == 0) ? bounds[(i / 25) % 5] : pow(10.0, -4 + 6.0 * i / 199);
		assert_int_equal(dp_metrics_observe(h, obs[i]), 0);
	}
	for (int i = 0; i < 200; i++)
		sum += obs[i];  /* same order as the histogram adds them */
	text = render(reg);
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char le[32];
		unsigned long long got;
		double b;

		if (strncmp(line, "h_seconds_sum ", 14) == 0) {
			assert_true(strtod(line + 14, NULL) == sum);  /* shortest text reads back */
			seen++;
			continue;
		}
		if (strcmp(line, "h_seconds_count 200") == 0) {
			seen++;
			continue;
		}
		if (sscanf(line, "h_seconds_bucket{le=\"%31[^\"]\"} %llu", le, &got) != 2)
			continue;
		b = strcmp(le, "+Inf") == 0 ? INFINITY : strtod(le, NULL);
		{
			unsigned long long want = 0;

			for (int i = 0; i < 200; i++)
				want += obs[i] <= b;
			assert_true(got == want);
		}
		seen++;
	}
	assert_int_equal(seen, 8);
	free(text);
	assert_true(dp_metrics_value(h) == 200);
	dp_metrics_destroy(reg);
}

static void test_errors(void **state)
{
	struct dp_metrics *reg;
	struct dp_metric_family *f;
	struct dp_metric *c, *g, *h, *m;
	char *text;

	assert_int_equal(dp_metrics_new(&reg), 0);
	assert_int_equal(dp_metrics_counter(reg, "ok_total", "x", &c), 0);
	assert_int_equal(dp_metrics_gauge(reg, "ok_gauge", "x", &g), 0);
	assert_int_equal(dp_metrics_histogram(reg, "ok_h", "x", (const double[]){ 1 }, 1, &h), 0);
	f = (struct dp_metric_family *)0x1;

	/* Names. */
	assert_int_equal(dp_metrics_counter(reg, "ok_total", "again", &m), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL), "metric 'ok_total': registered twice");
	assert_int_equal(dp_metrics_counter(reg, "1bad", "x", &m), DP_EINVAL);
	assert_int_equal(dp_metrics_counter(reg, "bad-name", "x", &m), DP_EINVAL);
	assert_int_equal(dp_metrics_counter(reg, "", "x", &m), DP_EINVAL);
	assert_int_equal(dp_metrics_counter(reg, "ns:sub_total", "colons are fine", &m), 0);
	/* Labels. */
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_GAUGE, "l1", "x",
					   (const char *[]){ "__reserved", NULL }, NULL, 0, &f),
			 DP_EINVAL);
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_GAUGE, "l2", "x",
					   (const char *[]){ "a:b", NULL }, NULL, 0, &f), DP_EINVAL);
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_GAUGE, "l3", "x",
					   (const char *[]){ "a", "a", NULL }, NULL, 0, &f),
			 DP_EINVAL);
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_HISTOGRAM, "l4", "x",
					   (const char *[]){ "le", NULL }, (const double[]){ 1 }, 1,
					   &f), DP_EINVAL);
	assert_ptr_equal(f, (struct dp_metric_family *)0x1);  /* untouched */
	/* Buckets. */
	assert_int_equal(dp_metrics_histogram(reg, "b1", "x", NULL, 0, &m), DP_EINVAL);
	assert_int_equal(dp_metrics_histogram(reg, "b2", "x", (const double[]){ 1, 1 }, 2, &m),
			 DP_EINVAL);
	assert_int_equal(dp_metrics_histogram(reg, "b3", "x", (const double[]){ 2, 1 }, 2, &m),
			 DP_EINVAL);
	assert_int_equal(dp_metrics_histogram(reg, "b4", "x", (const double[]){ NAN }, 1, &m),
			 DP_EINVAL);
	assert_int_equal(dp_metrics_histogram(reg, "b5", "x", (const double[]){ INFINITY }, 1,
					      &m), DP_EINVAL);
	/* Updates that do not fit the type change nothing. */
	assert_int_equal(dp_metrics_add(c, -1), DP_EINVAL);
	assert_int_equal(dp_metrics_add(c, NAN), DP_EINVAL);
	assert_int_equal(dp_metrics_add(c, INFINITY), DP_EINVAL);
	assert_int_equal(dp_metrics_set(c, 5), DP_EINVAL);
	assert_int_equal(dp_metrics_observe(c, 5), DP_EINVAL);
	assert_true(dp_metrics_value(c) == 0);
	assert_int_equal(dp_metrics_observe(g, 1), DP_EINVAL);
	assert_int_equal(dp_metrics_add(g, NAN), DP_EINVAL);
	assert_int_equal(dp_metrics_inc(h), DP_EINVAL);
	assert_int_equal(dp_metrics_set(h, 1), DP_EINVAL);
	assert_int_equal(dp_metrics_observe(h, NAN), DP_EINVAL);
	assert_true(dp_metrics_value(h) == 0);
	assert_int_equal(dp_metrics_observe(h, INFINITY), 0);  /* lands in +Inf */
	assert_int_equal(dp_metrics_observe(h, -INFINITY), 0); /* lands in le="1" */
	/* Label values must be UTF-8 and present. */
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_COUNTER, "per_owner_total", "x",
					   (const char *[]){ "owner", NULL }, NULL, 0, &f), 0);
	assert_int_equal(dp_metrics_series(f, (const char *[]){ "\xff" }, &m), DP_EINVAL);
	assert_int_equal(dp_metrics_series(f, (const char *[]){ "\xc0\xaf" }, &m), DP_EINVAL);
	assert_int_equal(dp_metrics_series(f, (const char *[]){ "\xed\xa0\x80" }, &m), DP_EINVAL);
	assert_int_equal(dp_metrics_series(f, (const char *[]){ "\xe2\x82" }, &m), DP_EINVAL);
	assert_int_equal(dp_metrics_series(f, (const char *[]){ "\xf4\x90\x80\x80" }, &m),
			 DP_EINVAL);
	assert_int_equal(dp_metrics_series(f, (const char *[]){ NULL }, &m), DP_EINVAL);
	assert_int_equal(dp_metrics_series(f, NULL, &m), DP_EINVAL);

	text = render(reg);
	text_equal(text,
		"# HELP ok_total x\n"
		"# TYPE ok_total counter\n"
		"ok_total 0\n"
		"# HELP ok_gauge x\n"
		"# TYPE ok_gauge gauge\n"
		"ok_gauge 0\n"
		"# HELP ok_h x\n"
		"# TYPE ok_h histogram\n"
		"ok_h_bucket{le=\"1\"} 1\n"
		"ok_h_bucket{le=\"+Inf\"} 2\n"
		"ok_h_sum NaN\n"
		"ok_h_count 2\n"
		"# HELP ns:sub_total colons are fine\n"
		"# TYPE ns:sub_total counter\n"
		"ns:sub_total 0\n");
	free(text);
	assert_int_equal(dp_metrics_render(reg, NULL, NULL), DP_EINVAL);
	dp_metrics_destroy(reg);
	dp_metrics_destroy(NULL);
}

static void test_empty_registry(void **state)
{
	struct dp_metrics *reg;
	char *text;

	assert_int_equal(dp_metrics_new(&reg), 0);
	text = render(reg);
	text_equal(text, "");
	free(text);
	dp_metrics_destroy(reg);
}

static void test_many_series(void **state)
{
	struct dp_metrics *reg;
	struct dp_metric_family *f;
	struct dp_metric *m[100];
	char name[16], *text, *p;
	size_t lines = 0;

	assert_int_equal(dp_metrics_new(&reg), 0);
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_COUNTER, "many_total", "x",
					   (const char *[]){ "owner", NULL }, NULL, 0, &f), 0);
	/* Half through dp_metrics_series_add (no lookup: the names are new),
	 * which the lookups below find as well. */
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "owner-%d", i);
		assert_int_equal((i % 2 ? dp_metrics_series_add : dp_metrics_series)(
					 f, (const char *[]){ name }, &m[i]), 0);
		assert_int_equal(dp_metrics_add(m[i], i), 0);
	}
	assert_int_equal(dp_metrics_series_add(f, (const char *[]){ "\xff" }, &m[0]), DP_EINVAL);
	for (int i = 0; i < 100; i++) {
		struct dp_metric *again;

		snprintf(name, sizeof(name), "owner-%d", i);
		assert_int_equal(dp_metrics_series(f, (const char *[]){ name }, &again), 0);
		assert_ptr_equal(again, m[i]);
		assert_true(dp_metrics_value(again) == i);
	}
	text = render(reg);
	for (p = text; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 102);
	assert_non_null(strstr(text, "\nmany_total{owner=\"owner-99\"} 99\n"));
	free(text);
	dp_metrics_destroy(reg);
}

/* A table registers as the calls one by one would, in its order, and stops
 * at the first bad entry with what came before it kept. */
static void test_define(void **state)
{
	static const char *const owner[] = { "owner", NULL };
	static const double b[] = { 1, 2 };
	struct dp_metrics *reg;
	struct dp_metric *c = NULL, *h = NULL, *dup = NULL, *m;
	struct dp_metric_family *f = NULL;
	const struct dp_metrics_def defs[] = {
		{ DP_METRIC_COUNTER, "a_total", "A.", .series = &c },
		{ DP_METRIC_HISTOGRAM, "h_seconds", "H.", b, 2, .series = &h },
		{ DP_METRIC_GAUGE, "per_owner", "P.", .labels = owner, .family = &f },
		{ DP_METRIC_GAUGE, "a_total", "again", .series = &dup },
	};
	char *text;

	(void)state;
	assert_int_equal(dp_metrics_new(&reg), 0);
	assert_int_equal(dp_metrics_define(reg, defs, 4), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "registered twice"));
	assert_non_null(c);
	assert_non_null(h);
	assert_non_null(f);
	assert_null(dup);
	assert_int_equal(dp_metrics_inc(c), 0);
	assert_int_equal(dp_metrics_observe(h, 1.5), 0);
	assert_int_equal(dp_metrics_series(f, (const char *[]){ "o1" }, &m), 0);
	assert_int_equal(dp_metrics_set(m, 0.5), 0);
	text = render(reg);
	text_equal(text, "# HELP a_total A.\n# TYPE a_total counter\na_total 1\n"
			 "# HELP h_seconds H.\n# TYPE h_seconds histogram\n"
			 "h_seconds_bucket{le=\"1\"} 0\nh_seconds_bucket{le=\"2\"} 1\n"
			 "h_seconds_bucket{le=\"+Inf\"} 1\nh_seconds_sum 1.5\nh_seconds_count 1\n"
			 "# HELP per_owner P.\n# TYPE per_owner gauge\nper_owner{owner=\"o1\"} 0.5\n");
	free(text);
	dp_metrics_destroy(reg);
}

/* The value of the unlabelled series `name` in text (NAN when absent). */
static double value_of(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, name, n) == 0 && l[n] == ' ')
			return strtod(l + n + 1, NULL);
	return NAN;
}

/* build_info and the process metrics: present, plausible, and read afresh
 * at each render (a descriptor opened in between is counted). */
/* A series relabelled keeps its value and its pointer and leaves no series
 * behind; relabelling onto another series' values, an unlabelled series
 * or with bad values is refused and changes nothing. */
static void test_relabel(void **state)
{
	static const char *const names[] = { "job_id", NULL };
	struct dp_metric_family *fam;
	struct dp_metric *m, *other, *plain, *again;
	struct dp_metrics *reg;
	char *text;

	assert_int_equal(dp_metrics_new(&reg), 0);
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_GAUGE, "g", "", names, NULL, 0, &fam), 0);
	assert_int_equal(dp_metrics_series(fam, (const char *[]){ "" }, &m), 0);
	assert_int_equal(dp_metrics_set(m, 2.5), 0);
	assert_int_equal(dp_metrics_relabel(m, (const char *[]){ "J1" }), 0);
	assert_int_equal(dp_metrics_relabel(m, (const char *[]){ "J1" }), 0);
	assert_int_equal(dp_metrics_series(fam, (const char *[]){ "J1" }, &again), 0);
	assert_ptr_equal(again, m);
	assert_true(dp_metrics_value(m) == 2.5);
	text = render(reg);
	assert_non_null(strstr(text, "g{job_id=\"J1\"} 2.5\n"));
	assert_null(strstr(text, "job_id=\"\""));
	free(text);
	assert_int_equal(dp_metrics_series(fam, (const char *[]){ "J2" }, &other), 0);
	assert_int_equal(dp_metrics_relabel(m, (const char *[]){ "J2" }), DP_EINVAL);
	assert_int_equal(dp_metrics_relabel(m, (const char *[]){ "\xff" }), DP_EINVAL);
	assert_int_equal(dp_metrics_relabel(m, (const char *[]){ NULL }), DP_EINVAL);
	assert_int_equal(dp_metrics_gauge(reg, "plain", "", &plain), 0);
	assert_int_equal(dp_metrics_relabel(plain, (const char *[]){ "x" }), DP_EINVAL);
	text = render(reg);
	assert_non_null(strstr(text, "g{job_id=\"J1\"} 2.5\ng{job_id=\"J2\"} 0\n"));
	free(text);
	dp_metrics_destroy(reg);
	(void)state;
}

static void test_process(void **state)
{
	struct dp_metrics *reg;
	char *text;
	double fds, now = (double)time(NULL);
	int fd;

	assert_int_equal(dp_metrics_new(&reg), 0);
	assert_int_equal(dp_metrics_process(reg, "test"), 0);
	text = render(reg);
	assert_non_null(strstr(text, "# TYPE dpasync_build_info gauge\n"
				     "dpasync_build_info{program=\"test\",version=\"" DP_VERSION
				     "\",openssl=\"OpenSSL "));
	assert_non_null(strstr(text, "# TYPE process_cpu_seconds_total counter\n"));
	assert_true(value_of(text, "process_cpu_seconds_total") >= 0);
	assert_true(value_of(text, "process_resident_memory_bytes") > 1e5);
	assert_true(value_of(text, "process_start_time_seconds") > now - 3600);
	assert_true(value_of(text, "process_start_time_seconds") < now + 60);
	fds = value_of(text, "process_open_fds");
	assert_true(fds >= 3);
	free(text);
	fd = open("/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	text = render(reg);
	assert_true(value_of(text, "process_open_fds") == fds + 1);
	free(text);
	close(fd);
	dp_metrics_destroy(reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exposition),
		cmocka_unit_test(test_histogram_cumulative),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_empty_registry),
		cmocka_unit_test(test_many_series),
		cmocka_unit_test(test_define),
		cmocka_unit_test(test_relabel),
		cmocka_unit_test(test_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
