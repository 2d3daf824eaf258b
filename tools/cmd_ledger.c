/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync ledger: inspect owners' privacy ledgers without touching them
 * (JSON lines, or text with --text); `dpasync ledger raise-lifetime` and
 * `lower-lifetime` are tools/cmd_ledger_lifetime.c. */
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

struct ledger_opts {
	bool text;                      /* --text: lines for a human */
	struct dp_config_strings files;
};

/* JSON has no infinity: an unlimited (testing) ledger prints null. */
static int add_eps(struct json_object *j, const char *key, double v)
{
	if (!isinf(v))
		return dp_json_add(j, key, dp_json_double(v));
	return dp_json_add_null(j, key);
}

/* A job's mechanism and its unit (docs/ledger.md §2): "mechanism" and,
 * for a Gaussian job, its delta and the sampler's slack per answer. */
static int add_mechanism(struct json_object *j, unsigned unit, double delta, uint64_t slack)
{
	bool rho = unit == DP_LEDGER_UNIT_RHO;
	int rc;

	rc = dp_json_add(j, "mechanism", json_object_new_string(rho ? "gaussian" : "laplace"));
	if (rc == 0)
		rc = dp_json_add(j, "unit", json_object_new_string(rho ? "rho" : "epsilon"));
	if (rc == 0 && rho)
		rc = dp_json_add(j, "delta", dp_json_double(delta));
	if (rc == 0 && rho)
		rc = add_eps(j, "slack_epsilon", dp_nano_to_eps(slack));
	return rc;
}

/* Key `what` ("cap", "spent", "left") in the job's unit: "epsilon_cap"
 * or "rho_cap". */
static int add_amount(struct json_object *j, unsigned unit, const char *what, double v)
{
	char key[32];

	snprintf(key, sizeof(key), "%s_%s", unit == DP_LEDGER_UNIT_RHO ? "rho" : "epsilon", what);
	return add_eps(j, key, v);
}

