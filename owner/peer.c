/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd --peer: one agent of peer mode (docs/peer-agents.md, the rule of
 * docs/design.md §6).
 *
 * No learner: the agent keeps its own model theta_i and the last model it
 * received from each neighbour of the graph.  On each wake-up (a tick of
 * its Poisson clock, or its next step of a --schedule once it holds every
 * neighbour's model from that neighbour's last step before) it
 *   1. opens a ticket for the wake-up's share in the ledger (budget.c),
 *   2. computes the noisy gradient of its local loss at theta_i
 *      (dp_query_answer_mech: clipped in L1 with discrete Laplace noise
 *      at the share, or with --mechanism gaussian in L2 with discrete
 *      Gaussian noise at the share in rho),
 *   3. applies dp_algo_p2p_update, the function the simulator calls,
 *      into a candidate,
 *   4. commits the charge (fdatasync'ed), and only then
 *   5. adopts the candidate, saves it to model.json and sends it to every
 *      connected neighbour.
 * So only noised models leave an agent, each after its charge is durable.
 *
 * The connections to the neighbours and the PeerModel messages are
 * peerlink.c, below this file: a model received comes back up through
 * on_model, registered with own_peerlink_init.
 *
 * The end: when its wake-ups are spent the agent sends its model marked
 * final, and it exits once every neighbour has sent its own final model and
 * confirmed (seen_final) ours, or after --linger seconds. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/core/algo.h"
#include "common/core/compose.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/graph.h"
#include "common/core/log.h"
#include "common/core/modelfile.h"
#include "common/core/schedule.h"
#include "common/net/addr.h"
#include "common/net/tls.h"

#include "owner/own.h"
#include "owner/peerlink.h"


static double now_unix(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void stop(struct own_peer *p, int code)
{
	p->cfg.stop(p->cfg.stop_arg, code);
}

/* ---- the end --------------------------------------------------------------- */

/* --serve: the served model once every release it pools is here, then
 * our complete flag to the neighbours (they need nothing more from us). */
static void serve(struct own_peer *p)
{
	if (!p->rel.on || p->rel.served || !p->finished || !own_rel_complete(&p->rel))
		return;
	if (own_peerserve_fit(p) < 0) {
		stop(p, DP_EXIT_FAIL);
		return;
	}
	own_peerlink_send_flags(p);
}

static void check_exit(struct own_peer *p)
{
	if (!p->finished || p->closed)
		return;
	/* --release grad0 sends no models: only the releases' handshake */
	for (size_t i = 0; i < p->n_nb && !(p->rel.on && p->rel.grad0); i++)
		if (!p->nb[i].final || !p->nb[i].seen_final)
			return;
	if (p->rel.on) {
		if (!p->rel.served)
			return;
		for (size_t i = 0; i < p->n_nb; i++)
			if (!p->nb[i].complete || !p->nb[i].seen_complete)
				return;
	}
	DP_INFO("peer", "done wakeups=%llu every neighbour done",
		(unsigned long long)p->done);
	stop(p, DP_EXIT_OK);
}

static void on_linger(uv_timer_t *t)
{
	struct own_peer *p = t->data;

	DP_WARN("peer", "linger of %g s over with neighbours not done; exiting",
		p->cfg.set->linger);
	/* Serve from what arrived (logged) rather than from nothing. */
	if (p->rel.on && !p->rel.served && own_peerserve_fit(p) < 0) {
		stop(p, DP_EXIT_FAIL);
		return;
	}
	stop(p, DP_EXIT_OK);
}

static void finish(struct own_peer *p, const char *why)
{
	if (p->finished)
		return;
	p->finished = true;
	if (p->clock_on) {
		own_clock_close(&p->clock);
		p->clock_on = false;
	}
	DP_INFO("peer", "finished reason=%s wakeups=%llu step=%llu", why,
		(unsigned long long)p->done, (unsigned long long)p->step);
	own_peerlink_send_all(p);
	/* --release models: the final model is our release (a model that was
	 * never noised, before any wake-up, is none). */
	if (p->rel.on && !p->rel.grad0 && p->released)
		own_peerserve_store(p, p->rel.self, p->theta, p->cfg.ds->n);
	if (p->rel.on)
		own_peerlink_send_release(p, p->rel.self);
	uv_timer_start(&p->linger, on_linger, (uint64_t)llround(p->cfg.set->linger * 1000.0), 0);
	serve(p);
	check_exit(p);
}

/* ---- state ------------------------------------------------------------------ */

static int save_model(struct own_peer *p)
{
	dp_modelfile mf;

	memset(&mf, 0, sizeof(mf));
	mf.model = (dp_model)p->cfg.set->model;
	mf.p = p->p;
	mf.theta = p->theta;
	mf.features = p->cfg.ds->names;
	mf.target = p->cfg.ds->target;
	mf.bias = p->cfg.set->bias;
	mf.T = (size_t)p->T;
	mf.lambda = p->lambda;
	mf.theta_max = p->cfg.set->theta_max;
	mf.clip = p->cfg.set->clip;
	snprintf(mf.mode, sizeof(mf.mode), "peer");
	return dp_modelfile_write(p->cfg.model_out, &mf, DP_FILE_MODE_PRIVATE);
}

static void trace_row(struct own_peer *p, uint64_t k, double secs)
{
	struct own_budget_status st;

	if (p->trace == NULL)
		return;
	own_budget_status(p->cfg.budget, &st);
	fprintf(p->trace, "%llu,%llu,%.6f,%.6f,%.9g,%.9g,%zu\n", (unsigned long long)p->done,
		(unsigned long long)k, now_unix(), secs, st.spent, st.left,
		own_peerlink_connected(p));
	fflush(p->trace);
}

/* Charge, compute and adopt one noisy step (steps 1-5 above) for ledger
 * request k at share eps.  warm: the warm start's plain gradient step on
 * the local loss instead of the peer update.  0, or the budget's code
 * (DP_EBUDGET: spent; the others logged here or by the budget). */
static int noisy_step(struct own_peer *p, uint64_t k, double eps, bool warm)
{
	struct own_budget_ticket t;
	struct own_budget_status after;
	dp_query_info info;
	int r;

	r = own_budget_begin_eps(p->cfg.budget, k, eps, &t);
	if (r < 0)
		return r;
	/* Laplace through dp_query_answer_mech is dp_query_answer, bit for bit. */
	r = dp_query_answer_mech((dp_model)p->cfg.set->model, p->cfg.ds, p->theta,
				 p->cfg.set->clip, (dp_mech)p->cfg.set->mechanism, t.eps_q,
				 p->cfg.noise, p->grad, &info);
	if (r < 0) {
		own_budget_abandon(p->cfg.budget, &t);
		DP_ERROR("peer", "gradient failed: %s", dp_error_detail(r));
		return r;
	}
	memcpy(p->cand, p->theta, p->p * sizeof(double));
	if (warm) {
		dp_algo_p2p_warm_step(&p->ap, p->grad, p->cand);
	} else {
		dp_algo_p2p_update(&p->ap, p->n_nb, p->nb_theta, p->nb_w, p->grad, p->cand);
	}
	OPENSSL_cleanse(p->grad, p->p * sizeof(double));
	r = own_budget_commit(p->cfg.budget, &t, &after);
	if (r < 0) {
		OPENSSL_cleanse(p->cand, p->p * sizeof(double));
		DP_ERROR("peer", "charge k=%llu failed: %s", (unsigned long long)k,
			 dp_error_detail(r));
		return r;
	}
	/* 5. durable: the candidate may leave */
	memcpy(p->theta, p->cand, p->p * sizeof(double));
	p->released = true;
	return 0;
}

/* One wake-up at `step`. */
static void wake(struct own_peer *p, uint64_t step)
{
	double t0 = now_unix();
	uint64_t k = p->warm + p->done + 1;
	int r;

	if (p->finished)
		return;
	r = noisy_step(p, k, p->cfg.budget->eps_q, false);
	if (r == DP_EBUDGET) {
		finish(p, "budget spent");
		return;
	}
	if (r < 0) {
		stop(p, DP_EXIT_FAIL);
		return;
	}
	p->done++;
	p->step = step;
	if (p->cfg.m->wakeups)
		dp_metrics_inc(p->cfg.m->wakeups);
	r = save_model(p);
	if (r < 0)
		DP_WARN("peer", "cannot save %s: %s", p->cfg.model_out, dp_error_detail(r));
	trace_row(p, step, now_unix() - t0);
	DP_DEBUG("peer", "wakeup=%llu step=%llu", (unsigned long long)p->done,
		 (unsigned long long)step);
	if (p->done >= p->T) {
		finish(p, "wake-ups spent");
		return;
	}
	own_peerlink_send_all(p);
}

/* --schedule: wake for every step whose neighbours' models are here. */
static void progress(struct own_peer *p)
{
	while (!p->finished && !p->closed && p->cfg.set->schedule && p->done < p->n_my) {
		uint64_t s = p->my_steps[p->done];

		for (size_t i = 0; i < p->n_nb; i++) {
			struct nb *n = &p->nb[i];
			uint64_t need = 0;

			for (size_t j = 0; j < n->n_steps && n->steps[j] < s; j++)
				need = n->steps[j];
			if (need > n->step)
				return;   /* wait for its model of step `need` */
			/* With a warm start the agents of a schedule all warm-start
			 * (as sim --warm-start): before its first wake-up the
			 * neighbour holds its warm-start model, not zeros. */
			if (p->warm > 0 && !n->have)
				return;
		}
		wake(p, s);
	}
	if (!p->finished && p->cfg.set->schedule && p->done >= p->n_my)
		finish(p, "schedule done");
}

static bool on_tick(void *arg)
{
	struct own_peer *p = arg;

	wake(p, p->done + 1);
	return p->finished;
}

static void on_clock_fail(void *arg, int err)
{
	stop(arg, dp_exit_status(err, DP_EXIT_PHASE_RUN));
}

/* A model arrived (peerlink.c): a schedule may now go on, or the end be
 * reached. */
static void on_model(struct own_peer *p)
{
	progress(p);
	serve(p);
	check_exit(p);
}

/* ---- setup ------------------------------------------------------------------------ */

static int wrapf(int r, const char *fmt, const char *arg)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s", dp_error_detail(r));
	return dp_error_set(r, fmt, arg, buf);
}

static int load_graph(struct own_peer *p)
{
	const struct own_settings *s = p->cfg.set;
	const char *const *ids;
	const double *w;
	size_t n;
	int r;

	r = dp_graph_load(s->graph, NULL, 0, &p->graph);
	if (r < 0)
		return wrapf(r, "--graph %s: %s", s->graph);
	if (dp_graph_find(p->graph, p->cfg.id) < 0)
		return dp_error_set(DP_EINVAL, "--graph %s: this agent '%s' is not in the graph",
				    s->graph, p->cfg.id);
	n = dp_graph_neighbours(p->graph, p->cfg.id, &ids, &w);
	p->n_nb = n;
	p->nb = calloc(n ? n : 1, sizeof(*p->nb));
	p->nb_theta = calloc(n ? n : 1, sizeof(*p->nb_theta));
	p->nb_w = calloc(n ? n : 1, sizeof(*p->nb_w));
	if (p->nb == NULL || p->nb_theta == NULL || p->nb_w == NULL)
		return DP_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct nb *b = &p->nb[i];

		if (dp_tls_check_name(ids[i]) < 0)
			return dp_error_set(DP_EINVAL, "--graph %s: neighbour id '%s' cannot be a "
					    "certificate identity", s->graph, ids[i]);
		snprintf(b->id, sizeof(b->id), "%s", ids[i]);
		b->peer = p;
		b->w = w[i];
		b->dialer = strcmp(p->cfg.id, ids[i]) < 0;
		b->theta = calloc(p->p ? p->p : 1, sizeof(double));
		if (b->theta == NULL)
			return DP_ENOMEM;
		p->nb_theta[i] = b->theta;
		p->nb_w[i] = w[i];
	}
	return 0;
}

