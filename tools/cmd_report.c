/* dpasync report: one run's directory (learnerd out dir or sim out dir)
 * into DIR/report.md with its figures (plotting.c) and key numbers. */
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/cmds.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/modelfile.h"
#include "tools/lib/optimum.h"
#include "common/core/num.h"
#include "tools/lib/plot.h"
#include "tools/lib/simcli.h"

static const char dp__report_usage[] =
	"usage: dpasync report [options] DIR\n"
	"\n"
	"Write DIR/report.md, a Markdown page with the key numbers of one run and\n"
	"its figures (PNG files DIR/report-*.png next to it, drawn with gnuplot).\n"
	"DIR is either\n"
	"  - a learnerd out directory (trace.csv; model.json and checkpoint.json\n"
	"    when present): iterations/s, per-owner iterations and share, median\n"
	"    and p95 query round trip and request wait, epsilon spent per owner\n"
	"    (the last eps_spent of the owner in the trace), psi with --data;\n"
	"    figures: owner of each iteration, wait/round-trip CDFs, shares, and\n"
	"    psi against time with --sim.  Also writes DIR/report-schedule.txt, the\n"
	"    trace's owner order for `dpasync sim --schedule` (owner j = the j-th\n"
	"    owner in natural order of names, so pass the data files in that order);\n"
	"  - a sim out directory (summary.json, psi.csv, schedule.txt): psi\n"
	"    statistics, per-owner iterations of the first run; figures: psi\n"
	"    against k and the owner of each iteration.\n"
	"\n"
	"  --data FILE[,FILE]  owner data files (repeatable): psi of DIR/model.json\n"
	"                      on their union, computed as `dpasync eval` does\n"
	"  --target COL        target column of the data files (default y)\n"
	"  --schema FILE       feature schema applied to raw data files\n"
	"  --rates R1,..|NAME=R,..  owners' clock rates (requests/s): adds share\n"
	"                      against clock rate to the shares figure\n"
	"  --sim SIMDIR        a `dpasync sim --schedule DIR/report-schedule.txt`\n"
	"                      run: adds psi against wall-clock time\n"
	"  --help              this text\n"
	"Exit status: 0 written, 1 gnuplot missing or failed or a write failed,\n"
	"2 bad usage or input.\n";

typedef struct dp__report_opts {
	const char *dir, *target, *schema, *rates, *sim;
	char **data;
	size_t ndata;
} dp__report_opts;

/* Set once inputs are read: later errors other than DP_EINVAL are runtime. */
static int dp__drawing;

static int dp__fail(int err)
{
	dp_tool_fail("report", "%s", dp_error_detail(err));
	if (dp__drawing)
		return err == DP_EINVAL ? 2 : 1;
	return err == DP_EINVAL || err == DP_EFORMAT || err == DP_ENOENT ? 2 : 1;
}

static int dp__exists(const char *dir, const char *name)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void dp__path(char *buf, size_t size, const char *dir, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
}

static int dp__add_data(dp__report_opts *o, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;

	if (copy == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char **d = realloc(o->data, (o->ndata + 1) * sizeof(char *));
		if (d == NULL || (d[o->ndata] = strdup(tok)) == NULL) {
			if (d)
				o->data = d;
			free(copy);
			return dp_error_set(DP_ENOMEM, "out of memory");
		}
		o->data = d;
		o->ndata++;
	}
	free(copy);
	return 0;
}

/* Milliseconds with 4 significant digits, "—" for none. */
static void dp__ms(FILE *f, double s)
{
	if (isnan(s))
		fputs("—", f);
	else
		fprintf(f, "%.4g", s * 1e3);
}

/* JSON helpers: missing fields give the default. */
static double dp__jd(struct json_object *j, const char *key, double d)
{
	struct json_object *v;
	return json_object_object_get_ex(j, key, &v) && v ? json_object_get_double(v) : d;
}

static const char *dp__js(struct json_object *j, const char *key, const char *d)
{
	struct json_object *v;
	return json_object_object_get_ex(j, key, &v) && json_object_is_type(v, json_type_string)
		? json_object_get_string(v) : d;
}

static struct json_object *dp__jo(struct json_object *j, const char *key)
{
	struct json_object *v;
	return j && json_object_object_get_ex(j, key, &v) ? v : NULL;
}

