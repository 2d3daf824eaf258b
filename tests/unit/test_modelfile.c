/* SPDX-License-Identifier: Apache-2.0 */
/* Model file round trip and rejection of malformed files. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/fingerprint.h"
#include "common/core/modelfile.h"
#include "tests/unit/tmpdir.h"

static int setup(void **state)
{
	(void)state;
	return tmpdir_setup("dp-modelfile");
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_teardown();
}

static void write_text(const char *path, const char *text)
{
	assert_int_equal(dp_file_write_atomic(path, text, strlen(text), 0644), 0);
}

static void test_roundtrip_exact(void **state)
{
	char path[128], *names[3] = { "a", "b", "bias" };
	/* Values that need all 17 significant digits to round-trip. */
	double theta[3] = { 0.1, -1.0 / 3.0, 6.02214076e23 };
	dp_modelfile mf = { .model = DP_MODEL_LOGISTIC, .p = 3, .theta = theta, .features = names,
			    .target = "Class", .bias = 1, .T = 300, .lambda = 0.01, .theta_max = 5,
			    .clip = 2 }, rd;

	strcpy(mf.mode, "async");
	snprintf(path, sizeof(path), "%s/m.json", dir);
	assert_int_equal(dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED), 0);
	assert_int_equal(dp_modelfile_read(path, &rd), 0);
	assert_int_equal(rd.model, DP_MODEL_LOGISTIC);
	assert_int_equal(rd.p, 3);
	for (int q = 0; q < 3; q++) {
		assert_true(rd.theta[q] == theta[q]);
		assert_string_equal(rd.features[q], names[q]);
	}
	assert_string_equal(rd.target, "Class");
	assert_int_equal(rd.bias, 1);
	assert_int_equal(rd.T, 300);
	assert_true(rd.lambda == 0.01 && rd.theta_max == 5 && rd.clip == 2);
	assert_string_equal(rd.mode, "async");
	dp_modelfile_free(&rd);

	/* No temporary file is left beside it. */
	DIR *d = opendir(dir);
	struct dirent *e;
	int files = 0;
	for (;;) {
		e = readdir(d);
		if (e == NULL)
			break;
		files += e->d_name[0] != '.';
	}
	closedir(d);
	assert_int_equal(files, 1);
}

static void test_optional_names(void **state)
{
	/* A file without features and target (learnerd writes none; files
	 * written before "target" existed have none) reads with both NULL, and
	 * a writer that leaves them NULL writes neither. */
	char path[128];
	double theta[2] = { 1, 2 };
	dp_modelfile mf = { .model = DP_MODEL_LINEAR, .p = 2, .theta = theta }, rd;

	snprintf(path, sizeof(path), "%s/old.json", dir);
	write_text(path, "{\"format\":\"dpasync-model\",\"version\":1,\"model\":\"linear\","
			 "\"theta\":[1,2],\"features\":[\"a\",\"b\"]}");
	assert_int_equal(dp_modelfile_read(path, &rd), 0);
	assert_null(rd.target);
	assert_string_equal(rd.features[1], "b");
	dp_modelfile_free(&rd);
	snprintf(path, sizeof(path), "%s/bare.json", dir);
	strcpy(mf.mode, "sync1");
	assert_int_equal(dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED), 0);
	assert_int_equal(dp_modelfile_read(path, &rd), 0);
	assert_null(rd.target);
	assert_null(rd.features);
	dp_modelfile_free(&rd);
}

/* A file without "mode" reads with mode "" and must write back to a file
 * that reads (the writer once wrote "mode": "", which the reader refuses;
 * found by fuzz_modelfile, docs/fuzz.md). */
