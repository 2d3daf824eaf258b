/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd --peer --serve refit: the agent's served model (docs/peer-agents.md
 * §6, the math of docs/p2p.md §7 in common/core/serve.h).
 *
 * The agent releases private messages only: with --release models its
 * final noisy model (the wake-ups of peer.c), with --release grad0 one
 * noisy clipped gradient at theta = 0 that spends its whole budget
 * (own_peerserve_release, charged before it may leave).  Releases travel
 * as PeerRelease messages (peerlink.c), relayed over the graph with
 * --prior all.  Once the agent holds every release its prior pools it
 * computes the prior from them, post-processing, and fits on its own rows
 * by dp_serve_agent, the simulator's call.  The served model uses the raw
 * rows: it is not private, it is written to --served-out (0600) and never
 * sent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/json.h"
#include "common/core/log.h"
#include "common/core/modelfile.h"
#include "common/core/serve.h"
#include "common/core/servefile.h"

#include "owner/peerlink.h"

const char *const own_serve_names[] = { "none", "refit", NULL };

int own_peerserve_validate(const struct own_settings *s)
{
	bool zero = false;

	if (!s->serve) {
		if (s->release_given || s->prior_given || s->scale_given || s->folds_given ||
		    s->curvature || s->taus.n || s->served_out)
			return dp_error_set(DP_EINVAL, "--release, --prior, --prior-scale, "
					    "--curvature, --tau, --folds and --served-out need "
					    "--serve refit");
		return 0;
	}
	if (!s->peer)
		return dp_error_set(DP_EINVAL, "--serve is for --peer only: an owner of a "
				    "learner's job serves no model of its own");
	if (s->curvature && s->release != OWN_RELEASE_GRAD0)
		return dp_error_set(DP_EINVAL, "--curvature turns released gradients into a "
				    "prior: it needs --release grad0");
	if (s->release == OWN_RELEASE_GRAD0 &&
	    (s->warm_start > 0 || s->schedule || s->wakeups_given))
		return dp_error_set(DP_EINVAL, "--release grad0 makes one release, the whole "
				    "budget: --wakeups, --schedule and --warm-start do not apply");
	for (size_t t = 0; t < s->taus.n; t++)
		zero = zero || s->taus.v[t] == 0;
	if (s->taus.n > 1 && !zero)
		return dp_error_set(DP_EINVAL, "--tau: a grid must include 0 (the local model is "
				    "always a candidate; one value fixes tau)");
	return 0;
}

/* ---- the releases held ---------------------------------------------------- */

