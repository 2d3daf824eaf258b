/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync report: one run's directory (learnerd out dir or sim out dir)
 * into DIR/report.md with its figures (tools/lib/plot.c) and key numbers. */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/file.h"
#include "common/core/json.h"
#include "common/core/modelfile.h"
#include "common/net/config.h"
#include "tools/cmds.h"
#include "tools/lib/optimum.h"
#include "tools/lib/ownerdata.h"
#include "tools/lib/peerreport.h"
#include "tools/lib/plot.h"

/* Largest checkpoint.json or summary.json read. */
#define JSON_MAX ((size_t)1 << 28)

/* A gap between two successive updates is marked (a resume's downtime, a
 * stall) when it is over GAP_FACTOR times the median gap and over GAP_MIN_S
 * seconds (docs/plots.md "Throughput"). */
#define GAP_FACTOR 20.0
#define GAP_MIN_S 1.0

static const char report_summary[] =
	"Write DIR/report.md, a Markdown page with the key numbers of one run and\n"
	"its figures (PNG files DIR/report-*.png next to it, drawn with gnuplot),\n"
	"and DIR/report.json, the same numbers for programs.\n"
	"DIR is either\n"
	"  - a learnerd out directory (trace.csv; model.json and checkpoint.json\n"
	"    when present): iterations/s, per-owner iterations and share, median\n"
	"    and p95 query round trip and request wait, epsilon spent per owner\n"
	"    (the last eps_spent of the owner in the trace), staleness, gaps much\n"
	"    longer than the typical time between updates (a resume's downtime),\n"
	"    psi with --data; rates count from the first query;\n"
	"    figures: owner of each iteration, wait/round-trip CDFs, shares, and\n"
	"    psi against time with --sim.  Also writes DIR/report-schedule.txt, the\n"
	"    trace's owner order for `dpasync sim --schedule` (owner j = the j-th\n"
	"    owner in natural order of names, so pass the data files in that order);\n"
	"  - a sim out directory (summary.json, psi.csv, schedule.txt): psi\n"
	"    statistics, per-owner iterations of the first run; figures: psi\n"
	"    against k and the owner of each iteration;\n"
	"  - a peer-mode run (a directory of ownerd --peer state directories, each\n"
	"    with its trace.csv): per-agent wake-ups, timing and epsilon.";

struct report_opts {
	char *target, *schema, *rates, *sim;
	struct dp_config_strings data;
	struct dp_config_strings args;  /* DIR */
	const char *dir;
};

/* The error line and the exit status of err failing in phase: loading
 * until the inputs are read, running once drawing starts. */
static int fail(int err, enum dp_exit_phase phase)
{
	dp_cmd_fail("report", "%s", dp_error_detail(err));
	return dp_exit_status(err, phase);
}

static bool exists(const char *dir, const char *name)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void join(char *buf, size_t size, const char *dir, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
}

/* Milliseconds with 4 significant digits, "—" for none. */
static void put_ms(FILE *f, double s)
{
	if (isnan(s))
		fputs("—", f);
	else
		fprintf(f, "%.4g", s * 1e3);
}

/* key: v, or null when v is not finite (JSON has no NaN).  Adds nothing
 * once *rc is set; sets it on failure. */
static void jnum(struct json_object *o, const char *key, double v, int *rc)
{
	if (*rc == 0)
		*rc = isfinite(v) ? dp_json_add(o, key, dp_json_double(v)) : dp_json_add_null(o, key);
}

static void jint(struct json_object *o, const char *key, uint64_t v, int *rc)
{
	if (*rc == 0)
		*rc = dp_json_add(o, key, json_object_new_uint64(v));
}

static void jstr(struct json_object *o, const char *key, const char *v, int *rc)
{
	if (*rc == 0)
		*rc = dp_json_add(o, key, json_object_new_string(v));
}

/* DIR/report.json (takes root).  0 or the error of dp_json_write_file;
 * err (an earlier failure building root) is returned as it is. */
static int write_json(const char *dir, struct json_object *root, int err)
{
	char path[4200];

	join(path, sizeof(path), dir, "report.json");
	if (err == 0 && root == NULL)
		err = dp_error_set(DP_ENOMEM, "out of memory");
	if (err == 0)
		err = dp_json_write_file(path, root, 0644);
	else if (err == DP_ENOMEM)
		dp_error_set(DP_ENOMEM, "out of memory");
	json_object_put(root);
	return err;
}

/* Percentiles 50 and 95 of v (n values, sorted in place) as key_median and
 * key_p95 in o, in milliseconds. */
static void jms(struct json_object *o, const char *key, double *v, size_t n, int *rc)
{
	char k[64];

	snprintf(k, sizeof(k), "%s_median_ms", key);
	jnum(o, k, dp_plot_percentile(v, n, 50) * 1e3, rc);
	snprintf(k, sizeof(k), "%s_p95_ms", key);
	jnum(o, k, dp_plot_percentile(v, n, 95) * 1e3, rc);
}

/* A figure of the report: its file (next to report.md), heading, caption. */
typedef struct fig {
	const char *file, *heading, *text;
} fig;

static void figs_md(FILE *f, const fig *figs, size_t n)
{
	fputs("\n## Figures\n", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "\n### %s\n\n%s\n\n![%s](%s)\n", figs[i].heading, figs[i].text, figs[i].heading,
			figs[i].file);
}

/* psi of the model file `path` (read into mf) on the --data files, and
 * psi_zero, that of the all-zero model (dpasync eval's computation: the
 * target and features are the model file's when it names them); 0, or the
 * exit status after the error line. */
