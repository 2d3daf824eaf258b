/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/lib/sim.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/core/algo.h"
#include "common/core/error.h"
#include "tools/lib/optimum.h"
#include "tools/lib/rundata.h"
#include "common/core/query.h"
#include "tools/lib/simrng.h"

size_t dp_sim_checkpoints(const dp_sim_setup *s)
{
	DP_REQUIRE(s != NULL && s->psi_every > 0);
	return s->T / s->psi_every + (s->T % s->psi_every != 0);
}

size_t dp_sim_checkpoint_k(const dp_sim_setup *s, size_t c)
{
	size_t k;

	DP_REQUIRE(s != NULL);
	k = (c + 1) * s->psi_every;
	return k > s->T ? s->T : k;
}

static bool exhausted(const dp_sim_setup *s, const uint64_t *count, size_t i)
{
	return s->answers_cap != NULL && count[i] >= s->answers_cap[i];
}

/* Streams for owner choice and noise are separate so that a --schedule run
 * and a drawn run see the same noise for the same seed. */
static void seed_stream(dp_simrng *r, uint64_t seed, uint64_t stream)
{
	dp_simrng_seed(r, seed ^ (stream * 0x9E3779B97F4A7C15ULL));
}

/* One query out (async): its owner, the midpoint it was built from, the
 * answer (computed when it is sent: the owner's pass sees only bar) and
 * the number of updates applied when it was built. */
struct sim_slot {
	size_t owner;
	size_t built_k;
	double due;             /* timed: when its answer arrives */
	double *bar, *ans;
};

/* The timed pipeline (s->answer_time > 0): each owner's Poisson clock, as
 * ownerd's (owner/clock.c), ticks once, the owner asks, and the clock
 * starts again only when its answer is in.  tick[i]: owner i's next
 * request (INFINITY while it has one pending or out, or is exhausted). */
struct sim_clock {
	double now;
	double *tick;
	dp_bitsource bits;      /* the owner-choice stream */
	dp_simrng delay;        /* answer_rtt's draws: a stream of its own */
};

bool dp_sim_timed(const dp_sim_setup *s)
{
	DP_REQUIRE(s != NULL);
	return (s->answer_time > 0 || s->answer_rtt != NULL) && s->schedule == NULL;
}

/* The time owner i's answer takes: answer_time, or a draw from its
 * answer_rtt (the index from the top bits of one 64-bit draw, by a
 * multiply-shift: a bias below n / 2^64). */
static double clock_delay(struct sim_clock *c, const dp_sim_setup *s, size_t i)
{
	const dp_sim_rtt *r;

	if (s->answer_rtt == NULL)
		return s->answer_time;
	r = &s->answer_rtt[i];
	if (r->n == 1)
		return r->rtt[0];
	return r->rtt[(size_t)(((unsigned __int128)dp_simrng_next(&c->delay) * r->n) >> 64)];
}

/* Owner i's clock starts now: its next tick one gap later, drawn as
 * ownerd's clock draws it (dp_rng_exponential, owner/clock.c). */
static int clock_start(struct sim_clock *c, const dp_sim_setup *s, size_t i)
{
	double gap;
	int rc = dp_rng_exponential(&c->bits, s->rate[i], &gap);

	if (rc == 0)
		c->tick[i] = c->now + gap;
	return rc;
}

/* The owner whose request is sent now, or N when the oldest answer out
 * arrives first (or no clock is left): requests are served in the order
 * their clocks ticked, each as soon as fewer than M queries are out. */
static size_t clock_next(struct sim_clock *c, size_t N, const struct sim_slot *oldest)
{
	size_t first = N;

	for (size_t i = 0; i < N; i++)
		if (c->tick[i] < INFINITY && (first == N || c->tick[i] < c->tick[first]))
			first = i;
	if (first == N || (oldest != NULL && oldest->due <= c->tick[first]))
		return N;
	if (c->tick[first] > c->now)
		c->now = c->tick[first];
	c->tick[first] = INFINITY;
	return first;
}

static bool is_out(const struct sim_slot *q, size_t head, size_t len, size_t M, size_t i)
{
	for (size_t j = 0; j < len; j++)
		if (q[(head + j) % M].owner == i)
			return true;
	return false;
}

