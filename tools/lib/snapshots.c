/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/lib/snapshots.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/num.h"

void dp_snapshots_free(dp_snapshots *s)
{
	DP_REQUIRE(s != NULL);
	free(s->k);
	free(s->t);
	free(s->theta);
	memset(s, 0, sizeof(*s));
}

static bool header_ok(const char *h, size_t p)
{
	char want[32];

	if (strncmp(h, "k,time_unix", 11) != 0)
		return false;
	h += 11;
	for (size_t q = 0; q < p; q++) {
		size_t n = (size_t)snprintf(want, sizeof(want), ",theta_%zu", q + 1);

		if (strncmp(h, want, n) != 0)
			return false;
		h += n;
	}
	return *h == '\0';
}

/* One row into s (room for it reserved): p + 2 fields. */
static int row(dp_snapshots *s, char *line, const char *path, size_t lineno)
{
	size_t i = s->n, f = 0;
	char *q = line, *save = NULL, *tok;

	for (tok = strtok_r(q, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save), f++) {
		int bad = f == 0 ? dp_num_parse_size("k", tok, &s->k[i])
			  : f == 1 ? dp_num_parse_double("time_unix", tok, 0, &s->t[i])
			  : f < s->p + 2 ? dp_num_parse_double("theta", tok, 0,
								&s->theta[i * s->p + f - 2])
			  : -1;

		if (bad != 0)
			break;
	}
	if (f != s->p + 2 || tok != NULL)
		return dp_error_set(DP_EFORMAT, "%s:%zu: expected k, time_unix and %zu finite "
				    "coefficients", path, lineno, s->p);
	if (i > 0 && s->k[i] <= s->k[i - 1])
		return dp_error_set(DP_EFORMAT, "%s:%zu: k %zu does not follow %zu", path, lineno,
				    s->k[i], s->k[i - 1]);
	s->n++;
	return 0;
}

static int grow(dp_snapshots *s, size_t *cap)
{
	size_t c = *cap ? 2 * *cap : 64;
	size_t *k = realloc(s->k, c * sizeof(*k));
	double *t, *th;

	if (k != NULL)
		s->k = k;
	t = k ? realloc(s->t, c * sizeof(*t)) : NULL;
	if (t != NULL)
		s->t = t;
	th = t ? realloc(s->theta, c * s->p * sizeof(*th)) : NULL;
	if (th == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	s->theta = th;
	*cap = c;
	return 0;
}

int dp_snapshots_read(const char *path, size_t p, dp_snapshots *out)
{
	dp_snapshots s = { .p = p };
	char *buf = NULL;
	size_t bufsz = 0, lineno = 0, cap = 0;
	FILE *f;
	int rc = 0;

	DP_REQUIRE(path != NULL && p > 0 && out != NULL);
	f = fopen(path, "re");
	if (f == NULL)
		return dp_error_set(errno == ENOENT ? DP_ENOENT : DP_EIO, "%s: %s", path,
				    strerror(errno));
	while (rc == 0 && getline(&buf, &bufsz, f) != -1) {
		size_t len = strlen(buf);
		bool whole = len > 0 && buf[len - 1] == '\n';

		lineno++;
		buf[strcspn(buf, "\r\n")] = '\0';
		if (lineno == 1) {
			if (!header_ok(buf, p))
				rc = dp_error_set(DP_EFORMAT, "%s: not the snapshots of a model of %zu "
						  "coefficients (expected the header k,time_unix,"
						  "theta_1..theta_%zu)", path, p, p);
			continue;
		}
		if (!whole)
			break;   /* torn by a crash */
		if (s.n == cap)
			rc = grow(&s, &cap);
		if (rc == 0)
			rc = row(&s, buf, path, lineno);
	}
	if (rc == 0 && ferror(f))
		rc = dp_error_set(DP_EIO, "%s: read error", path);
	if (rc == 0 && lineno == 0)
		rc = dp_error_set(DP_EFORMAT, "%s: empty file", path);
	free(buf);
	fclose(f);
	if (rc != 0) {
		dp_snapshots_free(&s);
		return rc;
	}
	*out = s;
	return 0;
}
