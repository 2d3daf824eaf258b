/* SPDX-License-Identifier: Apache-2.0 */
/* A framed, mutually authenticated TLS 1.3 connection on a libuv loop
 * (docs/design.md §8, docs/style.md "TLS on libuv", docs/protocol.md).
 *
 * The socket is a uv_tcp_t; TLS runs in memory BIOs (ciphertext read from
 * the socket is written into the SSL's read BIO, everything OpenSSL
 * produces is moved from its write BIO into uv_write requests that own
 * their buffers).  Frames are dp_frame (4-byte length + Envelope); every
 * received message is checked with dp_frame_validate against the
 * connection's limits before it is delivered.
 *
 * Lifetime (libuv style): a dp_conn is created by dp_conn_connect() or by a
 * listener (dp_conn_listen), and freed by this module after on_close()
 * returns.  on_close is
 * called exactly once for every connection, including one that never
 * completed its handshake, and never synchronously from a dp_conn_* call:
 * always later, from the event loop.  After on_close the pointer is dead.
 * Until then every dp_conn_* function may be called, from any callback.
 *
 * TLS 1.3 note: a client completes its handshake (on_handshake) before the
 * server has checked the client's certificate.  If the server refuses it,
 * the client learns it as on_close(DP_ETLS, "...alert...") right after.
 * The protocol's first reply (Welcome to a Hello) is the confirmation.
 *
 * Everything runs on the loop's thread; nothing here is thread-safe.
 *
 * Sketch of a server (the learner):
 *
 *	static int on_hs(dp_conn *c, const char *id)
 *	{
 *		struct learner *L = dp_conn_user(c);      // cfg.user
 *		struct owner *o = owner_find(L, id);      // configured identities only
 *		if (o == NULL || o->conn != NULL)
 *			return -1;                        // refused: DP_EPROTO close
 *		o->conn = c;
 *		dp_conn_set_data(c, o);
 *		return 0;
 *	}
 *	static void on_msg(dp_conn *c, Dpasync__Envelope *m)
 *	{
 *		struct owner *o = dp_conn_data(c);        // m already validated
 *		... switch (m->msg_case) ..., dp_conn_send(c, &reply) ...
 *		dp_frame_msg_free(m);
 *	}
 *	static void on_cl(dp_conn *c, int reason, const char *detail)
 *	{
 *		struct owner *o = dp_conn_data(c);        // cfg.data if no handshake
 *		if (o != &lrn_unknown)
 *			o->conn = NULL;                   // c is freed after return
 *	}
 *	SSL_CTX *ctx;
 *	dp_tls_files f = { ca, cert, key };
 *	r = dp_tls_ctx_new(1, &f, &ctx);
 *	if (r < 0) fatal(dp_error_detail(r));
 *	dp_conn_config cfg = { .ctx = ctx, .cb = { on_hs, on_msg, on_cl },
 *			       .data = &lrn_unknown, .user = L, .max_frame = cfg_max_frame };
 *	dp_conn_listen(loop, &cfg, "::", 7443, &lst);     // lst: a listener.h object
 *	SSL_CTX_free(ctx);                                // the listener holds a reference
 *
 * A client (the owner) is the same with dp_tls_ctx_new(0, ...) and
 * dp_conn_connect(loop, &cfg, host, port, "learner", &c); it sends Hello
 * from on_handshake and reconnects (with backoff) from on_close. */
#ifndef DP_CONN_H
#define DP_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>
#include <openssl/ssl.h>

#include "common/net/frame.h"
#include "common/net/listener.h"

typedef struct dp_conn dp_conn;

