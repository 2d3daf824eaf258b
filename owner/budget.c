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
 *   4. dp_ledger_charge -- returns only after fdatasync;
 *   5. release -- the client sends the Answer, never before 4 succeeded.
 * A ledger I/O failure is final: `failed` is set and nothing is answered
 * again by this process. */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/core/error.h"
#include "common/core/log.h"

#include "owner/budget.h"

/* The ledger header binds owner and job.  A long job name is bound by its
 * hash (the header holds DP_LEDGER_IDENTITY_MAX bytes). */
static void identity(const struct own_budget *b, const char *job, char *out, size_t size)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[33];
	int n;

	n = snprintf(out, size, "owner=%s job=%s", b->cfg.owner_id, job);
	if (n >= 0 && (size_t)n < size && (size_t)n <= DP_LEDGER_IDENTITY_MAX)
		return;
	EVP_Digest(job, strlen(job), md, &mdlen, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	snprintf(out, size, "owner=%s job-sha256=%s", b->cfg.owner_id, hex);
}

/* The one place epsilon is split over K: the noise of every answer is
 * calibrated with this share and the ledger charges exactly it. */
static int share(const struct own_budget *b, uint64_t K, double *eps_q)
{
	if (b->cfg.eps_step > 0) {
		*eps_q = b->cfg.eps_step;
		return 0;
	}
	return dp_ledger_eps_share(b->cfg.epsilon, K, eps_q);
}

static unsigned open_flags(const struct own_budget *b)
{
	return b->cfg.allow_inf ? DP_LEDGER_ALLOW_INF : 0;
}

/* Bring dpasync_owner_epsilon_spent/left up to date; *st receives the
 * status they show. */
static void refresh_gauges(const struct own_budget *b, struct own_budget_status *st)
{
	own_budget_status(b, st);
	if (b->cfg.spent)
		dp_metrics_set(b->cfg.spent, st->spent);
	if (b->cfg.left)
		dp_metrics_set(b->cfg.left, st->left);
}

static int check_directory(const char *path)
{
	char *dirbuf;
	int r = 0;

	dirbuf = strdup(path);
	if (dirbuf == NULL)
		return DP_ENOMEM;
	if (access(dirname(dirbuf), W_OK | X_OK) != 0)
		r = dp_error_set(DP_EINVAL, "--ledger %s: directory not writable: %s", path,
				 strerror(errno));
	free(dirbuf);
	return r;
}

/* An existing ledger must be this owner's and carry our caps.  Returns the
 * answer cap K from its header. */
static int verify_existing(const struct own_budget *b, const dp_ledger *ro, uint64_t *K)
{
	const char *path = b->cfg.path, *ident = dp_ledger_identity(ro);
	char prefix[DP_LEDGER_IDENTITY_MAX + 1];
	uint64_t cap_nano;
	int r;

	snprintf(prefix, sizeof(prefix), "owner=%s job", b->cfg.owner_id);
	if (strncmp(ident, prefix, strlen(prefix)) != 0)
		return dp_error_set(DP_EINVAL, "ledger %s belongs to '%s', not to owner %s", path,
				    ident, b->cfg.owner_id);
	cap_nano = DP_LEDGER_INF;
	if (!isinf(b->cfg.epsilon)) {
		r = dp_ledger_nano_floor(b->cfg.epsilon, &cap_nano);
		if (r < 0)
			return r;
	}
	if (dp_ledger_cap_nano(ro) != cap_nano)
		return dp_error_set(DP_EINVAL, "ledger %s was created with epsilon %.9g, not %.9g "
				    "(the caps of a ledger never change)", path, dp_ledger_cap(ro),
				    b->cfg.epsilon);
	if (b->cfg.answers_cap != 0 && dp_ledger_answers_cap(ro) != b->cfg.answers_cap)
		return dp_error_set(DP_EINVAL, "ledger %s was created with answers-cap %llu, not "
				    "%llu (the caps of a ledger never change)", path,
				    (unsigned long long)dp_ledger_answers_cap(ro),
				    (unsigned long long)b->cfg.answers_cap);
	*K = dp_ledger_answers_cap(ro);
	return 0;
}

int own_budget_open(struct own_budget *b, const struct own_budget_config *cfg)
{
	struct own_budget_status st;
	char ident[DP_LEDGER_IDENTITY_MAX + 1];
	dp_ledger *ro = NULL, *l = NULL;
	uint64_t K = 0;
	double eps_q;
	int r;

	DP_REQUIRE(b != NULL && cfg != NULL && cfg->path != NULL && cfg->owner_id != NULL);
	memset(b, 0, sizeof(*b));
	b->cfg = *cfg;
	r = check_directory(cfg->path);
	if (r < 0)
		return r;

	/* Verify read-only first: the caps to open with come from the header. */
	r = dp_ledger_open(cfg->path, 1.0, 1, NULL, open_flags(b) | DP_LEDGER_READONLY, &ro);
	if (r == DP_ENOENT) {
		refresh_gauges(b, &st);   /* nothing spent yet */
		return 0;   /* created at the first Welcome, when K is known */
	}
	if (r < 0)
		return r;   /* the detail names the file */
	r = verify_existing(b, ro, &K);
	if (r == 0)
		r = share(b, K, &eps_q);
	if (r == 0)
		snprintf(ident, sizeof(ident), "%s", dp_ledger_identity(ro));
	dp_ledger_close(ro);
	if (r < 0)
		return r;

	r = dp_ledger_open(cfg->path, cfg->epsilon, K, ident, open_flags(b), &l);
	if (r == DP_ESTATE)
		return dp_error_set(r, "ledger %s is in use by another process", cfg->path);
	if (r < 0)
		return r;
	b->ledger = l;
	b->K = K;
	b->eps_q = eps_q;
	refresh_gauges(b, &st);
	return 0;
}

