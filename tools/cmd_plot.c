/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync plot: PNG, SVG or PDF figures of a run (trace, schedule, psi) drawn by
 * gnuplot; the figures themselves are in tools/lib/plot.c. */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/net/config.h"
#include "tools/cmds.h"
#include "tools/lib/gnuplot.h"
#include "tools/lib/plot.h"

static const char plot_summary[] =
	"Draw one figure of a learnerd run or a sim run with gnuplot (found on\n"
	"PATH; Debian: gnuplot-nox): PNG, SVG or PDF by the extension of --out.\n"
	"Default titles name the run (the job of model.json or --job, else the\n"
	"run's directory) and the dataset (--dataset, else model.json's target and\n"
	"feature count).  Owners are ordered by name in natural order\n"
	"(owner-2 before owner-10); owner j of a schedule is the j-th data file.\n"
	"\n"
	"Kinds and their inputs:\n"
	"  owners    INPUT = a learnerd trace.csv or a sim schedule.txt.  The owner\n"
	"            of each iteration against k (the paper's Fig. 3); --kmax K\n"
	"            keeps iterations k <= K.\n"
	"  psi       INPUT... = one or more sim psi.csv.  Median and 25-75 % band\n"
	"            of psi = f(theta_L)/f(theta*) - 1 over the runs against k\n"
	"            (the paper's Fig. 2); summary.json next to a psi.csv adds the\n"
	"            settings to the title; --labels names the INPUTs (default:\n"
	"            their directories' names, or file names when those repeat).\n"
	"  psi-time  INPUT = the psi.csv of `dpasync sim --schedule S` where S is\n"
	"            the owner order of the trace (`dpasync report` writes it as\n"
	"            report-schedule.txt; data files in the owners' natural order),\n"
	"            and --trace trace.csv.  psi at iteration k against the time the\n"
	"            trace applied iteration k (seconds since the first query).  With --epsilon inf the simulated\n"
	"            theta_L equals learnerd's; with noise psi is that of the same\n"
	"            owner order with other noise draws.  The schedule.txt next to\n"
	"            INPUT must equal the trace's owner order.\n"
	"  owners-wall INPUT = a learnerd trace.csv.  The owner of each iteration\n"
	"            against seconds since the learner's first query: which owner\n"
	"            answered when.\n"
	"  shares    INPUT = a learnerd trace.csv.  Each owner's share of the\n"
	"            iterations against its median query round trip and, with\n"
	"            --rate, against its clock rate.\n"
	"  cdf       INPUT = a learnerd trace.csv.  Empirical CDFs of the request\n"
	"            wait in the learner's queue and of the query round trip, per\n"
	"            owner and overall (log time axis).\n"
	"  psi-wall  INPUT... = one or more measured psi curves (time_s,k,psi: psi\n"
	"            of a learnerd model at seconds since training started, as\n"
	"            scripts/reproduce.sh async-vs-sync writes them).  psi against\n"
	"            wall-clock time, one line per INPUT; --labels names them.\n"
	"            INPUTs with the same label are repeats of one run: their\n"
	"            median with a min-max band.";

enum kind { OWNERS, PSI, PSI_TIME, SHARES, CDF, PSI_WALL, OWNERS_WALL };

static const char *const kinds[] = { "owners", "psi", "psi-time", "shares", "cdf", "psi-wall",
				      "owners-wall", NULL };

struct plot_opts {
	int kind;                       /* enum kind */
	char *out, *trace, *rates, *title, *size, *data_out, *job, *dataset;
	struct dp_config_strings labels;
	size_t kmax;
	bool have_kind, have_kmax, logx, linear_y, linear_x;
	struct dp_config_strings inputs;
	unsigned width, height;         /* from --size */
	int preset;                     /* from --size column|page, or a PDF's */
};

/* Called between reading the inputs and drawing: the phase an error is
 * mapped with (docs/design.md §10 "Exit status") becomes running. */
static int start_drawing(enum dp_exit_phase *phase)
{
	*phase = DP_EXIT_PHASE_RUN;
	return dp_gnuplot_check();
}