static void test_no_mode_roundtrip(void **state)
{
	char path[128], path2[128];
	dp_modelfile rd, rd2;

	snprintf(path, sizeof(path), "%s/nomode.json", dir);
	snprintf(path2, sizeof(path2), "%s/nomode2.json", dir);
	write_text(path, "{\"format\":\"dpasync-model\",\"version\":1,\"model\":\"linear\","
		   "\"theta\":[1,2]}");
	assert_int_equal(dp_modelfile_read(path, &rd), 0);
	assert_string_equal(rd.mode, "");
	assert_int_equal(dp_modelfile_write(path2, &rd, DP_FILE_MODE_SHARED), 0);
	assert_int_equal(dp_modelfile_read(path2, &rd2), 0);
	assert_string_equal(rd2.mode, "");
	assert_int_equal(rd2.p, 2);
	assert_true(rd2.theta[0] == 1 && rd2.theta[1] == 2);
	dp_modelfile_free(&rd);
	dp_modelfile_free(&rd2);
}

/* A partial model (docs/design.md §9 "Partial model") is version 2 with
 * partial, k, reason and detail, and reads back field for field; a
 * complete one stays version 1 without them, so that a reader of version 1
 * still reads it.  Without the partial model's fields the read-back has
 * partial 0 and the file says version 1: both asserts fail. */
static void test_partial_roundtrip(void **state)
{
	char path[128], *text = NULL;
	size_t len;
	double theta[2] = { 0.25, -1.5 };
	dp_modelfile mf = { .model = DP_MODEL_LINEAR, .p = 2, .theta = theta, .bias = 1, .T = 627,
			    .lambda = 0.01, .theta_max = 10, .clip = 3, .job = "job-x",
			    .partial = 1, .k = 483,
			    .detail = "every owner has exhausted its budget at k=483 of T=627" }, rd;

	strcpy(mf.mode, "async");
	strcpy(mf.reason, "exhausted");
	snprintf(path, sizeof(path), "%s/partial.json", dir);
	assert_int_equal(dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED), 0);
	assert_int_equal(dp_file_read_all(path, 1 << 20, &text, &len), 0);
	assert_non_null(strstr(text, "\"version\":2"));
	assert_non_null(strstr(text, "\"partial\":true"));
	free(text);
	assert_int_equal(dp_modelfile_read(path, &rd), 0);
	assert_int_equal(rd.partial, 1);
	assert_int_equal(rd.k, 483);
	assert_int_equal(rd.T, 627);
	assert_string_equal(rd.reason, "exhausted");
	assert_string_equal(rd.detail, mf.detail);
	assert_true(rd.theta[0] == 0.25 && rd.theta[1] == -1.5);
	dp_modelfile_free(&rd);

	/* No detail: none read back. */
	mf.detail = NULL;
	assert_int_equal(dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED), 0);
	assert_int_equal(dp_modelfile_read(path, &rd), 0);
	assert_int_equal(rd.partial, 1);
	assert_null(rd.detail);
	dp_modelfile_free(&rd);

	/* Complete: version 1, no partial fields. */
	mf.partial = 0;
	assert_int_equal(dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED), 0);
	assert_int_equal(dp_file_read_all(path, 1 << 20, &text, &len), 0);
	assert_non_null(strstr(text, "\"version\":1"));
	assert_null(strstr(text, "partial"));
	assert_null(strstr(text, "\"reason\""));
	free(text);
	assert_int_equal(dp_modelfile_read(path, &rd), 0);
	assert_int_equal(rd.partial, 0);
	assert_int_equal(rd.k, 0);
	dp_modelfile_free(&rd);

	/* A version-1 file is complete whatever it holds. */
	write_text(path, "{\"format\":\"dpasync-model\",\"version\":1,\"model\":\"linear\","
			 "\"theta\":[1],\"partial\":true,\"k\":3,\"reason\":\"signal\"}");
	assert_int_equal(dp_modelfile_read(path, &rd), 0);
	assert_int_equal(rd.partial, 0);
	dp_modelfile_free(&rd);

	/* The writer refuses what the reader would. */
	mf.partial = 1;
	strcpy(mf.reason, "Every owner");
	assert_int_equal(dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED), DP_EINVAL);
	strcpy(mf.reason, "signal");
	mf.k = 628;
	assert_int_equal(dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED), DP_EINVAL);
}

