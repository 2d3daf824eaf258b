/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync: the offline tool.  Dispatches to one file per subcommand. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/log.h"
#include "common/net/config.h"
#include "tools/cmds.h"

static const struct {
	const char *name;
	int (*run)(int, char **);
	const char *what;
} cmds[] = {
	{ "gen", dp_cmd_gen, "generate synthetic data split into owner CSVs" },
	{ "prep", dp_cmd_prep, "build a feature schema from a public sample and apply it to owner files" },
	{ "sim", dp_cmd_sim, "in-process run of async | sync1 | sync2 (R repeats, psi statistics) or p2p" },
	{ "forecast", dp_cmd_forecast, "settings and predicted psi of a job from a public sample" },
	{ "eval", dp_cmd_eval, "f and psi of a saved model against data files; --peer: per-agent test error" },
	{ "graph", dp_cmd_graph, "peer graph file from target-model angles or k-NN on ratings" },
	{ "certs", dp_cmd_certs, "CA, learner and owner certificates for a deployment" },
	{ "ledger", dp_cmd_ledger, "verify and summarise owners' privacy ledgers; raise or lower a lifetime cap" },
	{ "plot", dp_cmd_plot, "PNG figures of a trace, schedule or psi.csv (gnuplot)" },
	{ "report", dp_cmd_report, "report.md with figures and key numbers of one run's directory" },
};

void dp_cmd_fail(const char *cmd, const char *fmt, ...)
{
	char program[64];
	va_list ap;

	snprintf(program, sizeof(program), "dpasync %s", cmd);
	va_start(ap, fmt);
	dp_log_vplain(program, fmt, ap);
	va_end(ap);
}

/* dp_cmd_run's loading: true to run, false to return *status at once. */
static bool load_args(const struct dp_config_spec *spec, int argc, char **argv, int *status)
{
	enum dp_config_action action = DP_CONFIG_RUN;
	int rc;

	rc = dp_config_load(spec, argc, argv, &action);
	if (rc == DP_ENOMEM)
		dp_log_plain(spec->program, "out of memory");
	else if (rc != 0)
		dp_log_plain(spec->program, "bad usage: %s (try %s --help)", dp_error_detail(rc),
			     spec->program);
	if (rc != 0) {
		*status = dp_exit_status(rc, DP_EXIT_PHASE_ARGS);
		return false;
	}
	if (action == DP_CONFIG_HELP) {
		rc = dp_config_print_help(spec, stdout);
		if (rc != 0)
			dp_log_plain(spec->program, "%s", dp_error_detail(rc));
		*status = dp_exit_status(rc, DP_EXIT_PHASE_RUN);
		return false;
	}
	return true;
}

int dp_cmd_run(const struct dp_config_spec *spec, int argc, char **argv, int (*run)(void *arg),
	       void *arg)
{
	int status;

	DP_REQUIRE(spec != NULL && spec->command && argc >= 1 && argv != NULL && run != NULL);
	if (!load_args(spec, argc, argv, &status))
		return status;
	status = run(arg);
	dp_config_free(spec);
	return status;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: dpasync <command> [options]   (dpasync <command> --help for details)\n\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(out, "  %-9s %s\n", cmds[i].name, cmds[i].what);
	fprintf(out, "\n  --help     this text\n  --version  print the version\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return DP_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("dpasync %s\n", DP_VERSION);
		return DP_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "dpasync: unknown command '%s' (try dpasync --help)\n", argv[1]);
	return dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
}
