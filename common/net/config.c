#include "common/net/config.h"
#include "common/core/error.h"
#include "common/core/num.h"

#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

/* Values are parsed into a stage first and written to the fields only when
 * every step has succeeded, so a failed load leaves the settings alone. */
union dp__val {
	char *s;
	double d;
	uint64_t u;
	size_t z;
	bool b;
	int e;
};

struct dp__stage {
	const struct dp_config_spec *spec;
	size_t n;
	union dp__val *val;
	unsigned char *set;    /* val[i] is new and must be committed */
	unsigned char *owned;  /* val[i].s is a copy made by the stage */
	size_t *file_line;     /* line of the config file that set entry i */
};

static bool dp__is_string(enum dp_config_type t)
{
	return t == DP_CONFIG_STRING || t == DP_CONFIG_PATH;
}

static bool dp__is_number(enum dp_config_type t)
{
	return t == DP_CONFIG_DOUBLE || t == DP_CONFIG_DOUBLE_INF || t == DP_CONFIG_U64 ||
	       t == DP_CONFIG_SIZE || t == DP_CONFIG_DURATION;
}

static bool dp__reserved(const char *name)
{
	static const char *const builtin[] = { "config", "help", "version", "check-config", NULL };

	for (size_t i = 0; builtin[i]; i++)
		if (strcmp(name, builtin[i]) == 0)
			return true;
	return strncmp(name, "no-", 3) == 0;
}

/* The table is code, but a mistake in it should be one clear line at
 * startup rather than a crash. */
static int dp__check_table(const struct dp_config_spec *spec, size_t *count)
{
	const struct dp_config_entry *e;
	size_t n = 0;

	if (spec == NULL || spec->program == NULL || spec->entries == NULL)
		return dp_error_set(DP_EINVAL, "config: spec needs a program name and entries");
	for (e = spec->entries; e->name; e++, n++) {
		const char *c = e->name;

		if (!islower((unsigned char)*c) && !isdigit((unsigned char)*c))
			return dp_error_set(DP_EINVAL, "config table: bad key name '%s'", e->name);
		for (; *c; c++)
			if (!islower((unsigned char)*c) && !isdigit((unsigned char)*c) && *c != '-')
				return dp_error_set(DP_EINVAL, "config table: bad key name '%s'",
						    e->name);
		if (dp__reserved(e->name))
			return dp_error_set(DP_EINVAL, "config table: key name '%s' is reserved",
					    e->name);
		if (e->field == NULL || (unsigned)e->type > DP_CONFIG_DURATION)
			return dp_error_set(DP_EINVAL, "config table: key '%s' has no field or type",
					    e->name);
		if (e->type == DP_CONFIG_ENUM && (e->values == NULL || e->values[0] == NULL))
			return dp_error_set(DP_EINVAL, "config table: enum key '%s' has no values",
					    e->name);
		if ((e->flags & DP_CONFIG_REQUIRED) && (!dp__is_string(e->type) || e->def))
			return dp_error_set(DP_EINVAL,
					    "config table: key '%s': only strings and paths without "
					    "a default can be required", e->name);
		for (const struct dp_config_entry *o = spec->entries; o != e; o++)
			if (strcmp(o->name, e->name) == 0)
				return dp_error_set(DP_EINVAL, "config table: key '%s' twice",
						    e->name);
	}
	*count = n;
	return 0;
}

static void dp__read_field(const struct dp_config_entry *e, union dp__val *v)
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
	}
}

static void dp__write_field(const struct dp_config_entry *e, const union dp__val *v)
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
	}
}

static int dp__stage_init(struct dp__stage *st, const struct dp_config_spec *spec)
{
	size_t n;
	int rc = dp__check_table(spec, &n);

	if (rc != 0)
		return rc;
	memset(st, 0, sizeof(*st));
	st->spec = spec;
	st->n = n;
	st->val = calloc(n + 1, sizeof(*st->val));
	st->set = calloc(n + 1, 1);
	st->owned = calloc(n + 1, 1);
	st->file_line = calloc(n + 1, sizeof(*st->file_line));
	if (!st->val || !st->set || !st->owned || !st->file_line) {
		free(st->val);
		free(st->set);
		free(st->owned);
		free(st->file_line);
		return dp_error_set(DP_ENOMEM, "config: out of memory");
	}
	for (size_t i = 0; i < n; i++)
		dp__read_field(&spec->entries[i], &st->val[i]);
	return 0;
}

