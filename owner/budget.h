/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd: the privacy budget, the one owner of the ledger (docs/privacy.md §5,
 * docs/ledger.md, docs/ownerd.md).
 *
 * The bottom of the daemon: it calls only common/, never client, answer,
 * clock or main.  Everything the daemon knows about epsilon goes through
 * here: the ledger is opened and verified here (at startup when the file
 * exists, else at the first Welcome), the per-answer share eps_q is
 * computed here and only here, and an answer is charged only inside
 * own_budget_commit(), for a ticket own_budget_begin() opened after its
 * checks, with the share that ticket fixed.  The gauges
 * dpasync_owner_epsilon_spent/left are kept current from here.
 *
 * A ledger failure (a write or sync that failed, a record that no longer
 * verifies) is permanent: from then on nothing is answered. */
#ifndef OWN_BUDGET_H
#define OWN_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/core/ledger.h"
#include "common/core/ledgerset.h"
#include "common/core/query.h"
#include "common/core/zcdp.h"
#include "common/net/metrics.h"

/* The refusal reason when the lifetime budget, not the job's, is spent. */
#define OWN_REFUSE_LIFETIME "lifetime budget spent"
/* Longest job name kept (the protocol's string limit). */
#define OWN_JOB_MAX 256

/* What the budget is made of; the strings must outlive the budget. */
struct own_budget_config {
	const char *path;           /* --ledger: the directory of per-job ledgers */
	double epsilon;             /* --epsilon, the cap of each job; INFINITY only with allow_inf */
	double lifetime;            /* --lifetime-epsilon, the cap over all jobs of the dataset:
				       the cap a directory that records none yet
				       records (docs/ledger.md §11) */
	bool lifetime_given;        /* lifetime was set by the operator: above the
				       directory's recorded cap it is refused, below
				       it it lowers the cap (recorded); else the
				       recorded cap is used as it is */
	double lifetime_delta;      /* the lifetime delta (docs/ownerd.md "Mechanisms and
				       delta"): --lifetime-delta, else --delta; what a
				       directory that records none yet records */
	double delta;               /* --delta: a Gaussian job's delta, at which its
				       ledger is shared and its spending reported
				       (docs/ownerd.md "Mechanisms and delta") */
	bool lifetime_delta_given;  /* --lifetime-delta was set: below the recorded
				       delta it lowers it (recorded), above it it is
				       refused; else the recorded delta is used */
	uint64_t answers_cap;       /* --answers-cap; 0 = the K of the first Welcome */
	bool allow_inf;             /* --allow-no-noise */
	bool reserve_ahead;         /* --reserve-ahead: commit may use the share reserved
				       after the previous answer; own_budget_settle
				       after each send (docs/ledger.md §9) */
	bool check_only;            /* --check-config: read only, create nothing */
	const char *owner_id;       /* CN of our certificate */
	double eps_step;            /* 0: the share is epsilon split equally over K
				       (dp_nano_share); > 0: peer mode's
				       per-wake-up share, fixed by the caller
				       (docs/peer-agents.md "Privacy"), in rho
				       for a Gaussian job (whose rho cap is then
				       dp_zcdp_cap's for epsilon, never an
				       existing ledger's) */
	struct dp_metric *spent;    /* dpasync_owner_epsilon_spent (may be NULL); when
				       labelled, its one label (job_id) follows the
				       bound job */
	struct dp_metric *left;     /* dpasync_owner_epsilon_left (likewise) */
	struct dp_metric *life_cap; /* dpasync_owner_lifetime_epsilon_cap (may be NULL) */
	struct dp_metric *life_spent;  /* ..._lifetime_epsilon_spent (may be NULL) */
	struct dp_metric *life_left;   /* ..._lifetime_epsilon_left (may be NULL) */
	struct dp_metric *life_rho;    /* ..._lifetime_rho_spent (may be NULL) */
	struct dp_metric *life_at_delta;  /* ..._lifetime_epsilon_at_delta{delta} (may be
				       NULL): its one label follows the lifetime delta */
};

