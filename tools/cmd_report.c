/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync report: one run's directory (learnerd out dir or sim out dir)
 * into DIR/report.md with its figures (tools/lib/plot.h) and key numbers,
 * and DIR/report.json.  This file reads the directory, draws the figures
 * and fills the report's numbers (tools/lib/report.h), which report_md.c
 * and report_json.c write. */
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
#include "tools/lib/gnuplot.h"
#include "tools/lib/plot.h"
#include "tools/lib/report.h"
#include "tools/lib/report_json.h"
#include "tools/lib/report_md.h"
#include "tools/lib/snapshots.h"

/* Largest checkpoint.json or summary.json read. */
#define JSON_MAX ((size_t)1 << 28)

static const char report_summary[] =
	"Write DIR/report.md, a Markdown page with the key numbers of one run and\n"
	"its figures (PNG files DIR/report-*.png next to it, drawn with gnuplot),\n"
	"and DIR/report.json, the same numbers for programs.\n"
	"DIR is either\n"
	"  - a learnerd out directory (trace.csv; model.json and checkpoint.json\n"
	"    when present): iterations/s, per-owner iterations and share, median\n"
	"    and p95 query round trip and request wait, epsilon spent per owner\n"
	"    (the last eps_spent of the owner in the trace; with --ledgers, the\n"
	"    ledger's figure, and a table of why it differs from the applied\n"
	"    answers), staleness, gaps much longer than the typical time between\n"
	"    updates (a resume's downtime), psi with --data; rates count from the\n"
	"    first query;\n"
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
	struct dp_config_strings ledgers;   /* OWNER=LEDGERDIR */
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

/* Close f, an open_memstream of *buf, and write what it holds to
 * DIR/name (0644, atomically); *buf is freed.  0, DP_ENOMEM, or
 * dp_file_write_atomic's error. */
