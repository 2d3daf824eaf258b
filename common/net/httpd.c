#include "common/net/httpd.h"
#include "common/core/error.h"
#include "common/core/log.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DP__LINGER_MS 2000u
#define DP__TEXT "text/plain; charset=utf-8"

struct dp__route {
	char *path;
	dp_httpd_handler fn;
	void *arg;
};

enum dp__state {
	DP__READING,   /* collecting the request head */
	DP__WRITING,   /* response queued */
	DP__LINGER,    /* write side shut down; dropping input until EOF */
	DP__CLOSING,   /* handles closing; freed when both are closed */
};

struct dp__conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_write_t wreq;
	uv_shutdown_t sreq;
	struct dp_httpd *srv;
	struct dp__conn *prev, *next;
	enum dp__state state;
	int open_handles;
	size_t used;         /* bytes in buf */
	size_t line_start;   /* start of the line being scanned */
	size_t n_lines;      /* complete lines seen, request line included */
	bool line_ok;        /* request line complete and checked */
	char *out;           /* response head (+ body), freed with the conn */
	char *body;
	char peer[64];
	char buf[DP_HTTPD_MAX_HEADER + 1];
};

struct dp_httpd {
	uv_loop_t *loop;
	uv_tcp_t listener;
	struct dp__route *routes;
	size_t n_routes;
	struct dp_metrics *metrics;
	unsigned max_conns;
	unsigned timeout_ms;
	size_t n_conns;
	struct dp__conn *conns;
	bool closing;
	bool listener_closed;
	void (*done)(void *arg);
	void *done_arg;
	uint16_t port;
	char listen[80];
};

/* ---- addresses ---------------------------------------------------------- */

int dp_httpd_parse_addr(const char *hostport, struct sockaddr_storage *out)
{
	struct sockaddr_storage ss;
	char host[64];
	const char *colon, *h, *p;
	size_t hl;
	unsigned long port = 0;

	if (hostport == NULL || out == NULL)
		return dp_error_set(DP_EINVAL, "listen address: missing");
	if (hostport[0] == '[') {
		const char *close = strchr(hostport, ']');

		if (close == NULL || close[1] != ':')
			goto bad;
		h = hostport + 1;
		hl = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(hostport, ':');
		if (colon == NULL || memchr(hostport, ':', (size_t)(colon - hostport)))
			goto bad;
		h = hostport;
		hl = (size_t)(colon - hostport);
	}
	if (hl == 0 || hl >= sizeof(host))
		goto bad;
	memcpy(host, h, hl);
	host[hl] = '\0';
	p = colon + 1;
	if (*p == '\0' || strlen(p) > 5)
		goto bad;
	for (const char *c = p; *c; c++) {
		if (!isdigit((unsigned char)*c))
			goto bad;
		port = port * 10 + (unsigned long)(*c - '0');
	}
	if (port > 65535)
		goto bad;
	memset(&ss, 0, sizeof(ss));
	if (hostport[0] == '[') {
		if (uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)&ss) != 0)
			goto bad;
	} else if (strcmp(host, "localhost") == 0) {
		uv_ip4_addr("127.0.0.1", (int)port, (struct sockaddr_in *)&ss);
	} else {
		struct in_addr a;

		/* inet_pton is strict (dotted quad only); uv_ip4_addr too, but
		 * say so here rather than rely on it. */
		if (inet_pton(AF_INET, host, &a) != 1 ||
		    uv_ip4_addr(host, (int)port, (struct sockaddr_in *)&ss) != 0)
			goto bad;
	}
	*out = ss;
	return 0;
bad:
	return dp_error_set(DP_EINVAL, "listen address '%s': expected IPV4:PORT, [IPV6]:PORT or "
			    "localhost:PORT", hostport ? hostport : "");
}

static void dp__addr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		uv_ip6_name(s6, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		uv_ip4_name(s4, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(s4->sin_port));
	} else {
		snprintf(buf, len, "?");
	}
}

/* ---- server lifetime ------------------------------------------------------ */

static void dp__server_free(struct dp_httpd *srv)
{
	void (*done)(void *) = srv->done;
	void *arg = srv->done_arg;

	for (size_t i = 0; i < srv->n_routes; i++)
		free(srv->routes[i].path);
	free(srv->routes);
	free(srv);
	if (done)
		done(arg);
}