static void dp__stage_free(struct dp__stage *st)
{
	for (size_t i = 0; i < st->n; i++)
		if (st->owned[i])
			free(st->val[i].s);
	free(st->val);
	free(st->set);
	free(st->owned);
	free(st->file_line);
	memset(st, 0, sizeof(*st));
}

/* Store a parsed value in the stage, taking ownership of a string. */
static void dp__stage_put(struct dp__stage *st, size_t i, union dp__val v)
{
	if (st->owned[i])
		free(st->val[i].s);
	st->val[i] = v;
	st->owned[i] = dp__is_string(st->spec->entries[i].type) && v.s != NULL;
	st->set[i] = 1;
}

/* Write the staged values into the fields.  The old values go into `old`
 * (when not NULL) so that a failed validation can put them back. */
static void dp__stage_commit(struct dp__stage *st, union dp__val *old)
{
	for (size_t i = 0; i < st->n; i++) {
		const struct dp_config_entry *e = &st->spec->entries[i];

		if (!st->set[i])
			continue;
		if (old)
			dp__read_field(e, &old[i]);
		else if (dp__is_string(e->type))
			free(*(char **)e->field);
		dp__write_field(e, &st->val[i]);
		st->owned[i] = 0;
	}
}

/* Undo dp__stage_commit(st, old): free the new strings, restore the old. */
static void dp__stage_rollback(struct dp__stage *st, const union dp__val *old)
{
	for (size_t i = 0; i < st->n; i++) {
		const struct dp_config_entry *e = &st->spec->entries[i];

		if (!st->set[i])
			continue;
		if (dp__is_string(e->type))
			free(*(char **)e->field);
		dp__write_field(e, &old[i]);
	}
}

static void dp__free_old_strings(struct dp__stage *st, const union dp__val *old)
{
	for (size_t i = 0; i < st->n; i++)
		if (st->set[i] && dp__is_string(st->spec->entries[i].type))
			free(old[i].s);
}

static long dp__find(const struct dp_config_spec *spec, const char *name)
{
	for (long i = 0; spec->entries[i].name; i++)
		if (strcmp(spec->entries[i].name, name) == 0)
			return i;
	return -1;
}

/* ---- values ---------------------------------------------------------- */

