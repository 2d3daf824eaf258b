/* Subcommands of the dpasync tool, one file each (cmd_<name>.c).  Each takes
 * argv after the subcommand name (argv[0] is the subcommand) and returns the
 * process exit status: 0 success, 1 runtime failure, 2 bad usage/input. */
#ifndef DP_TOOLS_CMDS_H
#define DP_TOOLS_CMDS_H

int dp_cmd_gen(int argc, char **argv);
int dp_cmd_prep(int argc, char **argv);
int dp_cmd_sim(int argc, char **argv);
int dp_cmd_eval(int argc, char **argv);
int dp_cmd_certs(int argc, char **argv);
int dp_cmd_ledger(int argc, char **argv);
int dp_cmd_plot(int argc, char **argv);
int dp_cmd_report(int argc, char **argv);

/* Print "dpasync <cmd>: <message>" on stderr, one line. */
void dp_tool_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