/* The async iterations: queries are sent while fewer than M are out, and
 * the oldest is applied next (docs/learnerd.md, staleness).  With M = 1
 * this is the paper's loop: pick, midpoint, answer, update.  avail[i] is
 * the cap dp_simrng_pick sees: an owner with a query out counts as
 * exhausted until it is applied, as learnerd never asks it twice.  With a
 * clock (timed pipeline) the owners' clocks decide who asks and when, and
 * answers arrive answer_time (or a draw of answer_rtt) after their query. */
static int run_async(const dp_sim_setup *s, dp_simrng *pick, dp_bitsource *bits, uint64_t *count,
		     double *theta_L, double *copies, struct sim_slot *q, size_t M,
		     uint64_t *avail, struct sim_clock *clk, double *psi_out, size_t *owner_out,
		     uint64_t *stale_out)
{
	dp_algo_async_params ap = { .p = s->p, .N = s->N, .eta = s->eta, .lambda = s->lambda,
				    .theta_max = s->theta_max };
	size_t p = s->p, N = s->N, cp = 0, issued = 0, done = 0, head = 0, len = 0;
	int rc;

	for (size_t i = 0; i < N; i++)
		avail[i] = s->answers_cap ? s->answers_cap[i] : UINT64_MAX;
	while (done < s->T) {
		struct sim_slot *sl;
		size_t i;
		double w;

		while (len < M && issued < s->T) {
			if (s->schedule) {
				i = s->schedule[issued];
				if (is_out(q, head, len, M, i))
					break;   /* its query is still out: apply first */
			} else if (clk) {
				i = clock_next(clk, N, len ? &q[head] : NULL);
				if (i == N)
					break;
			} else {
				i = dp_simrng_pick(pick, s->rate, count, avail, N);
				if (i == N)
					break;
			}
			if (exhausted(s, count, i))
				return dp_error_set(DP_EBUDGET, "iteration %zu: owner %zu has given its "
						    "%llu answers", issued + 1, i + 1,
						    (unsigned long long)s->answers_cap[i]);
			sl = &q[(head + len) % M];
			dp_algo_midpoint(p, theta_L, copies + i * p, sl->bar);
			rc = dp_query_answer_mech(s->model, s->ds[i], sl->bar, s->clip, s->mech,
						  s->eps_q[i], bits, sl->ans, NULL);
			if (rc != 0)
				return rc;
			count[i]++;
			avail[i] = count[i];
			sl->owner = i;
			sl->built_k = done;
			sl->due = clk ? clk->now + clock_delay(clk, s, i) : 0.0;
			if (owner_out)
				owner_out[issued] = i;
			issued++;
			len++;
		}
		if (len == 0)
			return dp_error_set(DP_EBUDGET, "every owner has exhausted its budget at "
					    "k=%zu of T=%zu", done, s->T);
		sl = &q[head];
		head = (head + 1) % M;
		len--;
		i = sl->owner;
		avail[i] = s->answers_cap ? s->answers_cap[i] : UINT64_MAX;
		if (clk) {
			clk->now = sl->due;
			if (!exhausted(s, count, i) && (rc = clock_start(clk, s, i)) != 0)
				return rc;
		}
		if (stale_out)
			stale_out[done] = done - sl->built_k;
		done++;
		w = s->weight[i];
		if (s->freq_correction)
			w = dp_algo_freq_weight(w, N, count[i], done);
		dp_algo_async_update(&ap, sl->bar, sl->ans, w, copies + i * p, theta_L);
		if (done == dp_sim_checkpoint_k(s, cp))
			psi_out[cp++] = dp_model_psi(dp_model_fitness(s->model, s->ds, N, s->lambda,
								      theta_L), s->f_star);
	}
	return 0;
}