/* The steps of node `who` in the schedule agent[steps] (1-based steps). */
static int steps_of(const size_t *agent, size_t steps, size_t who, uint64_t **out, size_t *n)
{
	size_t k = 0;
	uint64_t *v;

	for (size_t i = 0; i < steps; i++)
		k += agent[i] == who;
	*n = k;
	*out = NULL;
	if (k == 0)
		return 0;
	v = malloc(k * sizeof(*v));
	if (v == NULL)
		return DP_ENOMEM;
	k = 0;
	for (size_t i = 0; i < steps; i++)
		if (agent[i] == who)
			v[k++] = (uint64_t)i + 1;
	*out = v;
	return 0;
}

/* --schedule (common/core/schedule.h, the simulator's file): our steps and
 * each neighbour's. */
static int load_schedule(struct own_peer *p)
{
	const struct own_settings *s = p->cfg.set;
	size_t n = dp_graph_nodes(p->graph), *agent = NULL, steps = 0;
	const char **ids;
	int r;

	if (s->schedule == NULL)
		return 0;
	ids = calloc(n, sizeof(*ids));
	if (ids == NULL)
		return DP_ENOMEM;
	for (size_t i = 0; i < n; i++)
		ids[i] = dp_graph_id(p->graph, i);
	r = dp_schedule_load(s->schedule, ids, n, &agent, &steps);
	free(ids);
	if (r < 0)
		return wrapf(r, "--schedule %s: %s", s->schedule);
	r = steps_of(agent, steps, (size_t)dp_graph_find(p->graph, p->cfg.id), &p->my_steps,
		     &p->n_my);
	for (size_t i = 0; r == 0 && i < p->n_nb; i++)
		r = steps_of(agent, steps, (size_t)dp_graph_find(p->graph, p->nb[i].id),
			     &p->nb[i].steps, &p->nb[i].n_steps);
	free(agent);
	if (r < 0)
		return r;
	if (p->n_my != p->T)
		return dp_error_set(DP_EINVAL, "--schedule %s lists %zu steps of '%s' but "
				    "--wakeups is %llu", s->schedule, p->n_my, p->cfg.id,
				    (unsigned long long)p->T);
	return 0;
}

