/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for learner/checkpoint.c: checkpoint.json (docs/learnerd.md §5).
 *
 * A state saved and loaded into a fresh job comes back bit for bit; a
 * checkpoint of another job is refused naming the setting; damaged,
 * truncated and mistyped files are refused; every format version this
 * learnerd reads loads: data/checkpoint-v1.json was written by learnerd of
 * format version 1 (commit 04f994c): `learnerd --job fixture-job --owners
 * owner-1,owner-2 --T 40 --eta 0.05 --lambda 0.01 --theta-max 10
 * --checkpoint-every 10` with two tests/integration/fake_owner (p 3, rows
 * 10 and 20, owner-2 with --answers-cap 14), copied at k = 20.  The
 * expected values of the fixture are the file's own numbers and what
 * docs/learnerd.md says they imply (K_1 = ceil((40 - 14) * 1.1) = 29,
 * rho = eta T^2 2 lambda / N = 0.8). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "learner/job.h"
#include "tests/unit/tmpdir.h"
#include "tests/unit/lrnjob.h"

static const uint64_t rows2[] = { 10, 30 };

static bool same_bits(double a, double b)
{
	return memcmp(&a, &b, sizeof(double)) == 0;
}

/* A started job with state in every field the checkpoint keeps. */
static void rich_job(struct lrn_job *J, struct lrn_settings *s, const char *tag)
{
	lrnjob_init(J, s, 2, 3, tag);
	lrnjob_start(J, rows2, 0.0);
	for (size_t q = 0; q < 3; q++) {
		J->theta_L[q] = 0.1 * (double)(q + 1) - 1.0 / 3.0;
		J->owners[0].theta[q] = -2.0 / 7.0 * (double)q;
		J->owners[1].theta[q] = 1e-300 * (double)(q + 1);
	}
	J->k_done = 7;
	J->next_qid = 9;
	J->owners[0].iterations = 3;
	J->owners[1].iterations = 4;
	J->owners[0].eps_spent = 0.1 + 0.2;
	J->owners[1].eps_spent = INFINITY;   /* an owner without noise: "inf" */
	lrn_state_count(J, &J->owners[1], -1);
	J->owners[1].exhausted = true;
	lrn_state_count(J, &J->owners[1], 1);
	J->psi_pred = 1.0 / 3.0;
	J->psi_zero = 2.0 / 3.0;
	J->measured = true;
}

/* A fresh job on s loading the checkpoint of tag's files; 0 or the error. */
static int load(struct lrn_job *R, struct lrn_settings *s, const char *tag)
{
	assert_int_equal(lrn_state_init(R, s, lrnjob_names, 2), 0);
	lrnjob_paths(R, tag);
	return lrn_checkpoint_load(R);
}

static void drop(struct lrn_job *R)
{
	free(R->trace_path);
	free(R->ckpt_path);
	free(R->rounds_path);
	lrn_state_free(R);
}

static void test_round_trip(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J, R;

	(void)state;
	s.checkpoint_every = 5;
	rich_job(&J, &s, "rt");
	assert_int_equal(lrn_checkpoint_save(&J, false), 0);
	/* The next block: 9 + 1024 + 2*5 + 64*2 (docs/learnerd.md §5). */
	assert_int_equal(J.qid_reserved, 9 + 1024 + 10 + 128);
	assert_int_equal(load(&R, &s, "rt"), 0);
	assert_true(R.started);
	assert_int_equal(R.p, 3);
	assert_int_equal(R.T, J.T);
	assert_int_equal(R.k_done, 7);
	assert_int_equal(R.next_qid, J.qid_reserved);   /* resume continues there */
	assert_int_equal(R.qid_reserved, J.qid_reserved);
	assert_int_equal(R.n_total, 40);
	assert_true(same_bits(R.eta, J.eta) && same_bits(R.rho, J.rho) &&
		    same_bits(R.clip, J.clip));
	assert_true(same_bits(R.psi_pred, 1.0 / 3.0) && same_bits(R.psi_zero, 2.0 / 3.0));
	assert_true(R.measured);
	assert_memory_equal(R.theta_L, J.theta_L, 3 * sizeof(double));
	for (size_t i = 0; i < 2; i++) {
		const struct lrn_owner *a = &J.owners[i], *b = &R.owners[i];

		assert_memory_equal(b->theta, a->theta, 3 * sizeof(double));
		assert_int_equal(b->n_rows, a->n_rows);
		assert_int_equal(b->iterations, a->iterations);
		assert_int_equal(b->planned_cap, a->planned_cap);
		assert_int_equal(b->exhausted, a->exhausted);
		assert_true(same_bits(b->eps_spent, a->eps_spent));
		assert_true(b->ever_hello);
	}
	assert_int_equal(R.owners[0].planned_cap, 6);   /* ceil(10 * 0.5 * 1.1) */
	drop(&R);

	/* A final checkpoint reserves nothing. */
	assert_int_equal(lrn_checkpoint_save(&J, true), 0);
	assert_int_equal(J.qid_reserved, 9);
	assert_int_equal(load(&R, &s, "rt"), 0);
	assert_int_equal(R.next_qid, 9);
	drop(&R);
	lrnjob_free(&J);
}

