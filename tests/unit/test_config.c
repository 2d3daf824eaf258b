/* SPDX-License-Identifier: Apache-2.0 */
/* Typed configuration: defaults, config file, flags, errors with FILE:LINE;
 * tool commands: positional arguments, lists, aliases, `given`, help. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/net/config.h"
#include "common/core/error.h"

struct settings {
	char *listen;
	char *tls_key;
	double epsilon;
	double budget;
	uint64_t iterations;
	size_t answers_cap;
	bool verify;
	int mode;
	double timeout;
	char *note;
};

static struct settings S;
static const char *const modes[] = { "async", "sync1", "sync2", "peer", NULL };

static const struct dp_config_entry table[] = {
	{ .name = "listen", DP_CFG_STRING(&S.listen), .def = "127.0.0.1:7443",
	  .group = "Network", .metavar = "HOST:PORT", .help = "address for owners" },
	{ .name = "tls-key", DP_CFG_PATH(&S.tls_key), .flags = DP_CONFIG_REQUIRED,
	  .group = "TLS", .help = "private key file" },
	{ .name = "epsilon", DP_CFG_DOUBLE(&S.epsilon), .def = "1", .min = 0, .max = INFINITY,
	  .min_exclusive = true, .group = "Privacy", .help = "budget per answer" },
	{ .name = "budget", DP_CFG_DOUBLE_INF(&S.budget), .def = "inf", .min = 0,
	  .max = INFINITY, .group = "Privacy", .help = "total budget" },
	{ .name = "iterations", DP_CFG_U64(&S.iterations), .def = "1000", .min = 1, .max = 1e6,
	  .group = "Training", .help = "T" },
	{ .name = "answers-cap", DP_CFG_SIZE(&S.answers_cap), .def = "100", .group = "Privacy",
	  .help = "answers at most" },
	{ .name = "verify", DP_CFG_BOOL(&S.verify), .def = "true", .group = "TLS",
	  .help = "check peers" },
	{ .name = "mode", DP_CFG_ENUM(&S.mode, modes), .def = "async", .group = "Training",
	  .help = "algorithm" },
	{ .name = "timeout", DP_CFG_DURATION(&S.timeout), .def = "30s", .min = 0, .max = 3600,
	  .group = "Network", .help = "idle timeout" },
	{ .name = "note", DP_CFG_STRING(&S.note), .help = "free text" },
	DP_CONFIG_END,
};

static int validate_calls;
static int cross_check(void *arg)
{
	struct settings *s = arg;

	validate_calls++;
	if (s->mode == 3 && s->answers_cap > 10)
		return dp_error_set(DP_EINVAL, "peer mode needs answers-cap <= 10");
	return 0;
}

static const struct dp_config_spec spec = {
	.program = "learnerd",
	.summary = "the dpasync learner",
	.entries = table,
	.validate = cross_check,
	.validate_arg = &S,
};

static char tmpdir[64];
static char path[128];

/* Write `text` to a fresh file and return its path. */
static const char *write_file(const char *text)
{
	static int n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/c%d.conf", tmpdir, n++);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* The detail the last failure recorded, with the file path replaced by
 * "F" so expected strings can be written by hand. */
static const char *detail(int rc)
{
	static char buf[600];
	const char *d = dp_error_detail(rc);
	size_t pl = strlen(path);

	if (pl && strncmp(d, path, pl) == 0)
		snprintf(buf, sizeof(buf), "F%s", d + pl);
	else
		snprintf(buf, sizeof(buf), "%s", d);
	return buf;
}

static int setup(void **state)
{
	dp_config_free(&spec);
	memset(&S, 0, sizeof(S));
	validate_calls = 0;
	path[0] = '\0';
	return 0;
}

static int teardown(void **state)
{
	dp_config_free(&spec);
	return 0;
}

static int group_setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/dp_test_config.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_defaults(void **state)
{
	S.iterations = 7;
	assert_int_equal(dp_config_set_defaults(&spec), 0);
	assert_string_equal(S.listen, "127.0.0.1:7443");
	assert_null(S.tls_key);
	assert_true(S.epsilon == 1.0);
	assert_true(isinf(S.budget) && S.budget > 0);
	assert_true(S.iterations == 1000);
	assert_true(S.answers_cap == 100);
	assert_true(S.verify);
	assert_int_equal(S.mode, 0);
	assert_true(S.timeout == 30.0);
	assert_null(S.note);
	assert_int_equal(validate_calls, 0);
}

static void test_file(void **state)
{
	const char *p = write_file(
		"# a learnerd configuration\r\n"
		"; both comment styles\n"
		"note = top-level keys are fine\n"
		"\n"
		"[learnerd]\n"
		"    listen = [::1]:9000        ; indented, inline comment\n"
		"\ttls-key: /etc/dpasync/learner.key\n"
		"epsilon = 0.25\r\n"
		"budget = inf\n"
		"iterations = 5000\n"
		"answers-cap = 7\n"
		"verify = off\n"
		"mode = sync2\n"
		"timeout = 250ms\n");

	assert_int_equal(dp_config_set_defaults(&spec), 0);
	assert_int_equal(dp_config_load_file(&spec, p), 0);
	assert_string_equal(S.note, "top-level keys are fine");
	assert_string_equal(S.listen, "[::1]:9000");
	assert_string_equal(S.tls_key, "/etc/dpasync/learner.key");
	assert_true(S.epsilon == 0.25);
	assert_true(isinf(S.budget));
	assert_true(S.iterations == 5000);
	assert_true(S.answers_cap == 7);
	assert_false(S.verify);
	assert_int_equal(S.mode, 2);
	assert_true(S.timeout == 0.25);

	/* Quotes keep spaces; durations take m and h; a second file applies
	 * over the first. */
	p = write_file("note = \"  spaced;out  \"\ntimeout = 2m\nbudget = 3.5\n");
	assert_int_equal(dp_config_load_file(&spec, p), 0);
	assert_string_equal(S.note, "  spaced;out  ");
	assert_true(S.timeout == 120.0);
	assert_true(S.budget == 3.5);
	p = write_file("timeout = 1h\n");
	assert_int_equal(dp_config_load_file(&spec, p), 0);
	assert_true(S.timeout == 3600.0);
}

static void test_load_flags_override_file(void **state)
{
	enum dp_config_action act = (enum dp_config_action)99;
	const char *p = write_file("[learnerd]\nepsilon = 0.5\nmode = sync1\nlisten = 1.2.3.4:5\n"
				   "tls-key = /k\nverify = no\n");
	char *pa = strdup(p);
	/* Flags before and after --config both win over the file. */
	char *argv[] = { "learnerd", "--epsilon", "2", "--config", pa, "--mode=peer",
			 "--answers-cap", "3", "--verify", "--budget=inf", "--timeout", "1.5",
			 NULL };

	assert_int_equal(dp_config_load(&spec, 12, argv, &act), 0);
	assert_int_equal(act, DP_CONFIG_RUN);
	assert_true(S.epsilon == 2.0);
	assert_int_equal(S.mode, 3);
	assert_string_equal(S.listen, "1.2.3.4:5");  /* from the file */
	assert_string_equal(S.tls_key, "/k");
	assert_true(S.answers_cap == 3);
	assert_true(S.verify);
	assert_true(isinf(S.budget));
	assert_true(S.timeout == 1.5);
	assert_true(S.iterations == 1000);             /* default */
	assert_int_equal(validate_calls, 1);

	/* --no-x, --x=false, last flag wins, -c and -n short forms. */
	{
		char *argv2[] = { "learnerd", "-n", "-c", pa, "--verify", "--no-verify",
				  "--iterations", "5", "--iterations", "6", NULL };

		assert_int_equal(dp_config_load(&spec, 10, argv2, &act), 0);
		assert_int_equal(act, DP_CONFIG_CHECK);
		assert_false(S.verify);
		assert_true(S.iterations == 6);
		assert_true(S.epsilon == 0.5);  /* reloaded from defaults + file */
	}
	{
		char *argv3[] = { "learnerd", "--tls-key", "/k2", "--verify=false", NULL };

		assert_int_equal(dp_config_load(&spec, 4, argv3, &act), 0);
		assert_false(S.verify);
		assert_string_equal(S.tls_key, "/k2");
		assert_true(S.epsilon == 1.0);  /* no file: defaults */
	}
	free(pa);
}

/* One bad config file: expected code and detail ("F" is the path). */
static void file_error(const char *text, int code, const char *want)
{
	const char *p = write_file(text);
	int rc;

	assert_int_equal(dp_config_set_defaults(&spec), 0);
	rc = dp_config_load_file(&spec, p);
	assert_int_equal(rc, code);
	assert_string_equal(detail(rc), want);
	/* Nothing from the file was applied, even lines before the error. */
	assert_string_equal(S.listen, "127.0.0.1:7443");
	assert_true(S.epsilon == 1.0);
}

static void test_file_errors(void **state)
{
	char longline[300];

	file_error("listen = x:1\nepsilom = 2\n", DP_EINVAL, "F:2: unknown key 'epsilom'");
	file_error("listen = x:1\nanswers_cap = 2\n", DP_EINVAL,
		   "F:2: unknown key 'answers_cap' (did you mean 'answers-cap'?)");
	file_error("listen = x:1\nepsilon = abc\n", DP_EINVAL,
		   "F:2: key 'epsilon': expected a finite number, got 'abc'");
	file_error("epsilon = 0\n", DP_EINVAL, "F:1: key 'epsilon': must be > 0, got '0'");
	file_error("epsilon = inf\n", DP_EINVAL,
		   "F:1: key 'epsilon': expected a finite number, got 'inf'");
	file_error("budget = -1\n", DP_EINVAL, "F:1: key 'budget': must be >= 0, got '-1'");
	file_error("iterations = 0\n", DP_EINVAL,
		   "F:1: key 'iterations': must be in [1, 1000000], got '0'");
	file_error("iterations = -5\n", DP_EINVAL,
		   "F:1: key 'iterations': expected a non-negative integer, got '-5'");
	file_error("answers-cap = 1.5\n", DP_EINVAL,
		   "F:1: key 'answers-cap': expected a non-negative integer, got '1.5'");
	file_error("verify = maybe\n", DP_EINVAL,
		   "F:1: key 'verify': expected true/false, yes/no, on/off or 1/0, got 'maybe'");
	file_error("mode = fast\n", DP_EINVAL,
		   "F:1: key 'mode': expected one of async, sync1, sync2, peer, got 'fast'");
	file_error("timeout = 5 minutes\n", DP_EINVAL,
		   "F:1: key 'timeout': expected a duration such as 30, 1.5s, 250ms, 5m or 2h, "
		   "got '5 minutes'");
	file_error("timeout = 2h\n", DP_EINVAL,
		   "F:1: key 'timeout': must be in [0, 3600], got '2h'");
	file_error("note = \"a ; b\"\n", DP_EINVAL,
		   "F:1: key 'note': unbalanced quote (\" ;\" starts a comment, even inside quotes)");
	file_error("tls-key =\n", DP_EINVAL, "F:1: key 'tls-key': empty path");
	file_error("[learnerd]\nepsilon = 0.5\nlisten = x:1\nepsilon = 0.7\n", DP_EINVAL,
		   "F:4: key 'epsilon': given twice (first on line 2)");
	file_error("epsilon = 0.5\n[learnerd]\nepsilon = 0.7\n", DP_EINVAL,
		   "F:3: key 'epsilon': given twice (first on line 1)");
	file_error("[ownerd]\nepsilon = 0.5\n", DP_EINVAL,
		   "F:2: key 'epsilon' in section [ownerd]: this file configures learnerd "
		   "(keys at the top or in [learnerd])");
	file_error("listen = x:1\njust words\n", DP_EINVAL,
		   "F:2: expected 'key = value', '[section]' or a comment");
	file_error("\n\n[learnerd\n", DP_EINVAL, "F:3: section header without ']'");
	file_error("[learnerd] epsilon = 3\n", DP_EINVAL, "F:1: text after the section header");
	file_error("= 3\n", DP_EINVAL, "F:1: missing key before '='");
	/* A syntax error before a bad value is the one reported. */
	file_error("oops\nepsilon = abc\n", DP_EINVAL,
		   "F:1: expected 'key = value', '[section]' or a comment");

	memset(longline, 'a', sizeof(longline));
	memcpy(longline, "note = ", 7);
	longline[DP_CONFIG_MAX_LINE] = '\n';  /* exactly the limit: accepted */
	longline[DP_CONFIG_MAX_LINE + 1] = '\0';
	assert_int_equal(dp_config_load_file(&spec, write_file(longline)), 0);
	assert_int_equal(strlen(S.note), DP_CONFIG_MAX_LINE - 7);
	dp_config_free(&spec);
	longline[DP_CONFIG_MAX_LINE] = 'a';
	longline[DP_CONFIG_MAX_LINE + 1] = '\n';
	longline[DP_CONFIG_MAX_LINE + 2] = '\0';
	file_error(longline, DP_EINVAL, "F:1: line longer than 196 characters");
}

static void test_bad_files(void **state)
{
	int rc;
	char missing[128], nul[] = "epsilon = 1\nnote = a\0b\n";
	FILE *f;

	snprintf(missing, sizeof(missing), "%s/none.conf", tmpdir);
	snprintf(path, sizeof(path), "%s", missing);
	rc = dp_config_load_file(&spec, missing);
	assert_int_equal(rc, DP_ENOENT);
	assert_string_equal(detail(rc), "F: cannot open: No such file or directory");

	snprintf(path, sizeof(path), "%s", tmpdir);
	rc = dp_config_load_file(&spec, tmpdir);
	assert_int_equal(rc, DP_EIO);
	assert_string_equal(detail(rc), "F: cannot read: Is a directory");

	write_file("");
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(nul, 1, sizeof(nul) - 1, f), sizeof(nul) - 1);
	fclose(f);
	rc = dp_config_load_file(&spec, path);
	assert_int_equal(rc, DP_EINVAL);
	assert_string_equal(detail(rc), "F:2: NUL byte in line");

	/* An empty file is valid and changes nothing. */
	assert_int_equal(dp_config_set_defaults(&spec), 0);
	assert_int_equal(dp_config_load_file(&spec, write_file("")), 0);
	assert_true(S.epsilon == 1.0);

	/* --config with a missing file fails the whole load. */
	{
		enum dp_config_action act = DP_CONFIG_HELP;
		char *argv[] = { "learnerd", "--config", missing, "--tls-key", "/k", NULL };

		snprintf(path, sizeof(path), "%s", missing);
		dp_config_free(&spec);
		rc = dp_config_load(&spec, 5, argv, &act);
		assert_int_equal(rc, DP_ENOENT);
		assert_int_equal(act, DP_CONFIG_HELP);  /* untouched */
		assert_null(S.tls_key);
	}
}