static void test_check_data(void **state)
{
	/* Data fit a model when the column count matches and, if the file names
	 * the features, the names match in order. */
	static const char *const ab[] = { "a", "b" }, *const ba[] = { "b", "a" };
	char *names[2] = { "a", "b" };
	double theta[2] = { 1, 2 }, x[2] = { 0.5, 1 }, y[1] = { 1 };
	dp_modelfile mf = { .model = DP_MODEL_LINEAR, .p = 2, .theta = theta, .features = names };
	dp_dataset ds;

	assert_int_equal(dp_dataset_from_arrays(&ds, 1, 2, x, y, ab), 0);
	assert_int_equal(dp_modelfile_check_data(&mf, "m.json", &ds), 0);
	dp_dataset_free(&ds);
	assert_int_equal(dp_dataset_from_arrays(&ds, 1, 2, x, y, ba), 0);
	assert_int_equal(dp_modelfile_check_data(&mf, "m.json", &ds), DP_EFORMAT);
	assert_string_equal(dp_error_detail(DP_EFORMAT),
			    "(arrays): feature 1 is 'b' but the model m.json has 'a'");
	mf.features = NULL; /* nothing to compare but the count */
	assert_int_equal(dp_modelfile_check_data(&mf, "m.json", &ds), 0);
	dp_dataset_free(&ds);
	assert_int_equal(dp_dataset_from_arrays(&ds, 2, 1, x, (double[]){ 1, 2 }, NULL), 0);
	assert_int_equal(dp_modelfile_check_data(&mf, "m.json", &ds), DP_EFORMAT);
	assert_string_equal(dp_error_detail(DP_EFORMAT),
			    "(arrays) has 1 features but the model m.json has 2 coefficients");
	dp_dataset_free(&ds);
}

/* The schema fingerprint the owners agreed on is written and read back,
 * and data of another target (a column swapped with the target keeps the
 * count, so check_data cannot see it) are refused by check_schema
 * (docs/learnerd.md §4).  Without the field the read-back has none and
 * check_schema passes: the asserts fail. */
static void test_schema_fingerprint(void **state)
{
	static const char *const ab[] = { "a", "b" }, *const yb[] = { "y", "b" };
	char path[128];
	double theta[2] = { 1, 2 }, x[2] = { 0.5, 1 }, y[1] = { 1 };
	dp_modelfile mf = { .model = DP_MODEL_LINEAR, .p = 2, .theta = theta }, rd;
	dp_dataset ds;

	snprintf(path, sizeof(path), "%s/fp.json", dir);
	assert_int_equal(dp_dataset_from_arrays(&ds, 1, 2, x, y, ab), 0);
	assert_int_equal(dp_fingerprint_schema(&ds, 0, NULL, mf.schema), 0);
	assert_int_equal(dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED), 0);
	assert_int_equal(dp_modelfile_read(path, &rd), 0);
	assert_string_equal(rd.schema, mf.schema);
	assert_int_equal(dp_modelfile_check_schema(&rd, path, &ds, NULL), 0);
	dp_dataset_free(&ds);
	/* Column a read as the target, y as a feature: two columns still. */
	assert_int_equal(dp_dataset_from_arrays(&ds, 1, 2, x, y, yb), 0);
	assert_int_equal(dp_modelfile_check_data(&rd, path, &ds), 0);
	assert_int_equal(dp_modelfile_check_schema(&rd, path, &ds, NULL), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), mf.schema));
	dp_dataset_free(&ds);
	dp_modelfile_free(&rd);
	/* No fingerprint recorded: nothing to check. */
	mf.schema[0] = '\0';
	assert_int_equal(dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED), 0);
	assert_int_equal(dp_modelfile_read(path, &rd), 0);
	assert_string_equal(rd.schema, "");
	assert_int_equal(dp_dataset_from_arrays(&ds, 1, 2, x, y, yb), 0);
	assert_int_equal(dp_modelfile_check_schema(&rd, path, &ds, NULL), 0);
	dp_dataset_free(&ds);
	dp_modelfile_free(&rd);
	/* What is no fingerprint is not written. */
	strcpy(mf.schema, "sha256:xyz");
	assert_int_equal(dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED), DP_EINVAL);
}

