/* learnerd: checkpoint.json, the learner's whole state (docs/design.md §9).
 *
 * Versioned JSON written atomically (common/core/file.h: temp file, fsync,
 * rename, fsync of the directory), doubles with 17 significant digits so
 * that they read back bit for bit.  The trace is flushed and fsynced first,
 * so after a crash it holds at least k_done rows (resume truncates it).
 *
 * Query ids must never repeat across a crash (an owner refuses a k it has
 * already charged).  Every checkpoint therefore reserves a block of ids:
 * ids below query_id_reserved may be sent before the next checkpoint, and
 * a resumed learner continues at query_id_reserved. */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/json.h"
#include "common/core/file.h"
#include "common/core/log.h"
#include "learner/lrn.h"
#include "common/core/modelfile.h"

#define LRN_CKPT_MAX ((size_t)1 << 30)

static uint64_t lrn__block(const struct lrn *L)
{
	uint64_t c = L->s->checkpoint_every;

	if (c > ((uint64_t)1 << 20))
		c = (uint64_t)1 << 20;
	return 1024 + 2 * c;
}

static struct json_object *lrn__dbl(double v)
{
	char buf[40];

	snprintf(buf, sizeof(buf), "%.17g", v);
	return json_object_new_double_s(v, buf);
}

static int lrn__add(struct json_object *o, const char *key, struct json_object *v)
{
	if (v == NULL)
		return -1;
	return json_object_object_add(o, key, v);
}

static struct json_object *lrn__job_json(const struct lrn *L)
{
	struct json_object *j = json_object_new_object(), *ids = json_object_new_array();
	int bad = (j == NULL || ids == NULL);

	for (size_t i = 0; !bad && i < L->N; i++)
		bad |= json_object_array_add(ids, json_object_new_string(L->owners[i].id)) != 0;
	if (bad) {
		json_object_put(j);
		json_object_put(ids);
		return NULL;
	}
	bad |= lrn__add(j, "name", json_object_new_string(L->s->job));
	bad |= lrn__add(j, "model", json_object_new_string(dp_model_name(L->model)));
	bad |= lrn__add(j, "T", json_object_new_uint64(L->T));
	bad |= lrn__add(j, "p", json_object_new_uint64(L->p));
	bad |= lrn__add(j, "owners", ids);
	bad |= lrn__add(j, "lambda", lrn__dbl(L->s->lambda));
	bad |= lrn__add(j, "theta_max", lrn__dbl(L->s->theta_max));
	bad |= lrn__add(j, "clip_l1", lrn__dbl(lrn_state_clip(L)));
	bad |= lrn__add(j, "bias", json_object_new_boolean(L->s->bias));
	bad |= lrn__add(j, "freq_correction", json_object_new_boolean(L->s->freq_correction));
	bad |= lrn__add(j, "eta", lrn__dbl(L->eta));
	bad |= lrn__add(j, "rho", lrn__dbl(L->rho));
	bad |= lrn__add(j, "n_total", json_object_new_uint64(L->n_total));
	if (bad) {
		json_object_put(j);
		return NULL;
	}
	return j;
}