/* One bad command line: expected detail; settings and action untouched. */
static void flag_error(int argc, char **argv, const char *want)
{
	enum dp_config_action act = DP_CONFIG_HELP;
	int rc;

	rc = dp_config_load(&spec, argc, argv, &act);
	assert_int_equal(rc, DP_EINVAL);
	assert_string_equal(dp_error_detail(rc), want);
	assert_int_equal(act, DP_CONFIG_HELP);
	assert_null(S.listen);
	assert_true(S.epsilon == 0);
}

static void test_flag_errors(void **state)
{
	char *a1[] = { "learnerd", "--tls-key", "/k", "--epsilom", "2", NULL };
	char *a2[] = { "learnerd", "--tls-key", "/k", "--eps", "2", NULL };
	char *a3[] = { "learnerd", "--tls-key", "/k", "--epsilon", NULL };
	char *a4[] = { "learnerd", "--tls-key", "/k", "--no-verify=1", NULL };
	char *a5[] = { "learnerd", "--tls-key", "/k", "extra", NULL };
	char *a6[] = { "learnerd", "--tls-key", "/k", "--epsilon", "x", NULL };
	char *a7[] = { "learnerd", "--tls-key", "/k", "--verify=perhaps", NULL };
	char *a8[] = { "learnerd", "--listen", "h:1", NULL };
	char *a9[] = { "learnerd", "--tls-key", "/k", "-x", NULL };
	char *a10[] = { "learnerd", "--tls-key", "/k", "--help=yes", NULL };
	char *a11[] = { "learnerd", "--tls-key", "/k", "--no-epsilon", NULL };
	char *a12[] = { "learnerd", "--tls-key", "/k", "--mode", "peer", "--answers-cap", "11",
			NULL };
	char *a13[] = { "learnerd", "--tls-key", "/k", "--timeout=-1", NULL };
	char *a14[] = { "learnerd", "--tls-key", "/k", "--note", "two\nlines", NULL };
	char *a15[] = { "learnerd", "--tls-key", "/k", "-c", NULL };

	flag_error(5, a1, "unknown option '--epsilom'");
	flag_error(5, a2, "option '--eps': write it in full (--epsilon)");
	flag_error(4, a3, "option '--epsilon' needs a value");
	flag_error(4, a4, "option '--no-verify=1' does not take a value");
	flag_error(4, a5, "unexpected argument 'extra'");
	flag_error(5, a6, "option --epsilon: expected a finite number, got 'x'");
	flag_error(4, a7, "option --verify: expected true/false, yes/no, on/off or 1/0, got "
		   "'perhaps'");
	flag_error(3, a8, "'tls-key' is not set (use --tls-key or 'tls-key = ...' in "
		   "the config file)");
	flag_error(4, a9, "unknown option '-x'");
	flag_error(4, a10, "option '--help=yes' does not take a value");
	flag_error(4, a11, "unknown option '--no-epsilon'");
	flag_error(7, a12, "peer mode needs answers-cap <= 10");
	flag_error(4, a13, "option --timeout: expected a duration such as 30, 1.5s, 250ms, 5m or "
		   "2h, got '-1'");
	flag_error(5, a14, "option --note: control character in value");
	flag_error(4, a15, "option '-c' needs a value");
}

