/* dpasync plot: PNG figures of a run (trace, schedule, psi) drawn by
 * gnuplot; the figures themselves are in plotting.c. */
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cmds.h"
#include "common/core/error.h"
#include "common/core/num.h"
#include "tools/lib/plot.h"

static const char dp__plot_usage[] =
	"usage: dpasync plot --kind KIND --out FILE.png [options] INPUT...\n"
	"\n"
	"Draw one PNG figure of a learnerd run or a sim run with gnuplot (found on\n"
	"PATH; Debian: gnuplot-nox).  Owners are ordered by name in natural order\n"
	"(owner-2 before owner-10); owner j of a schedule is the j-th data file.\n"
	"\n"
	"Kinds and their inputs:\n"
	"  owners    INPUT = a learnerd trace.csv or a sim schedule.txt.  The owner\n"
	"            of each iteration against k (the paper's Fig. 3).\n"
	"            --kmax K      only iterations k <= K\n"
	"  psi       INPUT... = one or more sim psi.csv.  Median and 25-75 % band\n"
	"            of psi = f(theta_L)/f(theta*) - 1 over the runs against k\n"
	"            (the paper's Fig. 2); summary.json next to a psi.csv adds the\n"
	"            settings to the title.\n"
	"            --labels A,B  one legend label per INPUT (default: the name of\n"
	"                          each INPUT's directory)\n"
	"  psi-time  INPUT = the psi.csv of `dpasync sim --schedule S` where S is\n"
	"            the owner order of the trace (`dpasync report` writes it as\n"
	"            report-schedule.txt; data files in the owners' natural order),\n"
	"            and --trace trace.csv.  psi at iteration k against the time the\n"
	"            trace applied iteration k.  With --epsilon inf the simulated\n"
	"            theta_L equals learnerd's; with noise psi is that of the same\n"
	"            owner order with other noise draws.  The schedule.txt next to\n"
	"            INPUT must equal the trace's owner order.\n"
	"            --trace FILE  the learnerd trace.csv (required)\n"
	"  shares    INPUT = a learnerd trace.csv.  Each owner's share of the\n"
	"            iterations against its median query round trip and, with\n"
	"            --rates, against its clock rate.\n"
	"            --rates R1,R2,...  clock rates (requests/s) of the owners in\n"
	"                               natural order, or NAME=R,NAME=R,...\n"
	"  cdf       INPUT = a learnerd trace.csv.  Empirical CDFs of the request\n"
	"            wait in the learner's queue and of the query round trip, per\n"
	"            owner and overall (log time axis).\n"
	"\n"
	"Options:\n"
	"  --kind KIND       owners | psi | psi-time | shares | cdf (required)\n"
	"  --out FILE.png    the figure (required; replaced only on success)\n"
	"  --title TEXT      replace the default title\n"
	"  --size WxH        pixels (default 1000x600)\n"
	"  --logx            psi, psi-time: logarithmic k / time axis\n"
	"  --linear-y        psi, psi-time: linear psi axis (default logarithmic)\n"
	"  --linear-x        cdf: linear time axis (default logarithmic)\n"
	"  --help            this text\n"
	"Exit status: 0 written, 1 gnuplot missing or failed, 2 bad usage or input.\n";

enum dp__kind { DP__OWNERS, DP__PSI, DP__PSI_TIME, DP__SHARES, DP__CDF };

static const char *const dp__kinds[] = { "owners", "psi", "psi-time", "shares", "cdf" };

/* Set once the inputs are read and drawing starts: from then on only
 * DP_EINVAL (inputs that do not fit together) is the user's input. */
static int dp__drawing;

/* Exit status for a library error: input problems are 2, the rest 1. */
static int dp__status(int err)
{
	if (dp__drawing)
		return err == DP_EINVAL ? 2 : 1;
	return err == DP_EINVAL || err == DP_EFORMAT || err == DP_ENOENT ? 2 : 1;
}

