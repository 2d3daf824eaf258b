/* SPDX-License-Identifier: Apache-2.0 */
/* Feature schema: the type and the internals its files share
 * (schema_impl.h).  Its JSON file is schema_file.c, its application to
 * rows schema_bind.c; building one from a sample is
 * tools/lib/schema_build.c. */
#include "common/core/schema.h"
#include "common/core/schema_impl.h"
#include "common/core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

const char *const dp__schema_kind_names[DP__SCHEMA_NKINDS] = { "numeric", "onehot", "ordinal",
								"drop", "binary" };

/* ---- internals shared with schema_file.c, schema_bind.c and schema_build.c - */

void dp__schema_strv_free(char **v, size_t n)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

char **dp__schema_strv_dup(const char *const *v, size_t n)
{
	char **out = calloc(n ? n : 1, sizeof(*out));

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		out[i] = strdup(v[i]);
		if (out[i] == NULL) {
			dp__schema_strv_free(out, i);
			return NULL;
		}
	}
	return out;
}

static int lvl_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dp__schema_lvl *)a)->s, ((const struct dp__schema_lvl *)b)->s);
}

int dp__schema_levels_set(struct dp__schema_levels *lv, char **v, size_t n, const char **dup)
{
	struct dp__schema_lvl *idx = malloc((n ? n : 1) * sizeof(*idx));

	if (idx == NULL)
		return DP_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		idx[i].s = v[i];
		idx[i].i = i;
	}
	qsort(idx, n, sizeof(*idx), lvl_cmp);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(idx[i - 1].s, idx[i].s) == 0) {
			*dup = idx[i].s;
			free(idx);
			return DP_EFORMAT;
		}
	}
	lv->v = v;
	lv->n = n;
	lv->by_name = idx;
	return 0;
}

long dp__schema_levels_find(const struct dp__schema_levels *lv, const char *s)
{
	struct dp__schema_lvl key = { s, 0 };
	const struct dp__schema_lvl *hit =
		bsearch(&key, lv->by_name, lv->n, sizeof(key), lvl_cmp);

	return hit ? (long)hit->i : -1;
}

int dp__schema_layout(dp_schema *s)
{
	size_t d = 0;

	for (size_t c = 0; c < s->ncols; c++) {
		struct dp__schema_col *col = &s->cols[c];

		col->off = d;
		if (col->kind == DP__SCHEMA_NUMERIC || col->kind == DP__SCHEMA_ORDINAL ||
		    col->kind == DP__SCHEMA_BINARY)
			d += 1;
		else if (col->kind == DP__SCHEMA_ONEHOT)
			d += col->lv.n;
	}
	s->znames = calloc(d ? d : 1, sizeof(*s->znames));
	if (s->znames == NULL)
		return DP_ENOMEM;
	s->d = d;
	for (size_t c = 0; c < s->ncols; c++) {
		struct dp__schema_col *col = &s->cols[c];

		if (col->kind == DP__SCHEMA_NUMERIC || col->kind == DP__SCHEMA_ORDINAL) {
			s->znames[col->off] = strdup(col->name);
			if (s->znames[col->off] == NULL)
				return DP_ENOMEM;
		} else if (col->kind == DP__SCHEMA_ONEHOT) {
			for (size_t l = 0; l < col->lv.n; l++) {
				if (asprintf(&s->znames[col->off + l], "%s=%s", col->name,
					     col->lv.v[l]) < 0) {
					s->znames[col->off + l] = NULL;
					return DP_ENOMEM;
				}
			}
		} else if (col->kind == DP__SCHEMA_BINARY) {
			/* Named after the level that gives 1. */
			if (asprintf(&s->znames[col->off], "%s=%s", col->name, col->lv.v[1]) < 0) {
				s->znames[col->off] = NULL;
				return DP_ENOMEM;
			}
		}
	}
	s->p = d;
	s->names = s->znames;
	return 0;
}

int dp__schema_name_components(dp_schema *s)
{
	s->pcnames = calloc(s->k, sizeof(*s->pcnames));
	if (s->pcnames == NULL)
		return DP_ENOMEM;
	for (size_t i = 0; i < s->k; i++) {
		if (asprintf(&s->pcnames[i], "pc%zu", i + 1) < 0) {
			s->pcnames[i] = NULL;
			return DP_ENOMEM;
		}
	}
	s->p = s->k;
	s->names = s->pcnames;
	return 0;
}

/* ---- the type --------------------------------------------------------------- */

static void levels_free(struct dp__schema_levels *lv)
{
	dp__schema_strv_free(lv->v, lv->n);
	free(lv->by_name);
	memset(lv, 0, sizeof(*lv));
}

void dp_schema_destroy(dp_schema *s)
{
	if (s == NULL)
		return;
	for (size_t c = 0; c < s->ncols; c++) {
		free(s->cols[c].name);
		levels_free(&s->cols[c].lv);
	}
	free(s->cols);
	free(s->target);
	levels_free(&s->labels);
	dp__schema_strv_free(s->znames, s->d);
	free(s->pmean);
	free(s->pvec);
	free(s->pvar);
	dp__schema_strv_free(s->pcnames, s->k);
	free(s);
}

