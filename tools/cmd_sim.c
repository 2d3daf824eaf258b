/* dpasync sim: in-process runs of async | sync1 | sync2 over owner CSVs,
 * R repeats, psi statistics (the data of the paper's Fig. 2). */
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "tools/cmds.h"
#include "common/core/defaults.h"
#include "common/core/error.h"
#include "common/core/json.h"
#include "common/core/file.h"
#include "common/core/ledger.h"
#include "common/core/modelfile.h"
#include "tools/lib/optimum.h"
#include "common/core/num.h"
#include "tools/lib/plot.h"
#include "tools/lib/simcli.h"
#include "tools/lib/sim.h"

static const char dp__sim_usage[] =
	"usage: dpasync sim [options] --out DIR FILE...\n"
	"\n"
	"Simulate training over owner datasets FILE... (one CSV per owner) in one\n"
	"process, with the daemons' update and query code and a seeded generator.\n"
	"Writes DIR/summary.json, DIR/psi.csv (percentiles of psi(theta,k) over the\n"
	"repeats), DIR/model.json (the first repeat's model) and DIR/schedule.txt\n"
	"(the first repeat's owner per async iteration, usable as --schedule).\n"
	"\n"
	"  --mode M          async (default) | sync1 | sync2\n"
	"  --model M         linear (default) | logistic | svm\n"
	"  --target COL      target column (default y; with --schema: the schema's)\n"
	"  --bias            append a constant-1 feature\n"
	"  --schema FILE     feature schema from dpasync prep, applied to raw FILEs\n"
	"  --T N             iterations (default 1000)\n"
	"  --eta E           async: owner-copy step N rho/(T^2 sigma)\n"
	"                    (default 1/(L max_i n_i/n) * min(1, sqrt(100N/T)),\n"
	"                    L = 2p+2lambda linear, p/4+2lambda logistic/svm)\n"
	"  --rho R           async: the paper's rho instead of --eta;\n"
	"                    sync1: step rho/(T^2 k) (default rho/T^2 = min(1/L, 1/(2lambda)))\n"
	"  --c C             sync2: step c/sqrt(k) (default as sync1's rho/T^2)\n"
	"  --lambda L        regulariser g = lambda ||theta||^2 (default 0.01)\n"
	"  --theta-max M     box bound on every coordinate (default 10)\n"
	"  --clip X          L1 clip bound on per-example gradients (default p, the\n"
	"                    number of model coordinates)\n"
	"  --epsilon E[,..]  budget per owner, one value for all or one per owner;\n"
	"                    inf = no noise (default 1)\n"
	"  --answers-cap K   answers each owner's budget is split over (default T)\n"
	"  --rates R[,..]    async: owners' Poisson clock rates (default 1 each)\n"
	"  --freq-correction async: scale owner i's weight by 1/(N pi_i), pi_i its\n"
	"                    observed share of iterations (the paper's Remark 4)\n"
	"  --schedule FILE   async: owner (1-based) of each iteration, one per line\n"
	"  --repeats R       independent runs (default 10)\n"
	"  --seed S          seed (default 1)\n"
	"  --psi-every M     evaluate psi every M iterations (default max(1, T/200))\n"
	"  --out DIR         output directory (required)\n"
	"  --help            this text\n";

typedef struct dp_sim_opts {
	enum dp_sim_mode mode;
	dp_model model;
	const char *target, *schema, *schedule, *out;
	int bias, have_eta, have_rho, have_c, have_clip, freq_correction;
	size_t T, answers_cap, repeats, psi_every;
	uint64_t seed;
	double eta, rho, c, lambda, theta_max, clip;
	double *eps, *rates;
	size_t neps, nrates;
} dp_sim_opts;

