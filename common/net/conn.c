/* SPDX-License-Identifier: Apache-2.0 */
#include "common/net/conn.h"
#include "common/core/error.h"
#include "common/core/log.h"
#include "common/net/addr.h"
#include "common/net/tls.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netdb.h>
#include <openssl/err.h>

enum state {
	ST_RESOLVING,   /* client: waiting for uv_getaddrinfo */
	ST_CONNECTING,  /* client: uv_tcp_connect in progress */
	ST_HANDSHAKE,
	ST_OPEN,
	ST_CLOSING,
};

/* One uv_write request with the ciphertext it carries, freed in the
 * write callback: libuv keeps a pointer to the buffer until then. */
struct wreq {
	uv_write_t req;
	uv_buf_t buf;
	size_t len;
	char data[];
};

#define DP_CONN_RBUF 65536
#define DP_CONN_WCHUNK (4u << 20)
/* Accepted connections whose TLS handshake runs at once, per listener.
 * A connection takes its turn with its first bytes; the others that have
 * sent some wait with them, reading no further, in arrival order
 * (docs/scale.md §2), and a silent one takes no turn at all. */
#define DP_CONN_HANDSHAKES_MAX 64

/* What only an outgoing connection needs, allocated with it: a server
 * holding thousands of accepted ones does not pay for it (docs/scale.md). */
struct client {
	uv_getaddrinfo_t gai;
	uv_connect_t creq;
	struct addrinfo *ai_list, *ai_next;
	int last_err;
	uint16_t port;
	char host[256];
};

struct dp_conn {
	uv_loop_t *loop;
	uv_tcp_t tcp;
	uv_timer_t timer;       /* handshake timeout (server: its turn too), then close linger */
	uv_shutdown_t sreq;
	struct client *cl;      /* outgoing connections only */

	SSL_CTX *ctx;
	SSL *ssl;
	BIO *rbio, *wbio;       /* owned by ssl */
	dp_frame_decoder dec;
	dp_frame_limits lim;

	dp_conn_callbacks cb;
	void *data;
	void *user;             /* cfg->user: the caller's, never read here */
	uint32_t max_frame;
	size_t max_wq;
	size_t wq;
	uint32_t hs_timeout_ms, linger_ms;

	enum state state;
	int is_server;
	int connected;          /* tcp has a peer: reads and writes allowed */
	int reading;
	int ssl_fatal;          /* OpenSSL reported a fatal error: no SSL_shutdown */
	int bios_renewed;       /* the handshake's BIOs replaced (renew_bios) */
	int tcp_init;           /* tcp handle initialised and not closed */
	int tcp_retrying;       /* tcp closing to try the next address */
	int handles_open;       /* handles whose close callback is still due */
	int gai_pending;
	int final;              /* uv_close issued */
	int finished;           /* on_close called */

	int reason;
	char detail[256];
	char peer_id[DP_TLS_ID_MAX + 1];
	char peer_addr[DP_ADDR_TEXT_MAX];

	struct server *srv;     /* accepting listener's state, until it closes */
	dp_listener *listener;  /* counts this connection, until it closes */
	dp_listener_slot slot;  /* its record there */
	dp_conn *lprev, *lnext; /* in srv->conns */
	dp_conn *wprev, *wnext; /* in srv's wait queue, while waiting */
	int waiting;            /* has spoken, waits for its turn (hs_turn) */
	int hs_counted;         /* counted in srv->hs_active */
	int kick;               /* the timer's next expiry is its turn, not a timeout */
};

/* Socket reads land here and are moved into the connection's read BIO
 * before the read callback returns; SSL_read then puts plaintext here,
 * which deliver consumes before returning to the loop.  libuv runs one
 * read callback at a time per thread and nothing in the callbacks reads
 * into it, so one buffer per thread serves every connection. */
static _Thread_local char read_buf[DP_CONN_RBUF];

