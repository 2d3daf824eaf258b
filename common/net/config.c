/* SPDX-License-Identifier: Apache-2.0 */
/* Typed configuration, loading: the defaults, the config file, the flags
 * and the checks, all-or-nothing (config.h).  The value types are
 * config_type.c; --help and --check-config are config_print.c. */
#include "common/net/config.h"
#include "common/net/config_impl.h"
#include "common/core/error.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

/* Values are parsed into a stage first and written to the fields only when
 * every step has succeeded, so a failed load leaves the settings alone. */
struct stage {
	const struct dp_config_spec *spec;
	size_t n;
	union dp__config_val *val;
	unsigned char *set;      /* val[i] is new and must be committed */
	unsigned char *owned;    /* val[i] holds memory made by the stage */
	unsigned char *given;    /* the file or a flag set entry i */
	unsigned char *flagged;  /* a flag set entry i (DP_CONFIG_APPEND) */
	size_t *file_line;       /* line of the config file that set entry i */
	union dp__config_val *old;   /* what the commit replaced, for a rollback */
	bool *old_given;
	struct dp_config_strings args, old_args;
	bool args_set;
};

/* ---- values, through the type table (config_impl.h) ----------------------- */

static bool owns_heap(const struct dp_config_entry *e)
{
	return dp__config_type_of(e)->kind != DP__CONFIG_SCALAR;
}

/* Does v hold memory (a text, a list's items)? */
static bool holds_memory(const struct dp_config_entry *e, const union dp__config_val *v)
{
	enum dp__config_kind k = dp__config_type_of(e)->kind;

	return k == DP__CONFIG_TEXT ? v->s != NULL : k == DP__CONFIG_LIST ? v->l.v != NULL : false;
}

/* An unset text or an empty list (a required entry without a value). */
static bool is_unset(const struct dp_config_entry *e, const union dp__config_val *v)
{
	enum dp__config_kind k = dp__config_type_of(e)->kind;

	return k == DP__CONFIG_TEXT ? v->s == NULL : k == DP__CONFIG_LIST ? v->l.n == 0 : false;
}

static void read_field(const struct dp_config_entry *e, union dp__config_val *v)
{
	dp__config_type_of(e)->get(e, v);
}

static void write_field(const struct dp_config_entry *e, const union dp__config_val *v)
{
	dp__config_type_of(e)->put(e, v);
}

static void val_free(const struct dp_config_entry *e, union dp__config_val *v)
{
	const struct dp__config_type *t = dp__config_type_of(e);

	if (t->free)
		t->free(v);
}

/* Parse `text` for entry e into *out (heap memory for texts and lists);
 * *out untouched on failure. */
static int parse_value(const struct dp_config_entry *e, const char *what, const char *text,
		       union dp__config_val *out)
{
	union dp__config_val v = { 0 };
	int rc = dp__config_type_of(e)->parse(e, what, text, &v);

	if (rc != 0)
		return rc;
	*out = v;
	return 0;
}

/* Reserved flag names: the built-in options and the "no-" of booleans. */
static bool reserved(const char *name)
{
	static const char *const builtin[] = { "config", "help", "version", "check-config", NULL };

	for (size_t i = 0; builtin[i]; i++)
		if (strcmp(name, builtin[i]) == 0)
			return true;
	return strncmp(name, "no-", 3) == 0;
}

static bool good_name(const char *s, bool upper_ok)
{
	if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) &&
	    !(upper_ok && isupper((unsigned char)*s)))
		return false;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '-' &&
		    !(upper_ok && isupper((unsigned char)*s)))
			return false;
	return true;
}

static bool same_flag(const struct dp_config_entry *o, const char *s)
{
	return strcmp(o->name, s) == 0 || (o->alias && strcmp(o->alias, s) == 0);
}

/* The table is code, but a mistake in it should be one clear line at
 * startup rather than a crash. */