/* Called between reading the inputs and drawing. */
static int dp__start_drawing(void)
{
	dp__drawing = 1;
	return dp_plot_gnuplot_check();
}

/* --rates: N values in natural order, or NAME=RATE pairs covering every owner. */
static int dp__rates(const char *arg, const dp_plot_trace *tr, double **out)
{
	double *r = NULL;
	size_t n = 0;
	int err;

	if (strchr(arg, '=') == NULL) {
		err = dp_num_parse_double_list("--rates", arg, 0, &r, &n);
		if (err != 0)
			return err;
		if (n != tr->N) {
			free(r);
			return dp_error_set(DP_EINVAL, "--rates has %zu values for the trace's %zu owners", n, tr->N);
		}
	} else {
		char *copy = strdup(arg), *save = NULL;
		r = malloc(tr->N * sizeof(double));
		if (copy == NULL || r == NULL) {
			free(copy);
			free(r);
			return dp_error_set(DP_ENOMEM, "out of memory");
		}
		for (size_t i = 0; i < tr->N; i++)
			r[i] = -1;
		for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(tok, '=');
			size_t i;
			if (eq == NULL) {
				err = dp_error_set(DP_EINVAL, "--rates: expected NAME=RATE, got '%s'", tok);
				goto bad;
			}
			*eq = '\0';
			for (i = 0; i < tr->N && strcmp(tr->names[i], tok) != 0; i++)
				;
			if (i == tr->N) {
				err = dp_error_set(DP_EINVAL, "--rates: '%s' is not an owner of the trace", tok);
				goto bad;
			}
			err = dp_num_parse_double("--rates", eq + 1, 0, &r[i]);
			if (err != 0)
				goto bad;
		}
		for (size_t i = 0; i < tr->N; i++)
			if (r[i] < 0) {
				err = dp_error_set(DP_EINVAL, "--rates: no rate for owner '%s'", tr->names[i]);
				goto bad;
			}
		free(copy);
		goto check;
bad:
		free(copy);
		free(r);
		return err;
	}
check:
	for (size_t i = 0; i < tr->N; i++)
		if (!(r[i] > 0)) {
			free(r);
			return dp_error_set(DP_EINVAL, "--rates must be > 0 (got %g)", r[i]);
		}
	*out = r;
	return 0;
}

/* --size WxH (or W,H). */
static int dp__size(const char *arg, unsigned *w, unsigned *h)
{
	char *end;
	unsigned long a, b;

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
	return dp_error_set(DP_EINVAL, "--size: expected WxH with 300 <= W <= 8000 and 200 <= H <= 8000, got '%s'", arg);
}

/* The directory that will hold `out` must exist and be writable. */
static int dp__check_out(const char *out)
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

/* Default legend label of a psi.csv: its directory's name. */
static char *dp__dir_label(const char *path)
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