/* The ledger: cap and shares (docs/peer-agents.md "Privacy"), the plan
 * `dpasync sim --mode p2p` simulates too.  Laplace: the ledger's epsilon
 * cap is the plan's.  Gaussian: the shares are in rho, and the ledger's
 * cap stays --epsilon, which the budget turns into the plan's rho cap by
 * the same dp_zcdp_cap over the same T + K answers of p coordinates at
 * --delta (own_budget_bind_mech). */
static int plan_budget(struct own_peer *p, struct own_budget_config *bc)
{
	const struct own_settings *s = p->cfg.set;
	dp_compose_budget b;
	uint64_t slack_nano;
	int r;

	if (s->mechanism == DP_MECH_GAUSSIAN)
		r = dp_compose_plan_gauss(s->epsilon, s->warm_start, p->warm, s->delta, p->T,
					  p->p, &b, &slack_nano);
	else
		r = dp_compose_plan(s->epsilon, s->warm_start, p->warm, s->delta, p->T, &b);
	if (r < 0)
		return r;
	bc->epsilon = s->mechanism == DP_MECH_GAUSSIAN ? s->epsilon : b.cap;
	bc->eps_step = b.eps_step;
	p->eps_warm_step = b.eps_warm;
	return 0;
}

/* A restart with the other --mechanism: the ledger's unit says which
 * mechanism its charges were made with, and an agent's never changes
 * (its plan would not be the one charged so far). */
