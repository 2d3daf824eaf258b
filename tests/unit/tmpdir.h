/* SPDX-License-Identifier: Apache-2.0 */
/* A per-test-binary temporary directory and files in it, for the tests of
 * modules that read files (csv, dataset, schema).  Include once per test. */
#ifndef DP_TEST_TMPDIR_H
#define DP_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[64];

/* dir/name; four rotating buffers so a few paths can be live at once. */
static inline const char *path_of(const char *name)
{
	static char buf[4][256];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

/* Write `len` bytes (NULs allowed) to dir/name; returns the path. */
static inline const char *put_bytes(const char *name, const char *data, size_t len)
{
	const char *p = path_of(name);
	FILE *f = fopen(p, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	return p;
}

static inline const char *put(const char *name, const char *text)
{
	return put_bytes(name, text, strlen(text));
}

/* Group setup/teardown: mkdtemp /tmp/<prefix>.XXXXXX, then rm -rf. */
static inline int tmpdir_setup(const char *prefix)
{
	snprintf(dir, sizeof(dir), "/tmp/%s.XXXXXX", prefix);
	assert_non_null(mkdtemp(dir));
	return 0;
}

static inline int tmpdir_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

#endif