static int psi_of_model(const struct report_opts *o, const dp_modelfile *mf, const char *path,
			double *f_out, double *fstar_out, double *psi_out, double *psi_zero_out)
{
	const char *target = o->schema ? NULL : o->target ? o->target : mf->target ? mf->target : "y";
	double *zero;
	dp_ownerdata od;
	int rc;

	rc = dp_ownerdata_load(&od, o->data.v, o->data.n, target, mf->bias, o->schema, mf->model);
	if (rc == 0) {
		rc = dp_modelfile_check_data(mf, path, &od.ds[0]);
		if (rc != 0)
			dp_ownerdata_free(&od);
	}
	if (rc != 0)
		return fail(rc, DP_EXIT_PHASE_LOAD);
	zero = calloc(mf->p, sizeof(*zero));
	if (zero == NULL) {
		dp_ownerdata_free(&od);
		dp_cmd_fail("report", "out of memory");
		return dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
	}
	rc = dp_optimum_compare(mf->model, mf->theta, mf->p, od.view, od.N, mf->lambda,
				mf->theta_max > 0 ? mf->theta_max : INFINITY, f_out, fstar_out);
	if (rc == 0)
		*psi_zero_out = *fstar_out > 0
			? dp_model_psi(dp_model_fitness(mf->model, od.view, od.N, mf->lambda, zero),
				       *fstar_out)
			: NAN;
	free(zero);
	dp_ownerdata_free(&od);
	if (rc != 0)
		return fail(rc, DP_EXIT_PHASE_RUN);
	*psi_out = *fstar_out > 0 ? dp_model_psi(*f_out, *fstar_out) : NAN;
	return 0;
}

/* What the learnerd report uses of checkpoint.json (all optional). */
struct ckpt {
	struct json_object *root;  /* owns the strings below */
	const char **owners;       /* job.owners: every configured owner */
	size_t nowners;
	size_t T;                  /* job.T, 0 when unknown */
	const char *job;           /* job.name, NULL when unknown */
	bool have_eta, have_state, freq_correction;
	double eta;                /* job.eta */
	const char *mode;          /* state.mode */
	double max_inflight;       /* state.max_inflight */
};

static void ckpt_free(struct ckpt *c)
{
	free(c->owners);
	json_object_put(c->root);
	memset(c, 0, sizeof(*c));
}

/* DIR/checkpoint.json when there is one.  Errors: those of
 * dp_json_read_file, DP_EFORMAT (a field of the wrong type), DP_ENOMEM. */
static int ckpt_read(const char *dir, struct ckpt *c)
{
	char path[4200];
	dp_json_reader r = { .path = path };
	struct json_object *job, *state, *owners;
	int rc;

	memset(c, 0, sizeof(*c));
	if (!exists(dir, "checkpoint.json"))
		return 0;
	join(path, sizeof(path), dir, "checkpoint.json");
	rc = dp_json_read_file(path, JSON_MAX, &c->root);
	if (rc != 0)
		return rc;
	job = dp_json_get(&r, c->root, "job", json_type_object, false);
	state = dp_json_get(&r, c->root, "state", json_type_object, false);
	owners = job ? dp_json_get(&r, job, "owners", json_type_array, false) : NULL;
	if (owners) {
		c->nowners = json_object_array_length(owners);
		c->owners = calloc(c->nowners ? c->nowners : 1, sizeof(char *));
		if (c->owners == NULL) {
			ckpt_free(c);
			return dp_error_set(DP_ENOMEM, "out of memory");
		}
		for (size_t i = 0; i < c->nowners; i++) {
			struct json_object *a = json_object_array_get_idx(owners, i);

			if (!json_object_is_type(a, json_type_string))
				dp_json_fail(&r, "'owners' must be an array of strings");
			c->owners[i] = r.rc == 0 ? json_object_get_string(a) : "";
		}
	}
	if (job) {
		c->T = (size_t)dp_json_get_u64(&r, job, "T", false, 0);
		c->job = dp_json_get_string(&r, job, "name", false, NULL);
		c->have_eta = dp_json_get(&r, job, "eta", json_type_double, false) != NULL;
		c->eta = dp_json_get_double(&r, job, "eta", false, 0);
		c->freq_correction = dp_json_get_bool(&r, job, "freq_correction", false, false);
	}
	if (state) {
		c->have_state = true;
		c->mode = dp_json_get_string(&r, state, "mode", false, "?");
		c->max_inflight = dp_json_get_double(&r, state, "max_inflight", false, 0);
	}
	if (r.rc != 0) {
		ckpt_free(c);
		return r.rc;
	}
	return 0;
}

/* The number of repeats of the sim run in SIMDIR; 0 when unknown. */
static size_t sim_runs(const char *simdir)
{
	char path[4200];
	dp_json_reader r = { .path = path };
	struct json_object *sum;
	uint64_t runs;

	join(path, sizeof(path), simdir, "summary.json");
	if (dp_json_read_file(path, JSON_MAX, &sum) != 0)
		return 0;
	runs = dp_json_get_u64(&r, sum, "repeats", false, 0);
	json_object_put(sum);
	return (size_t)runs;
}

static int write_schedule(const char *dir, const dp_plot_trace *tr)
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
	join(path, sizeof(path), dir, "report-schedule.txt");
	rc = dp_file_write_atomic(path, buf, len, 0644);
	free(buf);
	return rc;
}

static int write_md(const char *dir, char *text, size_t len)
{
	char path[4200];

	join(path, sizeof(path), dir, "report.md");
	return dp_file_write_atomic(path, text, len, 0644);
}

/* Close the report's memory stream (which sets *md and *mdlen), write it
 * and say so.  Returns the exit status; m is closed in every case. */
static int finish_md(const char *dir, FILE *m, char **md, size_t *mdlen, size_t nfig)
{
	int err;

	if (fclose(m) != 0 || *md == NULL) {
		dp_cmd_fail("report", "out of memory");
		return dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
	}
	err = write_md(dir, *md, *mdlen);
	if (err != 0)
		return fail(err, DP_EXIT_PHASE_RUN);
	printf("wrote %s/report.md (%zu figures) and %s/report.json\n", dir, nfig, dir);
	return 0;
}