static void test_help_version_win(void **state)
{
	enum dp_config_action act = DP_CONFIG_RUN;
	char *a1[] = { "learnerd", "--bogus", "--epsilon", "x", "--help", NULL };
	char *a2[] = { "learnerd", "-V", "--config", "/nonexistent", NULL };

	assert_int_equal(dp_config_load(&spec, 5, a1, &act), 0);
	assert_int_equal(act, DP_CONFIG_HELP);
	assert_null(S.listen);  /* nothing loaded */
	assert_int_equal(dp_config_load(&spec, 4, a2, &act), 0);
	assert_int_equal(act, DP_CONFIG_VERSION);
	assert_int_equal(validate_calls, 0);
}

static char *capture(int (*fn)(const struct dp_config_spec *, FILE *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(&spec, f), 0);
	fclose(f);
	return buf;
}

static void test_help_text(void **state)
{
	char *h = capture(dp_config_print_help);

	/* Written by hand from the table: groups in order of first use, the
	 * two-column layout (2 + 28 + 2), defaults and ranges. */
	assert_string_equal(h,
		"Usage: learnerd [--config FILE] [OPTION]...\n"
		"the dpasync learner\n"
		"\n"
		"Settings come from their defaults, then the config file (keys at the top or in "
		"[learnerd]),\n"
		"then the options below, which win.  Every option is also a config key.\n"
		"\n"
		"General:\n"
		"  -c, --config FILE             read settings from FILE\n"
		"  -n, --check-config            validate, print the settings and exit\n"
		"  -h, --help                    print this help and exit\n"
		"  -V, --version                 print the version and exit\n"
		"\n"
		"Network:\n"
		"  --listen HOST:PORT            address for owners (default: 127.0.0.1:7443)\n"
		"  --timeout SECONDS             idle timeout (default: 30s, range [0, 3600])\n"
		"\n"
		"TLS:\n"
		"  --tls-key PATH                private key file (required)\n"
		"  --[no-]verify                 check peers (default: true)\n"
		"\n"
		"Privacy:\n"
		"  --epsilon X                   budget per answer (default: 1, > 0)\n"
		"  --budget X|inf                total budget (default: inf, >= 0)\n"
		"  --answers-cap N               answers at most (default: 100)\n"
		"\n"
		"Training:\n"
		"  --iterations N                T (default: 1000, range [1, 1000000])\n"
		"  --mode async|sync1|sync2|peer\n"
		"                                algorithm (default: async)\n"
		"\n"
		"Options:\n"
		"  --note TEXT                   free text\n");
	free(h);
}