static void dp__server_maybe_free(struct dp_httpd *srv)
{
	if (srv->closing && srv->listener_closed && srv->n_conns == 0)
		dp__server_free(srv);
}

static void dp__on_listener_closed(uv_handle_t *h)
{
	struct dp_httpd *srv = h->data;

	srv->listener_closed = true;
	dp__server_maybe_free(srv);
}

static void dp__on_conn_handle_closed(uv_handle_t *h)
{
	struct dp__conn *c = h->data;
	struct dp_httpd *srv = c->srv;

	if (--c->open_handles > 0)
		return;
	free(c->out);
	free(c->body);
	free(c);
	srv->n_conns--;
	dp__server_maybe_free(srv);
}

static void dp__conn_close(struct dp__conn *c)
{
	struct dp_httpd *srv = c->srv;

	if (c->state == DP__CLOSING)
		return;
	c->state = DP__CLOSING;
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	uv_close((uv_handle_t *)&c->timer, dp__on_conn_handle_closed);
	uv_close((uv_handle_t *)&c->tcp, dp__on_conn_handle_closed);
}

/* ---- responses ------------------------------------------------------------ */

static const char *dp__reason(int status)
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

	if (resp == NULL || status < 200 || status > 599 || (body == NULL && len > 0))
		return dp_error_set(DP_EINVAL, "httpd: bad response (status %d)", status);
	copy = malloc(len ? len : 1);
	if (copy == NULL)
		return dp_error_set(DP_ENOMEM, "httpd: out of memory");
	if (len)
		memcpy(copy, body, len);
	free(resp->body);
	resp->status = status;
	resp->content_type = content_type ? content_type : DP__TEXT;
	resp->body = copy;
	resp->len = len;
	return 0;
}

static void dp__on_linger_timeout(uv_timer_t *t)
{
	dp__conn_close(t->data);
}

static void dp__on_deadline(uv_timer_t *t)
{
	struct dp__conn *c = t->data;

	DP_DEBUG("httpd", "timeout peer=%s state=%d bytes=%zu", c->peer, (int)c->state, c->used);
	dp__conn_close(c);
}

static void dp__alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct dp__conn *c = h->data;

	/* Reading goes into the fixed header buffer; lingering input is
	 * dropped, so the buffer is simply reused. */
	if (c->state == DP__LINGER)
		c->used = 0;
	*buf = uv_buf_init(c->buf + c->used, (unsigned)(DP_HTTPD_MAX_HEADER - c->used));
}

static void dp__on_linger_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct dp__conn *c = s->data;

	if (nread < 0)
		dp__conn_close(c);
}

static void dp__on_shutdown(uv_shutdown_t *req, int status)
{
	struct dp__conn *c = req->data;
	unsigned ms;

	if (c->state == DP__CLOSING)
		return;
	if (status < 0) {
		dp__conn_close(c);
		return;
	}
	c->state = DP__LINGER;
	c->used = 0;
	ms = c->srv->timeout_ms < DP__LINGER_MS ? c->srv->timeout_ms : DP__LINGER_MS;
	uv_timer_start(&c->timer, dp__on_linger_timeout, ms, 0);
	if (uv_read_start((uv_stream_t *)&c->tcp, dp__alloc, dp__on_linger_read) != 0)
		dp__conn_close(c);
}

static void dp__on_written(uv_write_t *req, int status)
{
	struct dp__conn *c = req->data;

	if (c->state == DP__CLOSING)
		return;
	if (status < 0) {
		dp__conn_close(c);
		return;
	}
	c->sreq.data = c;
	if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, dp__on_shutdown) != 0)
		dp__conn_close(c);
}

