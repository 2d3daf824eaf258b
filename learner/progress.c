/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: the progress line and the final summary (docs/learnerd.md
 * "Progress").
 *
 * Rates count from the first query this process sent, not from startup:
 * the wait for owners to connect is not training time, and the same
 * instant starts `dpasync report`'s figures (docs/plots.md "Throughput").
 * The timer is unreferenced, so it never keeps the loop alive; the
 * shutdown's walk over the loop closes it. */
#include <math.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "learner/lrn.h"

static void on_timer(uv_timer_t *t)
{
	lrn_progress_line(t->data, NULL);
}

int lrn_progress_start(struct lrn *L)
{
	double every;
	uint64_t ms;
	int rc;

	DP_REQUIRE(L != NULL && L->loop != NULL);
	every = L->s->progress_every;
	L->prog_t = lrn_clock_mono();
	L->prog_k = L->job.k_done;
	if (every == 0)
		return 0;
	ms = every * 1000.0 < 1.0 ? 1 : (uint64_t)(every * 1000.0);
	uv_timer_init(L->loop, &L->progress);
	L->progress.data = L;
	L->progress_init = true;
	rc = uv_timer_start(&L->progress, on_timer, ms, ms);
	if (rc < 0)
		return dp_error_set(rc, "progress timer: %s", uv_strerror(rc));
	uv_unref((uv_handle_t *)&L->progress);
	return 0;
}

void lrn_progress_line(struct lrn *L, const char *end)
{
	double now = lrn_clock_mono(), eps = 0, avg = NAN, recent = NAN, secs = 0;
	uint64_t goal;
	size_t owners = 0;
	char goal_s[32], eta_s[32];

	DP_REQUIRE(L != NULL);
	goal = L->job.T > 0 ? lrn_state_goal(&L->job) : 0;
	for (size_t i = 0; i < L->job.N; i++) {
		owners += L->job.owners[i].connected && L->job.owners[i].hello;
		eps += L->job.owners[i].eps_spent;
	}
	if (L->job.first_query >= 0) {
		secs = now - L->job.first_query;
		if (secs > 0)
			avg = (double)(L->job.k_done - L->job.first_k) / secs;
	}
	if (now > L->prog_t)
		recent = (double)(L->job.k_done - L->prog_k) / (now - L->prog_t);
	L->prog_t = now;
	L->prog_k = L->job.k_done;
	if (goal > 0)
		snprintf(goal_s, sizeof(goal_s), "%llu", (unsigned long long)goal);
	else
		snprintf(goal_s, sizeof(goal_s), "?");
	if (goal > 0 && avg > 0)
		snprintf(eta_s, sizeof(eta_s), "%.0f",
			 L->job.k_done >= goal ? 0.0 : (double)(goal - L->job.k_done) / avg);
	else
		snprintf(eta_s, sizeof(eta_s), "-");
	if (end != NULL) {
		DP_INFO("learner", "summary end=%s k=%llu/%s secs=%.3f it_s_avg=%.4g owners=%zu/%zu "
			"eps_spent=%.6g", end, (unsigned long long)L->job.k_done, goal_s, secs,
			isnan(avg) ? 0.0 : avg, owners, L->job.N, eps);
		return;
	}
	DP_INFO("learner", "progress k=%llu/%s it_s=%.4g it_s_avg=%.4g eta_s=%s owners=%zu/%zu "
		"eps_spent=%.6g", (unsigned long long)L->job.k_done, goal_s,
		isnan(recent) ? 0.0 : recent, isnan(avg) ? 0.0 : avg, eta_s, owners, L->job.N, eps);
}

void lrn_progress_end(struct lrn *L, const char *end)
{
	DP_REQUIRE(L != NULL && end != NULL);
	if (L->progress_init)
		uv_timer_stop(&L->progress);
	lrn_progress_line(L, end);
}
