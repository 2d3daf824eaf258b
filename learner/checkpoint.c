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
#include "common/net/schemasum.h"
#include "learner/job.h"

#define CHECKPOINT_MAX ((size_t)1 << 30)

/* The ids one checkpoint reserves.  A checkpoint writes every owner's
 * state, O(N), and one is forced when the block runs out: 64 ids per
 * owner keep that under one owner record's cost per iteration (ids are
 * 64-bit; the ones a crash skips cost nothing). */
static uint64_t id_block(const struct lrn_job *J)
{
	uint64_t c = J->s->checkpoint_every;

	if (c > ((uint64_t)1 << 20))
		c = (uint64_t)1 << 20;
	return 1024 + 2 * c + 64 * (uint64_t)J->N;
}

/* ---- saving -------------------------------------------------------------- */

/* Each builder returns the new object, or NULL on allocation failure. */

static struct json_object *owner_ids(const struct lrn_job *J)
{
	struct json_object *ids = json_object_new_array();
	int rc = 0;

	if (ids == NULL)
		return NULL;
	for (size_t i = 0; rc == 0 && i < J->N; i++)
		rc = dp_json_push(ids, json_object_new_string(J->owners[i].id));
	if (rc != 0) {
		json_object_put(ids);
		return NULL;
	}
	return ids;
}

/* The plan; K_i in the order of job.owners. */
static struct json_object *plan_json(const struct lrn_job *J)
{
	struct json_object *pj = json_object_new_object(), *caps;
	int rc;

	if (pj == NULL)
		return NULL;
	rc = dp_json_add(pj, "T", json_object_new_uint64(J->T));
	if (rc == 0)
		rc = dp_json_add(pj, "eta", dp_json_double(J->eta));
	if (rc == 0)
		rc = dp_json_add(pj, "clip", dp_json_double(J->clip));
	caps = rc == 0 ? json_object_new_array() : NULL;
	for (size_t i = 0; caps != NULL && rc == 0 && i < J->N; i++)
		rc = dp_json_push(caps, json_object_new_uint64(J->owners[i].planned_cap));
	if (rc == 0)
		rc = dp_json_add(pj, "answers_cap", caps);
	else
		json_object_put(caps);
	/* Unknown after resuming a checkpoint written before plans existed. */
	if (rc == 0 && isfinite(J->psi_pred) && isfinite(J->psi_zero)) {
		rc = dp_json_add(pj, "psi", dp_json_double(J->psi_pred));
		if (rc == 0)
			rc = dp_json_add(pj, "psi_zero", dp_json_double(J->psi_zero));
		if (rc == 0)
			rc = dp_json_add(pj, "measured", json_object_new_boolean(J->measured));
	}
	if (rc != 0) {
		json_object_put(pj);
		return NULL;
	}
	return pj;
}

/* The agreed schema's summary (packed, lower-case hex): a resumed job
 * names what differs in the first mismatching Hello, before any matching
 * owner has said Hello again (docs/learnerd.md §5).  null: none known. */
static int add_summary(struct json_object *j, const struct lrn_job *J)
{
	static const char digits[] = "0123456789abcdef";
	char *hex;
	int rc;

	if (J->schema_sum == NULL || J->schema_fp[0] == '\0')
		return dp_json_add_null(j, "schema_summary");
	hex = malloc(2 * J->schema_sum_len + 1);
	if (hex == NULL)
		return DP_ENOMEM;
	for (size_t i = 0; i < J->schema_sum_len; i++) {
		hex[2 * i] = digits[J->schema_sum[i] >> 4];
		hex[2 * i + 1] = digits[J->schema_sum[i] & 15];
	}
	hex[2 * J->schema_sum_len] = '\0';
	rc = dp_json_add(j, "schema_summary", json_object_new_string(hex));
	free(hex);
	return rc;
}

static struct json_object *job_json(const struct lrn_job *J)
{
	struct json_object *j = json_object_new_object();
	int rc;