int dp__config_check_table(const struct dp_config_spec *spec, size_t *count)
{
	const struct dp_config_entry *e;
	size_t n = 0;

	if (spec == NULL || spec->program == NULL || spec->entries == NULL)
		return dp_error_set(DP_EINVAL, "config: spec needs a program name and entries");
	for (e = spec->entries; e->name; e++, n++) {
		if (!good_name(e->name, false))
			return dp_error_set(DP_EINVAL, "config table: bad key name '%s'", e->name);
		if (reserved(e->name))
			return dp_error_set(DP_EINVAL, "config table: key name '%s' is reserved",
					    e->name);
		if (e->alias && (!good_name(e->alias, true) || reserved(e->alias)))
			return dp_error_set(DP_EINVAL, "config table: key '%s': bad alias '%s'",
					    e->name, e->alias);
		if (e->field == NULL || (unsigned)e->type > DP_CONFIG_SIZES)
			return dp_error_set(DP_EINVAL, "config table: key '%s' has no field or type",
					    e->name);
		if (e->type == DP_CONFIG_ENUM && (e->values == NULL || e->values[0] == NULL))
			return dp_error_set(DP_EINVAL, "config table: enum key '%s' has no values",
					    e->name);
		if ((e->flags & DP_CONFIG_REQUIRED) && (!owns_heap(e) || e->def))
			return dp_error_set(DP_EINVAL,
					    "config table: key '%s': only strings, paths and lists "
					    "without a default can be required", e->name);
		if ((e->flags & DP_CONFIG_APPEND) &&
		    dp__config_type_of(e)->kind != DP__CONFIG_LIST)
			return dp_error_set(DP_EINVAL, "config table: key '%s': only lists append",
					    e->name);
		if ((e->flags & DP_CONFIG_WHOLE) && e->type != DP_CONFIG_STRINGS)
			return dp_error_set(DP_EINVAL,
					    "config table: key '%s': only string lists take whole "
					    "values", e->name);
		for (const struct dp_config_entry *o = spec->entries; o != e; o++)
			if (same_flag(o, e->name) || (e->alias && same_flag(o, e->alias)))
				return dp_error_set(DP_EINVAL, "config table: key '%s' twice",
						    e->name);
		if (e->alias && strcmp(e->alias, e->name) == 0)
			return dp_error_set(DP_EINVAL, "config table: key '%s' twice", e->name);
	}
	if (spec->args_max != 0 && spec->args_min > spec->args_max)
		return dp_error_set(DP_EINVAL, "config: %s: args_min > args_max", spec->program);
	*count = n;
	return 0;
}

static void stage_release(struct stage *st)
{
	free(st->val);
	free(st->set);
	free(st->owned);
	free(st->given);
	free(st->flagged);
	free(st->file_line);
	free(st->old);
	free(st->old_given);
}

static int stage_init(struct stage *st, const struct dp_config_spec *spec)
{
	size_t n;
	int rc = dp__config_check_table(spec, &n);

	if (rc != 0)
		return rc;
	memset(st, 0, sizeof(*st));
	st->spec = spec;
	st->n = n;
	st->val = calloc(n + 1, sizeof(*st->val));
	st->set = calloc(n + 1, 1);
	st->owned = calloc(n + 1, 1);
	st->given = calloc(n + 1, 1);
	st->flagged = calloc(n + 1, 1);
	st->file_line = calloc(n + 1, sizeof(*st->file_line));
	st->old = calloc(n + 1, sizeof(*st->old));
	st->old_given = calloc(n + 1, sizeof(*st->old_given));
	if (!st->val || !st->set || !st->owned || !st->given || !st->flagged || !st->file_line ||
	    !st->old || !st->old_given) {
		stage_release(st);
		return dp_error_set(DP_ENOMEM, "config: out of memory");
	}
	for (size_t i = 0; i < n; i++)
		read_field(&spec->entries[i], &st->val[i]);
	return 0;
}

static void stage_free(struct stage *st)
{
	for (size_t i = 0; i < st->n; i++)
		if (st->owned[i])
			val_free(&st->spec->entries[i], &st->val[i]);
	dp_config_strings_free(&st->args);
	stage_release(st);
	memset(st, 0, sizeof(*st));
}

/* Store a parsed value in the stage, taking ownership of its memory. */
static void stage_put(struct stage *st, size_t i, union dp__config_val v)
{
	const struct dp_config_entry *e = &st->spec->entries[i];

	if (st->owned[i])
		val_free(e, &st->val[i]);
	st->val[i] = v;
	st->owned[i] = holds_memory(e, &v);
	st->set[i] = 1;
}

/* Write the staged values into the fields.  With keep_old the replaced
 * values are kept in the stage so that a failed validation can put them
 * back (stage_rollback) or free them (stage_free_old); otherwise they are
 * freed now. */
