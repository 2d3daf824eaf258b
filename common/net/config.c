/* SPDX-License-Identifier: Apache-2.0 */
#include "common/net/config.h"
#include "common/core/error.h"
#include "common/core/num.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

/* Values are parsed into a stage first and written to the fields only when
 * every step has succeeded, so a failed load leaves the settings alone. */
union val {
	char *s;
	double d;
	uint64_t u;
	size_t z;
	bool b;
	int e;
	struct {
		void *v;
		size_t n;
	} l;
};

struct stage {
	const struct dp_config_spec *spec;
	size_t n;
	union val *val;
	unsigned char *set;      /* val[i] is new and must be committed */
	unsigned char *owned;    /* val[i] holds memory made by the stage */
	unsigned char *given;    /* the file or a flag set entry i */
	unsigned char *flagged;  /* a flag set entry i (DP_CONFIG_APPEND) */
	size_t *file_line;       /* line of the config file that set entry i */
	union val *old;          /* what the commit replaced, for a rollback */
	bool *old_given;
	struct dp_config_strings args, old_args;
	bool args_set;
};

static bool is_string(enum dp_config_type t)
{
	return t == DP_CONFIG_STRING || t == DP_CONFIG_PATH;
}

static bool is_list(enum dp_config_type t)
{
	return t == DP_CONFIG_STRINGS || t == DP_CONFIG_DOUBLES || t == DP_CONFIG_DOUBLES_INF ||
	       t == DP_CONFIG_SIZES;
}

/* Types whose value is heap memory owned by this module. */
static bool owns_heap(enum dp_config_type t)
{
	return is_string(t) || is_list(t);
}

/* Types a range applies to (to every item of a list). */
static bool has_range(enum dp_config_type t)
{
	return t == DP_CONFIG_DOUBLE || t == DP_CONFIG_DOUBLE_INF || t == DP_CONFIG_U64 ||
	       t == DP_CONFIG_SIZE || t == DP_CONFIG_DURATION || t == DP_CONFIG_DOUBLES ||
	       t == DP_CONFIG_DOUBLES_INF || t == DP_CONFIG_SIZES;
}

static size_t elem_size(enum dp_config_type t)
{
	switch (t) {
	case DP_CONFIG_STRINGS: return sizeof(char *);
	case DP_CONFIG_DOUBLES:
	case DP_CONFIG_DOUBLES_INF: return sizeof(double);
	case DP_CONFIG_SIZES: return sizeof(size_t);
	default: return 0;
	}
}