	if (j == NULL)
		return NULL;
	rc = dp_json_add(j, "name", json_object_new_string(J->s->job));
	if (rc == 0)
		rc = dp_json_add(j, "model", json_object_new_string(dp_model_name(J->model)));
	if (rc == 0)
		rc = dp_json_add(j, "T", json_object_new_uint64(J->T));
	if (rc == 0)
		rc = dp_json_add(j, "p", json_object_new_uint64(J->p));
	if (rc == 0)
		rc = dp_json_add(j, "owners", owner_ids(J));
	if (rc == 0)
		rc = dp_json_add(j, "lambda", dp_json_double(J->s->lambda));
	if (rc == 0)
		rc = dp_json_add(j, "theta_max", dp_json_double(J->s->theta_max));
	if (rc == 0)
		rc = dp_json_add(j, "clip_l1", dp_json_double(J->clip));
	if (rc == 0)
		rc = dp_json_add(j, "mechanism",
				 json_object_new_string(dp_query_mech_name((dp_mech)J->s->mechanism)));
	if (rc == 0)
		rc = dp_json_add(j, "bias", json_object_new_boolean(J->s->bias));
	if (rc == 0)
		rc = dp_json_add(j, "freq_correction", json_object_new_boolean(J->s->freq_correction));
	if (rc == 0)
		rc = dp_json_add(j, "eta", dp_json_double(J->eta));
	if (rc == 0)
		rc = dp_json_add(j, "rho", dp_json_double(J->rho));
	if (rc == 0)
		rc = dp_json_add(j, "n_total", json_object_new_uint64(J->n_total));
	/* The fingerprint the owners agreed on (docs/protocol.md §5): a resumed
	 * job admits only Hellos with it.  null: none agreed yet. */
	if (rc == 0 && J->schema_fp[0] != '\0') {
		rc = dp_json_add(j, "schema", json_object_new_string(J->schema_fp));
		if (rc == 0)
			rc = dp_json_add(j, "schema_from", json_object_new_string(J->schema_from));
	} else if (rc == 0) {
		rc = dp_json_add_null(j, "schema");
	}
	if (rc == 0)
		rc = add_summary(j, J);
	if (rc == 0 && J->started)
		rc = dp_json_add(j, "plan", plan_json(J));
	if (rc != 0) {
		json_object_put(j);
		return NULL;
	}
	return j;
}

/* Sync: 1 when o has answered the round being served.  A checkpoint
 * holds closed rounds only: a resumed job serves that round again, and
 * the answers of it are not counted (docs/learnerd.md §9 "Resume"). */
static uint64_t open_answer(const struct lrn_job *J, const struct lrn_owner *o)
{
	return LRN_SYNC(J) && J->sync_round != 0 && o->round_has ? 1 : 0;
}

static struct json_object *owner_json(const struct lrn_job *J, const struct lrn_owner *o)
{
	struct json_object *oj = json_object_new_object();
	int rc;

	if (oj == NULL)
		return NULL;
	rc = dp_json_add(oj, "id", json_object_new_string(o->id));
	if (rc == 0)
		rc = dp_json_add(oj, "n_rows", json_object_new_uint64(o->n_rows));
	if (rc == 0)
		rc = dp_json_add(oj, "iterations",
				 json_object_new_uint64(o->iterations - open_answer(J, o)));
	if (rc == 0)
		rc = dp_json_add(oj, "epsilon_spent", dp_json_double_inf(o->eps_spent));
	if (rc == 0)
		rc = dp_json_add(oj, "exhausted", json_object_new_boolean(o->exhausted));
	if (rc == 0)
		rc = dp_json_add(oj, "left_out", json_object_new_boolean(o->left_out));
	if (rc == 0)
		rc = dp_json_add(oj, "theta", dp_json_double_array(o->theta, J->p));
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

static struct json_object *state_json(const struct lrn_job *J, uint64_t reserved)
{
	struct json_object *st = json_object_new_object(), *owners;
	int rc;

