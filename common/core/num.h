/* SPDX-License-Identifier: Apache-2.0 */
/* Strict parsing of numbers and lists from flags and config values.
 * Each returns 0 or DP_EINVAL with a detail naming `what` and the text
 * (outputs untouched on failure); s may be NULL (an error), `what` and the
 * output pointers may not (DP_REQUIRE). */
#ifndef DP_NUM_H
#define DP_NUM_H

#include <stddef.h>
#include <stdint.h>

/* A finite double, or "inf"/"infinity" when allow_inf. */
int dp_num_parse_double(const char *what, const char *s, int allow_inf, double *out);
/* A non-negative integer that fits uint64 / size_t. */
int dp_num_parse_u64(const char *what, const char *s, uint64_t *out);
int dp_num_parse_size(const char *what, const char *s, size_t *out);
/* Comma-separated lists; *out is malloc'ed (caller frees), *count >= 1. */
int dp_num_parse_double_list(const char *what, const char *s, int allow_inf,
			 double **out, size_t *count);
int dp_num_parse_size_list(const char *what, const char *s, size_t **out, size_t *count);

/* The shortest decimal text (at most 17 significant digits) that reads back
 * with strtod as exactly v; whole numbers below 1e15 without an exponent
 * ("90", not "9e+01").  Non-finite values as "nan", "inf", "-inf".
 * len >= 32 always suffices. */
void dp_num_format(char *buf, size_t len, double v);

#endif