static int check_mechanism(struct own_peer *p)
{
	const struct own_settings *s = p->cfg.set;
	dp_mech had = DP_MECH_LAPLACE;
	int r;

	r = own_budget_job_mech(p->cfg.budget, "peer", &had);
	if (r < 0)
		return r;
	if (r == 0 || had == (dp_mech)s->mechanism)
		return 0;   /* a new ledger, or one of this mechanism */
	return dp_error_set(DP_EINVAL, "--ledger %s holds this agent's %s charges (nano-%s) but "
			    "--mechanism is %s: an agent's mechanism never changes; restart it "
			    "with --mechanism %s, or in a new ledger directory",
			    s->ledger, dp_query_mech_name(had),
			    had == DP_MECH_GAUSSIAN ? "rho" : "epsilon",
			    dp_query_mech_name((dp_mech)s->mechanism), dp_query_mech_name(had));
}

static int restore(struct own_peer *p)
{
	struct own_budget_status st;
	dp_modelfile mf;
	int r;

	own_budget_status(p->cfg.budget, &st);
	if (st.answers == 0)
		return 0;
	if (p->rel.on && p->rel.grad0) {   /* no model: the release file */
		p->done = st.answers;
		return own_peerserve_restore(p, st.answers);
	}
	/* A restart: the ledger says how far we got; the model saved after
	 * the last adopted wake-up is where we resume (a charge whose model
	 * was never saved was never released either). */
	p->done = st.answers > p->warm ? st.answers - p->warm : 0;
	r = dp_modelfile_read(p->cfg.model_out, &mf);
	if (r == DP_ENOENT && p->cfg.model_before != NULL &&
	    access(p->cfg.model_before, F_OK) == 0)
		/* Sibling ledger directories all kept their model there: it
		 * may be another agent's, so it is neither adopted nor
		 * silently dropped for theta = 0. */
		return dp_error_set(DP_EINVAL, "--ledger %s: %llu charges but no model at %s; %s, "
				    "where agents kept their model before, may be another agent's: "
				    "move it to %s if it is this agent's, or pass --model-out %s to "
				    "go on from theta = 0 (docs/peer-agents.md §4)",
				    p->cfg.set->ledger, (unsigned long long)st.answers,
				    p->cfg.model_out, p->cfg.model_before, p->cfg.model_out,
				    p->cfg.model_out);
	if (r == 0 && mf.p == p->p) {
		memcpy(p->theta, mf.theta, p->p * sizeof(double));
		p->released = true;
	}
	if (r == 0)
		dp_modelfile_free(&mf);
	if (p->cfg.set->schedule && p->done > 0 && p->done <= p->n_my)
		p->step = p->my_steps[p->done - 1];
	else
		p->step = p->done;
	return 0;
}

