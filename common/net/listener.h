/* SPDX-License-Identifier: Apache-2.0 */
/* The one TCP accept path of the daemons (docs/protocol.md §6): bind to an
 * address or to every address, accept, count the live connections, keep
 * the ones not yet authenticated (pending) within their own limits, close.
 * The TLS server side (conn.h, dp_conn_listen) and the HTTP server
 * (httpd.h) both sit on it; what runs on an accepted socket is theirs.
 *
 * Flow: for each incoming connection the listener calls
 * cfg->on_connection, which initialises a uv_tcp_t of its own on the
 * listener's loop and takes the connection into it with
 * dp_listener_accept, with a dp_listener_slot embedded in its own
 * connection object.  From then on the connection is live and pending
 * until its user calls dp_listener_settle (it is authenticated: it no
 * longer counts against the pending limits) and live until
 * dp_listener_release (normally when its socket has closed).
 *
 * Admission (docs/protocol.md §6 "Admission"):
 *   - a pending connection is idle until it has sent a byte (the user
 *     calls dp_listener_progress; bytes already waiting at accept or when
 *     an eviction looks at it count too), then active.  With
 *     cfg->stall_ms, an active one is making progress while its last
 *     bytes are less than stall_ms old or some wait unread, and stalled
 *     after that; without it, every active one counts as stalled;
 *   - with max_pending_per_addr pending from the new connection's address
 *     already, the oldest idle one of that address is evicted, else its
 *     oldest stalled one; when every one of them is making progress, the
 *     new connection is accepted and closed at once (refused): a storm of
 *     handshakes from one address (many hosts behind one NAT) finishes
 *     the ones it has started instead of cutting them for newer ones;
 *   - else with max_pending pending already, the oldest pending one of
 *     any address, idle before stalled before the others.  The user
 *     closes an evicted connection at once (cfg->on_evict); it stops
 *     counting at once;
 *   - with max_conns live, the oldest pending one is evicted likewise
 *     when there is one (only when on_evict is set), else the new
 *     connection is refused.
 * So a new connection from an address below its limit always gets a
 * chance while settled connections stay below max_conns, settled
 * connections are never evicted, and a connection making progress is
 * never evicted for another of its own address.
 * Evictions and refusals are logged at most once per 10 s with a count;
 * the counters and the pending gauge are in cfg's metrics when given.
 *
 * Lifetime: dp_listener_start creates the listener; dp_listener_close
 * stops it.  The memory is freed from the loop once the socket has
 * closed; the pointer is dead as soon as dp_listener_close returns, so
 * connections still open must not call dp_listener_* after it (the
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
struct dp_metric;

/* The listener's record of one accepted connection, embedded in the
 * user's connection object (which must outlive it until
 * dp_listener_release or dp_listener_close).  Filled by
 * dp_listener_accept; the fields are the listener's. */
typedef struct dp_listener_slot {
	struct dp_listener_slot *prev, *next;  /* in the idle or active list */
	uv_tcp_t *tcp;
	unsigned char key[17];  /* address family and address */
	unsigned char state;
	uint32_t seq;           /* accept order: "oldest" means lowest */
	unsigned char held;     /* dp_listener_hold: bytes kept unprocessed */
	uint64_t heard;         /* uv_now when its last bytes were seen */
} dp_listener_slot;

typedef struct dp_listener_config {
	const char *tag;      /* log subsystem of the user ("conn", "httpd");
			       * must outlive the listener; NULL -> "listener" */
	size_t max_conns;     /* live connections at most; 0 = no limit */
	size_t max_pending;   /* pending connections at most; 0 = no
			       * separate limit (needs on_evict) */
	size_t max_pending_per_addr; /* pending connections from one address
			       * at most; 0 = no limit (needs on_evict) */
	uint32_t stall_ms;    /* an active pending connection whose last
			       * bytes are this old (none waiting unread) is
			       * stalled; younger ones make progress, and the
			       * per-address limit never evicts them.  0: no
			       * such protection, every active one may go */
	/* Pending connection s is evicted: it no longer counts; close it at
	 * once (its dp_listener_release, when it comes, does nothing).
	 * Called from inside dp_listener_accept of another connection.
	 * Required with max_pending or max_pending_per_addr; with it set, a
	 * full max_conns evicts too. */
	void (*on_evict)(dp_listener *l, dp_listener_slot *s, void *data);
	/* Optional (NULL: not kept): gauge of pending connections, counters
	 * of evicted and refused ones. */
	struct dp_metric *m_pending, *m_evicted, *m_refused;
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
 * owns, recorded in slot (the caller's, zeroed or released before).  On
 * success the connection is live and pending (other pending connections
 * may have been evicted to make room), and peer (peer_size bytes; may be
 * NULL) receives the peer's address as dp_addr_format writes it ("" if
 * unknown).
 * Errors: the libuv accept error (negative errno), or -EAGAIN when
 * max_conns settled connections leave no room, or when its address has
 * max_pending_per_addr pending that all make progress (refused, logged);
 * the connection is not counted.  Either way tcp stays the caller's to
 * uv_close. */
int dp_listener_accept(dp_listener *l, uv_tcp_t *tcp, dp_listener_slot *slot, char *peer,
		       size_t peer_size);

/* The pending connection of slot has received bytes (or the user starts
 * processing those it held): it is evicted only after the idle ones, and
 * with cfg->stall_ms it makes progress for the next stall_ms.  No-op for
 * one settled or evicted. */
void dp_listener_progress(dp_listener *l, dp_listener_slot *slot);

/* The user has read bytes of the pending connection of slot and keeps
 * them unprocessed for now (it waits for its turn): it makes progress,
 * however long ago they came, until the next dp_listener_progress.
 * No-op unless pending. */
void dp_listener_hold(dp_listener *l, dp_listener_slot *slot);

/* The connection of slot is authenticated: it stops counting against the
 * pending limits and is never evicted.  No-op unless pending. */
void dp_listener_settle(dp_listener *l, dp_listener_slot *slot);

/* The connection of slot is gone: it stops counting against max_conns
 * (and the pending limits).  Once per accepted connection, and never
 * after dp_listener_close; a no-op for an evicted one. */
void dp_listener_release(dp_listener *l, dp_listener_slot *slot);

/* The port actually bound. */
uint16_t dp_listener_port(const dp_listener *l);

/* Live connections (accepted and not yet released or evicted). */
size_t dp_listener_live(const dp_listener *l);
/* Pending connections (live and not settled). */
size_t dp_listener_pending(const dp_listener *l);
/* Connections evicted, and refused (closed at accept), since the start. */
uint64_t dp_listener_evicted(const dp_listener *l);
uint64_t dp_listener_refused(const dp_listener *l);

/* Stop accepting: cfg->on_close runs, then the socket is closed and the
 * listener freed from the loop (cfg->on_closed first).  Connections
 * already accepted are untouched.  The pointer is dead after this call. */
void dp_listener_close(dp_listener *l);

#endif
