/* dpasync: the offline tool.  Dispatches to one file per subcommand. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tools/cmds.h"

static const struct {
	const char *name;
	int (*run)(int, char **);
	const char *what;
} dp__cmds[] = {
	{ "gen", dp_cmd_gen, "generate synthetic data split into owner CSVs" },
	{ "prep", dp_cmd_prep, "build a feature schema from a public sample and apply it to owner files" },
	{ "sim", dp_cmd_sim, "in-process run of async | sync1 | sync2, R repeats, psi statistics" },
	{ "eval", dp_cmd_eval, "f and psi of a saved model against data files" },
	{ "certs", dp_cmd_certs, "CA, learner and owner certificates for a deployment" },
	{ "ledger", dp_cmd_ledger, "verify and summarise owners' privacy ledgers (read-only)" },
	{ "plot", dp_cmd_plot, "PNG figures of a trace, schedule or psi.csv (gnuplot)" },
	{ "report", dp_cmd_report, "report.md with figures and key numbers of one run's directory" },
};

void dp_tool_fail(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "dpasync %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void dp__usage(FILE *out)
{
	fprintf(out, "usage: dpasync <command> [options]   (dpasync <command> --help for details)\n\n");
	for (size_t i = 0; i < sizeof(dp__cmds) / sizeof(dp__cmds[0]); i++)
		fprintf(out, "  %-9s %s\n", dp__cmds[i].name, dp__cmds[i].what);
	fprintf(out, "\n  --help     this text\n  --version  print the version\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		dp__usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		dp__usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("dpasync %s\n", DP_VERSION);
		return 0;
	}
	/* Subcommands report bad options themselves, in one line. */
	opterr = 0;
	for (size_t i = 0; i < sizeof(dp__cmds) / sizeof(dp__cmds[0]); i++)
		if (strcmp(argv[1], dp__cmds[i].name) == 0)
			return dp__cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "dpasync: unknown command '%s' (try dpasync --help)\n", argv[1]);
	return 2;
}