static void stage_commit(struct stage *st, bool keep_old)
{
	const struct dp_config_spec *spec = st->spec;

	for (size_t i = 0; i < st->n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];

		if (!st->set[i])
			continue;
		if (keep_old) {
			read_field(e, &st->old[i]);
			if (e->given)
				st->old_given[i] = *e->given;
		} else if (owns_heap(e)) {
			union dp__config_val cur;

			read_field(e, &cur);
			val_free(e, &cur);
		}
		write_field(e, &st->val[i]);
		if (e->given)
			*e->given = st->given[i];
		st->owned[i] = 0;
	}
	if (st->args_set && spec->args) {
		if (keep_old)
			st->old_args = *spec->args;
		else
			dp_config_strings_free(spec->args);
		*spec->args = st->args;
		st->args = (struct dp_config_strings){ 0 };
	}
}

/* Undo stage_commit(st, true): free the new values, restore the old. */
static void stage_rollback(struct stage *st)
{
	const struct dp_config_spec *spec = st->spec;

	for (size_t i = 0; i < st->n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];

		if (!st->set[i])
			continue;
		if (owns_heap(e)) {
			union dp__config_val cur;

			read_field(e, &cur);
			val_free(e, &cur);
		}
		write_field(e, &st->old[i]);
		if (e->given)
			*e->given = st->old_given[i];
	}
	if (st->args_set && spec->args) {
		dp_config_strings_free(spec->args);
		*spec->args = st->old_args;
		st->old_args = (struct dp_config_strings){ 0 };
	}
}

static void stage_free_old(struct stage *st)
{
	for (size_t i = 0; i < st->n; i++)
		if (st->set[i])
			val_free(&st->spec->entries[i], &st->old[i]);
	dp_config_strings_free(&st->old_args);
}

long dp__config_find(const struct dp_config_spec *spec, const char *name)
{
	for (long i = 0; spec->entries[i].name; i++)
		if (strcmp(spec->entries[i].name, name) == 0)
			return i;
	return -1;
}

/* Add the items of `more` to the list `to` (both the stage's); `more` is
 * consumed either way. */
static int list_append(const struct dp_config_entry *e, union dp__config_val *to,
		       union dp__config_val *more)
{
	size_t es = dp__config_type_of(e)->item;
	char *v;

	if (to->l.n > SIZE_MAX / es - more->l.n) {
		val_free(e, more);
		return dp_error_set(DP_ENOMEM, "config: out of memory");
	}
	v = realloc(to->l.v, (to->l.n + more->l.n) * es);
	if (v == NULL) {
		val_free(e, more);
		return dp_error_set(DP_ENOMEM, "config: out of memory");
	}
	memcpy(v + to->l.n * es, more->l.v, more->l.n * es);
	to->l.v = v;
	to->l.n += more->l.n;
	free(more->l.v);   /* the items (strings) moved to `to` */
	more->l.v = NULL;
	more->l.n = 0;
	return 0;
}

/* ---- defaults and single values --------------------------------------- */

static int stage_defaults(struct stage *st)
{
	char what[128];

	for (size_t i = 0; i < st->n; i++) {
		const struct dp_config_entry *e = &st->spec->entries[i];
		union dp__config_val v = { 0 };
		int rc;

		if (e->def) {
			snprintf(what, sizeof(what), "config table: default of '%s'", e->name);
			rc = parse_value(e, what, e->def, &v);
			if (rc != 0)
				return rc;
		} else if (!owns_heap(e)) {
			read_field(e, &v);  /* numbers without a default keep theirs */
		}
		stage_put(st, i, v);
		st->given[i] = 0;
	}
	return 0;
}

int dp_config_set_defaults(const struct dp_config_spec *spec)
{
	struct stage st;
	int rc = stage_init(&st, spec);

	if (rc != 0)
		return rc;
	rc = stage_defaults(&st);
	if (rc == 0)
		stage_commit(&st, false);
	stage_free(&st);
	return rc;
}

/* Parse `value` for entry i and stage it.  A flag of an APPEND list that
 * a flag already set adds to it; anything else replaces. */
static int stage_set(struct stage *st, size_t i, const char *value, const char *origin,
		     bool flag)
{
	const struct dp_config_entry *e = &st->spec->entries[i];
	union dp__config_val v;
	int rc;

	rc = parse_value(e, origin, value, &v);
	if (rc != 0)
		return rc;
	if (flag && (e->flags & DP_CONFIG_APPEND) && st->flagged[i]) {
		rc = list_append(e, &st->val[i], &v);
		if (rc != 0)
			return rc;
		st->owned[i] = st->val[i].l.v != NULL;
	} else {
		stage_put(st, i, v);
	}
	st->given[i] = 1;
	if (flag)
		st->flagged[i] = 1;
	return 0;
}