/* The owners are matched by name: another order in `owners` loads too. */
static void test_owner_order(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J, R;
	char *swapped[] = { "owner-2", "owner-1" };

	(void)state;
	rich_job(&J, &s, "order");
	assert_int_equal(lrn_checkpoint_save(&J, false), 0);
	assert_int_equal(lrn_state_init(&R, &s, swapped, 2), 0);
	lrnjob_paths(&R, "order");
	assert_int_equal(lrn_checkpoint_load(&R), 0);
	assert_string_equal(R.owners[0].id, "owner-2");
	assert_int_equal(R.owners[0].n_rows, 30);
	assert_int_equal(R.owners[0].planned_cap, J.owners[1].planned_cap);
	assert_memory_equal(R.owners[1].theta, J.owners[0].theta, 3 * sizeof(double));
	drop(&R);
	lrnjob_free(&J);
}

/* A setting of another job is refused, naming it and both values. */
static void test_mismatch(void **state)
{
	struct lrn_settings s = lrnjob_settings(), t;
	struct lrn_job J, R;
	char *three[] = { "owner-1", "owner-2", "owner-3" };
	char *other[] = { "owner-1", "owner-9" };
	static const struct {
		const char *detail;
	} want[] = {
		{ "job is 'test-job' in the checkpoint but 'other-job' now" },
		{ "model is linear in the checkpoint but logistic now" },
		{ "T is 10 in the checkpoint but 11 now" },
		{ "lambda is 0.01 in the checkpoint but 0.02 now" },
		{ "theta-max is 10 in the checkpoint but 5 now" },
		{ "clip is 1 in the checkpoint but 2 now" },
		{ "bias is false in the checkpoint but true now" },
		{ "freq-correction is false in the checkpoint but true now" },
		{ "the step size eta is 0.050000000000000003 in the checkpoint but 0.059999999999999998 now" },
		{ "the step size eta is 0.050000000000000003 in the checkpoint but 0.004" },
	};

	(void)state;
	rich_job(&J, &s, "mis");
	assert_int_equal(lrn_checkpoint_save(&J, false), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		t = s;
		switch (i) {
		case 0: t.job = "other-job"; break;
		case 1: t.model = DP_MODEL_LOGISTIC; break;
		case 2: t.T = 11; break;
		case 3: t.lambda = 0.02; break;
		case 4: t.theta_max = 5; break;
		case 5: t.clip = 2; break;
		case 6: t.bias = true; break;
		case 7: t.freq_correction = true; break;
		case 8: t.eta = 0.06; break;
		/* eta = N rho / (2 lambda T^2) = 2 * 0.004 / (0.02 * 100) = 0.004 */
		case 9: t.eta = 0; t.rho = 0.004; break;
		}
		assert_int_equal(load(&R, &t, "mis"), DP_EINVAL);
		if (strstr(dp_error_detail(DP_EINVAL), want[i].detail) == NULL)
			fail_msg("case %zu: '%s' lacks '%s'", i, dp_error_detail(DP_EINVAL),
				 want[i].detail);
		drop(&R);
	}
	/* p given now, and another p in the checkpoint. */
	assert_int_equal(lrn_state_init(&R, &s, lrnjob_names, 2), 0);
	assert_int_equal(lrn_state_set_p(&R, 4), 0);
	lrnjob_paths(&R, "mis");
	assert_int_equal(lrn_checkpoint_load(&R), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "p (features) is 3 in the checkpoint "
			       "but 4 now"));
	drop(&R);
	/* Other owners. */
	assert_int_equal(lrn_state_init(&R, &s, three, 3), 0);
	lrnjob_paths(&R, "mis");
	assert_int_equal(lrn_checkpoint_load(&R), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "the number of owners is 2 in the "
			       "checkpoint but 3 now"));
	drop(&R);
	assert_int_equal(lrn_state_init(&R, &s, other, 2), 0);
	lrnjob_paths(&R, "mis");
	assert_int_equal(lrn_checkpoint_load(&R), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "owner 'owner-2' of the checkpoint is "
			       "not in owners now"));
	drop(&R);
	lrnjob_free(&J);
}

