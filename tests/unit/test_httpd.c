/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP listener: a real server on 127.0.0.1:0 in a libuv loop on its own
 * thread, and plain blocking-socket clients on the test thread. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "common/core/error.h"
#include "common/net/httpd.h"
#include "common/net/metrics.h"

struct server {
	uv_loop_t loop;
	uv_async_t stop;
	uv_thread_t thread;
	uv_sem_t ready;
	struct dp_httpd *h;
	struct dp_metrics *reg;
	const char *listen;
	unsigned timeout_ms, max_conns;
	uint16_t port;
	int start_rc;        /* dp_httpd_new result, read after `ready` */
	int done_called;     /* dp_httpd_close's callback ran */
	int loop_close_rc;   /* uv_loop_close: UV_EBUSY if a handle leaked */
	size_t conns_at_stop;
};

static int status_handler(void *arg, const struct dp_httpd_request *req,
			  struct dp_httpd_response *resp)
{
	char body[256];
	int n = snprintf(body, sizeof(body), "{\"method\":\"%s\",\"path\":\"%s\",\"query\":\"%s\"}",
			 req->method, req->path, req->query);

	return dp_httpd_respond(resp, 200, "application/json", body, (size_t)n);
}

/* The client address as the server formats it (addr.h). */
static int peer_handler(void *arg, const struct dp_httpd_request *req,
			struct dp_httpd_response *resp)
{
	return dp_httpd_respond(resp, 200, NULL, req->peer, strlen(req->peer));
}

static int fail_handler(void *arg, const struct dp_httpd_request *req,
			struct dp_httpd_response *resp)
{
	/* A body set before failing must not leak or be sent. */
	dp_httpd_respond(resp, 200, NULL, "partial", 7);
	return dp_error_set(DP_EIO, "status source unavailable");
}

static int teapot_handler(void *arg, const struct dp_httpd_request *req,
			  struct dp_httpd_response *resp)
{
	resp->status = 418;
	return 0;  /* no body */
}

static void on_closed(void *arg)
{
	((struct server *)arg)->done_called++;
}

/* Shuts the whole server down from inside a request. */
static int quit_handler(void *arg, const struct dp_httpd_request *req,
			struct dp_httpd_response *resp)
{
	struct server *s = arg;

	dp_httpd_close(s->h, on_closed, s);
	uv_close((uv_handle_t *)&s->stop, NULL);
	return dp_httpd_respond(resp, 200, NULL, "bye\n", 4);
}

static void on_stop(uv_async_t *a)
{
	struct server *s = a->data;

	s->conns_at_stop = dp_httpd_connections(s->h);
	dp_httpd_close(s->h, on_closed, s);
	uv_close((uv_handle_t *)a, NULL);
}

static void server_main(void *arg)
{
	struct server *s = arg;
	struct dp_httpd_options opt = {
		.listen = s->listen,
		.timeout_ms = s->timeout_ms,
		.max_connections = s->max_conns,
		.metrics = s->reg,
	};

	uv_loop_init(&s->loop);
	s->start_rc = dp_httpd_new(&s->loop, &opt, &s->h);
	if (s->start_rc == 0) {
		s->port = dp_httpd_port(s->h);
		dp_httpd_route(s->h, "/status", status_handler, NULL);
		dp_httpd_route(s->h, "/peer", peer_handler, NULL);
		dp_httpd_route(s->h, "/fail", fail_handler, NULL);
		dp_httpd_route(s->h, "/teapot", teapot_handler, NULL);
		dp_httpd_route(s->h, "/quit", quit_handler, s);
		uv_async_init(&s->loop, &s->stop, on_stop);
		s->stop.data = s;
	}
	uv_sem_post(&s->ready);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	s->loop_close_rc = uv_loop_close(&s->loop);
}

static struct server *server_start(const char *listen, unsigned timeout_ms, unsigned max_conns)
{
	struct server *s = calloc(1, sizeof(*s));
	struct dp_metric *c;

