/* SPDX-License-Identifier: Apache-2.0 */
/* The Gaussian privacy audit's answer driver (docs/privacy-audit.md §8):
 * the unit-level half of the audit, without sockets.  It loads one of the
 * audit's canary datasets (x1,x2,x3,y; target y) as ownerd does and draws
 * K answers at theta = 0 through dp_query_answer_mech with the discrete
 * Gaussian, the L2 clip bound `clip` and the per-answer share rho_q, noise
 * from the CSPRNG, writing every answer's gradient to OUT as one line of p
 * numbers (%.17g).  Built twice: as is, and linked with halfnoise.c (half
 * the sigma), the negative control.  Test only, never installed.
 *
 *   gauss_answers --data CSV --answers K --clip C --rho R --out FILE
 *
 * On success prints on stdout
 *   gauss_answers answers=K rho_q=R sigma=S exact=E n_rows=N p=P
 * where S is the released noise's standard deviation (info.sigma) and E
 * the noiseless answer's first coordinate (rho = inf), from which the
 * script checks that the canary moves it by exactly 2 clip / n.  Exit 0
 * on success, 1 on any failure (one line on stderr), 2 on bad usage. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/query.h"
#include "common/core/rng.h"
#include "tests/lib/opts.h"

static struct {
	char *data, *out;
	uint64_t K;
	double clip, rho;
} A;

static int check_opts(void *arg)
{
	(void)arg;
	if (A.K == 0 || A.clip == 0 || A.rho == 0)
		return dp_error_set(DP_EINVAL, "--answers, --clip and --rho are required");
	return 0;
}

static const struct dp_config_entry opts[] = {
	{ .name = "data", DP_CFG_PATH(&A.data), .flags = DP_CONFIG_REQUIRED,
	  .help = "the canary dataset (x1,x2,x3,y)" },
	{ .name = "answers", DP_CFG_U64(&A.K), .min = 1, .max = INFINITY,
	  .help = "K, the answers to draw (required)" },
	{ .name = "clip", DP_CFG_DOUBLE(&A.clip), .min = 0, .max = INFINITY, .min_exclusive = true,
	  .help = "the L2 clip bound (required)" },
	{ .name = "rho", DP_CFG_DOUBLE(&A.rho), .min = 0, .max = INFINITY, .min_exclusive = true,
	  .help = "rho_q, each answer's zCDP share (required)" },
	{ .name = "out", DP_CFG_PATH(&A.out), .flags = DP_CONFIG_REQUIRED,
	  .help = "one line of p numbers per answer" },
	DP_CONFIG_END,
};

/* Draws the K answers into `out`; 0 or a negative code. */
static int draw(const dp_dataset *ds, FILE *out, double *sigma, double *exact)
{
	dp_csprng *rng = NULL;
	dp_bitsource src;
	dp_query_info info = { 0 };
	double *theta = calloc(ds->p, sizeof(double)), *grad = calloc(ds->p, sizeof(double));
	int rc = DP_ENOMEM;

	if (theta == NULL || grad == NULL)
		goto out;
	rc = dp_query_answer_mech(DP_MODEL_LINEAR, ds, theta, A.clip, DP_MECH_GAUSSIAN, INFINITY,
				  NULL, grad, NULL);
	if (rc < 0)
		goto out;
	*exact = grad[0];
	rc = dp_rng_csprng_new(&rng);
	if (rc < 0)
		goto out;
	src = dp_rng_csprng_bits(rng);
	for (uint64_t k = 0; k < A.K && rc == 0; k++) {
		rc = dp_query_answer_mech(DP_MODEL_LINEAR, ds, theta, A.clip, DP_MECH_GAUSSIAN,
					  A.rho, &src, grad, &info);
		for (size_t j = 0; j < ds->p && rc == 0; j++)
			fprintf(out, j ? " %.17g" : "%.17g", grad[j]);
		if (rc == 0)
			fputc('\n', out);
	}
	*sigma = info.sigma;
	dp_rng_csprng_destroy(rng);
out:
	free(theta);
	free(grad);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct dp_config_spec spec = {
		.program = "gauss_answers", .summary = "The Gaussian audit's answer driver.",
		.entries = opts, .validate = check_opts, .command = true,
	};
	const dp_load_opts lo = { .target = "y" };
	dp_dataset ds;
	double sigma = 0, exact = 0;
	FILE *out = NULL;
	int rc, status;

	if (!tst_opts_load(&spec, argc, argv, &status))
		return status;
	rc = dp_dataset_load(&ds, A.data, &lo);
	if (rc < 0)
		goto done;
	out = fopen(A.out, "w");
	if (out == NULL)
		rc = dp_error_set(DP_EIO, "cannot write %s", A.out);
	if (rc == 0)
		rc = draw(&ds, out, &sigma, &exact);
	if (out != NULL && fclose(out) != 0 && rc == 0)
		rc = dp_error_set(DP_EIO, "cannot write %s", A.out);
	if (rc == 0)
		printf("gauss_answers answers=%" PRIu64 " rho_q=%.17g sigma=%.17g exact=%.17g "
		       "n_rows=%zu p=%zu\n", A.K, A.rho, sigma, exact, ds.n, ds.p);
	dp_dataset_free(&ds);
done:
	if (rc < 0)
		fprintf(stderr, "gauss_answers: %s\n", dp_error_detail(rc));
	dp_config_free(&spec);
	return rc < 0 ? 1 : 0;
}
