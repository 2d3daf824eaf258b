/* SPDX-License-Identifier: Apache-2.0 */
/* Where a job's ledger file lives in the directory, and the move of format
 * 5 (ledgerset_impl.h, docs/ledger.md §10 "The step from 4 to 5").
 *
 * Up to format 4 a job's file was DIR/job-<job>.ledger, and learnerd's job
 * ids start with "job-", so operators read `job-job-2026….ledger`.  From
 * format 5 the files live in DIR/jobs/ under the job's own id.  The move
 * never renames a file away: it gives each one a second name (a hard
 * link) in jobs/, syncs jobs/, commits the format, and only then removes
 * the old names, so that at every instant one of the two names that the
 * format on disk reads holds every record. */
#include "common/core/ledgerset_impl.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/ledger.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#define OLD_PREFIX "job-"
#define SUFFIX     ".ledger"
#define PLAIN_MAX  100
/* The temporary second name of a file being moved home (jobs/ readers skip
 * names that start with a dot). */
#define MOVING     DP__LEDGERSET_JOBS_DIR "/.moving" SUFFIX

static bool plain_name(const char *job)
{
	size_t n = strlen(job);

	if (n == 0 || n > PLAIN_MAX || job[0] == '.')
		return false;
	for (const char *c = job; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-'))
			return false;
	return true;
}

void dp_ledgerset_job_hash(const char *job, char hex[33])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	DP_REQUIRE(job != NULL && hex != NULL);
	EVP_Digest(job, strlen(job), md, &mdlen, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

char *dp__ledgerset_job_name(const char *job, unsigned format)
{
	bool home = format >= DP__LEDGERSET_FORMAT_JOBS;
	char hex[33], *p = NULL;
	int n;

	DP_REQUIRE(job != NULL);
	if (plain_name(job)) {
		n = home ? asprintf(&p, DP__LEDGERSET_JOBS_DIR "/%s" SUFFIX, job) :
			asprintf(&p, OLD_PREFIX "%s" SUFFIX, job);
	} else {
		dp_ledgerset_job_hash(job, hex);
		n = home ? asprintf(&p, DP__LEDGERSET_JOBS_DIR "/sha256=%s" SUFFIX, hex) :
			asprintf(&p, OLD_PREFIX "sha256-%s" SUFFIX, hex);
	}
	return n < 0 ? NULL : p;
}

int dp__ledgerset_job_home(const char *name, const char *job, char **home)
{
	size_t n = strlen(name), lp = strlen(OLD_PREFIX), ls = strlen(SUFFIX);
	char id[PLAIN_MAX + 1], hex[33];
	const char *h;

	DP_REQUIRE(name != NULL && job != NULL && home != NULL);
	*home = NULL;
	if (strncmp(job, "job=", 4) == 0) {
		*home = dp__ledgerset_job_name(job + 4, DP__LEDGERSET_FORMAT_JOBS);
		return *home == NULL ? dp_error_set(DP_ENOMEM, "ledger: out of memory") : 0;
	}
	/* A hashed identity: the old name held the id itself (a plain one,
	 * checked against the hash) or the same hash. */
	if (strncmp(job, "job-sha256=", 11) != 0 || strlen(job + 11) != 32 || n <= lp + ls ||
	    n - lp - ls > PLAIN_MAX)
		goto bad;
	h = job + 11;
	snprintf(id, sizeof(id), "%.*s", (int)(n - lp - ls), name + lp);
	if (strncmp(id, "sha256-", 7) == 0 && strcmp(id + 7, h) == 0) {
		if (asprintf(home, DP__LEDGERSET_JOBS_DIR "/sha256=%s" SUFFIX, h) < 0)
			*home = NULL;
	} else {
		if (!plain_name(id))
			goto bad;
		dp_ledgerset_job_hash(id, hex);
		if (strcmp(hex, h) != 0)
			goto bad;
		if (asprintf(home, DP__LEDGERSET_JOBS_DIR "/%s" SUFFIX, id) < 0)
			*home = NULL;
	}
	return *home == NULL ? dp_error_set(DP_ENOMEM, "ledger: out of memory") : 0;
bad:
	return dp_error_set(DP_ECORRUPT, "ledger file %s: its name does not match the job in its "
			    "header (%s): it was renamed, so it cannot be placed in " DP__LEDGERSET_JOBS_DIR
			    "/; give it back its name (docs/ledger.md §10)", name, job);
}

bool dp__ledgerset_same_file(const char *a, const char *b)
{
	struct stat x, y;

	return lstat(a, &x) == 0 && lstat(b, &y) == 0 && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

/* Give `top` (DIR/job-....ledger) the second name DIR/`home`, replacing a
 * different file there: link to the temporary name, rename over the home
 * (each an atomic step; a crash between leaves only the temporary name,
 * which the next run replaces).  *moved: a name was written. */
static int place(const char *dir, const char *top, const char *home, bool *moved)
{
	char *to = NULL, *tmp = NULL;
	struct stat a;
	int r = 0;

	if (asprintf(&to, "%s/%s", dir, home) < 0 || asprintf(&tmp, "%s/" MOVING, dir) < 0) {
		r = dp_error_set(DP_ENOMEM, "ledger: out of memory");
		goto out;
	}
	if (lstat(top, &a) != 0) {
		r = dp_error_set(DP_EIO, "ledger %s: stat: %s", top, strerror(errno));
		goto out;
	}
	if (dp__ledgerset_same_file(top, to))
		goto out;
	if (unlink(tmp) != 0 && errno != ENOENT) {
		r = dp_error_set(DP_EIO, "ledger %s: unlink: %s", tmp, strerror(errno));
		goto out;
	}
	if (link(top, tmp) != 0) {
		r = dp_error_set(DP_EIO, "ledger %s: link to %s: %s", top, tmp, strerror(errno));
		goto out;
	}
	if (rename(tmp, to) != 0) {
		r = dp_error_set(DP_EIO, "ledger %s: rename to %s: %s", tmp, to, strerror(errno));
		goto out;
	}
	*moved = true;
out:
	free(to);
	free(tmp);
	return r;
}

const char *dp__ledgerset_job_field(const char *ident)
{
	const char *sp = strchr(ident, ' ');

	return sp ? sp + 1 : ident;
}

/* The job field of a job file's header ("job=..." or "job-sha256=..."),
 * after verifying the whole file read-only. */
static int job_of(const char *path, char *job, size_t size)
{
	dp_ledger *l = NULL;
	int r;

	r = dp_ledger_open(path, 0, 0, NULL, DP__LEDGERSET_READ_FLAGS, &l);
	if (r < 0)
		return r;
	snprintf(job, size, "%s", dp__ledgerset_job_field(dp_ledger_identity(l)));
	dp_ledger_close(l);
	return 0;
}

bool dp__ledgerset_old_name(const char *name)
{
	size_t n = strlen(name), ls = strlen(SUFFIX), lp = strlen(OLD_PREFIX);

	return n > lp + ls && strncmp(name, OLD_PREFIX, lp) == 0 &&
	       strcmp(name + n - ls, SUFFIX) == 0;
}

bool dp__ledgerset_home_name(const char *name)
{
	size_t n = strlen(name), ls = strlen(SUFFIX);

	return n > ls && name[0] != '.' && strcmp(name + n - ls, SUFFIX) == 0;
}

/* Make DIR/jobs (0700), synced into DIR. */
static int make_home(const char *dir)
{
	char *p = NULL;
	struct stat st;
	int r = 0;

	if (asprintf(&p, "%s/" DP__LEDGERSET_JOBS_DIR, dir) < 0)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	if (mkdir(p, 0700) != 0 && errno != EEXIST)
		r = dp_error_set(DP_EIO, "ledger %s: mkdir: %s", p, strerror(errno));
	else if (lstat(p, &st) != 0 || !S_ISDIR(st.st_mode))
		r = dp_error_set(DP_ECORRUPT, "ledger directory %s: %s is not a directory", dir, p);
	else
		r = dp_file_sync_dir(p);
	free(p);
	return r;
}

/* fsync DIR/jobs itself (dp_file_sync_dir syncs the directory holding the
 * path it is given). */
static int sync_home(const char *dir)
{
	char *p = NULL;
	int r;

	if (asprintf(&p, "%s/" DP__LEDGERSET_JOBS_DIR "/x", dir) < 0)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	r = dp_file_sync_dir(p);
	free(p);
	return r;
}

int dp__ledgerset_jobs_move(const char *dir, const struct dp__ledgerset_ctx *ctx)
{
	char job[DP_LEDGER_IDENTITY_MAX + 1];
	struct dirent *de;
	bool moved = false;
	DIR *d;
	int r;

	(void)ctx;
	r = make_home(dir);
	if (r < 0)
		return r;
	d = opendir(dir);
	if (d == NULL)
		return dp_error_set(DP_EIO, "ledger %s: opendir: %s", dir, strerror(errno));
	for (;;) {
		char *top = NULL, *home = NULL;

		errno = 0;
		de = readdir(d);
		if (de == NULL) {
			if (errno != 0)
				r = dp_error_set(DP_EIO, "ledger %s: readdir: %s", dir, strerror(errno));
			break;
		}
		if (!dp__ledgerset_old_name(de->d_name))
			continue;
		if (asprintf(&top, "%s/%s", dir, de->d_name) < 0) {
			r = dp_error_set(DP_ENOMEM, "ledger: out of memory");
			break;
		}
		r = job_of(top, job, sizeof(job));
		if (r == 0)
			r = dp__ledgerset_job_home(de->d_name, job, &home);
		if (r == 0)
			r = place(dir, top, home, &moved);
		free(top);
		free(home);
		if (r < 0)
			break;
	}
	closedir(d);
	/* Every name in jobs/ durable before the commit (even none: the
	 * directory itself is). */
	if (r == 0)
		r = sync_home(dir);
	return r;
}

int dp__ledgerset_jobs_tidy(dp_ledgerset *s)
{
	bool moved = false, removed = false;
	int r = 0;

	DP_REQUIRE(s != NULL && !s->readonly && s->format >= DP__LEDGERSET_FORMAT_JOBS);
	if (s->n_loose == 0)
		return 0;
	for (size_t i = 0; i < s->n_loose && r == 0; i++)
		if (!s->loose[i].stale)
			r = place(s->dir, s->loose[i].top,
				  s->loose[i].home + strlen(s->dir) + 1, &moved);
	if (r == 0 && moved)
		r = sync_home(s->dir);
	/* Now every old name has its home, durably: the old names go. */
	for (size_t i = 0; i < s->n_loose && r == 0; i++) {
		if (unlink(s->loose[i].top) != 0 && errno != ENOENT)
			r = dp_error_set(DP_EIO, "ledger %s: unlink: %s", s->loose[i].top,
					 strerror(errno));
		removed = true;
	}
	if (r == 0 && removed)
		r = dp_file_sync_dir(s->loose[0].top);
	if (r == 0)
		r = dp_ledgerset_rescan(s);
	return r;
}