typedef struct dp_conn_callbacks {
	/* The TLS handshake finished and the peer's certificate chain
	 * verified; peer_id is its identity (tls.h: the subject CN).  Return 0
	 * to keep the connection, non-zero to refuse the peer: the connection
	 * is then closed and on_close reports DP_EPROTO.  NULL accepts all. */
	int (*on_handshake)(dp_conn *c, const char *peer_id);
	/* One complete, validated message.  Ownership of msg passes to the
	 * callback: free it with dp_frame_msg_free().  NULL: messages are
	 * dropped. */
	void (*on_message)(dp_conn *c, Dpasync__Envelope *msg);
	/* The connection is gone.  reason 0: closed by dp_conn_close or by
	 * the peer in good order (close_notify or end of stream between
	 * frames).  Otherwise a negative code: DP_ETLS (handshake or TLS
	 * failure, alert from the peer), DP_EPROTO (bad frame or message,
	 * peer refused by on_handshake), -ETIMEDOUT (handshake timeout),
	 * -ENOBUFS (write queue over its cap), DP_ENOENT (name not
	 * resolved), -ECONNREFUSED and other -errno from the socket,
	 * -ECANCELED (listener closed during the handshake), -ECONNABORTED
	 * (evicted during the handshake for a newer connection: max_pending),
	 * -EAGAIN (refused at accept: max_conns, or max_pending_per_addr
	 * of handshakes making progress).  detail is a one-line human
	 * reason, valid during the call.  c is freed when the
	 * callback returns; only dp_conn_data/peer_id/peer_addr may be called
	 * on it inside.  NULL: no notification. */
	void (*on_close)(dp_conn *c, int reason, const char *detail);
} dp_conn_callbacks;

#define DP_CONN_HANDSHAKE_TIMEOUT_MS_DEFAULT 10000u
#define DP_CONN_CLOSE_LINGER_MS_DEFAULT      5000u

typedef struct dp_conn_config {
	SSL_CTX *ctx;               /* from dp_tls_ctx_new, of the right side;
				     * each connection takes its own reference */
	dp_conn_callbacks cb;
	void *data;                 /* initial dp_conn_data() of each connection */
	void *user;                 /* the caller's context, one for every
				     * connection made with this configuration
				     * (the server object, as libuv's
				     * uv_handle_t.data of a listening handle):
				     * dp_conn_user() in any callback.  This
				     * module never reads it. */
	uint32_t max_frame;         /* largest frame body sent or received;
				     * 0 -> DP_FRAME_MAX_DEFAULT */
	size_t max_write_queue;     /* ciphertext bytes handed to libuv and not
				     * yet reported written; above it the peer is
				     * deemed stuck and the connection closed
				     * (-ENOBUFS).  Bytes sent in one loop
				     * iteration count until the next, so keep
				     * bursts below it or watch
				     * dp_conn_write_queue().
				     * 0 -> 2 * max_frame + 1 MiB */
	uint32_t handshake_timeout_ms; /* from connect start (client) or from
				     * the handshake's start (server: at accept,
				     * or when its turn comes among the
				     * handshakes run at once) to the end of the
				     * handshake; 0 -> 10 s */
	uint32_t close_linger_ms;   /* how long a graceful close waits for the
				     * queued bytes to leave; 0 -> 5 s */
	const dp_frame_limits *limits; /* copied; NULL = defaults (p unknown) */
	size_t max_conns;           /* dp_conn_listen only: live connections
				     * (handshaking or open) at most; more are
				     * accepted and closed at once (listener.h),
				     * unless a pending one can be evicted;
				     * 0 = no limit */
	size_t max_pending;         /* dp_conn_listen only: connections whose
				     * handshake is not done or whose peer
				     * on_handshake has not admitted, at most; a
				     * new one evicts the oldest (idle before
				     * active; on_close -ECONNABORTED); 0 = no
				     * separate limit */
	size_t max_pending_per_addr;/* dp_conn_listen only: the same per peer
				     * address, evicting that address's
				     * oldest idle or stalled one, else
				     * refusing the new one (-EAGAIN);
				     * 0 = no limit */
	uint32_t pending_stall_ms;  /* dp_conn_listen only: listener.h's
				     * stall_ms (0: no protection) */
	struct dp_metric *m_pending, *m_evicted, *m_refused; /* dp_conn_listen
				     * only, optional: listener.h's gauge and
				     * counters */
} dp_conn_config;

/* ---- Client -------------------------------------------------------------- */

/* Start connecting to host:port (name or address literal, resolved with
 * uv_getaddrinfo; every address is tried in turn) and run the client
 * handshake, accepting only a server whose certificate matches
 * server_name (NULL -> host).  cfg->ctx must be a client context.  The
 * outcome arrives through cfg->cb: on_handshake, or on_close with the
 * reason.  The handshake timeout covers resolution and connection too.
 * *out receives the new connection (owned by this module as described
 * above).  loop, cfg and out must not be NULL.  Errors, synchronous and
 * with no callback (*out untouched):
 *   DP_EINVAL (NULL ctx, NULL or empty host, port 0), DP_ETLS (SSL
 *   object), DP_ENOMEM, or a libuv error (negative errno) if the
 *   resolution cannot start. */