/* A figure of the report: its file (next to report.md), heading, caption. */
typedef struct dp__fig {
	const char *file, *heading, *text;
} dp__fig;

static void dp__figs_md(FILE *f, const dp__fig *figs, size_t n)
{
	fputs("\n## Figures\n", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "\n### %s\n\n%s\n\n![%s](%s)\n", figs[i].heading, figs[i].text, figs[i].heading,
			figs[i].file);
}

/* psi of DIR/model.json on the --data files (dpasync eval's computation). */
static int dp__psi_of_model(const dp__report_opts *o, const dp_modelfile *mf, double *f_out,
			    double *fstar_out, double *psi_out, int *status)
{
	*status = dp_model_fitness_vs_optimum("report", mf, o->data, o->ndata,
					      o->target ? o->target : "y", o->schema, mf->lambda,
					      mf->theta_max > 0 ? mf->theta_max : INFINITY, f_out,
					      fstar_out);
	if (*status != 0)
		return -1;   /* already reported */
	*psi_out = *fstar_out > 0 ? dp_model_psi(*f_out, *fstar_out) : NAN;
	return 0;
}

/* --rates for the trace's owners (same forms as dpasync plot). */
static int dp__rates(const char *arg, const dp_plot_trace *tr, double **out)
{
	double *r = calloc(tr->N, sizeof(double));
	char *copy = strdup(arg), *save = NULL;
	size_t n = 0;
	int err = 0;

	if (r == NULL || copy == NULL) {
		free(r);
		free(copy);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < tr->N; i++)
		r[i] = NAN;
	for (char *tok = strtok_r(copy, ",", &save); tok && err == 0; tok = strtok_r(NULL, ",", &save), n++) {
		char *eq = strchr(tok, '=');
		size_t i = n;
		if (eq) {
			*eq = '\0';
			for (i = 0; i < tr->N && strcmp(tr->names[i], tok) != 0; i++)
				;
			if (i == tr->N) {
				err = dp_error_set(DP_EINVAL, "--rates: '%s' is not an owner of the run", tok);
				break;
			}
		} else if (i >= tr->N) {
			err = dp_error_set(DP_EINVAL, "--rates has more values than the run's %zu owners", tr->N);
			break;
		}
		err = dp_num_parse_double("--rates", eq ? eq + 1 : tok, 0, &r[i]);
		if (err == 0 && !(r[i] > 0))
			err = dp_error_set(DP_EINVAL, "--rates must be > 0 (got %g)", r[i]);
	}
	for (size_t i = 0; err == 0 && i < tr->N; i++)
		if (isnan(r[i]))
			err = dp_error_set(DP_EINVAL, "--rates: no rate for owner '%s' (give one per owner)", tr->names[i]);
	free(copy);
	if (err != 0) {
		free(r);
		return err;
	}
	*out = r;
	return 0;
}

