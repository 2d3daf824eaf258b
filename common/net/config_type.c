/* SPDX-License-Identifier: Apache-2.0 */
/* The value types of the typed configuration: one row of functions per
 * type (config_impl.h), and the text rules they share (numbers and
 * durations, booleans, lists with escapes; config.h "Values"). */
#include "common/net/config_impl.h"
#include "common/core/error.h"
#include "common/core/num.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef union dp__config_val val;

/* ---- the text rules ------------------------------------------------------ */

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
static int split_items(const char *what, const char *s, val *out)
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
	val v;
	int rc;

	DP_REQUIRE(what != NULL && text != NULL && out != NULL);
	rc = check_text(what, text);
	if (rc == 0)
		rc = split_items(what, text, &v);
	if (rc == 0)
		*out = (struct dp_config_strings){ .v = v.l.v, .n = v.l.n };
	return rc;
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

/* The end of parsing a list of numbers: after rc == 0 the n values v are
 * the list *out, else v is freed and rc returned. */
static int keep_list(const char *what, int rc, void *v, size_t n, val *out)
{
	if (rc != 0) {
		free(v);
		return rc == DP_ENOMEM ? dp_error_set(rc, "%s: out of memory", what) : rc;
	}
	out->l.v = v;
	out->l.n = n;
	return 0;
}

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

/* snprintf's result as a format's: DP_ERANGE when it did not fit. */
static int fitted(int w, size_t len)
{
	return w < 0 || (size_t)w >= len ? DP_ERANGE : 0;
}

/* ---- fields -------------------------------------------------------------- */

/* A field that holds one value (a text's pointer, a number, a bool, an
 * enum) is copied whole, as the union member of its own C type: every
 * member starts at the union's first byte. */
static void get_one(const struct dp_config_entry *e, val *v)
{
	memset(v, 0, sizeof(*v));
	memcpy(v, e->field, dp__config_type_of(e)->size);
}

static void put_one(const struct dp_config_entry *e, const val *v)
{
	memcpy(e->field, v, dp__config_type_of(e)->size);
}

static void get_strings(const struct dp_config_entry *e, val *v)
{
	const struct dp_config_strings *l = e->field;

	v->l.v = l->v;
	v->l.n = l->n;
}

static void put_strings(const struct dp_config_entry *e, const val *v)
{
	*(struct dp_config_strings *)e->field =
		(struct dp_config_strings){ .v = v->l.v, .n = v->l.n };
}

static void get_doubles(const struct dp_config_entry *e, val *v)
{
	const struct dp_config_doubles *l = e->field;

	v->l.v = l->v;
	v->l.n = l->n;
}

static void put_doubles(const struct dp_config_entry *e, const val *v)
{
	*(struct dp_config_doubles *)e->field =
		(struct dp_config_doubles){ .v = v->l.v, .n = v->l.n };
}

static void get_sizes(const struct dp_config_entry *e, val *v)
{
	const struct dp_config_sizes *l = e->field;

	v->l.v = l->v;
	v->l.n = l->n;
}

static void put_sizes(const struct dp_config_entry *e, const val *v)
{
	*(struct dp_config_sizes *)e->field =
		(struct dp_config_sizes){ .v = v->l.v, .n = v->l.n };
}

/* ---- parsing ------------------------------------------------------------- */

static int parse_text(const struct dp_config_entry *e, const char *what, const char *text,
		      val *out)
{
	int rc = check_text(what, text);

	(void)e;
	if (rc != 0)
		return rc;
	out->s = strdup(text);
	if (out->s == NULL)
		return dp_error_set(DP_ENOMEM, "%s: out of memory", what);
	return 0;
}

static int parse_path(const struct dp_config_entry *e, const char *what, const char *text,
		      val *out)
{
	if (*text == '\0')
		return dp_error_set(DP_EINVAL, "%s: empty path", what);
	return parse_text(e, what, text, out);
}

static int parse_double(const struct dp_config_entry *e, const char *what, const char *text,
			val *out)
{
	int rc = dp_num_parse_double(what, text, false, &out->d);

	return rc != 0 ? rc : check_range(e, what, text, out->d);
}

