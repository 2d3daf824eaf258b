/* SPDX-License-Identifier: Apache-2.0 */
/* Error codes, the per-thread error detail, and invariant checks, shared by
 * every module.
 *
 * Every library function returns 0 or a negative code.  Codes that have an
 * errno equivalent use it (DP_ENOMEM == -ENOMEM); the others sit below
 * DP__EBASE.  A function that fails may also record a one-line human
 * detail ("data.csv:12: column 'x3': not a number") with dp_error_set();
 * the caller prints it with dp_error_detail().  Outputs are left untouched
 * on failure unless a header says otherwise. */
#ifndef DP_ERROR_H
#define DP_ERROR_H

#include <errno.h>

#define DP__EBASE (-1000)

/* The one table of codes (libuv's UV_ERRNO_MAP): name, value, text.  The
 * enum below and dp_strerror() are generated from it; codes with an errno
 * value print strerror()'s text.  The exit status each code gives is
 * common/core/exit.h's (docs/design.md §10 "Exit status"); DP_EREFUSED is
 * only for a permanent refusal exchanged over a connection verified against
 * the CA and the peer's name or pin. */
#define DP_ERRNO_MAP(XX)                                                          \
	XX(EINVAL,   -EINVAL,         NULL)  /* bad argument or setting */          \
	XX(ENOMEM,   -ENOMEM,         NULL)                                         \
	XX(EIO,      -EIO,            NULL)  /* read/write/sync failed */           \
	XX(ENOENT,   -ENOENT,         NULL)  /* file or name not found */           \
	XX(ERANGE,   -ERANGE,         NULL)  /* out of range / would overflow */    \
	XX(EEXIST,   -EEXIST,         NULL)  /* file exists (exclusive create) */   \
	XX(EFORMAT,  DP__EBASE - 1,   "malformed input")                            \
	XX(EBUDGET,  DP__EBASE - 2,   "privacy budget exhausted")                   \
	XX(ECORRUPT, DP__EBASE - 3,   "corrupt file")                               \
	XX(EPROTO,   DP__EBASE - 4,   "protocol violation")                         \
	XX(ETLS,     DP__EBASE - 5,   "TLS failure")                                \
	XX(ENUMERIC, DP__EBASE - 6,   "non-finite value")                           \
	XX(ERNG,     DP__EBASE - 7,   "random generator failure")                   \
	XX(ESTATE,   DP__EBASE - 8,   "operation not allowed in this state")        \
	XX(EREFUSED, DP__EBASE - 9,   "refused for good")  /* over a verified connection */

enum {
	DP_OK = 0,
#define DP__ERR_ENUM(name, value, text) DP_##name = (value),
	DP_ERRNO_MAP(DP__ERR_ENUM)
#undef DP__ERR_ENUM
};

/* Static text for a code; never NULL. */
const char *dp_strerror(int err);

/* Record a printf-style detail for the current thread (replaces any older
 * detail). Always returns `err` so that callers can write
 * `return dp_error_set(DP_EFORMAT, "%s:%zu: ...", ...);`. */
int dp_error_set(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The last detail recorded on this thread, or dp_strerror(err) if the last
 * recorded code differs from `err` (so a stale detail is never shown for an
 * unrelated failure). Never NULL. */
const char *dp_error_detail(int err);

/* Forget the current detail. */
void dp_error_clear(void);

/* Invariants at module boundaries (knot-resolver's kr_require): a broken
 * one is a bug in the caller, not bad input, so it is fatal -- one line on
 * stderr naming the function and the condition, then abort().  Bad input
 * is never checked with it: that gets an error code and a detail.  The
 * check stays in release builds (it guards privacy-relevant state). */
#define DP_REQUIRE(cond)                                                        \
	((cond) ? (void)0 : dp__require_failed(#cond, __FILE__, __LINE__, __func__))

void dp__require_failed(const char *cond, const char *file, int line, const char *func)
    __attribute__((noreturn));

#endif
