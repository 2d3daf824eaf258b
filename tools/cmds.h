/* SPDX-License-Identifier: Apache-2.0 */
/* The subcommands of the dpasync tool and what they share.
 *
 * Each tools/cmd_<name>.c is one subcommand, dp_cmd_<name>: it takes argv
 * after "dpasync" (argv[0] is the subcommand's name) and returns the
 * process exit status, dp_exit_status() of the error and of the phase it
 * failed in (common/core/exit.h, docs/design.md §10 "Exit status").  A
 * subcommand declares its options as a table (a command spec of
 * common/net/config.h) and hands it to dp_cmd_run with the function that
 * does the work; the dispatcher, tools/dpasync.c, implements the two
 * helpers below. */
#ifndef DP_TOOLS_CMDS_H
#define DP_TOOLS_CMDS_H

struct dp_config_spec;

int dp_cmd_gen(int argc, char **argv);
int dp_cmd_prep(int argc, char **argv);
int dp_cmd_sim(int argc, char **argv);
/* dpasync sim --mode p2p (tools/cmd_sim_p2p.c), called by dp_cmd_sim. */
int dp_cmd_sim_p2p(int argc, char **argv);
int dp_cmd_forecast(int argc, char **argv);
int dp_cmd_eval(int argc, char **argv);
int dp_cmd_graph(int argc, char **argv);
int dp_cmd_certs(int argc, char **argv);
int dp_cmd_ledger(int argc, char **argv);
/* dpasync ledger raise-lifetime | lower-lifetime (tools/cmd_ledger_lifetime.c),
 * called by dp_cmd_ledger with argv[0] the verb. */
int dp_cmd_ledger_lifetime(int argc, char **argv);
int dp_cmd_plot(int argc, char **argv);
int dp_cmd_report(int argc, char **argv);

/* Load a subcommand's settings from argv with its table (spec->command
 * set; spec->program is "dpasync <name>"), call run(arg) with the fields
 * and *spec->args holding them, free the settings (dp_config_free) and
 * return run's exit status.  Without a run: 0 after the help text went to
 * stdout, or the status of the error after one line on stderr ("dpasync
 * <name>: bad usage: ... (try dpasync <name> --help)": 2; out of memory,
 * stdout not writable: 1). */
int dp_cmd_run(const struct dp_config_spec *spec, int argc, char **argv, int (*run)(void *arg),
	       void *arg);

/* Print "dpasync <cmd>: <message>" on stderr, one line. */
void dp_cmd_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