/* A schema.json as `dpasync prep` writes it, of columns a and `second`. */
static void put_schema(const char *name, const char *second)
{
	char text[512];

	snprintf(text, sizeof(text), "{\"format\":\"dpasync-schema\",\"version\":1,\"columns\":["
		 "{\"name\":\"a\",\"kind\":\"numeric\",\"center\":0.5,\"scale\":2},"
		 "{\"name\":\"%s\",\"kind\":\"numeric\",\"center\":0,\"scale\":1}],"
		 "\"target\":{\"name\":\"y\",\"kind\":\"numeric\",\"center\":0,"
		 "\"scale\":1}}", second);
	put_bytes(name, text, strlen(text));
}

/* A prepared file counts the schema.json beside it (docs/ownerd.md
 * "Prepared data"): dp_fingerprint_applied finds it when its columns and
 * target are the file's, and check_schema uses it without --schema; a
 * schema.json of other columns, or not a schema, is not counted. */
static void test_prepared_fingerprint(void **state)
{
	dp_load_opts lo = { .target = "y" };
	char applied[256], fp_none[DP_FINGERPRINT_SIZE], mpath[128];
	double theta[2] = { 1, 2 };
	dp_modelfile mf = { .model = DP_MODEL_LINEAR, .p = 2, .theta = theta }, rd;
	dp_dataset ds;

	(void)state;
	assert_int_equal(mkdir(path_of("prep"), 0700), 0);
	put_bytes("prep/owner-1.csv", "a,b,y\n0.5,1,1\n", 14);
	assert_int_equal(dp_dataset_load(&ds, path_of("prep/owner-1.csv"), &lo), 0);
	assert_int_equal(dp_fingerprint_applied(&ds, 0, applied, sizeof(applied)), 0);
	assert_string_equal(applied, "");
	assert_int_equal(dp_fingerprint_schema(&ds, 0, NULL, fp_none), 0);

	put_schema("prep/schema.json", "b");
	assert_int_equal(dp_fingerprint_applied(&ds, 0, applied, sizeof(applied)), 1);
	assert_string_equal(applied, path_of("prep/schema.json"));
	assert_int_equal(dp_fingerprint_applied(&ds, 1, applied, sizeof(applied)), 0);
	assert_int_equal(dp_fingerprint_applied(&ds, 0, applied, sizeof(applied)), 1);
	assert_int_equal(dp_fingerprint_schema(&ds, 0, applied, mf.schema), 0);
	assert_string_not_equal(mf.schema, fp_none);
	snprintf(mpath, sizeof(mpath), "%s/prep-model.json", dir);
	assert_int_equal(dp_modelfile_write(mpath, &mf, DP_FILE_MODE_SHARED), 0);
	assert_int_equal(dp_modelfile_read(mpath, &rd), 0);
	assert_int_equal(dp_modelfile_check_schema(&rd, mpath, &ds, NULL), 0);

	put_schema("prep/schema.json", "c");   /* another table's */
	assert_int_equal(dp_fingerprint_applied(&ds, 0, applied, sizeof(applied)), 0);
	assert_int_equal(dp_modelfile_check_schema(&rd, mpath, &ds, NULL), DP_EINVAL);
	put_bytes("prep/schema.json", "{", 1);
	assert_int_equal(dp_fingerprint_applied(&ds, 0, applied, sizeof(applied)), 0);
	dp_modelfile_free(&rd);
	dp_dataset_free(&ds);
}

