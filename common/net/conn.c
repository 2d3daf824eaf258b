#include "common/net/conn.h"
#include "common/core/error.h"
#include "common/core/log.h"
#include "common/net/tls.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netdb.h>
#include <openssl/err.h>

enum dp__state {
	DP__RESOLVING,   /* client: waiting for uv_getaddrinfo */
	DP__CONNECTING,  /* client: uv_tcp_connect in progress */
	DP__HANDSHAKE,
	DP__OPEN,
	DP__CLOSING,
};

/* One uv_write request with the ciphertext it carries, freed in the
 * write callback: libuv keeps a pointer to the buffer until then. */
typedef struct dp__wreq {
	uv_write_t req;
	uv_buf_t buf;
	size_t len;
	char data[];
} dp__wreq;

#define DP__RBUF 65536
#define DP__WCHUNK (4u << 20)

struct dp_conn {
	uv_loop_t *loop;
	uv_tcp_t tcp;
	uv_timer_t timer;       /* handshake timeout, then close linger */
	uv_getaddrinfo_t gai;
	uv_connect_t creq;
	uv_shutdown_t sreq;
	struct addrinfo *ai_list, *ai_next;

	SSL_CTX *ctx;
	SSL *ssl;
	BIO *rbio, *wbio;       /* owned by ssl */
	dp_frame_decoder dec;
	dp_frame_limits lim;

	dp_conn_callbacks cb;
	void *data;
	uint32_t max_frame;
	size_t max_wq;
	size_t wq;
	uint32_t hs_timeout_ms, linger_ms;

	enum dp__state state;
	int is_server;
	int connected;          /* tcp has a peer: reads and writes allowed */
	int reading;
	int ssl_fatal;          /* OpenSSL reported a fatal error: no SSL_shutdown */
	int tcp_init;           /* tcp handle initialised and not closed */
	int tcp_retrying;       /* tcp closing to try the next address */
	int handles_open;       /* handles whose close callback is still due */
	int gai_pending;
	int final;              /* uv_close issued */
	int finished;           /* on_close called */
	int last_err;

	int reason;
	char detail[256];
	char peer_id[DP_TLS_ID_MAX + 1];
	char peer_addr[64];
	char host[256];
	uint16_t port;

	dp_listener *listener;
	dp_conn *lprev, *lnext;
};

/* Socket reads land here and are moved into the connection's read BIO
 * before the read callback returns; SSL_read then puts plaintext here,
 * which dp__deliver consumes before returning to the loop.  libuv runs one
 * read callback at a time per thread and nothing in the callbacks reads
 * into it, so one buffer per thread serves every connection. */
static _Thread_local char dp__rbuf[DP__RBUF];

struct dp_listener {
	uv_tcp_t tcp;
	uv_loop_t *loop;
	dp_conn_config cfg;     /* cfg.limits points at lim */
	dp_frame_limits lim;
	dp_conn *conns;
	size_t nconns;
	uint16_t port;
};

