/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd: the privacy budget (docs/privacy.md §5, docs/ownerd.md §2).
 *
 * The privacy order of one answer, enforced by own_budget_begin() and
 * own_budget_commit() (one ticket open at a time):
 *   1. validate the query (dimension, finite theta, k >= 1) -- answer.c,
 *      before it calls here; a malformed query closes the connection;
 *   2. check -- a repeated k is refused (never fresh noise), a k below the
 *      last one that was never answered is a protocol error, and
 *      dp_ledger_check refuses an exhausted budget, all before anything is
 *      sampled;
 *   3. compute -- the caller's dp_query_answer with the CSPRNG, on a
 *      worker thread, with the eps_q of the ticket that step 4 charges;
 *   4. the charge -- durable before it returns: dp_ledger_charge syncs
 *      it, or (reserve-ahead, docs/ledger.md §9) dp_ledger_charge_ahead
 *      finds the share reserved, and synced, after the previous answer;
 *   5. release -- the client sends the Answer, never before 4 succeeded;
 *   6. settle (reserve-ahead) -- after the send, own_budget_settle records
 *      the answer and reserves the next share, synced while the learner
 *      serves the other owners.
 * A ledger I/O failure is final: `failed` is set and nothing is answered
 * again by this process. */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "common/core/error.h"
#include "common/core/log.h"
#include "common/core/noise.h"

#include "owner/budget.h"

static int fail(struct own_budget *b, uint64_t k, int err);

/* The ledger header binds owner and job.  A long job name is bound by its
 * hash (the header holds DP_LEDGER_IDENTITY_MAX bytes). */
static void identity(const struct own_budget *b, const char *job, char *out, size_t size)
{
	char hex[33];
	int n;

	n = snprintf(out, size, "owner=%s job=%s", b->cfg.owner_id, job);
	if (n >= 0 && (size_t)n < size && (size_t)n <= DP_LEDGER_IDENTITY_MAX)
		return;
	dp_ledgerset_job_hash(job, hex);
	snprintf(out, size, "owner=%s job-sha256=%s", b->cfg.owner_id, hex);
}

/* The one place a job's epsilon is split over K: the noise of every
 * answer is calibrated with this share and the ledger charges exactly it. */
static int share(const struct own_budget *b, double eps, uint64_t K, double *eps_q)
{
	if (b->cfg.eps_step > 0) {
		*eps_q = b->cfg.eps_step;
		return 0;
	}
	return dp_nano_share(eps, K, eps_q);
}

/* A double whose nano-epsilon (rounded down, as the ledger rounds a cap)
 * is exactly n: n / 1e9 can fall one ulp short of it. */
static double eps_of_nano(uint64_t n)
{
	double d = (double)n / 1e9;
	uint64_t got = 0;

	for (int i = 0; i < 4 && dp_nano_floor(d, &got) == 0 && got < n; i++)
		d = nextafter(d, INFINITY);
	return d;
}

static unsigned open_flags(const struct own_budget *b)
{
	return b->cfg.allow_inf ? DP_LEDGER_ALLOW_INF : 0;
}

/* Bring dpasync_owner_epsilon_spent/left and the lifetime gauges up to
 * date; *st receives the status they show. */
static void refresh_gauges(const struct own_budget *b, struct own_budget_status *st)
{
	own_budget_status(b, st);
	if (b->cfg.spent)
		dp_metrics_set(b->cfg.spent, st->spent);
	if (b->cfg.left)
		dp_metrics_set(b->cfg.left, st->left);
	if (b->cfg.life_cap)
		dp_metrics_set(b->cfg.life_cap, st->lifetime_cap);
	if (b->cfg.life_spent)
		dp_metrics_set(b->cfg.life_spent, st->lifetime_spent);
	if (b->cfg.life_left)
		dp_metrics_set(b->cfg.life_left, st->lifetime_left);
	if (b->cfg.life_rho)
		dp_metrics_set(b->cfg.life_rho, st->lifetime_rho);
	if (b->cfg.life_at_delta) {
		char d[32];
		const char *v[] = { d };

		snprintf(d, sizeof(d), "%.9g", st->lifetime_delta);
		dp_metrics_relabel(b->cfg.life_at_delta, v);
		dp_metrics_set(b->cfg.life_at_delta, st->lifetime_spent);
	}
}

/* The per-job gauges name the bound job (docs/operations.md §2).  A job
 * id the metrics cannot carry (not UTF-8) leaves them unlabelled. */
static void label_gauges(const struct own_budget *b, const char *job)
{
	const char *v[] = { job }, *none[] = { "" };
	struct dp_metric *g[] = { b->cfg.spent, b->cfg.left };

	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		if (g[i] != NULL && dp_metrics_relabel(g[i], v) == DP_EINVAL)
			dp_metrics_relabel(g[i], none);
}

/* The dataset's spending: the other jobs' and the bound job's, both
 * mechanisms (docs/ledger.md §8). */
static dp_zcdp_totals lifetime_totals(const struct own_budget *b)
{
	dp_zcdp_totals t = b->others_t, j;

	if (b->ledger != NULL) {
		dp_ledger_totals(b->ledger, &j);
		dp_zcdp_add(&t, &j);
	}
	return t;
}

/* Lifetime spent: the best valid epsilon at the lifetime delta, which is
 * the sum of the charges when every job is Laplace (dp_zcdp_best_nano). */
