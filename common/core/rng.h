/* SPDX-License-Identifier: Apache-2.0 */
/* Random bits for noise and clocks.
 *
 * A dp_bitsource is where samplers take their bits from.  The daemons can
 * only build one from the CSPRNG (below, OpenSSL RAND_priv_bytes, buffered);
 * the seeded generator for offline simulation lives in tools/lib/simrng.h,
 * in the tool-only library (libdptool) that the daemons do not link. */
#ifndef DP_RNG_H
#define DP_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct dp_bitsource {
	/* Fill buf with len random bytes; 0 or a negative code (DP_ERNG). */
	int (*fill)(void *ctx, void *buf, size_t len);
	void *ctx;
} dp_bitsource;

/* Convenience draws on any source; 0 or the source's error, *out untouched
 * on failure.  src (with its fill) and out must not be NULL (DP_REQUIRE). */
int dp_rng_u64(dp_bitsource *src, uint64_t *out);
/* Uniform on (0,1): 53 random bits, never 0 or 1. */
int dp_rng_uniform(dp_bitsource *src, double *out);
/* Exponential with the given rate (> 0 and finite, else DP_EINVAL): gaps of
 * a Poisson clock. */
int dp_rng_exponential(dp_bitsource *src, double rate, double *out);
/* Uniform integer in [0, bound) without modulo bias; bound 0: DP_EINVAL.
 * A source that keeps hitting the rejection zone: DP_ERNG. */
int dp_rng_below(dp_bitsource *src, uint64_t bound, uint64_t *out);

/* The cryptographically secure generator: OpenSSL RAND_priv_bytes into a
 * 64 KiB per-object buffer; used bytes are wiped (OPENSSL_cleanse).  Not to
 * be shared across fork(). */
typedef struct dp_csprng dp_csprng;

/* Errors: DP_ENOMEM.  out must not be NULL. */
int dp_rng_csprng_new(dp_csprng **out);
void dp_rng_csprng_destroy(dp_csprng *r);
/* A bitsource view of r (non-NULL; valid while r lives). */
dp_bitsource dp_rng_csprng_bits(dp_csprng *r);

#endif