int dp_sim_run(const dp_sim_setup *s, uint64_t seed, double *psi_out, double *theta_out,
	       size_t *owner_out, uint64_t *answers_out, uint64_t *stale_out, double *clock_out)
{
	size_t p, N, M, cp = 0;
	double *work;
	uint64_t *count;
	double *theta_L, *ans, *agg, *copies;
	struct sim_slot *q;
	dp_simrng pick, noise;
	dp_bitsource bits;
	int rc = 0;

	DP_REQUIRE(s != NULL && s->N > 0 && s->p > 0 && s->psi_every > 0 && s->ds != NULL &&
		   psi_out != NULL && theta_out != NULL);
	p = s->p;
	N = s->N;
	/* An owner has at most one query out (docs/learnerd.md, request mode). */
	M = s->max_inflight < 1 ? 1 : s->max_inflight < N ? s->max_inflight : N;
	if (s->mode != DP_PLAN_ASYNC && s->answers_cap != NULL) {
		for (size_t i = 0; i < N; i++)
			if (s->answers_cap[i] + 1 < s->T)
				return dp_error_set(DP_EINVAL, "%s: owner %zu's cap %llu is below the "
						    "T-1 = %zu rounds", dp_plan_mode_name(s->mode),
						    i + 1, (unsigned long long)s->answers_cap[i],
						    s->T - 1);
	}
	/* theta_L, ans, agg, N copies, then M midpoints and M answers, then
	 * the N clocks of the timed pipeline */
	work = calloc(p * (N + 3 + 2 * M) + N, sizeof(double));
	count = calloc(2 * N, sizeof(uint64_t));   /* counts, then the caps pick sees */
	q = calloc(M, sizeof(*q));
	if (work == NULL || count == NULL || q == NULL) {
		free(work);
		free(count);
		free(q);
		return DP_ENOMEM;
	}
	theta_L = work;
	ans = work + p;
	agg = work + 2 * p;
	copies = work + 3 * p;
	for (size_t j = 0; j < M; j++) {
		q[j].bar = copies + (N + 2 * j) * p;
		q[j].ans = copies + (N + 2 * j + 1) * p;
	}
	seed_stream(&pick, seed, 1);
	seed_stream(&noise, seed, 2);
	bits = dp_simrng_bitsource(&noise);

	if (s->mode == DP_PLAN_ASYNC) {
		struct sim_clock clk = { .now = 0.0, .tick = copies + (N + 2 * M) * p,
					 .bits = dp_simrng_bitsource(&pick) };
		bool timed = dp_sim_timed(s);

		seed_stream(&clk.delay, seed, 3);
		for (size_t i = 0; timed && i < N && rc == 0; i++) {
			clk.tick[i] = INFINITY;
			if (!exhausted(s, count, i))
				rc = clock_start(&clk, s, i);
		}
		if (rc == 0)
			rc = run_async(s, &pick, &bits, count, theta_L, copies, q, M, count + N,
				       timed ? &clk : NULL, psi_out, owner_out, stale_out);
		if (rc != 0)
			goto out;
		if (clock_out != NULL)
			*clock_out = clk.now;
		memcpy(theta_out, theta_L, p * sizeof(double));
	} else {
		/* Sync: theta_L holds theta[k]; copies[0..p) holds theta_hat for sync2. */
		double *theta_hat = copies;
		for (size_t k = 1; k <= s->T; k++) {
			const double *out = s->mode == DP_PLAN_SYNC2 ? theta_hat : theta_L;
			/* T-1 queries produce theta[T]; the k = T checkpoint reports it. */
			if (k < s->T) {
				memset(agg, 0, p * sizeof(double));
				for (size_t i = 0; i < N; i++) {
					rc = dp_query_answer_mech(s->model, s->ds[i], theta_L,
								  s->clip, s->mech, s->eps_q[i],
								  &bits, ans, NULL);
					if (rc != 0)
						goto out;
					count[i]++;
					for (size_t c = 0; c < p; c++)
						agg[c] += s->weight[i] * ans[c];
				}
				if (s->mode == DP_PLAN_SYNC1)
					dp_algo_sync1_step(p, s->rho_over_T2, k, s->lambda, agg, theta_L);
				else
					dp_algo_sync2_step(p, s->c, k, s->T, s->lambda, s->theta_max, agg, theta_L,
						      theta_hat);
			}
			if (k == dp_sim_checkpoint_k(s, cp))
				psi_out[cp++] = dp_model_psi(dp_model_fitness(s->model, s->ds, N, s->lambda, out),
						       s->f_star);
		}
		memcpy(theta_out, s->mode == DP_PLAN_SYNC2 ? theta_hat : theta_L, p * sizeof(double));
	}
	if (answers_out != NULL)
		memcpy(answers_out, count, N * sizeof(uint64_t));
out:
	free(work);
	free(count);
	free(q);
	return rc;
}

