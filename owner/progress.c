/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd: the periodic summary line (docs/ownerd.md "Logs").
 *
 * The per-answer line is debug; at info an owner writes one summary every
 * --progress-every seconds and one at exit, so a long job's log stays
 * short.  The timer is unreferenced: it never keeps the loop alive, and
 * the shutdown's walk over the loop closes it. */
#include "common/core/error.h"
#include "common/core/log.h"

#include "owner/own.h"

static void on_timer(uv_timer_t *t)
{
	own_progress_line(t->data, false);
}

int own_progress_start(struct own_progress *p, uv_loop_t *loop, double every,
		       const struct own_budget *budget, const struct own_metrics *m)
{
	uint64_t ms;
	int r;

	DP_REQUIRE(p != NULL && loop != NULL && budget != NULL && m != NULL && every >= 0);
	p->budget = budget;
	p->m = m;
	if (every == 0)
		return 0;
	ms = every * 1000.0 < 1.0 ? 1 : (uint64_t)(every * 1000.0);
	uv_timer_init(loop, &p->timer);
	p->timer.data = p;
	r = uv_timer_start(&p->timer, on_timer, ms, ms);
	if (r < 0)
		return dp_error_set(r, "progress timer: %s", uv_strerror(r));
	uv_unref((uv_handle_t *)&p->timer);
	return 0;
}

void own_progress_line(const struct own_progress *p, bool final)
{
	struct own_budget_status st;

	DP_REQUIRE(p != NULL && p->budget != NULL);
	own_budget_status(p->budget, &st);
	/* spent and left are the bound job's (0 and --epsilon while none is
	 * bound, e.g. after a refused Welcome); the dataset's lifetime figure
	 * says what the directory holds whatever happened to this job. */
	DP_INFO("owner", "summary%s answers=%.0f refusals=%.0f ticks=%.0f skipped=%.0f "
		"ledger_answers=%llu/%llu spent=%.9g left=%.9g connected=%.0f "
		"lifetime_spent=%.9g",
		final ? " final" : "", dp_metrics_value(p->m->answers),
		dp_metrics_value(p->m->refusals), dp_metrics_value(p->m->ticks),
		dp_metrics_value(p->m->ticks_skipped), (unsigned long long)st.answers,
		(unsigned long long)st.cap, st.spent, st.left, dp_metrics_value(p->m->connected),
		st.lifetime_spent);
}