static void dp__drive(dp_conn *c);
static void dp__close(dp_conn *c, int reason, int graceful, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void dp__final_close(dp_conn *c);
static void dp__on_timer(uv_timer_t *t);
static void dp__try_connect(dp_conn *c);

/* ---- helpers ------------------------------------------------------------ */

static void dp__fmt_addr(const struct sockaddr *sa, char *out, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "";

	out[0] = '\0';
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		uv_ip4_name(s4, ip, sizeof(ip));
		snprintf(out, size, "%s:%u", ip, ntohs(s4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		uv_ip6_name(s6, ip, sizeof(ip));
		snprintf(out, size, "[%s]:%u", ip, ntohs(s6->sin6_port));
	}
}

static void dp__tune_tcp(dp_conn *c)
{
	/* Small request/response messages: no Nagle delay.  Keepalive finds
	 * peers that vanished without a FIN while the protocol is idle. */
	uv_tcp_nodelay(&c->tcp, 1);
	uv_tcp_keepalive(&c->tcp, 1, 60);
}

static void dp__listener_unlink(dp_conn *c)
{
	dp_listener *l = c->listener;

	if (l == NULL)
		return;
	if (c->lprev)
		c->lprev->lnext = c->lnext;
	else
		l->conns = c->lnext;
	if (c->lnext)
		c->lnext->lprev = c->lprev;
	c->lprev = c->lnext = NULL;
	c->listener = NULL;
	l->nconns--;
}

static void dp__maybe_finish(dp_conn *c)
{
	if (c->handles_open > 0 || c->gai_pending || c->tcp_retrying || c->finished)
		return;
	c->finished = 1;
	dp__listener_unlink(c);
	if (c->cb.on_close)
		c->cb.on_close(c, c->reason, c->detail);
	SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
	dp_frame_decoder_free(&c->dec);
	if (c->ai_list)
		uv_freeaddrinfo(c->ai_list);
	free(c);
}

static void dp__on_handle_closed(uv_handle_t *h)
{
	dp_conn *c = h->data;

	if (h == (uv_handle_t *)&c->tcp)
		c->tcp_init = 0;
	c->handles_open--;
	dp__maybe_finish(c);
}

static void dp__on_write(uv_write_t *req, int status)
{
	dp__wreq *w = (dp__wreq *)req;
	dp_conn *c = req->data;

	c->wq -= w->len;
	free(w);
	if (status < 0 && status != UV_ECANCELED)
		dp__close(c, status, 0, "write to %s: %s", c->peer_addr, uv_strerror(status));
}

/* Move everything OpenSSL produced into write requests.  Returns -1 if the
 * connection had to be closed (socket error, write queue over its cap). */
static int dp__flush(dp_conn *c)
{
	size_t pending;

	while ((pending = BIO_ctrl_pending(c->wbio)) > 0) {
		dp__wreq *w;
		int n, r;

		if (!c->connected || c->final) {
			(void)BIO_reset(c->wbio);
			return 0;
		}
		if (pending > DP__WCHUNK)
			pending = DP__WCHUNK;
		w = malloc(sizeof(*w) + pending);
		if (w == NULL) {
			dp__close(c, DP_ENOMEM, 0, "out of memory queueing %zu bytes", pending);
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
		r = uv_write(&w->req, (uv_stream_t *)&c->tcp, &w->buf, 1, dp__on_write);
		if (r < 0) {
			free(w);
			dp__close(c, r, 0, "write to %s: %s", c->peer_addr, uv_strerror(r));
			return -1;
		}
		c->wq += w->len;
		if (c->wq > c->max_wq) {
			dp__close(c, -ENOBUFS, 0, "write queue over %zu bytes: peer %s is not reading",
				  c->max_wq, c->peer_addr);
			return -1;
		}
	}
	return 0;
}

static void dp__on_shutdown(uv_shutdown_t *req, int status)
{
	dp__final_close(req->data);
}

static void dp__final_close(dp_conn *c)
{
	if (c->final)
		return;
	c->final = 1;
	if (c->reading) {
		uv_read_stop((uv_stream_t *)&c->tcp);
		c->reading = 0;
	}
	uv_timer_stop(&c->timer);
	if (c->tcp_init && !c->tcp_retrying && !uv_is_closing((uv_handle_t *)&c->tcp))
		uv_close((uv_handle_t *)&c->tcp, dp__on_handle_closed);
	if (!uv_is_closing((uv_handle_t *)&c->timer))
		uv_close((uv_handle_t *)&c->timer, dp__on_handle_closed);
}

/* graceful: deliver what is queued (close_notify, a TLS alert, the last
 * messages) before closing the socket, waiting at most linger_ms.  Not for
 * transport failures or a peer that does not read. */
static void dp__close(dp_conn *c, int reason, int graceful, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (c->state == DP__CLOSING) {
		if (!graceful)
			dp__final_close(c);
		return;
	}
	c->state = DP__CLOSING;
	c->reason = reason;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
	DP_DEBUG("conn", "closing peer=%s id=%s reason=%d detail=\"%s\"", c->peer_addr,
		 c->peer_id, reason, c->detail);
	uv_timer_stop(&c->timer);
	if (c->gai_pending)
		uv_cancel((uv_req_t *)&c->gai);
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
		if (dp__flush(c) < 0 || c->final)
			return;
		c->sreq.data = c;
		r = uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, dp__on_shutdown);
		if (r == 0) {
			uv_timer_start(&c->timer, dp__on_timer, c->linger_ms, 0);
			return;
		}
	}
	dp__final_close(c);
}

static void dp__on_timer(uv_timer_t *t)
{
	dp_conn *c = t->data;

	if (c->state == DP__CLOSING) {
		dp__final_close(c);
		return;
	}
	if (c->state == DP__RESOLVING || c->state == DP__CONNECTING)
		dp__close(c, -ETIMEDOUT, 0, "connection to %s:%u not established within %u ms",
			  c->host, c->port, c->hs_timeout_ms);
	else
		dp__close(c, -ETIMEDOUT, 0, "TLS handshake with %s not completed within %u ms",
			  c->peer_addr, c->hs_timeout_ms);
}

/* ---- receiving ------------------------------------------------------------ */

static int dp__deliver(dp_conn *c, const uint8_t *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		Dpasync__Envelope *m = NULL;
		size_t used = 0;
		int r;

		r = dp_frame_decode(&c->dec, p + off, n - off, &used, &m);
		if (r < 0) {
			dp__close(c, r, 1, "from %s: %s", c->peer_addr, dp_error_detail(r));
			return -1;
		}
		off += used;
		if (m == NULL)
			continue;
		r = dp_frame_validate(m, &c->lim);
		if (r < 0) {
			dp__close(c, r, 1, "invalid %s message from %s: %s", dp_frame_kind(m),
				  c->peer_addr, dp_error_detail(r));
			dp_frame_msg_free(m);
			return -1;
		}
		if (c->cb.on_message)
			c->cb.on_message(c, m);
		else
			dp_frame_msg_free(m);
		if (c->state != DP__OPEN)
			return -1;
	}
	return 0;
}

