/* SPDX-License-Identifier: Apache-2.0 */
/* CSPRNG (OpenSSL RAND_priv_bytes, buffered) and generic draws on a
 * dp_bitsource.  See rng.h for the contract, docs/noise.md for the design. */
#include "common/core/rng.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "common/core/error.h"

/* A source that keeps returning words a rejection loop must refuse (all
 * zero bits for dp_rng_uniform, below the threshold for dp_rng_below) is
 * broken: a true random source does that 64 times in a row with
 * probability < 2^-64.  Give up instead of spinning forever. */
#define REJECT_MAX 64

int dp_rng_u64(dp_bitsource *src, uint64_t *out)
{
	uint64_t v;
	int rc;

	DP_REQUIRE(src != NULL && src->fill != NULL && out != NULL);
	rc = src->fill(src->ctx, &v, sizeof(v));
	if (rc != 0)
		return rc;
	*out = v;
	return 0;
}

int dp_rng_uniform(dp_bitsource *src, double *out)
{
	DP_REQUIRE(out != NULL);
	for (int i = 0; i < REJECT_MAX; i++) {
		uint64_t v;
		int rc = dp_rng_u64(src, &v);

		if (rc != 0)
			return rc;
		/* k/2^53 for k uniform on [1, 2^53): every value is exact,
		 * never 0, never 1 (k = 0 is redrawn). */
		v >>= 11;
		if (v != 0) {
			*out = (double)v * 0x1p-53;
			return 0;
		}
	}
	return dp_error_set(DP_ERNG, "rng: uniform: bit source returns only zeros");
}

int dp_rng_exponential(dp_bitsource *src, double rate, double *out)
{
	double u, x;
	int rc;

	DP_REQUIRE(out != NULL);
	if (!(rate > 0.0) || !isfinite(rate))
		return dp_error_set(DP_EINVAL, "rng: exponential: rate %g is not a positive finite "
				    "number", rate);
	rc = dp_rng_uniform(src, &u);
	if (rc != 0)
		return rc;
	x = -log(u) / rate;  /* u in [2^-53, 1): x in (0, 36.8/rate] */
	if (!isfinite(x))
		return dp_error_set(DP_ERANGE, "rng: exponential: rate %g too small", rate);
	*out = x;
	return 0;
}

int dp_rng_below(dp_bitsource *src, uint64_t bound, uint64_t *out)
{
	uint64_t min;

	DP_REQUIRE(src != NULL && out != NULL);
	if (bound == 0)
		return dp_error_set(DP_EINVAL, "rng: below: bound is 0");
	if (bound == 1) {
		*out = 0;
		return 0;
	}
	/* Reject the 2^64 mod bound smallest words so that the accepted range
	 * is a whole number of copies of [0, bound): no modulo bias.  The
	 * acceptance probability is > 1/2. */
	min = (0 - bound) % bound;
	for (int i = 0; i < REJECT_MAX; i++) {
		uint64_t v;
		int rc = dp_rng_u64(src, &v);

		if (rc != 0)
			return rc;
		if (v >= min) {
			*out = v % bound;
			return 0;
		}
	}
	return dp_error_set(DP_ERNG, "rng: below: bit source keeps hitting the rejection zone");
}

/* ---- the CSPRNG ---- */

#define CSPRNG_BUF 65536

/* The object is its own anonymous mapping (whole pages, nothing else from
 * the heap shares them), so that it can be marked MADV_WIPEONFORK: in a
 * child of fork() the kernel hands out zero pages, `armed` reads 0 and the
 * child regenerates instead of repeating the parent's bytes.  If the
 * kernel refuses the advice (Linux < 4.14), `pidcheck` is set and every fill
 * compares getpid() (a syscall, ~100 ns here, hence not the default) and a
 * pthread_atfork generation counter (which also catches a descendant that
 * reuses the pid of the dead process that filled the buffer). */
struct dp_csprng {
	unsigned char buf[CSPRNG_BUF];  /* page aligned */
	size_t pos;             /* buf[pos..] not yet handed out */
	int armed;              /* 1 in the process that generated buf */
	int pidcheck;           /* 1 if MADV_WIPEONFORK was refused */
	pid_t pid;              /* process that generated buf */
	unsigned long forkgen;  /* forkgen when buf was generated */
};