	if (st == NULL)
		return NULL;
	rc = dp_json_add(st, "k_done", json_object_new_uint64(J->k_done));
	if (rc == 0)
		rc = dp_json_add(st, "next_query_id", json_object_new_uint64(J->next_qid));
	if (rc == 0)
		rc = dp_json_add(st, "query_id_reserved", json_object_new_uint64(reserved));
	if (rc == 0)
		rc = dp_json_add(st, "mode", json_object_new_string(mode_name(J->s->mode)));
	if (rc == 0)
		rc = dp_json_add(st, "max_inflight", json_object_new_uint64(J->s->max_inflight));
	if (rc == 0)
		rc = dp_json_add(st, "theta_L", dp_json_double_array(J->theta_L, J->p));
	/* The trace rows the checkpoint holds: k_done, or in sync the answers
	 * of the closed rounds (docs/learnerd.md §9 "Resume"). */
	if (rc == 0)
		rc = dp_json_add(st, "answers",
				 json_object_new_uint64(!LRN_SYNC(J) ? J->k_done
					: J->answers - (J->sync_round != 0 ? J->round_got : 0)));
	/* sync2 publishes the running average, which a resumed job continues. */
	if (rc == 0 && J->theta_hat != NULL)
		rc = dp_json_add(st, "theta_hat", dp_json_double_array(J->theta_hat, J->p));
	owners = rc == 0 ? json_object_new_array() : NULL;
	for (size_t i = 0; owners != NULL && rc == 0 && i < J->N; i++)
		rc = dp_json_push(owners, owner_json(J, &J->owners[i]));
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

int lrn_checkpoint_save(struct lrn_job *J, bool final)
{
	struct json_object *root;
	uint64_t reserved;
	int rc;

	DP_REQUIRE(J != NULL && J->s != NULL && J->ckpt_path != NULL);
	/* Fail-stop, as the owner's ledger: after a failed write the state on
	 * disk and in memory may disagree (a lost trace row, pages a failed
	 * fsync dropped), and a later checkpoint that succeeds would make that
	 * durable.  The last good checkpoint stays (docs/reliability.md §4). */
	if (J->io_failed)
		return dp_error_set(DP_EIO, "%s: not written after an earlier write failure; the "
				    "last good checkpoint is kept", J->ckpt_path);
	reserved = final ? J->next_qid : J->next_qid + id_block(J);
	rc = lrn_trace_sync(J);
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
		rc = dp_json_add(root, "job", job_json(J));
	if (rc == 0)
		rc = dp_json_add(root, "state", state_json(J, reserved));
	if (rc != 0) {
		json_object_put(root);
		return dp_error_set(DP_ENOMEM, "checkpoint: out of memory");
	}
	rc = dp_json_write_file(J->ckpt_path, root, DP_FILE_MODE_PRIVATE);
	json_object_put(root);
	if (rc < 0) {
		if (rc != DP_ENOMEM)
			J->io_failed = true;
		return rc;
	}
	J->qid_reserved = reserved;
	DP_DEBUG("learner", "checkpoint k=%llu next_query=%llu reserved=%llu",
		 (unsigned long long)J->k_done, (unsigned long long)J->next_qid,
		 (unsigned long long)reserved);
	return 0;
}

/* ---- versions ------------------------------------------------------------ */

/* Files of an older version are upgraded in memory, one version at a time,
 * before anything is read from them; only LRN_CHECKPOINT_VERSION is ever
 * written (docs/learnerd.md §5 "Versions").  A change of the format bumps
 * LRN_CHECKPOINT_VERSION and adds one step to steps[]: the function that
 * turns the tree of the version before it into the new one (members added
 * with the value that means what the old file meant, renamed or
 * restructured), with a fixture of the old version and its test in
 * tests/unit/test_checkpoint.c.  The assertion below makes a bump without
 * its step a compile error. */

/* Upgrade root, of version v, to version v + 1 in place; "version" is set
 * by the caller.  0, or an error with its detail (path: the file). */
typedef int (*upgrade_step)(struct json_object *root, dp_json_reader *r);

/* Version 2 keeps the schema fingerprint the owners agreed on (job.schema,
 * job.schema_from) and which owners the plan left out (state.owners[].
 * left_out).  A version-1 file knew neither: no fingerprint (null: the
 * resumed job learns it again from a majority of the owners' Hellos,
 * docs/learnerd.md §5 "Versions") and no owner left out (version 1 planned
 * every owner). */
static int upgrade_1_to_2(struct json_object *root, dp_json_reader *r)
{
	struct json_object *job = dp_json_get(r, root, "job", json_type_object, true);
	struct json_object *st = dp_json_get(r, root, "state", json_type_object, true);
	struct json_object *owners = dp_json_get(r, st, "owners", json_type_array, true);

	if (r->rc)
		return r->rc;
	if (dp_json_add_null(job, "schema") != 0)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t i = 0; i < json_object_array_length(owners); i++) {
		struct json_object *oj = json_object_array_get_idx(owners, i);

		if (!json_object_is_type(oj, json_type_object))
			continue;   /* load_owners reports it */
		if (dp_json_add(oj, "left_out", json_object_new_boolean(false)) != 0)
			return dp_error_set(DP_ENOMEM, "out of memory");
	}
	return 0;
}

/* Version 3 resumes sync jobs: state.answers, the trace rows the
 * checkpoint holds (k_done in the async modes; in sync the answers of the
 * closed rounds), and theta_hat is read back.  A version-2 file of an
 * async job gets answers = k_done; one of a sync job gets none, and
 * lrn_checkpoint_load refuses it as learnerd of version 2 did: its trace
 * position is unknown (a quorum round has Q to N answers). */
static int upgrade_2_to_3(struct json_object *root, dp_json_reader *r)
{
	struct json_object *st = dp_json_get(r, root, "state", json_type_object, true);
	const char *mode = dp_json_get_string(r, st, "mode", true, NULL);
	uint64_t k = dp_json_get_u64(r, st, "k_done", true, 0);

	if (r->rc)
		return r->rc;
	if (strcmp(mode, "sync1") == 0 || strcmp(mode, "sync2") == 0)
		return 0;
	if (dp_json_add(st, "answers", json_object_new_uint64(k)) != 0)
		return dp_error_set(DP_ENOMEM, "out of memory");
	return 0;
}

/* Version 4 keeps the agreed schema's summary (job.schema_summary).  A
 * version-3 file has none (null): a resumed job names what differs once
 * an owner with the job's fingerprint has said Hello again, as before. */
static int upgrade_3_to_4(struct json_object *root, dp_json_reader *r)
{
	struct json_object *job = dp_json_get(r, root, "job", json_type_object, true);

	if (r->rc)
		return r->rc;
	if (dp_json_add_null(job, "schema_summary") != 0)
		return dp_error_set(DP_ENOMEM, "out of memory");
	return 0;
}

/* Version 5 keeps the job's mechanism (job.mechanism, docs/learnerd.md
 * "Mechanisms").  A version-4 file's job was Laplace: there was no other. */
static int upgrade_4_to_5(struct json_object *root, dp_json_reader *r)
{
	struct json_object *job = dp_json_get(r, root, "job", json_type_object, true);

	if (r->rc)
		return r->rc;
	if (dp_json_add(job, "mechanism", json_object_new_string("laplace")) != 0)
		return dp_error_set(DP_ENOMEM, "out of memory");
	return 0;
}

/* steps[v] upgrades version v to v + 1; there never was a version 0. */
static const upgrade_step steps[] = {
	NULL,   /* 0: none */
	upgrade_1_to_2,
	upgrade_2_to_3,
	upgrade_3_to_4,
	upgrade_4_to_5,
};

_Static_assert(sizeof(steps) / sizeof(steps[0]) == LRN_CHECKPOINT_VERSION,
	       "a checkpoint version without its upgrade step (steps[])");

/* Check root's version and bring its tree to LRN_CHECKPOINT_VERSION.
 * DP_EFORMAT: missing, 0, or newer than this learnerd reads. */
static int upgrade(dp_json_reader *r, struct json_object *root)
{
	uint64_t ver = dp_json_get_u64(r, root, "version", true, 0);
	int rc;

	if (r->rc)
		return r->rc;
	if (ver == 0)
		return dp_json_fail(r, "checkpoint version 0 does not exist");
	if (ver > LRN_CHECKPOINT_VERSION)
		return dp_json_fail(r, "checkpoint version %llu is newer than this learnerd reads "
				    "(versions 1 to %d): resume with the learnerd that wrote it, or "
				    "a later one", (unsigned long long)ver, LRN_CHECKPOINT_VERSION);
	for (; ver < LRN_CHECKPOINT_VERSION; ver++) {
		rc = steps[ver](root, r);
		if (rc == 0 && dp_json_add(root, "version", json_object_new_uint64(ver + 1)) != 0)
			rc = dp_error_set(DP_ENOMEM, "out of memory");
		if (rc < 0) {
			if (r->rc == 0)
				r->rc = rc;
			return r->rc;
		}
		DP_DEBUG("learner", "%s: checkpoint version %llu read as %llu", r->path,
			 (unsigned long long)ver, (unsigned long long)ver + 1);
	}
	return 0;
}

/* ---- loading ------------------------------------------------------------- */

static bool same(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

#define LRN_MISMATCH(what, fmt, ckv, nowv)                                                    \
	dp_error_set(DP_EINVAL, "%s belongs to another job: %s is " fmt " in the checkpoint but " \
		     fmt " now", J->ckpt_path, what, ckv, nowv)

/* The settings that define the job, against the current configuration.
 * T and the clip are the checkpoint's (its plan): a value given now must
 * agree; they are set on J here. */
static int check_job(struct lrn_job *J, dp_json_reader *r, struct json_object *job, size_t *p_out)
{
	struct json_object *ids;
	const char *name, *model, *mech;
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
	mech = dp_json_get_string(r, job, "mechanism", true, NULL);
	ids = dp_json_get(r, job, "owners", json_type_array, true);
	bias = dp_json_get_bool(r, job, "bias", true, false);
	fc = dp_json_get_bool(r, job, "freq_correction", true, false);
	if (r->rc)
		return r->rc;
	if (J->s->job_auto) {
		/* No --job given: the resumed job keeps its id. */
		char *copy = strdup(name);

		if (copy == NULL)
			return dp_error_set(DP_ENOMEM, "out of memory");
		free(J->s->job);
		J->s->job = copy;
		J->s->job_auto = false;
	}
	if (strcmp(name, J->s->job) != 0)
		return LRN_MISMATCH("job", "'%s'", name, J->s->job);
	if (strcmp(model, dp_model_name(J->model)) != 0)
		return LRN_MISMATCH("model", "%s", model, dp_model_name(J->model));
	if (J->s->T != 0 && T != J->s->T)
		return LRN_MISMATCH("T", "%llu", (unsigned long long)T, (unsigned long long)J->s->T);
	if (T < 1)
		return dp_error_set(DP_EFORMAT, "%s: bad T 0", J->ckpt_path);
	if (p == 0 || p > ((uint64_t)1 << 30))
		return dp_error_set(DP_EFORMAT, "%s: bad p %llu", J->ckpt_path, (unsigned long long)p);
	if (J->p != 0 && p != J->p)
		return LRN_MISMATCH("p (features)", "%llu", (unsigned long long)p,
				    (unsigned long long)J->p);
	if (!same(lambda, J->s->lambda))
		return LRN_MISMATCH("lambda", "%.17g", lambda, J->s->lambda);
	if (!same(tmax, J->s->theta_max))
		return LRN_MISMATCH("theta-max", "%.17g", tmax, J->s->theta_max);
	if (J->s->clip > 0 && !same(clip, J->s->clip))
		return LRN_MISMATCH("clip", "%.17g", clip, J->s->clip);
	if (!(clip > 0))
		return dp_error_set(DP_EFORMAT, "%s: bad clip_l1 %g", J->ckpt_path, clip);
	/* Each owner's ledger of the job is in the mechanism's unit: the job
	 * goes on with the mechanism it started with. */
	if (strcmp(mech, "laplace") != 0 && strcmp(mech, "gaussian") != 0)
		return dp_error_set(DP_EFORMAT, "%s: bad mechanism '%s'", J->ckpt_path, mech);
	if (strcmp(mech, dp_query_mech_name((dp_mech)J->s->mechanism)) != 0)
		return LRN_MISMATCH("mechanism", "%s", mech,
				    dp_query_mech_name((dp_mech)J->s->mechanism));
	if (bias != J->s->bias)
		return LRN_MISMATCH("bias", "%s", bias ? "true" : "false",
				    J->s->bias ? "true" : "false");
	if (fc != J->s->freq_correction)
		return LRN_MISMATCH("freq-correction", "%s", fc ? "true" : "false",
				    J->s->freq_correction ? "true" : "false");
	if (json_object_array_length(ids) != J->N)
		return LRN_MISMATCH("the number of owners", "%zu", json_object_array_length(ids),
				    J->N);
	for (size_t i = 0; i < J->N; i++) {
		struct json_object *e = json_object_array_get_idx(ids, i);
		const char *id = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "";
		if (lrn_state_find(J, id) == NULL)
			return dp_error_set(DP_EINVAL, "%s belongs to another job: owner '%s' of the "
					    "checkpoint is not in owners now", J->ckpt_path, id);
	}
	*p_out = (size_t)p;
	J->T = T;
	J->clip = clip;
	return 0;
}

/* The job's schema fingerprint, or none (null). */
static int load_schema(struct lrn_job *J, dp_json_reader *r, struct json_object *job)
{
	struct json_object *v = NULL;
	const char *fp, *from;

	r->where = "job";
	if (!json_object_object_get_ex(job, "schema", &v))
		return dp_json_fail(r, "missing key 'schema'");
	if (v == NULL)
		return 0;   /* null: none agreed */
	fp = dp_json_get_string(r, job, "schema", true, NULL);
	from = dp_json_get_string(r, job, "schema_from", true, NULL);
	if (r->rc)
		return r->rc;
	if (strlen(fp) >= sizeof(J->schema_fp) || strlen(from) >= sizeof(J->schema_from))
		return dp_json_fail(r, "'schema' or 'schema_from' is too long");
	memcpy(J->schema_fp, fp, strlen(fp) + 1);
	memcpy(J->schema_from, from, strlen(from) + 1);
	return 0;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The agreed schema's summary, or none (null): lower-case hex of a packed
 * SchemaSummary of p features (bias included), no larger than an owner
 * sends (DP_SCHEMASUM_MAX_BYTES), and only beside a fingerprint. */
static int load_summary(struct lrn_job *J, dp_json_reader *r, struct json_object *job,
			size_t p)
{
	struct json_object *v = NULL;
	Dpasync__SchemaSummary *sum;
	const char *hex;
	size_t len;
	uint8_t *buf;

	r->where = "job";
	if (!json_object_object_get_ex(job, "schema_summary", &v))
		return dp_json_fail(r, "missing key 'schema_summary'");
	if (v == NULL)
		return 0;
	hex = dp_json_get_string(r, job, "schema_summary", true, NULL);
	if (r->rc)
		return r->rc;
	len = strlen(hex);
	if (J->schema_fp[0] == '\0' || len == 0 || len % 2 != 0 ||
	    len / 2 > DP_SCHEMASUM_MAX_BYTES)
		return dp_json_fail(r, "'schema_summary' is not a summary of the job's schema");
	buf = malloc(len / 2);
	if (buf == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t i = 0; i < len / 2; i++) {
		int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(buf);
			return dp_json_fail(r, "'schema_summary' is not lower-case hex");
		}
		buf[i] = (uint8_t)(hi << 4 | lo);
	}
	sum = dpasync__schema_summary__unpack(NULL, len / 2, buf);
	if (sum == NULL || sum->n_features != p) {
		if (sum != NULL)
			dpasync__schema_summary__free_unpacked(sum, NULL);
		free(buf);
		return dp_json_fail(r, "'schema_summary' is not a summary of the job's %zu columns",
				    p);
	}
	dpasync__schema_summary__free_unpacked(sum, NULL);
	free(J->schema_sum);
	J->schema_sum = buf;
	J->schema_sum_len = len / 2;
	return 0;
}

/* The plan's K_i (job.owners order) into the owners, and its forecast.
 * Absent in a checkpoint written before plans existed: every K_i 0 (the
 * owners' own caps, else T) and no forecast. */
static int load_plan(struct lrn_job *J, dp_json_reader *r, struct json_object *job)
{
	struct json_object *pj, *ids, *caps;

	pj = dp_json_get(r, job, "plan", json_type_object, false);
	if (pj == NULL)
		return r->rc;
	r->where = "job.plan";
	ids = dp_json_get(r, job, "owners", json_type_array, true);
	caps = dp_json_get(r, pj, "answers_cap", json_type_array, true);
	J->psi_pred = dp_json_get_double(r, pj, "psi", false, NAN);
	J->psi_zero = dp_json_get_double(r, pj, "psi_zero", false, NAN);
	J->measured = dp_json_get_bool(r, pj, "measured", false, false);
	if (r->rc)
		return r->rc;
	if (json_object_array_length(caps) != J->N)
		return dp_json_fail(r, "'answers_cap' must have %zu numbers", J->N);
	for (size_t i = 0; i < J->N; i++) {
		struct json_object *e = json_object_array_get_idx(caps, i);
		const char *id = json_object_get_string(json_object_array_get_idx(ids, i));
		double v = dp_json_number(r, e, "answers_cap", 0);

		if (r->rc)
			return r->rc;
		if (!(v >= 0 && v <= 1e18 && v == floor(v)))
			return dp_json_fail(r, "answers_cap[%zu] is not a count", i);
		if (id != NULL) {
			struct lrn_owner *o = lrn_state_find(J, id);

			if (o != NULL)
				o->planned_cap = (uint64_t)v;
		}
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
 * (p values each, allocated here); *nsum and *planned: the rows and the
 * number of the owners in the plan.  0 or the error. */
static int load_owners(struct lrn_job *J, dp_json_reader *r, struct json_object *owners, size_t p,
		       double **thetas, uint64_t *nsum, size_t *planned)
{
	char where[64];

	for (size_t i = 0; i < J->N && r->rc == 0; i++) {
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
		o = lrn_state_find(J, id);
		if (o == NULL || thetas[o->idx] != NULL) {
			r->rc = dp_error_set(DP_ECORRUPT, "%s: owners[%zu] '%s' unknown or repeated",
					     J->ckpt_path, i, id);
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
		lrn_state_count(J, o, -1);
		o->exhausted = dp_json_get_bool(r, oj, "exhausted", true, false);
		lrn_state_count(J, o, 1);
		o->left_out = dp_json_get_bool(r, oj, "left_out", true, false);
		if (r->rc == 0 && o->n_rows == 0)
			r->rc = dp_error_set(DP_ECORRUPT, "%s: owner '%s' has n_rows 0", J->ckpt_path, id);
		if (r->rc == 0 && o->left_out && !o->exhausted)
			r->rc = dp_error_set(DP_ECORRUPT, "%s: owner '%s' is left out but not exhausted",
					     J->ckpt_path, id);
		/* n is the planned owners' rows (docs/planner.md §1). */
		if (!o->left_out) {
			*nsum += o->n_rows;
			(*planned)++;
		}
	}
	r->where = NULL;
	return r->rc;
}

/* The mode of the checkpoint's state against the configured one: the
 * async modes may change on resume, a sync job stays in its own mode
 * (sync1 and sync2 are other algorithms).  Sync: *answers is the trace
 * rows of its closed rounds, absent from a version-2 file (its
 * upgrade_2_to_3).  0 or the error. */
static int check_mode(struct lrn_job *J, dp_json_reader *r, struct json_object *st, uint64_t k,
		      uint64_t *answers)
{
	const char *was = dp_json_get_string(r, st, "mode", true, NULL);
	bool sync;

	if (r->rc)
		return r->rc;
	sync = strcmp(was, "sync1") == 0 || strcmp(was, "sync2") == 0;
	if ((sync || LRN_SYNC(J)) && strcmp(was, mode_name(J->s->mode)) != 0)
		return LRN_MISMATCH("mode", "%s", was, mode_name(J->s->mode));
	if (sync && dp_json_get(r, st, "answers", json_type_int, false) == NULL && r->rc == 0)
		return dp_error_set(DP_EFORMAT, "%s: a %s job's checkpoint written by a learnerd "
				    "before version 3 does not say where its trace ends, and cannot "
				    "be resumed; choose another --out", J->ckpt_path, was);
	*answers = dp_json_get_u64(r, st, "answers", true, 0);
	if (r->rc == 0 && sync && (*answers < k || *answers / J->N > k))
		return dp_error_set(DP_ECORRUPT, "%s: %llu answers for %llu rounds of %zu owners",
				    J->ckpt_path, (unsigned long long)*answers,
				    (unsigned long long)k, J->N);
	if (r->rc == 0 && !sync && *answers != k)
		return dp_error_set(DP_ECORRUPT, "%s: %llu answers for k_done %llu", J->ckpt_path,
				    (unsigned long long)*answers, (unsigned long long)k);
	return r->rc;
}

/* A sync job's arrays (as lrn_plan_start makes them) and theta_hat, the
 * running average sync2 publishes (sync1: zeros, unused).  0 or
 * DP_ENOMEM. */
static int sync_arrays(struct lrn_job *J, const double *theta_hat)
{
	J->theta_hat = calloc(J->p, sizeof(double));
	J->round_ans = calloc((J->N + 1) * J->p, sizeof(double));   /* + agg */
	if (J->theta_hat == NULL || J->round_ans == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	if (theta_hat != NULL)
		memcpy(J->theta_hat, theta_hat, J->p * sizeof(double));
	return 0;
}

int lrn_checkpoint_load(struct lrn_job *J)
{
	struct json_object *root = NULL, *job, *st, *owners;
	dp_json_reader r = { .path = NULL, .where = NULL, .rc = 0 };
	const char *fmt;
	size_t p = 0;
	uint64_t k, next, reserved, n_total, nsum = 0, answers = 0;
	size_t planned = 0;
	double eta, rho, want;
	double *theta_L = NULL, *theta_hat = NULL, **thetas = NULL;
	int rc;

	DP_REQUIRE(J != NULL && J->s != NULL && J->ckpt_path != NULL && J->owners != NULL);
	r.path = J->ckpt_path;
	rc = dp_json_read_file(J->ckpt_path, CHECKPOINT_MAX, &root);
	if (rc < 0)
		return rc;
	fmt = dp_json_get_string(&r, root, "format", true, NULL);
	if (r.rc == 0 && strcmp(fmt, LRN_CHECKPOINT_FORMAT) != 0)
		dp_json_fail(&r, "not a learnerd checkpoint (format '%s')", fmt);
	if (r.rc == 0)
		upgrade(&r, root);
	job = dp_json_get(&r, root, "job", json_type_object, true);
	st = dp_json_get(&r, root, "state", json_type_object, true);
	if (r.rc) {
		rc = r.rc;
		goto out;
	}
	r.where = "job";
	rc = check_job(J, &r, job, &p);
	if (rc < 0)
		goto out;
	rc = load_plan(J, &r, job);
	if (rc == 0)
		rc = load_schema(J, &r, job);
	if (rc == 0)
		rc = load_summary(J, &r, job, p);
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
	if (k > J->T || next < 1 || reserved < next || n_total == 0 || !(eta > 0) || !(rho > 0) ||
	    json_object_array_length(owners) != J->N) {
		rc = dp_error_set(DP_ECORRUPT, "%s: inconsistent state (k_done, query ids, n, eta or "
				  "owners)", J->ckpt_path);
		goto out;
	}
	r.where = "state";
	rc = check_mode(J, &r, st, k, &answers);
	if (rc == 0)
		rc = check_len(&r, st, "theta_L", p);
	if (rc == 0 && J->s->mode == LRN_MODE_SYNC2)
		rc = check_len(&r, st, "theta_hat", p);
	if (rc < 0)
		goto out;
	theta_L = calloc(p, sizeof(double));
	theta_hat = calloc(p, sizeof(double));
	thetas = calloc(J->N, sizeof(*thetas));
	if (theta_L == NULL || theta_hat == NULL || thetas == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	dp_json_get_doubles(&r, st, "theta_L", theta_L, p);
	if (J->s->mode == LRN_MODE_SYNC2)
		dp_json_get_doubles(&r, st, "theta_hat", theta_hat, p);
	rc = load_owners(J, &r, owners, p, thetas, &nsum, &planned);
	if (rc < 0)
		goto out;
	if (planned == 0 || nsum != n_total) {
		/* The planned owners' rows (docs/planner.md §1 "Budget left"). */
		rc = dp_error_set(DP_ECORRUPT, "%s: n_total %llu is not the sum of n_rows %llu",
				  J->ckpt_path, (unsigned long long)n_total, (unsigned long long)nsum);
		goto out;
	}
	/* The step size is the plan's: a given --eta/--rho (sync1 rho/T^2,
	 * sync2 c) must give it. */
	want = eta;
	if (J->s->mode == LRN_MODE_SYNC1 && J->s->rho > 0)
		want = J->s->rho / ((double)J->T * (double)J->T);
	else if (J->s->mode == LRN_MODE_SYNC2 && J->s->c > 0)
		want = J->s->c;
	else if (LRN_SYNC(J))
		want = eta;
	else if (J->s->eta > 0)
		want = J->s->eta;
	else if (J->s->rho > 0)
		want = dp_algo_eta_from_rho(planned, J->T, J->s->lambda, J->s->rho);
	if (!same(want, eta)) {
		rc = dp_error_set(DP_EINVAL, "%s belongs to another job: the step size eta is %.17g in "
				  "the checkpoint but %.17g now (check --eta/--rho)", J->ckpt_path,
				  eta, want);
		goto out;
	}
	if (J->p == 0) {
		rc = lrn_state_set_p(J, p);
		if (rc < 0)
			goto out;
	}
	if (LRN_SYNC(J)) {
		rc = sync_arrays(J, J->s->mode == LRN_MODE_SYNC2 ? theta_hat : NULL);
		if (rc < 0)
			goto out;
		J->step = eta;
		J->answers = answers;
	}
	memcpy(J->theta_L, theta_L, p * sizeof(double));
	for (size_t i = 0; i < J->N; i++) {
		memcpy(J->owners[i].theta, thetas[i], p * sizeof(double));
		lrn_state_count(J, &J->owners[i], -1);
		J->owners[i].ever_hello = true;
		lrn_state_count(J, &J->owners[i], 1);
	}
	J->k_done = k;
	J->next_qid = reserved;
	J->qid_reserved = reserved;
	J->n_total = n_total;
	J->n_planned = planned;
	J->eta = eta;
	J->rho = rho;
	J->started = true;
	rc = 0;
out:
	if (thetas)
		for (size_t i = 0; i < J->N; i++)
			free(thetas[i]);
	free(thetas);
	free(theta_L);
	free(theta_hat);
	json_object_put(root);
	return rc;
}