/* The reproduce commands of a learnerd report: the figures (plots) and the
 * simulation of its owner order (sim); heap strings of whole lines. */
struct repro {
	char *plots, *sim;
};

/* Every flag that changes what the commands compute is carried over: the
 * model file's model, lambda, theta-max, clip, bias and target, the
 * checkpoint's eta and freq-correction, and the report's own --target,
 * --schema, --rates and --data.  What the run directory cannot know is a
 * placeholder in capitals (E: the owners' --epsilon; SIMDIR).
 * mf may be NULL.  0 or DP_ENOMEM. */
static int reproduce(const struct report_opts *o, const dp_plot_trace *tr, const struct ckpt *ck,
		     const dp_modelfile *mf, size_t T, struct repro *out)
{
	const char *target = o->target ? o->target : mf && mf->target ? mf->target : NULL;
	size_t len;
	FILE *f;
	/* The files as sim's arguments, and as report's one --data value. */
	char data[8192] = "OWNER-FILES...", data_opt[8192] = "OWNER-FILES,...";

	if (o->data.n) {
		size_t at = 0, at2 = 0;

		for (size_t i = 0; i < o->data.n && at < sizeof(data) && at2 < sizeof(data_opt); i++) {
			at += (size_t)snprintf(data + at, sizeof(data) - at, "%s%s", i ? " " : "",
					       o->data.v[i]);
			at2 += (size_t)snprintf(data_opt + at2, sizeof(data_opt) - at2, "%s%s",
						i ? "," : "", o->data.v[i]);
		}
	}
	f = open_memstream(&out->plots, &len);
	if (f == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	fprintf(f, "dpasync plot --kind owners --out %s/report-owners.png %s/trace.csv\n", o->dir,
		o->dir);
	fprintf(f, "dpasync plot --kind cdf --out %s/report-cdf.png %s/trace.csv\n", o->dir, o->dir);
	fprintf(f, "dpasync plot --kind shares%s%s --out %s/report-shares.png %s/trace.csv\n",
		o->rates ? " --rates " : "", o->rates ? o->rates : "", o->dir, o->dir);
	if (fclose(f) != 0 || out->plots == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	f = open_memstream(&out->sim, &len);
	if (f == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	fprintf(f, "dpasync sim --schedule %s/report-schedule.txt --T %zu", o->dir, tr->n);
	if (ck->have_eta)
		fprintf(f, " --eta %.17g", ck->eta);
	if (mf)
		fprintf(f, " --model %s --lambda %.17g --theta-max %.17g --clip %.17g%s",
			dp_model_name(mf->model), mf->lambda, mf->theta_max, mf->clip,
			mf->bias ? " --bias" : "");
	if (target && !o->schema)
		fprintf(f, " --target %s", target);
	if (o->schema)
		fprintf(f, " --schema %s", o->schema);
	if (T && T != tr->n)
		fprintf(f, " --answers-cap %zu", T);
	if (ck->freq_correction)
		fputs(" --freq-correction", f);
	fprintf(f, " --epsilon E --repeats 10 --out SIMDIR %s\n", data);
	fprintf(f, "dpasync plot --kind psi-time --trace %s/trace.csv --out psi-time.png "
		"SIMDIR/psi.csv\n", o->dir);
	fprintf(f, "dpasync report --sim SIMDIR --data %s", data_opt);
	if (o->target)
		fprintf(f, " --target %s", o->target);
	if (o->schema)
		fprintf(f, " --schema %s", o->schema);
	if (o->rates)
		fprintf(f, " --rates %s", o->rates);
	fprintf(f, " %s\n", o->dir);
	if (fclose(f) != 0 || out->sim == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	return 0;
}

/* The report of a learnerd out directory: the figures drawn, their number
 * in *nfig_out and the page's text written to m.  Returns the exit
 * status (report() writes the page when it is 0). */
static int report_learner(const struct report_opts *o, FILE *m, size_t *nfig_out)
{
	char path[4200];
	size_t N, nfig = 0;
	struct ckpt ck = { 0 };
	dp_plot_trace tr = { 0 };
	dp_plot_psi sps = { 0 };
	dp_modelfile mf = { 0 };
	int have_model = 0, have_psi = 0, rc = 2, err;
	double f = 0, f_star = 0, psi = NAN, psi_zero = NAN, *rates = NULL, *all = NULL, *v = NULL;
	double t0, dur, gap_med, gap_min, gap_sum = 0, stale_med = NAN, stale_max = NAN;
	size_t *count = NULL, T = 0, runs = 0, gaps = 0;
	struct json_object *js = NULL, *jo = NULL, *jg = NULL;
	struct repro repro = { 0 };
	const char *job;
	int jerr = 0;
	fig figs[4];
	dp_plot_opts po = { 0 };

	/* checkpoint.json names every configured owner, also those never served. */
	err = ckpt_read(o->dir, &ck);
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_LOAD);
		goto out;
	}
	T = ck.T;
	join(path, sizeof(path), o->dir, "trace.csv");
	err = dp_plot_trace_read(path, ck.owners, ck.nowners, &tr);
	if (err == 0 && tr.t == NULL)
		err = dp_error_set(DP_EFORMAT, "%s: not a learnerd trace", path);
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_LOAD);
		goto out;
	}
	N = tr.N;
	if (exists(o->dir, "model.json")) {
		join(path, sizeof(path), o->dir, "model.json");
		err = dp_modelfile_read(path, &mf);
		if (err != 0) {
			rc = fail(err, DP_EXIT_PHASE_LOAD);
			goto out;
		}
		have_model = 1;
		if (T == 0)
			T = mf.T;
	}
	if (o->data.n) {
		if (!have_model) {
			dp_cmd_fail("report", "--data: %s/model.json is missing, no psi to compute",
				    o->dir);
			rc = dp_exit_status(DP_ENOENT, DP_EXIT_PHASE_LOAD);
			goto out;
		}
		join(path, sizeof(path), o->dir, "model.json");
		rc = psi_of_model(o, &mf, path, &f, &f_star, &psi, &psi_zero);
		if (rc != 0)
			goto out;
		rc = 2;
		have_psi = 1;
	}
	if (o->rates) {
		err = dp_plot_rates(o->rates, &tr, &rates);
		if (err != 0) {
			rc = fail(err, DP_EXIT_PHASE_LOAD);
			goto out;
		}
	}
	if (o->sim) {
		join(path, sizeof(path), o->sim, "schedule.txt");
		err = dp_plot_schedule_check(path, &tr);
		if (err == DP_EINVAL) {
			char why[512];
			snprintf(why, sizeof(why), "%s", dp_error_detail(err));
			err = dp_error_set(DP_EINVAL, "--sim %s was not run with --schedule %s/report-schedule.txt: %s",
					   o->sim, o->dir, why);
		}
		if (err == 0) {
			join(path, sizeof(path), o->sim, "psi.csv");
			err = dp_plot_psi_read(path, &sps);
		}
		if (err != 0) {
			rc = fail(err, DP_EXIT_PHASE_LOAD);
			goto out;
		}
		runs = sim_runs(o->sim);
	}

	/* Figures. */
	err = dp_plot_gnuplot_check();
	if (err == 0)
		err = write_schedule(o->dir, &tr);
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_RUN);
		goto out;
	}
	join(path, sizeof(path), o->dir, "report-owners.png");
	err = dp_plot_owners(&tr, 0, &po, path);
	figs[nfig++] = (fig){ "report-owners.png", "Owner of each iteration",
		"Which owner's update request the learner served at each iteration k (the paper's Fig. 3)." };
	if (err == 0) {
		join(path, sizeof(path), o->dir, "report-cdf.png");
		err = dp_plot_cdf(&tr, &po, path);
		figs[nfig++] = (fig){ "report-cdf.png", "Request wait and query round trip",
			"Empirical CDFs, per owner and overall, of the time a request waited in the learner's "
			"queue (`wait_s`) and of the query round trip (`rtt_s`), in milliseconds." };
	}
	if (err == 0) {
		join(path, sizeof(path), o->dir, "report-shares.png");
		err = dp_plot_shares(&tr, rates, &po, path);
		figs[nfig++] = (fig){ "report-shares.png", "Share of iterations per owner", rates
			? "Each owner's share of the iterations against its clock rate (`--rates`) and against its "
			  "median query round trip (bars: 25–75 %)."
			: "Each owner's share of the iterations against its median query round trip (bars: 25–75 %); "
			  "pass `--rates` to add the clock rates." };
	}
	if (err == 0 && o->sim) {
		join(path, sizeof(path), o->dir, "report-psi-time.png");
		err = dp_plot_psi_time(&sps, &tr, runs, &po, path);
		figs[nfig++] = (fig){ "report-psi-time.png", "ψ against wall-clock time",
			"ψ of the simulated runs in `--sim` (which replay this trace's owner order with "
			"`dpasync sim --schedule`) at iteration k, drawn at the time learnerd applied iteration k. "
			"With ε = inf the simulated θ_L is learnerd's; with noise it is the same owner order with "
			"other noise draws." };
	}
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_RUN);
		goto out;
	}

	/* Numbers: each goes to report.md and to report.json (js) from the same
	 * variable, so the two agree. */
	count = calloc(N, sizeof(size_t));
	all = malloc(tr.n * sizeof(double));
	v = malloc(tr.n * sizeof(double));
	js = json_object_new_object();
	jo = json_object_new_array();
	jg = json_object_new_array();
	if (count == NULL || all == NULL || v == NULL || js == NULL || jo == NULL || jg == NULL) {
		rc = dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
		dp_cmd_fail("report", "out of memory");
		goto out;
	}
	for (size_t r = 0; r < tr.n; r++)
		count[tr.owner[r]]++;
	t0 = dp_plot_trace_start(&tr);
	dur = tr.t[tr.n - 1] - t0;
	/* Gaps: the median time between updates, then those far above it. */
	for (size_t r = 1; r < tr.n; r++)
		all[r - 1] = tr.t[r] - tr.t[r - 1];
	gap_med = tr.n > 1 ? dp_plot_percentile(all, tr.n - 1, 50) : NAN;
	gap_min = fmax(GAP_FACTOR * (isnan(gap_med) ? 0 : gap_med), GAP_MIN_S);
	for (size_t r = 1; r < tr.n; r++) {
		double dt = tr.t[r] - tr.t[r - 1];
		struct json_object *g;

		if (dt <= gap_min)
			continue;
		gaps++;
		gap_sum += dt;
		g = json_object_new_object();
		if (jerr == 0)
			jerr = dp_json_push(jg, g);   /* takes g, also on failure */
		else
			json_object_put(g);
		jint(g, "after_k", tr.k[r - 1], &jerr);
		jnum(g, "from_unix", tr.t[r - 1], &jerr);
		jnum(g, "seconds", dt, &jerr);
	}
	if (tr.stale != NULL) {
		memcpy(all, tr.stale, tr.n * sizeof(double));
		stale_med = dp_plot_percentile(all, tr.n, 50);
		stale_max = all[tr.n - 1];
	}
	fprintf(m, "# Run report: %s\n\nlearnerd run", o->dir);
	jstr(js, "format", "dpasync-report", &jerr);
	jint(js, "version", 1, &jerr);
	jstr(js, "kind", "learnerd", &jerr);
	jstr(js, "dir", o->dir, &jerr);
	/* The trace's job column names the job its rows belong to; an older
	 * trace leaves it to checkpoint.json. */
	job = tr.job != NULL ? tr.job : ck.job;
	if (job != NULL) {
		fprintf(m, " · job %s", job);
		jstr(js, "job", job, &jerr);
	} else if (jerr == 0) {
		jerr = dp_json_add_null(js, "job");
	}
	if (have_model) {
		fprintf(m, " · model %s", dp_model_name(mf.model));
		jstr(js, "model", dp_model_name(mf.model), &jerr);
	}
	if (ck.have_state) {
		fprintf(m, " · mode %s · max-inflight %g", ck.mode, ck.max_inflight);
		jstr(js, "mode", ck.mode, &jerr);
		jnum(js, "max_inflight", ck.max_inflight, &jerr);
	}
	fprintf(m, " · N = %zu owners", N);
	jint(js, "N", N, &jerr);
	if (T)
		fprintf(m, " · T = %zu", T);
	if (T)
		jint(js, "T", T, &jerr);
	if (ck.have_eta) {
		fprintf(m, " · η = %.6g", ck.eta);
		jnum(js, "eta", ck.eta, &jerr);
	}
	fputs("\n\n## Key numbers\n\n| quantity | value |\n|---|---|\n", m);
	fprintf(m, "| iterations | %zu", tr.n);
	if (T)
		fprintf(m, " of T = %zu", T);
	jint(js, "iterations", tr.n, &jerr);
	fprintf(m, " |\n| duration | %.3f s (from the first query to the last update) |\n", dur);
	jnum(js, "start_unix", t0, &jerr);
	jnum(js, "end_unix", tr.t[tr.n - 1], &jerr);
	jnum(js, "duration_s", dur, &jerr);
	fprintf(m, "| iterations/s | %.4g |\n", dur > 0 ? (double)tr.n / dur : NAN);
	jnum(js, "iterations_per_s", dur > 0 ? (double)tr.n / dur : NAN, &jerr);
	fprintf(m, "| gaps | %zu (over %.3g s between two updates, %g × the median %.3g ms)", gaps,
		gap_min, GAP_FACTOR, gap_med * 1e3);
	if (gaps) {
		fprintf(m, ": %.3f s in all; %.4g iterations/s without them", gap_sum,
			dur - gap_sum > 0 ? (double)tr.n / (dur - gap_sum) : NAN);
		for (size_t r = 1; r < tr.n; r++)
			if (tr.t[r] - tr.t[r - 1] > gap_min)
				fprintf(m, "; after k = %zu: %.3f s", tr.k[r - 1], tr.t[r] - tr.t[r - 1]);
	}
	fputs(" |\n", m);
	jnum(js, "gap_threshold_s", gap_min, &jerr);
	jnum(js, "gap_median_s", gap_med, &jerr);
	jnum(js, "gaps_s", gap_sum, &jerr);
	jnum(js, "iterations_per_s_without_gaps",
	     dur - gap_sum > 0 ? (double)tr.n / (dur - gap_sum) : NAN, &jerr);
	if (jerr == 0)
		jerr = dp_json_add(js, "gaps", json_object_get(jg));
	memcpy(all, tr.rtt, tr.n * sizeof(double));
	fputs("| query round trip, median / p95 | ", m);
	put_ms(m, dp_plot_percentile(all, tr.n, 50));
	fputs(" / ", m);
	put_ms(m, dp_plot_percentile(all, tr.n, 95));
	jms(js, "rtt", all, tr.n, &jerr);
	fputs(" ms |\n| request wait, median / p95 | ", m);
	memcpy(all, tr.wait, tr.n * sizeof(double));
	put_ms(m, dp_plot_percentile(all, tr.n, 50));
	fputs(" / ", m);
	put_ms(m, dp_plot_percentile(all, tr.n, 95));
	jms(js, "wait", all, tr.n, &jerr);
	fputs(" ms |\n", m);
	if (tr.stale != NULL)
		fprintf(m, "| staleness, median / max | %g / %g (updates of θ_L between a query's point "
			"and its answer's update) |\n", stale_med, stale_max);
	else
		fputs("| staleness | not in this trace (written before the column existed) |\n", m);
	jnum(js, "staleness_median", stale_med, &jerr);
	jnum(js, "staleness_max", stale_max, &jerr);
	if (have_psi)
		fprintf(m, "| ψ of model.json | %.6g (f = %.10g, f(θ*) = %.10g on %zu data file%s; the all-zero "
			"model has ψ = %.6g) |\n", psi, f, f_star, o->data.n, o->data.n == 1 ? "" : "s", psi_zero);
	else
		fputs("| ψ of model.json | not computed (give the owners' data files with `--data`) |\n", m);
	jnum(js, "psi", psi, &jerr);
	if (have_psi) {
		jnum(js, "f", f, &jerr);
		jnum(js, "f_star", f_star, &jerr);
		jnum(js, "psi_zero", psi_zero, &jerr);
	}
	if (o->sim) {
		fprintf(m, "| ψ simulated on this owner order | median %.6g, 25–75 %%: %.6g – %.6g at k = %zu over %zu runs (%s) |\n",
			sps.p50[sps.n - 1], sps.p25[sps.n - 1], sps.p75[sps.n - 1], sps.k[sps.n - 1], runs, o->sim);
		jnum(js, "psi_sim_median", sps.p50[sps.n - 1], &jerr);
	}

	fputs("\n## Owners\n\n| owner | iterations | share | ε spent | RTT median (ms) | RTT p95 (ms) "
	      "| wait median (ms) | wait p95 (ms) |\n|---|---|---|---|---|---|---|---|\n", m);
	if (jerr == 0)
		jerr = dp_json_add(js, "owners", json_object_get(jo));
	for (size_t i = 0; i < N; i++) {
		size_t c = 0;
		double eps = NAN;
		struct json_object *oj = json_object_new_object();

		if (jerr == 0)
			jerr = dp_json_push(jo, oj);
		else
			json_object_put(oj);
		jstr(oj, "owner", tr.names[i], &jerr);
		jint(oj, "iterations", count[i], &jerr);
		jnum(oj, "share", (double)count[i] / (double)tr.n, &jerr);
		for (size_t r = 0; r < tr.n; r++)
			if (tr.owner[r] == i) {
				v[c++] = tr.rtt[r];
				eps = tr.eps[r];
			}
		jnum(oj, "epsilon_spent", eps, &jerr);
		fprintf(m, "| %s | %zu | %.1f %% | ", tr.names[i], count[i], 100.0 * (double)count[i] / (double)tr.n);
		if (isnan(eps))
			fputs("—", m);
		else
			fprintf(m, "%.6g", eps);
		fputs(" | ", m);
		put_ms(m, dp_plot_percentile(v, c, 50));
		fputs(" | ", m);
		put_ms(m, dp_plot_percentile(v, c, 95));
		jms(oj, "rtt", v, c, &jerr);
		c = 0;
		for (size_t r = 0; r < tr.n; r++)
			if (tr.owner[r] == i)
				v[c++] = tr.wait[r];
		fputs(" | ", m);
		put_ms(m, dp_plot_percentile(v, c, 50));
		fputs(" | ", m);
		put_ms(m, dp_plot_percentile(v, c, 95));
		jms(oj, "wait", v, c, &jerr);
		fputs(" |\n", m);
	}
	fputs("\nε spent is the last `eps_spent` the owner reported in the trace (— when it served no "
	      "iteration); percentiles interpolate linearly between order statistics. "
	      "Rates count from the first query (the earliest `time_unix − rtt_s`), not from "
	      "the first request; `report.json` holds the same numbers.\n", m);
	figs_md(m, figs, nfig);
	err = reproduce(o, &tr, &ck, have_model ? &mf : NULL, T, &repro);
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_RUN);
		goto out;
	}
	fputs("\n## Reproduce\n\n```\n", m);
	fputs(repro.plots, m);
	fputs("```\n\nψ against wall-clock time: simulate this run's owner order (data files in the owners' "
	      "natural order", m);
	if (N > 0)
		fprintf(m, ", %s first", tr.names[0]);
	fputs(") and plot it against the trace:\n\n```\n", m);
	fputs(repro.sim, m);
	fputs("```\n", m);
	if (jerr == 0) {
		size_t lp = strlen(repro.plots);
		char *both = malloc(lp + strlen(repro.sim) + 1);

		if (both == NULL) {
			jerr = DP_ENOMEM;
		} else {
			memcpy(both, repro.plots, lp);
			memcpy(both + lp, repro.sim, strlen(repro.sim) + 1);
			jerr = dp_json_add(js, "reproduce", dp_json_lines(both));
			free(both);
		}
	}
	err = write_json(o->dir, js, jerr);
	js = NULL;
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_RUN);
		goto out;
	}
	*nfig_out = nfig;
	rc = 0;
