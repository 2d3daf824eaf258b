/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for learnerd's checkpoint loader (learner/checkpoint.c),
 * linked with liblearner (learner/job.h: the job without the daemon's
 * network).
 *
 * The input is checkpoint.json, loaded as by a fresh `learnerd --resume`
 * of the job its seeds come from (job "fuzz-job", linear, owners owner-1
 * and owner-2, lambda 0.01, theta-max 10, bias; T, clip and the step size
 * not given, so the file's are taken; the mode sync1 or sync2 when the
 * input names it, as a sync job resumes only in its own mode, else
 * request).  A checkpoint that loads must hold
 * together (k_done <= T, every theta finite, n_total the sum of the
 * planned owners' n_rows, a left-out owner exhausted, a fingerprint that
 * fits a Hello's), save as the final checkpoint and load again into a
 * second fresh learner to the same job and state, bit for bit.  Aborts on any inconsistency;
 * the sanitizers catch memory errors. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "learner/job.h"
#include "tests/fuzz/fuzz_util.h"

static char *names[] = { "owner-1", "owner-2" };

static struct lrn_settings settings(void)
{
	return (struct lrn_settings){
		.job = "fuzz-job", .model = DP_MODEL_LINEAR, .lambda = 0.01, .theta_max = 10,
		.bias = true, .max_frame = 16u << 20, .checkpoint_every = 20, .max_inflight = 1,
	};
}

/* The mode a resume of this input is run in. */
static int mode_of(const uint8_t *data, size_t size)
{
	if (memmem(data, size, "\"sync1\"", 7) != NULL)
		return LRN_MODE_SYNC1;
	if (memmem(data, size, "\"sync2\"", 7) != NULL)
		return LRN_MODE_SYNC2;
	return LRN_MODE_REQUEST;
}

static void init(struct lrn_job *J, struct lrn_settings *s, const char *path)
{
	FUZZ_CHECK(lrn_state_init(J, s, names, 2) == 0);
	J->ckpt_path = (char *)path;
}

static int same_bits(double a, double b)
{
	return memcmp(&a, &b, sizeof(double)) == 0;
}

static void check_consistent(const struct lrn_job *J)
{
	uint64_t nsum = 0;
	size_t planned = 0;

	FUZZ_CHECK(J->started && J->p >= 1 && J->T >= 1 && J->k_done <= J->T);
	FUZZ_CHECK(J->next_qid >= 1 && J->next_qid == J->qid_reserved);
	FUZZ_CHECK(J->clip > 0 && J->eta > 0 && J->rho > 0);
	for (size_t q = 0; q < J->p; q++)
		FUZZ_CHECK(isfinite(J->theta_L[q]));
	for (size_t i = 0; i < J->N; i++) {
		FUZZ_CHECK(J->owners[i].n_rows > 0 && J->owners[i].ever_hello);
		for (size_t q = 0; q < J->p; q++)
			FUZZ_CHECK(isfinite(J->owners[i].theta[q]));
		FUZZ_CHECK(!J->owners[i].left_out || J->owners[i].exhausted);
		if (!J->owners[i].left_out) {
			nsum += J->owners[i].n_rows;
			planned++;
		}
	}
	FUZZ_CHECK(nsum == J->n_total && planned == J->n_planned && planned >= 1);
	FUZZ_CHECK(strlen(J->schema_fp) < sizeof(J->schema_fp) &&
		   (J->schema_fp[0] == '\0' || J->schema_from[0] != '\0'));
}

static void check_same(const struct lrn_job *a, const struct lrn_job *b)
{
	FUZZ_CHECK(a->p == b->p && a->T == b->T && a->k_done == b->k_done &&
		   a->next_qid == b->next_qid && a->n_total == b->n_total);
	FUZZ_CHECK(same_bits(a->clip, b->clip) && same_bits(a->eta, b->eta) &&
		   same_bits(a->rho, b->rho));
	/* The forecast is kept when the plan has both numbers. */
	if (isfinite(a->psi_pred) && isfinite(a->psi_zero))
		FUZZ_CHECK(same_bits(a->psi_pred, b->psi_pred) &&
			   same_bits(a->psi_zero, b->psi_zero) && a->measured == b->measured);
	FUZZ_CHECK(memcmp(a->theta_L, b->theta_L, a->p * sizeof(double)) == 0);
	FUZZ_CHECK(strcmp(a->schema_fp, b->schema_fp) == 0 &&
		   strcmp(a->schema_from, b->schema_from) == 0 && a->n_planned == b->n_planned);
	/* The agreed schema's summary (version 4) reads back byte for byte. */
	FUZZ_CHECK(a->schema_sum_len == b->schema_sum_len &&
		   (a->schema_sum == NULL) == (b->schema_sum == NULL));
	if (a->schema_sum != NULL)
		FUZZ_CHECK(memcmp(a->schema_sum, b->schema_sum, a->schema_sum_len) == 0);
	for (size_t i = 0; i < a->N; i++) {
		const struct lrn_owner *x = &a->owners[i], *y = &b->owners[i];

		FUZZ_CHECK(x->n_rows == y->n_rows && x->iterations == y->iterations &&
			   x->exhausted == y->exhausted && x->planned_cap == y->planned_cap &&
			   x->left_out == y->left_out);
		FUZZ_CHECK(same_bits(x->eps_spent, y->eps_spent));
		FUZZ_CHECK(memcmp(x->theta, y->theta, a->p * sizeof(double)) == 0);
	}
	/* A sync job's round position and published average. */
	FUZZ_CHECK(a->answers == b->answers && same_bits(a->step, b->step));
	FUZZ_CHECK((a->theta_hat == NULL) == (b->theta_hat == NULL));
	if (a->theta_hat != NULL)
		FUZZ_CHECK(memcmp(a->theta_hat, b->theta_hat, a->p * sizeof(double)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = fuzz_util_path("checkpoint.json"), *out = fuzz_util_path("saved.json");
	struct lrn_settings s = settings();
	struct lrn_job a, b;

	s.mode = mode_of(data, size);
	fuzz_util_write(in, data, size);
	init(&a, &s, in);
	if (lrn_checkpoint_load(&a) != 0) {
		/* Nothing is set up by a failed load. */
		FUZZ_CHECK(a.p == 0 && a.theta_L == NULL && !a.started);
		lrn_state_free(&a);
		return 0;
	}
	check_consistent(&a);
	a.ckpt_path = (char *)out;
	FUZZ_CHECK(lrn_checkpoint_save(&a, true) == 0);
	init(&b, &s, out);
	FUZZ_CHECK(lrn_checkpoint_load(&b) == 0);
	check_consistent(&b);
	check_same(&a, &b);
	lrn_state_free(&a);
	lrn_state_free(&b);
	return 0;
}
