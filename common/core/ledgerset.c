/* SPDX-License-Identifier: Apache-2.0 */
/* An owner's ledgers across jobs.  See ledgerset.h and docs/ledger.md §8;
 * the directory's format version is ledgerset_format.c, its lifetime cap
 * ledgerset_lifetime.c. */
#include "common/core/ledgerset.h"
#include "common/core/ledgerset_impl.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/mem.h"
#include "common/core/nano.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

char *dp_ledgerset_job_path(const dp_ledgerset *s, const char *job)
{
	char *name, *p = NULL;

	DP_REQUIRE(s != NULL && job != NULL);
	name = dp__ledgerset_job_name(job, s->format);
	if (name == NULL || asprintf(&p, "%s/%s", s->dir, name) < 0)
		p = NULL;
	free(name);
	return p;
}

/* Read one job file's summary (verified completely, read-only). */
static int add_job(dp_ledgerset *s, const char *path, const char *owner_id)
{
	dp_ledgerset_job *j;
	dp_ledger_entry e;
	dp_ledger *l = NULL;
	const char *ident;
	uint64_t last = 0;
	int r;

	r = dp_ledger_open(path, 0, 0, NULL, DP__LEDGERSET_READ_FLAGS, &l);
	if (r < 0)
		return r;
	ident = dp_ledger_identity(l);
	if (owner_id != NULL) {
		char prefix[DP_LEDGER_IDENTITY_MAX + 16];

		snprintf(prefix, sizeof(prefix), "owner=%s job", owner_id);
		if (strncmp(ident, prefix, strlen(prefix)) != 0) {
			r = dp_error_set(DP_EINVAL, "ledger %s belongs to '%s', not to owner %s",
					 path, ident, owner_id);
			goto out;
		}
	}
	if (dp_mem_reserve(&s->jobs, &s->cap, s->n + 1, sizeof(*s->jobs), 8) != 0) {
		r = dp_error_set(DP_ENOMEM, "ledger: out of memory");
		goto out;
	}
	j = &s->jobs[s->n];
	memset(j, 0, sizeof(*j));
	j->path = strdup(path);
	if (j->path == NULL) {
		r = dp_error_set(DP_ENOMEM, "ledger: out of memory");
		goto out;
	}
	snprintf(j->job, sizeof(j->job), "%s", dp__ledgerset_job_field(ident));
	j->answers = dp_ledger_answers(l);
	j->answers_cap = dp_ledger_answers_cap(l);
	j->spent_nano = dp_ledger_spent_nano(l);
	j->cap_nano = dp_ledger_cap_nano(l);
	j->torn = dp_ledger_torn_bytes(l);
	j->unit = dp_ledger_unit(l);
	j->delta = dp_ledger_delta(l);
	j->slack_nano = dp_ledger_slack_nano(l);
	dp_ledger_totals(l, &j->totals);
	if (dp_ledger_last_k(l, &last) == 0 && dp_ledger_lookup(l, last, &e) == 0)
		j->last_time_ns = e.time_ns;
	s->n++;
out:
	dp_ledger_close(l);
	return r;
}

static int by_time(const void *a, const void *b)
{
	const dp_ledgerset_job *x = a, *y = b;

	if (x->last_time_ns != y->last_time_ns)
		return x->last_time_ns < y->last_time_ns ? -1 : 1;
	return strcmp(x->path, y->path);
}

static void forget(dp_ledgerset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->jobs[i].path);
	s->n = 0;
	for (size_t i = 0; i < s->n_loose; i++) {
		free(s->loose[i].top);
		free(s->loose[i].home);
	}
	s->n_loose = 0;
}