int dp_config_set(const struct dp_config_spec *spec, const char *name, const char *value,
		  const char *origin)
{
	struct stage st;
	char what[160];
	long i;
	int rc;

	if (name == NULL || value == NULL)
		return dp_error_set(DP_EINVAL, "config: set needs a name and a value");
	rc = stage_init(&st, spec);
	if (rc != 0)
		return rc;
	i = dp__config_find(spec, name);
	if (i < 0) {
		rc = dp_error_set(DP_EINVAL, "unknown setting '%s'", name);
	} else {
		if (origin == NULL) {
			snprintf(what, sizeof(what), "key '%s'", name);
			origin = what;
		}
		rc = stage_set(&st, (size_t)i, value, origin, false);
	}
	if (rc == 0)
		stage_commit(&st, false);
	stage_free(&st);
	return rc;
}

/* ---- config file -------------------------------------------------------- */

struct file_ctx {
	struct stage *st;
	const char *path;
	FILE *f;
	char *buf;
	size_t cap;
	size_t lineno;
	int err;
	int read_errno;
};

static int file_error(struct file_ctx *fc, int code, const char *fmt, const char *a,
		      const char *b)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, a, b);
	fc->err = dp_error_set(code, "%s:%zu: %s", fc->path, fc->lineno, msg);
	return fc->err;
}

/* Where a line's inline comment starts (inih: ';' after whitespace). */
static const char *comment_start(const char *s)
{
	for (const char *c = s; *c; c++)
		if (*c == ';' && c > s && isspace((unsigned char)c[-1]))
			return c;
	return s + strlen(s);
}

/* Syntax is checked here, on the raw line, so that errors can say what is
 * wrong; inih's own "first bad line" remains the fallback. */
static int check_syntax(struct file_ctx *fc, const char *s)
{
	const char *end = comment_start(s);
	const char *close;

	if (*s == '\0' || *s == ';' || *s == '#')
		return 0;
	if (*s == '[') {
		close = memchr(s, ']', (size_t)(end - s));
		if (close == NULL)
			return file_error(fc, DP_EINVAL, "section header without ']'", "", "");
		for (close++; close < end; close++)
			if (!isspace((unsigned char)*close))
				return file_error(fc, DP_EINVAL, "text after the section header",
						  "", "");
		return 0;
	}
	for (const char *c = s; c < end; c++)
		if (*c == '=' || *c == ':')
			return c == s ? file_error(fc, DP_EINVAL, "missing key before '%s'",
						   *c == '=' ? "=" : ":", "")
				      : 0;
	return file_error(fc, DP_EINVAL, "expected 'key = value', '[section]' or a comment", "",
			  "");
}

/* An ini_reader: hands inih one whole line at a time, which gives exact
 * line numbers, refuses over-long lines instead of letting them be split,
 * and drops leading whitespace so that indented keys are never taken for
 * continuation lines. */