/* Without --job the resumed job keeps the checkpoint's id. */
static void test_job_auto(void **state)
{
	struct lrn_settings s = lrnjob_settings(), t;
	struct lrn_job J, R;

	(void)state;
	rich_job(&J, &s, "auto");
	assert_int_equal(lrn_checkpoint_save(&J, false), 0);
	t = s;
	t.job = strdup("job-20261124T111500Z-3f2a9c1e");
	t.job_auto = true;
	assert_int_equal(load(&R, &t, "auto"), 0);
	assert_string_equal(t.job, "test-job");
	assert_false(t.job_auto);
	free(t.job);
	drop(&R);
	lrnjob_free(&J);
}

/* ---- damaged files: the saved tree, changed, written back ---- */

typedef void (*mutation)(struct json_object *root);

static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	assert_true(json_object_object_get_ex(o, key, &v));
	return v;
}

static void m_format(struct json_object *r)
{
	json_object_object_add(r, "format", json_object_new_string("dpasync-model"));
}

static void m_no_version(struct json_object *r)
{
	json_object_object_del(r, "version");
}

static void m_version0(struct json_object *r)
{
	json_object_object_add(r, "version", json_object_new_int(0));
}

static void m_version_newer(struct json_object *r)
{
	json_object_object_add(r, "version", json_object_new_int(LRN_CHECKPOINT_VERSION + 1));
}

static void m_version_text(struct json_object *r)
{
	json_object_object_add(r, "version", json_object_new_string("1"));
}

static void m_k_over_T(struct json_object *r)
{
	json_object_object_add(member(r, "state"), "k_done", json_object_new_int(11));
}

static void m_n_total(struct json_object *r)
{
	json_object_object_add(member(r, "job"), "n_total", json_object_new_int(41));
}

static void m_theta_short(struct json_object *r)
{
	json_object_array_del_idx(member(member(r, "state"), "theta_L"), 0, 1);
}

static void m_owner_twice(struct json_object *r)
{
	struct json_object *owners = member(member(r, "state"), "owners");

	json_object_object_add(json_object_array_get_idx(owners, 1), "id",
			       json_object_new_string("owner-1"));
}

static void m_rows_zero(struct json_object *r)
{
	struct json_object *owners = member(member(r, "state"), "owners");

	json_object_object_add(json_object_array_get_idx(owners, 0), "n_rows",
			       json_object_new_int(0));
}

static void m_caps_short(struct json_object *r)
{
	json_object_array_del_idx(member(member(member(r, "job"), "plan"), "answers_cap"), 1, 1);
}

static void m_cap_fraction(struct json_object *r)
{
	json_object_array_put_idx(member(member(member(r, "job"), "plan"), "answers_cap"), 0,
				  json_object_new_double(2.5));
}

static void m_ids_reversed(struct json_object *r)
{
	struct json_object *st = member(r, "state");

	json_object_object_add(st, "query_id_reserved", json_object_new_int(3));
	json_object_object_add(st, "next_query_id", json_object_new_int(4));
}

static void m_theta_nan(struct json_object *r)
{
	json_object_array_put_idx(member(member(r, "state"), "theta_L"), 1,
				  json_object_new_string("nan"));
}

static void m_bad_p(struct json_object *r)
{
	json_object_object_add(member(r, "job"), "p", json_object_new_int(0));
}

static void m_state_missing(struct json_object *r)
{
	json_object_object_del(r, "state");
}

static void m_clip_zero(struct json_object *r)
{
	json_object_object_add(member(r, "job"), "clip_l1", json_object_new_int(0));
}