void dp_config_strings_free(struct dp_config_strings *l)
{
	DP_REQUIRE(l != NULL);
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static void val_free(enum dp_config_type t, union val *v)
{
	if (is_string(t)) {
		free(v->s);
		v->s = NULL;
	} else if (is_list(t)) {
		if (t == DP_CONFIG_STRINGS)
			for (size_t i = 0; i < v->l.n; i++)
				free(((char **)v->l.v)[i]);
		free(v->l.v);
		v->l.v = NULL;
		v->l.n = 0;
	}
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
static int check_table(const struct dp_config_spec *spec, size_t *count)
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
		if ((e->flags & DP_CONFIG_REQUIRED) && (!owns_heap(e->type) || e->def))
			return dp_error_set(DP_EINVAL,
					    "config table: key '%s': only strings, paths and lists "
					    "without a default can be required", e->name);
		if ((e->flags & DP_CONFIG_APPEND) && !is_list(e->type))
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

static void read_field(const struct dp_config_entry *e, union val *v)
{
	switch (e->type) {
	case DP_CONFIG_STRING:
	case DP_CONFIG_PATH: v->s = *(char **)e->field; break;
	case DP_CONFIG_DOUBLE:
	case DP_CONFIG_DOUBLE_INF:
	case DP_CONFIG_DURATION: v->d = *(double *)e->field; break;
	case DP_CONFIG_U64: v->u = *(uint64_t *)e->field; break;
	case DP_CONFIG_SIZE: v->z = *(size_t *)e->field; break;
	case DP_CONFIG_BOOL: v->b = *(bool *)e->field; break;
	case DP_CONFIG_ENUM: v->e = *(int *)e->field; break;
	case DP_CONFIG_STRINGS: {
		struct dp_config_strings *l = e->field;

		v->l.v = l->v;
		v->l.n = l->n;
		break;
	}
	case DP_CONFIG_DOUBLES:
	case DP_CONFIG_DOUBLES_INF: {
		struct dp_config_doubles *l = e->field;

		v->l.v = l->v;
		v->l.n = l->n;
		break;
	}
	case DP_CONFIG_SIZES: {
		struct dp_config_sizes *l = e->field;

		v->l.v = l->v;
		v->l.n = l->n;
		break;
	}
	}
}

static void write_field(const struct dp_config_entry *e, const union val *v)
{
	switch (e->type) {
	case DP_CONFIG_STRING:
	case DP_CONFIG_PATH: *(char **)e->field = v->s; break;
	case DP_CONFIG_DOUBLE:
	case DP_CONFIG_DOUBLE_INF:
	case DP_CONFIG_DURATION: *(double *)e->field = v->d; break;
	case DP_CONFIG_U64: *(uint64_t *)e->field = v->u; break;
	case DP_CONFIG_SIZE: *(size_t *)e->field = v->z; break;
	case DP_CONFIG_BOOL: *(bool *)e->field = v->b; break;
	case DP_CONFIG_ENUM: *(int *)e->field = v->e; break;
	case DP_CONFIG_STRINGS:
		*(struct dp_config_strings *)e->field =
			(struct dp_config_strings){ .v = v->l.v, .n = v->l.n };
		break;
	case DP_CONFIG_DOUBLES:
	case DP_CONFIG_DOUBLES_INF:
		*(struct dp_config_doubles *)e->field =
			(struct dp_config_doubles){ .v = v->l.v, .n = v->l.n };
		break;
	case DP_CONFIG_SIZES:
		*(struct dp_config_sizes *)e->field =
			(struct dp_config_sizes){ .v = v->l.v, .n = v->l.n };
		break;
	}
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
	int rc = check_table(spec, &n);

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
			val_free(st->spec->entries[i].type, &st->val[i]);
	dp_config_strings_free(&st->args);
	stage_release(st);
	memset(st, 0, sizeof(*st));
}

/* Store a parsed value in the stage, taking ownership of its memory. */
static void stage_put(struct stage *st, size_t i, union val v)
{
	enum dp_config_type t = st->spec->entries[i].type;

	if (st->owned[i])
		val_free(t, &st->val[i]);
	st->val[i] = v;
	st->owned[i] = is_string(t) ? v.s != NULL : is_list(t) ? v.l.v != NULL : 0;
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
		} else if (owns_heap(e->type)) {
			union val cur;

			read_field(e, &cur);
			val_free(e->type, &cur);
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
		if (owns_heap(e->type)) {
			union val cur;

			read_field(e, &cur);
			val_free(e->type, &cur);
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
			val_free(st->spec->entries[i].type, &st->old[i]);
	dp_config_strings_free(&st->old_args);
}

static long find(const struct dp_config_spec *spec, const char *name)
{
	for (long i = 0; spec->entries[i].name; i++)
		if (strcmp(spec->entries[i].name, name) == 0)
			return i;
	return -1;
}

/* ---- values ---------------------------------------------------------- */

static int check_range(const struct dp_config_entry *e, const char *what, const char *text,
		       double v)
{
	char lo[32], hi[32];
	bool lo_ok, hi_ok;

	if (!(e->min < e->max))
		return 0;
	lo_ok = e->min_exclusive ? v > e->min : v >= e->min;
	hi_ok = v <= e->max;
	if (lo_ok && hi_ok)
		return 0;
	dp_num_format(lo, sizeof(lo), e->min);
	dp_num_format(hi, sizeof(hi), e->max);
	if (isinf(e->max))
		return dp_error_set(DP_EINVAL, "%s: must be %s %s, got '%s'", what,
				    e->min_exclusive ? ">" : ">=", lo, text);
	if (isinf(e->min))
		return dp_error_set(DP_EINVAL, "%s: must be <= %s, got '%s'", what, hi, text);
	return dp_error_set(DP_EINVAL, "%s: must be in %c%s, %s], got '%s'", what,
			    e->min_exclusive ? '(' : '[', lo, hi, text);
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1", NULL };
	static const char *const no[] = { "false", "no", "off", "0", NULL };

	for (size_t i = 0; yes[i]; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

static int parse_duration(const char *what, const char *s, double *out)
{
	static const struct { const char *suffix; double scale; } units[] = {
		{ "ms", 1e-3 }, { "s", 1 }, { "m", 60 }, { "h", 3600 },
	};
	size_t len = strlen(s);
	double scale = 1, v;
	char num[64];
	char *end;

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t sl = strlen(units[i].suffix);

		if (len > sl && strcmp(s + len - sl, units[i].suffix) == 0 &&
		    isdigit((unsigned char)s[len - sl - 1])) {
			len -= sl;
			scale = units[i].scale;
			break;
		}
	}
	if (len == 0 || len >= sizeof(num) || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
		goto bad;
	for (size_t i = 0; i < len; i++)  /* no hex, no "inf" */
		if (!isdigit((unsigned char)s[i]) && !strchr(".eE+-", s[i]))
			goto bad;
	memcpy(num, s, len);
	num[len] = '\0';
	errno = 0;
	v = strtod(num, &end);
	if (*end != '\0' || errno == ERANGE || !isfinite(v * scale))
		goto bad;
	*out = v * scale;
	return 0;
bad:
	return dp_error_set(DP_EINVAL,
			    "%s: expected a duration such as 30, 1.5s, 250ms, 5m or 2h, got '%s'",
			    what, s);
}

/* A line break would corrupt --check-config output and logs. */
static int check_text(const char *what, const char *text)
{
	for (const char *c = text; *c; c++)
		if ((unsigned char)*c < 0x20 && *c != '\t')
			return dp_error_set(DP_EINVAL, "%s: control character in value", what);
	return 0;
}

static bool escapable(char c)
{
	return c == ',' || c == '=' || c == '\\';
}

/* A STRINGS value: comma-separated items with "\," "\=" "\\" escapes.
 * Empty items are refused: they would only be typos. */
static int split_items(const char *what, const char *s, union val *out)
{
	size_t len = strlen(s), n = 1, k = 0, m = 0;
	char **items, *item;
	int rc = 0;

	if (*s == '\0')
		return dp_error_set(DP_EINVAL, "%s: empty list", what);
	for (size_t i = 0; s[i]; i++) {
		if (s[i] == '\\' && escapable(s[i + 1]))
			i++;
		else if (s[i] == ',')
			n++;
	}
	items = calloc(n, sizeof(*items));
	item = malloc(len + 1);
	if (items == NULL || item == NULL) {
		free(items);
		free(item);
		return dp_error_set(DP_ENOMEM, "%s: out of memory", what);
	}
	for (size_t i = 0;; i++) {
		char c = s[i];

		if (c == '\\' && escapable(s[i + 1])) {
			item[k++] = s[++i];
			continue;
		}
		if (c != ',' && c != '\0') {
			item[k++] = c;
			continue;
		}
		item[k] = '\0';
		if (k == 0) {
			rc = dp_error_set(DP_EINVAL, "%s: empty item in '%s'", what, s);
			break;
		}
		items[m] = strdup(item);
		if (items[m] == NULL) {
			rc = dp_error_set(DP_ENOMEM, "%s: out of memory", what);
			break;
		}
		m++;
		k = 0;
		if (c == '\0')
			break;
	}
	free(item);
	if (rc != 0) {
		for (size_t i = 0; i < m; i++)
			free(items[i]);
		free(items);
		return rc;
	}
	out->l.v = items;
	out->l.n = m;
	return 0;
}

int dp_config_split(const char *what, const char *text, struct dp_config_strings *out)
{
	union val v;
	int rc;

	DP_REQUIRE(what != NULL && text != NULL && out != NULL);
	rc = check_text(what, text);
	if (rc == 0)
		rc = split_items(what, text, &v);
	if (rc == 0)
		*out = (struct dp_config_strings){ .v = v.l.v, .n = v.l.n };
	return rc;
}

/* The end of parsing a list of numbers: after rc == 0 the n values v are
 * the list *out, else v is freed and rc returned. */
static int keep_list(const char *what, int rc, void *v, size_t n, union val *out)
{
	if (rc != 0) {
		free(v);
		return rc == DP_ENOMEM ? dp_error_set(rc, "%s: out of memory", what) : rc;
	}
	out->l.v = v;
	out->l.n = n;
	return 0;
}

static int parse_list(const struct dp_config_entry *e, const char *what, const char *text,
		      union val *out)
{
	char item[32];
	int rc;

	switch (e->type) {
	case DP_CONFIG_STRINGS:
		rc = check_text(what, text);
		if (rc != 0)
			return rc;
		if (!(e->flags & DP_CONFIG_WHOLE))
			return split_items(what, text, out);
		if (*text == '\0')
			return dp_error_set(DP_EINVAL, "%s: empty value", what);
		out->l.v = malloc(sizeof(char *));
		if (out->l.v == NULL)
			return dp_error_set(DP_ENOMEM, "%s: out of memory", what);
		((char **)out->l.v)[0] = strdup(text);
		if (((char **)out->l.v)[0] == NULL) {
			free(out->l.v);
			return dp_error_set(DP_ENOMEM, "%s: out of memory", what);
		}
		out->l.n = 1;
		return 0;
	case DP_CONFIG_DOUBLES:
	case DP_CONFIG_DOUBLES_INF: {
		double *v = NULL;
		size_t n = 0;

		rc = dp_num_parse_double_list(what, text, e->type == DP_CONFIG_DOUBLES_INF, &v, &n);
		for (size_t i = 0; rc == 0 && i < n; i++) {
			dp_num_format(item, sizeof(item), v[i]);
			rc = check_range(e, what, item, v[i]);
		}
		return keep_list(what, rc, v, n, out);
	}
	case DP_CONFIG_SIZES: {
		size_t *v = NULL, n = 0;

		rc = dp_num_parse_size_list(what, text, &v, &n);
		for (size_t i = 0; rc == 0 && i < n; i++) {
			snprintf(item, sizeof(item), "%zu", v[i]);
			rc = check_range(e, what, item, (double)v[i]);
		}
		return keep_list(what, rc, v, n, out);
	}
	default:
		return dp_error_set(DP_EINVAL, "%s: not a list", what);
	}
}

/* Parse `text` for entry e into *out (heap memory for strings and lists). */
static int parse_value(const struct dp_config_entry *e, const char *what, const char *text,
		       union val *out)
{
	union val v = { 0 };
	int rc = 0;

	switch (e->type) {
	case DP_CONFIG_STRING:
	case DP_CONFIG_PATH:
		if (e->type == DP_CONFIG_PATH && *text == '\0')
			return dp_error_set(DP_EINVAL, "%s: empty path", what);
		rc = check_text(what, text);
		if (rc != 0)
			return rc;
		v.s = strdup(text);
		if (v.s == NULL)
			return dp_error_set(DP_ENOMEM, "%s: out of memory", what);
		break;
	case DP_CONFIG_DOUBLE:
	case DP_CONFIG_DOUBLE_INF:
		rc = dp_num_parse_double(what, text, e->type == DP_CONFIG_DOUBLE_INF, &v.d);
		if (rc == 0)
			rc = check_range(e, what, text, v.d);
		break;
	case DP_CONFIG_DURATION:
		rc = parse_duration(what, text, &v.d);
		if (rc == 0 && v.d < 0)
			rc = dp_error_set(DP_EINVAL, "%s: negative duration '%s'", what, text);
		if (rc == 0)
			rc = check_range(e, what, text, v.d);
		break;
	case DP_CONFIG_U64:
		rc = dp_num_parse_u64(what, text, &v.u);
		if (rc == 0)
			rc = check_range(e, what, text, (double)v.u);
		break;
	case DP_CONFIG_SIZE:
		rc = dp_num_parse_size(what, text, &v.z);
		if (rc == 0)
			rc = check_range(e, what, text, (double)v.z);
		break;
	case DP_CONFIG_BOOL:
		if (parse_bool(text, &v.b) != 0)
			rc = dp_error_set(DP_EINVAL,
					  "%s: expected true/false, yes/no, on/off or 1/0, got '%s'",
					  what, text);
		break;
	case DP_CONFIG_ENUM: {
		char list[256];
		size_t off = 0;

		for (int i = 0; e->values[i]; i++) {
			if (strcmp(text, e->values[i]) == 0) {
				v.e = i;
				*out = v;
				return 0;
			}
		}
		list[0] = '\0';
		for (int i = 0; e->values[i] && off < sizeof(list); i++)
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
						i ? ", " : "", e->values[i]);
		return dp_error_set(DP_EINVAL, "%s: expected one of %s, got '%s'", what, list, text);
	}
	case DP_CONFIG_STRINGS:
	case DP_CONFIG_DOUBLES:
	case DP_CONFIG_DOUBLES_INF:
	case DP_CONFIG_SIZES:
		rc = parse_list(e, what, text, &v);
		break;
	}
	if (rc != 0)
		return rc;
	*out = v;
	return 0;
}

/* Add the items of `more` to the list `to` (both the stage's); `more` is
 * consumed either way. */
static int list_append(const struct dp_config_entry *e, union val *to, union val *more)
{
	size_t es = elem_size(e->type);
	char *v;

	if (to->l.n > SIZE_MAX / es - more->l.n) {
		val_free(e->type, more);
		return dp_error_set(DP_ENOMEM, "config: out of memory");
	}
	v = realloc(to->l.v, (to->l.n + more->l.n) * es);
	if (v == NULL) {
		val_free(e->type, more);
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
		union val v = { 0 };
		int rc;

		if (e->def) {
			snprintf(what, sizeof(what), "config table: default of '%s'", e->name);
			rc = parse_value(e, what, e->def, &v);
			if (rc != 0)
				return rc;
		} else if (!owns_heap(e->type)) {
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
	union val v;
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
	i = find(spec, name);
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
	i = find(st->spec, name);
	if (i < 0) {
		char alt[64];

		snprintf(alt, sizeof(alt), "%s", name);
		for (char *c = alt; *c; c++)
			*c = *c == '_' ? '-' : (char)tolower((unsigned char)*c);
		if (strcmp(alt, name) != 0 && find(st->spec, alt) >= 0)
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

static const char *metavar(const struct dp_config_entry *e, char *buf, size_t len);

static bool is_unset(const struct dp_config_entry *e, const union val *v)
{
	return is_string(e->type) ? v->s == NULL : is_list(e->type) ? v->l.n == 0 : false;
}

static int missing(const struct dp_config_spec *spec, const struct dp_config_entry *e)
{
	char mv[128];

	/* The program prefixes its own name when it prints the detail. */
	if (spec->command)
		return dp_error_set(DP_EINVAL, "--%s %s is required", e->name,
				    metavar(e, mv, sizeof(mv)));
	return dp_error_set(DP_EINVAL, "'%s' is not set (use --%s or '%s = ...' in the "
			    "config file)", e->name, e->name, e->name);
}

int dp_config_check(const struct dp_config_spec *spec)
{
	size_t n;
	int rc = check_table(spec, &n);

	if (rc != 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];
		union val v;

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
		union val v;

		if (!owns_heap(e->type) || e->field == NULL)
			continue;
		read_field(e, &v);
		val_free(e->type, &v);
		write_field(e, &v);
	}
	if (spec->args)
		dp_config_strings_free(spec->args);
}

/* ---- command line --------------------------------------------------------- */

/* What a flag spelling means. */
enum opt_kind { OPT_VALUE, OPT_BOOL, OPT_NO, OPT_CONFIG, OPT_CHECK, OPT_HELP, OPT_VERSION };

struct opt {
	char *name;          /* without the "--" (heap copy) */
	enum opt_kind kind;
	size_t idx;          /* entry, for OPT_VALUE, OPT_BOOL, OPT_NO */
};

/* A flag seen on the command line, applied after the config file. */
struct flag {
	size_t idx;
	const char *value;   /* NULL for --no-name */
	const char *tok;     /* the argv word, for messages */
};

struct scan {
	const struct dp_config_spec *spec;
	struct opt *opts;
	size_t nopts;
	struct flag *flags;
	size_t nflags;
	const char **pos;    /* positional words */
	size_t npos;
	const char *config;
	bool help, version, check;
	int first;           /* the first error, reported after the scan */
};

static void scan_error(struct scan *sc, const char *fmt, const char *a, const char *b)
{
	if (sc->first == 0)
		sc->first = dp_error_set(DP_EINVAL, fmt, a, b);
}

static int add_opt(struct scan *sc, const char *prefix, const char *name, enum opt_kind kind,
		   size_t idx)
{
	char *s;

	if (asprintf(&s, "%s%s", prefix, name) < 0)
		return dp_error_set(DP_ENOMEM, "config: out of memory");
	sc->opts[sc->nopts++] = (struct opt){ s, kind, idx };
	return 0;
}

static int build_opts(struct scan *sc, size_t n)
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
			if (e->type == DP_CONFIG_BOOL) {
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

static void scan_free(struct scan *sc)
{
	for (size_t i = 0; sc->opts && i < sc->nopts; i++)
		free(sc->opts[i].name);
	free(sc->opts);
	free(sc->flags);
	free(sc->pos);
}

static void positional(struct scan *sc, const char *tok)
{
	if (sc->spec->args == NULL)
		scan_error(sc, "unexpected argument '%s'", tok, "");
	else
		sc->pos[sc->npos++] = tok;
}

/* One "--name[=value]" word at argv[i]; returns the index of the last
 * word it used (its value may be the next one). */
static int long_opt(struct scan *sc, int argc, char *const argv[], int i)
{
	const char *tok = argv[i], *body = tok + 2, *eq = strchr(body, '=');
	size_t len = eq ? (size_t)(eq - body) : strlen(body);
	const struct opt *o = NULL, *pre = NULL;
	size_t npre = 0;
	const char *value;

	for (size_t k = 0; k < sc->nopts && o == NULL; k++) {
		const struct opt *c = &sc->opts[k];

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
			sc->flags[sc->nflags++] = (struct flag){ o->idx, value, tok };
		return i;
	case OPT_BOOL:
		sc->flags[sc->nflags++] = (struct flag){ o->idx, eq ? eq + 1 : "true", tok };
		return i;
	default:
		break;
	}
	if (eq) {
		scan_error(sc, "option '%s' does not take a value", tok, "");
		return i;
	}
	switch (o->kind) {
	case OPT_NO: sc->flags[sc->nflags++] = (struct flag){ o->idx, NULL, tok }; break;
	case OPT_CHECK: sc->check = true; break;
	case OPT_HELP: sc->help = true; break;
	case OPT_VERSION: sc->version = true; break;
	default: break;
	}
	return i;
}

/* One "-xyz" word of single-letter options at argv[i]. */
static int short_opts(struct scan *sc, int argc, char *const argv[], int i)
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
static int scan_args(struct scan *sc, size_t n, int argc, char *const argv[])
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

static int stage_args(struct stage *st, const struct scan *sc)
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
	struct scan sc = { .spec = spec };
	int rc;

	if (action == NULL || argc < 1 || argv == NULL)
		return dp_error_set(DP_EINVAL, "config: load needs argv and an action");
	rc = stage_init(&st, spec);
	if (rc != 0)
		return rc;
	rc = scan_args(&sc, st.n, argc, argv);
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
	scan_free(&sc);
	stage_free(&st);
	return rc;
}

/* ---- output --------------------------------------------------------------- */

/* Append text to buf at *off, keeping it NUL-terminated; false when it
 * did not fit. */
static bool put(char *buf, size_t len, size_t *off, const char *text)
{
	size_t l = strlen(text);

	if (*off + l >= len)
		return false;
	memcpy(buf + *off, text, l + 1);
	*off += l;
	return true;
}

static int format_list(const struct dp_config_entry *e, char *buf, size_t len)
{
	union val v;
	size_t off = 0;
	char item[40];

	read_field(e, &v);
	buf[0] = '\0';
	if (v.l.n == 0)
		return DP_ENOENT;
	for (size_t i = 0; i < v.l.n; i++) {
		if (i > 0 && !put(buf, len, &off, ","))
			return DP_ERANGE;
		/* A WHOLE value is read as written, so it is printed so too
		 * (escapes would come back as part of the text). */
		if (e->type == DP_CONFIG_STRINGS && (e->flags & DP_CONFIG_WHOLE)) {
			if (!put(buf, len, &off, ((char **)v.l.v)[i]))
				return DP_ERANGE;
			continue;
		}
		if (e->type == DP_CONFIG_STRINGS) {
			for (const char *c = ((char **)v.l.v)[i]; *c; c++) {
				char one[3] = { '\\', *c, '\0' };

				if (!put(buf, len, &off, escapable(*c) ? one : one + 1))
					return DP_ERANGE;
			}
			continue;
		}
		if (e->type == DP_CONFIG_SIZES)
			snprintf(item, sizeof(item), "%zu", ((size_t *)v.l.v)[i]);
		else
			dp_num_format(item, sizeof(item), ((double *)v.l.v)[i]);
		if (!put(buf, len, &off, item))
			return DP_ERANGE;
	}
	return 0;
}

static int format_entry(const struct dp_config_entry *e, char *buf, size_t len)
{
	int w = 0;

	buf[0] = '\0';
	switch (e->type) {
	case DP_CONFIG_STRING:
	case DP_CONFIG_PATH: {
		const char *s = *(char **)e->field;

		if (s == NULL)
			return DP_ENOENT;
		w = snprintf(buf, len, "%s", s);
		break;
	}
	case DP_CONFIG_DOUBLE:
	case DP_CONFIG_DOUBLE_INF:
	case DP_CONFIG_DURATION:
		dp_num_format(buf, len, *(double *)e->field);
		break;
	case DP_CONFIG_U64:
		w = snprintf(buf, len, "%llu", (unsigned long long)*(uint64_t *)e->field);
		break;
	case DP_CONFIG_SIZE:
		w = snprintf(buf, len, "%zu", *(size_t *)e->field);
		break;
	case DP_CONFIG_BOOL:
		w = snprintf(buf, len, "%s", *(bool *)e->field ? "true" : "false");
		break;
	case DP_CONFIG_ENUM: {
		int v = *(int *)e->field, nv = 0;

		while (e->values[nv])
			nv++;
		if (v >= 0 && v < nv)
			w = snprintf(buf, len, "%s", e->values[v]);
		else
			w = snprintf(buf, len, "%d", v);
		break;
	}
	case DP_CONFIG_STRINGS:
	case DP_CONFIG_DOUBLES:
	case DP_CONFIG_DOUBLES_INF:
	case DP_CONFIG_SIZES:
		return format_list(e, buf, len);
	}
	return w < 0 || (size_t)w >= len ? DP_ERANGE : 0;
}

int dp_config_format(const struct dp_config_spec *spec, const char *name, char *buf, size_t len)
{
	long i;

	if (spec == NULL || spec->entries == NULL || name == NULL || buf == NULL || len == 0)
		return dp_error_set(DP_EINVAL, "config: format needs a spec, a name and a buffer");
	i = find(spec, name);
	if (i < 0) {
		buf[0] = '\0';
		return dp_error_set(DP_ENOENT, "unknown setting '%s'", name);
	}
	return format_entry(&spec->entries[i], buf, len);
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
	int rc = check_table(spec, &n);

	if (rc != 0)
		return rc;
	fprintf(out, "# effective configuration of %s\n[%s]\n", spec->program, spec->program);
	for (size_t i = 0; i < n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];
		const char *s;

		if (is_list(e->type)) {
			if (format_entry(e, buf, sizeof(buf)) == DP_ENOENT)
				fprintf(out, "# %s is not set\n", e->name);
			else
				print_value(out, e->name, buf);
			continue;
		}
		if (!is_string(e->type)) {
			format_entry(e, buf, sizeof(buf));
			print_value(out, e->name, buf);
			continue;
		}
		s = *(char **)e->field;
		if (s == NULL) {
			fprintf(out, "# %s is not set\n", e->name);
			continue;
		}
		print_value(out, e->name, s);
	}
	if (fflush(out) != 0 || ferror(out))
		return dp_error_set(DP_EIO, "cannot write the configuration: %s", strerror(errno));
	return 0;
}

static const char *metavar(const struct dp_config_entry *e, char *buf, size_t len)
{
	size_t off = 0;

	if (e->metavar)
		return e->metavar;
	switch (e->type) {
	case DP_CONFIG_STRING: return "TEXT";
	case DP_CONFIG_PATH: return "PATH";
	case DP_CONFIG_DOUBLE: return "X";
	case DP_CONFIG_DOUBLE_INF: return "X|inf";
	case DP_CONFIG_U64:
	case DP_CONFIG_SIZE: return "N";
	case DP_CONFIG_DURATION: return "SECONDS";
	case DP_CONFIG_BOOL: return "";
	case DP_CONFIG_STRINGS: return (e->flags & DP_CONFIG_WHOLE) ? "TEXT" : "A,B,...";
	case DP_CONFIG_DOUBLES: return "X,...";
	case DP_CONFIG_DOUBLES_INF: return "X|inf,...";
	case DP_CONFIG_SIZES: return "N,...";
	case DP_CONFIG_ENUM:
		buf[0] = '\0';
		for (int i = 0; e->values[i] && off < len; i++)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "|" : "",
						e->values[i]);
		return buf;
	}
	return "";
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
	if (has_range(f->type) && f->min < f->max) {
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

	if (f->type == DP_CONFIG_BOOL && f->alias)
		snprintf(left, sizeof(left), "--[no-]%s, --[no-]%s", f->name, f->alias);
	else if (f->type == DP_CONFIG_BOOL)
		snprintf(left, sizeof(left), "--[no-]%s", f->name);
	else if (f->alias)
		snprintf(left, sizeof(left), "--%s, --%s %s", f->name, f->alias,
			 metavar(f, mv, sizeof(mv)));
	else
		snprintf(left, sizeof(left), "--%s %s", f->name, metavar(f, mv, sizeof(mv)));
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
				fprintf(out, " --%s %s", e->name, metavar(e, mv, sizeof(mv)));
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
	int rc = check_table(spec, &n);

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
