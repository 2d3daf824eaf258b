/* SPDX-License-Identifier: Apache-2.0 */
/* Identity -> index (idmap.h). */
#include "common/core/idmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"

struct slot {
	const char *key;   /* NULL: empty */
	size_t index;
};

struct dp_idmap {
	size_t mask;       /* slots - 1, slots a power of two >= 2 n */
	size_t n, cap;     /* keys held; keys allowed */
	struct slot *s;
};

static uint64_t fnv1a(const char *k)
{
	uint64_t h = 1469598103934665603ull;

	for (; *k; k++) {
		h ^= (unsigned char)*k;
		h *= 1099511628211ull;
	}
	return h;
}

int dp_idmap_new(size_t n, dp_idmap **out)
{
	dp_idmap *m;
	size_t slots = 2;

	DP_REQUIRE(out != NULL);
	/* At most half full: a probe ends after about 1.5 slots on average. */
	while (slots < 2 * n && slots < ((size_t)1 << 40))
		slots *= 2;
	m = calloc(1, sizeof(*m));
	if (m != NULL)
		m->s = calloc(slots, sizeof(*m->s));
	if (m == NULL || m->s == NULL) {
		free(m);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	m->mask = slots - 1;
	m->cap = n;
	*out = m;
	return 0;
}

void dp_idmap_free(dp_idmap *m)
{
	if (m == NULL)
		return;
	free(m->s);
	free(m);
}

/* The slot of key, or the empty slot where it would go. */
static struct slot *find(const dp_idmap *m, const char *key)
{
	size_t i = (size_t)fnv1a(key) & m->mask;

	while (m->s[i].key != NULL && strcmp(m->s[i].key, key) != 0)
		i = (i + 1) & m->mask;
	return &m->s[i];
}

int dp_idmap_put(dp_idmap *m, const char *key, size_t index, size_t *had)
{
	struct slot *s;

	DP_REQUIRE(m != NULL && key != NULL);
	s = find(m, key);
	if (s->key != NULL) {
		if (had)
			*had = s->index;
		return 1;
	}
	if (m->n >= m->cap)
		return dp_error_set(DP_EINVAL, "idmap: full (%zu keys)", m->cap);
	s->key = key;
	s->index = index;
	m->n++;
	return 0;
}

long dp_idmap_get(const dp_idmap *m, const char *key)
{
	const struct slot *s;

	DP_REQUIRE(m != NULL && key != NULL);
	s = find(m, key);
	return s->key != NULL ? (long)s->index : -1;
}
