/* SPDX-License-Identifier: Apache-2.0 */
/* The numbers of `dpasync report` (tools/lib/report.h) on a trace written
 * here, computed by hand, and their two renderings (report_md.h,
 * report_json.h) from the same fields. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/core/error.h"
#include "common/core/ledger.h"
#include "common/core/ledgerset.h"
#include "common/core/trace.h"
#include "tools/lib/report.h"
#include "tools/lib/report_json.h"
#include "tools/lib/report_md.h"
#include "tools/lib/rundata.h"
#include "tmpdir.h"

/* Five iterations of two owners, with a 48 s hole after k = 3; the first
 * query went out at 100.0 (time_unix - rtt_s of row 1). */
static const char rows[] =
	"1,100.5,owner-2,0.1,0.5,0.1,0,J\n"
	"2,101.0,owner-1,0.0,0.2,0.2,1,J\n"
	"3,102.0,owner-2,0.2,0.4,0.3,0,J\n"
	"4,150.0,owner-1,0.0,0.1,0.4,2,J\n"
	"5,151.0,owner-1,0.0,0.3,0.5,0,J\n";

static int setup(void **state)
{
	(void)state;
	return tmpdir_setup("test_report");
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_teardown();
}

/* The trace of `rows`, with owner-3 from checkpoint.json (no iteration). */
static void read_trace(dp_rundata_trace *tr)
{
	static const char *const extra[] = { "owner-3" };
	char text[1024];

	snprintf(text, sizeof(text), "%s\n%s", DP_TRACE_HEADER, rows);
	assert_int_equal(dp_rundata_trace_read(put("trace.csv", text), extra, 1, tr), 0);
	assert_int_equal(tr->n, 5);
	assert_int_equal(tr->N, 3);
	assert_string_equal(tr->job, "J");
}

/* The run's context filled as the command fills it, and report.md of r
 * (free()). */
static char *render_md(dp_report_learner *r, const dp_rundata_trace *tr)
{
	char *md = NULL;
	size_t len = 0;
	FILE *m;

	r->dir = "run";
	r->job = tr->job;
	r->psi = NAN;
	r->repro_plots = "plot a\n";
	r->repro_sim = "sim b\n";
	m = open_memstream(&md, &len);
	assert_non_null(m);
	dp_report_md_learner(m, r);
	assert_int_equal(fclose(m), 0);
	return md;
}

static void test_learner_stats(void **state)
{
	dp_rundata_trace tr;
	dp_report_learner r = { 0 };

	(void)state;
	read_trace(&tr);
	assert_int_equal(dp_report_learner_stats(&r, &tr), 0);
	assert_int_equal(r.iterations, 5);
	assert_true(r.start_unix == 100.0 && r.end_unix == 151.0 && r.duration_s == 51.0);
	assert_true(r.rate == 5.0 / 51.0);
	/* Times between updates 0.5, 1, 48, 1: median 1, so a gap is over
	 * max(20 x 1, 1) = 20 s; one, after k = 3. */
	assert_true(r.gap_median == 1.0 && r.gap_threshold == 20.0);
	assert_int_equal(r.ngaps, 1);
	assert_int_equal(r.gaps[0].after_k, 3);
	assert_true(r.gaps[0].from_unix == 102.0 && r.gaps[0].seconds == 48.0);
	assert_true(r.gap_total == 48.0 && r.rate_without_gaps == 5.0 / 3.0);
	/* Round trips 0.1 .. 0.5: median 0.3, p95 0.4 + 0.8 x 0.1. */
	assert_true(fabs(r.rtt_median - 0.3) < 1e-15 && fabs(r.rtt_p95 - 0.48) < 1e-15);
	assert_true(r.have_staleness && r.stale_median == 0 && r.stale_max == 2);
	/* Owners in natural order; owner-3 served nothing. */
	assert_string_equal(r.owners[0].name, "owner-1");
	assert_int_equal(r.owners[0].iterations, 3);
	assert_true(r.owners[0].share == 0.6 && r.owners[0].eps == 0.5);
	assert_true(fabs(r.owners[0].rtt_median - 0.2) < 1e-15 && r.owners[0].wait_p95 == 0);
	assert_int_equal(r.owners[1].iterations, 2);
	assert_true(r.owners[1].eps == 0.3 && fabs(r.owners[1].rtt_median - 0.45) < 1e-15);
	assert_int_equal(r.owners[2].iterations, 0);
	assert_true(isnan(r.owners[2].eps) && isnan(r.owners[2].rtt_median));
	dp_report_learner_free(&r);
	dp_rundata_trace_free(&tr);
}

