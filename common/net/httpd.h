/* SPDX-License-Identifier: Apache-2.0 */
/* A minimal HTTP/1.1 server on a libuv loop for /metrics, /healthz and a
 * few daemon-defined routes (e.g. /status returning JSON).
 *
 * Plain TCP, no TLS and no authentication: bind it to localhost or to a
 * management network only, never to an address owners or the internet can
 * reach.  It serves small GET/HEAD requests and nothing else:
 *   - one request per connection, answered with "Connection: close";
 *   - request line and headers at most DP_HTTPD_MAX_HEADER bytes, parsed
 *     strictly (hand parser; Debian packages no picohttpparser):
 *       400 malformed request line or header, NUL or control bytes,
 *           request target not "/...", HTTP/1.1 without one Host header
 *       405 any method but GET and HEAD (with "Allow: GET, HEAD")
 *       404 no route for the path (the query string is ignored)
 *       414 request line longer than the cap
 *       431 headers longer than the cap, or more than
 *           DP_HTTPD_MAX_HEADERS header lines
 *       505 an HTTP version other than 1.0 and 1.1
 *     A request body is never read;
 *   - every connection has a deadline (timeout_ms from accept until the
 *     response is written): a client that sends nothing, or too slowly, or
 *     does not read its answer, is closed when it passes;
 *   - at most max_connections at once (the daemons' one accept path,
 *     listener.h); beyond that a new connection evicts the oldest one,
 *     one that has sent nothing before one that has, so idle or slow
 *     clients cannot keep a scraper out.
 * After the response the socket is shut down for writing and what the
 * client still sends is read and dropped until it closes (or 2 s), so a
 * client that was still sending receives the error instead of a reset.
 *
 * Everything runs on the loop's thread; nothing here is thread-safe. */
#ifndef DP_HTTPD_H
#define DP_HTTPD_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "common/net/metrics.h"

#define DP_HTTPD_MAX_HEADER        8192u  /* request line + headers + blank line */
#define DP_HTTPD_MAX_HEADERS       64u
#define DP_HTTPD_MAX_CONN_DEFAULT  64u
#define DP_HTTPD_TIMEOUT_MS_DEFAULT 5000u

struct dp_httpd;

struct dp_httpd_options {
	const char *listen;          /* "127.0.0.1:9464", "[::1]:9464",
				      * "localhost:9464" (dp_addr_parse_literal,
				      * addr.h); port 0 picks a free port
				      * (dp_httpd_port) */
	unsigned max_connections;    /* 0 -> DP_HTTPD_MAX_CONN_DEFAULT */
	unsigned timeout_ms;         /* 0 -> DP_HTTPD_TIMEOUT_MS_DEFAULT */
	struct dp_metrics *metrics;  /* served on /metrics when not NULL; the
				      * registry must outlive the server */
};

/* A parsed request, valid during the handler call only. */
struct dp_httpd_request {
	const char *method;   /* "GET" or "HEAD" */
	const char *path;     /* "/status": the target up to '?', not decoded */
	const char *query;    /* after '?', or "" */
	const char *peer;     /* client address "127.0.0.1:50312" or "[::1]:50312" */
};

/* What a handler fills in.  It starts as status 200, content type
 * "text/plain; charset=utf-8", no body. */
struct dp_httpd_response {
	int status;                /* 200..599 */
	const char *content_type;  /* static or outliving the server */
	char *body;                /* malloc'ed; the server frees it */
	size_t len;
};

/* A route handler.  Return 0 to send *resp, or a negative DP_E... code to
 * send "500 Internal Server Error" instead (the error is logged; a body
 * already set is freed).  For HEAD the handler runs as for GET and only
 * the body is left out.  Handlers run on the loop: keep them short.  A
 * handler may call dp_httpd_close (the response is then dropped). */
typedef int (*dp_httpd_handler)(void *arg, const struct dp_httpd_request *req,
				struct dp_httpd_response *resp);

/* Bind and listen on opt->listen on `loop`.  Routes: /healthz answers
 * "ok\n" (replace it with dp_httpd_route to report real health) and, when
 * opt->metrics is set, /metrics renders it (DP_METRICS_CONTENT_TYPE).
 * Requests are served while the loop runs.  *out: the server, until
 * dp_httpd_close.  loop, opt and out must not be NULL.
 * Errors (*out untouched): DP_EINVAL (listen missing or not a literal
 * address, detail from dp_addr_parse_literal), DP_ENOMEM, or the libuv
 * bind/listen error (negative errno, e.g. -EADDRINUSE) with the detail
 * "httpd: cannot listen on ADDR: ...".  After a bind/listen failure the
 * socket handle is released by the loop (its memory is freed the next
 * time the loop runs). */
int dp_httpd_new(uv_loop_t *loop, const struct dp_httpd_options *opt, struct dp_httpd **out);

/* The port actually bound (useful after port 0); 0 for NULL. */
uint16_t dp_httpd_port(const struct dp_httpd *h);

/* Serve `path` (exact match, must start with '/', no '?') with
 * fn(arg, ...), replacing any route for the same path; fn NULL removes the
 * route.  h must not be NULL.
 * Errors: DP_EINVAL (bad path), DP_ENOMEM, DP_ENOENT (removing a missing
 * route). */
int dp_httpd_route(struct dp_httpd *h, const char *path, dp_httpd_handler fn, void *arg);

/* Fill resp with a copy of body (len bytes) and the given status and
 * content type (NULL: text/plain).  Replaces a body already set.  For use
 * inside handlers.  Errors: DP_EINVAL (status outside 200..599), DP_ENOMEM;
 * resp untouched on failure. */
int dp_httpd_respond(struct dp_httpd_response *resp, int status, const char *content_type,
		     const char *body, size_t len);

/* Number of open client connections (0 for NULL). */
size_t dp_httpd_connections(const struct dp_httpd *h);

/* Stop listening and close every connection (responses not yet written
 * are dropped).  The server is freed from the loop once all its handles
 * have closed; then done(arg) is called if done is not NULL.  The pointer
 * is dead after this call.  NULL is a no-op. */
void dp_httpd_close(struct dp_httpd *h, void (*done)(void *arg), void *arg);

#endif
