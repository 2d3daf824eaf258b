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
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmds.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/num.h"
#include "tools/lib/simrng.h"

static const char dp__gen_usage[] =
	"usage: dpasync gen --rows N1,N2,... --out DIR [options]\n"
	"\n"
	"Write synthetic owner datasets DIR/owner-1.csv ... (header x1..xD,y).\n"
	"\n"
	"  --rows N1,N2,...   rows per owner (one owner per number; required)\n"
	"  --out DIR          output directory (created; required)\n"
	"  --task T           regression (default) | classification (y in {-1,+1})\n"
	"  --features D       number of features (default 10)\n"
	"  --noise S          regression noise standard deviation (default 0.5)\n"
	"  --shift S          heterogeneity: owner i's feature means at\n"
	"                     S*(2(i-1)/(N-1)-1) (default 0: iid owners)\n"
	"  --concept-shift C  owner i's true model is theta + C*delta_i, delta_i ~\n"
	"                     N(0, 1/D) per owner (default 0: one model for all)\n"
	"  --seed S           seed (default 1); the same seed gives the same files\n"
	"  --help             this text\n";

static double dp__gauss(dp_simrng *r)
{
	/* Box-Muller on (0,1] uniforms; one value per call keeps the stream simple. */
	double u1 = ((double)(dp_simrng_next(r) >> 11) + 1.0) * 0x1.0p-53;
	double u2 = (double)(dp_simrng_next(r) >> 11) * 0x1.0p-53;

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static double dp__uniform(dp_simrng *r)
{
	return ((double)(dp_simrng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

int dp_cmd_gen(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rows", required_argument, NULL, 'r' },
		{ "out", required_argument, NULL, 'o' },
		{ "task", required_argument, NULL, 't' },
		{ "features", required_argument, NULL, 'd' },
		{ "noise", required_argument, NULL, 'n' },
		{ "shift", required_argument, NULL, 'S' },
		{ "concept-shift", required_argument, NULL, 'C' },
		{ "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t *rows = NULL, nowners = 0, d = 10;
	uint64_t seed = 1;
	double noise = 0.5, shift = 0.0, concept = 0.0;
	const char *out = NULL;
	int classify = 0, c, rc = 2;
	double *theta = NULL, *x = NULL, *own = NULL;
	dp_simrng rng;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int err = 0;
		switch (c) {
		case 'r': free(rows); err = dp_num_parse_size_list("--rows", optarg, &rows, &nowners); break;
		case 'o': out = optarg; break;
		case 't':
			if (strcmp(optarg, "regression") == 0)
				classify = 0;
			else if (strcmp(optarg, "classification") == 0)
				classify = 1;
			else
				err = dp_error_set(DP_EINVAL, "--task: expected regression or classification, got '%s'", optarg);
			break;
		case 'd': err = dp_num_parse_size("--features", optarg, &d); break;
		case 'n': err = dp_num_parse_double("--noise", optarg, 0, &noise); break;
		case 'S': err = dp_num_parse_double("--shift", optarg, 0, &shift); break;
		case 'C': err = dp_num_parse_double("--concept-shift", optarg, 0, &concept); break;
		case 's': err = dp_num_parse_u64("--seed", optarg, &seed); break;
		case 'h': fputs(dp__gen_usage, stdout); free(rows); return 0;
		default: dp_tool_fail("gen", "bad usage: unknown option or missing value in '%s' (try dpasync gen --help)", argv[optind - 1]); goto done;
		}
		if (err) {
			dp_tool_fail("gen", "%s", dp_error_detail(err));
			goto done;
		}
	}
	if (optind < argc) {
		dp_tool_fail("gen", "unexpected argument '%s'", argv[optind]);
		goto done;
	}
	if (rows == NULL || out == NULL) {
		dp_tool_fail("gen", "--rows and --out are required (try dpasync gen --help)");
		goto done;
	}
	if (d == 0 || d > 100000) {
		dp_tool_fail("gen", "--features must be between 1 and 100000");
		goto done;
	}
	if (noise < 0) {
		dp_tool_fail("gen", "--noise must be >= 0");
		goto done;
	}
	for (size_t i = 0; i < nowners; i++)
		if (rows[i] == 0) {
			dp_tool_fail("gen", "--rows: owner %zu has 0 rows", i + 1);
			goto done;
		}
	if (dp_file_mkdir_p(out, 0) != 0) {
		dp_tool_fail("gen", "%s", dp_error_detail(DP_EIO));
		rc = 1;
		goto done;
	}
	theta = malloc(d * sizeof(double));
	x = malloc(d * sizeof(double));
	own = malloc(d * sizeof(double));
	if (theta == NULL || x == NULL || own == NULL) {
		dp_tool_fail("gen", "out of memory");
		rc = 1;
		goto done;
	}
	dp_simrng_seed(&rng, seed);
	for (size_t q = 0; q < d; q++)
		theta[q] = dp__gauss(&rng) / sqrt((double)d);
	for (size_t i = 0; i < nowners; i++) {
		char path[4096];
		double mean = nowners > 1 ? shift * (2.0 * (double)i / (double)(nowners - 1) - 1.0) : 0.0;
		FILE *f;

		for (size_t q = 0; q < d; q++)
			own[q] = theta[q] + (concept != 0.0 ? concept * dp__gauss(&rng) / sqrt((double)d) : 0.0);
		snprintf(path, sizeof(path), "%s/owner-%zu.csv", out, i + 1);
		f = fopen(path, "w");
		if (f == NULL) {
			dp_tool_fail("gen", "%s: cannot create: %s", path, strerror(errno));
			rc = 1;
			goto done;
		}
		for (size_t q = 0; q < d; q++)
			fprintf(f, "x%zu,", q + 1);
		fputs("y\n", f);
		for (size_t j = 0; j < rows[i]; j++) {
			double score = 0.0, y;
			for (size_t q = 0; q < d; q++) {
				x[q] = mean + dp__gauss(&rng);
				score += own[q] * x[q];
			}
			if (classify)
				y = dp__uniform(&rng) < 1.0 / (1.0 + exp(-4.0 * score)) ? 1.0 : -1.0;
			else
				y = score + noise * dp__gauss(&rng);
			for (size_t q = 0; q < d; q++)
				fprintf(f, "%.9g,", x[q]);
			fprintf(f, "%.9g\n", y);
		}
		if (fclose(f) != 0) {
			dp_tool_fail("gen", "%s: write failed: %s", path, strerror(errno));
			rc = 1;
			goto done;
		}
	}
	rc = 0;
done:
	free(rows);
	free(theta);
	free(x);
	free(own);
	return rc;
}