/* The trace: --trace, or trace.csv in the ledger directory, which is this
 * agent's alone (its lock), never its parent, which sibling ledger
 * directories share. */
static int open_trace(struct own_peer *p)
{
	const char *path = p->cfg.set->trace;
	char buf[4096];
	struct stat st;
	int r;

	if (path == NULL) {
		snprintf(buf, sizeof(buf), "%s/trace.csv", p->cfg.set->ledger);
		path = buf;
	}
	r = dp_file_fopen_private(path, "a", &p->trace);
	if (r < 0) {
		char detail[512];

		snprintf(detail, sizeof(detail), "%s", dp_error_detail(r));
		return dp_error_set(r == DP_ENOENT ? DP_ENOENT : DP_EIO, "--trace %s", detail);
	}
	if (fstat(fileno(p->trace), &st) == 0 && st.st_size == 0)
		fprintf(p->trace, "wakeup,step,time_unix,secs,eps_spent,eps_left,connected\n");
	return 0;
}

int own_peer_new(const struct own_peer_config *cfg, struct own_peer **out)
{
	const struct own_settings *s = cfg->set;
	struct own_budget_config bc;
	struct own_peer *p;
	int r;

	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return DP_ENOMEM;
	p->cfg = *cfg;
	p->p = cfg->ds->p;
	/* --release grad0: one release, the whole budget */
	p->T = s->serve && s->release == OWN_RELEASE_GRAD0 ? 1 : s->wakeups;
	p->warm = s->warm_start > 0 ? s->warm_steps : 0;
	p->theta = calloc(p->p, sizeof(double));
	p->cand = calloc(p->p, sizeof(double));
	p->grad = calloc(p->p, sizeof(double));
	if (p->theta == NULL || p->cand == NULL || p->grad == NULL) {
		r = DP_ENOMEM;
		goto fail;
	}
	p->lambda = s->lambda >= 0 ? s->lambda : s->lambda_per_row / (double)cfg->ds->n;
	p->ap.p = p->p;
	p->ap.mu = s->mu;
	p->ap.c = s->confidence;
	p->ap.lambda = p->lambda;
	p->ap.L_loc = dp_algo_p2p_smoothness(s->model, s->x2max > 0 ? s->x2max : (double)p->p,
					     p->lambda);
	if (!(p->ap.L_loc > 0)) {
		r = dp_error_set(DP_EINVAL, "--model must be linear or logistic in peer mode "
				 "(the update needs a smooth loss)");
		goto fail;
	}
	r = dp_model_check_data((dp_model)s->model, cfg->ds);
	if (r < 0)
		goto fail;
	r = load_graph(p);
	if (r == 0)
		r = load_schedule(p);
	if (r == 0)
		r = own_peerserve_init(p);
	if (r < 0)
		goto fail;
	bc = cfg->budget_cfg;
	r = plan_budget(p, &bc);
	if (r < 0)
		goto fail;
	bc.answers_cap = p->T + p->warm;
	/* The lifetime cap counts ledger charges: by default one run's worth,
	 * which under advanced composition is above --epsilon. */
	if (s->lifetime_epsilon == 0)
		bc.lifetime = bc.epsilon;
	/* The ledger of job "peer" (its identity names the agent and the job,
	 * checked by dp_ledger_open): a learner's job is never spent here. */
	r = own_budget_open(cfg->budget, &bc);
	if (r == 0)
		r = check_mechanism(p);
	/* --check-config verifies what exists and creates nothing. */
	if (r == 0 && !bc.check_only)
		r = own_budget_bind_mech(cfg->budget, "peer", bc.answers_cap,
					 (dp_mech)s->mechanism, p->p);
	if (r < 0)
		goto fail;
	r = restore(p);
	/* --check-config creates nothing (the ledger directory may not exist). */
	if (r == 0 && !bc.check_only)
		r = open_trace(p);
	if (r < 0)
		goto fail;

	uv_timer_init(cfg->loop, &p->linger);
	p->linger.data = p;
	own_peerlink_init(p, on_model);
	*out = p;
	return 0;
fail:
	own_peer_free(p);
	return r;
}

