/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync ledger: inspect owners' privacy ledgers without touching them. */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/json.h"
#include "common/core/ledger.h"
#include "common/core/ledgerset.h"
#include "common/core/log.h"
#include "common/core/nano.h"
#include "common/net/config.h"
#include "tools/cmds.h"

/* JSON has no infinity: an unlimited (testing) ledger prints null. */
static int add_eps(struct json_object *j, const char *key, double v)
{
	if (!isinf(v))
		return dp_json_add(j, key, dp_json_double(v));
	return dp_json_add_null(j, key);
}

/* The summary of one open ledger as one JSON line on stdout. */
static int print_summary(const char *path, dp_ledger *l)
{
	struct json_object *j = json_object_new_object();
	uint64_t last = 0;
	bool has_last = dp_ledger_last_k(l, &last) == 0 && dp_ledger_answers(l) > 0;
	int rc;

	if (j == NULL)
		return DP_ENOMEM;
	rc = dp_json_add(j, "path", json_object_new_string(path));
	if (rc == 0)
		rc = dp_json_add(j, "identity", json_object_new_string(dp_ledger_identity(l)));
	if (rc == 0)
		rc = add_eps(j, "epsilon_cap", dp_ledger_cap(l));
	if (rc == 0)
		rc = add_eps(j, "epsilon_spent", dp_ledger_spent(l));
	if (rc == 0)
		rc = add_eps(j, "epsilon_left", dp_ledger_left(l));
	if (rc == 0)
		rc = dp_json_add(j, "answers", json_object_new_uint64(dp_ledger_answers(l)));
	if (rc == 0)
		rc = dp_json_add(j, "answers_cap", json_object_new_uint64(dp_ledger_answers_cap(l)));
	if (rc == 0 && has_last)
		rc = dp_json_add(j, "last_k", json_object_new_uint64(last));
	else if (rc == 0)
		rc = dp_json_add_null(j, "last_k");
	if (rc == 0)
		rc = dp_json_add(j, "torn_bytes", json_object_new_uint64(dp_ledger_torn_bytes(l)));
	if (rc == 0)
		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(j);
	return rc;
}

/* One JSON line for a ledger directory: the lifetime totals and one entry
 * per job (docs/ledger.md §8). */
static int print_set(const char *path, const dp_ledgerset *s)
{
	struct json_object *j = json_object_new_object(), *jobs = json_object_new_array();
	uint64_t answers = 0;
	int rc = 0;

	if (j == NULL || jobs == NULL) {
		json_object_put(j);
		json_object_put(jobs);
		return DP_ENOMEM;
	}
	for (size_t i = 0; i < dp_ledgerset_count(s) && rc == 0; i++) {
		const dp_ledgerset_job *e = dp_ledgerset_at(s, i);
		struct json_object *o = json_object_new_object();

		if (o == NULL || json_object_array_add(jobs, o) != 0) {
			json_object_put(o);
			rc = DP_ENOMEM;
			break;
		}
		answers += e->answers;
		/* "job=ID" from the header, or "job-sha256=HEX" for a long id. */
		rc = dp_json_add(o, "job", json_object_new_string(strncmp(e->job, "job=", 4) == 0 ?
								  e->job + 4 : e->job));
		if (rc == 0)
			rc = dp_json_add(o, "path", json_object_new_string(e->path));
		if (rc == 0)
			rc = add_eps(o, "epsilon_cap", dp_nano_to_eps(e->cap_nano));
		if (rc == 0)
			rc = add_eps(o, "epsilon_spent", dp_nano_to_eps(e->spent_nano));
		if (rc == 0)
			rc = dp_json_add(o, "answers", json_object_new_uint64(e->answers));
		if (rc == 0)
			rc = dp_json_add(o, "answers_cap", json_object_new_uint64(e->answers_cap));
		if (rc == 0)
			rc = dp_json_add(o, "torn_bytes", json_object_new_uint64(e->torn));
	}
	if (rc == 0)
		rc = dp_json_add(j, "path", json_object_new_string(path));
	if (rc == 0)
		rc = dp_json_add(j, "format_version", json_object_new_uint64(dp_ledgerset_format(s)));
	if (rc == 0)
		rc = dp_json_add(j, "jobs_count", json_object_new_uint64(dp_ledgerset_count(s)));
	if (rc == 0)
		rc = add_eps(j, "lifetime_epsilon_spent",
			     dp_nano_to_eps(dp_ledgerset_spent_except(s, NULL)));
	if (rc == 0)
		rc = dp_json_add(j, "lifetime_answers", json_object_new_uint64(answers));
	if (rc == 0) {
		rc = dp_json_add(j, "jobs", jobs);
		jobs = NULL;
	}
	if (rc == 0)
		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(jobs);
	json_object_put(j);
	return rc;
}

static int summarise_dir(const char *path)
{
	dp_ledgerset *s;
	int rc = dp_ledgerset_open(path, NULL, DP_LEDGERSET_READONLY, &s);

	if (rc != 0) {
		dp_cmd_fail("ledger", "%s", dp_error_detail(rc));
		return dp_exit_status(rc, DP_EXIT_PHASE_LOAD);
	}
	rc = print_set(path, s);
	dp_ledgerset_close(s);
	if (rc != 0) {
		dp_cmd_fail("ledger", "out of memory");
		return dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
	}
	return 0;
}

/* Each ledger named on the command line, in order, until one fails. */
static int summarise(void *arg)
{
	const struct dp_config_strings *files = arg;
	int status = 0;

	/* The summary is the output; the ledger's own open/repair log lines are not. */
	dp_log_set_level(DP_LOG_WARN);
	for (size_t i = 0; i < files->n && status == 0; i++) {
		struct stat st;
		dp_ledger *l;
		int rc;

		if (stat(files->v[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			status = summarise_dir(files->v[i]);
			continue;
		}
		rc = dp_ledger_open(files->v[i], 0, 0, NULL, DP_LEDGER_READONLY | DP_LEDGER_ALLOW_INF,
				    &l);

		if (rc != 0) {
			dp_cmd_fail("ledger", "%s", dp_error_detail(rc));
			status = dp_exit_status(rc, DP_EXIT_PHASE_LOAD);
			break;
		}
		rc = print_summary(files->v[i], l);
		dp_ledger_close(l);
		if (rc != 0) {
			dp_cmd_fail("ledger", "out of memory");
			status = dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
		}
	}
	return status;
}

int dp_cmd_ledger(int argc, char **argv)
{
	struct dp_config_strings files = { 0 };
	const struct dp_config_entry entries[] = { DP_CONFIG_END };
	const struct dp_config_spec spec = {
		.program = "dpasync ledger",
		.command = true,
		.synopsis = "LEDGER|DIR...",
		.summary = "Verify each ledger (header and every record's CRC, sequence and totals)\n"
			   "read-only and without taking its lock, and print one JSON line per file:\n"
			   "identity, epsilon cap/spent/left, answers and answer cap, the last request\n"
			   "id answered, and the bytes of a torn final record (which ownerd drops on\n"
			   "its next start).  A corrupt ledger is one error line and exit 2.\n"
			   "For an ownerd ledger directory (--ledger DIR) the line holds its format\n"
			   "version (as found: ownerd migrates an older directory, this command only\n"
			   "reads it), every job's totals and the lifetime totals over all jobs.",
		.entries = entries,
		.args = &files,
		.args_metavar = "LEDGER...",
		.args_min = 1,
	};

	return dp_cmd_run(&spec, argc, argv, summarise, &files);
}
