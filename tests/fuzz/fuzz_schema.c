/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the schema file loader (schema.h).
 *
 * The input is the file.  A schema that loads must save, load again to
 * the same features, target and target scaling, and save again to the
 * same bytes (saving is canonical after one load).  Aborts on any
 * inconsistency; the sanitizers catch memory errors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/schema.h"
#include "tests/fuzz/fuzz_util.h"

static void check_same(const dp_schema *a, const dp_schema *b)
{
	double ca, sa, cb, sb;

	FUZZ_CHECK(dp_schema_nfeatures(a) == dp_schema_nfeatures(b));
	FUZZ_CHECK(dp_schema_nfeatures(a) >= 1);
	for (size_t q = 0; q < dp_schema_nfeatures(a); q++)
		FUZZ_CHECK(strcmp(dp_schema_feature_names(a)[q], dp_schema_feature_names(b)[q]) == 0);
	FUZZ_CHECK(strcmp(dp_schema_target(a), dp_schema_target(b)) == 0);
	FUZZ_CHECK(dp_schema_target_binary(a) == dp_schema_target_binary(b));
	dp_schema_target_scaling(a, &ca, &sa);
	dp_schema_target_scaling(b, &cb, &sb);
	FUZZ_CHECK(memcmp(&ca, &cb, sizeof(double)) == 0 && memcmp(&sa, &sb, sizeof(double)) == 0);
	FUZZ_CHECK(dp_schema_uses(a, dp_schema_target(a)) == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = fuzz_util_path("schema.json"), *out1 = fuzz_util_path("schema1.json"),
		   *out2 = fuzz_util_path("schema2.json");
	dp_schema *a = NULL, *b = NULL;
	char *t1, *t2;
	size_t n1, n2;

	fuzz_util_write(in, data, size);
	if (dp_schema_load(in, &a) != 0)
		return 0;
	FUZZ_CHECK(dp_schema_save(a, out1) == 0);
	FUZZ_CHECK(dp_schema_load(out1, &b) == 0);
	check_same(a, b);
	FUZZ_CHECK(dp_schema_save(b, out2) == 0);
	t1 = fuzz_util_read(out1, &n1);
	t2 = fuzz_util_read(out2, &n2);
	FUZZ_CHECK(n1 == n2 && memcmp(t1, t2, n1) == 0);
	free(t1);
	free(t2);
	dp_schema_destroy(a);
	dp_schema_destroy(b);
	return 0;
}
