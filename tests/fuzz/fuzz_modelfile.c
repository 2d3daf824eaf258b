/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the trained-model file reader (modelfile.h).
 *
 * The input is the file.  A file that reads must write back (it holds
 * finite coefficients only) and read again to the same model, field for
 * field and coefficient for coefficient (doubles are written in the
 * shortest form that reads back exactly).  Aborts on any inconsistency;
 * the sanitizers catch memory errors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/modelfile.h"
#include "tests/fuzz/fuzz_util.h"

static int same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void check_same(const dp_modelfile *a, const dp_modelfile *b)
{
	FUZZ_CHECK(a->model == b->model && a->p == b->p && a->bias == b->bias && a->T == b->T);
	FUZZ_CHECK(memcmp(a->theta, b->theta, a->p * sizeof(double)) == 0);
	FUZZ_CHECK((a->features == NULL) == (b->features == NULL));
	for (size_t q = 0; a->features != NULL && q < a->p; q++)
		FUZZ_CHECK(strcmp(a->features[q], b->features[q]) == 0);
	FUZZ_CHECK(same_str(a->target, b->target));
	FUZZ_CHECK(strcmp(a->mode, b->mode) == 0);
	FUZZ_CHECK(memcmp(&a->lambda, &b->lambda, sizeof(double)) == 0);
	FUZZ_CHECK(memcmp(&a->theta_max, &b->theta_max, sizeof(double)) == 0);
	FUZZ_CHECK(memcmp(&a->clip, &b->clip, sizeof(double)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = fuzz_util_path("model.json"), *out = fuzz_util_path("model2.json");
	dp_modelfile a, b;
	int rc;

	fuzz_util_write(in, data, size);
	if (dp_modelfile_read(in, &a) != 0)
		return 0;
	FUZZ_CHECK(a.p > 0 && a.theta != NULL);
	FUZZ_CHECK(dp_modelfile_write(out, &a, DP_FILE_MODE_SHARED) == 0);
	rc = dp_modelfile_read(out, &b);
	if (rc != 0)
		fprintf(stderr, "written model does not read: %s\n", dp_error_detail(rc));
	FUZZ_CHECK(rc == 0);
	check_same(&a, &b);
	dp_modelfile_free(&a);
	dp_modelfile_free(&b);
	return 0;
}