static int dp__check_range(const struct dp_config_entry *e, const char *what, const char *text,
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

static int dp__parse_bool(const char *s, bool *out)
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

static int dp__parse_duration(const char *what, const char *s, double *out)
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

/* Parse `text` for entry e into *out (a heap copy for strings). */
static int dp__parse_value(const struct dp_config_entry *e, const char *what, const char *text,
			   union dp__val *out)
{
	union dp__val v = { 0 };
	int rc = 0;

	switch (e->type) {
	case DP_CONFIG_STRING:
	case DP_CONFIG_PATH:
		if (e->type == DP_CONFIG_PATH && *text == '\0')
			return dp_error_set(DP_EINVAL, "%s: empty path", what);
		/* A line break would corrupt --check-config output and logs. */
		for (const char *c = text; *c; c++)
			if ((unsigned char)*c < 0x20 && *c != '\t')
				return dp_error_set(DP_EINVAL, "%s: control character in value",
						    what);
		v.s = strdup(text);
		if (v.s == NULL)
			return dp_error_set(DP_ENOMEM, "%s: out of memory", what);
		break;
	case DP_CONFIG_DOUBLE:
	case DP_CONFIG_DOUBLE_INF:
		rc = dp_num_parse_double(what, text, e->type == DP_CONFIG_DOUBLE_INF, &v.d);
		if (rc == 0)
			rc = dp__check_range(e, what, text, v.d);
		break;
	case DP_CONFIG_DURATION:
		rc = dp__parse_duration(what, text, &v.d);
		if (rc == 0 && v.d < 0)
			rc = dp_error_set(DP_EINVAL, "%s: negative duration '%s'", what, text);
		if (rc == 0)
			rc = dp__check_range(e, what, text, v.d);
		break;
	case DP_CONFIG_U64:
		rc = dp_num_parse_u64(what, text, &v.u);
		if (rc == 0)
			rc = dp__check_range(e, what, text, (double)v.u);
		break;
	case DP_CONFIG_SIZE:
		rc = dp_num_parse_size(what, text, &v.z);
		if (rc == 0)
			rc = dp__check_range(e, what, text, (double)v.z);
		break;
	case DP_CONFIG_BOOL:
		if (dp__parse_bool(text, &v.b) != 0)
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
	}
	if (rc != 0)
		return rc;
	*out = v;
	return 0;
}

/* ---- defaults and single values --------------------------------------- */

static int dp__stage_defaults(struct dp__stage *st)
{
	char what[128];

	for (size_t i = 0; i < st->n; i++) {
		const struct dp_config_entry *e = &st->spec->entries[i];
		union dp__val v = { 0 };
		int rc;

		if (e->def) {
			snprintf(what, sizeof(what), "config table: default of '%s'", e->name);
			rc = dp__parse_value(e, what, e->def, &v);
			if (rc != 0)
				return rc;
		} else if (!dp__is_string(e->type)) {
			dp__read_field(e, &v);  /* numbers without a default keep theirs */
		}
		dp__stage_put(st, i, v);
	}
	return 0;
}

int dp_config_set_defaults(const struct dp_config_spec *spec)
{
	struct dp__stage st;
	int rc = dp__stage_init(&st, spec);

	if (rc != 0)
		return rc;
	rc = dp__stage_defaults(&st);
	if (rc == 0)
		dp__stage_commit(&st, NULL);
	dp__stage_free(&st);
	return rc;
}

static int dp__stage_set(struct dp__stage *st, const char *name, const char *value,
			 const char *origin)
{
	char what[160];
	union dp__val v;
	long i = dp__find(st->spec, name);
	int rc;

	if (i < 0)
		return dp_error_set(DP_EINVAL, "unknown setting '%s'", name);
	if (origin == NULL) {
		snprintf(what, sizeof(what), "key '%s'", name);
		origin = what;
	}
	rc = dp__parse_value(&st->spec->entries[i], origin, value, &v);
	if (rc == 0)
		dp__stage_put(st, (size_t)i, v);
	return rc;
}

int dp_config_set(const struct dp_config_spec *spec, const char *name, const char *value,
		  const char *origin)
{
	struct dp__stage st;
	int rc;

	if (name == NULL || value == NULL)
		return dp_error_set(DP_EINVAL, "config: set needs a name and a value");
	rc = dp__stage_init(&st, spec);
	if (rc != 0)
		return rc;
	rc = dp__stage_set(&st, name, value, origin);
	if (rc == 0)
		dp__stage_commit(&st, NULL);
	dp__stage_free(&st);
	return rc;
}

/* ---- config file -------------------------------------------------------- */

struct dp__file {
	struct dp__stage *st;
	const char *path;
	FILE *f;
	char *buf;
	size_t cap;
	size_t lineno;
	int err;
	int read_errno;
};

static int dp__file_error(struct dp__file *fc, int code, const char *fmt, const char *a,
			  const char *b)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, a, b);
	fc->err = dp_error_set(code, "%s:%zu: %s", fc->path, fc->lineno, msg);
	return fc->err;
}

/* Where a line's inline comment starts (inih: ';' after whitespace). */
static const char *dp__comment_start(const char *s)
{
	for (const char *c = s; *c; c++)
		if (*c == ';' && c > s && isspace((unsigned char)c[-1]))
			return c;
	return s + strlen(s);
}

/* Syntax is checked here, on the raw line, so that errors can say what is
 * wrong; inih's own "first bad line" remains the fallback. */
static int dp__check_syntax(struct dp__file *fc, const char *s)
{
	const char *end = dp__comment_start(s);
	const char *close;

	if (*s == '\0' || *s == ';' || *s == '#')
		return 0;
	if (*s == '[') {
		close = memchr(s, ']', (size_t)(end - s));
		if (close == NULL)
			return dp__file_error(fc, DP_EINVAL, "section header without ']'", "", "");
		for (close++; close < end; close++)
			if (!isspace((unsigned char)*close))
				return dp__file_error(fc, DP_EINVAL,
						      "text after the section header", "", "");
		return 0;
	}
	for (const char *c = s; c < end; c++)
		if (*c == '=' || *c == ':')
			return c == s ? dp__file_error(fc, DP_EINVAL, "missing key before '%s'",
						       *c == '=' ? "=" : ":", "")
				      : 0;
	return dp__file_error(fc, DP_EINVAL, "expected 'key = value', '[section]' or a comment",
			      "", "");
}