static uint64_t lifetime_spent_nano(const struct own_budget *b)
{
	dp_zcdp_totals t = lifetime_totals(b);
	uint64_t e = DP_NANO_INF;

	if (dp_zcdp_best_nano(&t, b->lifetime_delta, &e) < 0)
		return DP_NANO_INF;
	return e;
}

/* What a Laplace job can still spend under the lifetime cap: the cap less
 * the sum when every job is Laplace (dp_ledgerset_pure_left). */
static uint64_t lifetime_left_nano(const struct own_budget *b)
{
	dp_zcdp_totals t = lifetime_totals(b);

	return dp_ledgerset_pure_left(&t, b->lifetime_nano, b->lifetime_delta);
}

/* Is an answer of eps covered by the share reserved after the last one? */
static bool covers(const struct own_budget *b, double eps)
{
	uint64_t c;

	return !isinf(eps) && dp_nano_ceil(eps, &c) == 0 && c != 0 &&
	       c <= dp_ledger_reserved_nano(b->ledger);
}

/* A Gaussian answer's sampler slack: p coordinates of
 * DP_NOISE_DGAUSS_SLACK each (docs/noise.md §6 "Slack"). */
static double gauss_slack(const struct own_budget *b)
{
	return (double)b->p * DP_NOISE_DGAUSS_SLACK;
}

/* Does one more charge of eps_q (the ledger's unit: rho for a Gaussian
 * job, charged with its sampler's slack) fit under the lifetime cap: is
 * the dataset's bound with it still within the cap at the lifetime delta
 * (docs/ledger.md §8; the plain sum when every job is Laplace)? */
static bool lifetime_allows(const struct own_budget *b, double eps_q)
{
	dp_zcdp_totals spent, charge;
	uint64_t c;
	bool fits = false;

	if (b->lifetime_nano == DP_NANO_INF)
		return true;
	if (isinf(eps_q))
		return false;
	if (b->mech == DP_MECH_GAUSSIAN) {
		if (dp_zcdp_charge_gauss(eps_q, gauss_slack(b), &charge) < 0)
			return false;
	} else {
		if (dp_nano_ceil(eps_q, &c) < 0)
			return false;
		charge = dp_zcdp_charge_pure(c);
	}
	spent = lifetime_totals(b);
	return dp_zcdp_fits(&spent, &charge, b->lifetime_nano, b->lifetime_delta, &fits) == 0 &&
	       fits;
}

/* What this process's own ledger said job file `path` had spent when it
 * closed it, or NULL. */
static const struct own_budget_closed *closed_job(const struct own_budget *b, const char *path)
{
	for (size_t i = 0; i < b->n_closed; i++)
		if (strcmp(b->closed[i].path, path) == 0)
			return &b->closed[i];
	return NULL;
}

/* Spent by every job but `path` (NULL: none), as the directory says,
 * except that a job this process closed counts at least what it had
 * spent then: a job file removed, or replaced by an older copy, while the
 * daemon runs cannot give its budget back to this process (docs/ledger.md
 * §8). */
static uint64_t others_spent(const struct own_budget *b, const char *path)
{
	uint64_t sum = dp_ledgerset_spent_except(b->set, path);

	for (size_t i = 0; i < b->n_closed && sum != DP_NANO_INF; i++) {
		const dp_ledgerset_job *j = dp_ledgerset_find(b->set, b->closed[i].path);
		uint64_t disk = j ? j->spent_nano : 0;

		if ((path != NULL && strcmp(path, b->closed[i].path) == 0) ||
		    disk >= b->closed[i].spent_nano)
			continue;
		sum = dp_nano_add(sum - disk, b->closed[i].spent_nano);
	}
	return sum;
}

/* A sum t that counts `disk` for a job: count `kept` instead when it is
 * more (saturating). */
static void at_least(uint64_t *t, uint64_t disk, uint64_t kept)
{
	if (disk < kept && *t != DP_NANO_INF)
		*t = dp_nano_add(*t - disk, kept);
}

/* The other jobs' spending in both mechanisms, as others_spent counts it:
 * a job this process closed counts, field by field, at least what its own
 * ledger said then. */
static dp_zcdp_totals others_totals(const struct own_budget *b, const char *path)
{
	dp_zcdp_totals t = dp_ledgerset_totals_except(b->set, path);

	for (size_t i = 0; i < b->n_closed; i++) {
		const dp_ledgerset_job *j = dp_ledgerset_find(b->set, b->closed[i].path);
		const dp_zcdp_totals *c = &b->closed[i].totals;
		dp_zcdp_totals disk = { 0, 0, 0, 0 };

		if (path != NULL && strcmp(path, b->closed[i].path) == 0)
			continue;
		if (j != NULL)
			disk = j->totals;
		at_least(&t.eps_pure, disk.eps_pure, c->eps_pure);
		at_least(&t.rho_pure, disk.rho_pure, c->rho_pure);
		at_least(&t.rho_gauss, disk.rho_gauss, c->rho_gauss);
		at_least(&t.slack, disk.slack, c->slack);
	}
	return t;
}