static int write_memstream(FILE *f, char **buf, size_t *len, const char *dir, const char *name)
{
	char path[4200];
	int rc;

	if (fclose(f) != 0 || *buf == NULL) {
		free(*buf);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	join(path, sizeof(path), dir, name);
	rc = dp_file_write_atomic(path, *buf, *len, 0644);
	free(*buf);
	return rc;
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

/* psi of the model file `path` (read into mf) on the --data files, and
 * psi_zero, that of the all-zero model (dpasync eval's computation: the
 * target and features are the model file's when it names them), and, when
 * sn is not NULL, that of each of its snapshots into sn_psi[sn->n]; 0, or
 * the exit status after the error line. */
static int psi_of_model(const struct report_opts *o, const dp_modelfile *mf, const char *path,
			const dp_snapshots *sn, double *sn_psi, double *f_out, double *fstar_out,
			double *psi_out, double *psi_zero_out)
{
	const char *target = o->schema ? NULL : o->target ? o->target : mf->target;
	double *zero;
	dp_ownerdata od;
	int rc;

	if (target == NULL && o->schema == NULL) {
		dp_cmd_fail("report", "%s names no target column, and none is guessed: pass "
			    "--target COL (or --schema FILE)", path);
		return dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
	}
	rc = dp_ownerdata_load(&od, o->data.v, o->data.n, target, mf->bias, o->schema, mf->model);
	if (rc == 0) {
		/* The schema first, as eval. */
		for (size_t i = 0; rc == 0 && i < od.N; i++)
			rc = dp_modelfile_check_schema(mf, path, &od.ds[i], o->schema);
		if (rc == 0)
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
	/* The run's snapshots on the same data, against the same f*. */
	for (size_t i = 0; rc == 0 && sn != NULL && i < sn->n; i++)
		sn_psi[i] = *fstar_out > 0
			? dp_model_psi(dp_model_fitness(mf->model, od.view, od.N, mf->lambda,
							sn->theta + i * sn->p), *fstar_out)
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
	const char *mechanism;     /* job.mechanism ("laplace" before version 5) */
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
		c->mechanism = dp_json_get_string(&r, job, "mechanism", false, "laplace");
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

/* sim's --epsilon for the replay: what each owner spent in the run (its
 * last eps_spent in the trace; an owner never asked gets the smallest of
 * the others', which the schedule never uses), in the schedule's owner
 * order; a Gaussian job's are epsilons at the owners' delta, which the
 * learner does not record (--delta D stays for the reader to fill). */
static void print_budgets(FILE *f, const dp_rundata_trace *tr, const struct ckpt *ck)
{
	double *spent = tr->eps ? calloc(tr->N, sizeof(double)) : NULL, least = INFINITY;

	if (ck->mechanism != NULL && strcmp(ck->mechanism, "gaussian") == 0)
		fputs(" --mechanism gaussian --delta D", f);
	if (spent == NULL) {
		fputs(" --epsilon E", f);
		return;
	}
	for (size_t r = 0; r < tr->n; r++)
		spent[tr->owner[r]] = fmax(spent[tr->owner[r]], tr->eps[r]);
	for (size_t i = 0; i < tr->N; i++)
		if (spent[i] > 0 && spent[i] < least)
			least = spent[i];
	fputs(" --epsilon ", f);
	for (size_t i = 0; i < tr->N; i++)
		fprintf(f, "%s%.9g", i ? "," : "", spent[i] > 0 ? spent[i] : least);
	free(spent);
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

static int write_schedule(const char *dir, const dp_rundata_trace *tr)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t r = 0; r < tr->n; r++)
		fprintf(f, "%zu\n", tr->owner[r] + 1);
	return write_memstream(f, &buf, &len, dir, "report-schedule.txt");
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
 * placeholder in capitals (E: the owners' --epsilon; SIMDIR; COL: the
 * target, when neither the model file nor --target names it).
 * mf may be NULL.  0 or DP_ENOMEM. */
static int reproduce(const struct report_opts *o, const dp_rundata_trace *tr, const struct ckpt *ck,
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
	if (!o->schema)   /* sim guesses no target: COL when the run names none */
		fprintf(f, " --target %s", target ? target : "COL");
	if (o->schema)
		fprintf(f, " --schema %s", o->schema);
	if (T && T != tr->n)
		fprintf(f, " --answers-cap %zu", T);
	if (ck->freq_correction)
		fputs(" --freq-correction", f);
	print_budgets(f, tr, ck);
	fprintf(f, " --repeats 10 --out SIMDIR %s\n", data);
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

/* What the learnerd report reads: the run's directory and the options'
 * inputs. */
struct learner_in {
	struct ckpt ck;
	dp_rundata_trace tr;
	dp_modelfile mf;
	bool have_model, have_psi;
	size_t T;                       /* checkpoint.json's, else model.json's */
	double f, f_star, psi, psi_zero;   /* --data */
	double *rates;                  /* --rates, or NULL */
	dp_rundata_psi sps;             /* --sim */
	size_t runs;
	dp_report_ledger *ledgers;      /* --ledgers, o->ledgers.n */
	dp_snapshots snaps;             /* DIR/snapshots.csv with --data */
	bool have_snaps;
	double *snap_psi, *snap_s;      /* snaps.n: psi, seconds since the first query */
};

static void learner_in_free(struct learner_in *in)
{
	free(in->rates);
	free(in->ledgers);
	dp_rundata_trace_free(&in->tr);
	dp_rundata_psi_free(&in->sps);
	if (in->have_snaps)
		dp_snapshots_free(&in->snaps);
	free(in->snap_psi);
	free(in->snap_s);
	if (in->have_model)
		dp_modelfile_free(&in->mf);
	ckpt_free(&in->ck);
}

/* DIR/snapshots.csv (learnerd --snapshot-every), when there is one: the
 * run's own model over time, whose psi --data measures.  0 or the exit
 * status after the error line. */
static int read_snapshots(const struct report_opts *o, struct learner_in *in)
{
	double start = dp_rundata_trace_start(&in->tr);
	char path[4200];
	int err;

	if (!exists(o->dir, "snapshots.csv"))
		return 0;
	join(path, sizeof(path), o->dir, "snapshots.csv");
	err = dp_snapshots_read(path, in->mf.p, &in->snaps);
	if (err != 0)
		return fail(err, DP_EXIT_PHASE_LOAD);
	in->have_snaps = true;
	in->snap_psi = calloc(in->snaps.n ? in->snaps.n : 1, sizeof(double));
	in->snap_s = calloc(in->snaps.n ? in->snaps.n : 1, sizeof(double));
	if (in->snap_psi == NULL || in->snap_s == NULL)
		return fail(dp_error_set(DP_ENOMEM, "out of memory"), DP_EXIT_PHASE_LOAD);
	/* The clock of the other figures (docs/plots.md "Throughput"); the
	 * k = 0 row is written when training starts, just before it. */
	for (size_t i = 0; i < in->snaps.n; i++)
		in->snap_s[i] = fmax(0.0, in->snaps.t[i] - start);
	return 0;
}

/* --sim SIMDIR: its schedule must be the trace's owner order. */
static int read_sim(const struct report_opts *o, struct learner_in *in)
{
	char path[4200];
	int err;

	join(path, sizeof(path), o->sim, "schedule.txt");
	err = dp_rundata_schedule_check(path, &in->tr);
	if (err == DP_EINVAL) {
		char why[512];
		snprintf(why, sizeof(why), "%s", dp_error_detail(err));
		err = dp_error_set(DP_EINVAL, "--sim %s was not run with --schedule %s/report-schedule.txt: %s",
				   o->sim, o->dir, why);
	}
	if (err == 0) {
		join(path, sizeof(path), o->sim, "psi.csv");
		err = dp_rundata_psi_read(path, &in->sps);
	}
	if (err == 0)
		in->runs = sim_runs(o->sim);
	return err;
}

/* --ledgers OWNER=LEDGERDIR,...: each owner's ledger of this run's job,
 * read-only (dp_report_ledger_read). */
static int read_ledgers(const struct report_opts *o, struct learner_in *in)
{
	const char *job = in->tr.job != NULL ? in->tr.job : in->ck.job;
	int err = 0;

	if (job == NULL)
		return dp_error_set(DP_EINVAL, "--ledgers: the job of %s is unknown (neither "
				    "trace.csv's job column nor checkpoint.json names it)", o->dir);
	in->ledgers = calloc(o->ledgers.n, sizeof(*in->ledgers));
	if (in->ledgers == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t i = 0; i < o->ledgers.n && err == 0; i++) {
		char *spec = o->ledgers.v[i], *eq = strchr(spec, '=');

		if (eq == NULL || eq == spec || eq[1] == '\0')
			return dp_error_set(DP_EINVAL, "--ledgers: '%s' is not OWNER=LEDGERDIR", spec);
		*eq = '\0';   /* the option's own copy: OWNER, then LEDGERDIR */
		err = dp_report_ledger_read(&in->ledgers[i], spec, eq + 1, job);
	}
	return err;
}

/* Everything the report needs, before anything is drawn.  0, or the exit
 * status after the error line. */
static int learner_read(const struct report_opts *o, struct learner_in *in)
{
	char path[4200];
	int rc, err;

	in->psi = NAN;
	/* checkpoint.json names every configured owner, also those never served. */
	err = ckpt_read(o->dir, &in->ck);
	if (err != 0)
		return fail(err, DP_EXIT_PHASE_LOAD);
	in->T = in->ck.T;
	join(path, sizeof(path), o->dir, "trace.csv");
	err = dp_rundata_trace_read(path, in->ck.owners, in->ck.nowners, &in->tr);
	if (err == 0 && in->tr.t == NULL)
		err = dp_error_set(DP_EFORMAT, "%s: not a learnerd trace", path);
	if (err != 0)
		return fail(err, DP_EXIT_PHASE_LOAD);
	if (exists(o->dir, "model.json")) {
		join(path, sizeof(path), o->dir, "model.json");
		err = dp_modelfile_read(path, &in->mf);
		if (err != 0)
			return fail(err, DP_EXIT_PHASE_LOAD);
		in->have_model = true;
		if (in->T == 0)
			in->T = in->mf.T;
	}
	if (o->data.n) {
		if (!in->have_model) {
			dp_cmd_fail("report", "--data: %s/model.json is missing, no psi to compute",
				    o->dir);
			return dp_exit_status(DP_ENOENT, DP_EXIT_PHASE_LOAD);
		}
		rc = read_snapshots(o, in);
		if (rc != 0)
			return rc;
		join(path, sizeof(path), o->dir, "model.json");
		rc = psi_of_model(o, &in->mf, path, in->have_snaps ? &in->snaps : NULL, in->snap_psi,
				  &in->f, &in->f_star, &in->psi, &in->psi_zero);
		if (rc != 0)
			return rc;
		in->have_psi = true;
	}
	if (o->rates) {
		err = dp_rundata_rates(o->rates, &in->tr, &in->rates);
		if (err != 0)
			return fail(err, DP_EXIT_PHASE_LOAD);
	}
	if (o->sim) {
		err = read_sim(o, in);
		if (err != 0)
			return fail(err, DP_EXIT_PHASE_LOAD);
	}
	if (o->ledgers.n) {
		err = read_ledgers(o, in);
		if (err != 0)
			return fail(err, DP_EXIT_PHASE_LOAD);
	}
	return 0;
}

/* The run's own psi (snapshots.csv on --data): report-psi-measured.csv
 * (time_s,k,psi, what `dpasync plot --kind psi-wall` draws) and its two
 * figures, against time and against k.  0 or the error. */
static int measured_figures(const struct report_opts *o, const struct learner_in *in,
			    dp_report_fig *figs, size_t *nfig)
{
	const dp_snapshots *sn = &in->snaps;
	dp_rundata_wall w = { .n = sn->n, .t = in->snap_s, .psi = in->snap_psi, .k = sn->k };
	dp_rundata_psi ps = { .n = sn->n, .k = sn->k, .p25 = in->snap_psi, .p50 = in->snap_psi,
			      .p75 = in->snap_psi, .mean = in->snap_psi };
	const char *label[] = { "this run (learnerd's snapshots)" };
	dp_plot_opts po = { 0 };
	char path[4200], *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (f == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	fputs("time_s,k,psi\n", f);
	for (size_t i = 0; i < sn->n; i++)
		fprintf(f, "%.6f,%zu,%.10g\n", in->snap_s[i], sn->k[i], in->snap_psi[i]);
	err = write_memstream(f, &buf, &len, o->dir, "report-psi-measured.csv");
	if (err == 0) {
		join(path, sizeof(path), o->dir, "report-psi-measured.png");
		err = dp_plot_psi_wall(&w, label, 1, &po, path);
		figs[(*nfig)++] = (dp_report_fig){ "report-psi-measured.png",
			"ψ the run reached, against wall-clock time",
			"ψ of learnerd's own model (snapshots.csv, `--snapshot-every`) on the `--data` "
			"files, at the seconds since the first query when it was written: what this run "
			"reached, not a replay (the data: report-psi-measured.csv)." };
	}
	if (err == 0) {
		join(path, sizeof(path), o->dir, "report-psi-k-measured.png");
		err = dp_plot_psi_k(&ps, label, 1, NULL, &po, path);
		figs[(*nfig)++] = (dp_report_fig){ "report-psi-k-measured.png",
			"ψ the run reached, against k",
			"The same snapshots against the iteration k (sync: the round) they were taken "
			"after." };
	}
	return err;
}

/* The figures of a learnerd report (report-schedule.txt is written), in
 * figs[*nfig] as far as they were drawn.  0 or the figure's error. */
static int learner_figures(const struct report_opts *o, const struct learner_in *in,
			   dp_report_fig *figs, size_t *nfig)
{
	char path[4200];
	dp_plot_opts po = { 0 };
	const dp_rundata_trace *tr = &in->tr;
	int err;

	join(path, sizeof(path), o->dir, "report-owners.png");
	err = dp_plot_owners(tr, 0, &po, path);
	figs[(*nfig)++] = (dp_report_fig){ "report-owners.png", "Owner of each iteration",
		"Which owner's update request the learner served at each iteration k (the paper's Fig. 3)." };
	if (err == 0) {
		join(path, sizeof(path), o->dir, "report-cdf.png");
		err = dp_plot_cdf(tr, &po, path);
		figs[(*nfig)++] = (dp_report_fig){ "report-cdf.png", "Request wait and query round trip",
			"Empirical CDFs, per owner and overall, of the time a request waited in the learner's "
			"queue (`wait_s`) and of the query round trip (`rtt_s`), in milliseconds." };
	}
	if (err == 0) {
		join(path, sizeof(path), o->dir, "report-shares.png");
		err = dp_plot_shares(tr, in->rates, &po, path);
		figs[(*nfig)++] = (dp_report_fig){ "report-shares.png", "Share of iterations per owner",
			in->rates
			? "Each owner's share of the iterations against its clock rate (`--rates`) and against its "
			  "median query round trip (bars: 25–75 %)."
			: "Each owner's share of the iterations against its median query round trip (bars: 25–75 %); "
			  "pass `--rates` to add the clock rates." };
	}
	if (err == 0 && in->have_snaps && in->snaps.n > 0)
		err = measured_figures(o, in, figs, nfig);
	if (err == 0 && o->sim) {
		join(path, sizeof(path), o->dir, "report-psi-time.png");
		err = dp_plot_psi_time(&in->sps, tr, in->runs, &po, path);
		figs[(*nfig)++] = (dp_report_fig){ "report-psi-time.png", "ψ against wall-clock time",
			"ψ of the simulated runs in `--sim` (which replay this trace's owner order with "
			"`dpasync sim --schedule`) at iteration k, drawn at the time learnerd applied iteration k. "
			"With ε = inf the simulated θ_L is learnerd's; with noise it is the same owner order with "
			"other noise draws." };
	}
	return err;
}

/* What the run was and what the options added, into r. */
static void learner_context(const struct report_opts *o, const struct learner_in *in,
			    dp_report_learner *r)
{
	const dp_rundata_psi *sps = &in->sps;

	r->dir = o->dir;
	/* The trace's job column names the job its rows belong to; an older
	 * trace leaves it to checkpoint.json. */
	r->job = in->tr.job != NULL ? in->tr.job : in->ck.job;
	r->model = in->have_model ? dp_model_name(in->mf.model) : NULL;
	if (in->have_model && in->mf.partial) {
		r->partial = true;
		r->partial_k = in->mf.k;
		r->partial_reason = in->mf.reason;
		r->partial_detail = in->mf.detail;
	}
	r->mode = in->ck.have_state ? in->ck.mode : NULL;
	r->max_inflight = in->ck.max_inflight;
	r->T = in->T;
	r->have_eta = in->ck.have_eta;
	r->eta = in->ck.eta;
	r->have_psi = in->have_psi;
	r->psi = in->psi;
	r->f = in->f;
	r->f_star = in->f_star;
	r->psi_zero = in->psi_zero;
	r->ndata = o->data.n;
	if (in->have_snaps) {
		r->nsnap = in->snaps.n;
		r->snap_k = in->snaps.k;
		r->snap_s = in->snap_s;
		r->snap_psi = in->snap_psi;
	}
	if (o->sim) {
		r->sim = o->sim;
		r->sim_median = sps->p50[sps->n - 1];
		r->sim_p25 = sps->p25[sps->n - 1];
		r->sim_p75 = sps->p75[sps->n - 1];
		r->sim_k = sps->k[sps->n - 1];
		r->sim_runs = in->runs;
	}
}

/* The numbers of a learnerd report, computed once, then written to
 * report.md (m) and report.json from the same fields, so the two agree.
 * Returns the exit status. */
static int learner_numbers(const struct report_opts *o, struct learner_in *in,
			   const dp_report_fig *figs, size_t nfig, FILE *m)
{
	dp_report_learner rep = { 0 };
	struct repro repro = { 0 };
	struct json_object *js = NULL;
	int rc, err;

	err = dp_report_learner_stats(&rep, &in->tr);
	if (err != 0) {
		dp_cmd_fail("report", "out of memory");
		return dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
	}
	err = reproduce(o, &in->tr, &in->ck, in->have_model ? &in->mf : NULL, in->T, &repro);
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_RUN);
		goto out;
	}
	learner_context(o, in, &rep);
	err = dp_report_ledger_apply(&rep, in->ledgers, o->ledgers.n);
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_LOAD);
		goto out;
	}
	rep.figs = figs;
	rep.nfig = nfig;
	rep.repro_plots = repro.plots;
	rep.repro_sim = repro.sim;
	dp_report_md_learner(m, &rep);
	err = dp_report_json_learner(&rep, &js);
	err = write_json(o->dir, js, err);
	rc = err != 0 ? fail(err, DP_EXIT_PHASE_RUN) : 0;
out:
	dp_report_learner_free(&rep);
	free(repro.plots);
	free(repro.sim);
	return rc;
}

/* The report of a learnerd out directory: the figures drawn, their number
 * in *nfig_out and the page's text written to m.  Returns the exit
 * status (report() writes the page when it is 0). */
static int report_learner(const struct report_opts *o, FILE *m, size_t *nfig_out)
{
	struct learner_in in = { 0 };
	dp_report_fig figs[6];   /* owners, cdf, shares, two measured psi, psi-time */
	size_t nfig = 0;
	int rc, err;

	rc = learner_read(o, &in);
	if (rc != 0)
		goto out;

	/* Figures. */
	err = dp_gnuplot_check();
	if (err == 0)
		err = write_schedule(o->dir, &in.tr);
	if (err == 0)
		err = learner_figures(o, &in, figs, &nfig);
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_RUN);
		goto out;
	}
	rc = learner_numbers(o, &in, figs, nfig, m);
	if (rc == 0)
		*nfig_out = nfig;
out:
	learner_in_free(&in);
	return rc;
}

