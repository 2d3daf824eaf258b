/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger directory's format version and its migrations
 * (ledgerset_impl.h, docs/ledger.md §10).
 *
 * A later change to the directory is one row of `steps` below (with its
 * `apply`, under the rules of struct dp__ledgerset_step), DP_LEDGERSET_FORMAT
 * one higher, the reader in ledgerset.c taught the new layout where it
 * differs, and one migration test from a directory of the version before. */
#include "common/core/ledgerset_impl.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/log.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The format file holds this and the version in decimal, then a newline. */
#define FORMAT_TEXT "dpasync ledger directory format "
#define FORMAT_MAX  64

/* Version 1 is the layout from before versions: job files and the lock,
 * no format file.  Version 2 is the same layout with the format file,
 * which the step writes as its commit: nothing else changes.  Version 3
 * adds the `lifetime` file: the lifetime cap, from then on the
 * directory's and no longer only the configuration's (docs/ledger.md
 * §11); a reader of version 2 ignores the file.  Version 4 changes no
 * file: it says that job files may be Gaussian ones (nano-rho, job file
 * version 2) and the lifetime file may set a lifetime delta, neither of
 * which a reader of version 3 knows, so that such a build refuses the
 * directory as newer rather than a file of it as damaged (docs/ledger.md
 * §10).  A directory that never set a delta reads as delta 0.  Version 5
 * keeps the job files in jobs/ under their job's id (ledgerset_jobs.c): the
 * step gives each a second name there, and the old names go after the
 * commit; a reader of version 4 ignores jobs/. */
static const struct dp__ledgerset_step steps[] = {
	{ 1, "the format version is recorded (the layout is unchanged)", NULL },
	{ 2, "the lifetime cap is recorded in the directory (the lifetime file)",
	  dp__ledgerset_lifetime_start },
	{ 3, "job files may hold Gaussian answers in nano-rho and the lifetime file a lifetime "
	  "delta (none recorded: 0, pure epsilon-DP; the files are unchanged)", NULL },
	{ 4, "job files live in jobs/ under their job's id (jobs/<job>.ledger, not "
	  "job-<job>.ledger)", dp__ledgerset_jobs_move },
};

static char *format_path(const char *dir)
{
	char *p = NULL;

	if (asprintf(&p, "%s/" DP__LEDGERSET_FORMAT_FILE, dir) < 0)
		return NULL;
	return p;
}

/* "dpasync ledger directory format N\n" with 1 <= N <= UINT_MAX, exactly. */
static int parse(const char *text, size_t len, unsigned *version)
{
	size_t pre = strlen(FORMAT_TEXT), i = pre;
	unsigned long long v = 0;

	if (len <= pre + 1 || strlen(text) != len || strncmp(text, FORMAT_TEXT, pre) != 0 ||
	    text[pre] == '0')
		return -1;
	for (; i < len && text[i] >= '0' && text[i] <= '9' && i - pre < 10; i++)
		v = v * 10 + (unsigned long long)(text[i] - '0');
	if (i == pre || i + 1 != len || text[i] != '\n' || v > 0xffffffffull)
		return -1;
	*version = (unsigned)v;
	return 0;
}

int dp__ledgerset_format_read(const char *dir, unsigned newest, unsigned *version)
{
	char *path = format_path(dir), *text = NULL;
	size_t len = 0;
	unsigned v = 0;
	int rc;

	DP_REQUIRE(dir != NULL && version != NULL);
	if (path == NULL)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	rc = dp_file_read_all(path, FORMAT_MAX, &text, &len);
	if (rc == DP_ENOENT) {
		*version = 1;
		rc = 0;
		goto out;
	}
	if (rc == DP_ERANGE || (rc == 0 && parse(text, len, &v) != 0)) {
		rc = dp_error_set(DP_ECORRUPT, "ledger directory %s: %s is damaged (expected one line "
				  "\"" FORMAT_TEXT "N\"); do not delete it, it says how to read "
				  "the directory", dir, path);
		goto out;
	}
	if (rc != 0)
		goto out;   /* the detail names the file */
	if (v > newest) {
		rc = dp_error_set(DP_EFORMAT, "ledger directory %s has format %u, newer than the %u "
				  "this build knows: use the ownerd and dpasync that wrote it, or "
				  "newer ones; nothing was changed", dir, v, newest);
		goto out;
	}
	*version = v;
out:
	free(text);
	free(path);
	return rc;
}

int dp__ledgerset_format_write(const char *dir, unsigned version)
{
	char *path = format_path(dir), text[FORMAT_MAX];
	int rc;

	DP_REQUIRE(dir != NULL && version >= 1);
	if (path == NULL)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	snprintf(text, sizeof(text), FORMAT_TEXT "%u\n", version);
	rc = dp_file_write_atomic(path, text, strlen(text), 0600);
	free(path);
	return rc;
}

int dp__ledgerset_migrate(const char *dir, const struct dp__ledgerset_step *chain, size_t n,
			  unsigned target, const struct dp__ledgerset_ctx *ctx, unsigned *version)
{
	DP_REQUIRE(dir != NULL && ctx != NULL && version != NULL && (n == 0 || chain != NULL));
	while (*version < target) {
		const struct dp__ledgerset_step *st = NULL;
		int rc;

		for (size_t i = 0; i < n && st == NULL; i++)
			if (chain[i].from == *version)
				st = &chain[i];
		if (st == NULL)
			return dp_error_set(DP_EFORMAT, "ledger directory %s: no migration from format "
					    "%u", dir, *version);
		rc = st->apply != NULL ? st->apply(dir, ctx) : 0;
		if (rc == 0)
			rc = dp__ledgerset_format_write(dir, *version + 1);
		if (rc != 0)
			return rc;
		if (!ctx->created)
			DP_INFO("ledger", "migrated dir=%s format %u -> %u: %s", dir, *version,
				*version + 1, st->what);
		(*version)++;
	}
	return 0;
}

int dp__ledgerset_upgrade(const char *dir, const struct dp__ledgerset_ctx *ctx,
			  unsigned *version)
{
	return dp__ledgerset_migrate(dir, steps, sizeof(steps) / sizeof(steps[0]),
				     DP_LEDGERSET_FORMAT, ctx, version);
}