/* An ini_reader: hands inih one whole line at a time, which gives exact
 * line numbers, refuses over-long lines instead of letting them be split,
 * and drops leading whitespace so that indented keys are never taken for
 * continuation lines. */
static char *dp__reader(char *str, int num, void *stream)
{
	struct dp__file *fc = stream;
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
		dp__file_error(fc, DP_EINVAL, "NUL byte in line", "", "");
		return NULL;
	}
	if (len > 0 && fc->buf[len - 1] == '\n')
		fc->buf[--len] = '\0';
	if (len > 0 && fc->buf[len - 1] == '\r')
		fc->buf[--len] = '\0';
	if (len > DP_CONFIG_MAX_LINE || len + 2 > (size_t)num) {
		char lim[32];

		snprintf(lim, sizeof(lim), "%d", DP_CONFIG_MAX_LINE);
		dp__file_error(fc, DP_EINVAL, "line longer than %s characters", lim, "");
		return NULL;
	}
	s = fc->buf;
	while (*s == ' ' || *s == '\t')
		s++;
	if (dp__check_syntax(fc, s) != 0)
		return NULL;
	memcpy(str, s, strlen(s) + 1);
	return str;
}

static int dp__handler(void *user, const char *section, const char *name, const char *value)
{
	struct dp__file *fc = user;
	struct dp__stage *st = fc->st;
	const char *program = st->spec->program;
	char what[512], *unq = NULL;
	union dp__val v;
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
	i = dp__find(st->spec, name);
	if (i < 0) {
		char alt[64];

		snprintf(alt, sizeof(alt), "%s", name);
		for (char *c = alt; *c; c++)
			*c = *c == '_' ? '-' : (char)tolower((unsigned char)*c);
		if (strcmp(alt, name) != 0 && dp__find(st->spec, alt) >= 0)
			dp__file_error(fc, DP_EINVAL, "unknown key '%s' (did you mean '%s'?)", name,
				       alt);
		else
			dp__file_error(fc, DP_EINVAL, "unknown key '%s'", name, "");
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
	rc = dp__parse_value(&st->spec->entries[i], what, value, &v);
	free(unq);
	if (rc != 0) {
		fc->err = rc;
		return 0;
	}
	dp__stage_put(st, (size_t)i, v);
	st->file_line[i] = fc->lineno;
	return 1;
}

static int dp__stage_file(struct dp__stage *st, const char *path)
{
	struct dp__file fc = { .st = st, .path = path };
	int r, rc = 0;

	if (path == NULL || *path == '\0')
		return dp_error_set(DP_EINVAL, "config file: empty path");
	fc.f = fopen(path, "r");
	if (fc.f == NULL) {
		int e = errno;

		return dp_error_set(e == ENOENT ? DP_ENOENT : DP_EIO, "%s: cannot open: %s", path,
				    strerror(e));
	}
	r = ini_parse_stream(dp__reader, &fc, dp__handler, &fc);
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
	struct dp__stage st;
	int rc = dp__stage_init(&st, spec);

	if (rc != 0)
		return rc;
	rc = dp__stage_file(&st, path);
	if (rc == 0)
		dp__stage_commit(&st, NULL);
	dp__stage_free(&st);
	return rc;
}

/* ---- checks --------------------------------------------------------------- */

static int dp__missing(const struct dp_config_spec *spec, const struct dp_config_entry *e)
{
	(void)spec;   /* the daemon prefixes its own name when it prints the detail */
	return dp_error_set(DP_EINVAL, "'%s' is not set (use --%s or '%s = ...' in the "
			    "config file)", e->name, e->name, e->name);
}

int dp_config_check(const struct dp_config_spec *spec)
{
	size_t n;
	int rc = dp__check_table(spec, &n);

	if (rc != 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];

		if ((e->flags & DP_CONFIG_REQUIRED) && *(char **)e->field == NULL)
			return dp__missing(spec, e);
	}
	return spec->validate ? spec->validate(spec->validate_arg) : 0;
}

void dp_config_free(const struct dp_config_spec *spec)
{
	if (spec == NULL || spec->entries == NULL)
		return;
	for (const struct dp_config_entry *e = spec->entries; e->name; e++) {
		if (dp__is_string(e->type) && e->field) {
			free(*(char **)e->field);
			*(char **)e->field = NULL;
		}
	}
}

/* ---- command line --------------------------------------------------------- */

