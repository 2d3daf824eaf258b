/* dpasync ledger: inspect owners' privacy ledgers without touching them. */
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tools/cmds.h"
#include "common/core/error.h"
#include "common/core/json.h"
#include "common/core/ledger.h"
#include "common/core/log.h"
#include "common/core/modelfile.h"

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
static struct json_object *dp__eps(double v)
{
	return isinf(v) ? NULL : dp_json_double(v);
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
		struct json_object *j;
		dp_ledger *l;
		uint64_t last = 0;
		int rc = dp_ledger_open(argv[i], 0, 0, NULL, DP_LEDGER_READONLY | DP_LEDGER_ALLOW_INF, &l);

		if (rc != 0) {
			dp_tool_fail("ledger", "%s", dp_error_detail(rc));
			return rc == DP_ENOMEM || rc == DP_EIO ? 1 : 2;
		}
		j = json_object_new_object();
		if (j == NULL) {
			dp_ledger_close(l);
			dp_tool_fail("ledger", "out of memory");
			return 1;
		}
		json_object_object_add(j, "path", json_object_new_string(argv[i]));
		json_object_object_add(j, "identity", json_object_new_string(dp_ledger_identity(l)));
		json_object_object_add(j, "epsilon_cap", dp__eps(dp_ledger_cap(l)));
		json_object_object_add(j, "epsilon_spent", dp__eps(dp_ledger_spent(l)));
		json_object_object_add(j, "epsilon_left", dp__eps(dp_ledger_left(l)));
		json_object_object_add(j, "answers", json_object_new_uint64(dp_ledger_answers(l)));
		json_object_object_add(j, "answers_cap", json_object_new_uint64(dp_ledger_answers_cap(l)));
		json_object_object_add(j, "last_k", dp_ledger_last_k(l, &last) == 0 && dp_ledger_answers(l) > 0
				       ? json_object_new_uint64(last) : NULL);
		json_object_object_add(j, "torn_bytes", json_object_new_uint64(dp_ledger_torn_bytes(l)));
		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(j);
		dp_ledger_close(l);
	}
	return 0;
}