/* The page, and the document, of the same numbers. */
static void test_learner_renderings(void **state)
{
	dp_rundata_trace tr;
	dp_report_learner r = { 0 };
	struct json_object *js = NULL, *v, *o;
	char *md;

	(void)state;
	read_trace(&tr);
	assert_int_equal(dp_report_learner_stats(&r, &tr), 0);
	md = render_md(&r, &tr);
	assert_non_null(strstr(md, "# Run report: run\n\nlearnerd run · job J · N = 3 owners\n"));
	assert_non_null(strstr(md, "| gaps | 1 (over 20 s between two updates, 20 × the median "
			       "1e+03 ms): 48.000 s in all; 1.667 iterations/s without them; "
			       "after k = 3: 48.000 s |\n"));
	assert_non_null(strstr(md, "| query round trip, median / p95 | 300 / 480 ms |\n"));
	assert_non_null(strstr(md, "| owner-3 | 0 | 0.0 % | — | — | — | — | — |\n"));
	assert_non_null(strstr(md, "```\nplot a\n```"));
	assert_non_null(strstr(md, ", owner-1 first) and plot it against the trace:\n\n"
			       "```\nsim b\n```\n"));

	assert_int_equal(dp_report_json_learner(&r, &js), 0);
	assert_true(json_object_object_get_ex(js, "job", &v) &&
		    strcmp(json_object_get_string(v), "J") == 0);
	assert_true(json_object_object_get_ex(js, "psi", &v) && v == NULL);   /* null */
	assert_true(json_object_object_get_ex(js, "gaps", &v) && json_object_array_length(v) == 1);
	o = json_object_array_get_idx(v, 0);
	assert_true(json_object_object_get_ex(o, "seconds", &v) && json_object_get_double(v) == 48.0);
	assert_true(json_object_object_get_ex(js, "rtt_p95_ms", &v) &&
		    fabs(json_object_get_double(v) - 480) < 1e-9);
	assert_true(json_object_object_get_ex(js, "owners", &v) && json_object_array_length(v) == 3);
	o = json_object_array_get_idx(v, 2);
	assert_true(json_object_object_get_ex(o, "epsilon_spent", &v) && v == NULL);
	assert_true(json_object_object_get_ex(js, "reproduce", &v) &&
		    json_object_array_length(v) == 2);
	json_object_put(js);
	free(md);
	dp_report_learner_free(&r);
	dp_rundata_trace_free(&tr);
}

/* A trace of the six-column format has no staleness: said, and null. */
static void test_learner_six_columns(void **state)
{
	dp_rundata_trace tr;
	dp_report_learner r = { 0 };

	(void)state;
	assert_int_equal(dp_rundata_trace_read(put("six.csv", DP_TRACE_HEADER_6 "\n"
						  "1,10,a,0,1,0.5\n2,11,b,0,1,0.5\n"),
					       NULL, 0, &tr), 0);
	assert_null(tr.stale);
	assert_null(tr.job);
	assert_int_equal(dp_report_learner_stats(&r, &tr), 0);
	assert_false(r.have_staleness);
	assert_true(isnan(r.stale_median) && isnan(r.stale_max));
	/* One time between updates: no gap at the 1 s floor. */
	assert_int_equal(r.ngaps, 0);
	dp_report_learner_free(&r);
	dp_rundata_trace_free(&tr);
}

/* Owner-1's ledger of job J in the ledger directory `ldir`, held open
 * writable (locked, as a running ownerd holds it) in *set: cap 1, K = 8,
 * five answers of 0.125 charged while the trace applied three (two shares
 * charged and never applied, as a forfeited reservation leaves). */
static void owner1_ledger(const char *ldir, dp_ledgerset **set)
{
	struct dp_ledgerset_init life = { .lifetime_nano = 5000000000ull, .program = "test" };
	dp_ledger *l = NULL;
	char *path;

	assert_int_equal(dp_ledgerset_open(ldir, "owner-1", 0, &life, set), 0);
	path = dp_ledgerset_job_path(*set, "J");
	assert_non_null(path);
	assert_int_equal(dp_ledger_open(path, 1.0, 8, "owner=owner-1 job=J", 0, &l), 0);
	for (unsigned k = 1; k <= 5; k++)
		assert_int_equal(dp_ledger_charge(l, k, 0.125, NULL), 0);
	dp_ledger_close(l);
	free(path);
}

