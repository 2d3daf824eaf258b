/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: checkpoint.json, the learner's whole state (docs/design.md §9).
 *
 * Versioned JSON written atomically through common/core/json.h (temp file,
 * fsync, rename, fsync of the directory), doubles as the shortest text that
 * reads back bit for bit.  The trace is flushed and fsynced first, so after
 * a crash it holds at least k_done rows (resume truncates it).
 *
 * Query ids must never repeat across a crash (an owner refuses a k it has
 * already charged).  Every checkpoint therefore reserves a block of ids:
 * ids below query_id_reserved may be sent before the next checkpoint, and
 * a resumed learner continues at query_id_reserved.
 *
 * The plan (T, eta, clip, every K_i and the psi it predicts) is part of
 * the job: a resumed learner uses it and never plans again, so the owners'
 * ledgers, bound with their K_i, keep matching. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/json.h"
#include "common/core/log.h"
#include "learner/lrn.h"

#define CHECKPOINT_MAX ((size_t)1 << 30)

/* The ids one checkpoint reserves.  A checkpoint writes every owner's
 * state, O(N), and one is forced when the block runs out: 64 ids per
 * owner keep that under one owner record's cost per iteration (ids are
 * 64-bit; the ones a crash skips cost nothing). */
static uint64_t id_block(const struct lrn *L)
{
	uint64_t c = L->s->checkpoint_every;

	if (c > ((uint64_t)1 << 20))
		c = (uint64_t)1 << 20;
	return 1024 + 2 * c + 64 * (uint64_t)L->N;
}

/* ---- saving -------------------------------------------------------------- */

/* Each builder returns the new object, or NULL on allocation failure. */

static struct json_object *owner_ids(const struct lrn *L)
{
	struct json_object *ids = json_object_new_array();
	int rc = 0;

	if (ids == NULL)
		return NULL;
	for (size_t i = 0; rc == 0 && i < L->N; i++)
		rc = dp_json_push(ids, json_object_new_string(L->owners[i].id));
	if (rc != 0) {
		json_object_put(ids);
		return NULL;
	}
	return ids;
}

/* The plan; K_i in the order of job.owners. */
static struct json_object *plan_json(const struct lrn *L)
{
	struct json_object *pj = json_object_new_object(), *caps;
	int rc;

	if (pj == NULL)
		return NULL;
	rc = dp_json_add(pj, "T", json_object_new_uint64(L->T));
	if (rc == 0)
		rc = dp_json_add(pj, "eta", dp_json_double(L->eta));
	if (rc == 0)
		rc = dp_json_add(pj, "clip", dp_json_double(L->clip));
	caps = rc == 0 ? json_object_new_array() : NULL;
	for (size_t i = 0; caps != NULL && rc == 0 && i < L->N; i++)
		rc = dp_json_push(caps, json_object_new_uint64(L->owners[i].planned_cap));
	if (rc == 0)
		rc = dp_json_add(pj, "answers_cap", caps);
	else
		json_object_put(caps);
	/* Unknown after resuming a checkpoint written before plans existed. */
	if (rc == 0 && isfinite(L->psi_pred) && isfinite(L->psi_zero)) {
		rc = dp_json_add(pj, "psi", dp_json_double(L->psi_pred));
		if (rc == 0)
			rc = dp_json_add(pj, "psi_zero", dp_json_double(L->psi_zero));
		if (rc == 0)
			rc = dp_json_add(pj, "measured", json_object_new_boolean(L->measured));
	}
	if (rc != 0) {
		json_object_put(pj);
		return NULL;
	}
	return pj;
}

static struct json_object *job_json(const struct lrn *L)
{
	struct json_object *j = json_object_new_object();
	int rc;