/* --size WxH (or W,H) in pixels, or a printed size: column or page. */
static int parse_size(const char *arg, unsigned *w, unsigned *h, int *preset)
{
	char *end;
	unsigned long a, b;

	if (strcmp(arg, "column") == 0 || strcmp(arg, "page") == 0) {
		*preset = arg[0] == 'c' ? DP_GNUPLOT_SIZE_COLUMN : DP_GNUPLOT_SIZE_PAGE;
		return 0;
	}
	a = strtoul(arg, &end, 10);
	if (end == arg || (*end != 'x' && *end != ',' && *end != 'X'))
		goto bad;
	b = strtoul(end + 1, &end, 10);
	if (*end != '\0' || a < 300 || a > 8000 || b < 200 || b > 8000)
		goto bad;
	*w = (unsigned)a;
	*h = (unsigned)b;
	return 0;
bad:
	return dp_error_set(DP_EINVAL, "--size: expected column, page, or WxH with 300 <= W <= "
			    "8000 and 200 <= H <= 8000, got '%s'", arg);
}

/* Cross-field rules of the options (the table checks each one alone). */
static int check_opts(void *arg)
{
	struct plot_opts *o = arg;
	const char *k = kinds[o->kind];
	enum dp_gnuplot_format fmt;
	int rc;

	if (!o->have_kind)
		return dp_error_set(DP_EINVAL, "--kind is required: owners, psi, psi-time, shares, "
				    "cdf, psi-wall or owners-wall");
	if (o->kind != PSI && o->kind != PSI_WALL && o->inputs.n != 1)
		return dp_error_set(DP_EINVAL, "--kind %s takes one INPUT, got %zu", k, o->inputs.n);
	if (o->have_kmax && o->kind != OWNERS)
		return dp_error_set(DP_EINVAL, "--kmax applies to --kind owners only");
	if (o->labels.n && o->kind != PSI && o->kind != PSI_WALL)
		return dp_error_set(DP_EINVAL, "--labels applies to --kind psi and psi-wall only");
	if (o->rates && o->kind != SHARES)
		return dp_error_set(DP_EINVAL, "--rate applies to --kind shares only");
	if (o->trace && o->kind != PSI_TIME)
		return dp_error_set(DP_EINVAL, "--trace applies to --kind psi-time only");
	if (!o->trace && o->kind == PSI_TIME)
		return dp_error_set(DP_EINVAL, "--kind psi-time needs --trace trace.csv");
	if ((o->logx || o->linear_y) && o->kind != PSI && o->kind != PSI_TIME &&
	    o->kind != PSI_WALL)
		return dp_error_set(DP_EINVAL, "--logx and --linear-y apply to --kind psi, psi-time "
				    "and psi-wall only");
	if (o->linear_x && o->kind != CDF)
		return dp_error_set(DP_EINVAL, "--linear-x applies to --kind cdf only");
	if (o->labels.n && o->labels.n != o->inputs.n)
		return dp_error_set(DP_EINVAL, "--labels: expected %zu comma-separated labels, one "
				    "per psi.csv", o->inputs.n);
	if (o->data_out && dp_gnuplot_format_of(o->data_out, &(enum dp_gnuplot_format){ 0 }) == 0)
		return dp_error_set(DP_EINVAL, "--data-out %s: expected a .csv file, not a figure",
				    o->data_out);
	if (o->size && parse_size(o->size, &o->width, &o->height, &o->preset) != 0)
		return DP_EINVAL;
	rc = dp_gnuplot_format_of(o->out, &fmt);
	/* A PDF goes into a paper: a column, or the page's width for the two
	 * panels of cdf and of shares with its rates, unless --size says. */
	if (rc == 0 && !o->size && fmt == DP_GNUPLOT_PDF)
		o->preset = o->kind == CDF || (o->kind == SHARES && o->rates)
				    ? DP_GNUPLOT_SIZE_PAGE : DP_GNUPLOT_SIZE_COLUMN;
	return rc;
}

/* The directory that will hold `out` must exist and be writable. */
static int check_out(const char *out)
{
	char buf[4096];
	const char *dir;

	if (snprintf(buf, sizeof(buf), "%s", out) >= (int)sizeof(buf))
		return dp_error_set(DP_EINVAL, "--out: path too long");
	dir = dirname(buf);
	if (access(dir, W_OK) != 0)
		return dp_error_set(DP_EINVAL, "--out %s: directory %s is not writable or does not exist", out, dir);
	return 0;
}

/* The name of path's directory ("." resolved). */
static char *dir_name(const char *path)
{
	char buf[4096], *d;

	snprintf(buf, sizeof(buf), "%s", path);
	d = dirname(buf);
	if (strcmp(d, ".") == 0) {
		char *cwd = getcwd(buf, sizeof(buf));
		d = cwd ? cwd : buf;
	}
	return strdup(basename(d));
}