static int dp__sim_parse(dp_sim_opts *o, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "model", required_argument, NULL, 'M' },
		{ "target", required_argument, NULL, 't' },
		{ "bias", no_argument, NULL, 'b' },
		{ "schema", required_argument, NULL, 'S' },
		{ "T", required_argument, NULL, 'T' },
		{ "eta", required_argument, NULL, 'e' },
		{ "rho", required_argument, NULL, 'r' },
		{ "c", required_argument, NULL, 'c' },
		{ "lambda", required_argument, NULL, 'l' },
		{ "theta-max", required_argument, NULL, 'x' },
		{ "clip", required_argument, NULL, 'X' },
		{ "epsilon", required_argument, NULL, 'E' },
		{ "answers-cap", required_argument, NULL, 'K' },
		{ "rates", required_argument, NULL, 'R' },
		{ "schedule", required_argument, NULL, 's' },
		{ "freq-correction", no_argument, NULL, 'F' },
		{ "repeats", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 'd' },
		{ "psi-every", required_argument, NULL, 'p' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int err = 0;
		switch (c) {
		case 'm':
			if (strcmp(optarg, "async") == 0)
				o->mode = DP_SIM_ASYNC;
			else if (strcmp(optarg, "sync1") == 0)
				o->mode = DP_SIM_SYNC1;
			else if (strcmp(optarg, "sync2") == 0)
				o->mode = DP_SIM_SYNC2;
			else
				err = dp_error_set(DP_EINVAL, "--mode: expected async, sync1 or sync2, got '%s'", optarg);
			break;
		case 'M': err = dp_model_parse(optarg, &o->model); break;
		case 't': o->target = optarg; break;
		case 'b': o->bias = 1; break;
		case 'S': o->schema = optarg; break;
		case 'T': err = dp_num_parse_size("--T", optarg, &o->T); break;
		case 'e': err = dp_num_parse_double("--eta", optarg, 0, &o->eta); o->have_eta = 1; break;
		case 'r': err = dp_num_parse_double("--rho", optarg, 0, &o->rho); o->have_rho = 1; break;
		case 'c': err = dp_num_parse_double("--c", optarg, 0, &o->c); o->have_c = 1; break;
		case 'l': err = dp_num_parse_double("--lambda", optarg, 0, &o->lambda); break;
		case 'x': err = dp_num_parse_double("--theta-max", optarg, 0, &o->theta_max); break;
		case 'X': err = dp_num_parse_double("--clip", optarg, 0, &o->clip); o->have_clip = 1; break;
		case 'E': free(o->eps); err = dp_num_parse_double_list("--epsilon", optarg, 1, &o->eps, &o->neps); break;
		case 'K': err = dp_num_parse_size("--answers-cap", optarg, &o->answers_cap); break;
		case 'R': free(o->rates); err = dp_num_parse_double_list("--rates", optarg, 0, &o->rates, &o->nrates); break;
		case 's': o->schedule = optarg; break;
		case 'F': o->freq_correction = 1; break;
		case 'n': err = dp_num_parse_size("--repeats", optarg, &o->repeats); break;
		case 'd': err = dp_num_parse_u64("--seed", optarg, &o->seed); break;
		case 'p': err = dp_num_parse_size("--psi-every", optarg, &o->psi_every); break;
		case 'o': o->out = optarg; break;
		case 'h': fputs(dp__sim_usage, stdout); return 1;
		default: dp_tool_fail("sim", "bad usage: unknown option or missing value in '%s' (try dpasync sim --help)", argv[optind - 1]); return 2;
		}
		if (err) {
			dp_tool_fail("sim", "%s", dp_error_detail(err));
			return 2;
		}
	}