static void test_print_round_trip(void **state)
{
	enum dp_config_action act;
	char *argv[] = { "learnerd", "--tls-key", "/etc/k.pem", "--epsilon", "0.1",
			 "--budget", "inf", "--mode", "sync1", "--no-verify", "--timeout", "90s",
			 "--note", " padded ", NULL };
	char *text, *again;
	char buf[64];

	assert_int_equal(dp_config_load(&spec, 14, argv, &act), 0);
	text = capture(dp_config_print);
	assert_string_equal(text,
		"# effective configuration of learnerd\n"
		"[learnerd]\n"
		"listen = 127.0.0.1:7443\n"
		"tls-key = /etc/k.pem\n"
		"epsilon = 0.1\n"
		"budget = inf\n"
		"iterations = 1000\n"
		"answers-cap = 100\n"
		"verify = false\n"
		"mode = sync1\n"
		"timeout = 90\n"
		"note = \" padded \"\n");
	assert_int_equal(dp_config_format(&spec, "epsilon", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0.1");
	assert_int_equal(dp_config_format(&spec, "nope", buf, sizeof(buf)), DP_ENOENT);
	assert_int_equal(dp_config_format(&spec, "listen", buf, 4), DP_ERANGE);

	/* Reading the printed file back gives the same settings. */
	dp_config_free(&spec);
	memset(&S, 0, sizeof(S));
	assert_int_equal(dp_config_set_defaults(&spec), 0);
	assert_int_equal(dp_config_load_file(&spec, write_file(text)), 0);
	again = capture(dp_config_print);
	assert_string_equal(again, text);
	free(text);
	free(again);

	/* An unset string is a comment. */
	dp_config_free(&spec);
	text = capture(dp_config_print);
	assert_non_null(strstr(text, "\n# tls-key is not set\n"));
	assert_non_null(strstr(text, "\n# listen is not set\n"));
	free(text);
}

static void test_validate_rollback(void **state)
{
	enum dp_config_action act;
	char *ok[] = { "learnerd", "--tls-key", "/a", "--listen", "h:1", NULL };
	char *bad[] = { "learnerd", "--tls-key", "/b", "--mode", "peer", "--answers-cap", "50",
			NULL };
	char *listen_before;

	assert_int_equal(dp_config_load(&spec, 5, ok, &act), 0);
	listen_before = S.listen;
	assert_int_equal(dp_config_load(&spec, 7, bad, &act), DP_EINVAL);
	assert_int_equal(validate_calls, 2);
	/* The failed load saw its values, then everything was put back. */
	assert_ptr_equal(S.listen, listen_before);
	assert_string_equal(S.listen, "h:1");
	assert_string_equal(S.tls_key, "/a");
	assert_int_equal(S.mode, 0);
	assert_true(S.answers_cap == 100);
	assert_int_equal(dp_config_check(&spec), 0);

	dp_config_free(&spec);
	assert_null(S.listen);
	assert_null(S.tls_key);
	assert_int_equal(dp_config_check(&spec), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "'tls-key' is not set"));
	dp_config_free(&spec);  /* twice is fine */
}

static void test_set(void **state)
{
	assert_int_equal(dp_config_set_defaults(&spec), 0);
	assert_int_equal(dp_config_set(&spec, "answers-cap", "18446744073709551615", NULL), 0);
	assert_true(S.answers_cap == SIZE_MAX);
	assert_int_equal(dp_config_set(&spec, "epsilon", "-1", "env DP_EPSILON"), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL), "env DP_EPSILON: must be > 0, got '-1'");
	assert_int_equal(dp_config_set(&spec, "verify", "YES", NULL), 0);
	assert_true(S.verify);
	assert_int_equal(dp_config_set(&spec, "timeout", "0.5s", NULL), 0);
	assert_true(S.timeout == 0.5);
	assert_int_equal(dp_config_set(&spec, "timeout", "0x10", NULL), DP_EINVAL);
	assert_int_equal(dp_config_set(&spec, "nothing", "1", NULL), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL), "unknown setting 'nothing'");
}