int lrn_ckpt_save(struct lrn *L, bool final)
{
	struct json_object *root, *st, *owners;
	uint64_t reserved = final ? L->next_qid : L->next_qid + lrn__block(L);
	const char *text;
	size_t len;
	int bad, rc;

	rc = lrn_trace_sync(L);
	if (rc < 0)
		return rc;
	root = json_object_new_object();
	st = json_object_new_object();
	owners = json_object_new_array();
	bad = (root == NULL || st == NULL || owners == NULL);
	if (bad) {
		json_object_put(root);
		json_object_put(st);
		json_object_put(owners);
		return dp_error_set(DP_ENOMEM, "checkpoint: out of memory");
	}
	bad |= lrn__add(root, "format", json_object_new_string(LRN_CKPT_FORMAT));
	bad |= lrn__add(root, "version", json_object_new_int(LRN_CKPT_VERSION));
	bad |= lrn__add(root, "written_unix", lrn__dbl(lrn_wall()));
	bad |= lrn__add(root, "job", lrn__job_json(L));
	bad |= lrn__add(st, "k_done", json_object_new_uint64(L->k_done));
	bad |= lrn__add(st, "next_query_id", json_object_new_uint64(L->next_qid));
	bad |= lrn__add(st, "query_id_reserved", json_object_new_uint64(reserved));
	bad |= lrn__add(st, "mode", json_object_new_string(
				L->s->mode == LRN_MODE_BROADCAST ? "broadcast" : "request"));
	bad |= lrn__add(st, "max_inflight", json_object_new_uint64(L->s->max_inflight));
	bad |= lrn__add(st, "theta_L", dp_json_double_array(L->theta_L, L->p));
	for (size_t i = 0; !bad && i < L->N; i++) {
		const struct lrn_owner *o = &L->owners[i];
		struct json_object *oj = json_object_new_object();

		if (oj == NULL || json_object_array_add(owners, oj) != 0) {
			json_object_put(oj);
			bad = 1;
			break;
		}
		bad |= lrn__add(oj, "id", json_object_new_string(o->id));
		bad |= lrn__add(oj, "n_rows", json_object_new_uint64(o->n_rows));
		bad |= lrn__add(oj, "iterations", json_object_new_uint64(o->iterations));
		bad |= lrn__add(oj, "epsilon_spent", lrn__dbl(o->eps_spent));
		bad |= lrn__add(oj, "exhausted", json_object_new_boolean(o->exhausted));
		bad |= lrn__add(oj, "theta", dp_json_double_array(o->theta, L->p));
	}
	if (bad || lrn__add(st, "owners", owners) != 0) {
		if (bad)
			json_object_put(owners);
		json_object_put(st);
		json_object_put(root);
		return dp_error_set(DP_ENOMEM, "checkpoint: out of memory");
	}
	owners = NULL;
	if (lrn__add(root, "state", st) != 0) {
		json_object_put(st);
		json_object_put(root);
		return dp_error_set(DP_ENOMEM, "checkpoint: out of memory");
	}
	text = json_object_to_json_string_length(root, JSON_C_TO_STRING_PRETTY |
						 JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (text == NULL) {
		json_object_put(root);
		return dp_error_set(DP_ENOMEM, "checkpoint: out of memory");
	}
	rc = dp_file_write_atomic(L->ckpt_path, text, len, 0644);
	json_object_put(root);
	if (rc < 0)
		return rc;
	L->qid_reserved = reserved;
	DP_DEBUG("learner", "checkpoint k=%llu next_query=%llu reserved=%llu",
		 (unsigned long long)L->k_done, (unsigned long long)L->next_qid,
		 (unsigned long long)reserved);
	return 0;
}

/* ---- loading ------------------------------------------------------------- */

struct lrn__rd {
	const char *path;
	int rc;
};

static struct json_object *lrn__get(struct lrn__rd *r, struct json_object *o, const char *key,
				    json_type type)
{
	struct json_object *v = NULL;

	if (r->rc)
		return NULL;
	if (!json_object_object_get_ex(o, key, &v) || v == NULL) {
		r->rc = dp_error_set(DP_EFORMAT, "%s: missing field '%s'", r->path, key);
		return NULL;
	}
	if (type == json_type_double) {
		if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
			r->rc = dp_error_set(DP_EFORMAT, "%s: field '%s' is not a number", r->path, key);
	} else if (!json_object_is_type(v, type)) {
		r->rc = dp_error_set(DP_EFORMAT, "%s: field '%s' has the wrong type", r->path, key);
	}
	return r->rc ? NULL : v;
}

static uint64_t lrn__u64(struct lrn__rd *r, struct json_object *o, const char *key)
{
	struct json_object *v = lrn__get(r, o, key, json_type_int);
	int64_t s;

	if (v == NULL)
		return 0;
	s = json_object_get_int64(v);
	if (s < 0) {
		r->rc = dp_error_set(DP_EFORMAT, "%s: field '%s' is negative", r->path, key);
		return 0;
	}
	return json_object_get_uint64(v);
}

static double lrn__d(struct lrn__rd *r, struct json_object *o, const char *key)
{
	struct json_object *v = lrn__get(r, o, key, json_type_double);
	double d;

	if (v == NULL)
		return 0;
	d = json_object_get_double(v);
	if (!isfinite(d)) {
		r->rc = dp_error_set(DP_EFORMAT, "%s: field '%s' is not finite", r->path, key);
		return 0;
	}
	return d;
}

static const char *lrn__s(struct lrn__rd *r, struct json_object *o, const char *key)
{
	struct json_object *v = lrn__get(r, o, key, json_type_string);

	return v ? json_object_get_string(v) : NULL;
}

static void lrn__vec(struct lrn__rd *r, struct json_object *o, const char *key, size_t p,
		     double *out)
{
	struct json_object *v = lrn__get(r, o, key, json_type_array);

	if (v == NULL)
		return;
	if (json_object_array_length(v) != p) {
		r->rc = dp_error_set(DP_EFORMAT, "%s: '%s' has %zu values, expected p = %zu", r->path,
				     key, json_object_array_length(v), p);
		return;
	}
	for (size_t q = 0; q < p; q++) {
		struct json_object *e = json_object_array_get_idx(v, q);

		if (!json_object_is_type(e, json_type_double) && !json_object_is_type(e, json_type_int)) {
			r->rc = dp_error_set(DP_EFORMAT, "%s: '%s'[%zu] is not a number", r->path, key, q);
			return;
		}
		out[q] = json_object_get_double(e);
		if (!isfinite(out[q])) {
			r->rc = dp_error_set(DP_EFORMAT, "%s: '%s'[%zu] is not finite", r->path, key, q);
			return;
		}
	}
}

static bool lrn__same(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

#define LRN__MISMATCH(what, fmt, ckv, nowv)                                                   \
	dp_error_set(DP_EINVAL, "%s belongs to another job: %s is " fmt " in the checkpoint but " \
		     fmt " now", L->ckpt_path, what, ckv, nowv)

/* The settings that define the job, against the current configuration. */
static int lrn__check_job(struct lrn *L, struct lrn__rd *r, struct json_object *job,
			  size_t *p_out)
{
	struct json_object *ids;
	const char *name, *model;
	uint64_t T, p;
	double lambda, tmax, clip;
	bool bias, fc;

	name = lrn__s(r, job, "name");
	model = lrn__s(r, job, "model");
	T = lrn__u64(r, job, "T");
	p = lrn__u64(r, job, "p");
	lambda = lrn__d(r, job, "lambda");
	tmax = lrn__d(r, job, "theta_max");
	clip = lrn__d(r, job, "clip_l1");
	ids = lrn__get(r, job, "owners", json_type_array);
	{
		struct json_object *b = lrn__get(r, job, "bias", json_type_boolean);

		bias = b ? json_object_get_boolean(b) : false;
		b = lrn__get(r, job, "freq_correction", json_type_boolean);
		fc = b ? json_object_get_boolean(b) : false;
	}
	if (r->rc)
		return r->rc;
	if (strcmp(name, L->s->job) != 0)
		return LRN__MISMATCH("job", "'%s'", name, L->s->job);
	if (strcmp(model, dp_model_name(L->model)) != 0)
		return LRN__MISMATCH("model", "%s", model, dp_model_name(L->model));
	if (T != L->T)
		return LRN__MISMATCH("T", "%llu", (unsigned long long)T, (unsigned long long)L->T);
	if (p == 0 || p > ((uint64_t)1 << 30))
		return dp_error_set(DP_EFORMAT, "%s: bad p %llu", L->ckpt_path, (unsigned long long)p);
	if (L->p != 0 && p != L->p)
		return LRN__MISMATCH("p (features)", "%llu", (unsigned long long)p,
				     (unsigned long long)L->p);
	if (!lrn__same(lambda, L->s->lambda))
		return LRN__MISMATCH("lambda", "%.17g", lambda, L->s->lambda);
	if (!lrn__same(tmax, L->s->theta_max))
		return LRN__MISMATCH("theta-max", "%.17g", tmax, L->s->theta_max);
	if (!lrn__same(clip, lrn_state_clip_for(L, p)))
		return LRN__MISMATCH("clip", "%.17g", clip, lrn_state_clip_for(L, p));
	if (bias != L->s->bias)
		return LRN__MISMATCH("bias", "%s", bias ? "true" : "false",
				     L->s->bias ? "true" : "false");
	if (fc != L->s->freq_correction)
		return LRN__MISMATCH("freq-correction", "%s", fc ? "true" : "false",
				     L->s->freq_correction ? "true" : "false");
	if (json_object_array_length(ids) != L->N)
		return LRN__MISMATCH("the number of owners", "%zu", json_object_array_length(ids),
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
	return 0;
}

int lrn_ckpt_load(struct lrn *L)
{
	struct json_object *root = NULL, *job, *st, *owners;
	struct lrn__rd r = { .path = L->ckpt_path, .rc = 0 };
	enum json_tokener_error jerr;
	const char *fmt;
	char *text = NULL;
	size_t p = 0;
	uint64_t k, next, reserved, n_total, nsum = 0;
	double eta, rho, maxw = 0, want;
	double *theta_L = NULL, **thetas = NULL;
	int rc;

	rc = dp_file_read_all(L->ckpt_path, LRN_CKPT_MAX, &text, NULL);
	if (rc < 0)
		return rc;
	root = json_tokener_parse_verbose(text, &jerr);
	free(text);
	if (root == NULL || !json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return dp_error_set(DP_EFORMAT, "%s: not a JSON object (%s)", L->ckpt_path,
				    root ? "wrong type" : json_tokener_error_desc(jerr));
	}
	fmt = lrn__s(&r, root, "format");
	if (r.rc == 0 && strcmp(fmt, LRN_CKPT_FORMAT) != 0)
		r.rc = dp_error_set(DP_EFORMAT, "%s: not a learnerd checkpoint (format '%s')",
				    L->ckpt_path, fmt);
	if (r.rc == 0) {
		uint64_t ver = lrn__u64(&r, root, "version");

		if (r.rc == 0 && ver != LRN_CKPT_VERSION)
			r.rc = dp_error_set(DP_EFORMAT, "%s: checkpoint version %llu, this learnerd "
					    "reads version %d", L->ckpt_path, (unsigned long long)ver,
					    LRN_CKPT_VERSION);
	}
	job = lrn__get(&r, root, "job", json_type_object);
	st = lrn__get(&r, root, "state", json_type_object);
	if (r.rc) {
		rc = r.rc;
		goto out;
	}
	rc = lrn__check_job(L, &r, job, &p);
	if (rc < 0)
		goto out;
	k = lrn__u64(&r, st, "k_done");
	next = lrn__u64(&r, st, "next_query_id");
	reserved = lrn__u64(&r, st, "query_id_reserved");
	n_total = lrn__u64(&r, job, "n_total");
	eta = lrn__d(&r, job, "eta");
	rho = lrn__d(&r, job, "rho");
	owners = lrn__get(&r, st, "owners", json_type_array);
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
	theta_L = calloc(p, sizeof(double));
	thetas = calloc(L->N, sizeof(*thetas));
	if (theta_L == NULL || thetas == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	lrn__vec(&r, st, "theta_L", p, theta_L);
	for (size_t i = 0; i < L->N && r.rc == 0; i++) {
		struct json_object *oj = json_object_array_get_idx(owners, i);
		const char *id;
		struct lrn_owner *o = NULL;
		struct json_object *ex;

		if (!json_object_is_type(oj, json_type_object)) {
			r.rc = dp_error_set(DP_EFORMAT, "%s: owners[%zu] is not an object", L->ckpt_path, i);
			break;
		}
		id = lrn__s(&r, oj, "id");
		for (size_t j = 0; id && j < L->N; j++)
			if (strcmp(L->owners[j].id, id) == 0)
				o = &L->owners[j];
		if (r.rc == 0 && (o == NULL || thetas[o->idx] != NULL)) {
			r.rc = dp_error_set(DP_ECORRUPT, "%s: owners[%zu] '%s' unknown or repeated",
					    L->ckpt_path, i, id ? id : "");
			break;
		}
		if (r.rc)
			break;
		thetas[o->idx] = calloc(p, sizeof(double));
		if (thetas[o->idx] == NULL) {
			r.rc = dp_error_set(DP_ENOMEM, "out of memory");
			break;
		}
		lrn__vec(&r, oj, "theta", p, thetas[o->idx]);
		o->n_rows = lrn__u64(&r, oj, "n_rows");
		o->iterations = lrn__u64(&r, oj, "iterations");
		o->eps_spent = lrn__d(&r, oj, "epsilon_spent");
		ex = lrn__get(&r, oj, "exhausted", json_type_boolean);
		o->exhausted = ex ? json_object_get_boolean(ex) : false;
		if (r.rc == 0 && o->n_rows == 0)
			r.rc = dp_error_set(DP_ECORRUPT, "%s: owner '%s' has n_rows 0", L->ckpt_path, id);
		nsum += o->n_rows;
	}
	if (r.rc) {
		rc = r.rc;
		goto out;
	}
	if (nsum != n_total) {
		rc = dp_error_set(DP_ECORRUPT, "%s: n_total %llu is not the sum of n_rows %llu",
				  L->ckpt_path, (unsigned long long)n_total, (unsigned long long)nsum);
		goto out;
	}
	/* The step size: a given --eta/--rho must give the checkpoint's; with
	 * neither, the default from the same weights gives it too. */
	for (size_t i = 0; i < L->N; i++)
		if ((double)L->owners[i].n_rows / (double)n_total > maxw)
			maxw = (double)L->owners[i].n_rows / (double)n_total;
	if (L->p == 0) {
		L->p = p;    /* lrn_state_eta's default needs p */
		want = lrn_state_eta(L, maxw);
		L->p = 0;
	} else {
		want = lrn_state_eta(L, maxw);
	}
	if (!lrn__same(want, eta)) {
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
