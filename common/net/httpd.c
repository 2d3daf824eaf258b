/* SPDX-License-Identifier: Apache-2.0 */
#include "common/net/httpd.h"
#include "common/net/httpreq.h"
#include "common/core/error.h"
#include "common/core/log.h"
#include "common/net/addr.h"
#include "common/net/listener.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DP_HTTPD_LINGER_MS 2000u
#define DP_HTTPD_TEXT "text/plain; charset=utf-8"

struct route {
	char *path;
	dp_httpd_handler fn;
	void *arg;
};

enum state {
	ST_READING,   /* collecting the request head */
	ST_WRITING,   /* response queued */
	ST_LINGER,    /* write side shut down; dropping input until EOF */
	ST_CLOSING,   /* handles closing; freed when both are closed */
};

struct hconn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_write_t wreq;
	uv_shutdown_t sreq;
	struct dp_httpd *srv;
	struct hconn *prev, *next;
	enum state state;
	int open_handles;
	size_t used;         /* bytes in buf */
	struct dp_httpreq_scan scan;  /* how far the head has been scanned */
	bool counted;        /* accepted: released from the listener when freed */
	dp_listener_slot slot;  /* its record in the listener */
	char *out;           /* response head (+ body), freed with the conn */
	char *body;
	char peer[DP_ADDR_TEXT_MAX];
	char buf[DP_HTTPD_MAX_HEADER + 1];
};

struct dp_httpd {
	uv_loop_t *loop;
	dp_listener *lst;      /* NULL once closing */
	struct route *routes;
	size_t n_routes;
	struct dp_metrics *metrics;
	unsigned timeout_ms;
	size_t n_conns;        /* allocated, closing ones included */
	struct hconn *conns;   /* not closing */
	bool closing;
	bool listener_closed;  /* its socket is closed: only conns keep us */
	void (*done)(void *arg);
	void *done_arg;
	uint16_t port;
	char listen[80];
};

/* ---- server lifetime ------------------------------------------------------ */

static void routes_free(struct dp_httpd *srv)
{
	for (size_t i = 0; i < srv->n_routes; i++)
		free(srv->routes[i].path);
	free(srv->routes);
}

static void server_free(struct dp_httpd *srv)
{
	void (*done)(void *) = srv->done;
	void *arg = srv->done_arg;

	routes_free(srv);
	free(srv);
	if (done)
		done(arg);
}

static void server_maybe_free(struct dp_httpd *srv)
{
	if (srv->closing && srv->listener_closed && srv->n_conns == 0)
		server_free(srv);
}

static void on_listener_closed(void *data)
{
	struct dp_httpd *srv = data;

	srv->listener_closed = true;
	server_maybe_free(srv);
}

static void on_conn_handle_closed(uv_handle_t *h)
{
	struct hconn *c = h->data;
	struct dp_httpd *srv = c->srv;

	c->open_handles--;
	if (c->open_handles > 0)
		return;
	if (c->counted && srv->lst != NULL)
		dp_listener_release(srv->lst, &c->slot);
	free(c->out);
	free(c->body);
	free(c);
	srv->n_conns--;
	server_maybe_free(srv);
}

static void conn_close(struct hconn *c)
{
	struct dp_httpd *srv = c->srv;

	if (c->state == ST_CLOSING)
		return;
	c->state = ST_CLOSING;
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
	uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
}

/* The listener needs room for a newer connection (every HTTP connection
 * counts as pending: there is no authentication to wait for). */
static void on_evict(dp_listener *l, dp_listener_slot *s, void *data)
{
	struct hconn *c = (struct hconn *)((char *)s - offsetof(struct hconn, slot));

	DP_DEBUG("httpd", "evicted peer=%s state=%d bytes=%zu", c->peer, (int)c->state, c->used);
	conn_close(c);
}

/* ---- responses ------------------------------------------------------------ */

static const char *reason_phrase(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return status < 300 ? "OK" : status < 500 ? "Client Error" : "Server Error";
	}
}