out:
	json_object_put(js);
	json_object_put(jo);
	json_object_put(jg);
	free(repro.plots);
	free(repro.sim);
	free(count);
	free(all);
	free(v);
	free(rates);
	dp_plot_trace_free(&tr);
	dp_plot_psi_free(&sps);
	if (have_model)
		dp_modelfile_free(&mf);
	ckpt_free(&ck);
	return rc;
}

/* What the sim report uses of summary.json. */
struct sim_summary {
	struct json_object *root;
	uint64_t N, seed;
	double psi_mean, psi_median, psi_p25, psi_p75, f_star, lambda, theta_max, clip;
	bool have_eta, have_rho, have_c;
	double eta, rho, c;
	struct json_object *eps, *rows;   /* arrays of numbers (eps: or null), or NULL */
};

/* An optional number member: *have says whether it is there. */
static double get_opt(dp_json_reader *r, struct json_object *o, const char *key, bool *have)
{
	*have = dp_json_get(r, o, key, json_type_double, false) != NULL;
	return dp_json_get_double(r, o, key, false, 0);
}

/* Every element of the array member `key` a number (or, when null_ok, an
 * unlimited budget: the string "inf", or null as older sims wrote it); the
 * array, or NULL when absent. */
static struct json_object *get_numbers(dp_json_reader *r, struct json_object *o, const char *key,
				       bool null_ok)
{
	struct json_object *a = dp_json_get(r, o, key, json_type_array, false);

	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		struct json_object *v = json_object_array_get_idx(a, i);

		bool unlimited = v == NULL || (json_object_is_type(v, json_type_string) &&
					       strcmp(json_object_get_string(v), "inf") == 0);

		if (!(null_ok && unlimited))
			dp_json_number(r, v, key, 0);
	}
	return a;
}

