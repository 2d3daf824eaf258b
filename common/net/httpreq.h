/* SPDX-License-Identifier: Apache-2.0 */
/* The request head of httpd.c's HTTP/1.x server: finding its end as bytes
 * arrive, and parsing it.  The rules (strict; what gets which status) are
 * those of httpd.h.  Kept apart from the connection handling so that the
 * parser can be tested and fuzzed on its own (docs/fuzz.md); httpd.c is
 * its only user in the daemons.  No allocation, no I/O. */
#ifndef DP_HTTPREQ_H
#define DP_HTTPREQ_H

#include <stdbool.h>
#include <stddef.h>

#include "common/net/httpd.h"

/* dp_httpreq_scan results besides an HTTP status. */
#define DP_HTTPREQ_MORE 0   /* the head is not complete: read more */
#define DP_HTTPREQ_DONE 1   /* the head is complete: dp_httpreq_parse it */

/* Where scanning stands; zero it before the first byte. */
struct dp_httpreq_scan {
	size_t line_start;   /* start of the line being scanned */
	size_t n_lines;      /* complete lines seen, request line included */
	bool line_ok;        /* request line complete and checked */
};

/* The bytes buf[from, used) just arrived after buf[0, from), which earlier
 * calls scanned; used <= DP_HTTPD_MAX_HEADER.  The request line is checked
 * as soon as it is complete, so that garbage and unsupported methods are
 * answered without waiting for more.  Returns DP_HTTPREQ_MORE,
 * DP_HTTPREQ_DONE with *head_end (the head's length, through the blank
 * line), or the status to answer with: 400 (NUL byte in the head, bad
 * request line),
 * 405, 505, 414 (buffer full before the request line ended), 431 (too
 * many header lines, or buffer full in the headers).  After a status or
 * DONE the scan must not be called again. */
int dp_httpreq_scan(struct dp_httpreq_scan *st, const char *buf, size_t from, size_t used,
		    size_t *head_end);

/* A parsed head.  path and query point into the buffer given to
 * dp_httpreq_parse. */
struct dp_httpreq_head {
	char method[8];     /* "GET" or "HEAD" */
	const char *path;   /* the target up to '?', not decoded; starts with '/' */
	const char *query;  /* after '?', or "" */
};

/* Parse the complete head buf[0, head_end) found by dp_httpreq_scan.  The
 * buffer is modified in place (buf[head_end] and the target's end become
 * NUL), so it must hold head_end + 1 bytes.  Returns 0 with *out set, or
 * the status to answer with: 400 (malformed request line or header, CR
 * inside a line, no Host header in HTTP/1.1 or more than one), 405, 505.
 * *out untouched on failure. */
int dp_httpreq_parse(char *buf, size_t head_end, struct dp_httpreq_head *out);

#endif