size_t dp_schema_nfeatures(const dp_schema *s)
{
	DP_REQUIRE(s != NULL);
	return s->p;
}

const char *const *dp_schema_feature_names(const dp_schema *s)
{
	DP_REQUIRE(s != NULL);
	return (const char *const *)s->names;
}

const char *dp_schema_target(const dp_schema *s)
{
	DP_REQUIRE(s != NULL);
	return s->target;
}

int dp_schema_target_binary(const dp_schema *s)
{
	DP_REQUIRE(s != NULL);
	return s->tkind == DP__SCHEMA_T_BINARY;
}

void dp_schema_target_scaling(const dp_schema *s, double *center, double *scale)
{
	int on;

	DP_REQUIRE(s != NULL && center != NULL && scale != NULL);
	on = s->tkind == DP__SCHEMA_T_NUMERIC && s->tstd;
	*center = on ? s->tcenter : 0.0;
	*scale = on ? s->tscale : 1.0;
}

int dp_schema_uses(const dp_schema *s, const char *column)
{
	DP_REQUIRE(s != NULL && column != NULL);
	if (strcmp(column, s->target) == 0)
		return 1;
	for (size_t c = 0; c < s->ncols; c++)
		if (strcmp(column, s->cols[c].name) == 0)
			return s->cols[c].kind != DP__SCHEMA_DROP;
	return 0;
}

/* ---- what makes a feature (the Hello's summary) ---------------------------- */

static int digest_text(EVP_MD_CTX *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int digest_text(EVP_MD_CTX *c, const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return 0;
	return EVP_DigestUpdate(c, buf, (size_t)n) == 1;
}

/* Levels go in with their length first, so that no two lists give one text. */
static int digest_levels(EVP_MD_CTX *c, const struct dp__schema_levels *lv)
{
	int ok = digest_text(c, "levels %zu\n", lv->n);

	for (size_t l = 0; ok && l < lv->n; l++)
		ok = digest_text(c, "%zu ", strlen(lv->v[l])) &&
		     EVP_DigestUpdate(c, lv->v[l], strlen(lv->v[l])) == 1;
	return ok;
}

int dp_schema_feature_info(const dp_schema *s, size_t j, dp_schema_feature *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	const struct dp__schema_col *col = NULL;
	EVP_MD_CTX *c;
	int ok;

	DP_REQUIRE(s != NULL && out != NULL);
	if (j >= s->p)
		return dp_error_set(DP_EINVAL, "schema: feature %zu of %zu", j + 1, s->p);
	memset(out, 0, sizeof(*out));
	out->scale = 1.0;
	c = EVP_MD_CTX_new();
	if (c == NULL)
		return dp_error_set(DP_ENOMEM, "schema: out of memory");
	ok = EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1;
	if (s->k > 0) {
		/* Exact bits (%a): the digest tells any two components apart. */
		out->kind = "pca";
		ok = ok && digest_text(c, "pca %zu of %zu\n", j, s->d);
		for (size_t i = 0; ok && i < s->d; i++)
			ok = digest_text(c, "%a %a\n", s->pmean[i], s->pvec[j * s->d + i]);
		for (size_t i = 0; ok && i < s->ncols; i++)
			ok = digest_text(c, "col %a %a\n", s->cols[i].center, s->cols[i].scale);
	} else {
		for (size_t i = 0; i < s->ncols && col == NULL; i++) {
			const struct dp__schema_col *k = &s->cols[i];
			size_t w = k->kind == DP__SCHEMA_ONEHOT ? k->lv.n
				   : k->kind == DP__SCHEMA_DROP ? 0 : 1;

			if (j >= k->off && j < k->off + w)
				col = k;
		}
		DP_REQUIRE(col != NULL);
		out->kind = dp__schema_kind_names[col->kind];
		if (col->kind == DP__SCHEMA_NUMERIC || col->kind == DP__SCHEMA_ORDINAL) {
			out->center = col->center;
			out->scale = col->scale;
			out->clamp = col->has_clamp;
			out->lo = col->has_clamp ? col->lo : 0.0;
			out->hi = col->has_clamp ? col->hi : 0.0;
		}
		ok = ok && digest_text(c, "%s %zu %a %a %d %a %a\n", out->kind, j - col->off,
				       out->center, out->scale, out->clamp, out->lo, out->hi) &&
		     digest_levels(c, &col->lv);
	}
	ok = ok && EVP_DigestFinal_ex(c, md, &mdlen) == 1;
	EVP_MD_CTX_free(c);
	if (!ok)
		return dp_error_set(DP_ENOMEM, "schema: SHA-256 failed");
	for (unsigned i = 0; i < 8; i++)
		snprintf(out->digest + 2 * i, 3, "%02x", md[i]);
	return 0;
}