static void test_damaged(void **state)
{
	struct lrn_settings s = lrnjob_settings(), t;
	struct lrn_job J, R;
	static const struct {
		mutation m;
		int rc;
		const char *detail;
	} cases[] = {
		{ m_format, DP_EFORMAT, "not a learnerd checkpoint (format 'dpasync-model')" },
		{ m_no_version, DP_EFORMAT, "missing key 'version'" },
		{ m_version0, DP_EFORMAT, "checkpoint version 0 does not exist" },
		{ m_version_newer, DP_EFORMAT, "is newer than this learnerd reads" },
		{ m_version_text, DP_EFORMAT, "version" },
		{ m_k_over_T, DP_ECORRUPT, "inconsistent state" },
		{ m_n_total, DP_ECORRUPT, "n_total 41 is not the sum of n_rows 40" },
		{ m_theta_short, DP_EFORMAT, "'theta_L' must have 3 numbers, has 2" },
		{ m_owner_twice, DP_ECORRUPT, "owners[1] 'owner-1' unknown or repeated" },
		{ m_rows_zero, DP_ECORRUPT, "owner 'owner-1' has n_rows 0" },
		{ m_caps_short, DP_EFORMAT, "'answers_cap' must have 2 numbers" },
		{ m_cap_fraction, DP_EFORMAT, "answers_cap[0] is not a count" },
		{ m_ids_reversed, DP_ECORRUPT, "inconsistent state" },
		{ m_theta_nan, DP_EFORMAT, "theta_L" },
		{ m_bad_p, DP_EFORMAT, "bad p 0" },
		{ m_state_missing, DP_EFORMAT, "missing key 'state'" },
		{ m_clip_zero, DP_EINVAL, "clip is 0 in the checkpoint but 1 now" },
	};
	struct json_object *root;
	char *saved;

	(void)state;
	rich_job(&J, &s, "dmg");
	assert_int_equal(lrn_checkpoint_save(&J, false), 0);
	saved = lrnjob_slurp(J.ckpt_path);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		root = json_tokener_parse(saved);
		assert_non_null(root);
		cases[i].m(root);
		assert_int_equal(json_object_to_file_ext(path_of("dmg2-checkpoint.json"), root,
							 JSON_C_TO_STRING_PLAIN), 0);
		json_object_put(root);
		if (load(&R, &s, "dmg2") != cases[i].rc ||
		    strstr(dp_error_detail(cases[i].rc), cases[i].detail) == NULL)
			fail_msg("case %zu: '%s', want %d '%s'", i, dp_error_detail(cases[i].rc),
				 cases[i].rc, cases[i].detail);
		/* Nothing of the job is set up by a failed load. */
		assert_false(R.started);
		drop(&R);
	}
	/* No clip given now: the checkpoint's must be a bound. */
	t = s;
	t.clip = 0;
	assert_int_equal(load(&R, &t, "dmg2"), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "bad clip_l1 0"));
	drop(&R);

	/* Every cut of the file short of its end is refused. */
	for (size_t n = 0; n + 1 < strlen(saved); n += 7) {
		put_bytes("cut-checkpoint.json", saved, n);
		assert_true(load(&R, &s, "cut") < 0);
		assert_false(R.started);
		drop(&R);
	}
	put("junk-checkpoint.json", "{\"format\": \"dpasync-learner-checkpoint\", \"version\": 1,");
	assert_int_equal(load(&R, &s, "junk"), DP_EFORMAT);
	drop(&R);
	assert_int_equal(load(&R, &s, "none"), DP_ENOENT);
	drop(&R);
	free(saved);
	lrnjob_free(&J);
}

/* A checkpoint written before plans existed: every K_i unknown. */
static void test_no_plan(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J, R;
	struct json_object *root;

	(void)state;
	rich_job(&J, &s, "np");
	assert_int_equal(lrn_checkpoint_save(&J, false), 0);
	root = json_object_from_file(J.ckpt_path);
	assert_non_null(root);
	json_object_object_del(member(root, "job"), "plan");
	assert_int_equal(json_object_to_file(J.ckpt_path, root), 0);
	json_object_put(root);
	assert_int_equal(load(&R, &s, "np"), 0);
	assert_int_equal(R.owners[0].planned_cap, 0);
	assert_int_equal(lrn_state_cap(&R, &R.owners[0]), R.T);
	assert_true(isnan(R.psi_pred));
	drop(&R);
	lrnjob_free(&J);
}

/* After a failed write nothing more is written (fail-stop). */
static void test_io_failed(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	char *before, *after;

	(void)state;
	rich_job(&J, &s, "iof");
	before = lrnjob_slurp(J.ckpt_path);
	J.io_failed = true;
	J.k_done = 8;
	assert_int_equal(lrn_checkpoint_save(&J, false), DP_EIO);
	assert_non_null(strstr(dp_error_detail(DP_EIO), "the last good checkpoint is kept"));
	after = lrnjob_slurp(J.ckpt_path);
	assert_string_equal(before, after);
	free(before);
	free(after);
	J.io_failed = false;
	free(J.ckpt_path);
	J.ckpt_path = strdup(path_of("no-such-dir/checkpoint.json"));
	assert_true(lrn_checkpoint_save(&J, false) < 0);
	assert_true(J.io_failed);
	lrnjob_free(&J);
}