/* The epsilon cap of job file `path` (docs/ledger.md §8 "Jobs and the
 * lifetime budget"): --epsilon, or what the lifetime cap leaves when that
 * is less, so that all K answers the learner planned for what this owner
 * has left can be given (docs/planner.md §1 "Budget left").  An existing
 * file keeps its cap: --epsilon, or a smaller one that the lifetime
 * explains (it left that much when the job began, and never more since);
 * any other cap is refused by dp_ledger_open, as before.  Peer mode's fixed
 * per-wake-up share keeps --epsilon.  The lifetime cap is the directory's
 * (docs/ledger.md §11), and the other jobs count what others_spent does. */
static double job_cap(const struct own_budget *b, const char *path)
{
	const dp_ledgerset_job *e = dp_ledgerset_find(b->set, path);
	uint64_t eps_nano, left;
	dp_zcdp_totals others_t;

	if (b->cfg.eps_step > 0 || isinf(b->cfg.epsilon) || b->lifetime_nano == DP_NANO_INF ||
	    dp_nano_floor(b->cfg.epsilon, &eps_nano) < 0)
		return b->cfg.epsilon;
	/* A Gaussian job's file holds a rho cap: gauss_share keeps it. */
	if (e != NULL && e->unit == DP_LEDGER_UNIT_RHO)
		return b->cfg.epsilon;
	others_t = others_totals(b, path);
	left = dp_ledgerset_pure_left(&others_t, b->lifetime_nano, b->lifetime_delta);
	if (e != NULL)
		return e->cap_nano < eps_nano && e->cap_nano >= left ? eps_of_nano(e->cap_nano)
								     : b->cfg.epsilon;
	return left < eps_nano && left > 0 ? eps_of_nano(left) : b->cfg.epsilon;
}

/* Remember what the bound job's ledger says it spent, before closing it. */
static int note_closed(struct own_budget *b)
{
	const char *path = dp_ledger_path(b->ledger);
	struct own_budget_closed *c = (struct own_budget_closed *)closed_job(b, path), *v;

	if (c == NULL) {
		v = realloc(b->closed, (b->n_closed + 1) * sizeof(*v));
		if (v == NULL)
			return dp_error_set(DP_ENOMEM, "ledger: out of memory");
		b->closed = v;
		c = &v[b->n_closed];
		c->path = strdup(path);
		if (c->path == NULL)
			return dp_error_set(DP_ENOMEM, "ledger: out of memory");
		b->n_closed++;
	}
	c->spent_nano = dp_ledger_spent_nano(b->ledger);
	dp_ledger_totals(b->ledger, &c->totals);
	return 0;
}

uint64_t own_budget_cap_for(const struct own_budget *b, uint64_t K)
{
	DP_REQUIRE(b != NULL);
	return b->cfg.answers_cap ? b->cfg.answers_cap : K;
}

/* The lifetime cap in force (docs/ledger.md §11): the directory's; a
 * configured one above it is refused, one below it lowers it for good. */
static int settle_cap(struct own_budget *b, uint64_t want)
{
	uint64_t rec;
	char reason[160];
	int r;

	b->lifetime_nano = want;
	b->lifetime_from = "lifetime-epsilon, which the first start records";
	if (b->set == NULL || dp_ledgerset_lifetime_get(b->set, &rec) != 0)
		return 0;   /* a check of what the first start will record */
	b->lifetime_recorded = true;
	b->lifetime_nano = rec;
	b->lifetime_delta = dp_ledgerset_lifetime_delta(b->set);
	b->lifetime_from = "recorded in the directory";
	if (!b->cfg.lifetime_given || want == rec)
		return 0;
	if (want > rec)
		return dp_error_set(DP_EINVAL, "--lifetime-epsilon %.9g is above the lifetime cap "
				    "%.9g that the ledger directory %s records: raising it is the data "
				    "owner's decision, taken with `dpasync ledger raise-lifetime %s "
				    "--to %.9g --reason TEXT`; or leave lifetime-epsilon out to use the "
				    "recorded cap (docs/ledger.md §11)", dp_nano_to_eps(want),
				    dp_nano_to_eps(rec), b->cfg.path, b->cfg.path,
				    dp_nano_to_eps(want));
	b->lifetime_nano = want;
	b->lifetime_from = "lifetime-epsilon, below the recorded cap, which the start lowers";
	if (b->cfg.check_only)
		return 0;
	b->lifetime_from = "lowered by lifetime-epsilon at this start, recorded";
	snprintf(reason, sizeof(reason), "lifetime-epsilon %.9g given at the start, below the "
		 "recorded %.9g", dp_nano_to_eps(want), dp_nano_to_eps(rec));
	r = dp_ledgerset_lifetime_set(b->set, want, 0, "ownerd", reason);
	if (r == 0)
		DP_INFO("ledger", "lifetime cap lowered dir=%s from=%.9g to=%.9g (recorded)",
			b->cfg.path, dp_nano_to_eps(rec), dp_nano_to_eps(want));
	return r;
}

/* The lifetime delta in force, against the directory's record as the cap
 * is (docs/ownerd.md "Mechanisms and delta"): not given, the recorded one;
 * given and lower, lowered for good (recorded); given and higher, refused,
 * since raising it, like raising the cap, is the data owner's decision. */