int own_peerserve_init(struct own_peer *p)
{
	struct own_rel *r = &p->rel;
	const struct own_settings *s = p->cfg.set;

	r->on = s->serve != 0;
	if (!r->on)
		return 0;
	r->grad0 = s->release == OWN_RELEASE_GRAD0;
	r->all = s->prior == OWN_PRIOR_ALL;
	r->N = dp_graph_nodes(p->graph);
	r->self = (size_t)dp_graph_find(p->graph, p->cfg.id);
	r->need = calloc(r->N, sizeof(bool));
	r->have = calloc(r->N, sizeof(bool));
	r->rows = calloc(r->N, sizeof(uint64_t));
	r->vec = calloc(r->N * p->p, sizeof(double));
	if (r->need == NULL || r->have == NULL || r->rows == NULL || r->vec == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	r->need[r->self] = true;
	for (size_t j = 0; j < r->N; j++)
		r->need[j] = r->need[j] || r->all;
	for (size_t i = 0; i < p->n_nb; i++) {
		r->need[(size_t)dp_graph_find(p->graph, p->nb[i].id)] = true;
		p->nb[i].rel_known = calloc(r->N, sizeof(bool));
		if (p->nb[i].rel_known == NULL)
			return dp_error_set(DP_ENOMEM, "out of memory");
	}
	for (size_t j = 0; j < r->N; j++)
		r->n_need += r->need[j];
	return 0;
}

int own_peerserve_store(struct own_peer *p, size_t origin, const double *v, uint64_t rows)
{
	struct own_rel *r = &p->rel;

	if (origin >= r->N || !r->need[origin] || r->have[origin])
		return 0;
	memcpy(r->vec + origin * p->p, v, p->p * sizeof(double));
	r->rows[origin] = rows;
	r->have[origin] = true;
	r->n_have++;
	return 1;
}

/* ---- the one-shot release ---------------------------------------------------- */

static void release_path(const struct own_peer *p, char *buf, size_t n)
{
	snprintf(buf, n, "%s/release.json", p->cfg.set->ledger);
}

/* The release file: the noisy gradient, kept so that a restart resends
 * the release its ledger already paid for instead of paying again. */
static int save_release(struct own_peer *p, const double *g)
{
	dp_modelfile mf;
	char path[4096];

	memset(&mf, 0, sizeof(mf));
	mf.model = (dp_model)p->cfg.set->model;
	mf.p = p->p;
	mf.theta = (double *)g;
	mf.features = p->cfg.ds->names;
	mf.target = p->cfg.ds->target;
	mf.bias = p->cfg.set->bias;
	mf.T = 1;
	mf.lambda = p->lambda;
	mf.theta_max = p->cfg.set->theta_max;
	snprintf(mf.mode, sizeof(mf.mode), "release");
	release_path(p, path, sizeof(path));
	return dp_modelfile_write(path, &mf, DP_FILE_MODE_PRIVATE);
}

int own_peerserve_restore(struct own_peer *p, uint64_t answers)
{
	dp_modelfile mf;
	char path[4096];
	int r;

	if (!p->rel.on || !p->rel.grad0 || answers == 0)
		return 0;
	release_path(p, path, sizeof(path));
	r = dp_modelfile_read(path, &mf);
	if (r == 0 && mf.p == p->p) {
		own_peerserve_store(p, p->rel.self, mf.theta, p->cfg.ds->n);
	} else {
		/* Paid for but never saved: it never left either.  The prior goes
		 * without it rather than paying twice. */
		DP_WARN("peer", "ledger %s holds the release's charge but %s is %s: this agent's "
			"prior goes without its own release", p->cfg.set->ledger, path,
			r == 0 ? "of another width" : dp_error_detail(r));
		p->rel.need[p->rel.self] = false;
		p->rel.n_need--;
	}
	if (r == 0)
		dp_modelfile_free(&mf);
	return 0;
}

int own_peerserve_release(struct own_peer *p)
{
	struct own_budget_ticket t;
	struct own_budget_status after;
	const struct own_settings *s = p->cfg.set;
	double *g = calloc(p->p, sizeof(double));
	int r;

	if (g == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	r = own_budget_begin_eps(p->cfg.budget, 1, p->cfg.budget->eps_q, &t);
	if (r < 0)
		goto out;
	r = dp_serve_release((dp_model)s->model, p->cfg.ds, s->clip, (dp_mech)s->mechanism,
			     t.eps_q, p->cfg.noise, g);
	/* Saved before the charge: a crash between the two leaves an unpaid
	 * file that never left, which the restart (no charge) draws again. */
	if (r == 0)
		r = save_release(p, g);
	if (r < 0) {
		own_budget_abandon(p->cfg.budget, &t);
		DP_ERROR("peer", "release failed: %s", dp_error_detail(r));
		goto out;
	}
	r = own_budget_commit(p->cfg.budget, &t, &after);
	if (r < 0) {
		DP_ERROR("peer", "charge of the release failed: %s", dp_error_detail(r));
		goto out;
	}
	own_peerserve_store(p, p->rel.self, g, p->cfg.ds->n);
	DP_INFO("peer", "released the noisy clipped gradient at 0 (%s=%.9g, the whole budget)",
		after.gaussian ? "rho" : "epsilon", t.eps_q);
out:
	OPENSSL_cleanse(g, p->p * sizeof(double));
	free(g);
	return r;
}

/* ---- the served model ------------------------------------------------------------- */

/* The releases held into vec/w as the simulator pools them
 * (tools/lib/p2psim.c): graph, us (1) then our neighbours (W_ij) in the
 * graph's order; all, every agent (1) in node order; gradients weighted by
 * their rows too. */
static size_t pool(const struct own_peer *p, const double **vec, double *w)
{
	const struct own_rel *r = &p->rel;
	size_t k = 0;

	if (r->all) {
		for (size_t j = 0; j < r->N; j++)
			if (r->have[j]) {
				vec[k] = r->vec + j * p->p;
				w[k++] = r->grad0 ? (double)r->rows[j] : 1.0;
			}
		return k;
	}
	if (r->have[r->self]) {
		vec[k] = r->vec + r->self * p->p;
		w[k++] = r->grad0 ? (double)r->rows[r->self] : 1.0;
	}
	for (size_t i = 0; i < p->n_nb; i++) {
		size_t j = (size_t)dp_graph_find(p->graph, p->nb[i].id);

		if (r->have[j]) {
			vec[k] = r->vec + j * p->p;
			w[k++] = p->nb[i].w * (r->grad0 ? (double)r->rows[j] : 1.0);
		}
	}
	return k;
}

static int write_served(struct own_peer *p, const double *theta, const double *prior,
			double tau, size_t k)
{
	const struct own_settings *s = p->cfg.set;
	dp_modelfile mf;
	dp_servefile_from from = {
		.release = dp_serve_release_names[s->release],
		.prior = dp_serve_prior_names[s->prior],
		.curvature = p->rel.grad0 ? (s->curvature ? s->curvature : "own rows") : NULL,
		.mechanism = dp_query_mech_name((dp_mech)s->mechanism),
		.prior_scale = dp_serve_scale_names[s->prior_scale], .tau = tau,
		.folds = s->folds, .prior_theta = prior, .pooled = k,
		.expected = p->rel.n_need };

	memset(&mf, 0, sizeof(mf));
	mf.model = (dp_model)s->model;
	mf.p = p->p;
	mf.theta = (double *)theta;
	mf.features = p->cfg.ds->names;
	mf.target = p->cfg.ds->target;
	mf.bias = s->bias;
	mf.T = (size_t)p->done;
	mf.lambda = p->lambda;
	mf.theta_max = s->theta_max;
	/* Our raw rows made it: as private as the rows themselves. */
	return dp_servefile_write(p->cfg.served_out, &mf, &from, DP_FILE_MODE_PRIVATE);
}

/* The releases pooled by the served model already at path, or 0 when
 * there is none (or it cannot be read: then it is replaced). */
static size_t pooled_before(const char *path)
{
	struct json_object *j = NULL, *from, *k;
	size_t n = 0;

	if (dp_json_read_file(path, 1 << 24, &j) != 0)
		return 0;
	if (json_object_object_get_ex(j, "fitted_from", &from) &&
	    json_object_object_get_ex(from, "releases_pooled", &k) &&
	    json_object_is_type(k, json_type_int) && json_object_get_int64(k) > 0)
		n = (size_t)json_object_get_int64(k);
	json_object_put(j);
	return n;
}

int own_peerserve_fit(struct own_peer *p)
{
	const struct own_settings *s = p->cfg.set;
	struct own_rel *r = &p->rel;
	dp_serve_spec spec = { .gradients = r->grad0, .curvature = p->cfg.curvature,
			       .taus = s->taus.n ? s->taus.v : dp_serve_taus,
			       .ntau = s->taus.n ? s->taus.n : DP_SERVE_TAUS, .folds = s->folds,
			       .scale = s->prior_scale == 0, .bias_free = s->bias };
	const double **vec = calloc(r->N + 1, sizeof(*vec));
	double *w = calloc(r->N + 1, sizeof(double)), *out = calloc(2 * p->p, sizeof(double));
	size_t k, t = 0;
	int rc = 0;

	if (r->served)
		return 0;
	r->served = true;
	if (vec == NULL || w == NULL || out == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	k = pool(p, vec, w);
	if (k < r->n_need && pooled_before(p->cfg.served_out) > k) {
		/* A restart after the run (its neighbours gone): the model served
		 * then pooled more than this one could. */
		DP_WARN("peer", "kept the served model at %s, fitted from more releases than the "
			"%zu of %zu that arrived this time", p->cfg.served_out, k, r->n_need);
		goto out;
	}
	if (k < r->n_need)
		DP_WARN("peer", "serving from %zu of the %zu releases the prior pools (the others "
			"never arrived)", k, r->n_need);
	rc = dp_serve_agent((dp_model)s->model, p->cfg.ds, p->lambda, &spec, k, vec, w, out,
			    out + p->p, &t);
	if (rc == 0)
		rc = write_served(p, out, out + p->p, spec.taus[t], k);
	if (rc == 0)
		DP_INFO("peer", "served model written path=%s tau=%g releases=%zu/%zu: fitted on "
			"this agent's own rows, it is NOT differentially private and is never sent",
			p->cfg.served_out, spec.taus[t], k, r->n_need);
out:
	if (rc < 0)
		DP_ERROR("peer", "served model: %s", dp_error_detail(rc));
	if (out)
		OPENSSL_cleanse(out, 2 * p->p * sizeof(double));
	free(out);
	free(vec);
	free(w);
	return rc;
}

void own_peerserve_free(struct own_peer *p)
{
	struct own_rel *r = &p->rel;

	for (size_t i = 0; p->nb && i < p->n_nb; i++)
		free(p->nb[i].rel_known);
	free(r->need);
	free(r->have);
	free(r->rows);
	if (r->vec)
		OPENSSL_cleanse(r->vec, r->N * p->p * sizeof(double));
	free(r->vec);
}