/* Every job file of `folder` whose name `want` picks. */
static int scan_folder(dp_ledgerset *s, const char *folder, bool (*want)(const char *),
		       const char *owner_id)
{
	struct dirent *de;
	DIR *d;
	int r = 0;

	d = opendir(folder);
	if (d == NULL && errno == ENOENT && strcmp(folder, s->dir) != 0)
		return dp_error_set(DP_ECORRUPT, "ledger directory %s has format %u but no %s, "
				    "which holds its job ledgers: restore it (a ledger removed is "
				    "budget spent and forgotten, docs/ledger.md §1)", s->dir,
				    s->format, folder);
	if (d == NULL)
		return dp_error_set(DP_EIO, "ledger %s: opendir: %s", folder, strerror(errno));
	for (;;) {
		char *path = NULL;

		errno = 0;
		de = readdir(d);
		if (de == NULL) {
			if (errno != 0)
				r = dp_error_set(DP_EIO, "ledger %s: readdir: %s", folder,
						 strerror(errno));
			break;
		}
		if (!want(de->d_name))
			continue;
		if (asprintf(&path, "%s/%s", folder, de->d_name) < 0) {
			r = dp_error_set(DP_ENOMEM, "ledger: out of memory");
			break;
		}
		r = add_job(s, path, owner_id);
		free(path);
		if (r < 0)
			break;
	}
	closedir(d);
	return r;
}

/* Format 5 on: jobs[i] was found in the directory itself, outside jobs/
 * (jobs[0..homes) are jobs/'s).  Without a copy at its home it counts
 * where it is, until a writable open moves it; with one, the home counts
 * and it is stale -- the same file (a crash between the move's link and
 * the removal of the old name), or a copy that holds no more than the home
 * (such a directory copied without its hard links).  An old name that
 * holds more than its home is refused: which one is right cannot be told. */
static int sort_loose(dp_ledgerset *s, size_t i, size_t homes)
{
	dp_ledgerset_job *j = &s->jobs[i], *h = NULL;
	struct dp__ledgerset_loose *l;
	char *rel = NULL, *home = NULL;
	int r;

	r = dp__ledgerset_job_home(strrchr(j->path, '/') + 1, j->job, &rel);
	if (r < 0)
		return r;
	if (asprintf(&home, "%s/%s", s->dir, rel) < 0) {
		free(rel);
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	}
	free(rel);
	for (size_t k = 0; k < homes && h == NULL; k++)
		if (strcmp(s->jobs[k].path, home) == 0)
			h = &s->jobs[k];
	if (h != NULL && !dp__ledgerset_same_file(j->path, home) &&
	    !(j->unit == h->unit && j->answers <= h->answers && j->spent_nano <= h->spent_nano)) {
		r = dp_error_set(DP_ECORRUPT, "ledger directory %s: %s and %s are the same job, and "
				 "the old name holds more than the one format %u reads; keep the "
				 "right one and remove the other (docs/ledger.md §10)", s->dir, j->path,
				 home, s->format);
		free(home);
		return r;
	}
	if (dp_mem_reserve(&s->loose, &s->cap_loose, s->n_loose + 1, sizeof(*s->loose), 4) != 0) {
		free(home);
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	}
	l = &s->loose[s->n_loose++];
	l->home = home;
	l->stale = h != NULL;
	l->top = strdup(j->path);
	if (l->top == NULL)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	if (l->stale) {   /* counted at its home only */
		free(j->path);
		*j = s->jobs[--s->n];
	}
	return 0;
}

static int scan(dp_ledgerset *s, const char *owner_id)
{
	char *home = NULL;
	size_t homes;
	int r;

	if (s->format < DP__LEDGERSET_FORMAT_JOBS) {
		r = scan_folder(s, s->dir, dp__ledgerset_old_name, owner_id);
	} else {
		if (asprintf(&home, "%s/" DP__LEDGERSET_JOBS_DIR, s->dir) < 0)
			return dp_error_set(DP_ENOMEM, "ledger: out of memory");
		r = scan_folder(s, home, dp__ledgerset_home_name, owner_id);
		free(home);
		homes = s->n;
		if (r == 0)
			r = scan_folder(s, s->dir, dp__ledgerset_old_name, owner_id);
		/* From the end: a stale entry is replaced by the last one,
		 * already sorted. */
		for (size_t i = s->n; r == 0 && i > homes; i--)
			r = sort_loose(s, i - 1, homes);
	}
	if (r == 0 && s->n > 1)
		qsort(s->jobs, s->n, sizeof(*s->jobs), by_time);
	return r;
}

