#include "common/core/file.h"
#include "common/core/error.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dp_file_sync_dir(const char *path)
{
	char *copy = strdup(path);
	int fd, rc = 0;

	if (copy == NULL)
		return DP_ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0)
		rc = dp_error_set(DP_EIO, "%s: cannot sync directory: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(copy);
	return rc;
}

int dp_file_write_atomic(const char *path, const void *data, size_t len, int mode)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 16);
	const char *p = data;
	int fd, rc;

	if (tmp == NULL)
		return DP_ENOMEM;
	snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = dp_error_set(DP_EIO, "%s: cannot create temporary file: %s", path, strerror(errno));
		free(tmp);
		return rc;
	}
	if (fchmod(fd, (mode_t)mode) != 0)
		goto fail;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd) != 0)
		goto fail;
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0)
		goto fail;
	free(tmp);
	return dp_file_sync_dir(path);
fail:
	rc = dp_error_set(DP_EIO, "%s: cannot write: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return rc;
}

int dp_file_read_all(const char *path, size_t max, char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (f == NULL)
		return dp_error_set(errno == ENOENT ? DP_ENOENT : DP_EIO, "%s: cannot open: %s",
				    path, strerror(errno));
	for (;;) {
		if (n + 1 >= cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *nb;
			if (ncap > max + 1)
				ncap = max + 1;
			if (n + 1 >= ncap) {
				free(buf);
				fclose(f);
				return dp_error_set(DP_ERANGE, "%s: larger than %zu bytes", path, max);
			}
			nb = realloc(buf, ncap + 1);
			if (nb == NULL) {
				free(buf);
				fclose(f);
				return DP_ENOMEM;
			}
			buf = nb;
			cap = ncap;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return dp_error_set(DP_EIO, "%s: read error", path);
	}
	fclose(f);
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

int dp_file_mkdir_p(const char *dir, int private_)
{
	char *copy = strdup(dir);
	mode_t mode = private_ ? 0700 : 0755;
	int rc = 0;

	if (copy == NULL)
		return DP_ENOMEM;
	for (char *s = copy + 1;; s++) {
		char c = *s;
		if (c == '/' || c == '\0') {
			*s = '\0';
			if (mkdir(copy, mode) != 0 && errno != EEXIST) {
				rc = dp_error_set(DP_EIO, "%s: cannot create directory: %s", copy,
						  strerror(errno));
				break;
			}
			*s = c;
			if (c == '\0')
				break;
		}
	}
	free(copy);
	return rc;
}