/* Queue the response; takes ownership of body (malloc'ed or NULL). */
static void dp__send(struct dp__conn *c, int status, const char *ctype, char *body, size_t len,
		     bool head_only, const char *method, const char *path)
{
	uv_buf_t bufs[2];
	int n, nb = 1;

	if (c->state != DP__READING) {  /* e.g. the handler closed the server */
		free(body);
		return;
	}
	uv_read_stop((uv_stream_t *)&c->tcp);
	c->state = DP__WRITING;
	c->body = body;
	n = asprintf(&c->out,
		     "HTTP/1.1 %d %s\r\n"
		     "Content-Type: %s\r\n"
		     "Content-Length: %zu\r\n"
		     "%s"
		     "Cache-Control: no-store\r\n"
		     "Connection: close\r\n"
		     "\r\n",
		     status, dp__reason(status), ctype, len,
		     status == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (n < 0) {
		c->out = NULL;
		dp__conn_close(c);
		return;
	}
	DP_DEBUG("httpd", "request peer=%s method=%s path=%s status=%d bytes=%zu", c->peer,
		 method ? method : "-", path ? path : "-", status, len);
	bufs[0] = uv_buf_init(c->out, (unsigned)n);
	if (!head_only && len > 0)
		bufs[nb++] = uv_buf_init(body, (unsigned)len);
	c->wreq.data = c;
	if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, bufs, (unsigned)nb, dp__on_written) != 0)
		dp__conn_close(c);
}

static void dp__send_error(struct dp__conn *c, int status)
{
	char *body = NULL;
	int n = asprintf(&body, "%d %s\n", status, dp__reason(status));

	if (n < 0) {
		dp__conn_close(c);
		return;
	}
	dp__send(c, status, DP__TEXT, body, (size_t)n, false, NULL, NULL);
}

/* ---- request parsing -------------------------------------------------------- */

static bool dp__tchar(char ch)
{
	return isalnum((unsigned char)ch) || (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch));
}

/* Check the request line [s, e) (CR already dropped).  Returns 0 when it
 * can be served, else the status to answer with.  *method_len and *target
 * describe the parts on success. */
static int dp__check_request_line(const char *s, const char *e, size_t *method_len,
				  const char **target, size_t *target_len, int *minor)
{
	const char *sp1, *sp2, *v;
	size_t ml;

	sp1 = memchr(s, ' ', (size_t)(e - s));
	if (sp1 == NULL)
		return 400;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(e - sp1 - 1));
	if (sp2 == NULL)
		return 400;
	ml = (size_t)(sp1 - s);
	if (ml == 0 || ml > 20)
		return 400;
	for (const char *p = s; p < sp1; p++)
		if (!dp__tchar(*p))
			return 400;
	if (sp2 == sp1 + 1)
		return 400;
	for (const char *p = sp1 + 1; p < sp2; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return 400;
	v = sp2 + 1;
	if (e - v != 8 || memcmp(v, "HTTP/", 5) != 0 || !isdigit((unsigned char)v[5]) ||
	    v[6] != '.' || !isdigit((unsigned char)v[7]))
		return 400;
	if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
		return 505;
	if (!((ml == 3 && memcmp(s, "GET", 3) == 0) || (ml == 4 && memcmp(s, "HEAD", 4) == 0)))
		return 405;
	if (sp1[1] != '/')
		return 400;
	*method_len = ml;
	*target = sp1 + 1;
	*target_len = (size_t)(sp2 - sp1 - 1);
	*minor = v[7] - '0';
	return 0;
}

/* Check one header line [s, e).  Returns 1 for a Host header, 0 for
 * another valid one, -1 when malformed. */
static int dp__check_header(const char *s, const char *e)
{
	const char *colon = memchr(s, ':', (size_t)(e - s));

	if (colon == NULL || colon == s)
		return -1;
	for (const char *p = s; p < colon; p++)
		if (!dp__tchar(*p))
			return -1;  /* also whitespace before ':' and obs-fold */
	for (const char *p = colon + 1; p < e; p++) {
		unsigned char ch = (unsigned char)*p;

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return -1;
	}
	return (colon - s == 4 && strncasecmp(s, "host", 4) == 0) ? 1 : 0;
}

/* Line [start, nl) without its CR; a CR anywhere else is malformed. */
static const char *dp__line_end(const char *start, const char *nl)
{
	if (nl > start && nl[-1] == '\r')
		nl--;
	return memchr(start, '\r', (size_t)(nl - start)) ? NULL : nl;
}

static int dp__builtin_healthz(void *arg, const struct dp_httpd_request *req,
			       struct dp_httpd_response *resp)
{
	return dp_httpd_respond(resp, 200, DP__TEXT, "ok\n", 3);
}

