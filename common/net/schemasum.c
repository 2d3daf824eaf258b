/* SPDX-License-Identifier: Apache-2.0 */
/* The Hello's schema summary (schemasum.h, docs/protocol.md §5). */
#include "common/net/schemasum.h"
#include "common/core/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

struct dp_schemasum {
	Dpasync__SchemaSummary msg;
	Dpasync__FeatureSummary *f;
	Dpasync__FeatureSummary **fp;
	char (*digest)[17];
};

void dp_schemasum_free(dp_schemasum *s)
{
	if (s == NULL)
		return;
	for (size_t j = 0; s->f != NULL && j < s->msg.n_features; j++)
		free(s->f[j].name);
	free(s->f);
	free(s->fp);
	free(s->digest);
	free(s->msg.target);
	free(s);
}

/* A feature no schema makes (raw, or the bias column): its kind is all. */
static int plain(const char *kind, char digest[17])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (EVP_Digest(kind, strlen(kind), md, &mdlen, EVP_sha256(), NULL) != 1)
		return dp_error_set(DP_ENOMEM, "schema summary: SHA-256 failed");
	for (unsigned i = 0; i < 8; i++)
		snprintf(digest + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* A copy of name fit for a Hello (DP_SCHEMASUM_MAX_NAME). */
static char *printable(const char *name)
{
	size_t n = strnlen(name, DP_SCHEMASUM_MAX_NAME);
	char *out = malloc(n + 1);

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)name[i];

		out[i] = ch >= 0x20 && ch <= 0x7e ? (char)ch : '?';
	}
	out[n] = '\0';
	return out;
}

static int feature(dp_schemasum *s, size_t j, const dp_dataset *ds, int bias,
		   const dp_schema *schema)
{
	Dpasync__FeatureSummary *f = &s->f[j];
	dp_schema_feature info;
	int r;

	dpasync__feature_summary__init(f);
	s->fp[j] = f;
	f->name = printable(ds->names != NULL && ds->names[j] != NULL ? ds->names[j] : "");
	if (f->name == NULL)
		return dp_error_set(DP_ENOMEM, "schema summary: out of memory");
	f->scale = 1.0;
	f->digest = s->digest[j];
	if (bias && j + 1 == ds->p) {
		f->kind = "bias";
		return plain(f->kind, s->digest[j]);
	}
	if (schema == NULL) {
		f->kind = "raw";
		return plain(f->kind, s->digest[j]);
	}
	r = dp_schema_feature_info(schema, j, &info);
	if (r < 0)
		return r;
	f->kind = (char *)info.kind;
	f->center = info.center;
	f->scale = info.scale;
	f->clamp = info.clamp != 0;
	f->clamp_lo = info.lo;
	f->clamp_hi = info.hi;
	memcpy(s->digest[j], info.digest, sizeof(info.digest));
	return 0;
}