static void dp__tls_failed(dp_conn *c, const char *what)
{
	char eb[256];

	dp_tls_error_string(c->ssl, eb, sizeof(eb));
	c->ssl_fatal = 1;
	/* graceful: let the alert OpenSSL queued reach the peer. */
	dp__close(c, DP_ETLS, 1, "%s with %s: %s", what, c->peer_addr, eb);
}

static int dp__handshake_done(dp_conn *c)
{
	int r;

	uv_timer_stop(&c->timer);
	r = dp_tls_peer_identity(c->ssl, c->peer_id, sizeof(c->peer_id));
	if (r < 0) {
		c->peer_id[0] = '\0';
		dp__close(c, DP_ETLS, 1, "%s: %s", c->peer_addr, dp_error_detail(r));
		return -1;
	}
	c->state = DP__OPEN;
	DP_DEBUG("conn", "handshake done peer=%s id=%s", c->peer_addr, c->peer_id);
	if (c->cb.on_handshake && c->cb.on_handshake(c, c->peer_id) != 0)
		dp__close(c, DP_EPROTO, 1, "peer '%s' at %s not admitted", c->peer_id, c->peer_addr);
	return c->state == DP__OPEN ? 0 : -1;
}

static void dp__drive(dp_conn *c)
{
	int r, e;

	if (c->state == DP__HANDSHAKE) {
		ERR_clear_error();
		r = SSL_do_handshake(c->ssl);
		if (r != 1) {
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ) {
				dp__flush(c);
				return;
			}
			dp__tls_failed(c, "TLS handshake");
			return;
		}
		if (dp__flush(c) < 0)
			return;
		if (dp__handshake_done(c) < 0)
			return;
	}
	while (c->state == DP__OPEN) {
		ERR_clear_error();
		r = SSL_read(c->ssl, dp__rbuf, sizeof(dp__rbuf));
		if (r > 0) {
			if (dp__deliver(c, (const uint8_t *)dp__rbuf, (size_t)r) < 0)
				return;
			continue;
		}
		e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_WANT_READ) {
			dp__flush(c);
			return;
		}
		if (e == SSL_ERROR_ZERO_RETURN) {
			if (c->dec.hdr_have > 0)
				dp__close(c, DP_EPROTO, 1, "%s closed the connection inside a frame",
					  c->peer_addr);
			else
				dp__close(c, 0, 1, "peer closed the connection");
			return;
		}
		dp__tls_failed(c, "TLS");
		return;
	}
}

