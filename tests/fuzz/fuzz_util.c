/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the fuzz targets (fuzz_util.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/core/file.h"
#include "common/core/log.h"
#include "tests/fuzz/fuzz_util.h"

static char scratch[256];
static char paths[8][320];
static size_t n_paths;

void fuzz_util_fail(const char *cond, const char *file, int line)
{
	fprintf(stderr, "%s:%d: invariant failed: %s\n", file, line, cond);
	abort();
}

static int no_sync(int fd)
{
	return 0;
}

/* Remove the scratch directory and what the targets left in it. */
static void cleanup(void)
{
	DIR *d = opendir(scratch);
	struct dirent *e;
	char p[600];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", scratch, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(scratch);
}

void fuzz_util_init(void)
{
	const char *base = "/dev/shm";
	struct stat st;

	if (scratch[0] != '\0')
		return;
	dp_log_set_level(DP_LOG_ERROR);
	dp_file_set_sync_hook(no_sync);
	if (stat(base, &st) != 0 || !S_ISDIR(st.st_mode) || access(base, W_OK) != 0)
		base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(scratch, sizeof(scratch), "%s/dpfuzz.XXXXXX", base);
	if (mkdtemp(scratch) == NULL) {
		perror("fuzz: mkdtemp");
		abort();
	}
	atexit(cleanup);
}

const char *fuzz_util_path(const char *name)
{
	fuzz_util_init();
	for (size_t i = 0; i < n_paths; i++) {
		const char *slash = strrchr(paths[i], '/');

		if (strcmp(slash + 1, name) == 0)
			return paths[i];
	}
	FUZZ_CHECK(n_paths < 8);
	snprintf(paths[n_paths], sizeof(paths[n_paths]), "%s/%s", scratch, name);
	return paths[n_paths++];
}

void fuzz_util_write(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t off = 0;

	FUZZ_CHECK(fd >= 0);
	while (off < size) {
		ssize_t w = write(fd, data + off, size - off);

		FUZZ_CHECK(w > 0);
		off += (size_t)w;
	}
	FUZZ_CHECK(close(fd) == 0);
}

char *fuzz_util_read(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	FUZZ_CHECK(f != NULL);
	FUZZ_CHECK(fseek(f, 0, SEEK_END) == 0);
	n = ftell(f);
	FUZZ_CHECK(n >= 0 && fseek(f, 0, SEEK_SET) == 0);
	buf = malloc((size_t)n + 1);
	FUZZ_CHECK(buf != NULL);
	FUZZ_CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*size = (size_t)n;
	return buf;
}
