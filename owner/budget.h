/* ownerd: the privacy budget, the one owner of the ledger (docs/privacy.md §5,
 * docs/ledger.md, docs/ownerd.md).
 *
 * The bottom of the daemon: it calls only common/, never client, answer,
 * clock or main.  Everything the daemon knows about epsilon goes through
 * here: the ledger is opened and verified here (at startup when the file
 * exists, else at the first Welcome), the per-answer share eps_q is
 * computed here and only here, and an answer is charged only inside
 * own_budget_spend(), which also runs the computation so that the privacy
 * order cannot be broken by a caller.  The gauges
 * dpasync_owner_epsilon_spent/left are kept current from here.
 *
 * A ledger failure (a write or sync that failed, a record that no longer
 * verifies) is permanent: from then on nothing is answered. */
#ifndef OWN_BUDGET_H
#define OWN_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "common/core/ledger.h"
#include "common/net/metrics.h"

/* What the budget is made of; the strings must outlive the budget. */
struct own_budget_config {
	const char *path;           /* --ledger */
	double epsilon;             /* --epsilon; INFINITY only with allow_inf */
	uint64_t answers_cap;       /* --answers-cap; 0 = the K of the first Welcome */
	bool allow_inf;             /* --allow-no-noise */
	const char *owner_id;       /* CN of our certificate */
	struct dp_metric *spent;    /* dpasync_owner_epsilon_spent (may be NULL) */
	struct dp_metric *left;     /* dpasync_owner_epsilon_left (may be NULL) */
};

struct own_budget {
	struct own_budget_config cfg;
	dp_ledger *ledger;          /* NULL until opened or bound */
	uint64_t K;                 /* answer cap in force (0 while unbound) */
	double eps_q;               /* per-answer share: charged AND calibrates the noise */
	bool failed;                /* the ledger failed: nothing more, ever */
};

/* The ledger as it stands, for the Hello, the logs and an Answer. */
struct own_budget_status {
	bool bound;                 /* a ledger is open */
	uint64_t answers;           /* answers charged (0 while unbound) */
	uint64_t cap;               /* K (0 while unbound) */
	double spent;               /* epsilon spent (0 while unbound) */
	double left;                /* epsilon left (--epsilon while unbound) */
};

/* Startup: keep cfg, check that the ledger's directory is writable, and if
 * the file exists verify it completely (dp_ledger_open), check that it is
 * this owner's ("owner=<id> job..." in its header) and carries --epsilon and
 * (when given) --answers-cap, then open and lock it for good.  A missing
 * file is fine: it is created by own_budget_bind() when K is known.
 * Errors (detail names the file): DP_EINVAL (directory, owner or caps do
 * not match), DP_ECORRUPT, DP_ESTATE ("in use by another process"),
 * DP_EIO, DP_ENOMEM, DP_ERANGE.  On failure nothing is open. */
int own_budget_open(struct own_budget *b, const struct own_budget_config *cfg);

/* Close the ledger (every charge is already durable).  Idempotent. */
void own_budget_close(struct own_budget *b);

/* The first Welcome of the process: bind the ledger to the job.  K is
 * --answers-cap when given, else `K` (the caller's: the Welcome's
 * answers_cap, or T when it carries none); the identity is "owner=<id> job=<job>" (or
 * "owner=<id> job-sha256=<hex>" for a long job name).  A ledger opened at
 * startup must carry this identity and K; a missing one is created with
 * them.  Logs the binding.
 * Errors, with a one-line detail: DP_EINVAL (another job or another K,
 * epsilon cannot be split over K) and DP_ECORRUPT -- configuration
 * problems; DP_ESTATE (locked by another process), DP_EIO, DP_ENOMEM. */
int own_budget_bind(struct own_budget *b, const char *job, uint64_t K);

/* The cap an answer cap K offered by the learner turns into: --answers-cap
 * when given (the owner's own cap wins), else K. */
uint64_t own_budget_cap_for(const struct own_budget *b, uint64_t K);

/* Is there budget for one more answer (bound, not failed, under the answer
 * cap and under the epsilon cap after one more eps_q)? */
bool own_budget_left(const struct own_budget *b);

void own_budget_status(const struct own_budget *b, struct own_budget_status *out);

/* The answer's computation, run by own_budget_spend() between the check and
 * the charge with exactly the eps_q that will be charged.  0, or a negative
 * code: nothing is charged then and spend returns that code. */
typedef int (*own_budget_compute_fn)(void *arg, double eps_q);

/* Spend one answer for request k, in this order (docs/privacy.md §5):
 *   2. check before anything is computed or sampled: a k already answered
 *      is refused (never fresh noise), a k below the last answered one is
 *      a protocol error, no budget left is refused;
 *   3. compute(arg, eps_q) -- the only place where noise is sampled;
 *   4. dp_ledger_charge(k, eps_q): returns only after fdatasync;
 * and only after 0 is returned may the answer be released (step 5, the
 * caller's).  Step 1, validating the query, is the caller's too.
 * Returns 0 with *after filled; otherwise nothing was charged (but see
 * DP_EIO) and the caller must release nothing:
 *   DP_ESTATE   k was answered before: refuse "repeated query"
 *   DP_EPROTO   k is below the last answered k and was never answered
 *               (detail: "query k=.. is not above the last answered k=..")
 *   DP_EBUDGET  the budget or the answer cap is used up
 *   DP_EIO      the ledger failed (logged here): for good; the failed
 *               charge may count as spent; the daemon must stop answering
 *   compute's own code when compute failed
 *   other codes (DP_EINVAL, DP_ERANGE, DP_ENOMEM): the ledger refused the
 *               charge, with a detail.
 * Needs a bound ledger (own_budget_bind) and k >= 1. */
int own_budget_spend(struct own_budget *b, uint64_t k, own_budget_compute_fn compute,
		     void *arg, struct own_budget_status *after);

#endif