int dp_httpd_respond(struct dp_httpd_response *resp, int status, const char *content_type,
		     const char *body, size_t len)
{
	char *copy;

	DP_REQUIRE(resp != NULL);
	if (status < 200 || status > 599 || (body == NULL && len > 0))
		return dp_error_set(DP_EINVAL, "httpd: bad response (status %d)", status);
	copy = malloc(len ? len : 1);
	if (copy == NULL)
		return dp_error_set(DP_ENOMEM, "httpd: out of memory");
	if (len)
		memcpy(copy, body, len);
	free(resp->body);
	resp->status = status;
	resp->content_type = content_type ? content_type : DP_HTTPD_TEXT;
	resp->body = copy;
	resp->len = len;
	return 0;
}

static void on_linger_timeout(uv_timer_t *t)
{
	conn_close(t->data);
}

static void on_deadline(uv_timer_t *t)
{
	struct hconn *c = t->data;

	DP_DEBUG("httpd", "timeout peer=%s state=%d bytes=%zu", c->peer, (int)c->state, c->used);
	conn_close(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct hconn *c = h->data;

	/* Reading goes into the fixed header buffer; lingering input is
	 * dropped, so the buffer is simply reused. */
	if (c->state == ST_LINGER)
		c->used = 0;
	*buf = uv_buf_init(c->buf + c->used, (unsigned)(DP_HTTPD_MAX_HEADER - c->used));
}

static void on_linger_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct hconn *c = s->data;

	if (nread < 0)
		conn_close(c);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct hconn *c = req->data;
	unsigned ms;

	if (c->state == ST_CLOSING)
		return;
	if (status < 0) {
		conn_close(c);
		return;
	}
	c->state = ST_LINGER;
	c->used = 0;
	ms = c->srv->timeout_ms < DP_HTTPD_LINGER_MS ? c->srv->timeout_ms : DP_HTTPD_LINGER_MS;
	uv_timer_start(&c->timer, on_linger_timeout, ms, 0);
	if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_linger_read) != 0)
		conn_close(c);
}

static void on_written(uv_write_t *req, int status)
{
	struct hconn *c = req->data;

	if (c->state == ST_CLOSING)
		return;
	if (status < 0) {
		conn_close(c);
		return;
	}
	c->sreq.data = c;
	if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
		conn_close(c);
}

/* Queue the response; takes ownership of body (malloc'ed or NULL). */
static void send_response(struct hconn *c, int status, const char *ctype, char *body, size_t len,
		     bool head_only, const char *method, const char *path)
{
	uv_buf_t bufs[2];
	int n, nb = 1;

	if (c->state != ST_READING) {  /* e.g. the handler closed the server */
		free(body);
		return;
	}
	uv_read_stop((uv_stream_t *)&c->tcp);
	c->state = ST_WRITING;
	c->body = body;
	n = asprintf(&c->out,
		     "HTTP/1.1 %d %s\r\n"
		     "Content-Type: %s\r\n"
		     "Content-Length: %zu\r\n"
		     "%s"
		     "Cache-Control: no-store\r\n"
		     "Connection: close\r\n"
		     "\r\n",
		     status, reason_phrase(status), ctype, len,
		     status == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (n < 0) {
		c->out = NULL;
		conn_close(c);
		return;
	}
	DP_DEBUG("httpd", "request peer=%s method=%s path=%s status=%d bytes=%zu", c->peer,
		 method ? method : "-", path ? path : "-", status, len);
	bufs[0] = uv_buf_init(c->out, (unsigned)n);
	if (!head_only && len > 0)
		bufs[nb++] = uv_buf_init(body, (unsigned)len);
	c->wreq.data = c;
	if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, bufs, (unsigned)nb, on_written) != 0)
		conn_close(c);
}

static void send_error(struct hconn *c, int status)
{
	char *body = NULL;
	int n = asprintf(&body, "%d %s\n", status, reason_phrase(status));

	if (n < 0) {
		conn_close(c);
		return;
	}
	send_response(c, status, DP_HTTPD_TEXT, body, (size_t)n, false, NULL, NULL);
}

/* ---- serving ---------------------------------------------------------------- */

