/* SPDX-License-Identifier: Apache-2.0 */
/* Typed configuration, the command line: one pass over argv that sorts
 * its words into built-in options, flags and positional arguments
 * (config.h, dp_config_load).  Nothing is applied here: config.c applies
 * the flags after the config file, so that they win. */
#include "common/net/config.h"
#include "common/net/config_impl.h"
#include "common/core/error.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a flag spelling means. */
enum opt_kind { OPT_VALUE, OPT_BOOL, OPT_NO, OPT_CONFIG, OPT_CHECK, OPT_HELP, OPT_VERSION };

struct dp__config_opt {
	char *name;          /* without the "--" (heap copy) */
	enum opt_kind kind;
	size_t idx;          /* entry, for OPT_VALUE, OPT_BOOL, OPT_NO */
};

static void scan_error(struct dp__config_scan *sc, const char *fmt, const char *a, const char *b)
{
	if (sc->first == 0)
		sc->first = dp_error_set(DP_EINVAL, fmt, a, b);
}

static int add_opt(struct dp__config_scan *sc, const char *prefix, const char *name,
		   enum opt_kind kind, size_t idx)
{
	char *s;

	if (asprintf(&s, "%s%s", prefix, name) < 0)
		return dp_error_set(DP_ENOMEM, "config: out of memory");
	sc->opts[sc->nopts++] = (struct dp__config_opt){ s, kind, idx };
	return 0;
}

static int build_opts(struct dp__config_scan *sc, size_t n)
{
	const struct dp_config_spec *spec = sc->spec;
	int rc = 0;

	sc->opts = calloc(4 * n + 5, sizeof(*sc->opts));
	if (sc->opts == NULL)
		return dp_error_set(DP_ENOMEM, "config: out of memory");
	rc = add_opt(sc, "", "help", OPT_HELP, 0);
	if (rc == 0 && !spec->command) {
		rc = add_opt(sc, "", "config", OPT_CONFIG, 0);
		if (rc == 0)
			rc = add_opt(sc, "", "check-config", OPT_CHECK, 0);
		if (rc == 0)
			rc = add_opt(sc, "", "version", OPT_VERSION, 0);
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];
		const char *spell[2] = { e->name, e->alias };

		for (size_t s = 0; rc == 0 && s < 2 && spell[s]; s++) {
			if (dp__config_type_of(e)->flag) {
				rc = add_opt(sc, "", spell[s], OPT_BOOL, i);
				if (rc == 0)
					rc = add_opt(sc, "no-", spell[s], OPT_NO, i);
			} else {
				rc = add_opt(sc, "", spell[s], OPT_VALUE, i);
			}
		}
	}
	return rc;
}

void dp__config_scan_free(struct dp__config_scan *sc)
{
	for (size_t i = 0; sc->opts && i < sc->nopts; i++)
		free(sc->opts[i].name);
	free(sc->opts);
	free(sc->flags);
	free(sc->pos);
}

static void positional(struct dp__config_scan *sc, const char *tok)
{
	if (sc->spec->args == NULL)
		scan_error(sc, "unexpected argument '%s'", tok, "");
	else
		sc->pos[sc->npos++] = tok;
}

/* One "--name[=value]" word at argv[i]; returns the index of the last
 * word it used (its value may be the next one). */
static int long_opt(struct dp__config_scan *sc, int argc, char *const argv[], int i)
{
	const char *tok = argv[i], *body = tok + 2, *eq = strchr(body, '=');
	size_t len = eq ? (size_t)(eq - body) : strlen(body);
	const struct dp__config_opt *o = NULL, *pre = NULL;
	size_t npre = 0;
	const char *value;

	for (size_t k = 0; k < sc->nopts && o == NULL; k++) {
		const struct dp__config_opt *c = &sc->opts[k];

		if (strncmp(c->name, body, len) != 0)
			continue;
		if (c->name[len] == '\0') {
			o = c;
		} else {
			pre = c;
			npre++;
		}
	}
	if (o == NULL) {
		/* Unambiguous prefixes are refused too: scripts that rely on
		 * them break when options are added. */
		if (npre == 1 && len > 0) {
			scan_error(sc, "option '%s': write it in full (--%s)", tok, pre->name);
			if (pre->kind == OPT_VALUE && eq == NULL && i + 1 < argc)
				i++;
		} else {
			scan_error(sc, "unknown option '%s'", tok, "");
		}
		return i;
	}
	switch (o->kind) {
	case OPT_VALUE:
	case OPT_CONFIG:
		if (eq)
			value = eq + 1;
		else if (i + 1 < argc)
			value = argv[++i];
		else {
			scan_error(sc, "option '%s' needs a value", tok, "");
			return i;
		}
		if (o->kind == OPT_CONFIG)
			sc->config = value;
		else
			sc->flags[sc->nflags++] = (struct dp__config_flag){ o->idx, value, tok };
		return i;
	case OPT_BOOL:
		sc->flags[sc->nflags++] =
			(struct dp__config_flag){ o->idx, eq ? eq + 1 : "true", tok };
		return i;
	default:
		break;
	}
	if (eq) {
		scan_error(sc, "option '%s' does not take a value", tok, "");
		return i;
	}
	switch (o->kind) {
	case OPT_NO: sc->flags[sc->nflags++] = (struct dp__config_flag){ o->idx, NULL, tok }; break;
	case OPT_CHECK: sc->check = true; break;
	case OPT_HELP: sc->help = true; break;
	case OPT_VERSION: sc->version = true; break;
	default: break;
	}
	return i;
}

/* One "-xyz" word of single-letter options at argv[i]. */
static int short_opts(struct dp__config_scan *sc, int argc, char *const argv[], int i)
{
	const char *tok = argv[i];
	bool daemon = !sc->spec->command;

	for (size_t j = 1; tok[j]; j++) {
		char ch[2] = { tok[j], '\0' };

		if (tok[j] == 'h') {
			sc->help = true;
		} else if (daemon && tok[j] == 'n') {
			sc->check = true;
		} else if (daemon && tok[j] == 'V') {
			sc->version = true;
		} else if (daemon && tok[j] == 'c') {
			if (tok[j + 1])
				sc->config = tok + j + 1;
			else if (i + 1 < argc)
				sc->config = argv[++i];
			else
				scan_error(sc, "option '-%s' needs a value", ch, "");
			break;
		} else {
			scan_error(sc, "unknown option '-%s'", ch, "");
		}
	}
	return i;
}

/* One pass over argv.  Values are only collected here; they are applied
 * after the config file so that flags always win.  Scanning goes on after
 * an error so that a later --help still wins. */
int dp__config_scan_args(struct dp__config_scan *sc, size_t n, int argc, char *const argv[])
{
	bool only_pos = false;
	int rc;

	sc->flags = calloc((size_t)argc + 1, sizeof(*sc->flags));
	sc->pos = calloc((size_t)argc + 1, sizeof(*sc->pos));
	if (sc->flags == NULL || sc->pos == NULL)
		return dp_error_set(DP_ENOMEM, "config: out of memory");
	rc = build_opts(sc, n);
	if (rc != 0)
		return rc;
	for (int i = 1; i < argc; i++) {
		const char *tok = argv[i];

		if (tok == NULL)
			break;
		if (only_pos || tok[0] != '-' || tok[1] == '\0')
			positional(sc, tok);
		else if (strcmp(tok, "--") == 0)
			only_pos = true;
		else if (tok[1] == '-')
			i = long_opt(sc, argc, argv, i);
		else
			i = short_opts(sc, argc, argv, i);
	}
	return sc->first;
}