/* The repeats shared out among threads: each takes the next index. */
struct sim_pool {
	const dp_sim_setup *s;
	uint64_t seed;
	size_t R, ncp;
	double *psi, *theta1;
	size_t *owners1;
	uint64_t *answers1, *stale1;
	double *clock;          /* R simulated times, or NULL */
	pthread_mutex_t lock;
	size_t next;            /* the next repeat to start */
	size_t failed;          /* the lowest failing repeat (R: none) */
	int rc;                 /* its error */
	char why[512];          /* and its detail (recorded in its thread) */
};

/* One repeat into the pool's outputs; theta: this thread's scratch. */
static void pool_one(struct sim_pool *P, size_t r, double *theta)
{
	int rc = dp_sim_run(P->s, P->seed + r, P->psi + r * P->ncp, r == 0 ? P->theta1 : theta,
			    r == 0 ? P->owners1 : NULL, r == 0 ? P->answers1 : NULL,
			    r == 0 ? P->stale1 : NULL, P->clock ? P->clock + r : NULL);

	if (rc == 0)
		return;
	pthread_mutex_lock(&P->lock);
	if (r < P->failed) {
		P->failed = r;
		P->rc = rc;
		snprintf(P->why, sizeof(P->why), "%s", dp_error_detail(rc));
	}
	pthread_mutex_unlock(&P->lock);
}

/* One thread of the pool and its scratch model (repeats after the first
 * write their final model there). */
struct sim_thread {
	struct sim_pool *P;
	double *theta;
	pthread_t tid;
};

/* A worker: repeats in increasing order until none is left or one has
 * failed (the ones below it are all started, so the lowest failure is
 * still found). */
static void *pool_worker(void *arg)
{
	struct sim_thread *t = arg;
	struct sim_pool *P = t->P;

	for (;;) {
		size_t r;

		pthread_mutex_lock(&P->lock);
		r = P->next < P->R && P->failed == P->R ? P->next++ : P->R;
		pthread_mutex_unlock(&P->lock);
		if (r == P->R)
			return NULL;
		pool_one(P, r, t->theta);
	}
}

int dp_sim_repeats(const dp_sim_setup *s, uint64_t seed, size_t R, size_t threads,
		   double *psi_out, double *theta_out, size_t *owner_out, uint64_t *answers_out,
		   uint64_t *stale_out, double *clock_out, size_t *failed)
{
	struct sim_pool P = { .s = s, .seed = seed, .R = R, .psi = psi_out, .theta1 = theta_out,
			      .owners1 = owner_out, .answers1 = answers_out, .stale1 = stale_out,
			      .clock = clock_out,
			      .failed = R };
	struct sim_thread *th;
	double *scratch;
	size_t started = 1;

	DP_REQUIRE(s != NULL && R > 0 && failed != NULL);
	P.ncp = dp_sim_checkpoints(s);
	if (threads == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);

		threads = c > 0 ? (size_t)c : 1;
	}
	if (threads > R)
		threads = R;
	th = calloc(threads, sizeof(*th));
	scratch = calloc(threads * s->p, sizeof(double));
	if (th == NULL || scratch == NULL) {
		free(th);
		free(scratch);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	pthread_mutex_init(&P.lock, NULL);
	for (size_t t = 0; t < threads; t++) {
		th[t].P = &P;
		th[t].theta = scratch + t * s->p;
	}
	/* th[0] is this thread; a thread that cannot start leaves its share
	 * to the others */
	for (size_t t = 1; t < threads; t++) {
		if (pthread_create(&th[started].tid, NULL, pool_worker, &th[started]) != 0)
			break;
		started++;
	}
	pool_worker(&th[0]);
	for (size_t t = 1; t < started; t++)
		pthread_join(th[t].tid, NULL);
	pthread_mutex_destroy(&P.lock);
	free(th);
	free(scratch);
	if (P.failed == R)
		return 0;
	*failed = P.failed;
	return dp_error_set(P.rc, "%s", P.why);
}

