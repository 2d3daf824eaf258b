/* SPDX-License-Identifier: Apache-2.0 */
/* Feature schema: the type and the internals its files share
 * (schema_impl.h).  Its JSON file is schema_file.c, its application to
 * rows schema_bind.c; building one from a sample is
 * tools/lib/schema_build.c. */
#include "common/core/schema.h"
#include "common/core/schema_impl.h"
#include "common/core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
