/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the config file reader (config.h): the INI syntax
 * and every value type.
 *
 * The input is the file, read against a table with one entry of each type
 * (section [fuzzd]).  A file that loads is printed (dp_config_print: "a
 * config file this module reads back"); the printed text must load into
 * fresh settings and print again to the same text.  The one exception is
 * config.h's documented limit: a printed line longer than
 * DP_CONFIG_MAX_LINE (escaping and number formatting can lengthen a value
 * that fitted) must then be refused with DP_EINVAL.  Aborts on any
 * inconsistency; the sanitizers catch memory errors. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/net/config.h"
#include "tests/fuzz/fuzz_util.h"

struct settings {
	char *name, *path;
	double ratio, budget, period;
	uint64_t count;
	size_t size;
	bool flag;
	int level;
	struct dp_config_strings words, whole;
	struct dp_config_doubles nums, nums_inf;
	struct dp_config_sizes sizes;
};

static const char *const levels[] = { "low", "mid", "high", NULL };

/* The table, bound to settings *S (the same shape for both copies). */
#define FUZZ_TABLE(S)                                                                        \
	{                                                                                    \
		{ .name = "name", DP_CFG_STRING(&(S)->name), .def = "x" },                   \
		{ .name = "path", DP_CFG_PATH(&(S)->path) },                                 \
		{ .name = "ratio", DP_CFG_DOUBLE(&(S)->ratio), .def = "0.5", .min = 0,       \
		  .max = 1, .min_exclusive = true, .alias = "r" },                           \
		{ .name = "budget", DP_CFG_DOUBLE_INF(&(S)->budget), .def = "inf",           \
		  .min = 0, .max = INFINITY },                                               \
		{ .name = "period", DP_CFG_DURATION(&(S)->period), .def = "30s" },           \
		{ .name = "count", DP_CFG_U64(&(S)->count), .def = "7", .min = 1,            \
		  .max = 1e18 },                                                             \
		{ .name = "size", DP_CFG_SIZE(&(S)->size) },                                 \
		{ .name = "flag", DP_CFG_BOOL(&(S)->flag), .def = "false" },                 \
		{ .name = "level", DP_CFG_ENUM(&(S)->level, levels), .def = "mid" },         \
		{ .name = "words", DP_CFG_STRINGS(&(S)->words), .flags = DP_CONFIG_APPEND }, \
		{ .name = "whole", DP_CFG_STRINGS(&(S)->whole), .flags = DP_CONFIG_WHOLE },  \
		{ .name = "nums", DP_CFG_DOUBLES(&(S)->nums), .def = "1,2" },                \
		{ .name = "nums-inf", DP_CFG_DOUBLES_INF(&(S)->nums_inf), .min = 0,          \
		  .max = INFINITY },                                                         \
		{ .name = "sizes", DP_CFG_SIZES(&(S)->sizes) },                              \
		DP_CONFIG_END                                                                \
	}

static struct settings sa, sb;
static const struct dp_config_entry ta[] = FUZZ_TABLE(&sa);
static const struct dp_config_entry tb[] = FUZZ_TABLE(&sb);
static const struct dp_config_spec spec_a = { .program = "fuzzd", .entries = ta };
static const struct dp_config_spec spec_b = { .program = "fuzzd", .entries = tb };

/* The printed settings of spec into path, and as a string. */
static char *print_to(const struct dp_config_spec *spec, const char *path, size_t *len)
{
	FILE *f = fopen(path, "w");

	FUZZ_CHECK(f != NULL);
	FUZZ_CHECK(dp_config_print(spec, f) == 0);
	FUZZ_CHECK(fclose(f) == 0);
	return fuzz_util_read(path, len);
}

/* Does text hold a line longer than the reader accepts? */
static bool has_long_line(const char *text)
{
	while (*text) {
		size_t n = strcspn(text, "\n");

		if (n > DP_CONFIG_MAX_LINE)
			return true;
		text += n + (text[n] == '\n');
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = fuzz_util_path("in.conf"), *p1 = fuzz_util_path("print1.conf"),
		   *p2 = fuzz_util_path("print2.conf");
	char *t1, *t2;
	size_t n1, n2;

	fuzz_util_write(in, data, size);
	FUZZ_CHECK(dp_config_set_defaults(&spec_a) == 0);
	if (dp_config_load_file(&spec_a, in) != 0) {
		dp_config_free(&spec_a);
		return 0;
	}
	t1 = print_to(&spec_a, p1, &n1);
	FUZZ_CHECK(dp_config_set_defaults(&spec_b) == 0);
	if (has_long_line(t1)) {
		FUZZ_CHECK(dp_config_load_file(&spec_b, p1) == DP_EINVAL);
		free(t1);
		dp_config_free(&spec_a);
		dp_config_free(&spec_b);
		return 0;
	}
	if (dp_config_load_file(&spec_b, p1) != 0) {
		fprintf(stderr, "printed config does not load: %s\n--\n%s--\n",
			dp_error_detail(DP_EINVAL), t1);
		abort();
	}
	t2 = print_to(&spec_b, p2, &n2);
	FUZZ_CHECK(n1 == n2 && memcmp(t1, t2, n1) == 0);
	free(t1);
	free(t2);
	dp_config_free(&spec_a);
	dp_config_free(&spec_b);
	return 0;
}
