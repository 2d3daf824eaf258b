/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger directory's lifetime cap and the history of its changes
 * (ledgerset.h, docs/ledger.md §11).
 *
 * DIR/lifetime is one JSON object, {"changes": [...]}, one entry per change
 * of the cap, oldest first; the last entry's new_nano is the cap.  The
 * file is only ever replaced whole (dp_json_write_file: a temporary file,
 * fsync, rename, fsync of the directory), so a crash leaves the old history
 * or the new one.  Reading it checks that the changes chain (each one's
 * old_nano is the previous one's new_nano), so a file that was edited
 * carelessly, or damaged, is refused rather than read as some other cap.
 * Since format 4 a change may also set the lifetime delta (the key
 * `delta`, written only where the delta changes: a directory that never
 * set one reads as delta 0, pure eps-DP, and its file is as before). */
#include "common/core/ledgerset_impl.h"
#include "common/core/error.h"
#include "common/core/json.h"
#include "common/core/nano.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* More changes than a directory could ever collect by hand: a bound on
 * what reading a damaged file may allocate. */
#define CHANGES_MAX 10000
#define FILE_MAX    (4u << 20)

static char *lifetime_path(const char *dir)
{
	char *p = NULL;

	if (asprintf(&p, "%s/" DP__LEDGERSET_LIFETIME_FILE, dir) < 0)
		return NULL;
	return p;
}

/* A cap as JSON: nano-epsilon as an integer, the string "inf" for none. */
static struct json_object *nano_json(uint64_t v)
{
	if (v == DP_NANO_INF)
		return json_object_new_string("inf");
	return json_object_new_uint64(v);
}

static bool printable(const char *s)
{
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

int dp_ledgerset_change_add_who(struct json_object *o, const dp_ledgerset_change *c)
{
	int rc;

	DP_REQUIRE(o != NULL && c != NULL);
	rc = dp_json_add(o, "time", json_object_new_string(c->time));
	if (rc == 0)
		rc = dp_json_add(o, "user", json_object_new_string(c->user));
	if (rc == 0)
		rc = dp_json_add(o, "uid", json_object_new_uint64(c->uid));
	if (rc == 0)
		rc = dp_json_add(o, "host", json_object_new_string(c->host));
	if (rc == 0)
		rc = dp_json_add(o, "program", json_object_new_string(c->program));
	return rc;
}

/* The change `c`, which follows a change with delta prev_delta (0 for the
 * first), as a JSON object appended to `arr`. */
static int push_change(struct json_object *arr, const dp_ledgerset_change *c, double prev_delta)
{
	struct json_object *o = json_object_new_object();
	int rc;

	if (o == NULL)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	rc = dp_ledgerset_change_add_who(o, c);
	if (rc == 0)
		rc = c->first ? dp_json_add_null(o, "old_nano") :
			dp_json_add(o, "old_nano", nano_json(c->old_nano));
	if (rc == 0)
		rc = dp_json_add(o, "new_nano", nano_json(c->new_nano));
	if (rc == 0 && c->delta != prev_delta)
		rc = dp_json_add(o, "delta", dp_json_double(c->delta));
	if (rc == 0)
		rc = dp_json_add(o, "reason", json_object_new_string(c->reason));
	if (rc != 0) {
		json_object_put(o);
		return rc;
	}
	return dp_json_push(arr, o);
}

/* Write changes[0..n) as the directory's lifetime file, atomically. */
static int write_changes(const char *dir, const dp_ledgerset_change *changes, size_t n)
{
	struct json_object *root = json_object_new_object(), *arr = json_object_new_array();
	char *path = lifetime_path(dir);
	int rc = 0;

	if (root == NULL || arr == NULL || path == NULL) {
		json_object_put(arr);
		rc = dp_error_set(DP_ENOMEM, "ledger: out of memory");
		goto out;
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = push_change(arr, &changes[i], i ? changes[i - 1].delta : 0.0);
	if (rc == 0) {
		rc = dp_json_add(root, "changes", arr);
		arr = NULL;
	}
	json_object_put(arr);
	if (rc == 0)
		rc = dp_json_write_file(path, root, 0600);
out:
	json_object_put(root);
	free(path);
	return rc;
}

/* Who and when, for a new change. */
static int fill_change(dp_ledgerset_change *c, uint64_t old_nano, uint64_t new_nano, double delta,
		       bool first, const char *program, const char *reason)
{
	struct passwd pw, *found = NULL;
	char buf[4096];
	struct timespec ts;
	struct tm tm;

	if (new_nano == 0 || program == NULL || *program == '\0' ||
	    strlen(program) >= sizeof(c->program) || !printable(program))
		return dp_error_set(DP_EINVAL, "ledger: a lifetime cap of at least 1 nano-epsilon "
				    "and a program name are needed");
	if (reason == NULL || *reason == '\0' || strlen(reason) > DP_LEDGERSET_REASON_MAX ||
	    !printable(reason))
		return dp_error_set(DP_EINVAL, "the reason of a change of the lifetime cap must be "
				    "1 to %d bytes of printable text", DP_LEDGERSET_REASON_MAX);
	memset(c, 0, sizeof(*c));
	c->first = first;
	c->old_nano = first ? 0 : old_nano;
	c->new_nano = new_nano;
	c->delta = delta;
	snprintf(c->program, sizeof(c->program), "%s", program);
	snprintf(c->reason, sizeof(c->reason), "%s", reason);
	c->uid = geteuid();
	if (getpwuid_r((uid_t)c->uid, &pw, buf, sizeof(buf), &found) == 0 && found != NULL &&
	    printable(found->pw_name) && *found->pw_name != '\0')
		snprintf(c->user, sizeof(c->user), "%s", found->pw_name);
	else
		snprintf(c->user, sizeof(c->user), "uid %llu", (unsigned long long)c->uid);
	if (gethostname(c->host, sizeof(c->host) - 1) != 0 || c->host[0] == '\0' ||
	    !printable(c->host))
		snprintf(c->host, sizeof(c->host), "unknown");
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(c->time, sizeof(c->time), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return 0;
}

/* A cap as read: a positive integer of nano-epsilon, or "inf". */
static uint64_t read_nano(dp_json_reader *r, struct json_object *o, const char *key)
{
	struct json_object *v = json_object_object_get(o, key);
	uint64_t n;

	if (v != NULL && json_object_is_type(v, json_type_string) &&
	    strcmp(json_object_get_string(v), "inf") == 0)
		return DP_NANO_INF;
	n = dp_json_get_u64(r, o, key, true, 0);
	if (r->rc == 0 && (n == 0 || n > DP_NANO_MAX))
		dp_json_fail(r, "'%s' must be from 1 to %llu nano-epsilon, or \"inf\"", key,
			     (unsigned long long)DP_NANO_MAX);
	return n;
}

static void read_text(dp_json_reader *r, struct json_object *o, const char *key, char *out,
		      size_t size)
{
	const char *v = dp_json_get_string(r, o, key, true, "");

	if (r->rc == 0 && strlen(v) >= size)
		dp_json_fail(r, "'%s' is longer than %zu bytes", key, size - 1);
	snprintf(out, size, "%s", v);
}

/* One entry of the history; `prev` is the one before it (NULL: none). */
static void read_change(dp_json_reader *r, struct json_object *o, const dp_ledgerset_change *prev,
			dp_ledgerset_change *c)
{
	static const char *const keys[] = { "time", "user", "uid", "host", "program", "old_nano",
					    "new_nano", "delta", "reason" };
	struct json_object *old;

	memset(c, 0, sizeof(*c));
	if (!json_object_is_type(o, json_type_object)) {
		dp_json_fail(r, "not an object");
		return;
	}
	dp_json_only_keys(r, o, keys, sizeof(keys) / sizeof(keys[0]));
	read_text(r, o, "time", c->time, sizeof(c->time));
	read_text(r, o, "user", c->user, sizeof(c->user));
	c->uid = dp_json_get_u64(r, o, "uid", true, 0);
	read_text(r, o, "host", c->host, sizeof(c->host));
	read_text(r, o, "program", c->program, sizeof(c->program));
	read_text(r, o, "reason", c->reason, sizeof(c->reason));
	c->new_nano = read_nano(r, o, "new_nano");
	c->delta = dp_json_get_double(r, o, "delta", false, prev ? prev->delta : 0.0);
	if (r->rc == 0 && !(c->delta >= 0.0 && c->delta < 1.0))
		dp_json_fail(r, "'delta' must be in [0, 1)");
	if (!json_object_object_get_ex(o, "old_nano", &old)) {
		dp_json_fail(r, "missing key 'old_nano'");
		return;
	}
	c->first = prev == NULL;
	if (c->first) {
		if (old != NULL)
			dp_json_fail(r, "the first change has no cap before it: 'old_nano' must be null");
		return;
	}
	c->old_nano = read_nano(r, o, "old_nano");
	if (r->rc == 0 && c->old_nano != prev->new_nano)
		dp_json_fail(r, "'old_nano' is not the cap the change before set");
	if (r->rc == 0 && c->old_nano == c->new_nano && c->delta == prev->delta)
		dp_json_fail(r, "'new_nano' and 'delta' are the ones before: not a change");
}

/* Parse the history held by `root` into a malloc'ed array. */
static int parse_changes(const char *path, struct json_object *root, dp_ledgerset_change **out,
			 size_t *n_out)
{
	static const char *const top[] = { "changes" };
	dp_json_reader r = { .path = path };
	struct json_object *arr;
	dp_ledgerset_change *v = NULL;
	char where[32];
	size_t n = 0;

	dp_json_only_keys(&r, root, top, 1);
	arr = dp_json_get(&r, root, "changes", json_type_array, true);
	if (r.rc == 0) {
		n = json_object_array_length(arr);
		if (n == 0 || n > CHANGES_MAX)
			dp_json_fail(&r, "'changes' must hold 1 to %d changes", CHANGES_MAX);
	}
	if (r.rc == 0) {
		v = calloc(n, sizeof(*v));
		if (v == NULL)
			return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	}
	for (size_t i = 0; r.rc == 0 && i < n; i++) {
		snprintf(where, sizeof(where), "changes[%zu]", i);
		r.where = where;
		read_change(&r, json_object_array_get_idx(arr, i), i ? &v[i - 1] : NULL, &v[i]);
	}
	if (r.rc != 0) {
		free(v);
		return r.rc;
	}
	*out = v;
	*n_out = n;
	return 0;
}

/* The history in DIR/lifetime, malloc'ed (errors as
 * dp__ledgerset_lifetime_read). */
static int load(const char *dir, dp_ledgerset_change **v, size_t *n)
{
	struct json_object *root = NULL;
	char *path = lifetime_path(dir), detail[512];
	int rc;

	if (path == NULL)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	rc = dp_json_read_file(path, FILE_MAX, &root);
	if (rc == 0)
		rc = parse_changes(path, root, v, n);
	json_object_put(root);
	if (rc == DP_EFORMAT || rc == DP_ERANGE) {
		snprintf(detail, sizeof(detail), "%s", dp_error_detail(rc));
		rc = dp_error_set(DP_ECORRUPT, "ledger directory %s: the lifetime cap's record is "
				  "damaged (%s); do not edit it: dpasync ledger raise-lifetime "
				  "changes the cap (docs/ledger.md §11)", dir, detail);
	}
	free(path);
	return rc;
}

int dp__ledgerset_lifetime_read(dp_ledgerset *s)
{
	dp_ledgerset_change *v = NULL;
	size_t n = 0;
	int rc;

	DP_REQUIRE(s != NULL);
	rc = load(s->dir, &v, &n);
	if (rc != 0)
		return rc;
	free(s->changes);
	s->changes = v;
	s->n_changes = n;
	return 0;
}

int dp__ledgerset_lifetime_create(const char *dir, const struct dp_ledgerset_init *init)
{
	dp_ledgerset_change c;
	int rc;

	DP_REQUIRE(dir != NULL && init != NULL);
	if (!(init->lifetime_delta >= 0.0 && init->lifetime_delta < 1.0))
		return dp_error_set(DP_EINVAL, "ledger: a lifetime delta must be in [0, 1), not %g",
				    init->lifetime_delta);
	rc = fill_change(&c, 0, init->lifetime_nano, init->lifetime_delta, true, init->program,
			 init->reason ? init->reason : "the cap the directory starts with");
	if (rc == 0)
		rc = write_changes(dir, &c, 1);
	return rc;
}

int dp__ledgerset_lifetime_start(const char *dir, const struct dp__ledgerset_ctx *ctx)
{
	struct dp_ledgerset_init init;
	dp_ledgerset_change *v = NULL;
	size_t n = 0;
	int rc;

	DP_REQUIRE(dir != NULL && ctx != NULL);
	/* A whole file is kept: this step ran before and was cut short, or
	 * the format file was removed from a directory that had it. */
	rc = load(dir, &v, &n);
	free(v);
	if (rc != DP_ENOENT)
		return rc;
	if (ctx->init == NULL)
		return dp_error_set(DP_EINVAL, "ledger directory %s records no lifetime cap yet: "
				    "ownerd records its lifetime-epsilon when it first opens the "
				    "directory (docs/ledger.md §11)", dir);
	init = *ctx->init;
	if (init.reason == NULL)
		init.reason = ctx->created ? "a new ledger directory" :
			"the directory's first open at format 3: the configured lifetime cap";
	return dp__ledgerset_lifetime_create(dir, &init);
}

int dp_ledgerset_lifetime_get(const dp_ledgerset *s, uint64_t *nano)
{
	DP_REQUIRE(s != NULL && nano != NULL);
	if (s->n_changes == 0)
		return dp_error_set(DP_ENOENT, "ledger directory %s records no lifetime cap "
				    "(format %u)", s->dir, s->format);
	*nano = s->changes[s->n_changes - 1].new_nano;
	return 0;
}

size_t dp_ledgerset_lifetime_count(const dp_ledgerset *s)
{
	DP_REQUIRE(s != NULL);
	return s->n_changes;
}

const dp_ledgerset_change *dp_ledgerset_lifetime_at(const dp_ledgerset *s, size_t i)
{
	DP_REQUIRE(s != NULL && i < s->n_changes);
	return &s->changes[i];
}

double dp_ledgerset_lifetime_delta(const dp_ledgerset *s)
{
	DP_REQUIRE(s != NULL);
	return s->n_changes == 0 ? 0.0 : s->changes[s->n_changes - 1].delta;
}

/* Record a change to cap `nano` and delta `delta`; a raise of either
 * needs DP_LEDGERSET_ALLOW_RAISE. */
static int change(dp_ledgerset *s, uint64_t nano, double delta, unsigned flags,
		  const char *program, const char *reason)
{
	dp_ledgerset_change *v;
	uint64_t cap;
	double was;
	int rc;

	DP_REQUIRE(s != NULL && !(flags & ~(unsigned)DP_LEDGERSET_ALLOW_RAISE));
	if (s->readonly || s->n_changes == 0)
		return dp_error_set(DP_ESTATE, "ledger directory %s: the lifetime cap can only be "
				    "changed through a writable open of a directory that records "
				    "one", s->dir);
	if (!(delta >= 0.0 && delta < 1.0))
		return dp_error_set(DP_EINVAL, "ledger: a lifetime delta must be in [0, 1), not %g",
				    delta);
	cap = s->changes[s->n_changes - 1].new_nano;
	was = s->changes[s->n_changes - 1].delta;
	if (nano == cap && delta == was)
		return 0;
	if ((nano > cap || delta > was) && !(flags & DP_LEDGERSET_ALLOW_RAISE))
		return dp_error_set(DP_EINVAL, "ledger directory %s: raising the lifetime cap is "
				    "the data owner's decision, taken with dpasync ledger "
				    "raise-lifetime (docs/ledger.md §11)", s->dir);
	if (s->n_changes >= CHANGES_MAX)
		return dp_error_set(DP_ERANGE, "ledger directory %s: %d changes of the lifetime cap "
				    "recorded already", s->dir, CHANGES_MAX);
	v = malloc((s->n_changes + 1) * sizeof(*v));
	if (v == NULL)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	memcpy(v, s->changes, s->n_changes * sizeof(*v));
	rc = fill_change(&v[s->n_changes], cap, nano, delta, false, program, reason);
	if (rc == 0)
		rc = write_changes(s->dir, v, s->n_changes + 1);
	if (rc != 0) {
		free(v);
		return rc;
	}
	free(s->changes);
	s->changes = v;
	s->n_changes++;
	return 0;
}

int dp_ledgerset_lifetime_set(dp_ledgerset *s, uint64_t nano, unsigned flags,
			      const char *program, const char *reason)
{
	DP_REQUIRE(s != NULL);
	return change(s, nano, dp_ledgerset_lifetime_delta(s), flags, program, reason);
}

int dp_ledgerset_lifetime_set_delta(dp_ledgerset *s, double delta, unsigned flags,
				    const char *program, const char *reason)
{
	uint64_t cap = 0;

	DP_REQUIRE(s != NULL);
	if (s->n_changes > 0)
		cap = s->changes[s->n_changes - 1].new_nano;
	return change(s, cap, delta, flags, program, reason);
}