/* path's file name without ".csv" (or ".csv.gz"). */
static char *file_stem(const char *path)
{
	const char *b = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strlen(b);

	if (n > 7 && strcmp(b + n - 7, ".csv.gz") == 0)
		n -= 7;
	else if (n > 4 && strcmp(b + n - 4, ".csv") == 0)
		n -= 4;
	return strndup(b, n);
}

static bool all_distinct(char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (strcmp(v[i], v[j]) == 0)
				return false;
	return true;
}

/* Default legend labels of the inputs, distinct whenever the inputs are:
 * their directories' names (sim out directories), else their file names
 * (several curves in one directory, as async-vs-sync writes them), else
 * both.  0 or DP_ENOMEM (labels freed by the caller). */
static int default_labels(char *const *in, size_t nin, char **labels)
{
	for (size_t i = 0; i < nin; i++) {
		labels[i] = dir_name(in[i]);
		if (labels[i] == NULL)
			return dp_error_set(DP_ENOMEM, "out of memory");
	}
	if (all_distinct(labels, nin))
		return 0;
	for (size_t i = 0; i < nin; i++) {
		char *stem = file_stem(in[i]);

		if (stem == NULL)
			return dp_error_set(DP_ENOMEM, "out of memory");
		free(labels[i]);
		labels[i] = stem;
	}
	if (all_distinct(labels, nin))
		return 0;
	for (size_t i = 0; i < nin; i++) {
		char *dir = dir_name(in[i]), *both = NULL;

		if (dir == NULL || asprintf(&both, "%s/%s", dir, labels[i]) < 0) {
			free(dir);
			return dp_error_set(DP_ENOMEM, "out of memory");
		}
		free(dir);
		free(labels[i]);
		labels[i] = both;
	}
	return 0;
}

static int plot_psi(char *const *in, size_t nin, const struct dp_config_strings *given,
		    const dp_plot_opts *po, const char *out, enum dp_exit_phase *phase)
{
	dp_rundata_psi *ps = calloc(nin, sizeof(dp_rundata_psi));
	char **labels = calloc(nin, sizeof(char *)), note[300];
	size_t runs;
	int err = 0;

	if (ps == NULL || labels == NULL) {
		err = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nin; i++) {
		err = dp_rundata_psi_read(in[i], &ps[i]);
		if (err != 0)
			goto out;
		labels[i] = given->n ? strdup(given->v[i]) : NULL;
		if (given->n && labels[i] == NULL) {
			err = dp_error_set(DP_ENOMEM, "out of memory");
			goto out;
		}
	}
	if (!given->n && nin > 1) {
		err = default_labels(in, nin, labels);
		if (err != 0)
			goto out;
	}
	dp_rundata_sim_note(in[0], note, sizeof(note), &runs);
	err = start_drawing(phase);
	if (err == 0)
		err = dp_plot_psi_k(ps, (const char *const *)labels, nin,
				    nin == 1 && note[0] ? note : NULL, po, out);
out:
	for (size_t i = 0; i < nin; i++) {
		if (ps)
			dp_rundata_psi_free(&ps[i]);
		if (labels)
			free(labels[i]);
	}
	free(ps);
	free(labels);
	return err;
}

static int plot_psi_time(const char *psi_path, const char *trace_path, const dp_plot_opts *po,
			 const char *out, enum dp_exit_phase *phase)
{
	dp_rundata_trace tr = { 0 };
	dp_rundata_psi ps = { 0 };
	char sched[4096], dir[4096], note[300];
	size_t runs = 0;
	int err;

	err = dp_rundata_trace_read(trace_path, NULL, 0, &tr);
	if (err == 0 && tr.t == NULL)
		err = dp_error_set(DP_EINVAL, "--trace %s: a schedule, not a learnerd trace.csv",
				   trace_path);
	if (err == 0)
		err = dp_rundata_psi_read(psi_path, &ps);
	if (err == 0) {
		snprintf(dir, sizeof(dir), "%s", psi_path);
		snprintf(sched, sizeof(sched), "%s/schedule.txt", dirname(dir));
		if (access(sched, F_OK) != 0)
			err = dp_error_set(DP_EINVAL, "%s is missing: cannot check that %s was "
					   "simulated on the trace's owner order (run dpasync sim "
					   "--schedule)", sched, psi_path);
		else
			err = dp_rundata_schedule_check(sched, &tr);
		if (err == DP_EINVAL && access(sched, F_OK) == 0) {
			char why[512];

			snprintf(why, sizeof(why), "%s", dp_error_detail(err));
			err = dp_error_set(DP_EINVAL, "%s was not simulated on this trace's owner "
					   "order: %s", psi_path, why);
		}
	}
	if (err == 0) {
		dp_rundata_sim_note(psi_path, note, sizeof(note), &runs);
		err = start_drawing(phase);
	}
	if (err == 0)
		err = dp_plot_psi_time(&ps, &tr, runs, po, out);
	dp_rundata_trace_free(&tr);
	dp_rundata_psi_free(&ps);
	return err;
}