static void test_rejects_nonfinite(void **state)
{
	char path[128];
	double theta[1] = { NAN };
	dp_modelfile mf = { .model = DP_MODEL_LINEAR, .p = 1, .theta = theta };

	snprintf(path, sizeof(path), "%s/nan.json", dir);
	assert_int_equal(dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED), DP_EINVAL);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_malformed(void **state)
{
	static const char *bad[] = {
		"not json",
		"[1,2]",
		"{\"format\":\"other\",\"version\":1,\"model\":\"linear\",\"theta\":[1]}",
		"{\"format\":\"dpasync-model\",\"version\":2,\"model\":\"linear\",\"theta\":[1]}",
		"{\"format\":\"dpasync-model\",\"version\":1,\"model\":\"tree\",\"theta\":[1]}",
		"{\"format\":\"dpasync-model\",\"version\":1,\"model\":\"linear\"}",
		"{\"format\":\"dpasync-model\",\"version\":1,\"model\":\"linear\",\"theta\":[]}",
		"{\"format\":\"dpasync-model\",\"version\":1,\"model\":\"linear\",\"theta\":[1,\"x\"]}",
		"{\"format\":\"dpasync-model\",\"version\":1,\"model\":\"linear\",\"theta\":[1],\"features\":[\"a\",\"b\"]}",
		"{\"format\":\"dpasync-model\",\"version\":1,\"model\":\"linear\",\"theta\":[1],\"lambda\":\"x\"}",
		"{\"format\":\"dpasync-model\",\"version\":1,\"model\":\"linear\",\"theta\":[1],\"target\":\"\"}",
		"{\"format\":\"dpasync-model\",\"version\":1,\"model\":\"linear\",\"theta\":[1],\"target\":3}",
		"{\"format\":\"dpasync-model\",\"version\":1,\"model\":\"linear\",\"theta\":[1],\"schema\":\"sha256:00\"}",
		/* Version 2 is a partial model, and says k and why. */
		"{\"format\":\"dpasync-model\",\"version\":3,\"model\":\"linear\",\"theta\":[1]}",
		"{\"format\":\"dpasync-model\",\"version\":2,\"model\":\"linear\",\"theta\":[1],"
		"\"partial\":false,\"k\":1,\"reason\":\"signal\"}",
		"{\"format\":\"dpasync-model\",\"version\":2,\"model\":\"linear\",\"theta\":[1],"
		"\"partial\":true,\"reason\":\"signal\"}",
		"{\"format\":\"dpasync-model\",\"version\":2,\"model\":\"linear\",\"theta\":[1],"
		"\"partial\":true,\"k\":1}",
		"{\"format\":\"dpasync-model\",\"version\":2,\"model\":\"linear\",\"theta\":[1],"
		"\"partial\":true,\"k\":1,\"reason\":\"two words\"}",
		"{\"format\":\"dpasync-model\",\"version\":2,\"model\":\"linear\",\"theta\":[1],"
		"\"T\":5,\"partial\":true,\"k\":6,\"reason\":\"signal\"}",
		"{\"format\":\"dpasync-model\",\"version\":2,\"model\":\"linear\",\"theta\":[1],"
		"\"partial\":true,\"k\":1,\"reason\":\"signal\",\"detail\":7}",
	};
	char path[128];
	dp_modelfile rd = { 0 };

	snprintf(path, sizeof(path), "%s/bad.json", dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_text(path, bad[i]);
		assert_int_equal(dp_modelfile_read(path, &rd), DP_EFORMAT);
		assert_null(rd.theta);
		assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "bad.json"));
	}
	snprintf(path, sizeof(path), "%s/missing.json", dir);
	assert_int_equal(dp_modelfile_read(path, &rd), DP_ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_exact),
		cmocka_unit_test(test_optional_names),
		cmocka_unit_test(test_no_mode_roundtrip),
		cmocka_unit_test(test_partial_roundtrip),
		cmocka_unit_test(test_schema_fingerprint),
		cmocka_unit_test(test_check_data),
		cmocka_unit_test(test_prepared_fingerprint),
		cmocka_unit_test(test_rejects_nonfinite),
		cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