static int builtin_healthz(void *arg, const struct dp_httpd_request *req,
			       struct dp_httpd_response *resp)
{
	return dp_httpd_respond(resp, 200, DP_HTTPD_TEXT, "ok\n", 3);
}

static int builtin_metrics(void *arg, const struct dp_httpd_request *req,
			       struct dp_httpd_response *resp)
{
	struct dp_metrics *reg = arg;
	char *text;
	size_t len;
	int rc = dp_metrics_render(reg, &text, &len);

	if (rc != 0)
		return rc;
	free(resp->body);
	resp->status = 200;
	resp->content_type = DP_METRICS_CONTENT_TYPE;
	resp->body = text;
	resp->len = len;
	return 0;
}

static void dispatch(struct hconn *c, size_t head_end)
{
	struct dp_httpd *srv = c->srv;
	struct dp_httpd_response resp = { .status = 200, .content_type = DP_HTTPD_TEXT };
	struct dp_httpd_request req;
	struct dp_httpreq_head head;
	struct route *route = NULL;
	int status, rc;

	status = dp_httpreq_parse(c->buf, head_end, &head);
	if (status != 0) {
		send_error(c, status);
		return;
	}
	for (size_t i = 0; i < srv->n_routes; i++)
		if (strcmp(srv->routes[i].path, head.path) == 0)
			route = &srv->routes[i];
	if (route == NULL) {
		send_error(c, 404);
		return;
	}
	req = (struct dp_httpd_request){ head.method, head.path, head.query, c->peer };
	rc = route->fn(route->arg, &req, &resp);
	if (rc != 0 || resp.status < 200 || resp.status > 599 || (resp.len && !resp.body)) {
		DP_WARN("httpd", "handler failed path=%s err=\"%s\"", head.path,
			rc ? dp_error_detail(rc) : "bad response");
		free(resp.body);
		send_error(c, 500);
		return;
	}
	send_response(c, resp.status, resp.content_type ? resp.content_type : DP_HTTPD_TEXT, resp.body,
		 resp.len, strcmp(head.method, "HEAD") == 0, head.method, head.path);
}

/* Scan the bytes that just arrived for the end of the head
 * (dp_httpreq_scan); answer an error at once, dispatch a complete head. */
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct hconn *c = s->data;
	size_t from, head_end = 0;
	int st;

	if (c->state != ST_READING)
		return;
	if (nread < 0) {
		conn_close(c);  /* EOF or error before a complete request */
		return;
	}
	if (nread > 0 && c->counted && c->srv->lst != NULL)
		dp_listener_progress(c->srv->lst, &c->slot);
	from = c->used;
	c->used += (size_t)nread;
	st = dp_httpreq_scan(&c->scan, c->buf, from, c->used, &head_end);
	if (st == DP_HTTPREQ_DONE)
		dispatch(c, head_end);
	else if (st != DP_HTTPREQ_MORE)
		send_error(c, st);
}

/* ---- accepting ---------------------------------------------------------------- */

static int on_connection(dp_listener *l, void *data)
{
	struct dp_httpd *srv = data;
	struct hconn *c;

	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	c->srv = srv;
	c->tcp.data = c;
	c->timer.data = c;
	uv_tcp_init(srv->loop, &c->tcp);
	uv_timer_init(srv->loop, &c->timer);
	c->open_handles = 2;
	srv->n_conns++;
	c->next = srv->conns;
	if (c->next)
		c->next->prev = c;
	srv->conns = c;
	if (dp_listener_accept(l, &c->tcp, &c->slot, c->peer, sizeof(c->peer)) != 0) {
		conn_close(c);
		return 0;
	}
	c->counted = true;
	if (c->peer[0] == '\0')
		snprintf(c->peer, sizeof(c->peer), "?");
	uv_timer_start(&c->timer, on_deadline, srv->timeout_ms, 0);
	if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
		conn_close(c);
	return 0;
}