/* dp_sim_per_owner for each element type: one body, written once. */
#define DP_SIM_DEFINE_PER_OWNER(name, in_type, out_type)                                   \
	int name(const char *flag, const in_type *v, size_t n, size_t N, out_type def,     \
		 out_type *out)                                                             \
	{                                                                                   \
		DP_REQUIRE(flag != NULL && out != NULL && (v != NULL || n == 0));          \
		if (n != 0 && n != 1 && n != N)                                             \
			return dp_error_set(DP_EINVAL,                                      \
					    "%s has %zu values for %zu owners (give 1 or %zu)", \
					    flag, n, N, N);                                 \
		for (size_t i = 0; i < N; i++)                                              \
			out[i] = n == 0 ? def : n == 1 ? v[0] : v[i];                       \
		return 0;                                                                   \
	}

DP_SIM_DEFINE_PER_OWNER(dp_sim_per_owner, double, double)
DP_SIM_DEFINE_PER_OWNER(dp_sim_per_owner_u64, size_t, uint64_t)
#undef DP_SIM_DEFINE_PER_OWNER

/* t's arrays for N owners holding n values in all. */
static int timing_alloc(dp_sim_timing *t, size_t N, size_t n)
{
	memset(t, 0, sizeof(*t));
	t->owner = calloc(N, sizeof(*t->owner));
	t->store = calloc(n ? n : 1, sizeof(double));
	if (t->owner == NULL || t->store == NULL) {
		dp_sim_timing_free(t);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	t->N = N;
	return 0;
}

int dp_sim_timing_values(dp_sim_timing *t, const double *v, size_t N)
{
	int rc;

	DP_REQUIRE(t != NULL && v != NULL && N > 0);
	rc = timing_alloc(t, N, N);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < N; i++) {
		t->store[i] = v[i];
		t->owner[i] = (dp_sim_rtt){ .rtt = t->store + i, .n = 1 };
	}
	return 0;
}

/* "owner-1, owner-2, ..." (the first four names) into buf. */
static void name_list(const dp_rundata_trace *tr, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < tr->N && i <= 4 && used < size; i++) {
		int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
				 i < 4 ? tr->names[i] : "...");

		if (n < 0)
			break;
		used += (size_t)n;
	}
}

/* Each owner's rows of tr, in trace order, into t (sized by
 * timing_alloc), one pass over the rows per owner. */
static void timing_fill(dp_sim_timing *t, const dp_rundata_trace *tr)
{
	size_t at = 0;

	for (size_t i = 0; i < t->N; i++) {
		t->owner[i].rtt = t->store + at;
		for (size_t r = 0; r < tr->n; r++)
			if (tr->owner[r] == i)
				t->store[at + t->owner[i].n++] = tr->rtt[r];
		at += t->owner[i].n;
	}
}

int dp_sim_timing_trace(dp_sim_timing *t, const char *path, size_t N)
{
	dp_rundata_trace tr = { 0 };
	char names[256];
	int rc;

	DP_REQUIRE(t != NULL && path != NULL && N > 0);
	memset(t, 0, sizeof(*t));
	rc = dp_rundata_trace_read(path, NULL, 0, &tr);
	if (rc != 0)
		return rc;
	if (tr.rtt == NULL) {
		rc = dp_error_set(DP_EFORMAT, "%s: a schedule, not a trace.csv: no rtt_s column",
				  path);
		goto out;
	}
	if (tr.N != N) {
		name_list(&tr, names, sizeof(names));
		rc = dp_error_set(DP_EINVAL, "%s: %zu owner%s rows (%s), the sim has %zu data "
				  "files (an owner without rows has no round trips to draw)",
				  path, tr.N, tr.N == 1 ? " has" : "s have", names, N);
		goto out;
	}
	rc = timing_alloc(t, N, tr.n);
	if (rc == 0)
		timing_fill(t, &tr);
out:
	dp_rundata_trace_free(&tr);
	return rc;
}

double dp_sim_rtt_mean(const dp_sim_rtt *r)
{
	double m = 0;

	DP_REQUIRE(r != NULL && r->n > 0);
	for (size_t k = 0; k < r->n; k++)
		m += r->rtt[k] / (double)r->n;
	return m;
}

void dp_sim_timing_free(dp_sim_timing *t)
{
	if (t == NULL)
		return;
	free(t->owner);
	free(t->store);
	memset(t, 0, sizeof(*t));
}