static int settle_delta(struct own_budget *b)
{
	double want = b->cfg.lifetime_delta, rec;
	char reason[160];
	int r;

	if (!b->lifetime_recorded) {
		b->lifetime_delta = want;   /* what the first start records */
		return 0;
	}
	rec = dp_ledgerset_lifetime_delta(b->set);
	b->lifetime_delta = rec;
	if (!b->cfg.lifetime_delta_given || want == rec)
		return 0;
	if (want > rec)
		return dp_error_set(DP_EINVAL, "--lifetime-delta %g is above the lifetime delta %g "
				    "that the ledger directory %s records: raising it is the data "
				    "owner's decision, not taken at a start (docs/ledger.md §11); leave "
				    "lifetime-delta out to use the recorded delta", want, rec,
				    b->cfg.path);
	b->lifetime_delta = want;
	if (b->cfg.check_only)
		return 0;
	snprintf(reason, sizeof(reason), "lifetime-delta %g given at the start, below the "
		 "recorded %g", want, rec);
	r = dp_ledgerset_lifetime_set_delta(b->set, want, 0, "ownerd", reason);
	if (r == 0)
		DP_INFO("ledger", "lifetime delta lowered dir=%s from=%g to=%g (recorded)",
			b->cfg.path, rec, want);
	return r;
}

int own_budget_open(struct own_budget *b, const struct own_budget_config *cfg)
{
	struct own_budget_status st;
	struct dp_ledgerset_init init;
	uint64_t want = DP_NANO_INF;
	int r;

	DP_REQUIRE(b != NULL && cfg != NULL && cfg->path != NULL && cfg->owner_id != NULL);
	memset(b, 0, sizeof(*b));
	b->cfg = *cfg;
	b->lifetime_nano = DP_NANO_INF;
	if (!isinf(cfg->lifetime)) {
		r = dp_nano_floor(cfg->lifetime, &want);
		if (r < 0)
			return r;
		if (want == 0)
			return dp_error_set(DP_EINVAL, "--lifetime-epsilon %g is below 1 nano-epsilon",
					    cfg->lifetime);
	}
	init.lifetime_nano = want;
	init.program = "ownerd";
	init.reason = NULL;
	init.lifetime_delta = cfg->lifetime_delta;   /* 0: pure epsilon-DP (docs/ledger.md §11) */
	if (cfg->check_only) {
		/* Verify what exists, create nothing, take no lock. */
		r = access(cfg->path, F_OK) != 0 ? 0 :
			dp_ledgerset_open(cfg->path, cfg->owner_id, DP_LEDGERSET_READONLY, NULL,
					  &b->set);
	} else {
		r = dp_ledgerset_open(cfg->path, cfg->owner_id, 0, &init, &b->set);
	}
	if (r == 0)
		r = settle_cap(b, want);
	if (r == 0)
		r = settle_delta(b);
	if (r < 0) {
		dp_ledgerset_close(b->set);
		b->set = NULL;
		return r;   /* the detail names the file */
	}
	b->others_nano = b->set ? others_spent(b, NULL) : 0;
	if (b->set != NULL)
		b->others_t = others_totals(b, NULL);
	label_gauges(b, "");
	refresh_gauges(b, &st);
	DP_INFO("ledger", "opened dir=%s jobs=%zu lifetime_spent=%.9g lifetime_cap=%.9g", cfg->path,
		b->set ? dp_ledgerset_count(b->set) : 0, st.lifetime_spent, st.lifetime_cap);
	return 0;
}

void own_budget_describe(const struct own_budget *b, char *buf, size_t size)
{
	struct own_budget_status st;

	DP_REQUIRE(b != NULL && buf != NULL && size > 0);
	own_budget_status(b, &st);
	/* The last figure is what a new job's Hello would say and its ledger
	 * be capped at (docs/ledger.md §8 "A new job's cap is what is left"). */
	snprintf(buf, size, "ledger %s: %s%zu jobs, format %u; lifetime cap %.9g (%s), spent "
		 "%.9g, left %.9g; a new job's epsilon %.9g", b->cfg.path,
		 b->set ? "" : "not created yet, ", b->set ? dp_ledgerset_count(b->set) : 0,
		 b->set ? dp_ledgerset_format(b->set) : DP_LEDGERSET_FORMAT, st.lifetime_cap,
		 b->lifetime_from ? b->lifetime_from : "", st.lifetime_spent, st.lifetime_left,
		 fmin(b->cfg.epsilon, st.lifetime_left));
}

void own_budget_close(struct own_budget *b)
{
	DP_REQUIRE(b != NULL);
	dp_ledger_close(b->ledger);
	b->ledger = NULL;
	b->gen++;
	dp_ledgerset_close(b->set);
	b->set = NULL;
	for (size_t i = 0; i < b->n_closed; i++)
		free(b->closed[i].path);
	free(b->closed);
	b->closed = NULL;
	b->n_closed = 0;
}

/* Close the bound job's ledger (every record is durable) and take what it
 * spent into the other jobs' total. */
static int unbind(struct own_budget *b)
{
	int r;

	DP_INFO("ledger", "job %s closed answers=%llu spent=%.9g unit=%s", b->job,
		(unsigned long long)dp_ledger_answers(b->ledger), dp_ledger_spent(b->ledger),
		dp_ledger_unit(b->ledger) == DP_LEDGER_UNIT_RHO ? "rho" : "epsilon");
	r = note_closed(b);
	if (r < 0)
		return r;
	dp_ledger_close(b->ledger);
	b->ledger = NULL;
	b->gen++;
	b->job[0] = '\0';
	b->K = 0;
	b->mech = DP_MECH_LAPLACE;
	r = dp_ledgerset_rescan(b->set);
	if (r < 0)
		return r;
	b->others_nano = others_spent(b, NULL);
	b->others_t = others_totals(b, NULL);
	return 0;
}

