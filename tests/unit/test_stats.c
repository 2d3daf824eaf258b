/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for learner/stats.c: learnerd's Prometheus metrics (names and
 * meanings: docs/learnerd.md §7), read back from the rendered text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/log.h"
#include "learner/job.h"
#include "tests/unit/tmpdir.h"
#include "tests/unit/lrnjob.h"

/* The rendered registry has this exact line. */
static void has_line(const struct lrn_job *J, const char *line)
{
	char *text, want[256];
	size_t len;

	assert_int_equal(dp_metrics_render(J->st.reg, &text, &len), 0);
	snprintf(want, sizeof(want), "\n%s\n", line);
	if (strstr(text, want) == NULL)
		fail_msg("no line '%s' in:\n%s", line, text);
	free(text);
}

static void test_series(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;

	(void)state;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	lrn_stats_gauges(&J);   /* before init: nothing to set */
	/* A resumed job: the counters start where the checkpoint was. */
	J.k_done = 12;
	J.owners[1].iterations = 5;
	J.owners[1].eps_spent = 0.25;
	assert_int_equal(lrn_stats_init(&J), 0);
	has_line(&J, "dpasync_learner_iterations_total 12");
	has_line(&J, "dpasync_learner_iterations_target 10");
	has_line(&J, "dpasync_learner_owner_iterations_total{owner=\"owner-2\"} 5");
	has_line(&J, "dpasync_learner_owner_epsilon_spent{owner=\"owner-2\"} 0.25");
	has_line(&J, "dpasync_learner_owner_iterations_total{owner=\"owner-1\"} 0");
	has_line(&J, "dpasync_learner_owners_connected 0");
	has_line(&J, "# TYPE dpasync_learner_rtt_seconds histogram");
	has_line(&J, "dpasync_learner_rtt_seconds_bucket{le=\"0.001\"} 0");
	has_line(&J, "dpasync_learner_rtt_seconds_bucket{le=\"60\"} 0");
	/* The gauges follow the counters the job keeps. */
	J.n_hello = 2;
	J.fifo_len = 1;
	J.inflight = 1;
	lrn_stats_gauges(&J);
	has_line(&J, "dpasync_learner_owners_connected 2");
	has_line(&J, "dpasync_learner_queue_depth 1");
	has_line(&J, "dpasync_learner_inflight 1");
	lrn_stats_free(&J);
	assert_null(J.st.reg);
	lrn_stats_free(&J);   /* twice: a no-op */
	lrn_state_free(&J);
}

/* The scheduler counts what it does: iterations, per owner, round trips
 * and waits, refusals, timeouts. */
static void test_counted(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_decision d;
	static const uint64_t rows[] = { 10, 30 };
	static const double g[] = { 1, 1 };

	(void)state;
	lrnjob_init(&J, &s, 2, 2, "counted");
	lrnjob_start(&J, rows, 0.0);
	lrn_sched_request(&J, &J.owners[0], 1.0, &d);
	assert_int_equal(lrnjob_pump(&J, 1.5, NULL, NULL), LRN_ACT_NONE);
	has_line(&J, "dpasync_learner_inflight 1");
	lrnjob_answer(&J, 0, g, 1.75, &d);   /* waited 0.5, round trip 0.25 */
	has_line(&J, "dpasync_learner_iterations_total 1");
	has_line(&J, "dpasync_learner_owner_iterations_total{owner=\"owner-1\"} 1");
	has_line(&J, "dpasync_learner_owner_epsilon_spent{owner=\"owner-1\"} 0.01");
	has_line(&J, "dpasync_learner_rtt_seconds_bucket{le=\"0.1\"} 0");
	has_line(&J, "dpasync_learner_rtt_seconds_bucket{le=\"0.25\"} 1");
	has_line(&J, "dpasync_learner_wait_seconds_bucket{le=\"0.25\"} 0");
	has_line(&J, "dpasync_learner_wait_seconds_bucket{le=\"0.5\"} 1");
	lrn_sched_request(&J, &J.owners[1], 2.0, &d);
	assert_int_equal(lrnjob_pump(&J, 2.0, NULL, NULL), LRN_ACT_NONE);
	lrn_sched_expired(&J, 12.0, &d);
	assert_int_equal(d.act, LRN_ACT_DROP);
	has_line(&J, "dpasync_learner_query_timeouts_total 1");
	lrnjob_leave(&J, 1);
	lrn_sched_refuse(&J, &J.owners[0], 42, "budget exhausted", &d);
	has_line(&J, "dpasync_learner_refusals_total 1");
	has_line(&J, "dpasync_learner_owners_connected 1");
	lrnjob_free(&J);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_series),
		cmocka_unit_test(test_counted),
	};
	int rc;

	dp_log_set_level(DP_LOG_ERROR);
	tmpdir_setup("dp_test_stats");
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	tmpdir_teardown();
	return rc;
}