	assert_non_null(s);
	s->listen = listen;
	s->timeout_ms = timeout_ms;
	s->max_conns = max_conns;
	assert_int_equal(dp_metrics_new(&s->reg), 0);
	assert_int_equal(dp_metrics_counter(s->reg, "t_requests_total", "Requests.", &c), 0);
	assert_int_equal(dp_metrics_add(c, 3), 0);
	assert_int_equal(uv_sem_init(&s->ready, 0), 0);
	assert_int_equal(uv_thread_create(&s->thread, server_main, s), 0);
	uv_sem_wait(&s->ready);
	return s;
}

/* Stop the server and check that everything it opened was closed.
 * quit: it was already closed by a request to /quit. */
static void server_join(struct server *s, bool quit)
{
	if (s->start_rc == 0 && !quit)
		uv_async_send(&s->stop);
	uv_thread_join(&s->thread);
	assert_int_equal(s->loop_close_rc, 0);
	if (s->start_rc == 0)
		assert_int_equal(s->done_called, 1);
	uv_sem_destroy(&s->ready);
	dp_metrics_destroy(s->reg);
	free(s);
}

static void server_stop(struct server *s)
{
	server_join(s, false);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int client_connect(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 10 };  /* a hung test fails instead of hanging */
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		assert_true(w > 0);
		p += w;
		n -= (size_t)w;
	}
}

/* Read until the server closes; returns the bytes (NUL-terminated) and
 * the recv result that ended it (0 = orderly EOF). */