/* Format version 1, as the learnerd of that version wrote it, resumes;
 * saved again it is the current version and reads back the same.  Version
 * 1 kept no schema fingerprint and left no owner out: upgraded, the job
 * has no fingerprint (it learns it again from its owners' Hellos,
 * docs/learnerd.md §5 "Versions") and plans every owner. */
static void test_version1_fixture(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job R, S;
	char *text, want[32];

	(void)state;
	s.job = "fixture-job";
	s.T = 0;
	s.eta = 0;
	s.clip = 0;
	s.checkpoint_every = 10;
	assert_int_equal(lrn_state_init(&R, &s, lrnjob_names, 2), 0);
	lrnjob_paths(&R, "v1");
	free(R.ckpt_path);
	R.ckpt_path = strdup(DP_TEST_DATA "/checkpoint-v1.json");
	assert_int_equal(lrn_checkpoint_load(&R), 0);
	assert_true(R.started);
	assert_int_equal(R.p, 3);
	assert_int_equal(R.T, 40);
	assert_int_equal(R.k_done, 20);
	assert_int_equal(R.next_qid, 1193);   /* 21 + 1024 + 2*10 + 64*2 */
	assert_int_equal(R.n_total, 30);
	assert_true(R.eta == 0.05);
	assert_true(fabs(R.rho - 0.8) <= 1e-15);   /* 0.05 * 40^2 * 0.02 / 2 */
	assert_true(R.clip == 2.28327524461777);
	assert_int_equal(R.owners[0].planned_cap, 29);   /* ceil((40 - 14) * 1.1) */
	assert_int_equal(R.owners[1].planned_cap, 14);   /* its own cap */
	assert_true(R.psi_pred == 1.7058781174556197 && R.psi_zero == 0.9803921568627452);
	assert_false(R.measured);
	assert_int_equal(R.owners[0].n_rows, 10);
	assert_int_equal(R.owners[1].iterations, 10);
	assert_true(R.owners[1].eps_spent == 0.7142857142857143);
	assert_true(R.theta_L[2] == -0.08519639414260782);
	assert_true(R.owners[0].theta[1] == 0.005525866337528745);
	assert_string_equal(R.schema_fp, "");
	assert_false(R.owners[0].left_out || R.owners[1].left_out);
	assert_int_equal(R.n_planned, 2);

	free(R.ckpt_path);
	R.ckpt_path = strdup(path_of("v1again-checkpoint.json"));
	assert_int_equal(lrn_checkpoint_save(&R, true), 0);
	text = lrnjob_slurp(R.ckpt_path);
	snprintf(want, sizeof(want), "\"version\":%d", LRN_CHECKPOINT_VERSION);
	assert_non_null(strstr(text, want));
	assert_non_null(strstr(text, "\"schema\":null"));
	assert_non_null(strstr(text, "\"left_out\":false"));
	free(text);
	assert_int_equal(lrn_state_init(&S, &s, lrnjob_names, 2), 0);
	lrnjob_paths(&S, "v1again");
	assert_int_equal(lrn_checkpoint_load(&S), 0);
	assert_int_equal(S.k_done, 20);
	assert_memory_equal(S.theta_L, R.theta_L, 3 * sizeof(double));
	assert_memory_equal(S.owners[1].theta, R.owners[1].theta, 3 * sizeof(double));
	drop(&S);
	drop(&R);
}

/* A sync job resumes (version 3): its checkpoint holds the closed rounds,
 * theta_hat and the answers they used (the trace rows to keep); the
 * answer of the round being served is not counted, and the owner that gave
 * it is asked again.  The mode is the checkpoint's: a sync2 job does not
 * continue as sync1 or request. */