static void test_bad_tables(void **state)
{
	double d;
	char *s = NULL;
	struct dp_config_entry reserved[] = { { .name = "help", DP_CFG_DOUBLE(&d) }, DP_CONFIG_END };
	struct dp_config_entry upper[] = { { .name = "Epsilon", DP_CFG_DOUBLE(&d) }, DP_CONFIG_END };
	struct dp_config_entry twice[] = { { .name = "a", DP_CFG_DOUBLE(&d) },
					   { .name = "a", DP_CFG_DOUBLE(&d) }, DP_CONFIG_END };
	struct dp_config_entry req[] = { { .name = "a", DP_CFG_PATH(&s), .def = "/x",
					   .flags = DP_CONFIG_REQUIRED }, DP_CONFIG_END };
	struct dp_config_entry baddef[] = { { .name = "a", DP_CFG_DOUBLE(&d), .def = "one" },
					    DP_CONFIG_END };
	struct dp_config_entry noenum[] = { { .name = "a", .type = DP_CONFIG_ENUM,
					      .field = &d }, DP_CONFIG_END };
	struct dp_config_entry *tables[] = { reserved, upper, twice, req, baddef, noenum };

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		struct dp_config_spec sp = { .program = "x", .entries = tables[i] };

		d = 5;
		assert_int_equal(dp_config_set_defaults(&sp), DP_EINVAL);
		assert_true(d == 5);
		assert_null(s);
	}
	assert_string_equal(dp_error_detail(DP_EINVAL),
			    "config table: enum key 'a' has no values");
}

/* ---- tool commands: positional arguments, lists, aliases, given ------- */

struct cmd_settings {
	char *out;
	size_t t;
	double rate;
	bool verbose, have_rate, have_t;
	struct dp_config_doubles eps;
	struct dp_config_sizes rows;
	struct dp_config_strings drop, spec, files;
};

static struct cmd_settings C;
static int cmd_validate_calls;

static int cmd_check(void *arg)
{
	const struct cmd_settings *c = arg;

	cmd_validate_calls++;
	if (c->eps.n > 1 && c->files.n != c->eps.n)
		return dp_error_set(DP_EINVAL, "one epsilon per FILE");
	return 0;
}

static const struct dp_config_entry cmd_table[] = {
	{ .name = "out", DP_CFG_PATH(&C.out), .flags = DP_CONFIG_REQUIRED, .metavar = "DIR",
	  .help = "output directory" },
	{ .name = "t", .alias = "T", DP_CFG_SIZE(&C.t), .def = "1000", .min = 2, .max = INFINITY,
	  .given = &C.have_t, .help = "iterations" },
	{ .name = "rate", DP_CFG_DOUBLE(&C.rate), .given = &C.have_rate, .metavar = "R",
	  .help = "a rate\nover two lines" },
	{ .name = "verbose", DP_CFG_BOOL(&C.verbose), .help = "say more" },
	{ .name = "epsilon", DP_CFG_DOUBLES_INF(&C.eps), .def = "1", .min = 0, .max = INFINITY,
	  .min_exclusive = true, .group = "Lists", .metavar = "E[,..]",
	  .help = "budget per owner, one for all or one each; inf = no noise at all" },
	{ .name = "rows", DP_CFG_SIZES(&C.rows), .group = "Lists", .help = "rows per owner" },
	{ .name = "drop", DP_CFG_STRINGS(&C.drop), .flags = DP_CONFIG_APPEND, .group = "Lists",
	  .help = "columns to drop" },
	{ .name = "spec", DP_CFG_STRINGS(&C.spec), .flags = DP_CONFIG_APPEND | DP_CONFIG_WHOLE,
	  .group = "Lists", .metavar = "'COL=A,B'", .help = "repeatable" },
	DP_CONFIG_END,
};

static const struct dp_config_spec cmd_spec = {
	.program = "dpasync demo",
	.command = true,
	.summary = "Demonstrate the table.",
	.epilog = "Exit status: 0 or 2.",
	.entries = cmd_table,
	.validate = cmd_check,
	.validate_arg = &C,
	.args = &C.files,
	.args_metavar = "FILE...",
	.args_min = 1,
	.args_max = 3,
};

static int cmd_setup(void **state)
{
	dp_config_free(&cmd_spec);
	memset(&C, 0, sizeof(C));
	cmd_validate_calls = 0;
	return 0;
}

static int cmd_teardown(void **state)
{
	dp_config_free(&cmd_spec);
	return 0;
}

static int cmd_load(int argc, char **argv, enum dp_config_action *act)
{
	return dp_config_load(&cmd_spec, argc, argv, act);
}