static int dp__builtin_metrics(void *arg, const struct dp_httpd_request *req,
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

static void dp__dispatch(struct dp__conn *c, size_t head_end)
{
	struct dp_httpd *srv = c->srv;
	struct dp_httpd_response resp = { .status = 200, .content_type = DP__TEXT };
	struct dp_httpd_request req;
	const char *target, *q, *end, *s = c->buf;
	char *nl, method[8], *path;
	size_t ml, tl, n_host = 0;
	int minor, status, rc;
	struct dp__route *route = NULL;

	c->buf[head_end] = '\0';
	nl = memchr(s, '\n', head_end);
	end = dp__line_end(s, nl);
	status = end ? dp__check_request_line(s, end, &ml, &target, &tl, &minor) : 400;
	if (status != 0) {
		dp__send_error(c, status);
		return;
	}
	memcpy(method, s, ml);
	method[ml] = '\0';
	for (const char *ls = nl + 1; ls < c->buf + head_end;) {
		char *lnl = memchr(ls, '\n', (size_t)(c->buf + head_end - ls));
		const char *le = dp__line_end(ls, lnl);
		int h;

		if (le == NULL) {
			dp__send_error(c, 400);
			return;
		}
		if (le == ls)
			break;  /* the blank line */
		h = dp__check_header(ls, le);
		if (h < 0) {
			dp__send_error(c, 400);
			return;
		}
		n_host += (size_t)h;
		ls = lnl + 1;
	}
	if (n_host > 1 || (minor == 1 && n_host == 0)) {
		dp__send_error(c, 400);
		return;
	}
	/* The target is split in place: the head buffer is ours until the
	 * connection closes. */
	path = (char *)target;
	path[tl] = '\0';
	q = strchr(path, '?');
	if (q) {
		*(char *)q = '\0';
		q++;
	}
	for (size_t i = 0; i < srv->n_routes; i++)
		if (strcmp(srv->routes[i].path, path) == 0)
			route = &srv->routes[i];
	if (route == NULL) {
		dp__send_error(c, 404);
		return;
	}
	req = (struct dp_httpd_request){ method, path, q ? q : "", c->peer };
	rc = route->fn(route->arg, &req, &resp);
	if (rc != 0 || resp.status < 200 || resp.status > 599 || (resp.len && !resp.body)) {
		DP_WARN("httpd", "handler failed path=%s err=\"%s\"", path,
			rc ? dp_error_detail(rc) : "bad response");
		free(resp.body);
		dp__send_error(c, 500);
		return;
	}
	dp__send(c, resp.status, resp.content_type ? resp.content_type : DP__TEXT, resp.body,
		 resp.len, ml == 4, method, path);
}

/* Scan the bytes that just arrived, line by line, for the end of the head.
 * The request line is checked as soon as it is complete so that garbage
 * and unsupported methods are answered without waiting for more. */
static void dp__on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct dp__conn *c = s->data;
	size_t from;

	if (c->state != DP__READING)
		return;
	if (nread < 0) {
		dp__conn_close(c);  /* EOF or error before a complete request */
		return;
	}
	from = c->used;
	c->used += (size_t)nread;
	if (memchr(c->buf + from, '\0', (size_t)nread)) {
		dp__send_error(c, 400);
		return;
	}
	for (size_t i = from; i < c->used; i++) {
		if (c->buf[i] != '\n')
			continue;
		if (!c->line_ok) {
			const char *end = dp__line_end(c->buf, c->buf + i), *t;
			size_t ml, tl;
			int minor, st;

			st = end ? dp__check_request_line(c->buf, end, &ml, &t, &tl, &minor) : 400;
			if (st != 0) {
				dp__send_error(c, st);
				return;
			}
			c->line_ok = true;
		} else if (i == c->line_start || (i == c->line_start + 1 &&
						  c->buf[c->line_start] == '\r')) {
			dp__dispatch(c, i + 1);
			return;
		}
		c->line_start = i + 1;
		if (++c->n_lines > DP_HTTPD_MAX_HEADERS + 1) {
			dp__send_error(c, 431);
			return;
		}
	}
	if (c->used >= DP_HTTPD_MAX_HEADER)
		dp__send_error(c, c->line_ok ? 431 : 414);
}