static void drive(dp_conn *c);
static void begin_close(dp_conn *c, int reason, int graceful, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void final_close(dp_conn *c);
static void on_timer(uv_timer_t *t);
static void try_connect(dp_conn *c);
static void server_unlink(dp_conn *c);
static int hs_turn(dp_conn *c);
static void hs_resume(dp_conn *c);
static void hs_end(dp_conn *c);

/* ---- helpers ------------------------------------------------------------ */

static void tune_tcp(dp_conn *c)
{
	/* Small request/response messages: no Nagle delay.  Keepalive finds
	 * peers that vanished without a FIN while the protocol is idle. */
	uv_tcp_nodelay(&c->tcp, 1);
	uv_tcp_keepalive(&c->tcp, 1, 60);
}

/* on_close, once: at the end, or when a graceful close starts draining
 * (on_shutdown) -- the user is done with the connection then, and a
 * lingering socket must not hold its identity or delay its reconnection. */
static void report_close(dp_conn *c)
{
	void (*cb)(dp_conn *, int, const char *) = c->cb.on_close;

	c->cb.on_close = NULL;
	c->cb.on_message = NULL;
	if (cb)
		cb(c, c->reason, c->detail);
}

static void maybe_finish(dp_conn *c)
{
	if (c->handles_open > 0 || c->gai_pending || c->tcp_retrying || c->finished)
		return;
	c->finished = 1;
	server_unlink(c);
	if (c->listener != NULL)
		dp_listener_release(c->listener, &c->slot);
	c->listener = NULL;
	report_close(c);
	SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
	dp_frame_decoder_free(&c->dec);
	if (c->cl && c->cl->ai_list)
		uv_freeaddrinfo(c->cl->ai_list);
	free(c->cl);
	free(c);
}

static void on_handle_closed(uv_handle_t *h)
{
	dp_conn *c = h->data;

	if (h == (uv_handle_t *)&c->tcp)
		c->tcp_init = 0;
	c->handles_open--;
	maybe_finish(c);
}

static void on_write(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	dp_conn *c = req->data;

	c->wq -= w->len;
	free(w);
	if (status < 0 && status != UV_ECANCELED)
		begin_close(c, status, 0, "write to %s: %s", c->peer_addr, uv_strerror(status));
}

/* Move everything OpenSSL produced into write requests.  Returns -1 if the
 * connection had to be closed (socket error, write queue over its cap). */
static int flush_output(dp_conn *c)
{
	for (;;) {
		size_t pending = BIO_ctrl_pending(c->wbio);
		struct wreq *w;
		int n, r;

		if (pending == 0)
			break;
		if (!c->connected || c->final) {
			(void)BIO_reset(c->wbio);
			return 0;
		}
		if (pending > DP_CONN_WCHUNK)
			pending = DP_CONN_WCHUNK;
		w = malloc(sizeof(*w) + pending);
		if (w == NULL) {
			begin_close(c, DP_ENOMEM, 0, "out of memory queueing %zu bytes", pending);
			return -1;
		}
		n = BIO_read(c->wbio, w->data, (int)pending);
		if (n <= 0) {
			free(w);
			break;
		}
		w->len = (size_t)n;
		w->buf = uv_buf_init(w->data, (unsigned)n);
		w->req.data = c;
		r = uv_write(&w->req, (uv_stream_t *)&c->tcp, &w->buf, 1, on_write);
		if (r < 0) {
			free(w);
			begin_close(c, r, 0, "write to %s: %s", c->peer_addr, uv_strerror(r));
			return -1;
		}
		c->wq += w->len;
		if (c->wq > c->max_wq) {
			begin_close(c, -ENOBUFS, 0, "write queue over %zu bytes: peer %s is not reading",
				  c->max_wq, c->peer_addr);
			return -1;
		}
	}
	return 0;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

/* Our FIN is queued.  Closing now would be wrong if the peer sent anything
 * we have not read (a request crossing our last message): the kernel then
 * answers with a reset and drops our unacknowledged data, the Done or
 * Goodbye included.  So read and discard until the peer's EOF, within the
 * linger already running.  The user hears on_close now: draining is this
 * module's business. */
static void on_shutdown(uv_shutdown_t *req, int status)
{
	dp_conn *c = req->data;

	if (status < 0 || c->final ||
	    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0) {
		final_close(c);
		return;
	}
	c->reading = 1;
	report_close(c);
}

static void final_close(dp_conn *c)
{
	if (c->final)
		return;
	c->final = 1;
	if (c->reading) {
		uv_read_stop((uv_stream_t *)&c->tcp);
		c->reading = 0;
	}
	uv_timer_stop(&c->timer);
	c->kick = 0;
	if (c->tcp_init && !c->tcp_retrying && !uv_is_closing((uv_handle_t *)&c->tcp))
		uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
	if (!uv_is_closing((uv_handle_t *)&c->timer))
		uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

/* graceful: deliver what is queued (close_notify, a TLS alert, the last
 * messages) before closing the socket, waiting at most linger_ms.  Not for
 * transport failures or a peer that does not read. */
static void begin_close(dp_conn *c, int reason, int graceful, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (c->state == ST_CLOSING) {
		if (!graceful)
			final_close(c);
		return;
	}
	c->state = ST_CLOSING;
	hs_end(c);
	c->reason = reason;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
	DP_DEBUG("conn", "closing peer=%s id=%s reason=%d detail=\"%s\"", c->peer_addr,
		 c->peer_id, reason, c->detail);
	uv_timer_stop(&c->timer);
	c->kick = 0;
	if (c->gai_pending)
		uv_cancel((uv_req_t *)&c->cl->gai);
	if (c->reading) {
		uv_read_stop((uv_stream_t *)&c->tcp);
		c->reading = 0;
	}
	if (graceful && c->connected && !c->final) {
		if (c->ssl && SSL_is_init_finished(c->ssl) && !c->ssl_fatal) {
			ERR_clear_error();
			(void)SSL_shutdown(c->ssl);
			ERR_clear_error();
		}
		/* close_notify, or the alert of a failed handshake */
		if (flush_output(c) < 0 || c->final)
			return;
		/* OpenSSL keeps the record buffer an alert was written with
		 * (SSL_MODE_RELEASE_BUFFERS covers application data only), and
		 * nothing is read or written through it any more: free it now,
		 * not when the linger ends (docs/scale.md §2). */
		if (c->ssl)
			(void)SSL_free_buffers(c->ssl);
		c->sreq.data = c;
		r = uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown);
		if (r == 0) {
			uv_timer_start(&c->timer, on_timer, c->linger_ms, 0);
			return;
		}
	}
	final_close(c);
}

static void on_timer(uv_timer_t *t)
{
	dp_conn *c = t->data;

	if (c->kick) {
		hs_resume(c);
		return;
	}
	if (c->state == ST_CLOSING) {
		final_close(c);
		return;
	}
	if (c->state == ST_RESOLVING || c->state == ST_CONNECTING)
		begin_close(c, -ETIMEDOUT, 0, "connection to %s:%u not established within %u ms",
			  c->cl->host, c->cl->port, c->hs_timeout_ms);
	else
		begin_close(c, -ETIMEDOUT, 0, "TLS handshake with %s not completed within %u ms",
			  c->peer_addr, c->hs_timeout_ms);
}

/* ---- receiving ------------------------------------------------------------ */

static int deliver(dp_conn *c, const uint8_t *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		Dpasync__Envelope *m = NULL;
		size_t used = 0;
		int r;

		r = dp_frame_decode(&c->dec, p + off, n - off, &used, &m);
		if (r < 0) {
			begin_close(c, r, 1, "from %s: %s", c->peer_addr, dp_error_detail(r));
			return -1;
		}
		off += used;
		if (m == NULL)
			continue;
		r = dp_frame_validate(m, &c->lim);
		if (r < 0) {
			begin_close(c, r, 1, "invalid %s message from %s: %s", dp_frame_kind(m),
				  c->peer_addr, dp_error_detail(r));
			dp_frame_msg_free(m);
			return -1;
		}
		if (c->cb.on_message)
			c->cb.on_message(c, m);
		else
			dp_frame_msg_free(m);
		if (c->state != ST_OPEN)
			return -1;
	}
	return 0;
}

static void tls_failed(dp_conn *c, const char *what)
{
	char eb[256];

	dp_tls_error_string(c->ssl, eb, sizeof(eb));
	c->ssl_fatal = 1;
	/* graceful: let the alert OpenSSL queued reach the peer. */
	begin_close(c, DP_ETLS, 1, "%s with %s: %s", what, c->peer_addr, eb);
}

static int handshake_done(dp_conn *c)
{
	int r;

	hs_end(c);
	uv_timer_stop(&c->timer);
	r = dp_tls_peer_identity(c->ssl, c->peer_id, sizeof(c->peer_id));
	if (r < 0) {
		c->peer_id[0] = '\0';
		begin_close(c, DP_ETLS, 1, "%s: %s", c->peer_addr, dp_error_detail(r));
		return -1;
	}
	c->state = ST_OPEN;
	DP_DEBUG("conn", "handshake done peer=%s id=%s", c->peer_addr, c->peer_id);
	if (c->cb.on_handshake && c->cb.on_handshake(c, c->peer_id) != 0)
		begin_close(c, DP_EPROTO, 1, "peer '%s' at %s not admitted", c->peer_id, c->peer_addr);
	/* Admitted: it leaves the pending limits and can no longer be evicted. */
	if (c->state == ST_OPEN && c->listener != NULL)
		dp_listener_settle(c->listener, &c->slot);
	return c->state == ST_OPEN ? 0 : -1;
}

/* A memory BIO keeps its largest buffer for good, and the handshake's
 * flights (certificates) are ten times the size of any later message.
 * Once the handshake is over and both BIOs are empty, replace them with
 * fresh ones: about 2 KB less per idle connection (docs/scale.md §2).
 * On failure the old ones stay, which is only the memory not saved. */
static void renew_bios(dp_conn *c)
{
	BIO *r, *w;

	c->bios_renewed = 1;
	if (BIO_ctrl_pending(c->rbio) != 0 || BIO_ctrl_pending(c->wbio) != 0)
		return;
	r = BIO_new(BIO_s_mem());
	w = BIO_new(BIO_s_mem());
	if (r == NULL || w == NULL) {
		BIO_free(r);
		BIO_free(w);
		ERR_clear_error();
		return;
	}
	BIO_set_mem_eof_return(r, -1);
	SSL_set_bio(c->ssl, r, w);   /* frees the old pair */
	c->rbio = r;
	c->wbio = w;
}

static void drive(dp_conn *c)
{
	int r, e;

	if (c->state == ST_HANDSHAKE) {
		ERR_clear_error();
		r = SSL_do_handshake(c->ssl);
		if (r != 1) {
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ) {
				flush_output(c);
				return;
			}
			tls_failed(c, "TLS handshake");
			return;
		}
		if (flush_output(c) < 0)
			return;
		if (handshake_done(c) < 0)
			return;
	}
	while (c->state == ST_OPEN) {
		ERR_clear_error();
		r = SSL_read(c->ssl, read_buf, sizeof(read_buf));
		if (r > 0) {
			if (deliver(c, (const uint8_t *)read_buf, (size_t)r) < 0)
				return;
			continue;
		}
		e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_WANT_READ) {
			if (flush_output(c) == 0 && !c->bios_renewed && c->state == ST_OPEN)
				renew_bios(c);
			return;
		}
		if (e == SSL_ERROR_ZERO_RETURN) {
			if (c->dec.hdr_have > 0)
				begin_close(c, DP_EPROTO, 1, "%s closed the connection inside a frame",
					  c->peer_addr);
			else
				begin_close(c, 0, 1, "peer closed the connection");
			return;
		}
		tls_failed(c, "TLS");
		return;
	}
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	buf->base = read_buf;
	buf->len = sizeof(read_buf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	dp_conn *c = s->data;

	if (nread == 0)
		return;
	if (c->state == ST_CLOSING) {
		/* draining after our shutdown (on_shutdown) */
		if (nread < 0)
			final_close(c);
		return;
	}
	if (nread > 0) {
		if (c->state == ST_HANDSHAKE && c->listener != NULL)
			dp_listener_progress(c->listener, &c->slot);
		if (BIO_write(c->rbio, buf->base, (int)nread) != (int)nread) {
			ERR_clear_error();
			begin_close(c, DP_ENOMEM, 0, "out of memory buffering %zd bytes", nread);
			return;
		}
		if (c->state == ST_HANDSHAKE && c->srv != NULL && !c->hs_counted && hs_turn(c) != 0)
			return;
		drive(c);
		return;
	}
	if (nread == UV_EOF) {
		if (c->state == ST_HANDSHAKE)
			begin_close(c, DP_ETLS, 0, "%s closed the connection during the TLS handshake",
				  c->peer_addr);
		else if (c->dec.hdr_have > 0)
			begin_close(c, DP_EPROTO, 0, "%s closed the connection inside a frame",
				  c->peer_addr);
		else
			begin_close(c, 0, 1, "peer closed the connection");
		return;
	}
	begin_close(c, (int)nread, 0, "read from %s: %s", c->peer_addr, uv_strerror((int)nread));
}