/* DIR/summary.json.  Errors: those of dp_json_read_file, DP_EFORMAT. */
static int summary_read(const char *dir, struct sim_summary *s)
{
	char path[4200];
	dp_json_reader r = { .path = path };
	struct json_object *j;
	int rc;

	join(path, sizeof(path), dir, "summary.json");
	rc = dp_json_read_file(path, JSON_MAX, &j);
	if (rc != 0)
		return rc;
	memset(s, 0, sizeof(*s));
	s->root = j;
	s->N = dp_json_get_u64(&r, j, "N", false, 0);
	s->seed = dp_json_get_u64(&r, j, "seed", false, 0);
	s->psi_mean = dp_json_get_double(&r, j, "psi_mean", false, NAN);
	s->psi_median = dp_json_get_double(&r, j, "psi_median", false, NAN);
	s->psi_p25 = dp_json_get_double(&r, j, "psi_p25", false, NAN);
	s->psi_p75 = dp_json_get_double(&r, j, "psi_p75", false, NAN);
	s->f_star = dp_json_get_double(&r, j, "f_star", false, NAN);
	s->eta = get_opt(&r, j, "eta", &s->have_eta);
	s->rho = get_opt(&r, j, "rho", &s->have_rho);
	s->c = get_opt(&r, j, "c", &s->have_c);
	s->lambda = dp_json_get_double(&r, j, "lambda", false, NAN);
	s->theta_max = dp_json_get_double(&r, j, "theta_max", false, NAN);
	s->clip = dp_json_get_double(&r, j, "clip_l1", false, NAN);
	s->eps = get_numbers(&r, j, "epsilon", true);
	s->rows = get_numbers(&r, j, "n_rows", false);
	if (r.rc != 0) {
		json_object_put(j);
		memset(s, 0, sizeof(*s));
		return r.rc;
	}
	return 0;
}

