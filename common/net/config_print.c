/* SPDX-License-Identifier: Apache-2.0 */
/* Typed configuration, output: --help generated from the table, the
 * effective settings of --check-config, one value as text (config.h). */
#include "common/net/config.h"
#include "common/net/config_impl.h"
#include "common/core/error.h"
#include "common/core/num.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int dp_config_format(const struct dp_config_spec *spec, const char *name, char *buf, size_t len)
{
	const struct dp_config_entry *e;
	const char *text;
	long i;
	int rc;

	if (spec == NULL || spec->entries == NULL || name == NULL || buf == NULL || len == 0)
		return dp_error_set(DP_EINVAL, "config: format needs a spec, a name and a buffer");
	i = dp__config_find(spec, name);
	if (i < 0) {
		buf[0] = '\0';
		return dp_error_set(DP_ENOENT, "unknown setting '%s'", name);
	}
	e = &spec->entries[i];
	buf[0] = '\0';
	if ((unsigned)e->type > DP_CONFIG_SIZES)
		return dp_error_set(DP_EINVAL, "config table: key '%s' has no field or type", name);
	rc = dp__config_type_of(e)->format(e, buf, len, &text);
	if (rc == 0 && text != buf) {
		int w = snprintf(buf, len, "%s", text);

		rc = w < 0 || (size_t)w >= len ? DP_ERANGE : 0;
	}
	return rc;
}

/* "name = value", the value in double quotes when the reader would
 * otherwise strip or misread it: empty, surrounding whitespace, a leading
 * quote (taken off, or an unbalanced one), or a leading ';' or '#' (a
 * comment after " = "). */
static void print_value(FILE *out, const char *name, const char *v)
{
	size_t l = strlen(v);

	if (l == 0 || isspace((unsigned char)v[0]) || isspace((unsigned char)v[l - 1]) ||
	    v[0] == '"' || v[0] == ';' || v[0] == '#')
		fprintf(out, "%s = \"%s\"\n", name, v);
	else
		fprintf(out, "%s = %s\n", name, v);
}

int dp_config_print(const struct dp_config_spec *spec, FILE *out)
{
	size_t n;
	char buf[4096];
	int rc = dp__config_check_table(spec, &n);

	if (rc != 0)
		return rc;
	fprintf(out, "# effective configuration of %s\n[%s]\n", spec->program, spec->program);
	for (size_t i = 0; i < n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];
		const char *text;

		/* A list longer than buf prints what fitted (config.h: such a
		 * line is refused when read back anyway). */
		if (dp__config_type_of(e)->format(e, buf, sizeof(buf), &text) == DP_ENOENT)
			fprintf(out, "# %s is not set\n", e->name);
		else
			print_value(out, e->name, text);
	}
	if (fflush(out) != 0 || ferror(out))
		return dp_error_set(DP_EIO, "cannot write the configuration: %s", strerror(errno));
	return 0;
}

#define HELP_COL 28     /* width of the option column */
#define HELP_WIDTH 79   /* commands: the suffix moves to its own line beyond */

/* "  LEFT  RIGHT": RIGHT may hold several lines, each indented to the
 * column; a LEFT wider than the column gets a line of its own. */
static void help_line(FILE *out, const char *left, const char *right)
{
	const char *nl = strchr(right, '\n');
	int first = nl ? (int)(nl - right) : (int)strlen(right);

	if (strlen(left) <= HELP_COL)
		fprintf(out, "  %-*s  %.*s\n", HELP_COL, left, first, right);
	else
		fprintf(out, "  %s\n  %-*s  %.*s\n", left, HELP_COL, "", first, right);
	while (nl) {
		right = nl + 1;
		nl = strchr(right, '\n');
		first = nl ? (int)(nl - right) : (int)strlen(right);
		fprintf(out, "  %-*s  %.*s\n", HELP_COL, "", first, right);
	}
}

/* " (default: X, range)", " (required)" or " (range)" for entry f. */
static void help_suffix(const struct dp_config_entry *f, char *out, size_t len)
{
	char val[96] = "";

	out[0] = '\0';
	if (dp__config_type_of(f)->range && f->min < f->max) {
		char lo[32], hi[32];

		dp_num_format(lo, sizeof(lo), f->min);
		dp_num_format(hi, sizeof(hi), f->max);
		if (isinf(f->max))
			snprintf(val, sizeof(val), "%s %s", f->min_exclusive ? ">" : ">=", lo);
		else if (isinf(f->min))
			snprintf(val, sizeof(val), "<= %s", hi);
		else
			snprintf(val, sizeof(val), "range %c%s, %s]", f->min_exclusive ? '(' : '[',
				 lo, hi);
	}
	if (f->flags & DP_CONFIG_REQUIRED)
		snprintf(out, len, " (required)");
	else if (f->def)
		snprintf(out, len, " (default: %s%s%s)", f->def, val[0] ? ", " : "", val);
	else if (val[0])
		snprintf(out, len, " (%s)", val);
}