static int start_handshake(dp_conn *c)
{
	int r;

	c->connected = 1;
	c->state = ST_HANDSHAKE;
	tune_tcp(c);
	r = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	if (r < 0) {
		begin_close(c, r, 0, "read from %s: %s", c->peer_addr, uv_strerror(r));
		return r;
	}
	c->reading = 1;
	if (!c->is_server)
		drive(c);   /* sends the ClientHello */
	return 0;
}

/* ---- construction ------------------------------------------------------- */

static int conn_new(uv_loop_t *loop, const dp_conn_config *cfg, int is_server,
			dp_conn **out)
{
	dp_conn *c;

	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory for a connection");
	c->loop = loop;
	c->is_server = is_server;
	c->cb = cfg->cb;
	c->data = cfg->data;
	c->user = cfg->user;
	c->max_frame = cfg->max_frame ? cfg->max_frame : DP_FRAME_MAX_DEFAULT;
	if (c->max_frame > DP_FRAME_MAX_LIMIT)
		c->max_frame = DP_FRAME_MAX_LIMIT;
	c->max_wq = cfg->max_write_queue ? cfg->max_write_queue
					 : 2 * (size_t)c->max_frame + (1u << 20);
	c->hs_timeout_ms = cfg->handshake_timeout_ms ? cfg->handshake_timeout_ms
						      : DP_CONN_HANDSHAKE_TIMEOUT_MS_DEFAULT;
	c->linger_ms = cfg->close_linger_ms ? cfg->close_linger_ms
					    : DP_CONN_CLOSE_LINGER_MS_DEFAULT;
	dp_conn_set_limits(c, cfg->limits);
	dp_frame_decoder_init(&c->dec, c->max_frame);

	ERR_clear_error();
	c->ssl = SSL_new(cfg->ctx);
	c->rbio = BIO_new(BIO_s_mem());
	c->wbio = BIO_new(BIO_s_mem());
	if (c->ssl == NULL || c->rbio == NULL || c->wbio == NULL) {
		char eb[256];

		dp_tls_error_string(NULL, eb, sizeof(eb));
		SSL_free(c->ssl);
		BIO_free(c->rbio);
		BIO_free(c->wbio);
		free(c);
		return dp_error_set(DP_ETLS, "cannot create a TLS session: %s", eb);
	}
	/* An empty read BIO means "try again", not end of stream. */
	BIO_set_mem_eof_return(c->rbio, -1);
	SSL_set_bio(c->ssl, c->rbio, c->wbio);
	if (is_server)
		SSL_set_accept_state(c->ssl);
	else
		SSL_set_connect_state(c->ssl);
	SSL_CTX_up_ref(cfg->ctx);
	c->ctx = cfg->ctx;
	*out = c;
	return 0;
}