static char *read_line(char *str, int num, void *stream)
{
	struct file_ctx *fc = stream;
	ssize_t n;
	size_t len;
	char *s;

	if (fc->err != 0)
		return NULL;
	errno = 0;
	n = getline(&fc->buf, &fc->cap, fc->f);
	if (n < 0) {
		fc->read_errno = errno;
		return NULL;
	}
	fc->lineno++;
	len = (size_t)n;
	if (strlen(fc->buf) != len) {
		file_error(fc, DP_EINVAL, "NUL byte in line", "", "");
		return NULL;
	}
	if (len > 0 && fc->buf[len - 1] == '\n')
		fc->buf[--len] = '\0';
	if (len > 0 && fc->buf[len - 1] == '\r')
		fc->buf[--len] = '\0';
	if (len > DP_CONFIG_MAX_LINE || len + 2 > (size_t)num) {
		char lim[32];

		snprintf(lim, sizeof(lim), "%d", DP_CONFIG_MAX_LINE);
		file_error(fc, DP_EINVAL, "line longer than %s characters", lim, "");
		return NULL;
	}
	s = fc->buf;
	while (*s == ' ' || *s == '\t')
		s++;
	if (check_syntax(fc, s) != 0)
		return NULL;
	memcpy(str, s, strlen(s) + 1);
	return str;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct file_ctx *fc = user;
	struct stage *st = fc->st;
	const char *program = st->spec->program;
	char what[512], *unq = NULL;
	size_t vlen;
	long i;
	int rc;

	if (fc->err != 0)
		return 0;
	if (*section && strcmp(section, program) != 0) {
		char sect[64];

		snprintf(sect, sizeof(sect), "%s", section);
		fc->err = dp_error_set(DP_EINVAL,
				       "%s:%zu: key '%s' in section [%s]: this file configures %s "
				       "(keys at the top or in [%s])", fc->path, fc->lineno, name,
				       sect, program, program);
		return 0;
	}
	i = dp__config_find(st->spec, name);
	if (i < 0) {
		char alt[64];

		snprintf(alt, sizeof(alt), "%s", name);
		for (char *c = alt; *c; c++)
			*c = *c == '_' ? '-' : (char)tolower((unsigned char)*c);
		if (strcmp(alt, name) != 0 && dp__config_find(st->spec, alt) >= 0)
			file_error(fc, DP_EINVAL, "unknown key '%s' (did you mean '%s'?)", name, alt);
		else
			file_error(fc, DP_EINVAL, "unknown key '%s'", name, "");
		return 0;
	}
	if (st->file_line[i]) {
		fc->err = dp_error_set(DP_EINVAL, "%s:%zu: key '%s': given twice (first on line %zu)",
				       fc->path, fc->lineno, name, st->file_line[i]);
		return 0;
	}
	vlen = strlen(value);
	if (value[0] == '"' && (vlen < 2 || value[vlen - 1] != '"')) {
		fc->err = dp_error_set(DP_EINVAL, "%s:%zu: key '%s': unbalanced quote (\" ;\" starts "
				       "a comment, even inside quotes)", fc->path, fc->lineno, name);
		return 0;
	}
	if (vlen >= 2 && value[0] == '"' && value[vlen - 1] == '"') {
		unq = strndup(value + 1, vlen - 2);
		if (unq == NULL) {
			fc->err = dp_error_set(DP_ENOMEM, "config: out of memory");
			return 0;
		}
		value = unq;
	}
	snprintf(what, sizeof(what), "%s:%zu: key '%s'", fc->path, fc->lineno, name);
	rc = stage_set(st, (size_t)i, value, what, false);
	free(unq);
	if (rc != 0) {
		fc->err = rc;
		return 0;
	}
	st->file_line[i] = fc->lineno;
	return 1;
}

static int stage_file(struct stage *st, const char *path)
{
	struct file_ctx fc = { .st = st, .path = path };
	int r, rc = 0;

	if (path == NULL || *path == '\0')
		return dp_error_set(DP_EINVAL, "config file: empty path");
	fc.f = fopen(path, "r");
	if (fc.f == NULL) {
		int e = errno;

		return dp_error_set(e == ENOENT ? DP_ENOENT : DP_EIO, "%s: cannot open: %s", path,
				    strerror(e));
	}
	r = ini_parse_stream(read_line, &fc, on_key, &fc);
	if (fc.err != 0)
		rc = fc.err;
	else if (ferror(fc.f))
		rc = dp_error_set(DP_EIO, "%s: cannot read: %s", path,
				  strerror(fc.read_errno ? fc.read_errno : EIO));
	else if (r == -2)
		rc = dp_error_set(DP_ENOMEM, "config: out of memory");
	else if (r != 0)
		rc = dp_error_set(DP_EINVAL, "%s:%d: syntax error", path, r);
	free(fc.buf);
	fclose(fc.f);
	return rc;
}

int dp_config_load_file(const struct dp_config_spec *spec, const char *path)
{
	struct stage st;
	int rc = stage_init(&st, spec);

	if (rc != 0)
		return rc;
	rc = stage_file(&st, path);
	if (rc == 0)
		stage_commit(&st, false);
	stage_free(&st);
	return rc;
}

/* ---- checks --------------------------------------------------------------- */

static int missing(const struct dp_config_spec *spec, const struct dp_config_entry *e)
{
	char mv[128];

	/* The program prefixes its own name when it prints the detail. */
	if (spec->command)
		return dp_error_set(DP_EINVAL, "--%s %s is required", e->name,
				    dp__config_metavar(e, mv, sizeof(mv)));
	return dp_error_set(DP_EINVAL, "'%s' is not set (use --%s or '%s = ...' in the "
			    "config file)", e->name, e->name, e->name);
}