static void test_sync_resume(void **state)
{
	static const double g1[] = { 1.0, 2.0, -1.0 }, g2[] = { -1.0, 0.5, 0.25 };
	struct lrn_settings s = lrnjob_settings(), t;
	struct json_object *root, *st;
	struct lrn_job J, R;
	struct lrn_decision d;

	(void)state;
	s.mode = LRN_MODE_SYNC2;
	s.eta = 0;
	s.c = 0.5;
	s.T = 4;
	lrnjob_init(&J, &s, 2, 3, "sync");
	lrnjob_start(&J, rows2, 1.0);   /* round 1 asked */
	lrnjob_answer(&J, 0, g1, 1.5, &d);
	lrnjob_answer(&J, 1, g2, 1.5, &d);
	assert_int_equal(J.k_done, 1);
	assert_int_equal(lrnjob_pump(&J, 2.0, NULL, NULL), LRN_ACT_NONE);
	lrnjob_answer(&J, 1, g2, 2.5, &d);   /* round 2: owner-2 only */
	assert_int_equal(J.answers, 3);
	assert_int_equal(lrn_checkpoint_save(&J, true), 0);
	root = json_object_from_file(J.ckpt_path);
	assert_non_null(root);
	st = json_object_object_get(root, "state");
	assert_int_equal(json_object_get_int(json_object_object_get(root, "version")),
			 LRN_CHECKPOINT_VERSION);
	assert_int_equal(json_object_get_int(json_object_object_get(st, "answers")), 2);
	assert_int_equal(json_object_get_int(json_object_object_get(
		json_object_array_get_idx(json_object_object_get(st, "owners"), 1), "iterations")), 1);
	json_object_put(root);

	assert_int_equal(load(&R, &s, "sync"), 0);
	assert_int_equal(R.k_done, 1);
	assert_int_equal(R.answers, 2);
	assert_int_equal(R.sync_round, 0);   /* round 2 is served again */
	assert_true(same_bits(R.step, J.step) && same_bits(R.eta, J.eta));
	assert_memory_equal(R.theta_L, J.theta_L, 3 * sizeof(double));
	assert_memory_equal(R.theta_hat, J.theta_hat, 3 * sizeof(double));
	assert_non_null(R.round_ans);
	assert_int_equal(R.owners[1].iterations, 1);
	drop(&R);

	t = s;   /* J keeps s */
	t.mode = LRN_MODE_SYNC1;
	t.rho = 1;
	assert_int_equal(load(&R, &t, "sync"), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "mode is sync2 in the checkpoint but "
							   "sync1 now"));
	drop(&R);
	t.mode = LRN_MODE_REQUEST;
	assert_int_equal(load(&R, &t, "sync"), DP_EINVAL);
	drop(&R);
	lrnjob_free(&J);
}

/* Format version 2, as the learnerd of that version wrote it (this
 * branch's before the bump): data/checkpoint-v2.json, `learnerd --job
 * fixture-request --T 40 --eta 0.05 --bias --checkpoint-every 5` with two
 * ownerd (p 4 with the bias, 10 rows each), stopped by SIGTERM at k = 20,
 * resumes with 20 trace rows; data/checkpoint-v2-sync2.json, the same
 * with `--mode sync2 --T 20 --job fixture-sync2`, stopped in round 9 with
 * one of its answers in, is refused as version 2 refused it: it does not
 * say where its trace ends. */
static void test_version2_fixtures(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job R;

	(void)state;
	s.job = "fixture-request";
	s.T = 0;
	s.eta = 0;
	s.clip = 0;
	s.bias = true;
	assert_int_equal(lrn_state_init(&R, &s, lrnjob_names, 2), 0);
	lrnjob_paths(&R, "v2");
	free(R.ckpt_path);
	R.ckpt_path = strdup(DP_TEST_DATA "/checkpoint-v2.json");
	assert_int_equal(lrn_checkpoint_load(&R), 0);
	assert_int_equal(R.p, 4);
	assert_int_equal(R.T, 40);
	assert_int_equal(R.k_done, 20);
	assert_true(R.eta == 0.05);
	assert_int_equal(R.owners[0].iterations + R.owners[1].iterations, 20);
	assert_true(R.theta_L[3] == -0.5449793314196238);
	assert_string_equal(R.schema_from, "owner-1");
	drop(&R);

	s.job = "fixture-sync2";
	s.mode = LRN_MODE_SYNC2;
	s.c = 0;
	assert_int_equal(lrn_state_init(&R, &s, lrnjob_names, 2), 0);
	lrnjob_paths(&R, "v2s");
	free(R.ckpt_path);
	R.ckpt_path = strdup(DP_TEST_DATA "/checkpoint-v2-sync2.json");
	assert_int_equal(lrn_checkpoint_load(&R), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "a sync2 job's checkpoint written by a "
							     "learnerd before version 3"));
	drop(&R);
}