int dp_schemasum_new(const dp_dataset *ds, int bias, const dp_schema *schema,
		     dp_schemasum **out)
{
	dp_schemasum *s;
	size_t p;
	int r = 0;

	DP_REQUIRE(ds != NULL && out != NULL);
	p = ds->p;
	if (schema != NULL && dp_schema_nfeatures(schema) + (bias ? 1 : 0) != p)
		return dp_error_set(DP_EINVAL, "schema summary: %zu columns, the schema makes %zu",
				    p, dp_schema_nfeatures(schema) + (bias ? 1 : 0));
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return dp_error_set(DP_ENOMEM, "schema summary: out of memory");
	dpasync__schema_summary__init(&s->msg);
	s->f = calloc(p ? p : 1, sizeof(*s->f));
	s->fp = calloc(p ? p : 1, sizeof(*s->fp));
	s->digest = calloc(p ? p : 1, sizeof(*s->digest));
	s->msg.target = printable(ds->target != NULL ? ds->target : "y");
	if (s->f == NULL || s->fp == NULL || s->digest == NULL || s->msg.target == NULL) {
		r = dp_error_set(DP_ENOMEM, "schema summary: out of memory");
		goto fail;
	}
	s->msg.bias = bias != 0;
	s->msg.features = s->fp;
	for (size_t j = 0; j < p && r == 0; j++) {
		s->msg.n_features = j + 1;   /* what dp_schemasum_free frees */
		r = feature(s, j, ds, bias, schema);
	}
	if (r < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	dp_schemasum_free(s);
	return r;
}

Dpasync__SchemaSummary *dp_schemasum_msg(dp_schemasum *s)
{
	return s != NULL ? &s->msg : NULL;
}

/* Two numbers as "A vs B" with as many digits as tell them apart. */
static void num_vs(char *buf, size_t size, const char *what, double a, double b)
{
	int prec = 4;

	while (prec < 17) {
		char x[40], y[40];

		snprintf(x, sizeof(x), "%.*g", prec, a);
		snprintf(y, sizeof(y), "%.*g", prec, b);
		if (strcmp(x, y) != 0)
			break;
		prec++;
	}
	snprintf(buf, size, "%s %.*g vs %.*g", what, prec, a, prec, b);
}

static const char *str(const char *s)
{
	return s != NULL ? s : "";
}

static int feature_diff(size_t j, const Dpasync__FeatureSummary *a,
			const Dpasync__FeatureSummary *b, char *buf, size_t size)
{
	char what[120], sub[200];

	snprintf(what, sizeof(what), "feature %zu '%.40s'", j + 1, str(a->name));
	if (strcmp(str(a->name), str(b->name)) != 0) {
		snprintf(buf, size, "feature %zu: '%.40s' vs '%.40s'", j + 1, str(a->name),
			 str(b->name));
		return 1;
	}
	if (strcmp(str(a->kind), str(b->kind)) != 0) {
		snprintf(buf, size, "%s: kind %.16s vs %.16s", what, str(a->kind), str(b->kind));
		return 1;
	}
	if (a->center != b->center) {
		num_vs(sub, sizeof(sub), "centre", a->center, b->center);
	} else if (a->scale != b->scale) {
		num_vs(sub, sizeof(sub), "scale", a->scale, b->scale);
	} else if (a->clamp != b->clamp || (a->clamp && (a->clamp_lo != b->clamp_lo ||
							  a->clamp_hi != b->clamp_hi))) {
		snprintf(sub, sizeof(sub), "clamp [%g, %g] vs [%g, %g]",
			 a->clamp ? a->clamp_lo : -INFINITY, a->clamp ? a->clamp_hi : INFINITY,
			 b->clamp ? b->clamp_lo : -INFINITY, b->clamp ? b->clamp_hi : INFINITY);
	} else if (strcmp(str(a->digest), str(b->digest)) != 0) {
		snprintf(sub, sizeof(sub), "levels or component differ (digest %.16s vs %.16s)",
			 str(a->digest), str(b->digest));
	} else {
		return 0;
	}
	snprintf(buf, size, "%s: %s", what, sub);
	return 1;
}

int dp_schemasum_diff(const Dpasync__SchemaSummary *a, const Dpasync__SchemaSummary *b,
		      char *buf, size_t size)
{
	DP_REQUIRE(a != NULL && b != NULL && buf != NULL && size > 0);
	buf[0] = '\0';
	if (a->bias != b->bias) {
		snprintf(buf, size, "bias %s vs %s", a->bias ? "true" : "false",
			 b->bias ? "true" : "false");
		return 1;
	}
	if (strcmp(str(a->target), str(b->target)) != 0) {
		snprintf(buf, size, "target '%.40s' vs '%.40s'", str(a->target), str(b->target));
		return 1;
	}
	if (a->n_features != b->n_features) {
		snprintf(buf, size, "features %zu vs %zu", a->n_features, b->n_features);
		return 1;
	}
	for (size_t j = 0; j < a->n_features; j++)
		if (feature_diff(j, a->features[j], b->features[j], buf, size))
			return 1;
	return 0;
}

int dp_schemasum_diff_packed(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
			     char *buf, size_t size)
{
	Dpasync__SchemaSummary *x = NULL, *y = NULL;
	int r = 0;

	DP_REQUIRE(buf != NULL && size > 0);
	buf[0] = '\0';
	if (alen == 0 || blen == 0)
		return 0;
	x = dpasync__schema_summary__unpack(NULL, alen, a);
	y = dpasync__schema_summary__unpack(NULL, blen, b);
	if (x != NULL && y != NULL)
		r = dp_schemasum_diff(x, y, buf, size);
	if (x != NULL)
		dpasync__schema_summary__free_unpacked(x, NULL);
	if (y != NULL)
		dpasync__schema_summary__free_unpacked(y, NULL);
	return r;
}