#define DP__OPT_SET 0x1000   /* val = DP__OPT_SET + i: --name */
#define DP__OPT_NO  0x4000   /* val = DP__OPT_NO + i: --no-name */

struct dp__flag {
	long idx;
	const char *value;   /* NULL for --no-name */
	const char *opt;     /* the argv token, for messages */
};

static int dp__opt_error(int rc, int *first, const char *fmt, const char *a)
{
	if (*first == 0)
		*first = dp_error_set(rc, fmt, a);
	return *first;
}

/* One getopt_long pass over argv.  Values are only collected here; they
 * are applied after the config file so that flags always win. */
static int dp__scan_args(const struct dp_config_spec *spec, size_t n, int argc,
			 char *const argv[], struct dp__flag *flags, size_t *nflags,
			 const char **config, bool *help, bool *version, bool *check)
{
	struct option *opts;
	char **nonames;
	size_t k = 0;
	int first = 0, c;

	opts = calloc(2 * n + 5, sizeof(*opts));
	nonames = calloc(n + 1, sizeof(*nonames));
	if (opts == NULL || nonames == NULL) {
		free(opts);
		free(nonames);
		return dp_error_set(DP_ENOMEM, "config: out of memory");
	}
	opts[k++] = (struct option){ "config", required_argument, NULL, 'c' };
	opts[k++] = (struct option){ "check-config", no_argument, NULL, 'n' };
	opts[k++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[k++] = (struct option){ "version", no_argument, NULL, 'V' };
	for (size_t i = 0; i < n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];

		if (e->type == DP_CONFIG_BOOL) {
			opts[k++] = (struct option){ e->name, optional_argument, NULL,
						     DP__OPT_SET + (int)i };
			if (asprintf(&nonames[i], "no-%s", e->name) < 0) {
				nonames[i] = NULL;
				first = dp_error_set(DP_ENOMEM, "config: out of memory");
				goto out;
			}
			opts[k++] = (struct option){ nonames[i], no_argument, NULL,
						     DP__OPT_NO + (int)i };
		} else {
			opts[k++] = (struct option){ e->name, required_argument, NULL,
						     DP__OPT_SET + (int)i };
		}
	}
	/* "+": stop at the first non-option instead of permuting argv, so
	 * argv[at] below is the token being parsed; ":": report a missing
	 * value as ':'. */
	optind = 0;
	opterr = 0;
	for (;;) {
		int at = optind == 0 ? 1 : optind, li = -1;
		const char *tok;

		c = getopt_long(argc, argv, "+:c:nhV", opts, &li);
		if (c == -1)
			break;
		tok = at < argc ? argv[at] : "";
		if (li >= 0) {
			/* getopt_long accepts unambiguous prefixes; scripts
			 * that rely on them break when options are added. */
			size_t nl = strlen(opts[li].name);

			if (strncmp(tok, "--", 2) != 0 || strncmp(tok + 2, opts[li].name, nl) != 0 ||
			    (tok[2 + nl] != '\0' && tok[2 + nl] != '=')) {
				if (first == 0)
					first = dp_error_set(DP_EINVAL,
							     "option '%s': write it in full (--%s)",
							     tok, opts[li].name);
				continue;
			}
		}
		switch (c) {
		case 'c': *config = optarg; break;
		case 'n': *check = true; break;
		case 'h': *help = true; break;
		case 'V': *version = true; break;
		case ':':
			if (strncmp(tok, "--", 2) == 0)
				dp__opt_error(DP_EINVAL, &first, "option '%s' needs a value", tok);
			else
				dp__opt_error(DP_EINVAL, &first, "option '-%s' needs a value",
					      (char[]){ (char)optopt, '\0' });
			break;
		case '?':
			if (strncmp(tok, "--", 2) == 0 && optopt != 0)
				dp__opt_error(DP_EINVAL, &first, "option '%s' does not take a value",
					      tok);
			else if (strncmp(tok, "--", 2) == 0)
				dp__opt_error(DP_EINVAL, &first, "unknown option '%s'", tok);
			else
				dp__opt_error(DP_EINVAL, &first, "unknown option '-%s'",
					      (char[]){ (char)optopt, '\0' });
			break;
		default:
			if (c >= DP__OPT_NO) {
				flags[*nflags] = (struct dp__flag){ c - DP__OPT_NO, NULL, tok };
			} else {
				long i = c - DP__OPT_SET;

				flags[*nflags] = (struct dp__flag){ i, optarg, tok };
				if (spec->entries[i].type == DP_CONFIG_BOOL && optarg == NULL)
					flags[*nflags].value = "true";
			}
			(*nflags)++;
			break;
		}
	}
	if (optind < argc)
		dp__opt_error(DP_EINVAL, &first, "unexpected argument '%s'", argv[optind]);
out:
	for (size_t i = 0; i < n; i++)
		free(nonames[i]);
	free(nonames);
	free(opts);
	optind = 0;
	return first;
}