/* The report of a dpasync sim out directory, as report_learner. */
static int report_sim(const struct report_opts *o, FILE *m, size_t *nfig_out)
{
	char path[4200], note[300];
	size_t nfig = 0, runs = 0;
	struct sim_summary sum = { 0 };
	dp_plot_psi ps = { 0 };
	dp_plot_trace tr = { 0 };
	int rc = 2, err;
	bool have_sched;
	struct fig figs[2];
	dp_plot_opts po = { 0 };
	const char *label = NULL;
	struct json_object *js = NULL, *jo = NULL;
	char *repro = NULL;
	size_t repro_len = 0;
	FILE *rf = NULL;
	int jerr = 0;

	if (o->data.n || o->rates || o->sim || o->schema || o->target) {
		dp_cmd_fail("report", "--data, --target, --schema, --rates and --sim apply to "
			    "learnerd directories; %s is a sim directory", o->dir);
		return dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
	}
	err = summary_read(o->dir, &sum);
	if (err != 0)
		return fail(err, DP_EXIT_PHASE_LOAD);
	join(path, sizeof(path), o->dir, "psi.csv");
	err = dp_plot_psi_read(path, &ps);
	have_sched = exists(o->dir, "schedule.txt");
	if (err == 0 && have_sched) {
		join(path, sizeof(path), o->dir, "schedule.txt");
		err = dp_plot_trace_read(path, NULL, 0, &tr);
	}
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_LOAD);
		goto out;
	}
	join(path, sizeof(path), o->dir, "psi.csv");
	dp_plot_sim_note(path, note, sizeof(note), &runs);

	err = dp_plot_gnuplot_check();
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_RUN);
		goto out;
	}
	join(path, sizeof(path), o->dir, "report-psi.png");
	err = dp_plot_psi_k(&ps, &label, 1, note[0] ? note : NULL, &po, path);
	figs[nfig++] = (struct fig){ "report-psi.png", "ψ against iteration",
		"Median and 25–75 % band over the runs of ψ = f(θ_L)/f(θ*) − 1 at each checkpoint k "
		"(psi.csv; the paper's Fig. 2)." };
	if (err == 0 && have_sched) {
		join(path, sizeof(path), o->dir, "report-owners.png");
		err = dp_plot_owners(&tr, 0, &po, path);
		figs[nfig++] = (struct fig){ "report-owners.png", "Owner of each iteration",
			"The owner of each async iteration in the first run (schedule.txt; the paper's "
			"Fig. 3)." };
	}
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_RUN);
		goto out;
	}
	js = json_object_new_object();
	jo = json_object_new_array();
	rf = open_memstream(&repro, &repro_len);
	if (js == NULL || jo == NULL || rf == NULL) {
		rc = dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
		dp_cmd_fail("report", "out of memory");
		goto out;
	}
	jstr(js, "format", "dpasync-report", &jerr);
	jint(js, "version", 1, &jerr);
	jstr(js, "kind", "sim", &jerr);
	jstr(js, "dir", o->dir, &jerr);
	jint(js, "seed", sum.seed, &jerr);
	jint(js, "runs", runs, &jerr);
	jnum(js, "psi_mean", sum.psi_mean, &jerr);
	jnum(js, "psi_median", sum.psi_median, &jerr);
	jnum(js, "psi_p25", sum.psi_p25, &jerr);
	jnum(js, "psi_p75", sum.psi_p75, &jerr);
	jnum(js, "f_star", sum.f_star, &jerr);
	jnum(js, "eta", sum.have_eta ? sum.eta : NAN, &jerr);
	jnum(js, "rho", sum.have_rho ? sum.rho : NAN, &jerr);
	jnum(js, "c", sum.have_c ? sum.c : NAN, &jerr);
	jnum(js, "lambda", sum.lambda, &jerr);
	jnum(js, "theta_max", sum.theta_max, &jerr);
	jnum(js, "clip_l1", sum.clip, &jerr);
	if (jerr == 0)
		jerr = dp_json_add(js, "owners", json_object_get(jo));
	fprintf(m, "# Run report: %s\n\ndpasync sim run · %s · seed %.0f\n\n", o->dir, note,
		(double)sum.seed);
	fputs("## Key numbers\n\n| quantity | value |\n|---|---|\n", m);
	fprintf(m, "| ψ at k = T, mean over the runs | %.6g |\n", sum.psi_mean);
	fprintf(m, "| ψ at k = T, median (25–75 %%) | %.6g (%.6g – %.6g) |\n", sum.psi_median,
		sum.psi_p25, sum.psi_p75);
	fprintf(m, "| f(θ*) | %.10g |\n", sum.f_star);
	if (sum.have_eta)
		fprintf(m, "| η | %.6g |\n", sum.eta);
	if (sum.have_rho)
		fprintf(m, "| ρ | %.6g |\n", sum.rho);
	if (sum.have_c)
		fprintf(m, "| c | %.6g |\n", sum.c);
	fprintf(m, "| λ, θ_max, Ξ | %g, %g, %g |\n", sum.lambda, sum.theta_max, sum.clip);
	fputs("\n## Owners\n\n| owner | rows | ε |", m);
	if (have_sched)
		fputs(" iterations (first run) | share |", m);
	fputs(have_sched ? "\n|---|---|---|---|---|\n" : "\n|---|---|---|\n", m);
	for (size_t i = 0; i < sum.N; i++) {
		/* Both arrays were checked by summary_read; "inf" (or null) is an
		 * unlimited budget. */
		struct json_object *e = sum.eps ? json_object_array_get_idx(sum.eps, i) : NULL;
		struct json_object *r = sum.rows ? json_object_array_get_idx(sum.rows, i) : NULL;
		struct json_object *oj = json_object_new_object();
		char name[32];

		snprintf(name, sizeof(name), "owner-%zu", i + 1);
		if (jerr == 0)
			jerr = dp_json_push(jo, oj);
		else
			json_object_put(oj);
		jstr(oj, "owner", name, &jerr);
		jnum(oj, "rows", r ? json_object_get_double(r) : NAN, &jerr);
		fprintf(m, "| owner-%zu | %.0f | ", i + 1, r ? json_object_get_double(r) : NAN);
		if (e != NULL && !json_object_is_type(e, json_type_string)) {
			fprintf(m, "%g", json_object_get_double(e));
			jnum(oj, "epsilon", json_object_get_double(e), &jerr);
		} else {
			fputs("∞", m);
			jstr(oj, "epsilon", "inf", &jerr);
		}
		if (have_sched) {
			size_t c = 0;

			for (size_t k = 0; k < tr.n; k++)
				c += tr.owner[k] == i;
			fprintf(m, " | %zu | %.1f %%", c, 100.0 * (double)c / (double)tr.n);
			jint(oj, "iterations", c, &jerr);
			jnum(oj, "share", (double)c / (double)tr.n, &jerr);
		}
		fputs(" |\n", m);
	}
	fputs("\nowner-j is the j-th data file given to `dpasync sim`.\n", m);
	figs_md(m, figs, nfig);
	fprintf(rf, "dpasync plot --kind psi --out %s/report-psi.png %s/psi.csv\n", o->dir, o->dir);
	if (have_sched)
		fprintf(rf, "dpasync plot --kind owners --out %s/report-owners.png %s/schedule.txt\n",
			o->dir, o->dir);
	if (fclose(rf) != 0 || repro == NULL) {
		rf = NULL;
		rc = dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
		dp_cmd_fail("report", "out of memory");
		goto out;
	}
	rf = NULL;
	fprintf(m, "\n## Reproduce\n\n```\n%s```\n", repro);
	if (jerr == 0)
		jerr = dp_json_add(js, "reproduce", dp_json_lines(repro));
	err = write_json(o->dir, js, jerr);
	js = NULL;
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_RUN);
		goto out;
	}
	*nfig_out = nfig;
	rc = 0;