int own_budget_bind(struct own_budget *b, const char *job, uint64_t offered)
{
	return own_budget_bind_mech(b, job, offered, DP_MECH_LAPLACE, 0);
}

/* A job's mechanism never changes: its ledger's unit says which it was. */
static int same_unit(const struct own_budget *b, const char *job, const char *path,
		     dp_mech mech)
{
	const dp_ledgerset_job *e = dp_ledgerset_find(b->set, path);
	bool rho = mech == DP_MECH_GAUSSIAN;

	if (e == NULL || (e->unit == DP_LEDGER_UNIT_RHO) == rho)
		return 0;
	DP_ERROR("ledger", "cannot open the ledger of job %s: it holds %s answers (nano-%s) but "
		 "the learner now asks for %s answers; a job's mechanism never changes: run it "
		 "with learnerd --mechanism %s, or under a new job name", job,
		 rho ? "Laplace" : "Gaussian", rho ? "epsilon" : "rho", rho ? "Gaussian" : "Laplace",
		 rho ? "laplace" : "gaussian");
	return dp_error_set(DP_EINVAL, "ledger %s is of the other mechanism", path);
}

/* A Gaussian job's rho cap and share for its epsilon cap at cfg.delta
 * (docs/zcdp.md §7): K charges of ceil-nano(rho_q) fit the cap, which the
 * ledger rounds down.  An existing ledger keeps its own rho cap when it is
 * not above this one (it was made when the lifetime left less); its share
 * is then that cap's, as at its creation. */
static int gauss_share(const struct own_budget *b, const char *path, double eps, uint64_t K,
		       double *cap_rho, double *rho_q)
{
	const dp_ledgerset_job *e = dp_ledgerset_find(b->set, path);
	uint64_t slack, want;
	int r;

	r = dp_zcdp_cap(eps, b->cfg.delta, K, b->p, DP_NOISE_DGAUSS_SLACK, DP_NOISE_DGAUSS_TAIL,
			cap_rho, &slack);
	/* Peer mode: the cap of its plan (dp_compose_plan_gauss, the same
	 * dp_zcdp_cap over its wake-ups and warm-start steps) and its fixed
	 * per-wake-up share; a ledger of another cap is refused by the open,
	 * never adopted (docs/peer-agents.md "Privacy"). */
	if (b->cfg.eps_step > 0) {
		if (r == 0)
			*rho_q = b->cfg.eps_step;
		return r;
	}
	if (r == 0)
		r = dp_zcdp_share_cap(*cap_rho, K, eps, b->cfg.delta, rho_q);
	if (r < 0 || isinf(*cap_rho) || e == NULL || e->unit != DP_LEDGER_UNIT_RHO ||
	    e->cap_nano == DP_NANO_INF || dp_nano_floor(*cap_rho, &want) < 0 ||
	    e->cap_nano >= want)
		return r;
	*cap_rho = eps_of_nano(e->cap_nano);
	return dp_nano_share(*cap_rho, K, rho_q);
}