static int parse_double_inf(const struct dp_config_entry *e, const char *what, const char *text,
			    val *out)
{
	int rc = dp_num_parse_double(what, text, true, &out->d);

	return rc != 0 ? rc : check_range(e, what, text, out->d);
}

static int parse_seconds(const struct dp_config_entry *e, const char *what, const char *text,
			 val *out)
{
	int rc = parse_duration(what, text, &out->d);

	if (rc == 0 && out->d < 0)
		rc = dp_error_set(DP_EINVAL, "%s: negative duration '%s'", what, text);
	return rc != 0 ? rc : check_range(e, what, text, out->d);
}

static int parse_u64(const struct dp_config_entry *e, const char *what, const char *text,
		     val *out)
{
	int rc = dp_num_parse_u64(what, text, &out->u);

	return rc != 0 ? rc : check_range(e, what, text, (double)out->u);
}

static int parse_size(const struct dp_config_entry *e, const char *what, const char *text,
		      val *out)
{
	int rc = dp_num_parse_size(what, text, &out->z);

	return rc != 0 ? rc : check_range(e, what, text, (double)out->z);
}

static int parse_flag(const struct dp_config_entry *e, const char *what, const char *text,
		      val *out)
{
	(void)e;
	if (parse_bool(text, &out->b) != 0)
		return dp_error_set(DP_EINVAL,
				    "%s: expected true/false, yes/no, on/off or 1/0, got '%s'",
				    what, text);
	return 0;
}

static int parse_enum(const struct dp_config_entry *e, const char *what, const char *text,
		      val *out)
{
	char list[256];
	size_t off = 0;

	for (int i = 0; e->values[i]; i++) {
		if (strcmp(text, e->values[i]) == 0) {
			out->e = i;
			return 0;
		}
	}
	list[0] = '\0';
	for (int i = 0; e->values[i] && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? ", " : "",
					e->values[i]);
	return dp_error_set(DP_EINVAL, "%s: expected one of %s, got '%s'", what, list, text);
}

static int parse_strings(const struct dp_config_entry *e, const char *what, const char *text,
			 val *out)
{
	int rc = check_text(what, text);

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
		out->l.v = NULL;
		return dp_error_set(DP_ENOMEM, "%s: out of memory", what);
	}
	out->l.n = 1;
	return 0;
}

static int parse_double_list(const struct dp_config_entry *e, const char *what, const char *text,
			     bool inf_ok, val *out)
{
	char item[32];
	double *v = NULL;
	size_t n = 0;
	int rc = dp_num_parse_double_list(what, text, inf_ok, &v, &n);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		dp_num_format(item, sizeof(item), v[i]);
		rc = check_range(e, what, item, v[i]);
	}
	return keep_list(what, rc, v, n, out);
}

static int parse_doubles(const struct dp_config_entry *e, const char *what, const char *text,
			 val *out)
{
	return parse_double_list(e, what, text, false, out);
}

static int parse_doubles_inf(const struct dp_config_entry *e, const char *what, const char *text,
			     val *out)
{
	return parse_double_list(e, what, text, true, out);
}

static int parse_sizes(const struct dp_config_entry *e, const char *what, const char *text,
		       val *out)
{
	char item[32];
	size_t *v = NULL, n = 0;
	int rc = dp_num_parse_size_list(what, text, &v, &n);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		snprintf(item, sizeof(item), "%zu", v[i]);
		rc = check_range(e, what, item, (double)v[i]);
	}
	return keep_list(what, rc, v, n, out);
}

/* ---- formatting ---------------------------------------------------------- */

static int format_text(const struct dp_config_entry *e, char *buf, size_t len, const char **text)
{
	const char *s = *(char **)e->field;

	buf[0] = '\0';
	*text = buf;
	if (s == NULL)
		return DP_ENOENT;
	*text = s;
	return 0;
}

static int format_double(const struct dp_config_entry *e, char *buf, size_t len,
			 const char **text)
{
	*text = buf;
	dp_num_format(buf, len, *(double *)e->field);
	return 0;
}

static int format_u64(const struct dp_config_entry *e, char *buf, size_t len, const char **text)
{
	*text = buf;
	return fitted(snprintf(buf, len, "%llu", (unsigned long long)*(uint64_t *)e->field), len);
}