int dp_httpd_route(struct dp_httpd *h, const char *path, dp_httpd_handler fn, void *arg)
{
	struct route *r;
	char *copy;

	DP_REQUIRE(h != NULL);
	if (path == NULL || path[0] != '/' || strchr(path, '?'))
		return dp_error_set(DP_EINVAL, "httpd: route path must start with '/' and have "
				    "no query");
	for (size_t i = 0; i < h->n_routes; i++) {
		if (strcmp(h->routes[i].path, path) != 0)
			continue;
		if (fn == NULL) {
			free(h->routes[i].path);
			h->routes[i] = h->routes[--h->n_routes];
		} else {
			h->routes[i].fn = fn;
			h->routes[i].arg = arg;
		}
		return 0;
	}
	if (fn == NULL)
		return dp_error_set(DP_ENOENT, "httpd: no route for '%s'", path);
	copy = strdup(path);
	r = realloc(h->routes, (h->n_routes + 1) * sizeof(*r));
	if (copy == NULL || r == NULL) {
		free(copy);
		if (r)
			h->routes = r;
		return dp_error_set(DP_ENOMEM, "httpd: out of memory");
	}
	h->routes = r;
	h->routes[h->n_routes++] = (struct route){ copy, fn, arg };
	return 0;
}

int dp_httpd_new(uv_loop_t *loop, const struct dp_httpd_options *opt, struct dp_httpd **out)
{
	struct sockaddr_storage ss;
	dp_listener_config lc = { 0 };
	struct dp_httpd *srv;
	int rc;

	DP_REQUIRE(loop != NULL && opt != NULL && out != NULL);
	rc = dp_addr_parse_literal("listen address", opt->listen, DP_ADDR_PORT_ZERO, &ss);
	if (rc != 0)
		return rc;
	srv = calloc(1, sizeof(*srv));
	if (srv == NULL)
		return dp_error_set(DP_ENOMEM, "httpd: out of memory");
	srv->loop = loop;
	srv->metrics = opt->metrics;
	srv->timeout_ms = opt->timeout_ms ? opt->timeout_ms : DP_HTTPD_TIMEOUT_MS_DEFAULT;
	snprintf(srv->listen, sizeof(srv->listen), "%s", opt->listen);
	rc = dp_httpd_route(srv, "/healthz", builtin_healthz, NULL);
	if (rc == 0 && opt->metrics)
		rc = dp_httpd_route(srv, "/metrics", builtin_metrics, opt->metrics);
	if (rc != 0) {
		routes_free(srv);
		free(srv);
		return rc;
	}
	lc.tag = "httpd";
	lc.max_conns = opt->max_connections ? opt->max_connections : DP_HTTPD_MAX_CONN_DEFAULT;
	/* At the cap a new connection evicts the oldest one (idle before
	 * active), so idle connections cannot keep a scraper out. */
	lc.max_pending = lc.max_conns;
	lc.on_evict = on_evict;
	lc.on_connection = on_connection;
	lc.on_closed = on_listener_closed;
	lc.data = srv;
	rc = dp_listener_start_addr(loop, &lc, (const struct sockaddr *)&ss, &srv->lst);
	if (rc != 0) {
		dp_error_set(rc, "httpd: cannot listen on %s: %s", opt->listen, uv_strerror(rc));
		routes_free(srv);
		free(srv);
		return rc;
	}
	srv->port = dp_listener_port(srv->lst);
	DP_INFO("httpd", "listening listen=%s port=%u", srv->listen, srv->port);
	*out = srv;
	return 0;
}

uint16_t dp_httpd_port(const struct dp_httpd *h)
{
	return h ? h->port : 0;
}

size_t dp_httpd_connections(const struct dp_httpd *h)
{
	size_t n = 0;

	for (const struct hconn *c = h ? h->conns : NULL; c; c = c->next)
		n++;
	return n;
}

void dp_httpd_close(struct dp_httpd *h, void (*done)(void *arg), void *arg)
{
	if (h == NULL || h->closing)
		return;
	h->closing = true;
	h->done = done;
	h->done_arg = arg;
	/* First the listener: the connections closed below are not released
	 * to it any more. */
	dp_listener_close(h->lst);
	h->lst = NULL;
	while (h->conns)
		conn_close(h->conns);
}