out:
	if (rf != NULL)
		fclose(rf);
	free(repro);
	json_object_put(js);
	json_object_put(jo);
	dp_plot_psi_free(&ps);
	dp_plot_trace_free(&tr);
	json_object_put(sum.root);
	return rc;
}

/* A peer-mode run: a directory of agents' state directories. */
static int report_peer(const struct report_opts *o, FILE *m, size_t *nfig)
{
	int err = dp_peerreport_write(o->dir, m);

	*nfig = 0;
	return err < 0 ? fail(err, DP_EXIT_PHASE_LOAD) : 0;
}

static int report(void *arg)
{
	struct report_opts *o = arg;
	int (*write_report)(const struct report_opts *o, FILE *m, size_t *nfig);
	char *md = NULL;
	size_t mdlen = 0, nfig = 0;
	struct stat st;
	FILE *m;
	int status;

	o->dir = o->args.v[0];
	if (stat(o->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		dp_cmd_fail("report", "%s: not a directory", o->dir);
		return dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
	}
	if (access(o->dir, W_OK) != 0) {
		dp_cmd_fail("report", "%s: not writable (report.md and the figures go there)",
			    o->dir);
		return dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
	}
	if (exists(o->dir, "trace.csv")) {
		write_report = report_learner;
	} else if (exists(o->dir, "summary.json") && exists(o->dir, "psi.csv")) {
		write_report = report_sim;
	} else if (dp_peerreport_detect(o->dir)) {
		write_report = report_peer;
	} else {
		dp_cmd_fail("report", "%s: neither a learnerd out directory (trace.csv), a sim "
			    "out directory (summary.json and psi.csv) nor a peer run (agents' "
			    "directories with trace.csv)", o->dir);
		return dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
	}
	m = open_memstream(&md, &mdlen);
	if (m == NULL) {
		dp_cmd_fail("report", "out of memory");
		return dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
	}
	status = write_report(o, m, &nfig);
	if (status == 0)
		status = finish_md(o->dir, m, &md, &mdlen, nfig);
	else
		fclose(m);
	free(md);
	return status;
}

int dp_cmd_report(int argc, char **argv)
{
	struct report_opts o = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "data", DP_CFG_STRINGS(&o.data), .flags = DP_CONFIG_APPEND,
		  .metavar = "FILE[,FILE]",
		  .help = "owner data files (repeatable): psi of\n"
			  "DIR/model.json on their union, computed as\n"
			  "`dpasync eval` does" },
		{ .name = "target", DP_CFG_STRING(&o.target), .metavar = "COL",
		  .help = "target column of the data files (default:\n"
			  "model.json's, else y)" },
		{ .name = "schema", DP_CFG_PATH(&o.schema), .metavar = "FILE",
		  .help = "feature schema applied to raw data files" },
		{ .name = "rate", .alias = "rates", DP_CFG_STRING(&o.rates), .metavar = "R1,..|NAME=R,..",
		  .help = "owners' clock rates (requests/s): adds share\n"
			  "against clock rate to the shares figure" },
		{ .name = "sim", DP_CFG_PATH(&o.sim), .metavar = "SIMDIR",
		  .help = "a `dpasync sim --schedule\n"
			  "DIR/report-schedule.txt` run: adds psi\n"
			  "against wall-clock time" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync report",
		.command = true,
		.summary = report_summary,
		.epilog = "Exit status: 0 written, 1 gnuplot missing or failed or a write failed,\n"
			  "2 bad usage or input.",
		.entries = entries,
		.args = &o.args,
		.args_metavar = "DIR",
		.args_min = 1,
		.args_max = 1,
	};

	return dp_cmd_run(&spec, argc, argv, report, &o);
}