	if (j == NULL)
		return NULL;
	rc = dp_json_add(j, "name", json_object_new_string(L->s->job));
	if (rc == 0)
		rc = dp_json_add(j, "model", json_object_new_string(dp_model_name(L->model)));
	if (rc == 0)
		rc = dp_json_add(j, "T", json_object_new_uint64(L->T));
	if (rc == 0)
		rc = dp_json_add(j, "p", json_object_new_uint64(L->p));
	if (rc == 0)
		rc = dp_json_add(j, "owners", owner_ids(L));
	if (rc == 0)
		rc = dp_json_add(j, "lambda", dp_json_double(L->s->lambda));
	if (rc == 0)
		rc = dp_json_add(j, "theta_max", dp_json_double(L->s->theta_max));
	if (rc == 0)
		rc = dp_json_add(j, "clip_l1", dp_json_double(L->clip));
	if (rc == 0)
		rc = dp_json_add(j, "bias", json_object_new_boolean(L->s->bias));
	if (rc == 0)
		rc = dp_json_add(j, "freq_correction", json_object_new_boolean(L->s->freq_correction));
	if (rc == 0)
		rc = dp_json_add(j, "eta", dp_json_double(L->eta));
	if (rc == 0)
		rc = dp_json_add(j, "rho", dp_json_double(L->rho));
	if (rc == 0)
		rc = dp_json_add(j, "n_total", json_object_new_uint64(L->n_total));
	if (rc == 0 && L->started)
		rc = dp_json_add(j, "plan", plan_json(L));
	if (rc != 0) {
		json_object_put(j);
		return NULL;
	}
	return j;
}

static struct json_object *owner_json(const struct lrn *L, const struct lrn_owner *o)
{
	struct json_object *oj = json_object_new_object();
	int rc;

	if (oj == NULL)
		return NULL;
	rc = dp_json_add(oj, "id", json_object_new_string(o->id));
	if (rc == 0)
		rc = dp_json_add(oj, "n_rows", json_object_new_uint64(o->n_rows));
	if (rc == 0)
		rc = dp_json_add(oj, "iterations", json_object_new_uint64(o->iterations));
	if (rc == 0)
		rc = dp_json_add(oj, "epsilon_spent", dp_json_double_inf(o->eps_spent));
	if (rc == 0)
		rc = dp_json_add(oj, "exhausted", json_object_new_boolean(o->exhausted));
	if (rc == 0)
		rc = dp_json_add(oj, "theta", dp_json_double_array(o->theta, L->p));
	if (rc != 0) {
		json_object_put(oj);
		return NULL;
	}
	return oj;
}

static const char *mode_name(int mode)
{
	static const char *const names[] = { "request", "broadcast", "sync1", "sync2" };

	return mode >= 0 && mode <= LRN_MODE_SYNC2 ? names[mode] : "?";
}

static struct json_object *state_json(const struct lrn *L, uint64_t reserved)
{
	struct json_object *st = json_object_new_object(), *owners;
	int rc;

	if (st == NULL)
		return NULL;
	rc = dp_json_add(st, "k_done", json_object_new_uint64(L->k_done));
	if (rc == 0)
		rc = dp_json_add(st, "next_query_id", json_object_new_uint64(L->next_qid));
	if (rc == 0)
		rc = dp_json_add(st, "query_id_reserved", json_object_new_uint64(reserved));
	if (rc == 0)
		rc = dp_json_add(st, "mode", json_object_new_string(mode_name(L->s->mode)));
	if (rc == 0)
		rc = dp_json_add(st, "max_inflight", json_object_new_uint64(L->s->max_inflight));
	if (rc == 0)
		rc = dp_json_add(st, "theta_L", dp_json_double_array(L->theta_L, L->p));
	/* sync2 publishes the running average (never read back: a sync job is
	 * not resumed, docs/learnerd.md §9). */
	if (rc == 0 && L->theta_hat != NULL)
		rc = dp_json_add(st, "theta_hat", dp_json_double_array(L->theta_hat, L->p));
	owners = rc == 0 ? json_object_new_array() : NULL;
	for (size_t i = 0; owners != NULL && rc == 0 && i < L->N; i++)
		rc = dp_json_push(owners, owner_json(L, &L->owners[i]));
	if (rc == 0) {
		rc = dp_json_add(st, "owners", owners);
	} else {
		json_object_put(owners);
	}
	if (rc != 0) {
		json_object_put(st);
		return NULL;
	}
	return st;
}