/* A format-1 ledger file where the directory should be: say how to move it. */
static int old_file(const char *dir)
{
	dp_ledger *l = NULL;
	const char *job = "JOB";
	char name[DP_LEDGER_IDENTITY_MAX + 1], *file;
	int r;

	r = dp_ledger_open(dir, 0, 0, NULL, DP__LEDGERSET_READ_FLAGS, &l);
	if (r < 0)
		return dp_error_set(DP_EINVAL, "--ledger %s is a file, not a ledger directory", dir);
	snprintf(name, sizeof(name), "%s", dp_ledger_identity(l));
	dp_ledger_close(l);
	if (strstr(name, " job=") != NULL)
		job = strstr(name, " job=") + 5;
	/* Named as a directory of format 1 names it (a new directory without
	 * a format file is one): the first open moves it into jobs/. */
	file = dp__ledgerset_job_name(job, 1);
	if (file == NULL)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	r = dp_error_set(DP_EINVAL, "--ledger %s is a single-job ledger from before jobs; "
			 "--ledger now names a directory of per-job ledgers: run `mv %s %s.1 && "
			 "mkdir -m 700 %s && mv %s.1 %s/%s` (docs/ledger.md §8)",
			 dir, dir, dir, dir, dir, dir, file);
	free(file);
	return r;
}

/* One process per dataset: two daemons on one lifetime budget would
 * double it.  The lock is on the directory itself, an inode that no
 * `rm` of a file inside it can replace and that every path to it (a
 * symbolic link, a bind mount) shares; the `lock` file is locked as well,
 * for an ownerd from before the directory lock, which locks only that
 * file.  Neither waits: a held lock is an error at once. */
static int lock_dir(dp_ledgerset *s)
{
	char *lock = NULL;
	int r = 0;

	s->dir_fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dir_fd < 0)
		return dp_error_set(DP_EIO, "ledger %s: open: %s", s->dir, strerror(errno));
	if (flock(s->dir_fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK)
			return dp_error_set(DP_ESTATE, "ledger %s: in use by another process", s->dir);
		return dp_error_set(DP_EIO, "ledger %s: flock: %s", s->dir, strerror(errno));
	}
	if (asprintf(&lock, "%s/lock", s->dir) < 0)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->lock_fd < 0)
		r = dp_error_set(DP_EIO, "ledger %s: open: %s", lock, strerror(errno));
	else if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0)
		r = errno == EWOULDBLOCK ?
			dp_error_set(DP_ESTATE, "ledger %s: in use by another process", s->dir) :
			dp_error_set(DP_EIO, "ledger %s: flock: %s", lock, strerror(errno));
	free(lock);
	return r;
}

/* The lifetime cap of a directory whose format records one.  A writable
 * set that finds none records init's when asked to recover it. */
static int read_lifetime(dp_ledgerset *s, unsigned flags, const struct dp_ledgerset_init *init)
{
	int r;

	if (s->format < DP__LEDGERSET_FORMAT_LIFETIME)
		return 0;
	r = dp__ledgerset_lifetime_read(s);
	if (r == DP_ENOENT && !s->readonly && (flags & DP_LEDGERSET_RECOVER_LIFETIME) &&
	    init != NULL) {
		r = dp__ledgerset_lifetime_create(s->dir, init);
		if (r == 0)
			r = dp__ledgerset_lifetime_read(s);
	}
	if (r == DP_ENOENT)
		r = dp_error_set(DP_ECORRUPT, "ledger directory %s has format %u but no %s/"
				 DP__LEDGERSET_LIFETIME_FILE ", which records its lifetime cap: "
				 "restore the file, or record the cap again with dpasync ledger "
				 "raise-lifetime %s --to EPS --reason TEXT (docs/ledger.md §11)",
				 s->dir, s->format, s->dir, s->dir);
	return r;
}

