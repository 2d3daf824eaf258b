/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync ledger raise-lifetime | lower-lifetime DIR [--to EPS] [--delta D]
 * --reason TEXT: change the lifetime cap, or the lifetime delta it holds
 * at, that an ownerd ledger directory records, and record the change
 * (docs/ledger.md §11).
 *
 * Raising the cap is the one way to give a dataset more budget than it was
 * promised, so it is a command of its own that a data owner runs on
 * purpose, never a side effect of a configuration value: ownerd refuses a
 * lifetime-epsilon above the recorded cap.  The command takes the
 * directory's lock like ownerd, so it cannot run beside a daemon that
 * spends from the directory: stop ownerd, change the cap, start it. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/ledgerset.h"
#include "common/core/log.h"
#include "common/core/nano.h"
#include "common/net/config.h"
#include "tools/cmds.h"

struct lifetime_opts {
	bool raise;                     /* raise-lifetime; else lower-lifetime */
	const char *verb;
	char program[64];               /* "dpasync ledger <verb>", recorded */
	double to;                      /* --to */
	bool have_to;
	double delta;                   /* --delta */
	bool have_delta;
	char *reason;                   /* --reason */
	struct dp_config_strings dir;
};

static int fail(const struct lifetime_opts *o, int rc, enum dp_exit_phase phase)
{
	dp_cmd_fail(o->program + strlen("dpasync "), "%s", dp_error_detail(rc));
	return dp_exit_status(rc, phase);
}

/* The directory must exist and record a cap already (format 3): a cap is
 * first recorded by ownerd, from its lifetime-epsilon.  The one exception
 * is a `lifetime` file that was lost, which raise-lifetime records anew. */
static int check_dir(const struct lifetime_opts *o, const char *dir, unsigned *flags)
{
	struct stat st;
	dp_ledgerset *s = NULL;
	int rc;

	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return dp_error_set(DP_ENOENT, "%s: no such ledger directory", dir);
	rc = dp_ledgerset_open(dir, NULL, DP_LEDGERSET_READONLY, NULL, &s);
	if (rc == DP_ECORRUPT && o->raise) {
		*flags = DP_LEDGERSET_RECOVER_LIFETIME;
		return 0;   /* the writable open says again what is wrong, if more is */
	}
	if (rc == 0 && dp_ledgerset_format(s) < DP_LEDGERSET_FORMAT)
		rc = dp_error_set(DP_EINVAL, "ledger directory %s has format %u and records no "
				  "lifetime cap yet: start ownerd on it once (it records its "
				  "lifetime-epsilon), then change the cap", dir,
				  dp_ledgerset_format(s));
	dp_ledgerset_close(s);
	return rc;
}

static int check_opts(void *arg)
{
	const struct lifetime_opts *o = arg;

	if (!o->have_to && !o->have_delta)
		return dp_error_set(DP_EINVAL, "--to EPS or --delta D is required");
	return 0;
}

/* --delta: the lifetime delta, in the verb's direction, recorded as a
 * change of its own (docs/ledger.md §11).  0 or an
 * error (detail); *said receives the line to print. */
static int change_delta(const struct lifetime_opts *o, dp_ledgerset *s, char *said, size_t size)
{
	double old = dp_ledgerset_lifetime_delta(s);
	int rc;

	said[0] = '\0';
	if (!o->have_delta)
		return 0;
	if (o->delta == old) {
		snprintf(said, size, "the lifetime delta is %g already", old);
		return 0;
	}
	if ((o->delta > old) != o->raise)
		return dp_error_set(DP_EINVAL, "--delta %g is %s the lifetime delta %g that %s "
				    "records: use dpasync ledger %s", o->delta,
				    o->raise ? "below" : "above", old, o->dir.v[0],
				    o->raise ? "lower-lifetime" : "raise-lifetime");
	rc = dp_ledgerset_lifetime_set_delta(s, o->delta, o->raise ? DP_LEDGERSET_ALLOW_RAISE : 0,
					     o->program, o->reason);
	if (rc == 0)
		snprintf(said, size, "lifetime delta %g -> %g, recorded", old, o->delta);
	return rc;
}