int lrn_checkpoint_save(struct lrn *L, bool final)
{
	struct json_object *root;
	uint64_t reserved;
	int rc;

	DP_REQUIRE(L != NULL && L->s != NULL && L->ckpt_path != NULL);
	/* Fail-stop, as the owner's ledger: after a failed write the state on
	 * disk and in memory may disagree (a lost trace row, pages a failed
	 * fsync dropped), and a later checkpoint that succeeds would make that
	 * durable.  The last good checkpoint stays (docs/reliability.md §4). */
	if (L->io_failed)
		return dp_error_set(DP_EIO, "%s: not written after an earlier write failure; the "
				    "last good checkpoint is kept", L->ckpt_path);
	reserved = final ? L->next_qid : L->next_qid + id_block(L);
	rc = lrn_trace_sync(L);
	if (rc < 0)
		return rc;
	root = json_object_new_object();
	if (root == NULL)
		return dp_error_set(DP_ENOMEM, "checkpoint: out of memory");
	rc = dp_json_add(root, "format", json_object_new_string(LRN_CHECKPOINT_FORMAT));
	if (rc == 0)
		rc = dp_json_add(root, "version", json_object_new_int(LRN_CHECKPOINT_VERSION));
	if (rc == 0)
		rc = dp_json_add(root, "written_unix", dp_json_double(lrn_clock_wall()));
	if (rc == 0)
		rc = dp_json_add(root, "job", job_json(L));
	if (rc == 0)
		rc = dp_json_add(root, "state", state_json(L, reserved));
	if (rc != 0) {
		json_object_put(root);
		return dp_error_set(DP_ENOMEM, "checkpoint: out of memory");
	}
	rc = dp_json_write_file(L->ckpt_path, root, DP_FILE_MODE_PRIVATE);
	json_object_put(root);
	if (rc < 0) {
		if (rc != DP_ENOMEM)
			L->io_failed = true;
		return rc;
	}
	L->qid_reserved = reserved;
	DP_DEBUG("learner", "checkpoint k=%llu next_query=%llu reserved=%llu",
		 (unsigned long long)L->k_done, (unsigned long long)L->next_qid,
		 (unsigned long long)reserved);
	return 0;
}

/* ---- loading ------------------------------------------------------------- */

