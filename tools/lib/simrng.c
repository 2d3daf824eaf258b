/* SPDX-License-Identifier: Apache-2.0 */
/* Seeded xoshiro256** for offline simulation (libdptool only).
 *
 * Reference algorithms: Blackman & Vigna, "Scrambled linear pseudorandom
 * number generators" (xoshiro256**, seeded through splitmix64 as the authors
 * recommend).  Not cryptographic: it must never feed ownerd's noise, which is
 * why it lives in a library the daemons do not link. */
#include "tools/lib/simrng.h"

#include <string.h>

#include "common/core/error.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void dp_simrng_seed(dp_simrng *r, uint64_t seed)
{
	uint64_t x = seed;

	DP_REQUIRE(r != NULL);
	/* splitmix64 is a bijection of its counter, so at most one of four
	 * consecutive outputs is zero and the state is never all-zero. */
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

uint64_t dp_simrng_next(dp_simrng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Bytes are the outputs in little-endian order, whatever the host, so a
 * seed reproduces the same stream everywhere.  Each call starts on a fresh
 * 64-bit output (the unused tail of the last word is dropped): the stream
 * depends on the sequence of request sizes, which is itself deterministic. */
static int fill(void *ctx, void *buf, size_t len)
{
	dp_simrng *r = ctx;
	unsigned char *p = buf;

	while (len > 0) {
		uint64_t v = dp_simrng_next(r);
		size_t n = len < 8 ? len : 8;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		memcpy(p, &v, n);
#else
		for (size_t i = 0; i < n; i++)
			p[i] = (unsigned char)(v >> (8 * i));
#endif
		p += n;
		len -= n;
	}
	return 0;
}

dp_bitsource dp_simrng_bitsource(dp_simrng *r)
{
	dp_bitsource src = { .fill = fill, .ctx = r };

	DP_REQUIRE(r != NULL);
	return src;
}

static int left(const uint64_t *count, const uint64_t *cap, size_t i)
{
	return cap == NULL || count[i] < cap[i];
}

size_t dp_simrng_pick(dp_simrng *r, const double *rate, const uint64_t *count,
		      const uint64_t *cap, size_t n)
{
	double total = 0.0, u, acc = 0.0;
	size_t last = n;

	for (size_t i = 0; i < n; i++) {
		if (!left(count, cap, i))
			continue;
		total += rate[i];
		last = i;
	}
	if (last == n)
		return n;
	u = ((double)(dp_simrng_next(r) >> 11) + 0.5) * 0x1.0p-53 * total;
	for (size_t i = 0; i < n; i++) {
		if (!left(count, cap, i))
			continue;
		acc += rate[i];
		if (u < acc)
			return i;
	}
	return last;
}