int own_budget_bind_mech(struct own_budget *b, const char *job, uint64_t offered, dp_mech mech,
			 size_t p)
{
	struct own_budget_status st;
	uint64_t K;
	char ident[DP_LEDGER_IDENTITY_MAX + 1], *path;
	double eps_q, cap, cap_rho = 0;
	bool gauss = mech == DP_MECH_GAUSSIAN;
	int r;

	DP_REQUIRE(b != NULL && job != NULL && offered >= 1 && !b->ticket_open &&
		   (!gauss || p >= 1));
	/* Any K keeps epsilon: each answer is (epsilon/K)-DP and at most K are
	 * given (docs/privacy.md), so the learner may propose it. */
	K = own_budget_cap_for(b, offered);
	identity(b, job, ident, sizeof(ident));
	if (b->ledger && strcmp(b->job, job) == 0) {
		if (b->mech != mech) {
			DP_ERROR("ledger", "job %s is bound with %s answers but the learner now "
				 "asks for %s ones; a job's mechanism never changes", job,
				 dp_query_mech_name(b->mech), dp_query_mech_name(mech));
			return DP_EINVAL;
		}
		if (b->K != K) {
			DP_ERROR("ledger", "ledger of job %s has answers cap %llu but the learner "
				 "now asks %llu; the caps of a job never change", job,
				 (unsigned long long)b->K, (unsigned long long)K);
			return DP_EINVAL;
		}
		return 0;
	}
	if (b->ledger) {
		r = unbind(b);
		if (r < 0) {
			DP_ERROR("ledger", "cannot read the ledger directory %s: %s", b->cfg.path,
				 dp_error_detail(r));
			return fail(b, 0, r);
		}
	}
	path = dp_ledgerset_job_path(b->set, job);
	if (path == NULL)
		return DP_ENOMEM;
	r = same_unit(b, job, path, mech);
	if (r < 0) {
		free(path);
		return r;
	}
	b->p = p;
	cap = job_cap(b, path);
	r = gauss ? gauss_share(b, path, cap, K, &cap_rho, &eps_q) : share(b, cap, K, &eps_q);
	if (r < 0) {
		DP_ERROR("ledger", "epsilon %g%s cannot be split over K=%llu %s answers: %s", cap,
			 gauss ? " at --delta" : "", (unsigned long long)K,
			 dp_query_mech_name(mech), dp_error_detail(r));
		free(path);
		return r;
	}
	if (gauss)
		r = dp_ledger_open_gauss(path, cap_rho, b->cfg.delta, gauss_slack(b), K, ident,
					 open_flags(b), &b->ledger);
	else
		r = dp_ledger_open(path, cap, K, ident, open_flags(b), &b->ledger);
	if (r < 0) {
		DP_ERROR("ledger", "cannot open the ledger of job %s: %s", job,
			 r == DP_ESTATE ? "in use by another process" : dp_error_detail(r));
		free(path);
		return r;
	}
	/* A job this process closed must hold what it held then: less is a
	 * file replaced while the daemon ran (a rollback, docs/ledger.md §1). */
	if (closed_job(b, path) != NULL &&
	    dp_ledger_spent_nano(b->ledger) < closed_job(b, path)->spent_nano) {
		r = dp_error_set(DP_ECORRUPT, "ledger %s holds less than this ownerd recorded in it "
				 "(%.9g, not %.9g): the file was replaced while the daemon ran",
				 path, dp_ledger_spent(b->ledger),
				 dp_nano_to_eps(closed_job(b, path)->spent_nano));
		DP_ERROR("ledger", "cannot open the ledger of job %s: %s", job, dp_error_detail(r));
		dp_ledger_close(b->ledger);
		b->ledger = NULL;
		free(path);
		return r;
	}
	/* What this job spent before (a resumed job) is in its own ledger. */
	b->others_nano = others_spent(b, path);
	b->others_t = others_totals(b, path);
	snprintf(b->job, sizeof(b->job), "%s", job);
	label_gauges(b, job);
	b->K = K;
	b->mech = mech;
	b->job_eps = cap;
	b->eps_q = eps_q;
	refresh_gauges(b, &st);
	if (gauss)
		DP_INFO("ledger", "bound path=%s identity=\"%s\" mechanism=gaussian epsilon=%g "
			"delta=%g rho=%.9g K=%llu rho_q=%.9g answers=%llu lifetime_spent=%.9g "
			"lifetime_left=%.9g", path, ident, cap, b->cfg.delta, cap_rho,
			(unsigned long long)K, eps_q, (unsigned long long)st.answers,
			st.lifetime_spent, st.lifetime_left);
	else
		DP_INFO("ledger", "bound path=%s identity=\"%s\" epsilon=%g K=%llu eps_q=%.9g "
			"answers=%llu lifetime_spent=%.9g lifetime_left=%.9g", path, ident, cap,
			(unsigned long long)K, eps_q, (unsigned long long)st.answers,
			st.lifetime_spent, st.lifetime_left);
	free(path);
	return 0;
}

int own_budget_job_mech(const struct own_budget *b, const char *job, dp_mech *mech)
{
	const dp_ledgerset_job *e;
	char *path;

	DP_REQUIRE(b != NULL && job != NULL && mech != NULL);
	if (b->set == NULL)
		return 0;
	path = dp_ledgerset_job_path(b->set, job);
	if (path == NULL)
		return DP_ENOMEM;
	e = dp_ledgerset_find(b->set, path);
	free(path);
	if (e == NULL)
		return 0;
	*mech = e->unit == DP_LEDGER_UNIT_RHO ? DP_MECH_GAUSSIAN : DP_MECH_LAPLACE;
	return 1;
}

bool own_budget_left(const struct own_budget *b)
{
	uint64_t last = 0;

	DP_REQUIRE(b != NULL);
	if (b->ledger == NULL || b->K == 0 || b->failed || dp_ledger_failed(b->ledger))
		return false;
	if (dp_ledger_reserved_nano(b->ledger) != 0)
		return true;   /* the next answer's share is held */
	if (dp_ledger_answers(b->ledger) >= b->K)
		return false;
	dp_ledger_last_k(b->ledger, &last);
	if (last == UINT64_MAX)
		return false;
	return dp_ledger_check(b->ledger, last + 1, b->eps_q) == 0 &&
	       lifetime_allows(b, b->eps_q);
}

bool own_budget_lifetime_blocks(const struct own_budget *b)
{
	uint64_t last = 0;

	DP_REQUIRE(b != NULL);
	if (b->ledger == NULL || b->K == 0 || b->failed || dp_ledger_failed(b->ledger) ||
	    dp_ledger_reserved_nano(b->ledger) != 0 || dp_ledger_answers(b->ledger) >= b->K)
		return false;
	dp_ledger_last_k(b->ledger, &last);
	if (last == UINT64_MAX || dp_ledger_check(b->ledger, last + 1, b->eps_q) != 0)
		return false;
	return !lifetime_allows(b, b->eps_q);
}

bool own_budget_lifetime_hit(const struct own_budget *b)
{
	DP_REQUIRE(b != NULL);
	return b->lifetime_hit;
}

bool own_budget_lifetime_spent(const struct own_budget *b)
{
	DP_REQUIRE(b != NULL);
	if (b->lifetime_nano == DP_NANO_INF)
		return false;
	return lifetime_left_nano(b) == 0;
}