static void test_cmd_args_and_lists(void **state)
{
	enum dp_config_action act = DP_CONFIG_CHECK;
	/* Options and positional arguments mixed; "--" ends the options. */
	char *argv[] = { "demo", "a.csv", "--out", "d", "--epsilon", "0.5,inf,2", "b.csv",
			 "--drop", "x\\,y,z", "--spec", "c=1,2", "--drop=w", "--spec", "e=\\,",
			 "--rows", "3,4", "--", "--c.csv", NULL };

	assert_int_equal(cmd_load(18, argv, &act), 0);
	assert_int_equal(act, DP_CONFIG_RUN);
	assert_string_equal(C.out, "d");
	assert_int_equal(C.files.n, 3);
	assert_string_equal(C.files.v[0], "a.csv");
	assert_string_equal(C.files.v[1], "b.csv");
	assert_string_equal(C.files.v[2], "--c.csv");
	assert_ptr_not_equal(C.files.v[0], argv[1]);   /* copies */
	assert_int_equal(C.eps.n, 3);
	assert_true(C.eps.v[0] == 0.5 && isinf(C.eps.v[1]) && C.eps.v[2] == 2);
	assert_int_equal(C.rows.n, 2);
	assert_true(C.rows.v[0] == 3 && C.rows.v[1] == 4);
	/* APPEND: both --drop flags; escapes inside items. */
	assert_int_equal(C.drop.n, 3);
	assert_string_equal(C.drop.v[0], "x,y");
	assert_string_equal(C.drop.v[1], "z");
	assert_string_equal(C.drop.v[2], "w");
	/* WHOLE: each value one item, as written. */
	assert_int_equal(C.spec.n, 2);
	assert_string_equal(C.spec.v[0], "c=1,2");
	assert_string_equal(C.spec.v[1], "e=\\,");
	assert_int_equal(cmd_validate_calls, 1);
	assert_false(C.have_t);
	assert_true(C.t == 1000);

	/* A list given again without APPEND replaces; defaults come back on
	 * the next load. */
	{
		char *a2[] = { "demo", "--out", "d", "--epsilon", "3", "--epsilon", "4", "f", NULL };

		assert_int_equal(cmd_load(8, a2, &act), 0);
		assert_int_equal(C.eps.n, 1);
		assert_true(C.eps.v[0] == 4);
		assert_int_equal(C.drop.n, 0);
		assert_null(C.drop.v);
		assert_int_equal(C.files.n, 1);
	}
	{
		char *a3[] = { "demo", "--out", "d", "f", NULL };

		assert_int_equal(cmd_load(4, a3, &act), 0);
		assert_int_equal(C.eps.n, 1);
		assert_true(C.eps.v[0] == 1);   /* the default */
	}
}

static void test_cmd_alias_and_given(void **state)
{
	enum dp_config_action act;
	char *a1[] = { "demo", "--T", "50", "--out", "d", "--rate=0", "f", NULL };
	char *a2[] = { "demo", "--t=60", "--out", "d", "f", NULL };
	char *a3[] = { "demo", "--out", "d", "f", NULL };

	assert_int_equal(cmd_load(7, a1, &act), 0);
	assert_true(C.t == 50 && C.have_t);
	assert_true(C.rate == 0 && C.have_rate);
	assert_int_equal(cmd_load(5, a2, &act), 0);
	assert_true(C.t == 60 && C.have_t);
	assert_false(C.have_rate);
	assert_int_equal(cmd_load(4, a3, &act), 0);
	assert_false(C.have_t);
	assert_true(C.t == 1000);

	/* Setting one entry marks it given; defaults unmark everything. */
	assert_int_equal(dp_config_set(&cmd_spec, "rate", "2", NULL), 0);
	assert_true(C.have_rate);
	assert_int_equal(dp_config_set(&cmd_spec, "drop", "a,b", NULL), 0);
	assert_int_equal(C.drop.n, 2);
	assert_int_equal(dp_config_set(&cmd_spec, "drop", "c", NULL), 0);  /* replaces */
	assert_int_equal(C.drop.n, 1);
	assert_int_equal(dp_config_set_defaults(&cmd_spec), 0);
	assert_false(C.have_rate);
	assert_false(C.have_t);
	assert_int_equal(C.drop.n, 0);
}

/* One bad command line: the detail; settings untouched. */
static void cmd_error(int argc, char **argv, const char *want)
{
	enum dp_config_action act = DP_CONFIG_CHECK;
	int rc;

	rc = cmd_load(argc, argv, &act);
	assert_int_equal(rc, DP_EINVAL);
	assert_string_equal(dp_error_detail(rc), want);
	assert_int_equal(act, DP_CONFIG_CHECK);
	assert_null(C.out);
	assert_int_equal(C.files.n, 0);
	assert_int_equal(C.eps.n, 0);
}

static void test_cmd_errors(void **state)
{
	char *a1[] = { "demo", "--out", "d", NULL };
	char *a2[] = { "demo", "--out", "d", "a", "b", "c", "e", NULL };
	char *a3[] = { "demo", "a", NULL };
	char *a4[] = { "demo", "--out", "d", "--epsilon", "1,0", "a", NULL };
	char *a5[] = { "demo", "--out", "d", "--epsilon", "1,,2", "a", NULL };
	char *a6[] = { "demo", "--out", "d", "--drop", "a,,b", "a", NULL };
	char *a7[] = { "demo", "--out", "d", "--rows", "1,-2", "a", NULL };
	char *a8[] = { "demo", "--out", "d", "--T", "1", "a", NULL };
	char *a9[] = { "demo", "--config", "x", "--out", "d", "a", NULL };
	char *a10[] = { "demo", "-n", "--out", "d", "a", NULL };
	char *a11[] = { "demo", "--out", "d", "--epsilon", "1,2", "a", NULL };
	char *a12[] = { "demo", "--out", "d", "--spec", "", "a", NULL };
	char *a13[] = { "demo", "--out", "d", "--rows", "", "a", NULL };
	char *a14[] = { "demo", "--out", "d", "--epsilon", "nan", "a", NULL };
	char *a15[] = { "demo", "--ver", "--out", "d", "a", NULL };
	char *a16[] = { "demo", "--out", "d", "--drop", "a\nb", "a", NULL };

	cmd_error(3, a1, "missing FILE...");
	cmd_error(7, a2, "expected FILE... (1 to 3 arguments), got 4");
	cmd_error(2, a3, "--out DIR is required");
	cmd_error(6, a4, "option --epsilon: must be > 0, got '0'");
	cmd_error(6, a5, "option --epsilon: expected a number, got ''");
	cmd_error(6, a6, "option --drop: empty item in 'a,,b'");
	cmd_error(6, a7, "option --rows: expected a non-negative integer, got '-2'");
	cmd_error(6, a8, "option --T: must be >= 2, got '1'");
	cmd_error(6, a9, "unknown option '--config'");
	cmd_error(5, a10, "unknown option '-n'");
	cmd_error(6, a11, "one epsilon per FILE");
	assert_int_equal(cmd_validate_calls, 1);
	cmd_error(6, a12, "option --spec: empty value");
	cmd_error(6, a13, "option --rows: empty list");
	cmd_error(6, a14, "option --epsilon: expected a finite number, got 'nan'");
	cmd_error(5, a15, "option '--ver': write it in full (--verbose)");
	cmd_error(6, a16, "option --drop: control character in value");
}