#define DP__REQUIRE(cond, ...) do { if (!(cond)) { dp_tool_fail("sim", __VA_ARGS__); return 2; } } while (0)
	DP__REQUIRE(o->out != NULL, "--out DIR is required (try dpasync sim --help)");
	DP__REQUIRE(o->T >= 2, "--T must be at least 2");
	DP__REQUIRE(o->repeats >= 1, "--repeats must be at least 1");
	DP__REQUIRE(o->lambda >= 0, "--lambda must be >= 0");
	DP__REQUIRE(o->lambda > 0 || o->model == DP_MODEL_LINEAR,
		    "--lambda must be > 0 for logistic and svm (strong convexity)");
	DP__REQUIRE(o->theta_max > 0, "--theta-max must be > 0");
	DP__REQUIRE(!o->have_clip || o->clip > 0, "--clip must be > 0");
	DP__REQUIRE(!(o->have_eta && o->have_rho), "give --eta or --rho, not both");
	DP__REQUIRE(!o->have_eta || o->eta > 0, "--eta must be > 0");
	DP__REQUIRE(!o->have_rho || o->rho > 0, "--rho must be > 0");
	DP__REQUIRE(!o->have_c || o->c > 0, "--c must be > 0");
	DP__REQUIRE(!(o->have_rho && o->mode == DP_SIM_ASYNC && o->lambda <= 0),
		    "--rho needs --lambda > 0 (sigma = 2 lambda); use --eta");
	DP__REQUIRE(o->psi_every >= 1 || o->psi_every == 0, "--psi-every must be >= 1");
	DP__REQUIRE(o->answers_cap >= 1 || o->answers_cap == 0, "--answers-cap must be >= 1");
	for (size_t i = 0; i < o->neps; i++)
		DP__REQUIRE(o->eps[i] > 0, "--epsilon must be > 0 (got %g)", o->eps[i]);
	for (size_t i = 0; i < o->nrates; i++)
		DP__REQUIRE(o->rates[i] > 0, "--rates must be > 0 (got %g)", o->rates[i]);
	DP__REQUIRE(optind < argc, "no owner data files given (one CSV per owner)");
	return 0;
}

static int dp__read_schedule(const char *path, size_t T, size_t N, size_t **out)
{
	FILE *f = fopen(path, "r");
	size_t *s, k = 0, line = 0;
	char buf[64];

	if (f == NULL) {
		dp_tool_fail("sim", "%s: cannot open: %s", path, strerror(errno));
		return 2;
	}
	s = calloc(T, sizeof(size_t));
	if (s == NULL) {
		fclose(f);
		dp_tool_fail("sim", "out of memory");
		return 1;
	}
	while (fgets(buf, sizeof(buf), f)) {
		size_t v;
		line++;
		buf[strcspn(buf, "\r\n")] = '\0';
		if (dp_num_parse_size("owner", buf, &v) != 0 || v < 1 || v > N) {
			dp_tool_fail("sim", "%s:%zu: expected an owner number 1..%zu, got '%s'", path, line, N, buf);
			goto fail;
		}
		if (k == T) {
			dp_tool_fail("sim", "%s:%zu: more than T = %zu lines", path, line, T);
			goto fail;
		}
		s[k++] = v - 1;
	}
	if (k < T) {
		dp_tool_fail("sim", "%s: %zu lines, expected T = %zu", path, k, T);
		goto fail;
	}
	fclose(f);
	*out = s;
	return 0;
fail:
	fclose(f);
	free(s);
	return 2;
}