static void dp__on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	buf->base = dp__rbuf;
	buf->len = sizeof(dp__rbuf);
}

static void dp__on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	dp_conn *c = s->data;

	if (c->state == DP__CLOSING || nread == 0)
		return;
	if (nread > 0) {
		if (BIO_write(c->rbio, buf->base, (int)nread) != (int)nread) {
			ERR_clear_error();
			dp__close(c, DP_ENOMEM, 0, "out of memory buffering %zd bytes", nread);
			return;
		}
		dp__drive(c);
		return;
	}
	if (nread == UV_EOF) {
		if (c->state == DP__HANDSHAKE)
			dp__close(c, DP_ETLS, 0, "%s closed the connection during the TLS handshake",
				  c->peer_addr);
		else if (c->dec.hdr_have > 0)
			dp__close(c, DP_EPROTO, 0, "%s closed the connection inside a frame",
				  c->peer_addr);
		else
			dp__close(c, 0, 1, "peer closed the connection");
		return;
	}
	dp__close(c, (int)nread, 0, "read from %s: %s", c->peer_addr, uv_strerror((int)nread));
}

static int dp__start_handshake(dp_conn *c)
{
	int r;

	c->connected = 1;
	c->state = DP__HANDSHAKE;
	dp__tune_tcp(c);
	r = uv_read_start((uv_stream_t *)&c->tcp, dp__on_alloc, dp__on_read);
	if (r < 0) {
		dp__close(c, r, 0, "read from %s: %s", c->peer_addr, uv_strerror(r));
		return r;
	}
	c->reading = 1;
	if (!c->is_server)
		dp__drive(c);   /* sends the ClientHello */
	return 0;
}

/* ---- construction ------------------------------------------------------- */