static size_t read_all(int fd, char *buf, size_t cap, ssize_t *last)
{
	size_t got = 0;
	ssize_t r;

	for (;;) {
		r = recv(fd, buf + got, cap - 1 - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
		assert_true(got < cap - 1);
	}
	if (last)
		*last = r < 0 ? -errno : r;
	buf[got] = '\0';
	return got;
}

struct reply {
	char raw[65536];
	size_t len;
	int status;
	const char *body;
};

static void exchange(uint16_t port, const char *req, size_t len, struct reply *r)
{
	int fd = client_connect(port);
	ssize_t last;

	send_all(fd, req, len);
	r->len = read_all(fd, r->raw, sizeof(r->raw), &last);
	close(fd);
	assert_int_equal(last, 0);  /* the server closed cleanly, no reset */
	r->status = -1;
	assert_int_equal(sscanf(r->raw, "HTTP/1.1 %d ", &r->status), 1);
	r->body = strstr(r->raw, "\r\n\r\n");
	assert_non_null(r->body);
	r->body += 4;
}

static void get(uint16_t port, const char *req, struct reply *r)
{
	exchange(port, req, strlen(req), r);
}

/* Value of header `name` (exact case as we send them), or NULL. */
static const char *header(const struct reply *r, const char *name, char *out, size_t cap)
{
	char key[64];
	const char *p, *e;

	snprintf(key, sizeof(key), "\r\n%s: ", name);
	p = strstr(r->raw, key);
	if (p == NULL || p > r->body)
		return NULL;
	p += strlen(key);
	e = strstr(p, "\r\n");
	snprintf(out, cap, "%.*s", (int)(e - p), p);
	return out;
}

static void check_common_headers(const struct reply *r)
{
	char v[128];

	assert_non_null(header(r, "Connection", v, sizeof(v)));
	assert_string_equal(v, "close");
	assert_non_null(header(r, "Content-Length", v, sizeof(v)));
	assert_int_equal(strtoul(v, NULL, 10), strlen(r->body));
}

static void test_routes(void **state)
{
	struct server *s = server_start("127.0.0.1:0", 5000, 0);
	struct reply *r = malloc(sizeof(*r));
	char v[128];

	assert_int_equal(s->start_rc, 0);
	assert_true(s->port != 0);

	get(s->port, "GET /metrics HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n", r);
	assert_int_equal(r->status, 200);
	assert_memory_equal(r->raw, "HTTP/1.1 200 OK\r\n", 17);
	check_common_headers(r);
	assert_string_equal(header(r, "Content-Type", v, sizeof(v)),
			    "text/plain; version=0.0.4; charset=utf-8");
	assert_string_equal(r->body, "# HELP t_requests_total Requests.\n"
				     "# TYPE t_requests_total counter\n"
				     "t_requests_total 3\n");

	get(s->port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", r);
	assert_int_equal(r->status, 200);
	check_common_headers(r);
	assert_string_equal(r->body, "ok\n");

	/* Bare LF line ends and HTTP/1.0 without Host are accepted. */
	get(s->port, "GET /healthz HTTP/1.0\n\n", r);
	assert_int_equal(r->status, 200);
	assert_string_equal(r->body, "ok\n");

	get(s->port, "GET /status?verbose=1&x=%20 HTTP/1.1\r\nHost: x\r\n\r\n", r);
	assert_int_equal(r->status, 200);
	check_common_headers(r);
	assert_string_equal(header(r, "Content-Type", v, sizeof(v)), "application/json");
	assert_string_equal(r->body,
			    "{\"method\":\"GET\",\"path\":\"/status\",\"query\":\"verbose=1&x=%20\"}");

	/* HEAD: same headers, Content-Length of the GET body, no body. */
	get(s->port, "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n", r);
	assert_int_equal(r->status, 200);
	assert_string_equal(header(r, "Content-Length", v, sizeof(v)), "3");
	assert_string_equal(r->body, "");

	get(s->port, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", r);
	assert_int_equal(r->status, 404);
	assert_memory_equal(r->raw, "HTTP/1.1 404 Not Found\r\n", 24);
	check_common_headers(r);
	assert_string_equal(r->body, "404 Not Found\n");
	get(s->port, "GET /metrics/ HTTP/1.1\r\nHost: x\r\n\r\n", r);
	assert_int_equal(r->status, 404);

	get(s->port, "GET /fail HTTP/1.1\r\nHost: x\r\n\r\n", r);
	assert_int_equal(r->status, 500);
	check_common_headers(r);
	assert_string_equal(r->body, "500 Internal Server Error\n");

	get(s->port, "GET /peer HTTP/1.1\r\nHost: x\r\n\r\n", r);
	assert_int_equal(r->status, 200);
	assert_memory_equal(r->body, "127.0.0.1:", 10);
	assert_true(strtoul(r->body + 10, NULL, 10) > 0);

	get(s->port, "GET /teapot HTTP/1.1\r\nHost: x\r\n\r\n", r);
	assert_int_equal(r->status, 418);
	check_common_headers(r);
	assert_string_equal(r->body, "");

	/* The request may arrive one byte at a time. */
	{
		const char *req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
		int fd = client_connect(s->port);
		ssize_t last;

		for (const char *p = req; *p; p++) {
			send_all(fd, p, 1);
			usleep(1000);
		}
		r->len = read_all(fd, r->raw, sizeof(r->raw), &last);
		close(fd);
		assert_int_equal(last, 0);
		assert_non_null(strstr(r->raw, "\r\n\r\nok\n"));
	}

	free(r);
	server_stop(s);
}

static void test_bad_requests(void **state)
{
	struct server *s = server_start("127.0.0.1:0", 5000, 0);
	struct reply *r = malloc(sizeof(*r));
	char *big = malloc(20000);
	char v[64];
	size_t n;

	assert_int_equal(s->start_rc, 0);

	get(s->port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", r);
	assert_int_equal(r->status, 405);
	check_common_headers(r);
	assert_string_equal(header(r, "Allow", v, sizeof(v)), "GET, HEAD");
	get(s->port, "DELETE /x HTTP/1.1\r\n", r);  /* answered from the request line */
	assert_int_equal(r->status, 405);
	get(s->port, "get /healthz HTTP/1.1\r\nHost: x\r\n\r\n", r);  /* methods are case-sensitive */
	assert_int_equal(r->status, 405);

	/* Bytes after the head are never looked at, a NUL among them included:
	 * the answer must not depend on whether they came in the same read
	 * (found by fuzz_httpreq, docs/fuzz.md). */
	exchange(s->port, "GET /healthz HTTP/1.0\r\n\r\n\0body", 30, r);
	assert_int_equal(r->status, 200);
	exchange(s->port, "GET /healthz HTTP/1.0\r\n\0\r\n", 26, r);  /* inside the head */
	assert_int_equal(r->status, 400);

	get(s->port, "hello\r\n\r\n", r);
	assert_int_equal(r->status, 400);
	check_common_headers(r);
	assert_string_equal(r->body, "400 Bad Request\n");
	/* A TLS ClientHello sent to the plain port. */
	exchange(s->port, "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\n", 12, r);
	assert_int_equal(r->status, 400);
	{
		static const char nul[] = "GET /healthz HTTP/1.1\r\nHost: x\0y\r\n\r\n";

		exchange(s->port, nul, sizeof(nul) - 1, r);
		assert_int_equal(r->status, 400);
	}

	static const char *const bad[] = {
		"GET  /healthz HTTP/1.1\r\nHost: x\r\n\r\n",       /* two spaces */
		"GET /healthz  HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /healthz\r\nHost: x\r\n\r\n",                 /* HTTP/0.9 */
		"GET /healthz HTTP/1.1 extra\r\nHost: x\r\n\r\n",
		"GET healthz HTTP/1.1\r\nHost: x\r\n\r\n",         /* not origin-form */
		"GET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /health\x7fz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /healthz HTTP/1.1\r\n\r\n",                   /* 1.1 needs Host */
		"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n",       /* space before ':' */
		"GET /healthz HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nNo colon here\r\nHost: x\r\n\r\n",
		"GET /healthz HTTP/1.1\r\n: empty name\r\nHost: x\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost: x\ry\r\n\r\n",     /* bare CR */
		"GET /healthz HTTP/1.1\r\nHost: x\x01\r\n\r\n",
		"\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",    /* leading empty line */
		"GET /healthz HTTP/1.x\r\nHost: x\r\n\r\n",
		"GET /healthz http/1.1\r\nHost: x\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		get(s->port, bad[i], r);
		if (r->status != 400)
			print_error("request %zu: status %d\n", i, r->status);
		assert_int_equal(r->status, 400);
	}

	get(s->port, "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", r);
	assert_int_equal(r->status, 505);
	get(s->port, "GET /healthz HTTP/1.2\r\nHost: x\r\n\r\n", r);
	assert_int_equal(r->status, 505);

	/* Oversized header: a 12 KiB header value after a valid request line. */
	n = (size_t)snprintf(big, 20000, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
	memset(big + n, 'a', 12000);
	n += 12000;
	n += (size_t)snprintf(big + n, 20000 - n, "\r\n\r\n");
	exchange(s->port, big, n, r);
	assert_int_equal(r->status, 431);
	check_common_headers(r);
	assert_string_equal(r->body, "431 Request Header Fields Too Large\n");

	/* Exactly at the cap is still served: head of DP_HTTPD_MAX_HEADER bytes. */
	n = (size_t)snprintf(big, 20000, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ");
	memset(big + n, 'b', DP_HTTPD_MAX_HEADER - n - 4);
	memcpy(big + DP_HTTPD_MAX_HEADER - 4, "\r\n\r\n", 4);
	exchange(s->port, big, DP_HTTPD_MAX_HEADER, r);
	assert_int_equal(r->status, 200);
	big[DP_HTTPD_MAX_HEADER - 4] = 'b';  /* one byte more */
	memcpy(big + DP_HTTPD_MAX_HEADER - 3, "\r\n\r\n", 4);
	exchange(s->port, big, DP_HTTPD_MAX_HEADER + 1, r);
	assert_int_equal(r->status, 431);

	/* Too many header lines, each small. */
	n = (size_t)snprintf(big, 20000, "GET /healthz HTTP/1.1\r\nHost: x\r\n");
	for (int i = 0; i < (int)DP_HTTPD_MAX_HEADERS; i++)
		n += (size_t)snprintf(big + n, 20000 - n, "X-%d: y\r\n", i);
	n += (size_t)snprintf(big + n, 20000 - n, "\r\n");
	exchange(s->port, big, n, r);
	assert_int_equal(r->status, 431);

	/* Request line longer than the cap. */
	n = (size_t)snprintf(big, 20000, "GET /");
	memset(big + n, 'p', 10000);
	n += 10000;
	n += (size_t)snprintf(big + n, 20000 - n, " HTTP/1.1\r\nHost: x\r\n\r\n");
	exchange(s->port, big, n, r);
	assert_int_equal(r->status, 414);

	/* The server is still fine. */
	get(s->port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", r);
	assert_int_equal(r->status, 200);

	free(big);
	free(r);
	server_stop(s);
}

static void test_timeout(void **state)
{
	struct server *s = server_start("127.0.0.1:0", 300, 0);
	char buf[256];
	ssize_t last;
	double t0, dt;
	int fd;

	assert_int_equal(s->start_rc, 0);

	/* Connects and sends nothing: closed after the 300 ms deadline.
	 * Bounds: not before 0.25 s (timer granularity), and well before the
	 * client's own 10 s receive timeout (3 s allows a loaded machine). */
	fd = client_connect(s->port);
	t0 = now();
	assert_int_equal(read_all(fd, buf, sizeof(buf), &last), 0);
	dt = now() - t0;
	close(fd);
	assert_int_equal(last, 0);
	assert_true(dt >= 0.25);
	assert_true(dt < 3.0);

	/* Sends part of a request line and stalls (slowloris). */
	fd = client_connect(s->port);
	send_all(fd, "GET /hea", 8);
	t0 = now();
	assert_int_equal(read_all(fd, buf, sizeof(buf), &last), 0);
	dt = now() - t0;
	close(fd);
	assert_true(dt >= 0.2);
	assert_true(dt < 3.0);

	/* A prompt client is still served. */
	{
		struct reply *r = malloc(sizeof(*r));

		get(s->port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", r);
		assert_int_equal(r->status, 200);
		free(r);
	}
	server_stop(s);
}

/* At the cap (2) a third connection evicts the oldest one and is served;
 * the evicted client sees its connection end at once, long before the 5 s
 * deadline.  Idle clients therefore cannot keep a scraper out. */
static void test_connection_cap(void **state)
{
	struct server *s = server_start("127.0.0.1:0", 5000, 2);
	struct reply *r = malloc(sizeof(*r));
	const char *req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	char buf[256];
	ssize_t last;
	double t0, dt;
	int a, b, c;

	assert_int_equal(s->start_rc, 0);
	a = client_connect(s->port);
	b = client_connect(s->port);
	/* Make sure the server has accepted both clients before the third:
	 * one byte each (an incomplete request keeps them open). */
	send_all(a, "G", 1);
	send_all(b, "G", 1);
	usleep(200000);
	c = client_connect(s->port);
	send_all(c, req, strlen(req));
	r->len = read_all(c, r->raw, sizeof(r->raw), &last);
	close(c);
	assert_non_null(strstr(r->raw, "HTTP/1.1 200 OK\r\n"));

	/* a, the oldest, was closed (EOF or reset) to make room. */
	t0 = now();
	read_all(a, buf, sizeof(buf), &last);
	dt = now() - t0;
	assert_true(last == 0 || last == -ECONNRESET);
	assert_true(dt < 2.5);
	close(a);
	close(b);
	free(r);
	server_stop(s);
}

/* A handler closes the server: its response is dropped, the connection
 * closed, and the loop ends with every handle freed. */
static void test_close_from_handler(void **state)
{
	struct server *s = server_start("127.0.0.1:0", 5000, 0);
	const char *req = "GET /quit HTTP/1.1\r\nHost: x\r\n\r\n";
	char buf[256];
	ssize_t last;
	int fd;

	assert_int_equal(s->start_rc, 0);
	fd = client_connect(s->port);
	send_all(fd, req, strlen(req));
	assert_int_equal(read_all(fd, buf, sizeof(buf), &last), 0);
	close(fd);
	assert_true(last == 0 || last == -ECONNRESET);
	server_join(s, true);
}

/* Closing the server with clients still connected frees everything. */
static void test_close_with_clients(void **state)
{
	struct server *s = server_start("127.0.0.1:0", 5000, 0);
	char buf[64];
	ssize_t last;
	int a, b;

	assert_int_equal(s->start_rc, 0);
	a = client_connect(s->port);
	b = client_connect(s->port);
	send_all(a, "GET /", 5);
	send_all(b, "G", 1);
	usleep(200000);
	server_stop(s);  /* asserts uv_loop_close == 0 and the done callback */
	read_all(a, buf, sizeof(buf), &last);
	assert_true(last == 0 || last == -ECONNRESET);
	close(a);
	close(b);
}

static int connect6(uint16_t port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(AF_INET6, SOCK_STREAM, 0);

	a.sin6_port = htons(port);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void test_ipv6(void **state)
{
	struct server *s = server_start("[::1]:0", 2000, 0);
	const char *req = "GET /healthz HTTP/1.1\r\nHost: [::1]\r\n\r\n";
	const char *preq = "GET /peer HTTP/1.1\r\nHost: [::1]\r\n\r\n";
	char buf[512];
	ssize_t last;
	int fd;

	if (s->start_rc != 0) {
		server_stop(s);
		skip();  /* no IPv6 loopback on this machine */
	}
	fd = connect6(s->port);
	send_all(fd, req, strlen(req));
	read_all(fd, buf, sizeof(buf), &last);
	close(fd);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(buf, "\r\n\r\nok\n"));
	/* The peer as the server formats it. */
	fd = connect6(s->port);
	send_all(fd, preq, strlen(preq));
	read_all(fd, buf, sizeof(buf), &last);
	close(fd);
	assert_non_null(strstr(buf, "\r\n\r\n[::1]:"));
	server_stop(s);
}

static void test_bind_errors(void **state)
{
	struct server *s = server_start("127.0.0.1:0", 2000, 0);
	struct dp_httpd_options opt = { 0 };
	struct dp_httpd *h = (struct dp_httpd *)0x1;
	uv_loop_t loop;
	char addr[32];
	int rc;

	assert_int_equal(s->start_rc, 0);
	uv_loop_init(&loop);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", s->port);
	opt.listen = addr;
	rc = dp_httpd_new(&loop, &opt, &h);
	assert_int_equal(rc, -EADDRINUSE);
	assert_non_null(strstr(dp_error_detail(rc), "cannot listen on 127.0.0.1:"));
	assert_ptr_equal(h, (struct dp_httpd *)0x1);
	/* The listen address is a literal (addr.h, test_addr.c has the forms). */
	opt.listen = "nowhere:80";
	assert_int_equal(dp_httpd_new(&loop, &opt, &h), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL), "listen address 'nowhere:80': expected "
			    "IPV4:PORT, [IPV6]:PORT or localhost:PORT");
	opt.listen = NULL;
	assert_int_equal(dp_httpd_new(&loop, &opt, &h), DP_EINVAL);
	/* The failed listener's handle is released by the loop. */
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
	server_stop(s);
}

static void test_routes_api(void **state)
{
	struct dp_httpd_response resp = { 0 };
	uv_loop_t loop;
	struct dp_httpd *h;
	struct dp_httpd_options opt = { .listen = "127.0.0.1:0" };

	uv_loop_init(&loop);
	assert_int_equal(dp_httpd_new(&loop, &opt, &h), 0);
	assert_int_equal(dp_httpd_route(h, "status", status_handler, NULL), DP_EINVAL);
	assert_int_equal(dp_httpd_route(h, "/s?x", status_handler, NULL), DP_EINVAL);
	assert_int_equal(dp_httpd_route(h, "/s", NULL, NULL), DP_ENOENT);
	assert_int_equal(dp_httpd_route(h, "/s", status_handler, NULL), 0);
	assert_int_equal(dp_httpd_route(h, "/s", fail_handler, NULL), 0);  /* replaces */
	assert_int_equal(dp_httpd_route(h, "/s", NULL, NULL), 0);
	assert_int_equal(dp_httpd_route(h, "/healthz", NULL, NULL), 0);
	assert_int_equal(dp_httpd_connections(h), 0);
	dp_httpd_close(h, NULL, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);

	assert_int_equal(dp_httpd_respond(&resp, 199, NULL, "x", 1), DP_EINVAL);
	assert_int_equal(dp_httpd_respond(&resp, 600, NULL, "x", 1), DP_EINVAL);
	assert_null(resp.body);
	assert_int_equal(dp_httpd_respond(&resp, 201, NULL, "abc", 3), 0);
	assert_int_equal(resp.status, 201);
	assert_string_equal(resp.content_type, "text/plain; charset=utf-8");
	assert_int_equal(resp.len, 3);
	assert_memory_equal(resp.body, "abc", 3);
	free(resp.body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes_api),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_connection_cap),
		cmocka_unit_test(test_close_with_clients),
		cmocka_unit_test(test_close_from_handler),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_bind_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