static int format_size(const struct dp_config_entry *e, char *buf, size_t len, const char **text)
{
	*text = buf;
	return fitted(snprintf(buf, len, "%zu", *(size_t *)e->field), len);
}

static int format_bool(const struct dp_config_entry *e, char *buf, size_t len, const char **text)
{
	*text = buf;
	return fitted(snprintf(buf, len, "%s", *(bool *)e->field ? "true" : "false"), len);
}

static int format_enum(const struct dp_config_entry *e, char *buf, size_t len, const char **text)
{
	int v = *(int *)e->field, nv = 0;

	*text = buf;
	while (e->values[nv])
		nv++;
	if (v >= 0 && v < nv)
		return fitted(snprintf(buf, len, "%s", e->values[v]), len);
	return fitted(snprintf(buf, len, "%d", v), len);
}

/* Item i of the list v appended to buf at *off; false when it did not fit. */
typedef bool (*item_fn)(const struct dp_config_entry *e, const val *v, size_t i, char *buf,
			    size_t len, size_t *off);

/* The items of a list joined by commas. */
static int format_list(const struct dp_config_entry *e, char *buf, size_t len, const char **text,
		       item_fn item)
{
	val v;
	size_t off = 0;

	dp__config_type_of(e)->get(e, &v);
	buf[0] = '\0';
	*text = buf;
	if (v.l.n == 0)
		return DP_ENOENT;
	for (size_t i = 0; i < v.l.n; i++) {
		if (i > 0 && !put(buf, len, &off, ","))
			return DP_ERANGE;
		if (!item(e, &v, i, buf, len, &off))
			return DP_ERANGE;
	}
	return 0;
}

/* A WHOLE value is read as written, so it is printed so too (escapes would
 * come back as part of the text); other items escape what splits them. */
static bool item_string(const struct dp_config_entry *e, const val *v, size_t i, char *buf,
			size_t len, size_t *off)
{
	const char *s = ((char **)v->l.v)[i];

	if (e->flags & DP_CONFIG_WHOLE)
		return put(buf, len, off, s);
	for (const char *c = s; *c; c++) {
		char one[3] = { '\\', *c, '\0' };

		if (!put(buf, len, off, escapable(*c) ? one : one + 1))
			return false;
	}
	return true;
}

static bool item_double(const struct dp_config_entry *e, const val *v, size_t i, char *buf,
			size_t len, size_t *off)
{
	char item[40];

	(void)e;
	dp_num_format(item, sizeof(item), ((double *)v->l.v)[i]);
	return put(buf, len, off, item);
}

static bool item_size(const struct dp_config_entry *e, const val *v, size_t i, char *buf,
		      size_t len, size_t *off)
{
	char item[40];

	(void)e;
	snprintf(item, sizeof(item), "%zu", ((size_t *)v->l.v)[i]);
	return put(buf, len, off, item);
}

static int format_strings(const struct dp_config_entry *e, char *buf, size_t len,
			  const char **text)
{
	return format_list(e, buf, len, text, item_string);
}

static int format_doubles(const struct dp_config_entry *e, char *buf, size_t len,
			  const char **text)
{
	return format_list(e, buf, len, text, item_double);
}

static int format_sizes(const struct dp_config_entry *e, char *buf, size_t len, const char **text)
{
	return format_list(e, buf, len, text, item_size);
}

/* ---- freeing ------------------------------------------------------------- */

static void free_text(val *v)
{
	free(v->s);
	v->s = NULL;
}

static void free_strings(val *v)
{
	for (size_t i = 0; i < v->l.n; i++)
		free(((char **)v->l.v)[i]);
	free(v->l.v);
	v->l.v = NULL;
	v->l.n = 0;
}

static void free_numbers(val *v)
{
	free(v->l.v);
	v->l.v = NULL;
	v->l.n = 0;
}

/* ---- --help placeholders ------------------------------------------------- */

static const char *metavar_enum(const struct dp_config_entry *e, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; e->values[i] && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "|" : "", e->values[i]);
	return buf;
}

static const char *metavar_strings(const struct dp_config_entry *e, char *buf, size_t len)
{
	(void)buf;
	(void)len;
	return (e->flags & DP_CONFIG_WHOLE) ? "TEXT" : "A,B,...";
}