static void conn_discard(dp_conn *c)
{
	SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
	dp_frame_decoder_free(&c->dec);
	free(c->cl);
	free(c);
}

static void init_timer(dp_conn *c)
{
	uv_timer_init(c->loop, &c->timer);
	c->timer.data = c;
	c->handles_open++;
}

static void start_timer(dp_conn *c)
{
	init_timer(c);
	uv_timer_start(&c->timer, on_timer, c->hs_timeout_ms, 0);
}

/* ---- client ----------------------------------------------------------------- */

static void on_retry_closed(uv_handle_t *h)
{
	dp_conn *c = h->data;

	c->tcp_init = 0;
	c->tcp_retrying = 0;
	c->handles_open--;
	if (c->state == ST_CLOSING) {
		final_close(c);
		maybe_finish(c);
		return;
	}
	try_connect(c);
}

static void on_connect(uv_connect_t *req, int status)
{
	dp_conn *c = req->data;

	if (c->state == ST_CLOSING)
		return;
	if (status < 0) {
		c->cl->last_err = status;
		DP_DEBUG("conn", "connect to %s failed: %s", c->peer_addr, uv_strerror(status));
		if (c->cl->ai_next != NULL) {
			c->tcp_retrying = 1;
			uv_close((uv_handle_t *)&c->tcp, on_retry_closed);
			return;
		}
		begin_close(c, status, 0, "cannot connect to %s:%u (%s): %s", c->cl->host,
			  c->cl->port, c->peer_addr, uv_strerror(status));
		return;
	}
	start_handshake(c);
}