static int dp__conn_new(uv_loop_t *loop, const dp_conn_config *cfg, int is_server,
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

static void dp__conn_discard(dp_conn *c)
{
	SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
	dp_frame_decoder_free(&c->dec);
	free(c);
}

static void dp__start_timer(dp_conn *c)
{
	uv_timer_init(c->loop, &c->timer);
	c->timer.data = c;
	c->handles_open++;
	uv_timer_start(&c->timer, dp__on_timer, c->hs_timeout_ms, 0);
}

/* ---- client ----------------------------------------------------------------- */

static void dp__on_retry_closed(uv_handle_t *h)
{
	dp_conn *c = h->data;

	c->tcp_init = 0;
	c->tcp_retrying = 0;
	c->handles_open--;
	if (c->state == DP__CLOSING) {
		dp__final_close(c);
		dp__maybe_finish(c);
		return;
	}
	dp__try_connect(c);
}

static void dp__on_connect(uv_connect_t *req, int status)
{
	dp_conn *c = req->data;

	if (c->state == DP__CLOSING)
		return;
	if (status < 0) {
		c->last_err = status;
		DP_DEBUG("conn", "connect to %s failed: %s", c->peer_addr, uv_strerror(status));
		if (c->ai_next != NULL) {
			c->tcp_retrying = 1;
			uv_close((uv_handle_t *)&c->tcp, dp__on_retry_closed);
			return;
		}
		dp__close(c, status, 0, "cannot connect to %s:%u (%s): %s", c->host, c->port,
			  c->peer_addr, uv_strerror(status));
		return;
	}
	dp__start_handshake(c);
}

static void dp__try_connect(dp_conn *c)
{
	int r;

	while (c->ai_next != NULL) {
		struct addrinfo *ai = c->ai_next;

		c->ai_next = ai->ai_next;
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		dp__fmt_addr(ai->ai_addr, c->peer_addr, sizeof(c->peer_addr));
		r = uv_tcp_init(c->loop, &c->tcp);
		if (r < 0) {
			c->last_err = r;
			continue;
		}
		c->tcp.data = c;
		c->tcp_init = 1;
		c->handles_open++;
		c->creq.data = c;
		r = uv_tcp_connect(&c->creq, &c->tcp, ai->ai_addr, dp__on_connect);
		if (r == 0) {
			c->state = DP__CONNECTING;
			return;
		}
		c->last_err = r;
		c->tcp_retrying = 1;
		uv_close((uv_handle_t *)&c->tcp, dp__on_retry_closed);
		return;
	}
	dp__close(c, c->last_err ? c->last_err : DP_ENOENT, 0, "cannot connect to %s:%u: %s",
		  c->host, c->port, c->last_err ? uv_strerror(c->last_err) : "no usable address");
}

static void dp__on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	dp_conn *c = req->data;

	c->gai_pending = 0;
	if (c->state == DP__CLOSING) {
		if (res)
			uv_freeaddrinfo(res);
		dp__maybe_finish(c);
		return;
	}
	if (status < 0) {
		dp__close(c, DP_ENOENT, 0, "cannot resolve '%s': %s", c->host, uv_strerror(status));
		return;
	}
	c->ai_list = c->ai_next = res;
	dp__try_connect(c);
}

int dp_conn_connect(uv_loop_t *loop, const dp_conn_config *cfg, const char *host,
		    uint16_t port, const char *server_name, dp_conn **out)
{
	struct addrinfo hints;
	char portstr[8];
	dp_conn *c;
	int r;

	if (loop == NULL || cfg == NULL || cfg->ctx == NULL || host == NULL || *host == '\0' ||
	    port == 0)
		return dp_error_set(DP_EINVAL, "connect: need a loop, a TLS context, a host and a port");
	if (strlen(host) >= sizeof(((dp_conn *)0)->host))
		return dp_error_set(DP_EINVAL, "connect: host name too long");
	r = dp__conn_new(loop, cfg, 0, &c);
	if (r < 0)
		return r;
	r = dp_tls_client_setup(c->ssl, server_name ? server_name : host);
	if (r < 0) {
		dp__conn_discard(c);
		return r;
	}
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = port;
	snprintf(portstr, sizeof(portstr), "%u", port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	c->gai.data = c;
	r = uv_getaddrinfo(loop, &c->gai, dp__on_resolved, host, portstr, &hints);
	if (r < 0) {
		dp__conn_discard(c);
		return dp_error_set(r, "cannot resolve '%s': %s", host, uv_strerror(r));
	}
	c->gai_pending = 1;
	c->state = DP__RESOLVING;
	dp__start_timer(c);
	*out = c;
	return 0;
}

/* ---- server ---------------------------------------------------------------- */

static void dp__free_handle(uv_handle_t *h)
{
	free(h);
}

static void dp__reject_accept(uv_stream_t *server, const char *why)
{
	uv_tcp_t *t = malloc(sizeof(*t));

	if (t == NULL)
		return;
	if (uv_tcp_init(server->loop, t) < 0) {
		free(t);
		return;
	}
	(void)uv_accept(server, (uv_stream_t *)t);
	DP_WARN("conn", "refusing a connection: %s", why);
	uv_close((uv_handle_t *)t, dp__free_handle);
}

static void dp__on_connection(uv_stream_t *server, int status)
{
	dp_listener *l = server->data;
	struct sockaddr_storage ss;
	int len = (int)sizeof(ss);
	dp_conn *c;
	int r;

	if (status < 0) {
		DP_WARN("conn", "accept: %s", uv_strerror(status));
		return;
	}
	if (l->cfg.max_conns != 0 && l->nconns >= l->cfg.max_conns) {
		dp__reject_accept(server, "connection limit reached");
		return;
	}
	if (dp__conn_new(l->loop, &l->cfg, 1, &c) < 0) {
		dp__reject_accept(server, dp_error_detail(DP_ENOMEM));
		return;
	}
	r = uv_tcp_init(l->loop, &c->tcp);
	if (r < 0) {
		dp__conn_discard(c);
		dp__reject_accept(server, uv_strerror(r));
		return;
	}
	c->tcp.data = c;
	c->tcp_init = 1;
	c->handles_open++;
	dp__start_timer(c);
	c->listener = l;
	c->lnext = l->conns;
	if (l->conns)
		l->conns->lprev = c;
	l->conns = c;
	l->nconns++;
	c->state = DP__HANDSHAKE;
	r = uv_accept(server, (uv_stream_t *)&c->tcp);
	if (r < 0) {
		dp__close(c, r, 0, "accept: %s", uv_strerror(r));
		return;
	}
	if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0)
		dp__fmt_addr((struct sockaddr *)&ss, c->peer_addr, sizeof(c->peer_addr));
	dp__start_handshake(c);
}