bool own_budget_refuses_job(const struct own_budget *b, const char *job)
{
	char *path;
	bool known;

	DP_REQUIRE(b != NULL && job != NULL);
	if (!own_budget_lifetime_spent(b))
		return false;
	if (b->ledger != NULL && strcmp(b->job, job) == 0)
		return false;
	/* A job file of the directory (found at open or at the last rescan,
	 * the files the lifetime total counts).  Out of memory: not a reason
	 * to leave; binding reports it. */
	path = dp_ledgerset_job_path(b->set, job);
	if (path == NULL)
		return false;
	known = dp_ledgerset_find(b->set, path) != NULL;
	free(path);
	return !known;
}

/* What a Gaussian job spent, as epsilon at its delta (dp_zcdp_best_eps of
 * its totals), so that no rho is ever shown where an epsilon is expected
 * (docs/ownerd.md "Mechanisms and delta"). */
static double gauss_spent_eps(const dp_zcdp_totals *t, double delta)
{
	double e = INFINITY;

	if (dp_zcdp_best_eps(t, delta, &e) < 0)
		return INFINITY;
	return e;
}

/* The nano amount left under a cap, as a double (INFINITY: no cap). */
static double nano_left(uint64_t cap, uint64_t spent)
{
	if (cap == DP_NANO_INF)
		return INFINITY;
	return spent >= cap ? 0.0 : dp_nano_to_eps(cap - spent);
}

void own_budget_status(const struct own_budget *b, struct own_budget_status *out)
{
	dp_zcdp_totals t;
	uint64_t spent;
	double held;

	DP_REQUIRE(b != NULL && out != NULL);
	memset(out, 0, sizeof(*out));
	spent = lifetime_spent_nano(b);
	t = lifetime_totals(b);
	out->lifetime_cap = dp_nano_to_eps(b->lifetime_nano);
	out->lifetime_spent = dp_nano_to_eps(spent);
	out->lifetime_left = dp_nano_to_eps(lifetime_left_nano(b));
	out->lifetime_rho = dp_nano_to_eps(dp_nano_add(t.rho_pure, t.rho_gauss));
	out->lifetime_delta = b->lifetime_delta;
	out->job = "";
	out->job_left = fmin(b->cfg.epsilon, out->lifetime_left);
	if (b->ledger == NULL) {
		size_t n = b->set ? dp_ledgerset_count(b->set) : 0;

		out->left = b->cfg.epsilon;
		/* The newest job of the directory: after a restart the learner
		 * of that job plans with what its ledger says (the Hello). */
		if (n > 0) {
			const dp_ledgerset_job *j = dp_ledgerset_at(b->set, n - 1);

			if (strncmp(j->job, "job=", 4) == 0 && j->unit == DP_LEDGER_UNIT_RHO) {
				/* A Gaussian job: its epsilon at its delta,
				 * against --epsilon; its rho left. */
				out->job = j->job + 4;
				out->answers = j->answers;
				out->cap = j->answers_cap;
				out->gaussian = true;
				out->rho_left = nano_left(j->cap_nano, j->spent_nano);
				out->job_left = fmin(fmax(b->cfg.epsilon -
							  gauss_spent_eps(&j->totals, j->delta), 0),
						     out->lifetime_left);
			} else if (strncmp(j->job, "job=", 4) == 0) {
				out->job = j->job + 4;
				out->answers = j->answers;
				out->cap = j->answers_cap;
				out->job_left = fmin(nano_left(j->cap_nano, j->spent_nano),
						     out->lifetime_left);
			}
		}
		return;
	}
	out->job = b->job;
	out->bound = true;
	out->answers = dp_ledger_answers(b->ledger);
	out->cap = b->K;
	/* A share reserved after the last answer (docs/ledger.md §9) counts as
	 * spent, yet the next answer uses it: it is still there to spend. */
	held = dp_nano_to_eps(dp_ledger_reserved_nano(b->ledger));
	if (dp_ledger_unit(b->ledger) == DP_LEDGER_UNIT_RHO) {
		/* Gaussian: epsilon at the job's delta, never rho; what is
		 * left in rho for the Hello (docs/protocol.md §5 "Mechanisms"). */
		dp_ledger_totals(b->ledger, &t);
		out->gaussian = true;
		out->spent = gauss_spent_eps(&t, dp_ledger_delta(b->ledger));
		out->left = fmax(b->job_eps - out->spent, 0);
		out->rho_left = dp_ledger_left(b->ledger) + held;
		out->job_left = fmin(out->left, out->lifetime_left);
		return;
	}
	out->spent = dp_ledger_spent(b->ledger);
	out->left = dp_ledger_left(b->ledger);
	out->job_left = fmin(out->left + held, out->lifetime_left + held);
}

/* The ledger cannot be trusted any more (I/O failure, or a record that no
 * longer verifies): refuse everything from now on. */
static int fail(struct own_budget *b, uint64_t k, int err)
{
	struct own_budget_status st;

	DP_ERROR("ledger", "ledger %s failed k=%llu: %s; no further answers, stopping",
		 b->cfg.path, (unsigned long long)k, dp_error_detail(err));
	b->failed = true;
	refresh_gauges(b, &st);
	return DP_EIO;
}

/* A ledger error while checking or charging: a failure is permanent, the
 * rest are refusals (nothing was written). */