static void try_connect(dp_conn *c)
{
	struct client *cl = c->cl;
	int r;

	while (cl->ai_next != NULL) {
		struct addrinfo *ai = cl->ai_next;

		cl->ai_next = ai->ai_next;
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		dp_addr_format(ai->ai_addr, c->peer_addr, sizeof(c->peer_addr));
		r = uv_tcp_init(c->loop, &c->tcp);
		if (r < 0) {
			cl->last_err = r;
			continue;
		}
		c->tcp.data = c;
		c->tcp_init = 1;
		c->handles_open++;
		cl->creq.data = c;
		r = uv_tcp_connect(&cl->creq, &c->tcp, ai->ai_addr, on_connect);
		if (r == 0) {
			c->state = ST_CONNECTING;
			return;
		}
		cl->last_err = r;
		c->tcp_retrying = 1;
		uv_close((uv_handle_t *)&c->tcp, on_retry_closed);
		return;
	}
	begin_close(c, cl->last_err ? cl->last_err : DP_ENOENT, 0, "cannot connect to %s:%u: %s",
		  cl->host, cl->port, cl->last_err ? uv_strerror(cl->last_err) : "no usable address");
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	dp_conn *c = req->data;

	c->gai_pending = 0;
	if (c->state == ST_CLOSING) {
		if (res)
			uv_freeaddrinfo(res);
		maybe_finish(c);
		return;
	}
	if (status < 0) {
		begin_close(c, DP_ENOENT, 0, "cannot resolve '%s': %s", c->cl->host,
			  uv_strerror(status));
		return;
	}
	c->cl->ai_list = c->cl->ai_next = res;
	try_connect(c);
}