/* owners, shares, cdf: one trace (or schedule) in. */
static int plot_trace(const struct plot_opts *o, const dp_plot_opts *po,
		      enum dp_exit_phase *phase)
{
	const char *in = o->inputs.v[0];
	dp_rundata_trace tr = { 0 };
	double *rv = NULL;
	int err;

	err = dp_rundata_trace_read(in, NULL, 0, &tr);
	if (err == 0 && o->kind != OWNERS && tr.t == NULL)
		err = dp_error_set(DP_EINVAL, "%s: --kind %s needs a learnerd trace.csv, not a "
				   "schedule", in, kinds[o->kind]);
	if (err == 0 && o->rates)
		err = dp_rundata_rates(o->rates, &tr, &rv);
	if (err == 0)
		err = start_drawing(phase);
	if (err == 0 && o->kind == OWNERS)
		err = dp_plot_owners(&tr, o->kmax, po, o->out);
	else if (err == 0 && o->kind == OWNERS_WALL)
		err = dp_plot_owners_wall(&tr, po, o->out);
	else if (err == 0 && o->kind == SHARES)
		err = dp_plot_shares(&tr, rv, po, o->out);
	else if (err == 0)
		err = dp_plot_cdf(&tr, po, o->out);
	dp_rundata_trace_free(&tr);
	free(rv);
	return err;
}

static int plot_wall(char *const *in, size_t nin, const struct dp_config_strings *given,
		     const dp_plot_opts *po, const char *out, enum dp_exit_phase *phase)
{
	dp_rundata_wall *w = calloc(nin, sizeof(dp_rundata_wall));
	char **labels = calloc(nin, sizeof(char *));
	int err = 0;

	if (w == NULL || labels == NULL) {
		err = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nin && err == 0; i++) {
		err = dp_rundata_wall_read(in[i], &w[i]);
		labels[i] = err == 0 && given->n ? strdup(given->v[i]) : NULL;
		if (err == 0 && given->n && labels[i] == NULL)
			err = dp_error_set(DP_ENOMEM, "out of memory");
	}
	if (err == 0 && !given->n)
		err = default_labels(in, nin, labels);
	if (err == 0)
		err = start_drawing(phase);
	if (err == 0)
		err = dp_plot_psi_wall(w, (const char *const *)labels, nin, po, out);
out:
	for (size_t i = 0; i < nin; i++) {
		if (w)
			dp_rundata_wall_free(&w[i]);
		if (labels)
			free(labels[i]);
	}
	free(w);
	free(labels);
	return err;
}

static int draw(void *arg)
{
	const struct plot_opts *o = arg;
	char context[700];
	dp_plot_opts po = { .title = o->title, .width = o->width, .height = o->height,
			    .preset = o->preset,
			    .logx = o->logx, .linear = o->linear_y || o->linear_x,
			    .data_out = o->data_out, .context = context };
	enum dp_exit_phase phase = DP_EXIT_PHASE_LOAD;
	int err;

	/* The run is the trace's (psi-time: --trace); several inputs are
	 * several runs, named only by the flags. */
	if (o->inputs.n == 1 || o->trace)
		dp_rundata_run_context(o->trace ? o->trace : o->inputs.v[0], o->job, o->dataset, context,
				    sizeof(context));
	else
		snprintf(context, sizeof(context), "%s%s%s%s%s", o->job ? "job " : "",
			 o->job ? o->job : "", o->job && o->dataset ? "; " : "",
			 o->dataset ? "dataset " : "", o->dataset ? o->dataset : "");
	err = check_out(o->out);
	if (err == 0 && o->data_out)
		err = check_out(o->data_out);
	if (err == 0 && o->kind == PSI)
		err = plot_psi(o->inputs.v, o->inputs.n, &o->labels, &po, o->out, &phase);
	else if (err == 0 && o->kind == PSI_TIME)
		err = plot_psi_time(o->inputs.v[0], o->trace, &po, o->out, &phase);
	else if (err == 0 && o->kind == PSI_WALL)
		err = plot_wall(o->inputs.v, o->inputs.n, &o->labels, &po, o->out, &phase);
	else if (err == 0)
		err = plot_trace(o, &po, &phase);
	if (err != 0) {
		dp_cmd_fail("plot", "%s", dp_error_detail(err));
		return dp_exit_status(err, phase);
	}
	printf("wrote %s\n", o->out);
	if (o->data_out)
		printf("wrote %s\n", o->data_out);
	return 0;
}

