/* SPDX-License-Identifier: Apache-2.0 */
/* Arrays that grow while input streams in (CSV records and lines, the
 * ledger's index of request ids, whole-file reads, frame bodies, registries
 * and lists): the one place where the capacity is doubled, with the size
 * arithmetic checked for overflow. */
#ifndef DP_MEM_H
#define DP_MEM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"

/* Make the array `*arrp` (any T **, holding *cap elements of `size` bytes;
 * NULL with *cap 0 at first) hold at least `need` elements, by doubling
 * *cap from `first` (>= 1), but never beyond `max` (>= need: a buffer whose
 * final size is known), and realloc.  Contents are kept.  0, or DP_ENOMEM
 * (out of memory, or the byte size would overflow size_t) with the array
 * and *cap unchanged; no detail is recorded. */
static inline int dp_mem_reserve_max(void *arrp, size_t *cap, size_t need, size_t size,
				     size_t first, size_t max)
{
	size_t c = *cap ? *cap : first;
	void *old, *p;

	DP_REQUIRE(arrp != NULL && cap != NULL && size > 0 && first > 0 && need <= max);
	if (need <= *cap)
		return 0;
	while (c < need && c <= max / 2)
		c *= 2;
	if (c < need || c > max)
		c = max;
	if (c > SIZE_MAX / size)
		return DP_ENOMEM;
	/* arrp is a T **: read and write the pointer through its bytes. */
	memcpy(&old, arrp, sizeof(old));
	p = realloc(old, c * size);
	if (p == NULL)
		return DP_ENOMEM;
	memcpy(arrp, &p, sizeof(p));
	*cap = c;
	return 0;
}

/* dp_mem_reserve_max with no bound but size_t's. */
static inline int dp_mem_reserve(void *arrp, size_t *cap, size_t need, size_t size,
				 size_t first)
{
	return dp_mem_reserve_max(arrp, cap, need, size, first, SIZE_MAX);
}

#endif