static int dp__listen_addr(uv_loop_t *loop, const char *addr, uint16_t port,
			   struct sockaddr_storage *ss)
{
	uv_getaddrinfo_t req;
	struct addrinfo hints;
	char portstr[8];
	int r;

	memset(ss, 0, sizeof(*ss));
	if (uv_ip6_addr(addr, port, (struct sockaddr_in6 *)ss) == 0)
		return 0;
	if (uv_ip4_addr(addr, port, (struct sockaddr_in *)ss) == 0)
		return 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(portstr, sizeof(portstr), "%u", port);
	/* Startup only: a synchronous lookup (no callback) is fine here. */
	r = uv_getaddrinfo(loop, &req, NULL, addr, portstr, &hints);
	if (r < 0)
		return dp_error_set(DP_ENOENT, "listen: cannot resolve '%s': %s", addr, uv_strerror(r));
	memcpy(ss, req.addrinfo->ai_addr, req.addrinfo->ai_addrlen);
	uv_freeaddrinfo(req.addrinfo);
	return 0;
}

static void dp__listener_free(uv_handle_t *h)
{
	dp_listener *l = h->data;

	SSL_CTX_free(l->cfg.ctx);
	free(l);
}

/* One attempt to bind and listen on sa.  On failure the half-made listener
 * is closed (freed from the loop later) and *out untouched. */
static int dp__listen_on(uv_loop_t *loop, const dp_conn_config *cfg, const struct sockaddr *sa,
			 dp_listener **out)
{
	struct sockaddr_storage ss;
	int len = (int)sizeof(ss);
	dp_listener *l;
	int r;

	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return dp_error_set(DP_ENOMEM, "listen: out of memory");
	l->loop = loop;
	l->cfg = *cfg;
	l->cfg.ctx = NULL;      /* referenced only on success */
	if (cfg->limits) {
		l->lim = *cfg->limits;
		l->cfg.limits = &l->lim;
	}
	r = uv_tcp_init(loop, &l->tcp);
	if (r < 0) {
		free(l);
		return dp_error_set(r, "listen: %s", uv_strerror(r));
	}
	l->tcp.data = l;
	r = uv_tcp_bind(&l->tcp, sa, 0);
	if (r == 0)
		r = uv_listen((uv_stream_t *)&l->tcp, 128, dp__on_connection);
	if (r == 0)
		r = uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&ss, &len);
	if (r < 0) {
		char addr[80];

		dp__fmt_addr(sa, addr, sizeof(addr));
		uv_close((uv_handle_t *)&l->tcp, dp__listener_free);
		return dp_error_set(r, "listen on %s: %s", addr, uv_strerror(r));
	}
	l->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						 : ((struct sockaddr_in *)&ss)->sin_port);
	SSL_CTX_up_ref(cfg->ctx);
	l->cfg.ctx = cfg->ctx;
	*out = l;
	return 0;
}