int dp_config_load(const struct dp_config_spec *spec, int argc, char *const argv[],
		   enum dp_config_action *action)
{
	struct dp__stage st;
	struct dp__flag *flags = NULL;
	union dp__val *old = NULL;
	const char *config = NULL;
	bool help = false, version = false, check = false;
	size_t nflags = 0;
	int rc;

	if (action == NULL || argc < 1 || argv == NULL)
		return dp_error_set(DP_EINVAL, "config: load needs argv and an action");
	rc = dp__stage_init(&st, spec);
	if (rc != 0)
		return rc;
	flags = calloc((size_t)argc, sizeof(*flags));
	old = calloc(st.n + 1, sizeof(*old));
	if (flags == NULL || old == NULL) {
		rc = dp_error_set(DP_ENOMEM, "config: out of memory");
		goto out;
	}
	rc = dp__scan_args(spec, st.n, argc, argv, flags, &nflags, &config, &help, &version,
			   &check);
	if (help || version) {
		*action = help ? DP_CONFIG_HELP : DP_CONFIG_VERSION;
		rc = 0;
		goto out;
	}
	if (rc != 0)
		goto out;
	rc = dp__stage_defaults(&st);
	if (rc == 0 && config)
		rc = dp__stage_file(&st, config);
	for (size_t f = 0; rc == 0 && f < nflags; f++) {
		const struct dp_config_entry *e = &spec->entries[flags[f].idx];
		char what[128];

		snprintf(what, sizeof(what), "option %.*s", (int)strcspn(flags[f].opt, "="),
			 flags[f].opt);
		rc = dp__stage_set(&st, e->name, flags[f].value ? flags[f].value : "false", what);
	}
	for (size_t i = 0; rc == 0 && i < st.n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];

		if ((e->flags & DP_CONFIG_REQUIRED) && st.val[i].s == NULL)
			rc = dp__missing(spec, e);
	}
	if (rc != 0)
		goto out;
	dp__stage_commit(&st, old);
	if (spec->validate) {
		rc = spec->validate(spec->validate_arg);
		if (rc != 0) {
			dp__stage_rollback(&st, old);
			goto out;
		}
	}
	dp__free_old_strings(&st, old);
	*action = check ? DP_CONFIG_CHECK : DP_CONFIG_RUN;
out:
	free(old);
	free(flags);
	dp__stage_free(&st);
	return rc;
}

/* ---- output --------------------------------------------------------------- */

static int dp__format_entry(const struct dp_config_entry *e, char *buf, size_t len)
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
	}
	return w < 0 || (size_t)w >= len ? DP_ERANGE : 0;
}

int dp_config_format(const struct dp_config_spec *spec, const char *name, char *buf, size_t len)
{
	long i;

	if (spec == NULL || spec->entries == NULL || name == NULL || buf == NULL || len == 0)
		return dp_error_set(DP_EINVAL, "config: format needs a spec, a name and a buffer");
	i = dp__find(spec, name);
	if (i < 0) {
		buf[0] = '\0';
		return dp_error_set(DP_ENOENT, "unknown setting '%s'", name);
	}
	return dp__format_entry(&spec->entries[i], buf, len);
}

int dp_config_print(const struct dp_config_spec *spec, FILE *out)
{
	size_t n;
	char buf[128];
	int rc = dp__check_table(spec, &n);

	if (rc != 0)
		return rc;
	fprintf(out, "# effective configuration of %s\n[%s]\n", spec->program, spec->program);
	for (size_t i = 0; i < n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];
		const char *s;
		size_t l;

		if (!dp__is_string(e->type)) {
			dp__format_entry(e, buf, sizeof(buf));
			fprintf(out, "%s = %s\n", e->name, buf);
			continue;
		}
		s = *(char **)e->field;
		if (s == NULL) {
			fprintf(out, "# %s is not set\n", e->name);
			continue;
		}
		l = strlen(s);
		/* Quote what the reader would otherwise strip or misread. */
		if (l == 0 || isspace((unsigned char)s[0]) || isspace((unsigned char)s[l - 1]) ||
		    (s[0] == '"' && s[l - 1] == '"'))
			fprintf(out, "%s = \"%s\"\n", e->name, s);
		else
			fprintf(out, "%s = %s\n", e->name, s);
	}
	if (fflush(out) != 0 || ferror(out))
		return dp_error_set(DP_EIO, "cannot write the configuration: %s", strerror(errno));
	return 0;
}