int dp_cmd_plot(int argc, char **argv)
{
	struct plot_opts o = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "kind", DP_CFG_ENUM(&o.kind, kinds), .given = &o.have_kind,
		  .metavar = "KIND", .help = "owners | psi | psi-time | shares | cdf | psi-wall |\nowners-wall (required)" },
		{ .name = "out", DP_CFG_PATH(&o.out), .flags = DP_CONFIG_REQUIRED,
		  .metavar = "FILE.png", .help = "the figure: .png, .svg or .pdf (replaced only on\n"
						  "success)" },
		{ .name = "data-out", DP_CFG_PATH(&o.data_out), .metavar = "FILE.csv",
		  .help = "also write the numbers the figure draws as CSV\n(docs/plots.md)" },
		{ .name = "job", DP_CFG_STRING(&o.job), .metavar = "NAME",
		  .help = "the job named in the default title" },
		{ .name = "dataset", DP_CFG_STRING(&o.dataset), .metavar = "NAME",
		  .help = "the dataset named in the default title" },
		{ .name = "trace", DP_CFG_PATH(&o.trace), .metavar = "FILE",
		  .help = "psi-time: the learnerd trace.csv (required)" },
		{ .name = "labels", DP_CFG_STRINGS(&o.labels), .metavar = "A,B",
		  .help = "psi, psi-wall: one legend label per INPUT (default:\n"
			  "the name of each INPUT's directory; psi-wall: a\n"
			  "label given twice draws a band of repeats)" },
		{ .name = "rate", .alias = "rates", DP_CFG_STRING(&o.rates), .metavar = "R1,R2,...",
		  .help = "shares: clock rates (requests/s) of the owners\n"
			  "in natural order, or NAME=R,NAME=R,..." },
		{ .name = "kmax", DP_CFG_SIZE(&o.kmax), .min = 1, .max = INFINITY,
		  .given = &o.have_kmax, .metavar = "K",
		  .help = "owners: only iterations k <= K" },
		{ .name = "title", DP_CFG_STRING(&o.title), .metavar = "TEXT",
		  .help = "replace the default title" },
		{ .name = "size", DP_CFG_STRING(&o.size), .metavar = "WxH|column|page",
		  .help = "pixels (default 1000x600), or a printed size:\ncolumn (3.5 x 2.6 in, 7 pt "
			  "text) or page\n(7.0 x 4.3 in, 9 pt), without the default\ntitle (a PDF's "
			  "default: column; page for\ncdf and shares with rates)" },
		{ .name = "logx", DP_CFG_BOOL(&o.logx),
		  .help = "psi, psi-time: logarithmic k / time axis" },
		{ .name = "linear-y", DP_CFG_BOOL(&o.linear_y),
		  .help = "psi, psi-time: linear psi axis (default\nlogarithmic)" },
		{ .name = "linear-x", DP_CFG_BOOL(&o.linear_x),
		  .help = "cdf: linear time axis (default logarithmic)" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync plot",
		.command = true,
		.synopsis = "--kind KIND --out FILE.png [options] INPUT...",
		.summary = plot_summary,
		.epilog = "Exit status: 0 written, 1 gnuplot missing or failed, 2 bad usage or input.",
		.entries = entries,
		.validate = check_opts,
		.validate_arg = &o,
		.args = &o.inputs,
		.args_metavar = "INPUT...",
		.args_min = 1,
	};

	return dp_cmd_run(&spec, argc, argv, draw, &o);
}