/* --ledgers: the ledger's figure read read-only beside a running owner's
 * lock, the difference and its sentence, both renderings, and bad input. */
static void test_ledgers(void **state)
{
	dp_rundata_trace tr;
	dp_report_learner r = { 0 };
	dp_report_ledger l[2];
	dp_ledgerset *set = NULL;
	struct json_object *js = NULL, *v, *o;
	char ldir[256], *md;

	(void)state;
	snprintf(ldir, sizeof(ldir), "%s", path_of("ledgers-1"));
	owner1_ledger(ldir, &set);
	read_trace(&tr);
	assert_int_equal(dp_report_learner_stats(&r, &tr), 0);

	/* Bad input: a missing directory, another owner's, no ledger for the job. */
	assert_int_equal(dp_report_ledger_read(&l[0], "owner-1", path_of("none"), "J"), DP_ENOENT);
	assert_non_null(strstr(dp_error_detail(DP_ENOENT), "--ledgers owner-1="));
	assert_int_equal(dp_report_ledger_read(&l[0], "owner-2", ldir, "J"), DP_EINVAL);
	assert_int_equal(dp_report_ledger_read(&l[0], "owner-1", ldir, "K"), DP_ENOENT);
	assert_non_null(strstr(dp_error_detail(DP_ENOENT), "no ledger for job K"));

	/* Read while the writable set holds the lock: never blocks. */
	assert_int_equal(dp_report_ledger_read(&l[0], "owner-1", ldir, "J"), 0);
	assert_true(l[0].spent == 0.625 && l[0].cap == 1.0);
	assert_int_equal(l[0].answers, 5);
	assert_int_equal(l[0].answers_cap, 8);
	assert_true(l[0].eps_q == 0.125);
	/* owner-2 by hand: its two applied answers are all it was charged. */
	l[1] = (dp_report_ledger){ .owner = "owner-2", .dir = "d2", .spent = 0.3, .cap = 1.5,
				   .answers = 2, .answers_cap = 10, .eps_q = 0.15 };

	/* An owner that is not the run's, or one given twice: refused, r unchanged. */
	{
		dp_report_ledger bad[2] = { l[0], l[0] };

		bad[1].owner = "owner-9";
		assert_int_equal(dp_report_ledger_apply(&r, bad, 2), DP_EINVAL);
		bad[1].owner = "owner-1";
		assert_int_equal(dp_report_ledger_apply(&r, bad, 2), DP_EINVAL);
		assert_true(r.owners[0].eps == 0.5 && !r.owners[0].eps_ledger && r.nledgers == 0);
	}

	assert_int_equal(dp_report_ledger_apply(&r, l, 2), 0);
	assert_int_equal(l[0].applied, 3);
	assert_int_equal(l[0].unapplied, 2);
	assert_true(l[0].applied_eps == 0.375 && l[0].extra == 0.25);
	assert_non_null(strstr(l[0].why, "2 shares of ε_q charged beyond the applied answers"));
	assert_non_null(strstr(l[0].why, "forfeited at a restart or at the job's end"));
	assert_non_null(strstr(l[0].why, "did not arrive or was dropped"));
	assert_int_equal(l[1].applied, 2);
	assert_int_equal(l[1].unapplied, 0);
	assert_non_null(strstr(l[1].why, "Equal to the applied answers × ε_q"));
	/* The budget spent is the ledger's figure; owner-3 keeps the trace's. */
	assert_true(r.owners[0].eps == l[0].spent && r.owners[0].eps_ledger);
	assert_true(r.owners[1].eps == 0.3 && r.owners[1].eps_ledger);
	assert_false(r.owners[2].eps_ledger);

	md = render_md(&r, &tr);
	assert_non_null(strstr(md, "| owner-1 | 3 | 60.0 % | 0.625 | "));
	assert_non_null(strstr(md, "\n## ε charged (owners' ledgers)\n"));
	assert_non_null(strstr(md, "| owner-1 | "));
	assert_non_null(strstr(md, " | 0.625 | 5 | 3 | 0.125 | 0.375 | 0.25 | 2 shares"));
	assert_non_null(strstr(md, "| owner-2 | d2 | 0.3 | 2 | 2 | 0.15 | 0.3 | 0 | Equal"));

	assert_int_equal(dp_report_json_learner(&r, &js), 0);
	assert_true(json_object_object_get_ex(js, "ledgers", &v) && json_object_array_length(v) == 2);
	o = json_object_array_get_idx(v, 0);
	assert_true(json_object_object_get_ex(o, "epsilon_charged", &v) &&
		    json_object_get_double(v) == 0.625);
	assert_true(json_object_object_get_ex(o, "ledger_answers", &v) && json_object_get_int(v) == 5);
	assert_true(json_object_object_get_ex(o, "applied_answers", &v) && json_object_get_int(v) == 3);
	assert_true(json_object_object_get_ex(o, "unapplied_shares", &v) && json_object_get_int(v) == 2);
	assert_true(json_object_object_get_ex(o, "why", &v) &&
		    strstr(json_object_get_string(v), "forfeited") != NULL);
	assert_true(json_object_object_get_ex(js, "owners", &v));
	o = json_object_array_get_idx(v, 0);
	assert_true(json_object_object_get_ex(o, "epsilon_spent_from", &v) &&
		    strcmp(json_object_get_string(v), "ledger") == 0);
	o = json_object_array_get_idx(json_object_object_get(js, "owners"), 2);
	assert_true(json_object_object_get_ex(o, "epsilon_spent_from", &v) &&
		    strcmp(json_object_get_string(v), "trace") == 0);
	json_object_put(js);
	free(md);
	dp_ledgerset_close(set);
	dp_report_learner_free(&r);
	dp_rundata_trace_free(&tr);
}