static int dp__plot_psi(char **in, size_t nin, const char *labels_arg, const dp_plot_opts *po, const char *out)
{
	dp_plot_psi *ps = calloc(nin, sizeof(dp_plot_psi));
	char **labels = calloc(nin, sizeof(char *)), note[300];
	size_t runs;
	int err = 0;

	if (ps == NULL || labels == NULL) {
		err = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	if (labels_arg) {
		char *copy = strdup(labels_arg), *save = NULL, *tok;
		size_t n = 0;
		if (copy == NULL) {
			err = dp_error_set(DP_ENOMEM, "out of memory");
			goto out;
		}
		for (tok = strtok_r(copy, ",", &save); tok && n < nin; tok = strtok_r(NULL, ",", &save))
			labels[n++] = strdup(tok);
		if (n != nin || tok != NULL)
			err = dp_error_set(DP_EINVAL, "--labels: expected %zu comma-separated labels, one per psi.csv", nin);
		free(copy);
		if (err)
			goto out;
	}
	for (size_t i = 0; i < nin; i++) {
		err = dp_plot_psi_read(in[i], &ps[i]);
		if (err != 0)
			goto out;
		if (labels[i] == NULL && (nin > 1) && (labels[i] = dp__dir_label(in[i])) == NULL) {
			err = dp_error_set(DP_ENOMEM, "out of memory");
			goto out;
		}
	}
	dp_plot_sim_note(in[0], note, sizeof(note), &runs);
	err = dp__start_drawing();
	if (err == 0)
		err = dp_plot_psi_k(ps, (const char *const *)labels, nin, nin == 1 && note[0] ? note : NULL, po, out);
out:
	for (size_t i = 0; i < nin; i++) {
		if (ps)
			dp_plot_psi_free(&ps[i]);
		if (labels)
			free(labels[i]);
	}
	free(ps);
	free(labels);
	return err;
}

static int dp__plot_psi_time(const char *psi_path, const char *trace_path, const dp_plot_opts *po, const char *out)
{
	dp_plot_trace tr = { 0 };
	dp_plot_psi ps = { 0 };
	char sched[4096], dir[4096], note[300];
	size_t runs = 0;
	int err;

	err = dp_plot_trace_read(trace_path, NULL, 0, &tr);
	if (err == 0 && tr.t == NULL)
		err = dp_error_set(DP_EINVAL, "--trace %s: a schedule, not a learnerd trace.csv", trace_path);
	if (err == 0)
		err = dp_plot_psi_read(psi_path, &ps);
	if (err == 0) {
		snprintf(dir, sizeof(dir), "%s", psi_path);
		snprintf(sched, sizeof(sched), "%s/schedule.txt", dirname(dir));
		if (access(sched, F_OK) != 0)
			err = dp_error_set(DP_EINVAL, "%s is missing: cannot check that %s was simulated on the "
					   "trace's owner order (run dpasync sim --schedule)", sched, psi_path);
		else
			err = dp_plot_schedule_check(sched, &tr);
		if (err == DP_EINVAL && access(sched, F_OK) == 0) {
			char why[512];
			snprintf(why, sizeof(why), "%s", dp_error_detail(err));
			err = dp_error_set(DP_EINVAL, "%s was not simulated on this trace's owner order: %s",
					   psi_path, why);
		}
	}
	if (err == 0) {
		dp_plot_sim_note(psi_path, note, sizeof(note), &runs);
		err = dp__start_drawing();
	}
	if (err == 0)
		err = dp_plot_psi_time(&ps, &tr, runs, po, out);
	dp_plot_trace_free(&tr);
	dp_plot_psi_free(&ps);
	return err;
}

int dp_cmd_plot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "kind", required_argument, NULL, 'k' },
		{ "out", required_argument, NULL, 'o' },
		{ "trace", required_argument, NULL, 't' },
		{ "labels", required_argument, NULL, 'L' },
		{ "rates", required_argument, NULL, 'r' },
		{ "kmax", required_argument, NULL, 'K' },
		{ "title", required_argument, NULL, 'T' },
		{ "size", required_argument, NULL, 's' },
		{ "logx", no_argument, NULL, 'x' },
		{ "linear-y", no_argument, NULL, 'y' },
		{ "linear-x", no_argument, NULL, 'X' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *trace = NULL, *labels = NULL, *rates = NULL;
	dp_plot_opts po = { 0 };
	dp_plot_trace tr = { 0 };
	double *rv = NULL;
	size_t kmax = 0, nin;
	int kind = -1, c, err = 0, linear_y = 0, linear_x = 0, have_kmax = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			for (size_t i = 0; i < sizeof(dp__kinds) / sizeof(dp__kinds[0]); i++)
				if (strcmp(optarg, dp__kinds[i]) == 0)
					kind = (int)i;
			if (kind < 0)
				err = dp_error_set(DP_EINVAL, "--kind: expected owners, psi, psi-time, shares or cdf, got '%s'",
						   optarg);
			break;
		case 'o': out = optarg; break;
		case 't': trace = optarg; break;
		case 'L': labels = optarg; break;
		case 'r': rates = optarg; break;
		case 'K':
			err = dp_num_parse_size("--kmax", optarg, &kmax);
			if (err == 0 && kmax == 0)
				err = dp_error_set(DP_EINVAL, "--kmax must be >= 1");
			have_kmax = 1;
			break;
		case 'T': po.title = optarg; break;
		case 's': err = dp__size(optarg, &po.width, &po.height); break;
		case 'x': po.logx = 1; break;
		case 'y': linear_y = 1; break;
		case 'X': linear_x = 1; break;
		case 'h': fputs(dp__plot_usage, stdout); return 0;
		default:
			dp_tool_fail("plot", "bad usage: unknown option or missing value in '%s' (try dpasync plot --help)",
				     argv[optind - 1]);
			return 2;
		}
		if (err) {
			dp_tool_fail("plot", "%s", dp_error_detail(err));
			return 2;
		}
	}
	nin = (size_t)(argc - optind);