static bool same(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

#define LRN_MISMATCH(what, fmt, ckv, nowv)                                                    \
	dp_error_set(DP_EINVAL, "%s belongs to another job: %s is " fmt " in the checkpoint but " \
		     fmt " now", L->ckpt_path, what, ckv, nowv)

/* The settings that define the job, against the current configuration.
 * T and the clip are the checkpoint's (its plan): a value given now must
 * agree; they are set on L here. */
static int check_job(struct lrn *L, dp_json_reader *r, struct json_object *job, size_t *p_out)
{
	struct json_object *ids;
	const char *name, *model;
	uint64_t T, p;
	double lambda, tmax, clip;
	bool bias, fc;

	name = dp_json_get_string(r, job, "name", true, NULL);
	model = dp_json_get_string(r, job, "model", true, NULL);
	T = dp_json_get_u64(r, job, "T", true, 0);
	p = dp_json_get_u64(r, job, "p", true, 0);
	lambda = dp_json_get_double(r, job, "lambda", true, 0);
	tmax = dp_json_get_double(r, job, "theta_max", true, 0);
	clip = dp_json_get_double(r, job, "clip_l1", true, 0);
	ids = dp_json_get(r, job, "owners", json_type_array, true);
	bias = dp_json_get_bool(r, job, "bias", true, false);
	fc = dp_json_get_bool(r, job, "freq_correction", true, false);
	if (r->rc)
		return r->rc;
	if (L->s->job_auto) {
		/* No --job given: the resumed job keeps its id. */
		char *copy = strdup(name);

		if (copy == NULL)
			return dp_error_set(DP_ENOMEM, "out of memory");
		free(L->s->job);
		L->s->job = copy;
		L->s->job_auto = false;
	}
	if (strcmp(name, L->s->job) != 0)
		return LRN_MISMATCH("job", "'%s'", name, L->s->job);
	if (strcmp(model, dp_model_name(L->model)) != 0)
		return LRN_MISMATCH("model", "%s", model, dp_model_name(L->model));
	if (L->s->T != 0 && T != L->s->T)
		return LRN_MISMATCH("T", "%llu", (unsigned long long)T, (unsigned long long)L->s->T);
	if (T < 1)
		return dp_error_set(DP_EFORMAT, "%s: bad T 0", L->ckpt_path);
	if (p == 0 || p > ((uint64_t)1 << 30))
		return dp_error_set(DP_EFORMAT, "%s: bad p %llu", L->ckpt_path, (unsigned long long)p);
	if (L->p != 0 && p != L->p)
		return LRN_MISMATCH("p (features)", "%llu", (unsigned long long)p,
				    (unsigned long long)L->p);
	if (!same(lambda, L->s->lambda))
		return LRN_MISMATCH("lambda", "%.17g", lambda, L->s->lambda);
	if (!same(tmax, L->s->theta_max))
		return LRN_MISMATCH("theta-max", "%.17g", tmax, L->s->theta_max);
	if (L->s->clip > 0 && !same(clip, L->s->clip))
		return LRN_MISMATCH("clip", "%.17g", clip, L->s->clip);
	if (!(clip > 0))
		return dp_error_set(DP_EFORMAT, "%s: bad clip_l1 %g", L->ckpt_path, clip);
	if (bias != L->s->bias)
		return LRN_MISMATCH("bias", "%s", bias ? "true" : "false",
				    L->s->bias ? "true" : "false");
	if (fc != L->s->freq_correction)
		return LRN_MISMATCH("freq-correction", "%s", fc ? "true" : "false",
				    L->s->freq_correction ? "true" : "false");
	if (json_object_array_length(ids) != L->N)
		return LRN_MISMATCH("the number of owners", "%zu", json_object_array_length(ids),
				    L->N);
	for (size_t i = 0; i < L->N; i++) {
		struct json_object *e = json_object_array_get_idx(ids, i);
		const char *id = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "";
		bool found = false;

		for (size_t j = 0; j < L->N; j++)
			found = found || strcmp(L->owners[j].id, id) == 0;
		if (!found)
			return dp_error_set(DP_EINVAL, "%s belongs to another job: owner '%s' of the "
					    "checkpoint is not in owners now", L->ckpt_path, id);
	}
	*p_out = (size_t)p;
	L->T = T;
	L->clip = clip;
	return 0;
}

/* The plan's K_i (job.owners order) into the owners, and its forecast.
 * Absent in a checkpoint written before plans existed: every K_i 0 (the
 * owners' own caps, else T) and no forecast. */
static int load_plan(struct lrn *L, dp_json_reader *r, struct json_object *job)
{
	struct json_object *pj, *ids, *caps;

	pj = dp_json_get(r, job, "plan", json_type_object, false);
	if (pj == NULL)
		return r->rc;
	r->where = "job.plan";
	ids = dp_json_get(r, job, "owners", json_type_array, true);
	caps = dp_json_get(r, pj, "answers_cap", json_type_array, true);
	L->psi_pred = dp_json_get_double(r, pj, "psi", false, NAN);
	L->psi_zero = dp_json_get_double(r, pj, "psi_zero", false, NAN);
	L->measured = dp_json_get_bool(r, pj, "measured", false, false);
	if (r->rc)
		return r->rc;
	if (json_object_array_length(caps) != L->N)
		return dp_json_fail(r, "'answers_cap' must have %zu numbers", L->N);
	for (size_t i = 0; i < L->N; i++) {
		struct json_object *e = json_object_array_get_idx(caps, i);
		const char *id = json_object_get_string(json_object_array_get_idx(ids, i));
		double v = dp_json_number(r, e, "answers_cap", 0);

		if (r->rc)
			return r->rc;
		if (!(v >= 0 && v <= 1e18 && v == floor(v)))
			return dp_json_fail(r, "answers_cap[%zu] is not a count", i);
		for (size_t j = 0; j < L->N; j++)
			if (id != NULL && strcmp(L->owners[j].id, id) == 0)
				L->owners[j].planned_cap = (uint64_t)v;
	}
	return 0;
}

/* The array `key` of o must hold n values: checked before n doubles are
 * allocated for it, so that a file claiming a huge p fails on its own
 * numbers instead of allocating for them. */
static int check_len(dp_json_reader *r, struct json_object *o, const char *key, size_t n)
{
	struct json_object *a = dp_json_get(r, o, key, json_type_array, true);

	if (a != NULL && json_object_array_length(a) != n)
		return dp_json_fail(r, "'%s' must have %zu numbers, has %zu", key, n,
				    json_object_array_length(a));
	return r->rc;
}

/* The owners' entries of the state into their counters and thetas[]
 * (p values each, allocated here).  0 or the error. */
static int load_owners(struct lrn *L, dp_json_reader *r, struct json_object *owners, size_t p,
		       double **thetas, uint64_t *nsum)
{
	char where[64];

	for (size_t i = 0; i < L->N && r->rc == 0; i++) {
		struct json_object *oj = json_object_array_get_idx(owners, i);
		struct lrn_owner *o = NULL;
		const char *id;

		snprintf(where, sizeof(where), "state.owners[%zu]", i);
		r->where = where;
		if (!json_object_is_type(oj, json_type_object)) {
			dp_json_fail(r, "not an object");
			break;
		}
		id = dp_json_get_string(r, oj, "id", true, NULL);
		if (r->rc)
			break;
		for (size_t j = 0; j < L->N; j++)
			if (strcmp(L->owners[j].id, id) == 0)
				o = &L->owners[j];
		if (o == NULL || thetas[o->idx] != NULL) {
			r->rc = dp_error_set(DP_ECORRUPT, "%s: owners[%zu] '%s' unknown or repeated",
					     L->ckpt_path, i, id);
			break;
		}
		if (check_len(r, oj, "theta", p) != 0)
			break;
		thetas[o->idx] = calloc(p, sizeof(double));
		if (thetas[o->idx] == NULL) {
			r->rc = dp_error_set(DP_ENOMEM, "out of memory");
			break;
		}
		dp_json_get_doubles(r, oj, "theta", thetas[o->idx], p);
		o->n_rows = dp_json_get_u64(r, oj, "n_rows", true, 0);
		o->iterations = dp_json_get_u64(r, oj, "iterations", true, 0);
		/* An owner without noise (epsilon inf) has spent "inf". */
		o->eps_spent = dp_json_get_double_inf(r, oj, "epsilon_spent", true, 0);
		o->exhausted = dp_json_get_bool(r, oj, "exhausted", true, false);
		if (r->rc == 0 && o->n_rows == 0)
			r->rc = dp_error_set(DP_ECORRUPT, "%s: owner '%s' has n_rows 0", L->ckpt_path, id);
		*nsum += o->n_rows;
	}
	r->where = NULL;
	return r->rc;
}

int lrn_checkpoint_load(struct lrn *L)
{
	struct json_object *root = NULL, *job, *st, *owners;
	dp_json_reader r = { .path = NULL, .where = NULL, .rc = 0 };
	const char *fmt;
	size_t p = 0;
	uint64_t ver, k, next, reserved, n_total, nsum = 0;
	double eta, rho, want;
	double *theta_L = NULL, **thetas = NULL;
	int rc;

	DP_REQUIRE(L != NULL && L->s != NULL && L->ckpt_path != NULL && L->owners != NULL);
	r.path = L->ckpt_path;
	rc = dp_json_read_file(L->ckpt_path, CHECKPOINT_MAX, &root);
	if (rc < 0)
		return rc;
	fmt = dp_json_get_string(&r, root, "format", true, NULL);
	if (r.rc == 0 && strcmp(fmt, LRN_CHECKPOINT_FORMAT) != 0)
		dp_json_fail(&r, "not a learnerd checkpoint (format '%s')", fmt);
	ver = dp_json_get_u64(&r, root, "version", true, 0);
	if (r.rc == 0 && ver != LRN_CHECKPOINT_VERSION)
		dp_json_fail(&r, "checkpoint version %llu, this learnerd reads version %d",
			     (unsigned long long)ver, LRN_CHECKPOINT_VERSION);
	job = dp_json_get(&r, root, "job", json_type_object, true);
	st = dp_json_get(&r, root, "state", json_type_object, true);
	if (r.rc) {
		rc = r.rc;
		goto out;
	}
	r.where = "job";
	rc = check_job(L, &r, job, &p);
	if (rc < 0)
		goto out;
	rc = load_plan(L, &r, job);
	if (rc < 0)
		goto out;
	r.where = "job";
	n_total = dp_json_get_u64(&r, job, "n_total", true, 0);
	eta = dp_json_get_double(&r, job, "eta", true, 0);
	rho = dp_json_get_double(&r, job, "rho", true, 0);
	r.where = "state";
	k = dp_json_get_u64(&r, st, "k_done", true, 0);
	next = dp_json_get_u64(&r, st, "next_query_id", true, 0);
	reserved = dp_json_get_u64(&r, st, "query_id_reserved", true, 0);
	owners = dp_json_get(&r, st, "owners", json_type_array, true);
	if (r.rc) {
		rc = r.rc;
		goto out;
	}
	if (k > L->T || next < 1 || reserved < next || n_total == 0 || !(eta > 0) || !(rho > 0) ||
	    json_object_array_length(owners) != L->N) {
		rc = dp_error_set(DP_ECORRUPT, "%s: inconsistent state (k_done, query ids, n, eta or "
				  "owners)", L->ckpt_path);
		goto out;
	}
	r.where = "state";
	rc = check_len(&r, st, "theta_L", p);
	if (rc < 0)
		goto out;
	theta_L = calloc(p, sizeof(double));
	thetas = calloc(L->N, sizeof(*thetas));
	if (theta_L == NULL || thetas == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	dp_json_get_doubles(&r, st, "theta_L", theta_L, p);
	rc = load_owners(L, &r, owners, p, thetas, &nsum);
	if (rc < 0)
		goto out;
	if (nsum != n_total) {
		rc = dp_error_set(DP_ECORRUPT, "%s: n_total %llu is not the sum of n_rows %llu",
				  L->ckpt_path, (unsigned long long)n_total, (unsigned long long)nsum);
		goto out;
	}
	/* The step size is the plan's: a given --eta/--rho must give it. */
	want = eta;
	if (L->s->eta > 0)
		want = L->s->eta;
	else if (L->s->rho > 0)
		want = dp_algo_eta_from_rho(L->N, L->T, L->s->lambda, L->s->rho);
	if (!same(want, eta)) {
		rc = dp_error_set(DP_EINVAL, "%s belongs to another job: the step size eta is %.17g in "
				  "the checkpoint but %.17g now (check --eta/--rho)", L->ckpt_path,
				  eta, want);
		goto out;
	}
	if (L->p == 0) {
		rc = lrn_state_set_p(L, p);
		if (rc < 0)
			goto out;
	}
	memcpy(L->theta_L, theta_L, p * sizeof(double));
	for (size_t i = 0; i < L->N; i++) {
		memcpy(L->owners[i].theta, thetas[i], p * sizeof(double));
		L->owners[i].ever_hello = true;
	}
	L->k_done = k;
	L->next_qid = reserved;
	L->qid_reserved = reserved;
	L->n_total = n_total;
	L->eta = eta;
	L->rho = rho;
	L->started = true;
	rc = 0;
out:
	if (thetas)
		for (size_t i = 0; i < L->N; i++)
			free(thetas[i]);
	free(thetas);
	free(theta_L);
	json_object_put(root);
	return rc;
}