/* The summary of one open ledger as one JSON line on stdout. */
static int print_summary(const char *path, dp_ledger *l)
{
	struct json_object *j = json_object_new_object();
	uint64_t last = 0;
	bool has_last = dp_ledger_last_k(l, &last) == 0 && dp_ledger_answers(l) > 0;
	unsigned u = dp_ledger_unit(l);
	int rc;

	if (j == NULL)
		return DP_ENOMEM;
	rc = dp_json_add(j, "path", json_object_new_string(path));
	if (rc == 0)
		rc = dp_json_add(j, "identity", json_object_new_string(dp_ledger_identity(l)));
	if (rc == 0)
		rc = add_mechanism(j, u, dp_ledger_delta(l), dp_ledger_slack_nano(l));
	if (rc == 0)
		rc = add_amount(j, u, "cap", dp_ledger_cap(l));
	if (rc == 0)
		rc = add_amount(j, u, "spent", dp_ledger_spent(l));
	if (rc == 0)
		rc = add_amount(j, u, "left", dp_ledger_left(l));
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

/* The lifetime cap's changes as a JSON array (docs/ledger.md §11). */
static int add_changes(struct json_object *j, const dp_ledgerset *s)
{
	struct json_object *arr = json_object_new_array();
	int rc = arr ? 0 : DP_ENOMEM;

	for (size_t i = 0; i < dp_ledgerset_lifetime_count(s) && rc == 0; i++) {
		const dp_ledgerset_change *c = dp_ledgerset_lifetime_at(s, i);
		struct json_object *o = json_object_new_object();

		rc = dp_json_push(arr, o);
		if (rc == 0)
			rc = dp_ledgerset_change_add_who(o, c);
		if (rc == 0 && !c->first)
			rc = add_eps(o, "old_epsilon", dp_nano_to_eps(c->old_nano));
		if (rc == 0)
			rc = add_eps(o, "new_epsilon", dp_nano_to_eps(c->new_nano));
		if (rc == 0 && c->delta != (i ? dp_ledgerset_lifetime_at(s, i - 1)->delta : 0.0))
			rc = dp_json_add(o, "delta", dp_json_double(c->delta));
		if (rc == 0)
			rc = dp_json_add(o, "reason", json_object_new_string(c->reason));
	}
	if (rc == 0)
		return dp_json_add(j, "lifetime_changes", arr);
	json_object_put(arr);
	return DP_ENOMEM;
}

/* What the dataset has spent (docs/ledger.md §8): its four sums and its
 * best valid bound at the lifetime delta, the sum for Laplace only. */
struct lifetime_fig {
	dp_zcdp_totals t;
	double delta;
	uint64_t spent;             /* nano-epsilon at delta; DP_NANO_INF: no bound */
	uint64_t answers;
};

static struct lifetime_fig lifetime_of(const dp_ledgerset *s)
{
	struct lifetime_fig f;

	f.t = dp_ledgerset_totals_except(s, NULL);
	f.delta = dp_ledgerset_lifetime_delta(s);
	if (dp_zcdp_best_nano(&f.t, f.delta, &f.spent) != 0)
		f.spent = DP_NANO_INF;
	f.answers = 0;
	for (size_t i = 0; i < dp_ledgerset_count(s); i++)
		f.answers += dp_ledgerset_at(s, i)->answers;
	return f;
}

/* The lifetime cap the directory records and what is left of it for a
 * Laplace job; a directory of format 1 or 2 records none, and says so. */
static int add_lifetime(struct json_object *j, const dp_ledgerset *s,
			const struct lifetime_fig *f)
{
	uint64_t cap;
	int rc;

	if (dp_ledgerset_lifetime_get(s, &cap) != 0)
		return dp_json_add(j, "lifetime_recorded", json_object_new_boolean(0));
	rc = dp_json_add(j, "lifetime_recorded", json_object_new_boolean(1));
	if (rc == 0)
		rc = add_eps(j, "lifetime_epsilon_cap", dp_nano_to_eps(cap));
	if (rc == 0)
		rc = add_eps(j, "lifetime_epsilon_left",
			     dp_nano_to_eps(dp_ledgerset_pure_left(&f->t, cap, f->delta)));
	return rc;
}

/* One JSON line for a ledger directory: the lifetime totals and one entry
 * per job (docs/ledger.md §8). */
static int print_set(const char *path, const dp_ledgerset *s)
{
	struct json_object *j = json_object_new_object(), *jobs = json_object_new_array();
	struct lifetime_fig f = lifetime_of(s);
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
		/* "job=ID" from the header, or "job-sha256=HEX" for a long id. */
		rc = dp_json_add(o, "job", json_object_new_string(strncmp(e->job, "job=", 4) == 0 ?
								  e->job + 4 : e->job));
		if (rc == 0)
			rc = dp_json_add(o, "path", json_object_new_string(e->path));
		if (rc == 0)
			rc = add_mechanism(o, e->unit, e->delta, e->slack_nano);
		if (rc == 0)
			rc = add_amount(o, e->unit, "cap", dp_nano_to_eps(e->cap_nano));
		if (rc == 0)
			rc = add_amount(o, e->unit, "spent", dp_nano_to_eps(e->spent_nano));
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
		rc = add_eps(j, "lifetime_epsilon_spent", dp_nano_to_eps(f.spent));
	if (rc == 0)
		rc = dp_json_add(j, "lifetime_delta", dp_json_double(f.delta));
	if (rc == 0)
		rc = add_eps(j, "lifetime_rho_spent",
			     dp_nano_to_eps(dp_nano_add(f.t.rho_pure, f.t.rho_gauss)));
	if (rc == 0)
		rc = add_lifetime(j, s, &f);
	if (rc == 0)
		rc = dp_json_add(j, "lifetime_answers", json_object_new_uint64(f.answers));
	if (rc == 0) {
		rc = dp_json_add(j, "jobs", jobs);
		jobs = NULL;
	}
	if (rc == 0 && dp_ledgerset_lifetime_count(s) > 0)
		rc = add_changes(j, s);
	if (rc == 0)
		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(jobs);
	json_object_put(j);
	return rc;
}

/* ---- --text: the same figures as lines for a human ----------------------- */

/* An amount of epsilon as text: "inf" for an unlimited one. */
static const char *eps_text(char *buf, size_t size, double v)
{
	if (isinf(v))
		snprintf(buf, size, "inf");
	else
		snprintf(buf, size, "%.9g", v);
	return buf;
}

/* "laplace, epsilon" or "gaussian at delta D, rho". */
static const char *mech_text(char *buf, size_t size, unsigned unit, double delta)
{
	if (unit == DP_LEDGER_UNIT_RHO)
		snprintf(buf, size, "gaussian at delta %.9g, rho", delta);
	else
		snprintf(buf, size, "laplace, epsilon");
	return buf;
}

static void text_summary(const char *path, dp_ledger *l)
{
	char a[32], b[32], c[32], k[32] = "none", m[64];
	uint64_t last = 0;

	if (dp_ledger_last_k(l, &last) == 0 && dp_ledger_answers(l) > 0)
		snprintf(k, sizeof(k), "%llu", (unsigned long long)last);
	printf("ledger %s (%s): %s spent %s of %s, left %s; %llu of %llu answers; last k %s; "
	       "torn %zu bytes\n", path, dp_ledger_identity(l),
	       mech_text(m, sizeof(m), dp_ledger_unit(l), dp_ledger_delta(l)), eps_text(a, sizeof(a),
	       dp_ledger_spent(l)), eps_text(b, sizeof(b), dp_ledger_cap(l)),
	       eps_text(c, sizeof(c), dp_ledger_left(l)), (unsigned long long)dp_ledger_answers(l),
	       (unsigned long long)dp_ledger_answers_cap(l), k, dp_ledger_torn_bytes(l));
}

static void text_set(const char *path, const dp_ledgerset *s)
{
	struct lifetime_fig f = lifetime_of(s);
	uint64_t cap;
	size_t n = dp_ledgerset_count(s);
	char a[32], b[32], c[32], m[64];

	printf("ledger directory %s (format %u)\n", path, dp_ledgerset_format(s));
	if (dp_ledgerset_lifetime_get(s, &cap) == 0)
		printf("lifetime: cap %s, spent %s, left %s; %llu answers in %zu jobs\n",
		       eps_text(a, sizeof(a), dp_nano_to_eps(cap)),
		       eps_text(b, sizeof(b), dp_nano_to_eps(f.spent)),
		       eps_text(c, sizeof(c),
				dp_nano_to_eps(dp_ledgerset_pure_left(&f.t, cap, f.delta))),
		       (unsigned long long)f.answers, n);
	else
		printf("lifetime: spent %s; %llu answers in %zu jobs; no cap recorded (format %u: "
		       "ownerd records its lifetime-epsilon when it next starts)\n",
		       eps_text(b, sizeof(b), dp_nano_to_eps(f.spent)), (unsigned long long)f.answers,
		       n, dp_ledgerset_format(s));
	printf("lifetime: epsilon %s at delta %.9g; rho %s\n",
	       eps_text(a, sizeof(a), dp_nano_to_eps(f.spent)), f.delta,
	       eps_text(b, sizeof(b), dp_nano_to_eps(dp_nano_add(f.t.rho_pure, f.t.rho_gauss))));
	for (size_t i = 0; i < n; i++) {
		const dp_ledgerset_job *e = dp_ledgerset_at(s, i);

		printf("  job %s: %s spent %s of %s; %llu of %llu answers; torn %zu bytes\n",
		       strncmp(e->job, "job=", 4) == 0 ? e->job + 4 : e->job,
		       mech_text(m, sizeof(m), e->unit, e->delta),
		       eps_text(a, sizeof(a), dp_nano_to_eps(e->spent_nano)),
		       eps_text(b, sizeof(b), dp_nano_to_eps(e->cap_nano)),
		       (unsigned long long)e->answers, (unsigned long long)e->answers_cap, e->torn);
	}
	for (size_t i = 0; i < dp_ledgerset_lifetime_count(s); i++) {
		const dp_ledgerset_change *ch = dp_ledgerset_lifetime_at(s, i);
		char what[80];

		if (ch->first)
			snprintf(what, sizeof(what), "set %s",
				 eps_text(b, sizeof(b), dp_nano_to_eps(ch->new_nano)));
		else
			snprintf(what, sizeof(what), "%s -> %s",
				 eps_text(a, sizeof(a), dp_nano_to_eps(ch->old_nano)),
				 eps_text(b, sizeof(b), dp_nano_to_eps(ch->new_nano)));
		if (ch->delta != (i ? dp_ledgerset_lifetime_at(s, i - 1)->delta : 0.0)) {
			size_t len = strlen(what);

			snprintf(what + len, sizeof(what) - len, ", delta %.9g", ch->delta);
		}
		if (i == 0)
			printf("lifetime cap changes:\n");
		printf("  %s %s by %s (uid %llu) on %s: %s: %s\n", ch->time, ch->program, ch->user,
		       (unsigned long long)ch->uid, ch->host, what, ch->reason);
	}
}

static int summarise_dir(const char *path, bool text)
{
	dp_ledgerset *s;
	int rc = dp_ledgerset_open(path, NULL, DP_LEDGERSET_READONLY, NULL, &s);

	if (rc != 0) {
		dp_cmd_fail("ledger", "%s", dp_error_detail(rc));
		return dp_exit_status(rc, DP_EXIT_PHASE_LOAD);
	}
	if (text)
		text_set(path, s);
	else
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
	const struct ledger_opts *o = arg;
	const struct dp_config_strings *files = &o->files;
	int status = 0;

	/* The summary is the output; the ledger's own open/repair log lines are not. */
	dp_log_set_level(DP_LOG_WARN);
	for (size_t i = 0; i < files->n && status == 0; i++) {
		struct stat st;
		dp_ledger *l;
		int rc;

		if (stat(files->v[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			status = summarise_dir(files->v[i], o->text);
			continue;
		}
		rc = dp_ledger_open(files->v[i], 0, 0, NULL, DP_LEDGER_READONLY | DP_LEDGER_ALLOW_INF,
				    &l);

		if (rc != 0) {
			dp_cmd_fail("ledger", "%s", dp_error_detail(rc));
			status = dp_exit_status(rc, DP_EXIT_PHASE_LOAD);
			break;
		}
		if (o->text)
			text_summary(files->v[i], l);
		else
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
	struct ledger_opts o = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "text", DP_CFG_BOOL(&o.text),
		  .help = "lines for a human instead of JSON (the same\n"
			  "figures, and the lifetime cap's changes)" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync ledger",
		.command = true,
		.synopsis = "[--text] LEDGER|DIR... | raise-lifetime|lower-lifetime DIR --to EPS "
			    "--reason TEXT",
		.summary = "Verify each ledger (header and every record's CRC, sequence and totals)\n"
			   "read-only and without taking its lock, and print one JSON line per file:\n"
			   "identity, epsilon cap/spent/left, answers and answer cap, the last request\n"
			   "id answered, and the bytes of a torn final record (which ownerd drops on\n"
			   "its next start).  A corrupt ledger is one error line and exit 2.\n"
			   "For an ownerd ledger directory (--ledger DIR) the line holds its format\n"
			   "version (as found: ownerd migrates an older directory, this command only\n"
			   "reads it), every job's totals, the lifetime totals over all jobs, and the\n"
			   "lifetime cap the directory records (format 3), what is left of it and\n"
			   "the history of its changes.",
		.epilog = "dpasync ledger raise-lifetime DIR --to EPS --reason TEXT raises the\n"
			  "lifetime cap of a ledger directory, and lower-lifetime lowers it; each\n"
			  "change is recorded with who, when, the old and the new cap and the reason\n"
			  "(docs/ledger.md §11; see dpasync ledger raise-lifetime --help).",
		.entries = entries,
		.args = &o.files,
		.args_metavar = "LEDGER...",
		.args_min = 1,
	};

	if (argc >= 2 && (strcmp(argv[1], "raise-lifetime") == 0 ||
			  strcmp(argv[1], "lower-lifetime") == 0))
		return dp_cmd_ledger_lifetime(argc - 1, argv + 1);
	return dp_cmd_run(&spec, argc, argv, summarise, &o);
}