#define DP__REQUIRE(cond, ...) do { if (!(cond)) { dp_tool_fail("plot", __VA_ARGS__); return 2; } } while (0)
	DP__REQUIRE(kind >= 0, "--kind is required: owners, psi, psi-time, shares or cdf (try dpasync plot --help)");
	DP__REQUIRE(out != NULL, "--out FILE.png is required");
	DP__REQUIRE(nin >= 1, "no INPUT given for --kind %s (try dpasync plot --help)", dp__kinds[kind]);
	DP__REQUIRE(kind == DP__PSI || nin == 1, "--kind %s takes one INPUT, got %zu", dp__kinds[kind], nin);
	DP__REQUIRE(!have_kmax || kind == DP__OWNERS, "--kmax applies to --kind owners only");
	DP__REQUIRE(!labels || kind == DP__PSI, "--labels applies to --kind psi only");
	DP__REQUIRE(!rates || kind == DP__SHARES, "--rates applies to --kind shares only");
	DP__REQUIRE(!trace || kind == DP__PSI_TIME, "--trace applies to --kind psi-time only");
	DP__REQUIRE(trace || kind != DP__PSI_TIME, "--kind psi-time needs --trace trace.csv");
	DP__REQUIRE(!(po.logx || linear_y) || kind == DP__PSI || kind == DP__PSI_TIME,
		    "--logx and --linear-y apply to --kind psi and psi-time only");
	DP__REQUIRE(!linear_x || kind == DP__CDF, "--linear-x applies to --kind cdf only");
#undef DP__REQUIRE
	po.linear = linear_y || linear_x;
	dp__drawing = 0;
	err = dp__check_out(out);
	if (err != 0)
		goto out;
	switch (kind) {
	case DP__PSI:
		err = dp__plot_psi(argv + optind, nin, labels, &po, out);
		break;
	case DP__PSI_TIME:
		err = dp__plot_psi_time(argv[optind], trace, &po, out);
		break;
	default:
		err = dp_plot_trace_read(argv[optind], NULL, 0, &tr);
		if (err != 0)
			break;
		if (kind != DP__OWNERS && tr.t == NULL) {
			err = dp_error_set(DP_EINVAL, "%s: --kind %s needs a learnerd trace.csv, not a schedule",
					   argv[optind], dp__kinds[kind]);
			break;
		}
		if (rates && (err = dp__rates(rates, &tr, &rv)) != 0)
			break;
		if ((err = dp__start_drawing()) != 0)
			break;
		if (kind == DP__OWNERS)
			err = dp_plot_owners(&tr, kmax, &po, out);
		else if (kind == DP__SHARES)
			err = dp_plot_shares(&tr, rv, &po, out);
		else
			err = dp_plot_cdf(&tr, &po, out);
		break;
	}
out:
	dp_plot_trace_free(&tr);
	free(rv);
	if (err != 0) {
		dp_tool_fail("plot", "%s", dp_error_detail(err));
		return dp__status(err);
	}
	printf("wrote %s\n", out);
	return 0;
}