static const char *dp__metavar(const struct dp_config_entry *e, char *buf, size_t len)
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
	case DP_CONFIG_ENUM:
		buf[0] = '\0';
		for (int i = 0; e->values[i] && off < len; i++)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "|" : "",
						e->values[i]);
		return buf;
	}
	return "";
}

static void dp__help_line(FILE *out, const char *left, const char *right)
{
	if (strlen(left) <= 28)
		fprintf(out, "  %-28s  %s\n", left, right);
	else
		fprintf(out, "  %s\n  %-28s  %s\n", left, "", right);
}

int dp_config_print_help(const struct dp_config_spec *spec, FILE *out)
{
	size_t n;
	int rc = dp__check_table(spec, &n);

	if (rc != 0)
		return rc;
	fprintf(out, "Usage: %s [--config FILE] [OPTION]...\n", spec->program);
	if (spec->summary)
		fprintf(out, "%s\n", spec->summary);
	fprintf(out, "\nSettings come from their defaults, then the config file (keys at the top "
		"or in [%s]),\nthen the options below, which win.  Every option is also a "
		"config key.\n\nGeneral:\n", spec->program);
	dp__help_line(out, "-c, --config FILE", "read settings from FILE");
	dp__help_line(out, "-n, --check-config", "validate, print the settings and exit");
	dp__help_line(out, "-h, --help", "print this help and exit");
	dp__help_line(out, "-V, --version", "print the version and exit");
	for (size_t i = 0; i < n; i++) {
		const struct dp_config_entry *e = &spec->entries[i];
		const char *group = e->group ? e->group : "Options";
		char left[160], right[512], mv[128], val[96];
		size_t off;
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++) {
			const char *g = spec->entries[j].group ? spec->entries[j].group : "Options";

			seen = strcmp(g, group) == 0;
		}
		if (seen)
			continue;
		fprintf(out, "\n%s:\n", group);
		for (size_t j = i; j < n; j++) {
			const struct dp_config_entry *f = &spec->entries[j];
			const char *g = f->group ? f->group : "Options";

			if (strcmp(g, group) != 0)
				continue;
			if (f->type == DP_CONFIG_BOOL)
				snprintf(left, sizeof(left), "--[no-]%s", f->name);
			else
				snprintf(left, sizeof(left), "--%s %s", f->name,
					 dp__metavar(f, mv, sizeof(mv)));
			/* "help (default: X, range)" or "help (required)". */
			val[0] = '\0';
			if (dp__is_number(f->type) && f->min < f->max) {
				char lo[32], hi[32];

				dp_num_format(lo, sizeof(lo), f->min);
				dp_num_format(hi, sizeof(hi), f->max);
				if (isinf(f->max))
					snprintf(val, sizeof(val), "%s %s", f->min_exclusive ? ">" : ">=",
						 lo);
				else if (isinf(f->min))
					snprintf(val, sizeof(val), "<= %s", hi);
				else
					snprintf(val, sizeof(val), "range %c%s, %s]",
						 f->min_exclusive ? '(' : '[', lo, hi);
			}
			off = (size_t)snprintf(right, sizeof(right), "%s", f->help ? f->help : "");
			if (off < sizeof(right) && (f->flags & DP_CONFIG_REQUIRED))
				snprintf(right + off, sizeof(right) - off, " (required)");
			else if (off < sizeof(right) && f->def)
				snprintf(right + off, sizeof(right) - off, " (default: %s%s%s)", f->def,
					 val[0] ? ", " : "", val);
			else if (off < sizeof(right) && val[0])
				snprintf(right + off, sizeof(right) - off, " (%s)", val);
			dp__help_line(out, left, right);
		}
	}
	if (fflush(out) != 0 || ferror(out))
		return dp_error_set(DP_EIO, "cannot write the help text: %s", strerror(errno));
	return 0;
}