int dp_conn_connect(uv_loop_t *loop, const dp_conn_config *cfg, const char *host,
		    uint16_t port, const char *server_name, dp_conn **out);

/* ---- Server -------------------------------------------------------------- */

/* Listen for TLS clients on addr:port, through listener.h
 * (dp_listener_start: IPv4 or IPv6 literal, host name, or NULL/""/"*" for
 * every address, dual-stack when possible; port 0 picks a free port, see
 * dp_listener_port).  Each accepted socket becomes a server-side dp_conn
 * with a copy of cfg (cfg->ctx must be a server context; the listener
 * takes its own reference); it reaches the caller through
 * cfg->cb.on_handshake.  At most cfg->max_conns connections live at once,
 * and at most cfg->max_pending (cfg->max_pending_per_addr from one
 * address) that are not yet admitted: a connection counts as pending
 * from accept until its on_handshake returns 0.
 * *out receives the listener: dp_listener_port gives the port bound, and
 * dp_listener_close stops it and closes the connections of this listener
 * that have not finished their handshake (on_close with -ECANCELED);
 * those that have (the caller saw them in on_handshake) stay open and are
 * the caller's to close.  loop, cfg and out must not be NULL.
 * Errors (*out untouched): DP_EINVAL (no TLS context), DP_ENOENT (addr
 * not resolved), DP_ENOMEM, or the libuv bind/listen error (e.g.
 * -EADDRINUSE) with a detail. */
int dp_conn_listen(uv_loop_t *loop, const dp_conn_config *cfg, const char *addr,
		   uint16_t port, dp_listener **out);

/* ---- Using a connection -------------------------------------------------- */

/* Every function below takes a connection between its creation and the
 * return of its on_close (never NULL). */

/* Encode, frame and encrypt msg, and queue the bytes for the socket; the
 * message is not kept (the caller still owns it; it may be NULL only when
 * the connection is not open).  Errors:
 *   DP_ESTATE   handshake not finished, or the connection is closing;
 *   DP_ERANGE   the message is larger than max_frame (connection stays);
 *   DP_ENOMEM;
 *   DP_ETLS, -ENOBUFS (write queue over its cap), or a socket error: the
 *               connection is being closed and on_close will follow. */
int dp_conn_send(dp_conn *c, const Dpasync__Envelope *msg);

/* Close gracefully: TLS close_notify, queued bytes handed to the kernel,
 * our FIN, then on_close(c, 0, ...) from the loop (with the reason of an
 * earlier failure if the connection was already closing).  The socket
 * itself stays open, reading and discarding, until the peer's EOF: closing
 * it with the peer's input unread would make the kernel reset the
 * connection and drop our last bytes still in flight (a Done crossing the
 * owner's next request).  All of it within close_linger_ms.  No message is
 * delivered after this call.  Idempotent; a no-op when already closing. */
void dp_conn_close(dp_conn *c);

/* Replace the limits incoming messages are validated against (copied;
 * NULL -> defaults), e.g. once p is known from Hello/Welcome. */
void dp_conn_set_limits(dp_conn *c, const dp_frame_limits *lim);

/* Per-connection user data (libuv's uv_handle_t.data): cfg->data at
 * first, then what dp_conn_set_data stored, e.g. the peer's record once
 * on_handshake admitted it.  Never read by this module. */
void *dp_conn_data(const dp_conn *c);
void dp_conn_set_data(dp_conn *c, void *data);
/* cfg->user of the configuration c was made with (dp_conn_connect or the
 * listener's dp_conn_listen): the caller's context, reached from the
 * callbacks without a process global. */
void *dp_conn_user(const dp_conn *c);
/* Verified peer identity; "" before the handshake completed. */
const char *dp_conn_peer_id(const dp_conn *c);
/* Peer socket address "1.2.3.4:5" or "[::1]:5"; "" while unknown. */
const char *dp_conn_peer_addr(const dp_conn *c);
/* 1 for a connection accepted by a listener, 0 for dp_conn_connect. */
int dp_conn_is_server(const dp_conn *c);
/* 1 between the end of the handshake and the start of the close. */
int dp_conn_is_open(const dp_conn *c);
/* Ciphertext bytes queued for the socket and not yet written. */
size_t dp_conn_write_queue(const dp_conn *c);

#endif