/* Version 2: the agreed fingerprint and the owners the plan left out come
 * back; a left-out owner's rows are not in n, and it must be exhausted. */
static void test_schema_left_out(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J, R;
	struct json_object *root, *o;
	char *saved;

	(void)state;
	rich_job(&J, &s, "sch");
	snprintf(J.schema_fp, sizeof(J.schema_fp), "sha256:%064d", 7);
	snprintf(J.schema_from, sizeof(J.schema_from), "owner-2");
	J.owners[1].left_out = true;   /* exhausted already (rich_job) */
	J.n_total = 10;
	J.n_planned = 1;
	assert_int_equal(lrn_checkpoint_save(&J, false), 0);
	assert_int_equal(load(&R, &s, "sch"), 0);
	assert_string_equal(R.schema_fp, J.schema_fp);
	assert_string_equal(R.schema_from, "owner-2");
	assert_true(R.owners[1].left_out && !R.owners[0].left_out);
	assert_int_equal(R.n_planned, 1);
	assert_int_equal(R.n_total, 10);
	drop(&R);

	/* Left out but not exhausted: corrupt. */
	saved = lrnjob_slurp(J.ckpt_path);
	root = json_tokener_parse(saved);
	o = json_object_array_get_idx(member(member(root, "state"), "owners"), 1);
	json_object_object_add(o, "exhausted", json_object_new_boolean(false));
	assert_int_equal(json_object_to_file_ext(path_of("sch2-checkpoint.json"), root,
						 JSON_C_TO_STRING_PLAIN), 0);
	json_object_put(root);
	assert_int_equal(load(&R, &s, "sch2"), DP_ECORRUPT);
	assert_non_null(strstr(dp_error_detail(DP_ECORRUPT), "owner 'owner-2' is left out but not "
			       "exhausted"));
	drop(&R);
	/* A fingerprint that does not fit a Hello's. */
	root = json_tokener_parse(saved);
	{
		char big[300];

		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		json_object_object_add(member(root, "job"), "schema", json_object_new_string(big));
	}
	assert_int_equal(json_object_to_file_ext(path_of("sch2-checkpoint.json"), root,
						 JSON_C_TO_STRING_PLAIN), 0);
	json_object_put(root);
	assert_int_equal(load(&R, &s, "sch2"), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "'schema' or 'schema_from' is too long"));
	drop(&R);
	/* A version-2 file without the key. */
	root = json_tokener_parse(saved);
	json_object_object_del(member(root, "job"), "schema");
	assert_int_equal(json_object_to_file_ext(path_of("sch2-checkpoint.json"), root,
						 JSON_C_TO_STRING_PLAIN), 0);
	json_object_put(root);
	assert_int_equal(load(&R, &s, "sch2"), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "missing key 'schema'"));
	drop(&R);
	free(saved);
	lrnjob_free(&J);
}

/* Write root to tag's checkpoint path. */
static void put_root(struct json_object *root, const char *tag)
{
	char name[64];

	snprintf(name, sizeof(name), "%s-checkpoint.json", tag);
	assert_int_equal(json_object_to_file_ext(path_of(name), root, JSON_C_TO_STRING_PLAIN), 0);
	json_object_put(root);
}

/* Version 4 keeps the agreed schema's summary (packed, hex), so that a
 * resumed job names what differs in the first mismatching Hello
 * (docs/learnerd.md §5).  A version-3 file has none and still resumes; a
 * summary that is not hex, not a summary of p columns, or without a
 * fingerprint is refused. */