static int dp__write_schedule(const char *dir, const dp_plot_trace *tr)
{
	char path[4200], *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	if (f == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t r = 0; r < tr->n; r++)
		fprintf(f, "%zu\n", tr->owner[r] + 1);
	if (fclose(f) != 0 || buf == NULL) {
		free(buf);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	dp__path(path, sizeof(path), dir, "report-schedule.txt");
	rc = dp_file_write_atomic(path, buf, len, 0644);
	free(buf);
	return rc;
}

static int dp__write_md(const char *dir, char *text, size_t len)
{
	char path[4200];

	dp__path(path, sizeof(path), dir, "report.md");
	return dp_file_write_atomic(path, text, len, 0644);
}

/* Close the report's memory stream (which sets *md and *mdlen), write it
 * and say so.  Returns the exit status; m is closed in every case. */
static int dp__finish_md(const char *dir, FILE *m, char **md, size_t *mdlen, size_t nfig)
{
	int err;

	if (fclose(m) != 0 || *md == NULL) {
		dp_tool_fail("report", "out of memory");
		return 1;
	}
	err = dp__write_md(dir, *md, *mdlen);
	if (err != 0)
		return dp__fail(err);
	printf("wrote %s/report.md (%zu figures)\n", dir, nfig);
	return 0;
}

static int dp__report_learner(const dp__report_opts *o)
{
	char path[4200], *md = NULL;
	size_t mdlen = 0, N, nfig = 0;
	struct json_object *ck = NULL, *job, *state, *simsum = NULL;
	const char **extra = NULL;
	size_t nextra = 0;
	dp_plot_trace tr = { 0 };
	dp_plot_psi sps = { 0 };
	dp_modelfile mf = { 0 };
	int have_model = 0, have_psi = 0, rc = 2, err;
	double f = 0, f_star = 0, psi = NAN, *rates = NULL, *all = NULL, *v = NULL, t0, dur;
	size_t *count = NULL, T = 0, runs = 0;
	dp__fig figs[4];
	dp_plot_opts po = { 0 };
	FILE *m = NULL;

	/* checkpoint.json names every configured owner, also those never served. */
	dp__path(path, sizeof(path), o->dir, "checkpoint.json");
	if (dp__exists(o->dir, "checkpoint.json")) {
		ck = json_object_from_file(path);
		if (ck == NULL) {
			dp_tool_fail("report", "%s: not valid JSON", path);
			goto out;
		}
	}
	job = dp__jo(ck, "job");
	state = dp__jo(ck, "state");
	if (dp__jo(job, "owners") && json_object_is_type(dp__jo(job, "owners"), json_type_array)) {
		struct json_object *a = dp__jo(job, "owners");
		nextra = json_object_array_length(a);
		extra = calloc(nextra ? nextra : 1, sizeof(char *));
		if (extra == NULL) {
			rc = 1;
			dp_tool_fail("report", "out of memory");
			goto out;
		}
		for (size_t i = 0; i < nextra; i++)
			extra[i] = json_object_get_string(json_object_array_get_idx(a, i));
	}
	T = job ? (size_t)dp__jd(job, "T", 0) : 0;
	dp__path(path, sizeof(path), o->dir, "trace.csv");
	err = dp_plot_trace_read(path, extra, nextra, &tr);
	if (err == 0 && tr.t == NULL)
		err = dp_error_set(DP_EFORMAT, "%s: not a learnerd trace", path);
	if (err != 0) {
		rc = dp__fail(err);
		goto out;
	}
	N = tr.N;
	if (dp__exists(o->dir, "model.json")) {
		dp__path(path, sizeof(path), o->dir, "model.json");
		err = dp_modelfile_read(path, &mf);
		if (err != 0) {
			rc = dp__fail(err);
			goto out;
		}
		have_model = 1;
		if (T == 0)
			T = mf.T;
	}
	if (o->ndata) {
		int status;
		if (!have_model) {
			dp_tool_fail("report", "--data: %s/model.json is missing, no psi to compute", o->dir);
			goto out;
		}
		if (dp__psi_of_model(o, &mf, &f, &f_star, &psi, &status) != 0) {
			rc = status;
			goto out;
		}
		have_psi = 1;
	}
	if (o->rates && (err = dp__rates(o->rates, &tr, &rates)) != 0) {
		rc = dp__fail(err);
		goto out;
	}
	if (o->sim) {
		dp__path(path, sizeof(path), o->sim, "schedule.txt");
		err = dp_plot_schedule_check(path, &tr);
		if (err == DP_EINVAL) {
			char why[512];
			snprintf(why, sizeof(why), "%s", dp_error_detail(err));
			err = dp_error_set(DP_EINVAL, "--sim %s was not run with --schedule %s/report-schedule.txt: %s",
					   o->sim, o->dir, why);
		}
		if (err == 0) {
			dp__path(path, sizeof(path), o->sim, "psi.csv");
			err = dp_plot_psi_read(path, &sps);
		}
		if (err != 0) {
			rc = dp__fail(err);
			goto out;
		}
		dp__path(path, sizeof(path), o->sim, "summary.json");
		simsum = json_object_from_file(path);
		runs = simsum ? (size_t)dp__jd(simsum, "repeats", 0) : 0;
	}

	/* Figures. */
	dp__drawing = 1;
	if ((err = dp_plot_gnuplot_check()) != 0 || (err = dp__write_schedule(o->dir, &tr)) != 0) {
		rc = dp__fail(err);
		goto out;
	}
	dp__path(path, sizeof(path), o->dir, "report-owners.png");
	err = dp_plot_owners(&tr, 0, &po, path);
	figs[nfig++] = (dp__fig){ "report-owners.png", "Owner of each iteration",
		"Which owner's update request the learner served at each iteration k (the paper's Fig. 3)." };
	if (err == 0) {
		dp__path(path, sizeof(path), o->dir, "report-cdf.png");
		err = dp_plot_cdf(&tr, &po, path);
		figs[nfig++] = (dp__fig){ "report-cdf.png", "Request wait and query round trip",
			"Empirical CDFs, per owner and overall, of the time a request waited in the learner's "
			"queue (`wait_s`) and of the query round trip (`rtt_s`), in milliseconds." };
	}
	if (err == 0) {
		dp__path(path, sizeof(path), o->dir, "report-shares.png");
		err = dp_plot_shares(&tr, rates, &po, path);
		figs[nfig++] = (dp__fig){ "report-shares.png", "Share of iterations per owner", rates
			? "Each owner's share of the iterations against its clock rate (`--rates`) and against its "
			  "median query round trip (bars: 25–75 %)."
			: "Each owner's share of the iterations against its median query round trip (bars: 25–75 %); "
			  "pass `--rates` to add the clock rates." };
	}
	if (err == 0 && o->sim) {
		dp__path(path, sizeof(path), o->dir, "report-psi-time.png");
		err = dp_plot_psi_time(&sps, &tr, runs, &po, path);
		figs[nfig++] = (dp__fig){ "report-psi-time.png", "ψ against wall-clock time",
			"ψ of the simulated runs in `--sim` (which replay this trace's owner order with "
			"`dpasync sim --schedule`) at iteration k, drawn at the time learnerd applied iteration k. "
			"With ε = inf the simulated θ_L is learnerd's; with noise it is the same owner order with "
			"other noise draws." };
	}
	if (err != 0) {
		rc = dp__fail(err);
		goto out;
	}

	/* Numbers. */
	count = calloc(N, sizeof(size_t));
	all = malloc(tr.n * sizeof(double));
	v = malloc(tr.n * sizeof(double));
	m = open_memstream(&md, &mdlen);
	if (count == NULL || all == NULL || v == NULL || m == NULL) {
		rc = 1;
		dp_tool_fail("report", "out of memory");
		goto out;
	}
	for (size_t r = 0; r < tr.n; r++)
		count[tr.owner[r]]++;
	t0 = dp_plot_trace_start(&tr);
	dur = tr.t[tr.n - 1] - t0;
	fprintf(m, "# Run report: %s\n\nlearnerd run", o->dir);
	if (have_model)
		fprintf(m, " · model %s", dp_model_name(mf.model));
	if (state)
		fprintf(m, " · mode %s · max-inflight %g", dp__js(state, "mode", "?"), dp__jd(state, "max_inflight", 0));
	fprintf(m, " · N = %zu owners", N);
	if (T)
		fprintf(m, " · T = %zu", T);
	if (job && dp__jo(job, "eta"))
		fprintf(m, " · η = %.6g", dp__jd(job, "eta", 0));
	fputs("\n\n## Key numbers\n\n| quantity | value |\n|---|---|\n", m);
	fprintf(m, "| iterations | %zu", tr.n);
	if (T)
		fprintf(m, " of T = %zu", T);
	fprintf(m, " |\n| duration | %.3f s (from the first request reaching the learner to the last update) |\n", dur);
	fprintf(m, "| iterations/s | %.4g |\n", dur > 0 ? (double)tr.n / dur : NAN);
	memcpy(all, tr.rtt, tr.n * sizeof(double));
	fputs("| query round trip, median / p95 | ", m);
	dp__ms(m, dp_plot_percentile(all, tr.n, 50));
	fputs(" / ", m);
	dp__ms(m, dp_plot_percentile(all, tr.n, 95));
	fputs(" ms |\n| request wait, median / p95 | ", m);
	memcpy(all, tr.wait, tr.n * sizeof(double));
	dp__ms(m, dp_plot_percentile(all, tr.n, 50));
	fputs(" / ", m);
	dp__ms(m, dp_plot_percentile(all, tr.n, 95));
	fputs(" ms |\n", m);
	if (have_psi)
		fprintf(m, "| ψ of model.json | %.6g (f = %.10g, f(θ*) = %.10g on %zu data file%s) |\n", psi, f, f_star,
			o->ndata, o->ndata == 1 ? "" : "s");
	else
		fputs("| ψ of model.json | not computed (give the owners' data files with `--data`) |\n", m);
	if (o->sim)
		fprintf(m, "| ψ simulated on this owner order | median %.6g, 25–75 %%: %.6g – %.6g at k = %zu over %zu runs (%s) |\n",
			sps.p50[sps.n - 1], sps.p25[sps.n - 1], sps.p75[sps.n - 1], sps.k[sps.n - 1], runs, o->sim);

	fputs("\n## Owners\n\n| owner | iterations | share | ε spent | RTT median (ms) | RTT p95 (ms) "
	      "| wait median (ms) | wait p95 (ms) |\n|---|---|---|---|---|---|---|---|\n", m);
	for (size_t i = 0; i < N; i++) {
		size_t c = 0;
		double eps = NAN;
		for (size_t r = 0; r < tr.n; r++)
			if (tr.owner[r] == i) {
				v[c++] = tr.rtt[r];
				eps = tr.eps[r];
			}
		fprintf(m, "| %s | %zu | %.1f %% | ", tr.names[i], count[i], 100.0 * (double)count[i] / (double)tr.n);
		if (isnan(eps))
			fputs("—", m);
		else
			fprintf(m, "%.6g", eps);
		fputs(" | ", m);
		dp__ms(m, dp_plot_percentile(v, c, 50));
		fputs(" | ", m);
		dp__ms(m, dp_plot_percentile(v, c, 95));
		c = 0;
		for (size_t r = 0; r < tr.n; r++)
			if (tr.owner[r] == i)
				v[c++] = tr.wait[r];
		fputs(" | ", m);
		dp__ms(m, dp_plot_percentile(v, c, 50));
		fputs(" | ", m);
		dp__ms(m, dp_plot_percentile(v, c, 95));
		fputs(" |\n", m);
	}
	fputs("\nε spent is the last `eps_spent` the owner reported in the trace (— when it served no "
	      "iteration); percentiles interpolate linearly between order statistics.\n", m);
	dp__figs_md(m, figs, nfig);
	fputs("\n## Reproduce\n\n```\n", m);
	fprintf(m, "dpasync plot --kind owners --out %s/report-owners.png %s/trace.csv\n", o->dir, o->dir);
	fprintf(m, "dpasync plot --kind cdf --out %s/report-cdf.png %s/trace.csv\n", o->dir, o->dir);
	fprintf(m, "dpasync plot --kind shares%s%s --out %s/report-shares.png %s/trace.csv\n",
		o->rates ? " --rates " : "", o->rates ? o->rates : "", o->dir, o->dir);
	fputs("```\n\nψ against wall-clock time: simulate this run's owner order (data files in the owners' "
	      "natural order", m);
	if (N > 0)
		fprintf(m, ", %s first", tr.names[0]);
	fputs(") and plot it against the trace:\n\n```\n", m);
	fprintf(m, "dpasync sim --schedule %s/report-schedule.txt --T %zu", o->dir, tr.n);
	if (job && dp__jo(job, "eta"))
		fprintf(m, " --eta %.17g", dp__jd(job, "eta", 0));
	if (have_model)
		fprintf(m, " --model %s --lambda %.17g --theta-max %.17g --clip %.17g%s", dp_model_name(mf.model),
			mf.lambda, mf.theta_max, mf.clip, mf.bias ? " --bias" : "");
	if (T && T != tr.n)
		fprintf(m, " --answers-cap %zu", T);
	if (dp__jo(job, "freq_correction") && json_object_get_boolean(dp__jo(job, "freq_correction")))
		fputs(" --freq-correction", m);
	fprintf(m, " --epsilon E --repeats 10 --out SIMDIR OWNER-FILES...\n"
		"dpasync plot --kind psi-time --trace %s/trace.csv --out psi-time.png SIMDIR/psi.csv\n"
		"dpasync report --sim SIMDIR --data OWNER-FILES... %s\n```\n", o->dir, o->dir);
	rc = dp__finish_md(o->dir, m, &md, &mdlen, nfig);
	m = NULL;
out:
	if (m)
		fclose(m);
	free(md);
	free(count);
	free(all);
	free(v);
	free(rates);
	free(extra);
	dp_plot_trace_free(&tr);
	dp_plot_psi_free(&sps);
	if (have_model)
		dp_modelfile_free(&mf);
	json_object_put(ck);
	json_object_put(simsum);
	return rc;
}

static int dp__report_sim(const dp__report_opts *o)
{
	char path[4200], *md = NULL, note[300];
	size_t mdlen = 0, nfig = 0, runs = 0, N;
	struct json_object *sum;
	dp_plot_psi ps = { 0 };
	dp_plot_trace tr = { 0 };
	int have_sched, rc = 2, err;
	dp__fig figs[2];
	dp_plot_opts po = { 0 };
	struct json_object *eps, *rows;
	FILE *m = NULL;
	const char *label = NULL;

	if (o->ndata || o->rates || o->sim || o->schema || o->target) {
		dp_tool_fail("report", "--data, --target, --schema, --rates and --sim apply to learnerd directories; "
			     "%s is a sim directory", o->dir);
		return 2;
	}
	dp__path(path, sizeof(path), o->dir, "summary.json");
	sum = json_object_from_file(path);
	if (sum == NULL) {
		dp_tool_fail("report", "%s: not valid JSON", path);
		return 2;
	}
	dp__path(path, sizeof(path), o->dir, "psi.csv");
	err = dp_plot_psi_read(path, &ps);
	have_sched = dp__exists(o->dir, "schedule.txt");
	if (err == 0 && have_sched) {
		dp__path(path, sizeof(path), o->dir, "schedule.txt");
		err = dp_plot_trace_read(path, NULL, 0, &tr);
	}
	if (err != 0) {
		rc = dp__fail(err);
		goto out;
	}
	N = (size_t)dp__jd(sum, "N", 0);
	eps = dp__jo(sum, "epsilon");
	rows = dp__jo(sum, "n_rows");
	dp__path(path, sizeof(path), o->dir, "psi.csv");
	dp_plot_sim_note(path, note, sizeof(note), &runs);

	dp__drawing = 1;
	if ((err = dp_plot_gnuplot_check()) != 0) {
		rc = dp__fail(err);
		goto out;
	}
	{
		char out[4200];
		dp__path(out, sizeof(out), o->dir, "report-psi.png");
		err = dp_plot_psi_k(&ps, &label, 1, note[0] ? note : NULL, &po, out);
		figs[nfig++] = (dp__fig){ "report-psi.png", "ψ against iteration",
			"Median and 25–75 % band over the runs of ψ = f(θ_L)/f(θ*) − 1 at each checkpoint k "
			"(psi.csv; the paper's Fig. 2)." };
		if (err == 0 && have_sched) {
			dp__path(out, sizeof(out), o->dir, "report-owners.png");
			err = dp_plot_owners(&tr, 0, &po, out);
			figs[nfig++] = (dp__fig){ "report-owners.png", "Owner of each iteration",
				"The owner of each async iteration in the first run (schedule.txt; the paper's Fig. 3)." };
		}
	}
	if (err != 0) {
		rc = dp__fail(err);
		goto out;
	}
	m = open_memstream(&md, &mdlen);
	if (m == NULL) {
		rc = 1;
		dp_tool_fail("report", "out of memory");
		goto out;
	}
	fprintf(m, "# Run report: %s\n\ndpasync sim run · %s · seed %.0f\n\n", o->dir, note, dp__jd(sum, "seed", 0));
	fputs("## Key numbers\n\n| quantity | value |\n|---|---|\n", m);
	fprintf(m, "| ψ at k = T, mean over the runs | %.6g |\n", dp__jd(sum, "psi_mean", NAN));
	fprintf(m, "| ψ at k = T, median (25–75 %%) | %.6g (%.6g – %.6g) |\n", dp__jd(sum, "psi_median", NAN),
		dp__jd(sum, "psi_p25", NAN), dp__jd(sum, "psi_p75", NAN));
	fprintf(m, "| f(θ*) | %.10g |\n", dp__jd(sum, "f_star", NAN));
	if (dp__jo(sum, "eta"))
		fprintf(m, "| η | %.6g |\n", dp__jd(sum, "eta", 0));
	if (dp__jo(sum, "rho"))
		fprintf(m, "| ρ | %.6g |\n", dp__jd(sum, "rho", 0));
	if (dp__jo(sum, "c"))
		fprintf(m, "| c | %.6g |\n", dp__jd(sum, "c", 0));
	fprintf(m, "| λ, θ_max, Ξ | %g, %g, %g |\n", dp__jd(sum, "lambda", NAN), dp__jd(sum, "theta_max", NAN),
		dp__jd(sum, "clip_l1", NAN));
	fputs("\n## Owners\n\n| owner | rows | ε |", m);
	if (have_sched)
		fputs(" iterations (first run) | share |", m);
	fputs(have_sched ? "\n|---|---|---|---|---|\n" : "\n|---|---|---|\n", m);
	for (size_t i = 0; i < N; i++) {
		struct json_object *e = eps ? json_object_array_get_idx(eps, i) : NULL;
		struct json_object *r = rows ? json_object_array_get_idx(rows, i) : NULL;
		fprintf(m, "| owner-%zu | %.0f | ", i + 1, r ? json_object_get_double(r) : NAN);
		if (e)
			fprintf(m, "%g", json_object_get_double(e));
		else
			fputs("∞", m);
		if (have_sched) {
			size_t c = 0;
			for (size_t k = 0; k < tr.n; k++)
				c += tr.owner[k] == i;
			fprintf(m, " | %zu | %.1f %%", c, 100.0 * (double)c / (double)tr.n);
		}
		fputs(" |\n", m);
	}
	fputs("\nowner-j is the j-th data file given to `dpasync sim`.\n", m);
	dp__figs_md(m, figs, nfig);
	fprintf(m, "\n## Reproduce\n\n```\ndpasync plot --kind psi --out %s/report-psi.png %s/psi.csv\n", o->dir, o->dir);
	if (have_sched)
		fprintf(m, "dpasync plot --kind owners --out %s/report-owners.png %s/schedule.txt\n", o->dir, o->dir);
	fputs("```\n", m);
	rc = dp__finish_md(o->dir, m, &md, &mdlen, nfig);
	m = NULL;
out:
	if (m)
		fclose(m);
	free(md);
	dp_plot_psi_free(&ps);
	dp_plot_trace_free(&tr);
	json_object_put(sum);
	return rc;
}

int dp_cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "target", required_argument, NULL, 't' },
		{ "schema", required_argument, NULL, 'S' },
		{ "rates", required_argument, NULL, 'r' },
		{ "sim", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	dp__report_opts o = { 0 };
	struct stat st;
	int c, rc = 2, err;

	dp__drawing = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if ((err = dp__add_data(&o, optarg)) != 0) {
				rc = dp__fail(err);
				goto out;
			}
			break;
		case 't': o.target = optarg; break;
		case 'S': o.schema = optarg; break;
		case 'r': o.rates = optarg; break;
		case 's': o.sim = optarg; break;
		case 'h': fputs(dp__report_usage, stdout); rc = 0; goto out;
		default:
			dp_tool_fail("report", "bad usage: unknown option or missing value in '%s' (try dpasync report --help)",
				     argv[optind - 1]);
			goto out;
		}
	}
	if (argc - optind != 1) {
		dp_tool_fail("report", "expected one run directory DIR, got %d arguments (try dpasync report --help)",
			     argc - optind);
		goto out;
	}
	o.dir = argv[optind];
	if (stat(o.dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		dp_tool_fail("report", "%s: not a directory", o.dir);
		goto out;
	}
	if (access(o.dir, W_OK) != 0) {
		dp_tool_fail("report", "%s: not writable (report.md and the figures go there)", o.dir);
		goto out;
	}
	if (dp__exists(o.dir, "trace.csv"))
		rc = dp__report_learner(&o);
	else if (dp__exists(o.dir, "summary.json") && dp__exists(o.dir, "psi.csv"))
		rc = dp__report_sim(&o);
	else
		dp_tool_fail("report", "%s: neither a learnerd out directory (trace.csv) nor a sim out directory "
			     "(summary.json and psi.csv)", o.dir);
out:
	for (size_t i = 0; i < o.ndata; i++)
		free(o.data[i]);
	free(o.data);
	return rc;
}