int dp_listener_start(uv_loop_t *loop, const dp_conn_config *cfg, const char *addr,
		      uint16_t port, dp_listener **out)
{
	struct sockaddr_storage ss;
	int r, any = (addr == NULL || *addr == '\0' || strcmp(addr, "*") == 0);

	if (loop == NULL || cfg == NULL || cfg->ctx == NULL)
		return dp_error_set(DP_EINVAL, "listen: need a loop and a TLS context");
	r = dp__listen_addr(loop, any ? "::" : addr, port, &ss);
	if (r == 0)
		r = dp__listen_on(loop, cfg, (struct sockaddr *)&ss, out);
	if (r < 0 && any) {
		/* No IPv6 on this host: all IPv4 addresses instead. */
		r = dp__listen_addr(loop, "0.0.0.0", port, &ss);
		if (r == 0)
			r = dp__listen_on(loop, cfg, (struct sockaddr *)&ss, out);
	}
	return r;
}

uint16_t dp_listener_port(const dp_listener *l)
{
	return l->port;
}

void dp_listener_close(dp_listener *l)
{
	dp_conn *c = l->conns, *next;

	for (; c != NULL; c = next) {
		next = c->lnext;
		c->listener = NULL;
		c->lprev = c->lnext = NULL;
		if (c->state != DP__OPEN)
			dp__close(c, -ECANCELED, 0, "listener closed during the TLS handshake");
	}
	l->conns = NULL;
	l->nconns = 0;
	uv_close((uv_handle_t *)&l->tcp, dp__listener_free);
}

/* ---- using a connection -------------------------------------------------- */

int dp_conn_send(dp_conn *c, const Dpasync__Envelope *msg)
{
	uint8_t *buf;
	size_t len;
	int r, n;

	if (c->state != DP__OPEN)
		return dp_error_set(DP_ESTATE, "send to %s: connection not open", c->peer_addr);
	r = dp_frame_encode(msg, c->max_frame, &buf, &len);
	if (r < 0)
		return r;
	ERR_clear_error();
	/* Memory BIO: SSL_write takes the whole buffer (no partial writes
	 * without SSL_MODE_ENABLE_PARTIAL_WRITE) and never wants to wait. */
	n = SSL_write(c->ssl, buf, (int)len);
	free(buf);
	if (n <= 0) {
		dp__tls_failed(c, "TLS write");
		return dp_error_set(DP_ETLS, "%s", c->detail);
	}
	if (dp__flush(c) < 0)
		return dp_error_set(c->reason, "%s", c->detail);
	return 0;
}

void dp_conn_close(dp_conn *c)
{
	if (c->state == DP__CLOSING)
		return;
	dp__close(c, 0, 1, "closed locally");
}

void dp_conn_set_limits(dp_conn *c, const dp_frame_limits *lim)
{
	if (lim != NULL) {
		c->lim = *lim;
	} else {
		memset(&c->lim, 0, sizeof(c->lim));
	}
}

void *dp_conn_data(const dp_conn *c)
{
	return c->data;
}

void dp_conn_set_data(dp_conn *c, void *data)
{
	c->data = data;
}

const char *dp_conn_peer_id(const dp_conn *c)
{
	return c->peer_id;
}

const char *dp_conn_peer_addr(const dp_conn *c)
{
	return c->peer_addr;
}

int dp_conn_is_server(const dp_conn *c)
{
	return c->is_server;
}

int dp_conn_is_open(const dp_conn *c)
{
	return c->state == DP__OPEN;
}

size_t dp_conn_write_queue(const dp_conn *c)
{
	return c->wq;
}