static void test_schema_summary(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	Dpasync__FeatureSummary f[3], *fp[3];
	Dpasync__SchemaSummary sum = DPASYNC__SCHEMA_SUMMARY__INIT;
	static const char *const names[] = { "a", "b", "bias" };
	struct json_object *root;
	struct lrn_job J, R;
	char *saved;

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		dpasync__feature_summary__init(&f[i]);
		f[i].name = (char *)names[i];
		f[i].kind = (char *)"raw";
		f[i].scale = 1.5;
		fp[i] = &f[i];
	}
	sum.n_features = 3;
	sum.features = fp;
	sum.target = (char *)"price";
	sum.bias = true;
	rich_job(&J, &s, "sum");
	snprintf(J.schema_fp, sizeof(J.schema_fp), "sha256:%064d", 5);
	snprintf(J.schema_from, sizeof(J.schema_from), "owner-1");
	J.schema_sum_len = dpasync__schema_summary__get_packed_size(&sum);
	J.schema_sum = malloc(J.schema_sum_len);
	assert_non_null(J.schema_sum);
	assert_int_equal(dpasync__schema_summary__pack(&sum, J.schema_sum), J.schema_sum_len);
	assert_int_equal(lrn_checkpoint_save(&J, false), 0);
	assert_int_equal(load(&R, &s, "sum"), 0);
	assert_int_equal(R.schema_sum_len, J.schema_sum_len);
	assert_memory_equal(R.schema_sum, J.schema_sum, J.schema_sum_len);
	drop(&R);

	saved = lrnjob_slurp(J.ckpt_path);
	/* Version 3: no key, upgraded to none. */
	root = json_tokener_parse(saved);
	json_object_object_del(member(root, "job"), "schema_summary");
	json_object_object_add(root, "version", json_object_new_int(3));
	put_root(root, "sum3");
	assert_int_equal(load(&R, &s, "sum3"), 0);
	assert_null(R.schema_sum);
	assert_string_equal(R.schema_fp, J.schema_fp);
	drop(&R);
	/* Version 4 without the key. */
	root = json_tokener_parse(saved);
	json_object_object_del(member(root, "job"), "schema_summary");
	put_root(root, "sum4");
	assert_int_equal(load(&R, &s, "sum4"), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "missing key 'schema_summary'"));
	drop(&R);
	/* Not hex; odd length; a summary of 2 columns; none agreed. */
	{
		static const char *const bad[] = { "0g", "0a1", "0a000a00", NULL };

		for (size_t i = 0; i < 4; i++) {
			root = json_tokener_parse(saved);
			if (bad[i] != NULL)
				json_object_object_add(member(root, "job"), "schema_summary",
						       json_object_new_string(bad[i]));
			else
				json_object_object_add(member(root, "job"), "schema", NULL);
			put_root(root, "sumb");
			assert_int_equal(load(&R, &s, "sumb"), DP_EFORMAT);
			assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "'schema_summary'"));
			drop(&R);
		}
	}
	free(saved);
	lrnjob_free(&J);
}

/* Version 5 keeps the mechanism (docs/learnerd.md "Mechanisms"): a job
 * resumes only with the one it started with, a version-4 file's is
 * Laplace, and a value that is neither is refused. */
static void test_mechanism(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct json_object *root;
	struct lrn_job J, R;
	char *saved;

	(void)state;
	s.mechanism = DP_MECH_GAUSSIAN;
	rich_job(&J, &s, "mech");
	assert_int_equal(lrn_checkpoint_save(&J, false), 0);
	assert_int_equal(load(&R, &s, "mech"), 0);
	drop(&R);
	s.mechanism = DP_MECH_LAPLACE;
	assert_int_equal(load(&R, &s, "mech"), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "mechanism is gaussian in the "
			       "checkpoint but laplace now"));
	drop(&R);
	saved = lrnjob_slurp(J.ckpt_path);
	/* Version 4: no key, a Laplace job. */
	root = json_tokener_parse(saved);
	json_object_object_del(member(root, "job"), "mechanism");
	json_object_object_add(root, "version", json_object_new_int(4));
	put_root(root, "mech4");
	assert_int_equal(load(&R, &s, "mech4"), 0);
	drop(&R);
	s.mechanism = DP_MECH_GAUSSIAN;
	assert_int_equal(load(&R, &s, "mech4"), DP_EINVAL);
	drop(&R);
	root = json_tokener_parse(saved);
	json_object_object_add(member(root, "job"), "mechanism", json_object_new_string("both"));
	put_root(root, "mechb");
	assert_int_equal(load(&R, &s, "mechb"), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "bad mechanism 'both'"));
	drop(&R);
	free(saved);
	lrnjob_free(&J);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_owner_order),
		cmocka_unit_test(test_mismatch),
		cmocka_unit_test(test_job_auto),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_no_plan),
		cmocka_unit_test(test_io_failed),
		cmocka_unit_test(test_version1_fixture),
		cmocka_unit_test(test_schema_left_out),
		cmocka_unit_test(test_sync_resume),
		cmocka_unit_test(test_version2_fixtures),
		cmocka_unit_test(test_schema_summary),
		cmocka_unit_test(test_mechanism),
	};
	int rc;

	dp_log_set_level(DP_LOG_ERROR);
	tmpdir_setup("dp_test_checkpoint");
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	tmpdir_teardown();
	return rc;
}