int own_peer_listen(struct own_peer *p)
{
	char host[DP_ADDR_HOST_MAX + 1];
	uint16_t port;
	int r;

	r = dp_addr_split("--listen", p->cfg.set->listen, DP_ADDR_PORT_ZERO, host, sizeof(host),
			  &port);
	if (r < 0)
		return r;
	r = own_peerlink_listen(p, host, port);
	if (r < 0)
		return wrapf(r, "--listen %s: %s", p->cfg.set->listen);
	return 0;
}

uint16_t own_peer_port(const struct own_peer *p)
{
	return p->port;
}

static void warm_start(struct own_peer *p)
{
	struct own_budget_status st;
	int r;

	own_budget_status(p->cfg.budget, &st);
	if (p->warm == 0 || st.answers > 0)
		return;   /* none, or already done before a restart */
	for (uint64_t k = 1; k <= p->warm; k++) {
		r = noisy_step(p, k, p->eps_warm_step, true);
		if (r < 0) {
			stop(p, DP_EXIT_FAIL);
			return;
		}
	}
	p->step = 0;
	r = save_model(p);
	if (r < 0)
		DP_WARN("peer", "cannot save %s: %s", p->cfg.model_out, dp_error_detail(r));
	DP_INFO("peer", "warm start done steps=%llu epsilon=%g", (unsigned long long)p->warm,
		p->cfg.set->warm_start);
}