/* The reproduce commands of a sim report: whole lines in *out (free()).
 * 0 or DP_ENOMEM. */
static int sim_reproduce(const char *dir, bool have_sched, char **out)
{
	int n;

	if (have_sched)
		n = asprintf(out, "dpasync plot --kind psi --out %s/report-psi.png %s/psi.csv\n"
			     "dpasync plot --kind owners --out %s/report-owners.png %s/schedule.txt\n",
			     dir, dir, dir, dir);
	else
		n = asprintf(out, "dpasync plot --kind psi --out %s/report-psi.png %s/psi.csv\n",
			     dir, dir);
	if (n < 0) {
		*out = NULL;
		return DP_ENOMEM;
	}
	return 0;
}

/* The numbers of a sim report (rep holds summary.json's; sched is the
 * first run's schedule, or NULL), written to report.md (m) and
 * report.json.  Returns the exit status. */
static int sim_numbers(const struct report_opts *o, dp_report_sim *rep,
		       const dp_rundata_trace *sched, FILE *m)
{
	struct json_object *js = NULL;
	char *repro;
	int err;

	if (sim_reproduce(o->dir, sched != NULL, &repro) != 0) {
		dp_cmd_fail("report", "out of memory");
		return dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
	}
	rep->dir = o->dir;
	rep->repro = repro;
	if (sched != NULL)
		dp_report_sim_count(rep, sched);
	dp_report_md_sim(m, rep);
	err = dp_report_json_sim(rep, &js);
	err = write_json(o->dir, js, err);
	free(repro);
	rep->repro = NULL;
	return err != 0 ? fail(err, DP_EXIT_PHASE_RUN) : 0;
}

