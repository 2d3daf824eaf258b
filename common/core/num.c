/* SPDX-License-Identifier: Apache-2.0 */
#include "common/core/num.h"
#include "common/core/error.h"

#include <ctype.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int dp_num_parse_double(const char *what, const char *s, int allow_inf, double *out)
{
	char *end;
	double v;

	DP_REQUIRE(what != NULL && out != NULL);
	if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
		return dp_error_set(DP_EINVAL, "%s: expected a number, got '%s'", what, s ? s : "");
	if (allow_inf && (strcasecmp(s, "inf") == 0 || strcasecmp(s, "infinity") == 0)) {
		*out = INFINITY;
		return 0;
	}
	errno = 0;
	v = strtod(s, &end);
	if (*end != '\0' || errno == ERANGE || !isfinite(v))
		return dp_error_set(DP_EINVAL, "%s: expected a finite number, got '%s'", what, s);
	*out = v;
	return 0;
}

void dp_num_format(char *buf, size_t len, double v)
{
	char t[40];
	int lo = 3, hi = 17, have = 0;

	DP_REQUIRE(buf != NULL && len > 0);
	if (!isfinite(v)) {
		snprintf(buf, len, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
		return;
	}
	/* The fewest significant digits that read back exactly.  One and two
	 * digits are tried first (0, 0.5, 10: a learner's untouched theta_i
	 * are such values), then bisection over 3..17: if p digits read back,
	 * so do p + 1 (the nearest (p+1)-digit decimal is at least as close as
	 * the p-digit one, which is one of them), and 17 always do: at most
	 * 6 tries where a linear search needs 17 for a full-precision value
	 * (a checkpoint formats every owner's theta_i). */
	for (int p = 1; p <= 2; p++) {
		snprintf(buf, len, "%.*g", p, v);
		if (strtod(buf, NULL) == v) {
			lo = hi = p;
			have = 1;
			break;
		}
	}
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		/* At most 17 digits of a finite double: 24 characters at most
		 * ("-1.2345678901234567e-308"), so t always holds them; the check
		 * says so to a compiler that cannot bound mid (-O0). */
		int n = snprintf(t, sizeof(t), "%.*g", mid, v);

		DP_REQUIRE(n > 0 && (size_t)n < sizeof(t));
		if (strtod(t, NULL) == v) {
			hi = mid;
			snprintf(buf, len, "%s", t);
			have = 1;
		} else {
			lo = mid + 1;   /* buf still holds hi's digits, if any */
		}
	}
	if (!have)
		snprintf(buf, len, "%.*g", lo, v);
	/* %g switches to an exponent when p is below the integer digits. */
	if (fabs(v) >= 1 && fabs(v) < 1e15 && strchr(buf, 'e')) {
		int digits = (int)floor(log10(fabs(v))) + 1;

		snprintf(buf, len, "%.*g", digits > lo ? digits : lo, v);
	}
}

int dp_num_parse_u64(const char *what, const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	DP_REQUIRE(what != NULL && out != NULL);
	if (s == NULL || !isdigit((unsigned char)*s))
		return dp_error_set(DP_EINVAL, "%s: expected a non-negative integer, got '%s'",
				    what, s ? s : "");
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || errno == ERANGE)
		return dp_error_set(DP_EINVAL, "%s: expected a non-negative integer, got '%s'", what, s);
	*out = (uint64_t)v;
	return 0;
}

int dp_num_parse_size(const char *what, const char *s, size_t *out)
{
	uint64_t v;
	int rc;

	DP_REQUIRE(out != NULL);
	rc = dp_num_parse_u64(what, s, &v);
	if (rc != 0)
		return rc;
	if (v > SIZE_MAX)
		return dp_error_set(DP_EINVAL, "%s: %s is too large", what, s);
	*out = (size_t)v;
	return 0;
}

/* Split a comma list and parse each item with `one`; shared by both list kinds. */
static int parse_list(const char *what, const char *s, size_t elem, void **out, size_t *count,
			  int (*one)(const char *, const char *, void *, int), int flag)
{
	char *copy, *tok;
	size_t n = 1, i = 0;
	unsigned char *vals;
	int rc = 0;

	DP_REQUIRE(what != NULL && out != NULL && count != NULL);
	if (s == NULL || *s == '\0')
		return dp_error_set(DP_EINVAL, "%s: empty list", what);
	for (const char *c = s; *c; c++)
		n += (*c == ',');
	copy = strdup(s);
	vals = calloc(n, elem);
	if (copy == NULL || vals == NULL) {
		free(copy);
		free(vals);
		return DP_ENOMEM;
	}
	/* strtok_r would merge ",," into one separator and hide an empty item. */
	tok = copy;
	for (;;) {
		char *comma = strchr(tok, ',');
		if (comma)
			*comma = '\0';
		rc = one(what, tok, vals + i * elem, flag);
		if (rc != 0)
			break;
		i++;
		if (!comma)
			break;
		tok = comma + 1;
	}
	free(copy);
	if (rc != 0) {
		free(vals);
		return rc;
	}
	*out = vals;
	*count = n;
	return 0;
}

static int one_double(const char *what, const char *s, void *out, int allow_inf)
{
	return dp_num_parse_double(what, s, allow_inf, out);
}

static int one_size(const char *what, const char *s, void *out, int unused)
{
	return dp_num_parse_size(what, s, out);
}

int dp_num_parse_double_list(const char *what, const char *s, int allow_inf, double **out,
			 size_t *count)
{
	return parse_list(what, s, sizeof(double), (void **)out, count, one_double,
			      allow_inf);
}

int dp_num_parse_size_list(const char *what, const char *s, size_t **out, size_t *count)
{
	return parse_list(what, s, sizeof(size_t), (void **)out, count, one_size, 0);
}
