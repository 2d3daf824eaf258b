/* SPDX-License-Identifier: Apache-2.0 */
/* Identity -> index: a hash table over strings the caller keeps (open
 * addressing, FNV-1a), so that finding an owner among N costs O(1) and
 * checking N identities for duplicates O(N) (docs/scale.md §6).  The keys
 * are not copied: they must outlive the map and not change. */
#ifndef DP_IDMAP_H
#define DP_IDMAP_H

#include <stddef.h>

typedef struct dp_idmap dp_idmap;

/* A map with room for n keys (it never grows: n is the number of keys
 * the caller will put).  Errors: DP_ENOMEM; *out untouched. */
int dp_idmap_new(size_t n, dp_idmap **out);
void dp_idmap_free(dp_idmap *m);

/* Map key to index.  0, or 1 when key was already there (nothing
 * changed: *had, if not NULL, gets its index), or DP_EINVAL when the map
 * already holds the n keys it was made for. */
int dp_idmap_put(dp_idmap *m, const char *key, size_t index, size_t *had);

/* The index of key, or -1 when it is not there. */
long dp_idmap_get(const dp_idmap *m, const char *key);

#endif