/* ---- accepting ---------------------------------------------------------------- */

static void dp__on_connection(uv_stream_t *server, int status)
{
	struct dp_httpd *srv = server->data;
	struct dp__conn *c;
	struct sockaddr_storage peer;
	int len = sizeof(peer);

	if (status < 0) {
		DP_WARN("httpd", "accept failed listen=%s err=\"%s\"", srv->listen,
			uv_strerror(status));
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		DP_WARN("httpd", "accept: out of memory listen=%s", srv->listen);
		return;
	}
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
	if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
		dp__conn_close(c);
		return;
	}
	if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&peer, &len) == 0)
		dp__addr_text(&peer, c->peer, sizeof(c->peer));
	else
		snprintf(c->peer, sizeof(c->peer), "?");
	if (srv->n_conns > srv->max_conns) {
		DP_WARN("httpd", "too many connections peer=%s max=%u", c->peer, srv->max_conns);
		dp__conn_close(c);
		return;
	}
	uv_timer_start(&c->timer, dp__on_deadline, srv->timeout_ms, 0);
	if (uv_read_start((uv_stream_t *)&c->tcp, dp__alloc, dp__on_read) != 0)
		dp__conn_close(c);
}

int dp_httpd_route(struct dp_httpd *h, const char *path, dp_httpd_handler fn, void *arg)
{
	struct dp__route *r;
	char *copy;

	if (h == NULL || path == NULL || path[0] != '/' || strchr(path, '?'))
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
	h->routes[h->n_routes++] = (struct dp__route){ copy, fn, arg };
	return 0;
}

int dp_httpd_new(uv_loop_t *loop, const struct dp_httpd_options *opt, struct dp_httpd **out)
{
	struct sockaddr_storage ss, bound;
	struct dp_httpd *srv;
	int len = sizeof(bound), rc;

	if (loop == NULL || opt == NULL || out == NULL)
		return dp_error_set(DP_EINVAL, "httpd: needs a loop, options and out");
	rc = dp_httpd_parse_addr(opt->listen, &ss);
	if (rc != 0)
		return rc;
	srv = calloc(1, sizeof(*srv));
	if (srv == NULL)
		return dp_error_set(DP_ENOMEM, "httpd: out of memory");
	srv->loop = loop;
	srv->metrics = opt->metrics;
	srv->max_conns = opt->max_connections ? opt->max_connections : DP_HTTPD_MAX_CONN_DEFAULT;
	srv->timeout_ms = opt->timeout_ms ? opt->timeout_ms : DP_HTTPD_TIMEOUT_MS_DEFAULT;
	snprintf(srv->listen, sizeof(srv->listen), "%s", opt->listen);
	rc = dp_httpd_route(srv, "/healthz", dp__builtin_healthz, NULL);
	if (rc == 0 && opt->metrics)
		rc = dp_httpd_route(srv, "/metrics", dp__builtin_metrics, opt->metrics);
	if (rc != 0) {
		for (size_t i = 0; i < srv->n_routes; i++)
			free(srv->routes[i].path);
		free(srv->routes);
		free(srv);
		return rc;
	}
	uv_tcp_init(loop, &srv->listener);
	srv->listener.data = srv;
	rc = uv_tcp_bind(&srv->listener, (const struct sockaddr *)&ss, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&srv->listener, 64, dp__on_connection);
	if (rc == 0)
		rc = uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&bound, &len);
	if (rc != 0) {
		dp_error_set(rc, "httpd: cannot listen on %s: %s", opt->listen, uv_strerror(rc));
		srv->closing = true;
		uv_close((uv_handle_t *)&srv->listener, dp__on_listener_closed);
		return rc;
	}
	srv->port = ntohs(bound.ss_family == AF_INET6 ?
			  ((struct sockaddr_in6 *)&bound)->sin6_port :
			  ((struct sockaddr_in *)&bound)->sin_port);
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

	for (const struct dp__conn *c = h ? h->conns : NULL; c; c = c->next)
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
	while (h->conns)
		dp__conn_close(h->conns);
	uv_close((uv_handle_t *)&h->listener, dp__on_listener_closed);
}