int dp_config_check(const struct dp_config_spec *spec)
{
	size_t n;
	int rc = dp__config_check_table(spec, &n);

	if (rc != 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];
		union dp__config_val v;

		read_field(e, &v);
		if ((e->flags & DP_CONFIG_REQUIRED) && is_unset(e, &v))
			return missing(spec, e);
	}
	return spec->validate ? spec->validate(spec->validate_arg) : 0;
}

void dp_config_free(const struct dp_config_spec *spec)
{
	if (spec == NULL || spec->entries == NULL)
		return;
	for (const struct dp_config_entry *e = spec->entries; e->name; e++) {
		union dp__config_val v;

		/* No table check here: free what a valid entry holds, skip the rest. */
		if ((unsigned)e->type > DP_CONFIG_SIZES || e->field == NULL || !owns_heap(e))
			continue;
		read_field(e, &v);
		val_free(e, &v);
		write_field(e, &v);
	}
	if (spec->args)
		dp_config_strings_free(spec->args);
}

/* ---- command line (scanned by config_args.c) ------------------------------ */

static int stage_args(struct stage *st, const struct dp__config_scan *sc)
{
	const struct dp_config_spec *spec = st->spec;
	const char *mv = spec->args_metavar ? spec->args_metavar : "ARG...";
	size_t n = sc->npos, lo = spec->args_min, hi = spec->args_max;

	if (spec->args == NULL)
		return 0;
	if (n == 0 && lo > 0)
		return dp_error_set(DP_EINVAL, "missing %s", mv);
	if (n < lo || (hi != 0 && n > hi)) {
		if (lo == hi)
			return dp_error_set(DP_EINVAL, "expected %s (%zu argument%s), got %zu", mv,
					    lo, lo == 1 ? "" : "s", n);
		if (hi == 0)
			return dp_error_set(DP_EINVAL, "expected %s (at least %zu arguments), got %zu",
					    mv, lo, n);
		return dp_error_set(DP_EINVAL, "expected %s (%zu to %zu arguments), got %zu", mv, lo,
				    hi, n);
	}
	st->args.v = calloc(n + 1, sizeof(char *));
	if (st->args.v == NULL)
		return dp_error_set(DP_ENOMEM, "config: out of memory");
	for (size_t i = 0; i < n; i++) {
		st->args.v[i] = strdup(sc->pos[i]);
		if (st->args.v[i] == NULL)
			return dp_error_set(DP_ENOMEM, "config: out of memory");
		st->args.n++;
	}
	st->args_set = true;
	return 0;
}

int dp_config_load(const struct dp_config_spec *spec, int argc, char *const argv[],
		   enum dp_config_action *action)
{
	struct stage st;
	struct dp__config_scan sc = { .spec = spec };
	int rc;

	if (action == NULL || argc < 1 || argv == NULL)
		return dp_error_set(DP_EINVAL, "config: load needs argv and an action");
	rc = stage_init(&st, spec);
	if (rc != 0)
		return rc;
	rc = dp__config_scan_args(&sc, st.n, argc, argv);
	if (sc.help || sc.version) {
		*action = sc.help ? DP_CONFIG_HELP : DP_CONFIG_VERSION;
		rc = 0;
		goto out;
	}
	if (rc != 0)
		goto out;
	rc = stage_defaults(&st);
	if (rc == 0 && sc.config)
		rc = stage_file(&st, sc.config);
	for (size_t f = 0; rc == 0 && f < sc.nflags; f++) {
		char what[128];

		snprintf(what, sizeof(what), "option %.*s", (int)strcspn(sc.flags[f].tok, "="),
			 sc.flags[f].tok);
		rc = stage_set(&st, sc.flags[f].idx,
			       sc.flags[f].value ? sc.flags[f].value : "false", what, true);
	}
	for (size_t i = 0; rc == 0 && i < st.n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];

		if ((e->flags & DP_CONFIG_REQUIRED) && is_unset(e, &st.val[i]))
			rc = missing(spec, e);
	}
	if (rc == 0)
		rc = stage_args(&st, &sc);
	if (rc != 0)
		goto out;
	stage_commit(&st, true);
	if (spec->validate) {
		rc = spec->validate(spec->validate_arg);
		if (rc != 0) {
			stage_rollback(&st);
			goto out;
		}
	}
	stage_free_old(&st);
	*action = sc.check ? DP_CONFIG_CHECK : DP_CONFIG_RUN;
out:
	dp__config_scan_free(&sc);
	stage_free(&st);
	return rc;
}