static void test_cmd_rollback(void **state)
{
	enum dp_config_action act;
	char *ok[] = { "demo", "--out", "d", "--drop", "a", "--epsilon", "2", "f", NULL };
	char *bad[] = { "demo", "--out", "e", "--drop", "b,c", "--epsilon", "1,2", "g", NULL };
	char **drop_before, **files_before;

	assert_int_equal(cmd_load(8, ok, &act), 0);
	drop_before = C.drop.v;
	files_before = C.files.v;
	assert_int_equal(cmd_load(8, bad, &act), DP_EINVAL);
	assert_ptr_equal(C.drop.v, drop_before);
	assert_ptr_equal(C.files.v, files_before);
	assert_int_equal(C.drop.n, 1);
	assert_string_equal(C.drop.v[0], "a");
	assert_string_equal(C.files.v[0], "f");
	assert_string_equal(C.out, "d");
	assert_true(C.eps.n == 1 && C.eps.v[0] == 2);
}

static void test_cmd_help_wins(void **state)
{
	enum dp_config_action act = DP_CONFIG_RUN;
	char *a1[] = { "demo", "--bogus", "-h", NULL };
	char *a2[] = { "demo", "--version", NULL };

	assert_int_equal(cmd_load(3, a1, &act), 0);
	assert_int_equal(act, DP_CONFIG_HELP);
	assert_null(C.out);
	/* A command has no --version. */
	assert_int_equal(cmd_load(2, a2, &act), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL), "unknown option '--version'");
}

static char *capture_spec(const struct dp_config_spec *sp,
			  int (*fn)(const struct dp_config_spec *, FILE *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(sp, f), 0);
	fclose(f);
	return buf;
}

static void test_cmd_help_text(void **state)
{
	char *h = capture_spec(&cmd_spec, dp_config_print_help);

	assert_string_equal(h,
		"usage: dpasync demo [options] --out DIR FILE...\n"
		"\n"
		"Demonstrate the table.\n"
		"\n"
		"Options:\n"
		"  --out DIR                     output directory (required)\n"
		"  --t, --T N                    iterations (default: 1000, >= 2)\n"
		"  --rate R                      a rate\n"
		"                                over two lines\n"
		"  --[no-]verbose                say more\n"
		"\n"
		"Lists:\n"
		"  --epsilon E[,..]              budget per owner, one for all or one each; inf = no noise at all\n"
		"                                (default: 1, > 0)\n"
		"  --rows N,...                  rows per owner\n"
		"  --drop A,B,...                columns to drop\n"
		"  --spec 'COL=A,B'              repeatable\n"
		"  -h, --help                    print this help and exit\n"
		"\n"
		"Exit status: 0 or 2.\n");
	free(h);

	/* A synopsis of several forms. */
	{
		struct dp_config_spec sp = cmd_spec;

		sp.synopsis = "--out DIR FILE...\n--help";
		sp.summary = NULL;
		sp.epilog = NULL;
		h = capture_spec(&sp, dp_config_print_help);
		assert_true(strncmp(h, "usage: dpasync demo --out DIR FILE...\n"
				    "       dpasync demo --help\n\nOptions:\n", 63) == 0);
		free(h);
	}
}