const char *dp__config_metavar(const struct dp_config_entry *e, char *buf, size_t len)
{
	const struct dp__config_type *t = dp__config_type_of(e);

	if (e->metavar)
		return e->metavar;
	return t->metavar_of ? t->metavar_of(e, buf, len) : t->metavar;
}

/* ---- the table ----------------------------------------------------------- */

/* Indexed by enum dp_config_type.  .range: the entry's min and max apply;
 * .flag: a flag without a value (--name, --no-name). */
static const struct dp__config_type types[] = {
	[DP_CONFIG_STRING] = { .kind = DP__CONFIG_TEXT, .metavar = "TEXT",
		.size = sizeof(char *), .get = get_one, .put = put_one, .parse = parse_text,
		.format = format_text, .free = free_text },
	[DP_CONFIG_PATH] = { .kind = DP__CONFIG_TEXT, .metavar = "PATH",
		.size = sizeof(char *), .get = get_one, .put = put_one, .parse = parse_path,
		.format = format_text, .free = free_text },
	[DP_CONFIG_DOUBLE] = { .kind = DP__CONFIG_SCALAR, .range = true, .metavar = "X",
		.size = sizeof(double), .get = get_one, .put = put_one, .parse = parse_double,
		.format = format_double },
	[DP_CONFIG_DOUBLE_INF] = { .kind = DP__CONFIG_SCALAR, .range = true, .metavar = "X|inf",
		.size = sizeof(double), .get = get_one, .put = put_one, .parse = parse_double_inf,
		.format = format_double },
	[DP_CONFIG_U64] = { .kind = DP__CONFIG_SCALAR, .range = true, .metavar = "N",
		.size = sizeof(uint64_t), .get = get_one, .put = put_one, .parse = parse_u64,
		.format = format_u64 },
	[DP_CONFIG_SIZE] = { .kind = DP__CONFIG_SCALAR, .range = true, .metavar = "N",
		.size = sizeof(size_t), .get = get_one, .put = put_one, .parse = parse_size,
		.format = format_size },
	[DP_CONFIG_BOOL] = { .kind = DP__CONFIG_SCALAR, .flag = true, .metavar = "",
		.size = sizeof(bool), .get = get_one, .put = put_one, .parse = parse_flag,
		.format = format_bool },
	[DP_CONFIG_ENUM] = { .kind = DP__CONFIG_SCALAR, .metavar_of = metavar_enum,
		.size = sizeof(int), .get = get_one, .put = put_one, .parse = parse_enum,
		.format = format_enum },
	[DP_CONFIG_DURATION] = { .kind = DP__CONFIG_SCALAR, .range = true, .metavar = "SECONDS",
		.size = sizeof(double), .get = get_one, .put = put_one, .parse = parse_seconds,
		.format = format_double },
	[DP_CONFIG_STRINGS] = { .kind = DP__CONFIG_LIST, .item = sizeof(char *),
		.metavar_of = metavar_strings,
		.get = get_strings, .put = put_strings, .parse = parse_strings,
		.format = format_strings, .free = free_strings },
	[DP_CONFIG_DOUBLES] = { .kind = DP__CONFIG_LIST, .item = sizeof(double), .range = true,
		.metavar = "X,...",
		.get = get_doubles, .put = put_doubles, .parse = parse_doubles,
		.format = format_doubles, .free = free_numbers },
	[DP_CONFIG_DOUBLES_INF] = { .kind = DP__CONFIG_LIST, .item = sizeof(double), .range = true,
		.metavar = "X|inf,...",
		.get = get_doubles, .put = put_doubles, .parse = parse_doubles_inf,
		.format = format_doubles, .free = free_numbers },
	[DP_CONFIG_SIZES] = { .kind = DP__CONFIG_LIST, .item = sizeof(size_t), .range = true,
		.metavar = "N,...",
		.get = get_sizes, .put = put_sizes, .parse = parse_sizes,
		.format = format_sizes, .free = free_numbers },
};

const struct dp__config_type *dp__config_type_of(const struct dp_config_entry *e)
{
	DP_REQUIRE(e != NULL && (size_t)e->type < sizeof(types) / sizeof(types[0]));
	return &types[e->type];
}