void own_peer_start(struct own_peer *p)
{
	struct own_budget_status st;
	int r;

	own_budget_status(p->cfg.budget, &st);
	/* A Gaussian agent's share is rho; its spending is reported as
	 * epsilon at --delta (own_budget_status). */
	DP_INFO("peer", "starting id=%s port=%u neighbours=%zu wakeups=%llu done=%llu "
		"mechanism=%s %s=%.9g", p->cfg.id, (unsigned)p->port, p->n_nb,
		(unsigned long long)p->T, (unsigned long long)p->done,
		dp_query_mech_name((dp_mech)p->cfg.set->mechanism),
		st.gaussian ? "rho_step" : "eps_step", p->cfg.budget->eps_q);
	if (st.answers > 0 && p->rel.on && p->rel.grad0)
		DP_INFO("peer", "resuming after the release (%llu charge in the ledger): %s",
			(unsigned long long)st.answers, p->rel.have[p->rel.self] ?
			"release restored from release.json, charged before the restart" :
			"the release was lost before it was saved; none is drawn again");
	else if (st.answers > 0)
		DP_INFO("peer", "resuming wakeups=%llu of %llu from the ledger (%llu charges) "
			"model=%s", (unsigned long long)p->done, (unsigned long long)p->T,
			(unsigned long long)st.answers,
			p->released ? p->cfg.model_out : "none (theta = 0)");
	warm_start(p);
	if (p->closed)
		return;
	own_peerlink_dial_all(p);
	if (p->rel.on && p->rel.grad0) {
		if (p->done == 0) {
			r = own_peerserve_release(p);
			if (r < 0) {
				stop(p, dp_exit_status(r, DP_EXIT_PHASE_RUN));
				return;
			}
			p->done = 1;
			if (p->cfg.m->wakeups)
				dp_metrics_inc(p->cfg.m->wakeups);
		}
		finish(p, "released");
		return;
	}
	if (p->done >= p->T) {
		finish(p, "wake-ups spent");
		return;
	}
	if (p->cfg.set->schedule) {
		progress(p);
		return;
	}
	r = own_clock_start(&p->clock, p->cfg.loop, p->cfg.bits, p->cfg.set->rate, on_tick,
			    on_clock_fail, p);
	if (r < 0) {
		DP_ERROR("peer", "clock: %s", dp_error_detail(r));
		stop(p, dp_exit_status(r, DP_EXIT_PHASE_RUN));
		return;
	}
	p->clock_on = true;
}

static void close_timer(uv_timer_t *t)
{
	if (t->loop != NULL && !uv_is_closing((uv_handle_t *)t))
		uv_close((uv_handle_t *)t, NULL);
}

void own_peer_close(struct own_peer *p)
{
	if (p == NULL || p->closed)
		return;
	p->closed = true;
	if (p->clock_on) {
		own_clock_close(&p->clock);
		p->clock_on = false;
	}
	close_timer(&p->linger);
	own_peerlink_close(p);
}

void own_peer_free(struct own_peer *p)
{
	if (p == NULL)
		return;
	own_peerserve_free(p);
	for (size_t i = 0; p->nb && i < p->n_nb; i++) {
		free(p->nb[i].theta);
		free(p->nb[i].steps);
	}
	free(p->nb);
	free(p->nb_theta);
	free(p->nb_w);
	if (p->theta)
		OPENSSL_cleanse(p->theta, p->p * sizeof(double));
	free(p->theta);
	if (p->cand)
		OPENSSL_cleanse(p->cand, p->p * sizeof(double));
	free(p->cand);
	if (p->grad)
		OPENSSL_cleanse(p->grad, p->p * sizeof(double));
	free(p->grad);
	free(p->my_steps);
	dp_graph_free(p->graph);
	if (p->trace)
		fclose(p->trace);
	free(p);
}