static void test_sim(void **state)
{
	dp_report_sim r = { 0 };
	dp_rundata_trace sched;
	struct json_object *js = NULL, *v, *o;
	char *md = NULL;
	size_t len = 0;
	FILE *m;

	(void)state;
	put("summary.json", "{\"N\": 2, \"seed\": 5, \"psi_mean\": 0.25, \"psi_median\": 0.2, "
	    "\"f_star\": 1.5, \"eta\": 0.01, \"epsilon\": [1, \"inf\"], \"n_rows\": [10, 20]}");
	assert_int_equal(dp_report_sim_read(&r, dir), 0);
	assert_int_equal(r.N, 2);
	assert_true(r.have_eta && !r.have_rho && isnan(r.psi_p25));
	assert_true(!r.owners[0].unlimited && r.owners[0].eps == 1 && r.owners[0].rows == 10);
	assert_true(r.owners[1].unlimited && r.owners[1].rows == 20);
	assert_int_equal(dp_rundata_trace_read(put("schedule.txt", "1\n2\n2\n2\n"), NULL, 0,
					       &sched), 0);
	dp_report_sim_count(&r, &sched);
	assert_true(r.have_sched && r.sched_n == 4);
	assert_true(r.owners[0].iterations == 1 && r.owners[1].iterations == 3);

	r.dir = "sim";
	r.note = "note";
	r.repro = "plot\n";
	m = open_memstream(&md, &len);
	assert_non_null(m);
	dp_report_md_sim(m, &r);
	assert_int_equal(fclose(m), 0);
	assert_non_null(strstr(md, "| owner-1 | 10 | 1 | 1 | 25.0 % |\n"
			       "| owner-2 | 20 | ∞ | 3 | 75.0 % |\n"));
	assert_non_null(strstr(md, "| η | 0.01 |\n| λ, θ_max, Ξ | nan, nan, nan |\n"));
	assert_int_equal(dp_report_json_sim(&r, &js), 0);
	assert_true(json_object_object_get_ex(js, "rho", &v) && v == NULL);
	assert_true(json_object_object_get_ex(js, "owners", &v));
	o = json_object_array_get_idx(v, 1);
	assert_true(json_object_object_get_ex(o, "epsilon", &v) &&
		    strcmp(json_object_get_string(v), "inf") == 0);
	assert_true(json_object_object_get_ex(o, "share", &v) && json_object_get_double(v) == 0.75);
	json_object_put(js);
	free(md);
	dp_rundata_trace_free(&sched);
	dp_report_sim_free(&r);
}

static void test_sim_bad_summary(void **state)
{
	dp_report_sim r = { 0 };

	(void)state;
	assert_int_equal(mkdir(path_of("bad"), 0700), 0);
	put("bad/summary.json", "{\"N\": 1, \"epsilon\": [\"much\"]}");
	assert_int_equal(dp_report_sim_read(&r, path_of("bad")), DP_EFORMAT);
	assert_null(r.owners);
	assert_int_equal(dp_report_sim_read(&r, path_of("missing")), DP_ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_learner_stats),
		cmocka_unit_test(test_learner_renderings),
		cmocka_unit_test(test_learner_six_columns),
		cmocka_unit_test(test_ledgers),
		cmocka_unit_test(test_sim),
		cmocka_unit_test(test_sim_bad_summary),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