struct own_budget {
	struct own_budget_config cfg;
	dp_ledgerset *set;          /* the directory, locked while the daemon runs */
	dp_ledger *ledger;          /* the bound job's; NULL until bound */
	char job[OWN_JOB_MAX + 1];  /* the bound job ("" while unbound) */
	uint64_t K;                 /* answer cap in force (0 while unbound) */
	dp_mech mech;               /* the bound job's mechanism */
	size_t p;                   /* a Gaussian job's coordinates per answer (its
				       sampler's slack is p DP_NOISE_DGAUSS_SLACK) */
	double job_eps;             /* the bound job's epsilon cap (job_cap) */
	double eps_q;               /* per-answer share in the ledger's unit: charged
				       AND calibrates the noise; epsilon for Laplace,
				       rho (zCDP, docs/zcdp.md §7) for Gaussian */
	uint64_t others_nano;       /* spent by the dataset's other Laplace jobs (DP_NANO_INF: unlimited) */
	dp_zcdp_totals others_t;    /* the other jobs' spending, both mechanisms
				       (docs/ledger.md §8) */
	double lifetime_delta;      /* the lifetime delta the directory records (0: pure only) */
	uint64_t lifetime_nano;     /* lifetime cap in force (DP_NANO_INF: none) */
	bool lifetime_recorded;     /* the directory records it (false: a check of a
				       directory that does not exist yet or predates
				       the record: the configured cap, recorded at
				       the first start) */
	const char *lifetime_from;  /* where the cap in force comes from, for the logs */
	struct own_budget_closed {  /* the jobs this process closed: each counts at
				       least what its own ledger said at the close,
				       whatever its file says later */
		char *path;
		uint64_t spent_nano;
		dp_zcdp_totals totals;
	} *closed;
	size_t n_closed;
	bool failed;                /* the ledger failed: nothing more, ever */
	bool ticket_open;           /* own_budget_begin'ed, not yet committed/abandoned */
	double ticket_eps;          /* the open ticket's share */
	bool lifetime_hit;          /* the last DP_EBUDGET was the lifetime cap's */
	uint64_t gen;               /* changes whenever `ledger` is closed */
};

/* The ledger as it stands, for the Hello, the logs and an Answer. */
struct own_budget_status {
	bool bound;                 /* a ledger is open */
	uint64_t answers;           /* answers charged (0 while unbound) */
	uint64_t cap;               /* K (0 while unbound) */
	bool gaussian;              /* `job`'s ledger is in nano-rho (a Gaussian job) */
	double spent;               /* epsilon spent (0 while unbound); for a Gaussian
				       job the epsilon at the owner's delta of what
				       it spent (dp_zcdp_best_eps), never its rho */
	double left;                /* epsilon left (--epsilon while unbound); for a
				       Gaussian job its epsilon cap less `spent` */
	double rho_left;            /* a Gaussian `job`: rho left in its ledger (with a
				       reserved share); 0 otherwise */
	double lifetime_cap;        /* the lifetime cap in force; INFINITY: none */
	double lifetime_spent;      /* over every job of the dataset: the best valid
				       epsilon at the lifetime delta (docs/ledger.md
				       §8), the sum of the charges for Laplace only */
	double lifetime_left;       /* what a Laplace job can still spend: the cap
				       less lifetime_spent for Laplace only; INFINITY
				       without a lifetime cap */
	double lifetime_rho;        /* every job's spending as zCDP: Laplace charges'
				       eps^2/2 and Gaussian rho */
	double lifetime_delta;      /* the lifetime delta (0: pure only) */
	const char *job;            /* the job these counters belong to ("" none);
				       while unbound, the newest job in the directory */
	double job_left;            /* what `job` can still spend: its cap less its
				       spent, at most lifetime_left; with no job,
				       the smaller of epsilon and lifetime_left
				       (the Hello's limits, docs/protocol.md §5) */
};

/* Startup: keep cfg, open the ledger directory (created if missing, locked
 * for the daemon's life) and verify every job ledger in it completely
 * (dp_ledgerset_open): they must be this owner's.  The lifetime cap is
 * the directory's (docs/ledger.md §11): a new directory, or one that
 * predates the record, records cfg->lifetime; a given lifetime above the
 * recorded cap is refused, one below it lowers the cap for good and is
 * recorded ("ownerd", with the reason).  With check_only nothing is
 * created, written or locked: a lower cap is only reported.  Nothing is
 * bound yet; the first Welcome binds a job (own_budget_bind).
 * Errors (detail names the file): DP_EINVAL (not a directory -- a format-1
 * single-job file says how to move it --, another owner's file, a given
 * lifetime above the recorded cap), DP_ECORRUPT, DP_ESTATE ("in use by
 * another process"), DP_EIO, DP_ENOMEM, DP_ERANGE.  On failure nothing is
 * open. */
