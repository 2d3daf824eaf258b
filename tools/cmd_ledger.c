/* dpasync ledger: inspect owners' privacy ledgers without touching them. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "error.h"
#include "ledger.h"
#include "log.h"

static const char dp__ledger_usage[] =
	"usage: dpasync ledger LEDGER...\n"
	"\n"
	"Verify each ledger (header and every record's CRC, sequence and totals)\n"
	"read-only and without taking its lock, and print one JSON line per file:\n"
	"identity, epsilon cap/spent/left, answers and answer cap, the last request\n"
	"id answered, and the bytes of a torn final record (which ownerd drops on\n"
	"its next start).  A corrupt ledger is one error line and exit 2.\n"
	"\n"
	"  --help   this text\n";

/* JSON has no infinity: an unlimited (testing) ledger prints null. */
static void dp__num(const char *key, double v, int last)
{
	if (isinf(v))
		printf("\"%s\": null%s", key, last ? "" : ", ");
	else
		printf("\"%s\": %.9f%s", key, v, last ? "" : ", ");
}

int dp_cmd_ledger(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	/* The summary is the output; the ledger's own open/repair log lines are not. */
	dp_log_set_level(DP_LOG_WARN);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(dp__ledger_usage, stdout);
			return 0;
		}
		dp_tool_fail("ledger", "bad usage: unknown option '%s' (try dpasync ledger --help)",
			     argv[optind - 1]);
		return 2;
	}
	if (optind >= argc) {
		dp_tool_fail("ledger", "no ledger file given (try dpasync ledger --help)");
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		dp_ledger *l;
		uint64_t last = 0;
		int rc = dp_ledger_open(argv[i], 0, 0, NULL, DP_LEDGER_READONLY | DP_LEDGER_ALLOW_INF, &l);

		if (rc != 0) {
			dp_tool_fail("ledger", "%s", dp_error_detail(rc));
			return rc == DP_ENOMEM || rc == DP_EIO ? 1 : 2;
		}
		printf("{\"path\": \"");
		for (const char *s = argv[i]; *s; s++)
			printf(*s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
		printf("\", \"identity\": \"");
		for (const char *s = dp_ledger_identity(l); *s; s++)
			printf(*s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
		printf("\", ");
		dp__num("epsilon_cap", dp_ledger_cap(l), 0);
		dp__num("epsilon_spent", dp_ledger_spent(l), 0);
		dp__num("epsilon_left", dp_ledger_left(l), 0);
		printf("\"answers\": %llu, \"answers_cap\": %llu, ",
		       (unsigned long long)dp_ledger_answers(l), (unsigned long long)dp_ledger_answers_cap(l));
		if (dp_ledger_last_k(l, &last) == 0 && dp_ledger_answers(l) > 0)
			printf("\"last_k\": %llu, ", (unsigned long long)last);
		else
			printf("\"last_k\": null, ");
		printf("\"torn_bytes\": %zu}\n", dp_ledger_torn_bytes(l));
		dp_ledger_close(l);
	}
	return 0;
}