/* The report of a dpasync sim out directory, as report_learner. */
static int report_sim(const struct report_opts *o, FILE *m, size_t *nfig_out)
{
	char path[4200], note[300];
	size_t nfig = 0, runs = 0;
	dp_report_sim rep = { 0 };
	dp_rundata_psi ps = { 0 };
	dp_rundata_trace tr = { 0 };
	int rc = 2, err;
	bool have_sched;
	dp_report_fig figs[2];
	dp_plot_opts po = { 0 };
	const char *label = NULL;

	if (o->data.n || o->rates || o->sim || o->schema || o->target || o->ledgers.n) {
		dp_cmd_fail("report", "--data, --target, --schema, --rates, --sim and --ledgers apply to "
			    "learnerd directories; %s is a sim directory", o->dir);
		return dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
	}
	err = dp_report_sim_read(&rep, o->dir);
	if (err != 0)
		return fail(err, DP_EXIT_PHASE_LOAD);
	join(path, sizeof(path), o->dir, "psi.csv");
	err = dp_rundata_psi_read(path, &ps);
	have_sched = exists(o->dir, "schedule.txt");
	if (err == 0 && have_sched) {
		join(path, sizeof(path), o->dir, "schedule.txt");
		err = dp_rundata_trace_read(path, NULL, 0, &tr);
	}
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_LOAD);
		goto out;
	}
	join(path, sizeof(path), o->dir, "psi.csv");
	dp_rundata_sim_note(path, note, sizeof(note), &runs);

	err = dp_gnuplot_check();
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_RUN);
		goto out;
	}
	join(path, sizeof(path), o->dir, "report-psi.png");
	err = dp_plot_psi_k(&ps, &label, 1, note[0] ? note : NULL, &po, path);
	figs[nfig++] = (dp_report_fig){ "report-psi.png", "ψ against iteration",
		"Median and 25–75 % band over the runs of ψ = f(θ_L)/f(θ*) − 1 at each checkpoint k "
		"(psi.csv; the paper's Fig. 2)." };
	if (err == 0 && have_sched) {
		join(path, sizeof(path), o->dir, "report-owners.png");
		err = dp_plot_owners(&tr, 0, &po, path);
		figs[nfig++] = (dp_report_fig){ "report-owners.png", "Owner of each iteration",
			"The owner of each async iteration in the first run (schedule.txt; the paper's "
			"Fig. 3)." };
	}
	if (err != 0) {
		rc = fail(err, DP_EXIT_PHASE_RUN);
		goto out;
	}
	rep.note = note;
	rep.runs = runs;
	rep.figs = figs;
	rep.nfig = nfig;
	rc = sim_numbers(o, &rep, have_sched ? &tr : NULL, m);
	if (rc == 0)
		*nfig_out = nfig;
out:
	dp_rundata_psi_free(&ps);
	dp_rundata_trace_free(&tr);
	dp_report_sim_free(&rep);
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
			  "model.json's; no other)" },
		{ .name = "schema", DP_CFG_PATH(&o.schema), .metavar = "FILE",
		  .help = "feature schema applied to raw data files" },
		{ .name = "rate", .alias = "rates", DP_CFG_STRING(&o.rates), .metavar = "R1,..|NAME=R,..",
		  .help = "owners' clock rates (requests/s): adds share\n"
			  "against clock rate to the shares figure" },
		{ .name = "sim", DP_CFG_PATH(&o.sim), .metavar = "SIMDIR",
		  .help = "a `dpasync sim --schedule\n"
			  "DIR/report-schedule.txt` run: adds psi\n"
			  "against wall-clock time" },
		{ .name = "ledgers", DP_CFG_STRINGS(&o.ledgers), .flags = DP_CONFIG_APPEND,
		  .metavar = "OWNER=DIR[,...]",
		  .help = "owners' ledger directories (ownerd --ledger),\n"
			  "read without a lock: the budget spent is the\n"
			  "ledger's figure, and a table says why it\n"
			  "differs from the applied answers x eps_q" },
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