int own_budget_open(struct own_budget *b, const struct own_budget_config *cfg);

/* One line (no newline) for `ownerd --check-config`: the directory, its
 * jobs and format, the lifetime cap in force and where it comes from,
 * what is spent and what is left of it, and the epsilon a new job would
 * get (the smaller of --epsilon and what is left).  Truncated to `size`. */
void own_budget_describe(const struct own_budget *b, char *buf, size_t size);

/* Close the ledger (every charge is already durable).  Idempotent. */
void own_budget_close(struct own_budget *b);

/* A Welcome: bind the budget to job `job`.  K is --answers-cap when given,
 * else `K` (the caller's: the Welcome's answers_cap, or T when it carries
 * none).  The job's ledger is the directory's file for that job, with the
 * identity "owner=<id> job=<job>" (or "owner=<id> job-sha256=<hex>" for a
 * long job name): an existing one is reopened (the job resumes: its caps
 * must be K and --epsilon, or the smaller epsilon the lifetime left when
 * it was made), a missing one is created with the cap --epsilon, or what
 * the lifetime cap leaves when that is less (docs/ledger.md §8).  Binding another job
 * than the bound one closes the bound one first (its records are durable)
 * and counts what it spent towards the lifetime.  Logs the binding.
 * Errors, with a one-line detail: DP_EINVAL (the job's ledger has other
 * caps, epsilon cannot be split over K) and DP_ECORRUPT -- configuration
 * problems; DP_ESTATE (locked by another process), DP_EIO, DP_ENOMEM. */
int own_budget_bind(struct own_budget *b, const char *job, uint64_t K);
/* own_budget_bind for a job of mechanism `mech` whose answers have p
 * coordinates (own_budget_bind is this with DP_MECH_LAPLACE).  A Gaussian
 * job (docs/zcdp.md §7): its epsilon cap as above, at cfg.delta, becomes
 * a rho cap and per-answer share (dp_zcdp_cap, dp_zcdp_share, with the
 * sampler's slack p DP_NOISE_DGAUSS_SLACK), its ledger is opened in
 * nano-rho (dp_ledger_open_gauss), eps_q holds rho_q and every answer is
 * charged rho_q and checked against the lifetime cap with its slack.  An
 * existing ledger keeps its rho cap when it is not above the one
 * --epsilon gives.  A job's mechanism never changes: a ledger of the other
 * unit is DP_EINVAL, logged as one line.  Errors as own_budget_bind, and
 * DP_EINVAL (delta 0, or an epsilon too small for the slack) for Gaussian. */
int own_budget_bind_mech(struct own_budget *b, const char *job, uint64_t K, dp_mech mech,
			 size_t p);

/* The mechanism of job `job`'s ledger in the directory, from its unit
 * (nano-rho: Gaussian), read when the directory was opened: 1 with *mech
 * set, 0 when the job has no ledger there (or no directory is open, as
 * for --check-config of a directory that does not exist yet), DP_ENOMEM.
 * Lets a caller refuse a job's other mechanism with its own words before
 * own_budget_bind_mech (peer mode, docs/peer-agents.md §4). */
int own_budget_job_mech(const struct own_budget *b, const char *job, dp_mech *mech);

/* The cap an answer cap K offered by the learner turns into: --answers-cap
 * when given (the owner's own cap wins), else K. */
uint64_t own_budget_cap_for(const struct own_budget *b, uint64_t K);

/* Is there budget for one more answer (bound, not failed, under the answer
 * cap and under the epsilon cap after one more eps_q)? */
bool own_budget_left(const struct own_budget *b);
/* Was the last refusal of own_budget_begin (DP_EBUDGET) the lifetime cap's? */
bool own_budget_lifetime_hit(const struct own_budget *b);
/* Does the lifetime cap, and not the job's own caps, keep the bound job
 * from one more answer? */
bool own_budget_lifetime_blocks(const struct own_budget *b);
/* Is the lifetime budget spent to the last nano-epsilon (no job can ever be
 * answered again)? */
bool own_budget_lifetime_spent(const struct own_budget *b);
/* Should a Welcome for `job` be refused for good: is the lifetime budget
 * spent and `job` a job this owner has no ledger for?  A job it has one for
 * (the bound job, or a resumed one after a restart of either side) is
 * rejoined: its own ledger and the lifetime cap still check every charge,
 * so it gives nothing more, and the owner stays to the end of it as an
 * exhausted owner does (docs/ownerd.md, step 3 "Welcome"). */
