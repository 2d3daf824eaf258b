/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync gen: synthetic owner datasets for experiments and tests.
 *
 * Features are iid N(0,1) (already standardised), theta_true ~ N(0, 1/D) so
 * that the score theta_true^T x is about N(0,1).  Regression: y = score +
 * N(0, noise^2).  Classification: y = +1 with probability
 * 1/(1 + exp(-4 score)), else -1.  --shift s moves owner i's feature means
 * to s*(2(i-1)/(N-1) - 1) for heterogeneous owners; --concept-shift c gives
 * owner i its own true model theta_true + c * delta_i, delta_i ~ N(0, 1/D),
 * so that owners' local optima differ.  Deterministic for a seed:
 * theta_true first, then per owner delta_i (when c != 0) and its rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/file.h"
#include "common/net/config.h"
#include "tools/cmds.h"
#include "tools/lib/schema_build.h"
#include "tools/lib/simrng.h"

struct gen_opts {
	struct dp_config_sizes rows;
	char *out;
	int task;              /* dp_task */
	size_t features;
	double noise, shift, concept;
	uint64_t seed;
	bool force;
};

static double gauss(dp_simrng *r)
{
	/* Box-Muller on (0,1] uniforms; one value per call keeps the stream simple. */
	double u1 = ((double)(dp_simrng_next(r) >> 11) + 1.0) * 0x1.0p-53;
	double u2 = (double)(dp_simrng_next(r) >> 11) * 0x1.0p-53;

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static double uniform(dp_simrng *r)
{
	return ((double)(dp_simrng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

/* Writes DIR/owner-1.csv ...; the exit status. */
static int generate(void *arg)
{
	const struct gen_opts *o = arg;
	size_t nowners = o->rows.n, d = o->features;
	const size_t *rows = o->rows.v;
	double *theta = NULL, *x = NULL, *own = NULL;
	dp_simrng rng;
	int rc;

	for (size_t i = 0; i < nowners; i++) {
		if (rows[i] == 0) {
			dp_cmd_fail("gen", "--rows: owner %zu has 0 rows", i + 1);
			return dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
		}
	}
	/* Like prep and certs: nothing is replaced without --force, and the
	 * check comes before the first file is written. */
	for (size_t i = 0; i < nowners && !o->force; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/owner-%zu.csv", o->out, i + 1);
		if (access(path, F_OK) == 0) {
			dp_cmd_fail("gen", "%s exists (use --force to overwrite)", path);
			return dp_exit_status(DP_EEXIST, DP_EXIT_PHASE_LOAD);
		}
	}
	if (dp_file_mkdir_p(o->out, 0) != 0) {
		dp_cmd_fail("gen", "%s", dp_error_detail(DP_EIO));
		return dp_exit_status(DP_EIO, DP_EXIT_PHASE_RUN);
	}
	theta = malloc(d * sizeof(double));
	x = malloc(d * sizeof(double));
	own = malloc(d * sizeof(double));
	if (theta == NULL || x == NULL || own == NULL) {
		dp_cmd_fail("gen", "out of memory");
		rc = dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
		goto done;
	}
	dp_simrng_seed(&rng, o->seed);
	for (size_t q = 0; q < d; q++)
		theta[q] = gauss(&rng) / sqrt((double)d);
	for (size_t i = 0; i < nowners; i++) {
		char path[4096];
		double mean = nowners > 1 ? o->shift * (2.0 * (double)i / (double)(nowners - 1) - 1.0)
					  : 0.0;
		FILE *f;

		for (size_t q = 0; q < d; q++)
			own[q] = theta[q] + (o->concept != 0.0 ? o->concept * gauss(&rng) /
								 sqrt((double)d) : 0.0);
		snprintf(path, sizeof(path), "%s/owner-%zu.csv", o->out, i + 1);
		f = fopen(path, "w");
		if (f == NULL) {
			dp_cmd_fail("gen", "%s: cannot create: %s", path, strerror(errno));
			rc = dp_exit_status(DP_EIO, DP_EXIT_PHASE_RUN);
			goto done;
		}
		for (size_t q = 0; q < d; q++)
			fprintf(f, "x%zu,", q + 1);
		fputs("y\n", f);
		for (size_t j = 0; j < rows[i]; j++) {
			double score = 0.0, y;

			for (size_t q = 0; q < d; q++) {
				x[q] = mean + gauss(&rng);
				score += own[q] * x[q];
			}
			if (o->task == DP_TASK_CLASSIFICATION)
				y = uniform(&rng) < 1.0 / (1.0 + exp(-4.0 * score)) ? 1.0 : -1.0;
			else
				y = score + o->noise * gauss(&rng);
			for (size_t q = 0; q < d; q++)
				fprintf(f, "%.9g,", x[q]);
			fprintf(f, "%.9g\n", y);
		}
		if (fclose(f) != 0) {
			dp_cmd_fail("gen", "%s: write failed: %s", path, strerror(errno));
			rc = dp_exit_status(DP_EIO, DP_EXIT_PHASE_RUN);
			goto done;
		}
	}
	rc = 0;
done:
	free(theta);
	free(x);
	free(own);
	return rc;
}

int dp_cmd_gen(int argc, char **argv)
{
	struct gen_opts o = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "rows", DP_CFG_SIZES(&o.rows), .flags = DP_CONFIG_REQUIRED,
		  .metavar = "N1,N2,...", .help = "rows per owner (one owner per number)" },
		{ .name = "out", DP_CFG_PATH(&o.out), .flags = DP_CONFIG_REQUIRED, .metavar = "DIR",
		  .help = "output directory (created)" },
		{ .name = "task", DP_CFG_ENUM(&o.task, dp_schema_build_tasks), .def = "regression",
		  .metavar = "T", .help = "regression | classification (y in {-1,+1})" },
		{ .name = "features", DP_CFG_SIZE(&o.features), .def = "10", .min = 1, .max = 100000,
		  .metavar = "D", .help = "number of features" },
		{ .name = "noise", DP_CFG_DOUBLE(&o.noise), .def = "0.5", .min = 0, .max = INFINITY,
		  .metavar = "S", .help = "regression noise standard deviation" },
		{ .name = "shift", DP_CFG_DOUBLE(&o.shift), .def = "0", .metavar = "S",
		  .help = "heterogeneity: owner i's feature means at\n"
			  "S*(2(i-1)/(N-1)-1) (0: iid owners)" },
		{ .name = "concept-shift", DP_CFG_DOUBLE(&o.concept), .def = "0", .metavar = "C",
		  .help = "owner i's true model is theta + C*delta_i,\n"
			  "delta_i ~ N(0, 1/D) per owner (0: one model\nfor all)" },
		{ .name = "seed", DP_CFG_U64(&o.seed), .def = "1", .metavar = "S",
		  .help = "seed; the same seed gives the same files" },
		{ .name = "force", DP_CFG_BOOL(&o.force),
		  .help = "replace existing owner files" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync gen",
		.command = true,
		.summary = "Write synthetic owner datasets DIR/owner-1.csv ... (header x1..xD,y).",
		.entries = entries,
	};

	return dp_cmd_run(&spec, argc, argv, generate, &o);
}