static int dp__write_outputs(const dp_sim_opts *o, const dp_sim_setup *s, const dp_owner_data *od,
			     const double *psi, const double *theta1, const double *theta_star,
			     const size_t *owners1)
{
	size_t ncp = dp_sim_checkpoints(s), R = o->repeats;
	double *col = malloc(R * sizeof(double)), *final = malloc(R * sizeof(double));
	struct json_object *j = json_object_new_object(), *arr;
	char path[4096];
	double mean = 0;
	FILE *f;
	int rc = 1;

	if (col == NULL || final == NULL || j == NULL) {
		dp_tool_fail("sim", "out of memory");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/psi.csv", o->out);
	f = fopen(path, "w");
	if (f == NULL) {
		dp_tool_fail("sim", "%s: cannot create: %s", path, strerror(errno));
		goto out;
	}
	fputs("k,psi_p25,psi_median,psi_p75,psi_mean\n", f);
	for (size_t c = 0; c < ncp; c++) {
		double m = 0;
		for (size_t r = 0; r < R; r++) {
			col[r] = psi[r * ncp + c];
			m += col[r];
		}
		fprintf(f, "%zu,%.10g,%.10g,%.10g,%.10g\n", dp_sim_checkpoint_k(s, c),
			dp_plot_percentile(col, R, 25), dp_plot_percentile(col, R, 50), dp_plot_percentile(col, R, 75),
			m / (double)R);
	}
	if (fclose(f) != 0) {
		dp_tool_fail("sim", "%s: write failed", path);
		goto out;
	}
	if (owners1) {
		snprintf(path, sizeof(path), "%s/schedule.txt", o->out);
		f = fopen(path, "w");
		if (f == NULL) {
			dp_tool_fail("sim", "%s: cannot create: %s", path, strerror(errno));
			goto out;
		}
		for (size_t k = 0; k < s->T; k++)
			fprintf(f, "%zu\n", owners1[k] + 1);
		if (fclose(f) != 0) {
			dp_tool_fail("sim", "%s: write failed", path);
			goto out;
		}
	}
	for (size_t r = 0; r < R; r++) {
		final[r] = psi[r * ncp + ncp - 1];
		mean += final[r];
	}
	mean /= (double)R;
	arr = dp_json_double_array(final, R);
	json_object_object_add(j, "mode", json_object_new_string(
		s->mode == DP_SIM_ASYNC ? "async" : s->mode == DP_SIM_SYNC1 ? "sync1" : "sync2"));
	json_object_object_add(j, "model", json_object_new_string(dp_model_name(s->model)));
	json_object_object_add(j, "N", json_object_new_uint64(s->N));
	json_object_object_add(j, "p", json_object_new_uint64(s->p));
	json_object_object_add(j, "T", json_object_new_uint64(s->T));
	json_object_object_add(j, "repeats", json_object_new_uint64(R));
	json_object_object_add(j, "seed", json_object_new_uint64(o->seed));
	json_object_object_add(j, "lambda", json_object_new_double(s->lambda));
	json_object_object_add(j, "theta_max", json_object_new_double(s->theta_max));
	json_object_object_add(j, "clip_l1", json_object_new_double(s->clip));
	json_object_object_add(j, "freq_correction", json_object_new_boolean(s->freq_correction));
	if (s->mode == DP_SIM_ASYNC) {
		json_object_object_add(j, "eta", json_object_new_double(s->eta));
		if (s->lambda > 0)
			json_object_object_add(j, "rho", json_object_new_double(
				dp_algo_rho_from_eta(s->N, s->T, s->lambda, s->eta)));
	} else if (s->mode == DP_SIM_SYNC1) {
		json_object_object_add(j, "rho", json_object_new_double(s->rho_over_T2 * (double)s->T * (double)s->T));
	} else {
		json_object_object_add(j, "c", json_object_new_double(s->c));
	}
	{
		double *rows = malloc(s->N * sizeof(double));
		struct json_object *ea = json_object_new_array();
		if (rows == NULL || ea == NULL) {
			free(rows);
			json_object_put(ea);
			dp_tool_fail("sim", "out of memory");
			goto out;
		}
		for (size_t i = 0; i < s->N; i++) {
			double e = o->neps == 0 ? DP_DEFAULT_EPSILON : o->neps == 1 ? o->eps[0] : o->eps[i];
			/* JSON has no infinity: an unlimited budget is written as null. */
			json_object_array_add(ea, isinf(e) ? NULL : json_object_new_double(e));
			rows[i] = (double)od->ds[i].n;
		}
		json_object_object_add(j, "epsilon", ea);
		json_object_object_add(j, "n_rows", dp_json_double_array(rows, s->N));
		free(rows);
	}
	json_object_object_add(j, "f_star", json_object_new_double(s->f_star));
	json_object_object_add(j, "psi_mean", json_object_new_double(mean));
	json_object_object_add(j, "psi_median", json_object_new_double(dp_plot_percentile(final, R, 50)));
	json_object_object_add(j, "psi_p25", json_object_new_double(dp_plot_percentile(final, R, 25)));
	json_object_object_add(j, "psi_p75", json_object_new_double(dp_plot_percentile(final, R, 75)));
	json_object_object_add(j, "psi", arr);
	json_object_object_add(j, "theta", dp_json_double_array(theta1, s->p));
	json_object_object_add(j, "theta_star", dp_json_double_array(theta_star, s->p));
	{
		const char *text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
								      JSON_C_TO_STRING_NOSLASHESCAPE);
		snprintf(path, sizeof(path), "%s/summary.json", o->out);
		if (dp_file_write_atomic(path, text, strlen(text), 0644) != 0) {
			dp_tool_fail("sim", "%s", dp_error_detail(DP_EIO));
			goto out;
		}
	}
	{
		dp_modelfile mf = { .model = s->model, .p = s->p, .theta = (double *)theta1,
				    .features = od->ds[0].names, .bias = o->bias, .T = s->T,
				    .lambda = s->lambda, .theta_max = s->theta_max, .clip = s->clip };
		int err;
		snprintf(mf.mode, sizeof(mf.mode), "%s", s->mode == DP_SIM_ASYNC ? "async" :
			 s->mode == DP_SIM_SYNC1 ? "sync1" : "sync2");
		snprintf(path, sizeof(path), "%s/model.json", o->out);
		err = dp_modelfile_write(path, &mf);
		if (err != 0) {
			dp_tool_fail("sim", "%s", dp_error_detail(err));
			goto out;
		}
	}
	rc = 0;
out:
	json_object_put(j);
	free(col);
	free(final);
	return rc;
}