bool own_budget_refuses_job(const struct own_budget *b, const char *job);

void own_budget_status(const struct own_budget *b, struct own_budget_status *out);

/* One answer being spent: what own_budget_begin() checked, to be committed
 * or abandoned.  At most one is open at a time (one answer in flight per
 * owner, docs/ownerd.md "Threads"). */
struct own_budget_ticket {
	uint64_t k;
	double eps_q;               /* calibrates the noise AND is what commit charges,
				       in the ledger's unit (rho for a Gaussian job) */
};

/* Spend one answer for request k, in this order (docs/privacy.md §5):
 *   2. own_budget_begin: check before anything is computed or sampled: a k
 *      already answered is refused (never fresh noise), a k below the last
 *      answered one is a protocol error, no budget left is refused; on 0
 *      *t holds the share eps_q the answer must be computed with;
 *   3. the caller computes with t->eps_q -- the only place where noise is
 *      sampled (answer.c, on a worker thread);
 *   4. own_budget_commit: dp_ledger_charge(k, eps_q), which returns only
 *      after fdatasync;
 * and only after commit returned 0 may the answer be released (step 5, the
 * caller's).  A computation that fails or is not wanted any more is closed
 * with own_budget_abandon (nothing is charged; nothing may be released).
 * Step 1, validating the query, is the caller's too.  Loop thread only: the
 * ledger is never touched from the worker.  Needs a bound ledger
 * (own_budget_bind), k >= 1 and no ticket open.
 * begin returns 0 with *t filled (a ticket is then open); otherwise nothing
 * was charged and no ticket is open:
 *   DP_ESTATE   k was answered before: refuse "repeated query"
 *   DP_EPROTO   k is below the last answered k and was never answered
 *               (detail: "query k=.. is not above the last answered k=..")
 *   DP_EBUDGET  the budget, the answer cap or the lifetime budget is used
 *               up (own_budget_lifetime_hit says which)
 *   DP_EIO      the ledger failed (logged here): for good; the daemon must
 *               stop answering
 *   other codes (DP_EINVAL, DP_ERANGE, DP_ENOMEM), with a detail. */
int own_budget_begin(struct own_budget *b, uint64_t k, struct own_budget_ticket *t);
/* The same with a share of the caller's instead of eps_q (> 0, not above
 * the ledger's cap): peer mode's private warm start (docs/peer-agents.md),
 * charged in the same ledger under the same order. */
int own_budget_begin_eps(struct own_budget *b, uint64_t k, double eps,
			 struct own_budget_ticket *t);
/* Step 4 for the open ticket t, which is closed whatever the outcome.
 * 0 with *after filled: the charge is durable and the answer may leave.
 * Otherwise the caller must release nothing: DP_EIO (the ledger failed,
 * logged here, for good; the failed charge may count as spent), or
 * DP_EINVAL / DP_ERANGE / DP_EBUDGET / DP_ENOMEM (the ledger refused the
 * charge, with a detail; nothing written). */
int own_budget_commit(struct own_budget *b, struct own_budget_ticket *t,
		      struct own_budget_status *after);
/* Step 6, reserve-ahead only (a no-op otherwise): after an answer was sent,
 * write its record if it left under the reserved share and reserve the next
 * share when the job's and the lifetime caps allow (docs/ledger.md §9).
 * The sync is the caller's, off the loop (owner/settle.c): *sync gets the
 * file to fdatasync (path NULL: nothing was written) and the caller hands
 * the outcome to own_budget_synced.  Until then the reservation is not
 * durable and the next commit syncs it itself, so no answer ever depends
 * on the report.  Loop thread, no ticket open.  0, or DP_EIO: the ledger
 * failed (logged here, for good). */
struct own_budget_sync {
	char *path;                 /* the ledger file (NULL: nothing to sync) */
	uint64_t seq;               /* its records when written */
	uint64_t gen;               /* the ledger it belongs to (own_budget.gen) */
};
int own_budget_settle(struct own_budget *b, struct own_budget_sync *sync);
/* An fdatasync of sync->path ended with err (0 or an errno): the
 * reservation is durable, or the ledger failed (DP_EIO, logged).  A sync
 * of a ledger closed since then is only logged.  Frees sync->path. */
int own_budget_synced(struct own_budget *b, struct own_budget_sync *sync, int err);
/* Close the open ticket t without charging (its answer is never released). */
void own_budget_abandon(struct own_budget *b, struct own_budget_ticket *t);

#endif