static void test_cmd_print_lists(void **state)
{
	enum dp_config_action act;
	char *argv[] = { "demo", "--out", "d", "--drop", "a\\,b,c", "--epsilon", "0.1,inf",
			 "f", "g", NULL };
	char buf[64], *text;

	assert_int_equal(cmd_load(9, argv, &act), 0);
	assert_int_equal(dp_config_format(&cmd_spec, "drop", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a\\,b,c");
	assert_int_equal(dp_config_format(&cmd_spec, "epsilon", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0.1,inf");
	assert_int_equal(dp_config_format(&cmd_spec, "rows", buf, sizeof(buf)), DP_ENOENT);
	assert_int_equal(dp_config_format(&cmd_spec, "drop", buf, 4), DP_ERANGE);
	text = capture_spec(&cmd_spec, dp_config_print);
	assert_non_null(strstr(text, "\ndrop = a\\,b,c\n"));
	assert_non_null(strstr(text, "\nepsilon = 0.1,inf\n"));
	assert_non_null(strstr(text, "\n# rows is not set\n"));
	assert_non_null(strstr(text, "\nt = 1000\n"));
	free(text);
}

/* Lists in a daemon's config file; an alias is not a key there. */
static void test_lists_in_file(void **state)
{
	double d = 0;
	struct dp_config_doubles ds = { 0 };
	struct dp_config_strings ss = { 0 };
	const struct dp_config_entry t[] = {
		{ .name = "rates", DP_CFG_DOUBLES(&ds), .min = 0, .max = INFINITY },
		{ .name = "names", DP_CFG_STRINGS(&ss), .flags = DP_CONFIG_APPEND },
		{ .name = "x", .alias = "X", DP_CFG_DOUBLE(&d) },
		DP_CONFIG_END,
	};
	const struct dp_config_spec sp = { .program = "learnerd", .entries = t };
	int rc;

	assert_int_equal(dp_config_load_file(&sp, write_file("rates = 1,2.5\nnames = a,b\n")), 0);
	assert_true(ds.n == 2 && ds.v[1] == 2.5);
	assert_true(ss.n == 2);
	assert_string_equal(ss.v[1], "b");
	rc = dp_config_load_file(&sp, write_file("rates = 1,-2\n"));
	assert_int_equal(rc, DP_EINVAL);
	assert_string_equal(detail(rc), "F:1: key 'rates': must be >= 0, got '-2'");
	assert_true(ds.n == 2);
	rc = dp_config_load_file(&sp, write_file("X = 1\n"));
	assert_int_equal(rc, DP_EINVAL);
	assert_string_equal(detail(rc), "F:1: unknown key 'X' (did you mean 'x'?)");
	dp_config_free(&sp);
	assert_true(ds.n == 0 && ds.v == NULL && ss.n == 0 && ss.v == NULL);
}

/* What dp_config_print writes must read back to the same values (found
 * by fuzz_config, docs/fuzz.md): a WHOLE list item is taken as written, so
 * escaping it added backslashes on every print and reload; a value that
 * starts with ';' (kept in quotes in the file) was printed bare and read
 * back as a comment. */
static void test_print_reload(void **state)
{
	struct dp_config_strings w = { 0 };
	char *note = NULL;
	const struct dp_config_entry t[] = {
		{ .name = "whole", DP_CFG_STRINGS(&w), .flags = DP_CONFIG_WHOLE },
		{ .name = "note", DP_CFG_STRING(&note) },
		DP_CONFIG_END,
	};
	const struct dp_config_spec sp = { .program = "learnerd", .entries = t };
	char text[256], *printed = NULL;
	size_t len = 0;
	FILE *f;

	assert_int_equal(dp_config_load_file(&sp, write_file("whole = x, a=b\\c\n"
							     "note = \";  x ,\"  ; comment\n")), 0);
	assert_true(w.n == 1);
	assert_string_equal(w.v[0], "x, a=b\\c");
	assert_string_equal(note, ";  x ,");
	f = open_memstream(&printed, &len);
	assert_non_null(f);
	assert_int_equal(dp_config_print(&sp, f), 0);
	fclose(f);
	snprintf(text, sizeof(text), "%s", printed);
	free(printed);
	assert_non_null(strstr(text, "whole = x, a=b\\c\n"));
	assert_int_equal(dp_config_load_file(&sp, write_file(text)), 0);
	assert_true(w.n == 1);
	assert_string_equal(w.v[0], "x, a=b\\c");
	assert_string_equal(note, ";  x ,");
	dp_config_free(&sp);
}

static void test_split(void **state)
{
	struct dp_config_strings l = { 0 };

	assert_int_equal(dp_config_split("--levels", "a\\,b,c\\=d,e\\\\", &l), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.v[0], "a,b");
	assert_string_equal(l.v[1], "c=d");
	assert_string_equal(l.v[2], "e\\");
	dp_config_strings_free(&l);
	assert_true(l.n == 0 && l.v == NULL);
	assert_int_equal(dp_config_split("--levels", "a,", &l), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL), "--levels: empty item in 'a,'");
	assert_int_equal(dp_config_split("--levels", "", &l), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL), "--levels: empty list");
	assert_true(l.n == 0 && l.v == NULL);
}

static void test_bad_command_tables(void **state)
{
	double d;
	size_t z;
	char *s = NULL;
	struct dp_config_entry append[] = { { .name = "a", DP_CFG_DOUBLE(&d),
					      .flags = DP_CONFIG_APPEND }, DP_CONFIG_END };
	struct dp_config_entry whole[] = { { .name = "a", DP_CFG_SIZE(&z),
					     .flags = DP_CONFIG_WHOLE }, DP_CONFIG_END };
	struct dp_config_entry alias[] = { { .name = "a", DP_CFG_DOUBLE(&d) },
					   { .name = "b", .alias = "a", DP_CFG_DOUBLE(&d) },
					   DP_CONFIG_END };
	struct dp_config_entry badalias[] = { { .name = "a", .alias = "-x", DP_CFG_DOUBLE(&d) },
					      DP_CONFIG_END };
	struct dp_config_entry req[] = { { .name = "a", DP_CFG_DOUBLE(&d),
					   .flags = DP_CONFIG_REQUIRED }, DP_CONFIG_END };
	struct dp_config_entry ok[] = { { .name = "a", DP_CFG_PATH(&s) }, DP_CONFIG_END };
	struct dp_config_entry *tables[] = { append, whole, alias, badalias, req };

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		struct dp_config_spec sp = { .program = "x", .entries = tables[i] };

		d = 5;
		assert_int_equal(dp_config_set_defaults(&sp), DP_EINVAL);
		assert_true(d == 5);
	}
	{
		struct dp_config_strings args = { 0 };
		struct dp_config_spec sp = { .program = "x", .command = true, .entries = ok,
					     .args = &args, .args_min = 3, .args_max = 2 };

		assert_int_equal(dp_config_set_defaults(&sp), DP_EINVAL);
		assert_string_equal(dp_error_detail(DP_EINVAL), "config: x: args_min > args_max");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_flags_override_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flag_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_help_version_win, setup, teardown),
		cmocka_unit_test_setup_teardown(test_help_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_print_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_validate_rollback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cmd_args_and_lists, cmd_setup, cmd_teardown),
		cmocka_unit_test_setup_teardown(test_cmd_alias_and_given, cmd_setup, cmd_teardown),
		cmocka_unit_test_setup_teardown(test_cmd_errors, cmd_setup, cmd_teardown),
		cmocka_unit_test_setup_teardown(test_cmd_rollback, cmd_setup, cmd_teardown),
		cmocka_unit_test_setup_teardown(test_cmd_help_wins, cmd_setup, cmd_teardown),
		cmocka_unit_test_setup_teardown(test_cmd_help_text, cmd_setup, cmd_teardown),
		cmocka_unit_test_setup_teardown(test_cmd_print_lists, cmd_setup, cmd_teardown),
		cmocka_unit_test_setup_teardown(test_lists_in_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_print_reload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_command_tables, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