int dp_cmd_sim(int argc, char **argv)
{
	dp_sim_opts o = { .mode = DP_SIM_ASYNC, .model = DP_MODEL_LINEAR, .T = DP_DEFAULT_T,
			  .repeats = 10, .seed = 1, .lambda = DP_DEFAULT_LAMBDA,
			  .theta_max = DP_DEFAULT_THETA_MAX };
	dp_owner_data od = { 0 };
	dp_sim_setup s = { 0 };
	size_t *schedule = NULL, *owners1 = NULL, ncp, N, nrows = 0;
	double *psi = NULL, *theta = NULL, *theta1 = NULL, *theta_star = NULL, maxw = 0;
	int rc;

	rc = dp__sim_parse(&o, argc, argv);
	if (rc != 0) {
		rc = rc == 1 ? 0 : rc;
		goto out;
	}
	rc = 2;
	if (dp_owner_data_load(&od, "sim", argv + optind, (size_t)(argc - optind),
			       o.schema ? NULL : (o.target ? o.target : "y"), o.bias, o.schema, o.model) != 0)
		goto out;
	N = od.N;
	if (o.neps != 0 && o.neps != 1 && o.neps != N) {
		dp_tool_fail("sim", "--epsilon has %zu values for %zu owners (give 1 or %zu)", o.neps, N, N);
		goto out;
	}
	if (o.nrates != 0 && o.nrates != 1 && o.nrates != N) {
		dp_tool_fail("sim", "--rates has %zu values for %zu owners (give 1 or %zu)", o.nrates, N, N);
		goto out;
	}
	if (o.freq_correction && o.mode != DP_SIM_ASYNC) {
		dp_tool_fail("sim", "--freq-correction applies to --mode async only");
		goto out;
	}
	if (o.schedule && o.mode != DP_SIM_ASYNC) {
		dp_tool_fail("sim", "--schedule applies to --mode async only");
		goto out;
	}
	if (o.schedule && (rc = dp__read_schedule(o.schedule, o.T, N, &schedule)) != 0)
		goto out;
	rc = 1;
	s.mode = o.mode;
	s.model = o.model;
	s.N = N;
	s.p = od.ds[0].p;
	s.T = o.T;
	s.ds = od.view;
	s.lambda = o.lambda;
	s.theta_max = o.theta_max;
	s.clip = o.have_clip ? o.clip : dp_defaults_clip(s.p);
	s.schedule = schedule;
	s.freq_correction = o.freq_correction;
	s.psi_every = o.psi_every ? o.psi_every : (o.T / 200 ? o.T / 200 : 1);
	s.weight = calloc(N, sizeof(double));
	s.eps_q = calloc(N, sizeof(double));
	s.rate = calloc(N, sizeof(double));
	ncp = dp_sim_checkpoints(&s);
	psi = calloc(ncp * o.repeats, sizeof(double));
	theta = calloc(s.p, sizeof(double));
	theta1 = calloc(s.p, sizeof(double));
	theta_star = calloc(s.p, sizeof(double));
	owners1 = calloc(o.T, sizeof(size_t));
	if (!s.weight || !s.eps_q || !s.rate || !psi || !theta || !theta1 || !theta_star || !owners1) {
		dp_tool_fail("sim", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < N; i++)
		nrows += od.ds[i].n;
	for (size_t i = 0; i < N; i++) {
		double eps = o.neps == 0 ? DP_DEFAULT_EPSILON : o.neps == 1 ? o.eps[0] : o.eps[i];
		size_t K = o.answers_cap ? o.answers_cap : o.T;
		s.weight[i] = (double)od.ds[i].n / (double)nrows;
		/* The same per-answer share ownerd's ledger charges (nano-epsilon, rounded down). */
		if (dp_ledger_eps_share(eps, K, &s.eps_q[i]) != 0) {
			dp_tool_fail("sim", "%s", dp_error_detail(DP_EINVAL));
			rc = 2;
			goto out;
		}
		s.rate[i] = o.nrates == 0 ? 1.0 : o.nrates == 1 ? o.rates[0] : o.rates[i];
		if (s.weight[i] > maxw)
			maxw = s.weight[i];
	}
	if (o.mode == DP_SIM_ASYNC)
		s.eta = o.have_eta ? o.eta : o.have_rho ? dp_algo_eta_from_rho(N, o.T, o.lambda, o.rho)
			: dp_defaults_async_eta(o.model, s.p, o.lambda, maxw, N, o.T);
	s.rho_over_T2 = o.have_rho ? o.rho / ((double)o.T * (double)o.T)
		: dp_defaults_sync_step(o.model, s.p, o.lambda);
	s.c = o.have_c ? o.c : dp_defaults_sync_step(o.model, s.p, o.lambda);

	rc = dp_optimum_solve(o.model, od.view, N, o.lambda, o.theta_max, theta_star, &s.f_star);
	if (rc != 0) {
		dp_tool_fail("sim", "computing the non-private optimum: %s", dp_error_detail(rc));
		rc = 1;
		goto out;
	}
	if (!(s.f_star > 0)) {
		dp_tool_fail("sim", "f(theta*) = %g: psi = f/f* - 1 is undefined when the optimum has zero cost",
			     s.f_star);
		rc = 1;
		goto out;
	}
	if (dp_file_mkdir_p(o.out, 0) != 0) {
		dp_tool_fail("sim", "%s", dp_error_detail(DP_EIO));
		rc = 1;
		goto out;
	}
	for (size_t r = 0; r < o.repeats; r++) {
		rc = dp_sim_run(&s, o.seed + r, psi + r * ncp, r == 0 ? theta1 : theta,
				r == 0 ? owners1 : NULL);
		if (rc != 0) {
			dp_tool_fail("sim", "repeat %zu: %s", r + 1, dp_error_detail(rc));
			rc = 1;
			goto out;
		}
	}
	rc = dp__write_outputs(&o, &s, &od, psi, theta1, theta_star,
			       o.mode == DP_SIM_ASYNC ? owners1 : NULL);
	if (rc == 0) {
		double m = 0;
		for (size_t r = 0; r < o.repeats; r++)
			m += psi[r * ncp + ncp - 1];
		printf("mode=%s model=%s N=%zu T=%zu repeats=%zu psi_mean=%.6g f_star=%.10g out=%s\n",
		       o.mode == DP_SIM_ASYNC ? "async" : o.mode == DP_SIM_SYNC1 ? "sync1" : "sync2",
		       dp_model_name(o.model), N, o.T, o.repeats, m / (double)o.repeats, s.f_star, o.out);
	}
out:
	dp_owner_data_free(&od);
	free(o.eps);
	free(o.rates);
	free(schedule);
	free(owners1);
	free(psi);
	free(theta);
	free(theta1);
	free(theta_star);
	free(s.weight);
	free(s.eps_q);
	free(s.rate);
	return rc;
}