static size_t csprng_maplen(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t p = pg > 0 ? (size_t)pg : 4096;

	return (sizeof(dp_csprng) + p - 1) / p * p;
}

static atomic_ulong forkgen;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_child(void)
{
	atomic_fetch_add_explicit(&forkgen, 1, memory_order_relaxed);
}

static void atfork_register(void)
{
	/* Failure (ENOMEM) leaves getpid() as the only fallback check. */
	(void)pthread_atfork(NULL, NULL, atfork_child);
}

static int rand_priv(unsigned char *p, size_t len)
{
	while (len > 0) {
		int n = len > INT_MAX ? INT_MAX : (int)len;

		if (RAND_priv_bytes(p, n) != 1)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Regenerate the handed-out part buf[0..pos).  The unused tail buf[pos..]
 * stays valid, so a failure loses nothing that was good. */
static int csprng_refill(dp_csprng *r)
{
	if (rand_priv(r->buf, r->pos) != 0) {
		OPENSSL_cleanse(r->buf, r->pos);
		return dp_error_set(DP_ERNG, "csprng: RAND_priv_bytes failed");
	}
	r->pos = 0;
	return 0;
}

static int csprng_fill(void *ctx, void *out, size_t len)
{
	dp_csprng *r = ctx;

	if (len == 0)
		return 0;
	if (!r->armed || (r->pidcheck && (r->pid != getpid() ||
	    r->forkgen != atomic_load_explicit(&forkgen, memory_order_relaxed)))) {
		/* A fork child: the parent holds the same bytes and may hand
		 * them out too.  Discard them all.  OpenSSL 3 reseeds its own
		 * DRBG after fork, so refilling below is safe. */
		OPENSSL_cleanse(r->buf, sizeof(r->buf));
		r->pos = sizeof(r->buf);
		r->pid = getpid();
		r->forkgen = atomic_load_explicit(&forkgen, memory_order_relaxed);
		r->armed = 1;
	}
	if (len > sizeof(r->buf)) {
		/* Too big to stage; the caller's buffer is wiped on failure
		 * so that no partial output can be used. */
		if (rand_priv(out, len) != 0) {
			OPENSSL_cleanse(out, len);
			return dp_error_set(DP_ERNG, "csprng: RAND_priv_bytes failed (%zu bytes)", len);
		}
		return 0;
	}
	if (sizeof(r->buf) - r->pos < len) {
		int rc = csprng_refill(r);

		if (rc != 0)
			return rc;
	}
	memcpy(out, r->buf + r->pos, len);
	OPENSSL_cleanse(r->buf + r->pos, len);
	r->pos += len;
	return 0;
}

int dp_rng_csprng_new(dp_csprng **out)
{
	size_t len = csprng_maplen();
	dp_csprng *r;
	void *mem;

	DP_REQUIRE(out != NULL);
	pthread_once(&atfork_once, atfork_register);
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return dp_error_set(DP_ENOMEM, "csprng: cannot map %zu bytes", len);
	r = mem;  /* zero filled */
	/* Keep noise bytes out of core dumps; best effort. */
	(void)madvise(mem, len, MADV_DONTDUMP);
	r->pidcheck = madvise(mem, len, MADV_WIPEONFORK) != 0;
	r->pos = sizeof(r->buf);  /* empty: the first fill generates */
	r->pid = getpid();
	r->forkgen = atomic_load_explicit(&forkgen, memory_order_relaxed);
	r->armed = 1;
	*out = r;
	return 0;
}

void dp_rng_csprng_destroy(dp_csprng *r)
{
	if (r == NULL)
		return;
	OPENSSL_cleanse(r, sizeof(*r));
	(void)munmap(r, csprng_maplen());
}

dp_bitsource dp_rng_csprng_bits(dp_csprng *r)
{
	dp_bitsource src = { .fill = csprng_fill, .ctx = r };

	DP_REQUIRE(r != NULL);
	return src;
}
