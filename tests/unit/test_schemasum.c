/* SPDX-License-Identifier: Apache-2.0 */
/* The Hello's schema summary (common/net/schemasum.h, docs/protocol.md §5
 * "Schema summary"): built from an owner's rows and schema, it names what
 * differs between two owners in words; it travels in a Hello that old
 * decoders still read, and the frame validation bounds it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/core/error.h"
#include "common/core/schema.h"
#include "common/net/frame.h"
#include "common/net/schemasum.h"

#include "tests/unit/tmpdir.h"

static int setup(void **state)
{
	return tmpdir_setup("test_schemasum");
}

static int teardown(void **state)
{
	return tmpdir_teardown();
}

/* A schema of three columns (num, cat one-hot a/b, ord) whose 'num' has
 * scale `scale` and whose 'cat' has the levels `levels`. */
static dp_schema *schema_with(const char *name, double scale, const char *levels)
{
	char text[1024];
	dp_schema *s = NULL;

	snprintf(text, sizeof(text),
		 "{\"format\": \"dpasync-schema\", \"version\": 1, \"columns\": ["
		 "{\"name\": \"num\", \"kind\": \"numeric\", \"center\": 2.5, \"scale\": %.17g},"
		 "{\"name\": \"cat\", \"kind\": \"onehot\", \"levels\": [%s]},"
		 "{\"name\": \"ord\", \"kind\": \"ordinal\", \"levels\": [\"lo\", \"hi\"],"
		 " \"center\": 0.5, \"scale\": 0.5}],"
		 "\"target\": {\"name\": \"price\", \"kind\": \"numeric\", \"center\": 0,"
		 " \"scale\": 1}}", scale, levels);
	assert_int_equal(dp_schema_load(put(name, text), &s), 0);
	return s;
}

/* A dataset that only has names (what the summary reads). */
static dp_dataset named(char **names, size_t p, char *target)
{
	dp_dataset ds = { 0 };

	ds.p = p;
	ds.names = names;
	ds.target = target;
	return ds;
}

