/* Error codes and the per-thread error detail shared by all of common/.
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

#define DP_OK        0
#define DP_EINVAL    (-EINVAL)   /* bad argument or setting */
#define DP_ENOMEM    (-ENOMEM)
#define DP_EIO       (-EIO)      /* read/write/sync failed */
#define DP_ENOENT    (-ENOENT)   /* file or name not found */
#define DP_ERANGE    (-ERANGE)   /* value out of range / would overflow */
#define DP__EBASE    (-1000)
#define DP_EFORMAT   (DP__EBASE - 1)  /* malformed input file or field */
#define DP_EBUDGET   (DP__EBASE - 2)  /* privacy budget exhausted */
#define DP_ECORRUPT  (DP__EBASE - 3)  /* checksum or structure broken */
#define DP_EPROTO    (DP__EBASE - 4)  /* wire protocol violation */
#define DP_ETLS      (DP__EBASE - 5)  /* TLS / certificate failure */
#define DP_ENUMERIC  (DP__EBASE - 6)  /* non-finite or diverging numbers */
#define DP_ERNG      (DP__EBASE - 7)  /* random generator failed */
#define DP_ESTATE    (DP__EBASE - 8)  /* operation not allowed in this state */

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

#endif