int dp_conn_connect(uv_loop_t *loop, const dp_conn_config *cfg, const char *host,
		    uint16_t port, const char *server_name, dp_conn **out)
{
	struct addrinfo hints;
	char portstr[8];
	dp_conn *c;
	int r;

	DP_REQUIRE(loop != NULL && cfg != NULL && out != NULL);
	if (cfg->ctx == NULL || host == NULL || *host == '\0' || port == 0)
		return dp_error_set(DP_EINVAL, "connect: need a TLS context, a host and a port");
	if (strlen(host) >= sizeof(((struct client *)0)->host))
		return dp_error_set(DP_EINVAL, "connect: host name too long");
	r = conn_new(loop, cfg, 0, &c);
	if (r < 0)
		return r;
	c->cl = calloc(1, sizeof(*c->cl));
	if (c->cl == NULL) {
		conn_discard(c);
		return dp_error_set(DP_ENOMEM, "out of memory for a connection");
	}
	r = dp_tls_client_setup(c->ssl, server_name ? server_name : host);
	if (r < 0) {
		conn_discard(c);
		return r;
	}
	snprintf(c->cl->host, sizeof(c->cl->host), "%s", host);
	c->cl->port = port;
	snprintf(portstr, sizeof(portstr), "%u", port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	c->cl->gai.data = c;
	r = uv_getaddrinfo(loop, &c->cl->gai, on_resolved, host, portstr, &hints);
	if (r < 0) {
		conn_discard(c);
		return dp_error_set(r, "cannot resolve '%s': %s", host, uv_strerror(r));
	}
	c->gai_pending = 1;
	c->state = ST_RESOLVING;
	start_timer(c);
	*out = c;
	return 0;
}

/* ---- server ---------------------------------------------------------------- */

/* What a TLS listener adds to the TCP one: the configuration every accepted
 * connection starts with, and the list of its connections, so that
 * closing the listener can cancel those still in their handshake. */
struct server {
	uv_loop_t *loop;
	dp_conn_config cfg;     /* cfg.limits points at lim; cfg.ctx referenced */
	dp_frame_limits lim;
	dp_conn *conns;
	size_t hs_active;       /* handshakes running (DP_CONN_HANDSHAKES_MAX) */
	dp_conn *wait_head, *wait_tail;   /* accepted, waiting to start theirs */
};

static void wait_unlink(dp_conn *c)
{
	struct server *srv = c->srv;

	if (!c->waiting)
		return;
	c->waiting = 0;
	if (c->wprev)
		c->wprev->wnext = c->wnext;
	else
		srv->wait_head = c->wnext;
	if (c->wnext)
		c->wnext->wprev = c->wprev;
	else
		srv->wait_tail = c->wprev;
	c->wprev = c->wnext = NULL;
}

/* A storm of connections (thousands of owners reconnecting at once) would
 * otherwise run all their handshakes at once, each holding OpenSSL's
 * handshake state (some 30 KB) until its peer answers: the peak is then
 * the sum, and the heap stays fragmented after it.  Running at most
 * DP_CONN_HANDSHAKES_MAX at a time bounds that, while the waiting ones
 * cost their struct, their first bytes and a descriptor.  A turn is
 * taken by a peer's first bytes, not by the accept, so silent strangers
 * hold none (the listener evicts them first, docs/protocol.md §6).  The
 * handshake timeout runs again from the turn: the wait is the server's,
 * and a storm of owners larger than a few timeouts' worth of handshakes
 * would otherwise time out its own tail.  The pending limits bound how
 * many wait (listener.h).
 *
 * c (server, in its handshake, not counted) has read its first bytes:
 * 0 when it has its turn now (the caller drives it), 1 when it waits. */
static int hs_turn(dp_conn *c)
{
	struct server *srv = c->srv;

	if (srv->hs_active < DP_CONN_HANDSHAKES_MAX) {
		c->hs_counted = 1;
		srv->hs_active++;
		uv_timer_start(&c->timer, on_timer, c->hs_timeout_ms, 0);
		return 0;
	}
	if (c->reading) {
		uv_read_stop((uv_stream_t *)&c->tcp);
		c->reading = 0;
	}
	uv_timer_stop(&c->timer);
	c->waiting = 1;
	c->wprev = srv->wait_tail;
	if (srv->wait_tail)
		srv->wait_tail->wnext = c;
	else
		srv->wait_head = c;
	srv->wait_tail = c;
	if (c->listener != NULL)
		dp_listener_hold(c->listener, &c->slot);
	return 1;
}

/* The turn of waiting connection c came (hs_end counted it and set the
 * kick): from the loop, never from inside hs_end, whose callers do not
 * expect the user's callbacks that driving the handshake can run. */
static void hs_resume(dp_conn *c)
{
	int r;

	c->kick = 0;
	if (c->state != ST_HANDSHAKE)
		return;
	uv_timer_start(&c->timer, on_timer, c->hs_timeout_ms, 0);
	if (c->listener != NULL)
		dp_listener_progress(c->listener, &c->slot);
	r = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	if (r < 0) {
		begin_close(c, r, 0, "read from %s: %s", c->peer_addr, uv_strerror(r));
		return;
	}
	c->reading = 1;
	drive(c);
}

/* c's handshake ended (done, failed or abandoned): start waiting ones. */
static void hs_end(dp_conn *c)
{
	struct server *srv = c->srv;

	if (srv == NULL)
		return;
	wait_unlink(c);
	if (!c->hs_counted)
		return;
	c->hs_counted = 0;
	srv->hs_active--;
	while (srv->hs_active < DP_CONN_HANDSHAKES_MAX && srv->wait_head != NULL) {
		dp_conn *w = srv->wait_head;

		wait_unlink(w);
		w->hs_counted = 1;
		srv->hs_active++;
		w->kick = 1;
		uv_timer_start(&w->timer, on_timer, 0, 0);
	}
}

static void server_unlink(dp_conn *c)
{
	struct server *srv = c->srv;

	if (srv == NULL)
		return;
	hs_end(c);
	if (c->lprev)
		c->lprev->lnext = c->lnext;
	else
		srv->conns = c->lnext;
	if (c->lnext)
		c->lnext->lprev = c->lprev;
	c->lprev = c->lnext = NULL;
	c->srv = NULL;
}

static int on_connection(dp_listener *l, void *data)
{
	struct server *srv = data;
	dp_conn *c;
	int r;

	r = conn_new(srv->loop, &srv->cfg, 1, &c);
	if (r < 0)
		return r;
	r = uv_tcp_init(srv->loop, &c->tcp);
	if (r < 0) {
		conn_discard(c);
		return dp_error_set(r, "%s", uv_strerror(r));
	}
	c->tcp.data = c;
	c->tcp_init = 1;
	c->handles_open++;
	init_timer(c);
	c->srv = srv;
	c->lnext = srv->conns;
	if (srv->conns)
		srv->conns->lprev = c;
	srv->conns = c;
	c->state = ST_HANDSHAKE;
	r = dp_listener_accept(l, &c->tcp, &c->slot, c->peer_addr, sizeof(c->peer_addr));
	if (r < 0) {
		begin_close(c, r, 0, "accept: %s", dp_error_detail(r));
		return 0;
	}
	c->listener = l;
	/* Read at once, so that the listener sees who speaks; the turn among
	 * the handshakes run at once comes with the first bytes (hs_turn).
	 * Until then the handshake timeout bounds the silence. */
	if (start_handshake(c) == 0)
		uv_timer_start(&c->timer, on_timer, c->hs_timeout_ms, 0);
	return 0;
}

/* The listener needs the slot of c, still in its handshake, for a newer
 * connection: close it at once, without waiting on the peer. */
static void on_evict(dp_listener *l, dp_listener_slot *s, void *data)
{
	dp_conn *c = (dp_conn *)((char *)s - offsetof(dp_conn, slot));

	if (c->state != ST_CLOSING)
		begin_close(c, -ECONNABORTED, 0, "%s evicted during the TLS handshake to make room "
			  "for a newer connection", c->peer_addr);
	else if (!c->final)
		final_close(c);
}

/* From dp_listener_close: the connections forget the listener; those
 * still in their handshake are cancelled. */
static void on_listener_close(dp_listener *l, void *data)
{
	struct server *srv = data;
	dp_conn *c = srv->conns, *next;

	srv->wait_head = srv->wait_tail = NULL;
	for (; c != NULL; c = next) {
		next = c->lnext;
		c->waiting = c->hs_counted = 0;
		c->wprev = c->wnext = NULL;
		c->srv = NULL;
		c->listener = NULL;
		c->lprev = c->lnext = NULL;
		if (c->state == ST_HANDSHAKE)   /* a closing one finishes its linger */
			begin_close(c, -ECANCELED, 0, "listener closed during the TLS handshake");
	}
	SSL_CTX_free(srv->cfg.ctx);
	free(srv);
}

int dp_conn_listen(uv_loop_t *loop, const dp_conn_config *cfg, const char *addr,
		   uint16_t port, dp_listener **out)
{
	dp_listener_config lc = { 0 };
	struct server *srv;
	int r;

	DP_REQUIRE(loop != NULL && cfg != NULL && out != NULL);
	if (cfg->ctx == NULL)
		return dp_error_set(DP_EINVAL, "listen: need a TLS context");
	srv = calloc(1, sizeof(*srv));
	if (srv == NULL)
		return dp_error_set(DP_ENOMEM, "listen: out of memory");
	srv->loop = loop;
	srv->cfg = *cfg;
	if (cfg->limits) {
		srv->lim = *cfg->limits;
		srv->cfg.limits = &srv->lim;
	}
	lc.tag = "conn";
	lc.max_conns = cfg->max_conns;
	lc.max_pending = cfg->max_pending;
	lc.max_pending_per_addr = cfg->max_pending_per_addr;
	lc.stall_ms = cfg->pending_stall_ms;
	if (cfg->max_pending != 0 || cfg->max_pending_per_addr != 0)
		lc.on_evict = on_evict;
	lc.m_pending = cfg->m_pending;
	lc.m_evicted = cfg->m_evicted;
	lc.m_refused = cfg->m_refused;
	lc.on_connection = on_connection;
	lc.on_close = on_listener_close;
	lc.data = srv;
	r = dp_listener_start(loop, &lc, addr, port, out);
	if (r < 0) {
		free(srv);
		return r;
	}
	SSL_CTX_up_ref(cfg->ctx);
	return 0;
}

/* ---- using a connection -------------------------------------------------- */

int dp_conn_send(dp_conn *c, const Dpasync__Envelope *msg)
{
	uint8_t *buf;
	size_t len;
	int r, n;

	DP_REQUIRE(c != NULL);
	if (c->state != ST_OPEN)
		return dp_error_set(DP_ESTATE, "send to %s: connection not open", c->peer_addr);
	DP_REQUIRE(msg != NULL);
	r = dp_frame_encode(msg, c->max_frame, &buf, &len);
	if (r < 0)
		return r;
	ERR_clear_error();
	/* Memory BIO: SSL_write takes the whole buffer (no partial writes
	 * without SSL_MODE_ENABLE_PARTIAL_WRITE) and never wants to wait. */
	n = SSL_write(c->ssl, buf, (int)len);
	free(buf);
	if (n <= 0) {
		tls_failed(c, "TLS write");
		return dp_error_set(DP_ETLS, "%s", c->detail);
	}
	if (flush_output(c) < 0)
		return dp_error_set(c->reason, "%s", c->detail);
	return 0;
}

void dp_conn_close(dp_conn *c)
{
	DP_REQUIRE(c != NULL);
	if (c->state == ST_CLOSING)
		return;
	begin_close(c, 0, 1, "closed locally");
}

void dp_conn_set_limits(dp_conn *c, const dp_frame_limits *lim)
{
	DP_REQUIRE(c != NULL);
	if (lim != NULL)
		c->lim = *lim;
	else
		memset(&c->lim, 0, sizeof(c->lim));
}

void *dp_conn_data(const dp_conn *c)
{
	DP_REQUIRE(c != NULL);
	return c->data;
}

void dp_conn_set_data(dp_conn *c, void *data)
{
	DP_REQUIRE(c != NULL);
	c->data = data;
}

void *dp_conn_user(const dp_conn *c)
{
	DP_REQUIRE(c != NULL);
	return c->user;
}

const char *dp_conn_peer_id(const dp_conn *c)
{
	DP_REQUIRE(c != NULL);
	return c->peer_id;
}

const char *dp_conn_peer_addr(const dp_conn *c)
{
	DP_REQUIRE(c != NULL);
	return c->peer_addr;
}

int dp_conn_is_server(const dp_conn *c)
{
	DP_REQUIRE(c != NULL);
	return c->is_server;
}

int dp_conn_is_open(const dp_conn *c)
{
	DP_REQUIRE(c != NULL);
	return c->state == ST_OPEN;
}

size_t dp_conn_write_queue(const dp_conn *c)
{
	DP_REQUIRE(c != NULL);
	return c->wq;
}
