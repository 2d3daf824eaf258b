/* SPDX-License-Identifier: Apache-2.0 */
/* The admitted owners' identities: `--owners A,B,...`, or `--owners-file
 * FILE` with one identity per line for lists too long for one argument or
 * one configuration line (docs/learnerd.md §2), checked valid and unique
 * in O(N) through an identity map (docs/scale.md §6). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/idmap.h"
#include "common/core/mem.h"
#include "common/net/tls.h"
#include "learner/lrn.h"

/* The largest owners file read: 100 bytes a line for a million owners. */
#define OWNERS_FILE_MAX ((size_t)100 << 20)

struct names {
	char **v;
	size_t *line;      /* file line of each (0: from the list) */
	size_t n, cap, lcap;
};

static void names_free(struct names *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	free(s->line);
}

/* tok (trimmed here, in place) as the next identity; where names the
 * source for the error line. */
static int add(struct names *s, char *tok, size_t line, const char *where)
{
	char *end;

	while (*tok == ' ' || *tok == '\t' || *tok == '\r')
		tok++;
	end = tok + strlen(tok);
	while (end > tok && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	if (*tok == '\0')
		return dp_error_set(DP_EINVAL, "%s: empty identity", where);
	if (dp_tls_check_name(tok) != 0 || strlen(tok) > DP_TLS_ID_MAX)
		return dp_error_set(DP_EINVAL, "%s: '%.64s' is not a valid identity (1..%d of "
				    "A-Z a-z 0-9 . _ -)", where, tok, DP_TLS_ID_MAX);
	if (dp_mem_reserve(&s->v, &s->cap, s->n + 1, sizeof(*s->v), 8) != 0 ||
	    dp_mem_reserve(&s->line, &s->lcap, s->n + 1, sizeof(*s->line), 8) != 0)
		return dp_error_set(DP_ENOMEM, "out of memory");
	s->v[s->n] = strdup(tok);
	if (s->v[s->n] == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	s->line[s->n++] = line;
	return 0;
}

static int from_list(const char *list, struct names *s)
{
	char *copy = strdup(list), *p = copy, *tok;
	char where[96];
	int rc = 0;

	if (copy == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	while (rc == 0 && (tok = strsep(&p, ",")) != NULL) {
		snprintf(where, sizeof(where), "owners: item %zu", s->n + 1);
		rc = add(s, tok, 0, where);
	}
	free(copy);
	return rc;
}

/* One identity per line; blank lines and lines starting with '#' are
 * skipped. */
static int from_file(const char *path, struct names *s)
{
	char *text = NULL, *p, *line, where[4200];
	size_t len = 0, no = 0;
	int rc = dp_file_read_all(path, OWNERS_FILE_MAX, &text, &len);

	if (rc == DP_ERANGE)
		return dp_error_set(DP_EINVAL, "owners-file %s: larger than %zu MiB", path,
				    OWNERS_FILE_MAX >> 20);
	if (rc != 0) {
		char was[512];

		snprintf(was, sizeof(was), "%s", dp_error_detail(rc));
		return dp_error_set(rc, "owners-file: %s", was);
	}
	if (strlen(text) != len)
		rc = dp_error_set(DP_EINVAL, "owners-file %s: a NUL byte in the file", path);
	p = text;
	while (rc == 0 && (line = strsep(&p, "\n")) != NULL) {
		const char *c = line;

		no++;
		while (*c == ' ' || *c == '\t' || *c == '\r')
			c++;
		if (*c == '\0' || *c == '#')
			continue;
		snprintf(where, sizeof(where), "owners-file %s: line %zu", path, no);
		rc = add(s, line, no, where);
	}
	free(text);
	if (rc == 0 && s->n == 0)
		rc = dp_error_set(DP_EINVAL, "owners-file %s: no owner identity in it", path);
	return rc;
}

static int check_unique(const struct names *s, const char *path)
{
	dp_idmap *m = NULL;
	size_t had = 0;
	int rc = dp_idmap_new(s->n, &m);

	for (size_t i = 0; rc == 0 && i < s->n; i++) {
		if (dp_idmap_put(m, s->v[i], i, &had) != 1)
			continue;
		if (path)
			rc = dp_error_set(DP_EINVAL, "owners-file %s: line %zu: '%s' listed twice "
					  "(first on line %zu)", path, s->line[i], s->v[i],
					  s->line[had]);
		else
			rc = dp_error_set(DP_EINVAL, "owners: '%s' listed twice", s->v[i]);
	}
	dp_idmap_free(m);
	return rc;
}

int lrn_owners_load(const struct lrn_settings *set, char ***names, size_t *count)
{
	struct names s = { 0 };
	bool list = set->owners != NULL && *set->owners != '\0';
	bool file = set->owners_file != NULL && *set->owners_file != '\0';
	int rc;

	DP_REQUIRE(set != NULL && names != NULL && count != NULL);
	if (list == file)
		return dp_error_set(DP_EINVAL, list ? "give owners or owners-file, not both" :
				    "owners: no owner identities given (owners A,B,... or "
				    "owners-file FILE)");
	rc = list ? from_list(set->owners, &s) : from_file(set->owners_file, &s);
	if (rc == 0)
		rc = check_unique(&s, file ? set->owners_file : NULL);
	if (rc != 0) {
		names_free(&s);
		return rc;
	}
	free(s.line);
	*names = s.v;
	*count = s.n;
	return 0;
}
