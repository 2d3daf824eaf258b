/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for learner/trace.c: trace.csv and rounds.csv (docs/learnerd.md
 * §4).  The expected rows are written out here from the column list and
 * formats of docs/learnerd.md §4 (time in µs, ε to 9 significant digits);
 * a resume keeps the header and exactly k_done complete rows. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "learner/job.h"
#include "tests/unit/tmpdir.h"
#include "tests/unit/lrnjob.h"

#define HEADER "k,time_unix,owner,wait_s,rtt_s,eps_spent,staleness,job\n"
#define ROW(k) #k ",1700000000.000000,owner-1,0.000000,0.000000,0.1,0,test-job\n"

static void job(struct lrn_job *J, struct lrn_settings *s, const char *tag)
{
	assert_int_equal(lrn_state_init(J, s, lrnjob_names, 2), 0);
	lrnjob_paths(J, tag);
}

static void done(struct lrn_job *J)
{
	lrn_trace_close(J);
	free(J->trace_path);
	free(J->ckpt_path);
	free(J->rounds_path);
	lrn_state_free(J);
}

static void test_rows(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	char *text;

	(void)state;
	job(&J, &s, "rows");
	assert_int_equal(lrn_trace_open(&J, false), 0);
	assert_int_equal(lrn_trace_row(&J, 1, 1700000000.25, "owner-1", 0.5, 0.125,
				       0.333333333333, 0), 0);
	assert_int_equal(lrn_trace_row(&J, 2, 1700000001.0000004, "owner-2", 0, 1e-7, 1e300, 17),
			 0);
	/* Flushed row by row: readable while the job runs. */
	text = lrnjob_slurp(J.trace_path);
	assert_string_equal(text, HEADER
			    "1,1700000000.250000,owner-1,0.500000,0.125000,0.333333333,0,test-job\n"
			    "2,1700000001.000000,owner-2,0.000000,0.000000,1e+300,17,test-job\n");
	free(text);
	assert_int_equal(lrn_trace_sync(&J), 0);
	done(&J);
}

static void test_rounds(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	char *text;

	(void)state;
	job(&J, &s, "rounds");
	assert_int_equal(lrn_trace_open(&J, false), 0);
	assert_int_equal(access(J.rounds_path, F_OK), -1);   /* opened on first use */
	assert_int_equal(lrn_trace_round(&J, 1, 1700000000.5, 2.25, 3, 1, 3, "owner-2", 1.5), 0);
	assert_int_equal(lrn_trace_round(&J, 2, 1700000003, 0.5, 2, 4, 5, "owner-1", 0.25), 0);
	text = lrnjob_slurp(J.rounds_path);
	assert_string_equal(text,
			    "round,time_unix,round_s,answers,first_k,last_k,slowest,slowest_rtt_s\n"
			    "1,1700000000.500000,2.250000,3,1,3,owner-2,1.500000\n"
			    "2,1700000003.000000,0.500000,2,4,5,owner-1,0.250000\n");
	free(text);
	done(&J);
}

/* Resume: the header and the first k_done complete rows stay; rows past
 * the checkpoint and a line torn by a crash go; new rows follow. */
static void test_resume_cut(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	char *text;

	(void)state;
	put("cut-trace.csv", HEADER ROW(1) ROW(2) ROW(3) ROW(4) "5,17000");
	job(&J, &s, "cut");
	J.k_done = 2;
	assert_int_equal(lrn_trace_open(&J, true), 0);
	assert_int_equal(lrn_trace_row(&J, 3, 1700000000, "owner-1", 0, 0, 0.1, 0), 0);
	text = lrnjob_slurp(J.trace_path);
	assert_string_equal(text, HEADER ROW(1) ROW(2) ROW(3));
	free(text);
	done(&J);

	/* Fewer rows than k_done (rows lost): all kept. */
	put("few-trace.csv", HEADER ROW(1));
	job(&J, &s, "few");
	J.k_done = 3;
	assert_int_equal(lrn_trace_open(&J, true), 0);
	lrn_trace_close(&J);
	text = lrnjob_slurp(J.trace_path);
	assert_string_equal(text, HEADER ROW(1));
	free(text);
	done(&J);

	/* No trace, or an empty one: a new one. */
	job(&J, &s, "gone");
	J.k_done = 5;
	assert_int_equal(lrn_trace_open(&J, true), 0);
	lrn_trace_close(&J);
	text = lrnjob_slurp(J.trace_path);
	assert_string_equal(text, HEADER);
	free(text);
	done(&J);
	put("empty-trace.csv", "");
	job(&J, &s, "empty");
	assert_int_equal(lrn_trace_open(&J, true), 0);
	lrn_trace_close(&J);
	text = lrnjob_slurp(J.trace_path);
	assert_string_equal(text, HEADER);
	free(text);
	done(&J);
}

/* Traces of the older formats, and files that are no trace, are refused
 * on resume. */
static void test_resume_refused(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;

	(void)state;
	put("six-trace.csv", "k,time_unix,owner,wait_s,rtt_s,eps_spent\n1,2,owner-1,0,0,0.1\n");
	put("seven-trace.csv", "k,time_unix,owner,wait_s,rtt_s,eps_spent,staleness\n");
	put("other-trace.csv", "a,b,c\n");
	for (int i = 0; i < 3; i++) {
		job(&J, &s, i == 0 ? "six" : i == 1 ? "seven" : "other");
		assert_int_equal(lrn_trace_open(&J, true), DP_EFORMAT);
		assert_non_null(strstr(dp_error_detail(DP_EFORMAT),
				       i < 2 ? "written by a learnerd before the job column"
					     : "not a learnerd trace (header)"));
		assert_null(J.trace);
		done(&J);
	}
}

/* A write that fails sets io_failed (no checkpoint may follow it). */
static void test_failures(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;

	(void)state;
	job(&J, &s, "fail");
	free(J.trace_path);
	J.trace_path = strdup("/dev/full");
	assert_int_equal(lrn_trace_open(&J, false), DP_EIO);
	lrn_trace_close(&J);
	done(&J);

	job(&J, &s, "fail2");
	assert_int_equal(lrn_trace_row(&J, 1, 0, "owner-1", 0, 0, 0, 0), DP_EIO);   /* not open */
	J.trace = fopen("/dev/full", "w");
	assert_non_null(J.trace);
	assert_int_equal(lrn_trace_row(&J, 1, 0, "owner-1", 0, 0, 0, 0), DP_EIO);
	assert_true(J.io_failed);
	/* The stream remembers the failure: a later sync fails too. */
	assert_int_equal(lrn_trace_sync(&J), DP_EIO);
	done(&J);

	job(&J, &s, "fail3");
	free(J.rounds_path);
	J.rounds_path = strdup(path_of("no-such-dir/rounds.csv"));
	assert_int_equal(lrn_trace_round(&J, 1, 0, 0, 1, 1, 1, "owner-1", 0), DP_EIO);
	assert_true(J.io_failed);
	done(&J);
	job(&J, &s, "fail4");
	assert_int_equal(lrn_trace_sync(&J), 0);   /* nothing open: nothing to sync */
	done(&J);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_rounds),
		cmocka_unit_test(test_resume_cut),
		cmocka_unit_test(test_resume_refused),
		cmocka_unit_test(test_failures),
	};
	int rc;

	dp_log_set_level(DP_LOG_ERROR);
	tmpdir_setup("dp_test_trace");
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	tmpdir_teardown();
	return rc;
}