int dp_ledgerset_open(const char *dir, const char *owner_id, unsigned flags,
		      const struct dp_ledgerset_init *init, dp_ledgerset **out)
{
	bool ro = flags & DP_LEDGERSET_READONLY, created = false;
	struct dp__ledgerset_ctx ctx;
	dp_ledgerset *s;
	struct stat st;
	int r;

	DP_REQUIRE(dir != NULL && out != NULL);
	if (*dir == '\0' ||
	    (flags & ~(unsigned)(DP_LEDGERSET_READONLY | DP_LEDGERSET_RECOVER_LIFETIME)))
		return dp_error_set(DP_EINVAL, "ledger: open: bad arguments");
	if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
		return S_ISREG(st.st_mode) ? old_file(dir) :
			dp_error_set(DP_EINVAL, "--ledger %s is not a directory", dir);
	if (ro && stat(dir, &st) != 0)
		return dp_error_set(DP_ENOENT, "ledger %s: no such directory", dir);
	/* Only the directory itself is made (0700, like a ledger file's
	 * 0600): a missing parent is a mistyped path, not something to create. */
	if (!ro && mkdir(dir, 0700) == 0) {
		r = dp_file_sync_dir(dir);
		if (r < 0)
			return r;
		created = true;
	} else if (!ro && errno != EEXIST) {
		return dp_error_set(DP_EINVAL, "--ledger %s: cannot create the directory: %s", dir,
				    strerror(errno));
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	s->lock_fd = -1;
	s->dir_fd = -1;
	s->readonly = ro;
	s->dir = strdup(dir);
	if (s->dir == NULL) {
		r = dp_error_set(DP_ENOMEM, "ledger: out of memory");
		goto fail;
	}
	if (owner_id != NULL) {
		s->owner = strdup(owner_id);
		if (s->owner == NULL) {
			r = dp_error_set(DP_ENOMEM, "ledger: out of memory");
			goto fail;
		}
	}
	/* A format this build does not know is refused before anything in
	 * the directory is read. */
	r = dp__ledgerset_format_read(dir, DP_LEDGERSET_FORMAT, &s->format);
	if (r < 0)
		goto fail;
	/* Whose files these are is checked before the lock, so that another
	 * owner's daemon is told so even while this one runs. */
	r = scan(s, owner_id);
	if (r < 0)
		goto fail;
	if (!ro) {
		r = lock_dir(s);
		if (r < 0)
			goto fail;
		/* Under the lock: the version again (another process may have
		 * migrated the directory meanwhile), the steps up to this
		 * build's, then the job files again: what another process wrote
		 * before it let go counts. */
		ctx.init = init;
		ctx.created = created;
		r = dp__ledgerset_format_read(dir, DP_LEDGERSET_FORMAT, &s->format);
		if (r == 0)
			r = dp__ledgerset_upgrade(dir, &ctx, &s->format);
		if (r == 0)
			r = dp_ledgerset_rescan(s);
		/* Job files left outside jobs/ (by the step from 4 to 5, a
		 * crash, or an operator) go home now. */
		if (r == 0 && s->format >= DP__LEDGERSET_FORMAT_JOBS)
			r = dp__ledgerset_jobs_tidy(s);
		if (r < 0)
			goto fail;
	}
	r = read_lifetime(s, flags, init);
	if (r < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	dp_ledgerset_close(s);
	return r;
}

void dp_ledgerset_close(dp_ledgerset *s)
{
	if (s == NULL)
		return;
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	forget(s);
	free(s->jobs);
	free(s->loose);
	free(s->changes);
	free(s->owner);
	free(s->dir);
	free(s);
}

int dp_ledgerset_rescan(dp_ledgerset *s)
{
	DP_REQUIRE(s != NULL);
	forget(s);
	return scan(s, s->owner);
}

unsigned dp_ledgerset_format(const dp_ledgerset *s)
{
	DP_REQUIRE(s != NULL);
	return s->format;
}

size_t dp_ledgerset_count(const dp_ledgerset *s)
{
	DP_REQUIRE(s != NULL);
	return s->n;
}

const dp_ledgerset_job *dp_ledgerset_at(const dp_ledgerset *s, size_t i)
{
	DP_REQUIRE(s != NULL && i < s->n);
	return &s->jobs[i];
}

const dp_ledgerset_job *dp_ledgerset_find(const dp_ledgerset *s, const char *path)
{
	DP_REQUIRE(s != NULL && path != NULL);
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->jobs[i].path, path) == 0)
			return &s->jobs[i];
	return NULL;
}

uint64_t dp_ledgerset_spent_except(const dp_ledgerset *s, const char *path)
{
	uint64_t sum = 0;

	DP_REQUIRE(s != NULL);
	for (size_t i = 0; i < s->n; i++) {
		uint64_t v = s->jobs[i].spent_nano;

		if ((path != NULL && strcmp(s->jobs[i].path, path) == 0) ||
		    s->jobs[i].unit != DP_LEDGER_UNIT_EPS)
			continue;
		sum = dp_nano_add(sum, v);
	}
	return sum;
}