static int change(void *arg)
{
	const struct lifetime_opts *o = arg;
	const char *dir = o->dir.v[0];
	struct dp_ledgerset_init init;
	dp_ledgerset *s = NULL;
	uint64_t nano = DP_NANO_INF, old = 0, spent;
	dp_zcdp_totals tot;
	unsigned flags = 0;
	char said[160];
	int rc;

	dp_log_set_level(DP_LOG_WARN);
	if (o->have_to && !isinf(o->to)) {
		rc = dp_nano_floor(o->to, &nano);
		if (rc == 0 && nano == 0)
			rc = dp_error_set(DP_EINVAL, "--to %g is below 1 nano-epsilon", o->to);
		if (rc != 0)
			return fail(o, rc, DP_EXIT_PHASE_ARGS);
	}
	rc = check_dir(o, dir, &flags);
	if (rc == 0 && flags != 0 && !o->have_to)
		rc = dp_error_set(DP_EINVAL, "%s: the lifetime cap's record is missing: give --to "
				  "EPS to record it anew", dir);
	if (rc != 0)
		return fail(o, rc, DP_EXIT_PHASE_LOAD);
	init.lifetime_nano = nano;
	init.program = o->program;
	init.reason = o->reason;
	init.lifetime_delta = 0.0;
	rc = dp_ledgerset_open(dir, NULL, flags, &init, &s);
	if (rc == DP_ESTATE)
		rc = dp_error_set(DP_ESTATE, "ledger directory %s is in use by another process: stop "
				  "the ownerd that spends from it first", dir);
	if (rc != 0)
		return fail(o, rc, DP_EXIT_PHASE_LOAD);
	dp_ledgerset_lifetime_get(s, &old);
	if (!o->have_to)
		nano = old;   /* --delta alone: the cap stays */
	/* what the dataset spent: the sum for Laplace only, else its bound at
	 * the lifetime delta (docs/ledger.md §8) */
	tot = dp_ledgerset_totals_except(s, NULL);
	if (dp_zcdp_best_nano(&tot, dp_ledgerset_lifetime_delta(s), &spent) != 0)
		spent = DP_NANO_INF;
	if (nano != old && (nano > old) != o->raise)
		rc = dp_error_set(DP_EINVAL, "--to %.9g is %s the lifetime cap %.9g that %s records: "
				  "use dpasync ledger %s", dp_nano_to_eps(nano),
				  o->raise ? "below" : "above", dp_nano_to_eps(old), dir,
				  o->raise ? "lower-lifetime" : "raise-lifetime");
	if (rc == 0 && nano != old)
		rc = dp_ledgerset_lifetime_set(s, nano, o->raise ? DP_LEDGERSET_ALLOW_RAISE : 0,
					       o->program, o->reason);
	if (rc == 0)
		rc = change_delta(o, s, said, sizeof(said));
	if (rc != 0) {
		dp_ledgerset_close(s);
		return fail(o, rc, rc == DP_EINVAL ? DP_EXIT_PHASE_ARGS : DP_EXIT_PHASE_RUN);
	}
	if (flags != 0 && dp_ledgerset_lifetime_count(s) == 1)
		printf("%s: %s: the lifetime cap's record was missing; recorded %.9g anew (spent "
		       "%.9g)\n", o->program, dir, dp_nano_to_eps(nano), dp_nano_to_eps(spent));
	else if (nano == old && o->have_to)
		printf("%s: %s: the lifetime cap is %.9g already; nothing recorded\n", o->program,
		       dir, dp_nano_to_eps(nano));
	else if (nano != old)
		printf("%s: %s: lifetime cap %.9g -> %.9g (spent %.9g), recorded\n", o->program, dir,
		       dp_nano_to_eps(old), dp_nano_to_eps(nano), dp_nano_to_eps(spent));
	if (said[0] != '\0')
		printf("%s: %s: %s\n", o->program, dir, said);
	dp_ledgerset_close(s);
	return 0;
}

int dp_cmd_ledger_lifetime(int argc, char **argv)
{
	struct lifetime_opts o = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "to", DP_CFG_DOUBLE_INF(&o.to), .given = &o.have_to, .min = 0,
		  .min_exclusive = true, .max = INFINITY, .metavar = "EPS",
		  .help = "the new lifetime cap (inf: none)" },
		{ .name = "delta", DP_CFG_DOUBLE(&o.delta), .given = &o.have_delta, .min = 0,
		  .max = 0.999999, .metavar = "D",
		  .help = "the new lifetime delta, at which the cap\nholds (0 -> 1e-6 first allows "
			  "Gaussian\nanswers; docs/ledger.md §11)" },
		{ .name = "reason", DP_CFG_STRING(&o.reason), .flags = DP_CONFIG_REQUIRED,
		  .metavar = "TEXT", .help = "why, recorded with the change (1 to 512\n"
					     "bytes of printable text)" },
		DP_CONFIG_END,
	};
	struct dp_config_spec spec = {
		.command = true,
		.synopsis = "DIR [--to EPS] [--delta D] --reason TEXT",
		.entries = entries,
		.args = &o.dir,
		.args_metavar = "DIR",
		.args_min = 1,
		.args_max = 1,
		.validate = check_opts,
		.validate_arg = &o,
	};

	DP_REQUIRE(argc >= 1);
	o.verb = argv[0];
	o.raise = strcmp(o.verb, "raise-lifetime") == 0;
	snprintf(o.program, sizeof(o.program), "dpasync ledger %s", o.verb);
	spec.program = o.program;
	spec.summary = o.raise ?
		"Raise the lifetime cap that the ownerd ledger directory DIR records, and\n"
		"record who raised it, when, from what, to what and why.  Raising it gives\n"
		"the dataset more privacy budget than it was promised: a decision of the data\n"
		"owner, which ownerd never takes from its configuration (docs/privacy.md §5).\n"
		"Stop the ownerd that uses DIR first.  A directory whose record of the cap\n"
		"was lost gets --to as its cap anew, recorded as such.  --delta raises the\n"
		"lifetime delta the cap holds at (0, pure epsilon-DP, until raised: a\n"
		"directory at 0 never answers a Gaussian job), recorded as its own change." :
		"Lower the lifetime cap that the ownerd ledger directory DIR records, and\n"
		"record the change (who, when, from what, to what, why).  Lowering is always\n"
		"allowed; ownerd lowers it too when given a smaller lifetime-epsilon.  --delta\n"
		"lowers the lifetime delta (a stronger promise).  Stop the ownerd that uses\n"
		"DIR first.";
	return dp_cmd_run(&spec, argc, argv, change, &o);
}