void own_budget_close(struct own_budget *b)
{
	DP_REQUIRE(b != NULL);
	dp_ledger_close(b->ledger);
	b->ledger = NULL;
}

uint64_t own_budget_cap_for(const struct own_budget *b, uint64_t K)
{
	DP_REQUIRE(b != NULL);
	return b->cfg.answers_cap ? b->cfg.answers_cap : K;
}

int own_budget_bind(struct own_budget *b, const char *job, uint64_t offered)
{
	struct own_budget_status st;
	uint64_t K;
	char ident[DP_LEDGER_IDENTITY_MAX + 1];
	double eps_q;
	int r;

	DP_REQUIRE(b != NULL && job != NULL && offered >= 1);
	/* Any K keeps epsilon: each answer is (epsilon/K)-DP and at most K are
	 * given (docs/privacy.md), so the learner may propose it. */
	K = own_budget_cap_for(b, offered);
	identity(b, job, ident, sizeof(ident));
	if (b->ledger) {
		/* Opened at startup from an existing file: it must be this job's. */
		if (strcmp(dp_ledger_identity(b->ledger), ident) != 0) {
			DP_ERROR("ledger", "ledger %s is bound to '%s' but the learner runs job '%s'; "
				 "use a new ledger file for a new job", b->cfg.path,
				 dp_ledger_identity(b->ledger), job);
			return DP_EINVAL;
		}
		if (b->K != K) {
			DP_ERROR("ledger", "ledger %s has answers cap %llu but this job needs %llu; "
				 "the caps of a ledger never change", b->cfg.path,
				 (unsigned long long)b->K, (unsigned long long)K);
			return DP_EINVAL;
		}
		return 0;
	}
	r = share(b, K, &eps_q);
	if (r < 0) {
		DP_ERROR("ledger", "epsilon %g cannot be split over K=%llu answers: %s",
			 b->cfg.epsilon, (unsigned long long)K, dp_error_detail(r));
		return r;
	}
	r = dp_ledger_open(b->cfg.path, b->cfg.epsilon, K, ident, open_flags(b), &b->ledger);
	if (r < 0) {
		DP_ERROR("ledger", "cannot open ledger %s: %s", b->cfg.path,
			 r == DP_ESTATE ? "in use by another process" : dp_error_detail(r));
		return r;
	}
	b->K = K;
	b->eps_q = eps_q;
	refresh_gauges(b, &st);
	DP_INFO("ledger", "bound path=%s identity=\"%s\" epsilon=%g K=%llu eps_q=%.9g",
		b->cfg.path, ident, b->cfg.epsilon, (unsigned long long)K, eps_q);
	return 0;
}

bool own_budget_left(const struct own_budget *b)
{
	uint64_t last = 0;

	DP_REQUIRE(b != NULL);
	if (b->ledger == NULL || b->K == 0 || b->failed || dp_ledger_failed(b->ledger))
		return false;
	if (dp_ledger_answers(b->ledger) >= b->K)
		return false;
	dp_ledger_last_k(b->ledger, &last);
	if (last == UINT64_MAX)
		return false;
	return dp_ledger_check(b->ledger, last + 1, b->eps_q) == 0;
}

void own_budget_status(const struct own_budget *b, struct own_budget_status *out)
{
	DP_REQUIRE(b != NULL && out != NULL);
	memset(out, 0, sizeof(*out));
	if (b->ledger == NULL) {
		out->left = b->cfg.epsilon;
		return;
	}
	out->bound = true;
	out->answers = dp_ledger_answers(b->ledger);
	out->cap = b->K;
	out->spent = dp_ledger_spent(b->ledger);
	out->left = dp_ledger_left(b->ledger);
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
	r = dp_ledger_check(b->ledger, k, eps);
	if (r < 0)
		return ledger_error(b, k, r);

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

	/* 4. durable charge (fdatasync'ed before it returns) */
	r = dp_ledger_charge(b->ledger, t->k, t->eps_q, NULL);
	if (r < 0)
		return ledger_error(b, t->k, r);

	/* 5. is the caller's: only now may the answer be released */
	refresh_gauges(b, after);
	return 0;
}

void own_budget_abandon(struct own_budget *b, struct own_budget_ticket *t)
{
	DP_REQUIRE(b != NULL && t != NULL && b->ticket_open);
	b->ticket_open = false;
}