static void test_words(void **state)
{
	char *names[] = { "num", "cat=a", "cat=b", "ord", "bias" };
	dp_schema *s1 = schema_with("a.json", 2.1, "\"a\", \"b\"");
	dp_schema *s2 = schema_with("b.json", 1.7, "\"a\", \"b\"");
	dp_schema *s3 = schema_with("c.json", 2.1, "\"b\", \"a\"");
	dp_dataset ds = named(names, 5, "price"), dy = named(names, 5, "y");
	dp_schemasum *a = NULL, *b = NULL, *c = NULL, *y = NULL, *raw = NULL;
	char buf[256];

	(void)state;
	assert_int_equal(dp_schemasum_new(&ds, 1, s1, &a), 0);
	assert_int_equal(dp_schemasum_new(&ds, 1, s2, &b), 0);
	assert_int_equal(dp_schemasum_new(&ds, 1, s3, &c), 0);
	assert_int_equal(dp_schemasum_new(&dy, 1, s1, &y), 0);
	assert_int_equal(dp_schemasum_new(&ds, 1, NULL, &raw), 0);
	assert_int_equal(dp_schemasum_msg(a)->n_features, 5);
	assert_string_equal(dp_schemasum_msg(a)->features[0]->kind, "numeric");
	assert_string_equal(dp_schemasum_msg(a)->features[1]->kind, "onehot");
	assert_string_equal(dp_schemasum_msg(a)->features[4]->kind, "bias");
	assert_string_equal(dp_schemasum_msg(raw)->features[0]->kind, "raw");
	assert_int_equal(strlen(dp_schemasum_msg(a)->features[0]->digest), 16);
	/* The same schema: nothing to say. */
	assert_int_equal(dp_schemasum_diff(dp_schemasum_msg(a), dp_schemasum_msg(a), buf,
					   sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(dp_schemasum_diff(dp_schemasum_msg(b), dp_schemasum_msg(a), buf,
					   sizeof(buf)), 1);
	assert_string_equal(buf, "feature 1 'num': scale 1.7 vs 2.1");
	assert_int_equal(dp_schemasum_diff(dp_schemasum_msg(y), dp_schemasum_msg(a), buf,
					   sizeof(buf)), 1);
	assert_string_equal(buf, "target 'y' vs 'price'");
	/* Levels in another order: one-hot column 1 means another level. */
	assert_int_equal(dp_schemasum_diff(dp_schemasum_msg(c), dp_schemasum_msg(a), buf,
					   sizeof(buf)), 1);
	assert_non_null(strstr(buf, "feature 2 'cat=a': levels or component differ"));
	assert_int_equal(dp_schemasum_diff(dp_schemasum_msg(raw), dp_schemasum_msg(a), buf,
					   sizeof(buf)), 1);
	assert_string_equal(buf, "feature 1 'num': kind raw vs numeric");
	/* Any header makes a valid Hello: names cut to 64 bytes, bytes
	 * outside printable ASCII as '?'. */
	{
		char longname[100], *odd[] = { "caf\xc3\xa9", longname };
		dp_dataset dn = named(odd, 2, "pr\tice");
		dp_schemasum *o = NULL;

		memset(longname, 'x', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		assert_int_equal(dp_schemasum_new(&dn, 0, NULL, &o), 0);
		assert_string_equal(dp_schemasum_msg(o)->features[0]->name, "caf??");
		assert_int_equal(strlen(dp_schemasum_msg(o)->features[1]->name),
				 DP_SCHEMASUM_MAX_NAME);
		assert_string_equal(dp_schemasum_msg(o)->target, "pr?ice");
		dp_schemasum_free(o);
	}
	/* A schema that makes another number of columns is refused. */
	ds.p = 4;
	assert_int_equal(dp_schemasum_new(&ds, 1, s1, &raw), DP_EINVAL);
	dp_schemasum_free(a);
	dp_schemasum_free(b);
	dp_schemasum_free(c);
	dp_schemasum_free(y);
	dp_schemasum_free(raw);
	dp_schemasum_free(NULL);
	dp_schema_destroy(s1);
	dp_schema_destroy(s2);
	dp_schema_destroy(s3);
}

/* Numbers that agree to 4 digits are printed with as many as tell them
 * apart; the bias setting and the number of features come first. */
static void test_order(void **state)
{
	Dpasync__FeatureSummary fa = DPASYNC__FEATURE_SUMMARY__INIT;
	Dpasync__FeatureSummary fb = DPASYNC__FEATURE_SUMMARY__INIT;
	Dpasync__FeatureSummary *pa[1] = { &fa }, *pb[1] = { &fb };
	Dpasync__SchemaSummary a = DPASYNC__SCHEMA_SUMMARY__INIT;
	Dpasync__SchemaSummary b = DPASYNC__SCHEMA_SUMMARY__INIT;
	char buf[128];

	(void)state;
	a.target = b.target = "price";
	fa.name = fb.name = "carat";
	fa.kind = fb.kind = "numeric";
	fa.center = 0.797;
	fb.center = 0.7971;
	fa.scale = fb.scale = 1;
	a.features = pa;
	b.features = pb;
	a.n_features = b.n_features = 1;
	assert_int_equal(dp_schemasum_diff(&a, &b, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "feature 1 'carat': centre 0.797 vs 0.7971");
	fb.center = fa.center;
	fb.clamp = 1;
	fb.clamp_lo = -3;
	fb.clamp_hi = 3;
	assert_int_equal(dp_schemasum_diff(&a, &b, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "feature 1 'carat': clamp [-inf, inf] vs [-3, 3]");
	b.n_features = 0;
	assert_int_equal(dp_schemasum_diff(&a, &b, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "features 1 vs 0");
	b.bias = 1;
	assert_int_equal(dp_schemasum_diff(&a, &b, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "bias false vs true");
	/* Truncated to fit, never overrun. */
	assert_int_equal(dp_schemasum_diff(&a, &b, buf, 5), 1);
	assert_string_equal(buf, "bias");
	/* Packed: a side unknown or undecodable says nothing. */
	assert_int_equal(dp_schemasum_diff_packed(NULL, 0, (const uint8_t *)"x", 1, buf,
						  sizeof(buf)), 0);
	assert_int_equal(dp_schemasum_diff_packed((const uint8_t *)"\xff", 1,
						  (const uint8_t *)"\xff", 1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
}

/* On the wire: a Hello with a summary decodes with it; one without (an
 * owner that predates it) decodes with none and is valid; a summary of
 * another width, a bad scale or an unprintable name is refused. */
static void test_wire(void **state)
{
	char *names[] = { "num", "cat=a", "cat=b", "ord" };
	dp_schema *s1 = schema_with("w.json", 2.1, "\"a\", \"b\"");
	dp_dataset ds = named(names, 4, "price");
	dp_schemasum *a = NULL;
	Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT, *m;
	Dpasync__Hello h = DPASYNC__HELLO__INIT;
	dp_frame_limits lim = { .p = 4, .max_str = 64 };
	uint8_t buf[4096];
	size_t len;

	(void)state;
	assert_int_equal(dp_schemasum_new(&ds, 0, s1, &a), 0);
	e.version = 1;
	e.msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
	e.hello = &h;
	h.version = 1;
	h.owner_id = "owner-1";
	h.n_rows = 5;
	h.n_features = 4;
	h.epsilon = 1;
	h.schema_summary = dp_schemasum_msg(a);
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	len = dpasync__envelope__pack(&e, buf);
	m = dpasync__envelope__unpack(NULL, len, buf);
	assert_non_null(m);
	assert_non_null(m->hello->schema_summary);
	assert_string_equal(m->hello->schema_summary->target, "price");
	assert_int_equal(m->hello->schema_summary->n_features, 4);
	assert_true(m->hello->schema_summary->features[0]->scale == 2.1);
	assert_int_equal(dp_frame_validate(m, &lim), 0);
	dpasync__envelope__free_unpacked(m, NULL);
	h.schema_summary = NULL;
	len = dpasync__envelope__pack(&e, buf);
	m = dpasync__envelope__unpack(NULL, len, buf);
	assert_non_null(m);
	assert_null(m->hello->schema_summary);
	assert_int_equal(dp_frame_validate(m, &lim), 0);
	dpasync__envelope__free_unpacked(m, NULL);
	h.schema_summary = dp_schemasum_msg(a);
	h.n_features = 3;
	lim.p = 3;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "schema_summary has 4 features"));
	h.n_features = 4;
	lim.p = 4;
	h.schema_summary->features[2]->scale = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "schema_summary.scale"));
	h.schema_summary->features[2]->scale = 1;
	h.schema_summary->features[1]->name[0] = '\n';
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	dp_schemasum_free(a);
	dp_schema_destroy(s1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_wire),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
