/* The one TCP accept path of the daemons (docs/protocol.md §6): bind to an
 * address or to every address, accept, count the live connections and
 * accept-and-close those beyond a cap, close.  The TLS server side
 * (conn.h, dp_conn_listen) and the HTTP server (httpd.h) both sit on it;
 * what runs on an accepted socket is theirs.
 *
 * Flow: for each incoming connection below the cap the listener calls
 * cfg->on_connection, which initialises a uv_tcp_t of its own on the
 * listener's loop and takes the connection into it with
 * dp_listener_accept.  From then on the connection counts as live until
 * its user calls dp_listener_release (normally when its socket has
 * closed).  A connection that arrives with max_conns already live, or
 * that on_connection does not take, is accepted and closed at once, with
 * a warning in the log.
 *
 * Lifetime: dp_listener_start creates the listener; dp_listener_close
 * stops it.  The memory is freed from the loop once the socket has
 * closed; the pointer is dead as soon as dp_listener_close returns, so
 * connections still open must not call dp_listener_release after it (the
 * on_close hook is where their users learn that).
 *
 * Everything runs on the loop's thread; nothing here is thread-safe. */
#ifndef DP_LISTENER_H
#define DP_LISTENER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <uv.h>

typedef struct dp_listener dp_listener;

typedef struct dp_listener_config {
	const char *tag;      /* log subsystem of the user ("conn", "httpd");
			       * must outlive the listener; NULL -> "listener" */
	size_t max_conns;     /* live connections at most; 0 = no limit */
	/* A connection is waiting and there is room for it.  Take it with
	 * dp_listener_accept and return 0 (also when the accept failed or the
	 * connection was closed right away: the callee dealt with it), or
	 * return a negative code with a detail without taking it, to have it
	 * accepted and closed (the detail is logged).  Required. */
	int (*on_connection)(dp_listener *l, void *data);
	/* Called from dp_listener_close, before it returns: the listener
	 * accepts nothing more and l is dead after the hook returns.  The
	 * user forgets l (connections it accepted are not released any more)
	 * and stops whatever belongs to the listener.  NULL: nothing to do. */
	void (*on_close)(dp_listener *l, void *data);
	/* Called from the loop once the listening socket has closed after
	 * dp_listener_close, just before the listener is freed.  NULL:
	 * nothing to do. */
	void (*on_closed)(void *data);
	void *data;           /* passed to the callbacks */
} dp_listener_config;

/* Listen on host:port.  host is an IPv4 or IPv6 literal, a host name
 * (resolved once, synchronously: meant for startup), or NULL, "" or "*"
 * for every address (IPv6 "::" accepting IPv4 too where the system allows
 * it, else "0.0.0.0").  Port 0 picks a free port (dp_listener_port).
 * cfg is copied.  *out receives the listener.
 * Errors (*out untouched): DP_ENOENT (host not resolved), DP_ENOMEM, or
 * the libuv bind/listen error (negative errno, e.g. -EADDRINUSE), each
 * with a detail.  After a bind/listen failure the half-made socket is
 * released by the loop (freed the next time the loop runs). */
int dp_listener_start(uv_loop_t *loop, const dp_listener_config *cfg, const char *host,
		      uint16_t port, dp_listener **out);

/* The same on a socket address (IPv4 or IPv6, e.g. from
 * dp_addr_parse_literal); no resolution, no fallback. */
int dp_listener_start_addr(uv_loop_t *loop, const dp_listener_config *cfg,
			   const struct sockaddr *sa, dp_listener **out);

/* Only inside on_connection: accept the waiting connection into tcp, a
 * handle the caller initialised on the listener's loop (uv_tcp_init) and
 * owns.  On success the connection counts as live until
 * dp_listener_release, and peer (peer_size bytes; may be NULL) receives
 * the peer's address as dp_addr_format writes it ("" if unknown).
 * Errors: the libuv accept error (negative errno); the connection is not
 * counted.  Either way tcp stays the caller's to uv_close. */
int dp_listener_accept(dp_listener *l, uv_tcp_t *tcp, char *peer, size_t peer_size);

/* One connection taken with dp_listener_accept is gone: it stops counting
 * against max_conns.  Once per accepted connection, and never after
 * dp_listener_close. */
void dp_listener_release(dp_listener *l);

/* The port actually bound. */
uint16_t dp_listener_port(const dp_listener *l);

/* Live connections (accepted and not yet released). */
size_t dp_listener_live(const dp_listener *l);

/* Stop accepting: cfg->on_close runs, then the socket is closed and the
 * listener freed from the loop (cfg->on_closed first).  Connections
 * already accepted are untouched.  The pointer is dead after this call. */
void dp_listener_close(dp_listener *l);

#endif