static void help_entry(const struct dp_config_spec *spec, const struct dp_config_entry *f,
		       FILE *out)
{
	char left[160], right[1024], mv[128], suffix[160];
	const char *help = f->help ? f->help : "";
	const char *last = strrchr(help, '\n');
	size_t last_len = strlen(last ? last + 1 : help);
	bool flag = dp__config_type_of(f)->flag;

	if (flag && f->alias)
		snprintf(left, sizeof(left), "--[no-]%s, --[no-]%s", f->name, f->alias);
	else if (flag)
		snprintf(left, sizeof(left), "--[no-]%s", f->name);
	else if (f->alias)
		snprintf(left, sizeof(left), "--%s, --%s %s", f->name, f->alias,
			 dp__config_metavar(f, mv, sizeof(mv)));
	else
		snprintf(left, sizeof(left), "--%s %s", f->name,
			 dp__config_metavar(f, mv, sizeof(mv)));
	help_suffix(f, suffix, sizeof(suffix));
	/* A command's help may run over several lines: keep them short. */
	if (spec->command && suffix[0] && *help &&
	    2 + HELP_COL + 2 + last_len + strlen(suffix) > HELP_WIDTH)
		snprintf(right, sizeof(right), "%s\n%s", help, suffix + 1);
	else
		snprintf(right, sizeof(right), "%s%s", help, *help ? suffix : suffix + (*suffix != 0));
	help_line(out, left, right);
}

static const char *group_of(const struct dp_config_entry *e)
{
	return e->group ? e->group : "Options";
}

/* Every entry grouped by its group, groups in order of first use. */
static void help_groups(const struct dp_config_spec *spec, size_t n, FILE *out)
{
	for (size_t i = 0; i < n; i++) {
		const char *group = group_of(&spec->entries[i]);
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(group_of(&spec->entries[j]), group) == 0;
		if (seen)
			continue;
		fprintf(out, "\n%s:\n", group);
		for (size_t j = i; j < n; j++)
			if (strcmp(group_of(&spec->entries[j]), group) == 0)
				help_entry(spec, &spec->entries[j], out);
	}
}

/* Text that should end with exactly one newline. */
static void put_block(FILE *out, const char *text)
{
	size_t l = strlen(text);

	fputs(text, out);
	if (l == 0 || text[l - 1] != '\n')
		fputc('\n', out);
}

static void help_command(const struct dp_config_spec *spec, size_t n, FILE *out)
{
	const char *syn = spec->synopsis;
	char mv[128];

	if (syn) {
		const char *line = syn;

		for (int k = 0; *line; k++) {
			size_t l = strcspn(line, "\n");

			fprintf(out, "%s %s %.*s\n", k ? "      " : "usage:", spec->program, (int)l,
				line);
			line += l + (line[l] == '\n');
		}
	} else {
		fprintf(out, "usage: %s [options]", spec->program);
		for (size_t i = 0; i < n; i++) {
			const struct dp_config_entry *e = &spec->entries[i];

			if (e->flags & DP_CONFIG_REQUIRED)
				fprintf(out, " --%s %s", e->name,
					dp__config_metavar(e, mv, sizeof(mv)));
		}
		if (spec->args)
			fprintf(out, " %s", spec->args_metavar ? spec->args_metavar : "ARG...");
		fputc('\n', out);
	}
	if (spec->summary) {
		fputc('\n', out);
		put_block(out, spec->summary);
	}
	if (n > 0) {
		help_groups(spec, n, out);
	} else {
		fputs("\nOptions:\n", out);
	}
	help_line(out, "-h, --help", "print this help and exit");
	if (spec->epilog) {
		fputc('\n', out);
		put_block(out, spec->epilog);
	}
}

int dp_config_print_help(const struct dp_config_spec *spec, FILE *out)
{
	size_t n;
	int rc = dp__config_check_table(spec, &n);

	if (rc != 0)
		return rc;
	if (spec->command) {
		help_command(spec, n, out);
	} else {
		fprintf(out, "Usage: %s [--config FILE] [OPTION]...\n", spec->program);
		if (spec->summary)
			fprintf(out, "%s\n", spec->summary);
		fprintf(out, "\nSettings come from their defaults, then the config file (keys at "
			"the top or in [%s]),\nthen the options below, which win.  Every option "
			"is also a config key.\n\nGeneral:\n", spec->program);
		help_line(out, "-c, --config FILE", "read settings from FILE");
		help_line(out, "-n, --check-config", "validate, print the settings and exit");
		help_line(out, "-h, --help", "print this help and exit");
		help_line(out, "-V, --version", "print the version and exit");
		help_groups(spec, n, out);
	}
	if (fflush(out) != 0 || ferror(out))
		return dp_error_set(DP_EIO, "cannot write the help text: %s", strerror(errno));
	return 0;
}