static int ledger_error(struct own_budget *b, uint64_t k, int r)
{
	if (r == DP_EIO || r == DP_ECORRUPT)
		return fail(b, k, r);
	return r;
}

int own_budget_begin(struct own_budget *b, uint64_t k, struct own_budget_ticket *t)
{
	return own_budget_begin_eps(b, k, b->eps_q, t);
}

int own_budget_begin_eps(struct own_budget *b, uint64_t k, double eps,
			 struct own_budget_ticket *t)
{
	uint64_t last = 0;
	int r;

	DP_REQUIRE(b != NULL && b->ledger != NULL && k >= 1 && t != NULL && !b->ticket_open);
	if (b->failed)
		return DP_EIO;

	/* 2. check, before anything is computed or sampled */
	dp_ledger_last_k(b->ledger, &last);
	if (k <= last) {
		r = dp_ledger_lookup(b->ledger, k, NULL);
		if (r == 0)
			return DP_ESTATE;   /* answered before: never fresh noise */
		if (r == DP_ENOENT)
			return dp_error_set(DP_EPROTO, "query k=%llu is not above the last answered "
					    "k=%llu", (unsigned long long)k,
					    (unsigned long long)last);
		return fail(b, k, r);
	}
	b->lifetime_hit = false;
	r = dp_ledger_check(b->ledger, k, eps);
	if (r < 0)
		return ledger_error(b, k, r);
	/* The dataset's lifetime cap, over every job (docs/ledger.md §8): the
	 * other jobs' totals are fixed while this one is bound.  A share held
	 * for this answer was counted when it was reserved. */
	if (!covers(b, eps) && !lifetime_allows(b, eps)) {
		b->lifetime_hit = true;
		return dp_error_set(DP_EBUDGET, "lifetime budget %.9g spent",
				    dp_nano_to_eps(b->lifetime_nano));
	}

	/* 3. is the caller's, with exactly the share that step 4 charges */
	t->k = k;
	t->eps_q = eps;
	b->ticket_eps = eps;
	b->ticket_open = true;
	return 0;
}

int own_budget_commit(struct own_budget *b, struct own_budget_ticket *t,
		      struct own_budget_status *after)
{
	int r;

	DP_REQUIRE(b != NULL && b->ledger != NULL && t != NULL && after != NULL &&
		   b->ticket_open && t->eps_q == b->ticket_eps);
	b->ticket_open = false;
	if (b->failed)
		return DP_EIO;

	if (!covers(b, t->eps_q) && !lifetime_allows(b, t->eps_q)) {
		b->lifetime_hit = true;
		return dp_error_set(DP_EBUDGET, "lifetime budget %.9g spent",
				    dp_nano_to_eps(b->lifetime_nano));
	}
	/* 4. durable charge: synced before it returns, or covered by the
	 * share reserved and synced after the previous answer */
	if (b->cfg.reserve_ahead) {
		bool covered;

		r = dp_ledger_charge_ahead(b->ledger, t->k, t->eps_q, &covered);
	} else {
		r = dp_ledger_charge(b->ledger, t->k, t->eps_q, NULL);
	}
	if (r < 0)
		return ledger_error(b, t->k, r);

	/* 5. is the caller's: only now may the answer be released */
	refresh_gauges(b, after);
	return 0;
}

int own_budget_settle(struct own_budget *b, struct own_budget_sync *sync)
{
	struct own_budget_status st;
	uint64_t seq;
	double share;
	int r;

	DP_REQUIRE(b != NULL && sync != NULL && !b->ticket_open);
	memset(sync, 0, sizeof(*sync));
	if (!b->cfg.reserve_ahead || b->ledger == NULL)
		return 0;
	if (b->failed)
		return DP_EIO;
	/* The next share only if the lifetime cap allows it too (the job's
	 * caps are the ledger's to check). */
	share = lifetime_allows(b, b->eps_q) ? b->eps_q : 0;
	r = dp_ledger_settle_write(b->ledger, share, &seq);
	if (r < 0)
		return ledger_error(b, 0, r);
	refresh_gauges(b, &st);
	if (seq == 0)
		return 0;
	sync->path = strdup(dp_ledger_path(b->ledger));
	if (sync->path == NULL) {
		/* Not synced now: the next commit syncs it before it counts. */
		DP_WARN("ledger", "no memory to sync the reservation off the loop");
		return 0;
	}
	sync->seq = seq;
	sync->gen = b->gen;
	return 0;
}

int own_budget_synced(struct own_budget *b, struct own_budget_sync *sync, int err)
{
	int r = 0;

	DP_REQUIRE(b != NULL && sync != NULL && sync->path != NULL);
	if (sync->gen != b->gen || b->ledger == NULL) {
		/* That job's ledger is closed; what this sync wrote was never
		 * needed by an answer (docs/ledger.md §9). */
		if (err != 0)
			DP_WARN("ledger", "sync of closed ledger %s failed: %s", sync->path,
				strerror(err));
	} else if (!b->failed) {   /* (failed: already reported and stopping) */
		r = dp_ledger_synced(b->ledger, sync->seq, err);
		if (r < 0)
			r = ledger_error(b, 0, r);
	}
	free(sync->path);
	sync->path = NULL;
	return r;
}

void own_budget_abandon(struct own_budget *b, struct own_budget_ticket *t)
{
	DP_REQUIRE(b != NULL && t != NULL && b->ticket_open);
	b->ticket_open = false;
}
