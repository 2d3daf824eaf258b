#include "common/net/listener.h"
#include "common/core/error.h"
#include "common/core/log.h"
#include "common/net/addr.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BACKLOG 128

struct dp_listener {
	uv_tcp_t tcp;
	dp_listener_config cfg;
	size_t live;
	int started;            /* listening: the close hooks apply */
	int closing;
	int in_callback;        /* inside cfg.on_connection */
	int taken;              /* dp_listener_accept called in this callback */
	uint16_t port;
	char addr[DP_ADDR_TEXT_MAX];  /* bound address, for logs */
};

static void free_handle(uv_handle_t *h)
{
	free(h);
}

static void peer_text(uv_tcp_t *tcp, char *out, size_t size)
{
	struct sockaddr_storage ss;
	int len = (int)sizeof(ss);

	if (uv_tcp_getpeername(tcp, (struct sockaddr *)&ss, &len) == 0)
		dp_addr_format((struct sockaddr *)&ss, out, size);
	else
		out[0] = '\0';
}

/* Accept into a handle of our own and close it at once: libuv stops
 * watching the listening socket until a waiting connection is accepted,
 * so one that nobody takes must still be. */
static void refuse(dp_listener *l, const char *why)
{
	uv_tcp_t *t = malloc(sizeof(*t));
	char peer[DP_ADDR_TEXT_MAX] = "";

	if (t == NULL) {
		DP_WARN(l->cfg.tag, "cannot refuse a connection listen=%s: out of memory", l->addr);
		return;
	}
	if (uv_tcp_init(l->tcp.loop, t) < 0) {
		free(t);
		return;
	}
	if (uv_accept((uv_stream_t *)&l->tcp, (uv_stream_t *)t) == 0)
		peer_text(t, peer, sizeof(peer));
	DP_WARN(l->cfg.tag, "refusing a connection listen=%s peer=%s reason=\"%s\"", l->addr,
		peer, why);
	uv_close((uv_handle_t *)t, free_handle);
}

static void on_connection(uv_stream_t *server, int status)
{
	dp_listener *l = server->data;
	char why[96];
	int rc;

	if (status < 0) {
		DP_WARN(l->cfg.tag, "accept failed listen=%s err=\"%s\"", l->addr,
			uv_strerror(status));
		return;
	}
	if (l->cfg.max_conns != 0 && l->live >= l->cfg.max_conns) {
		snprintf(why, sizeof(why), "connection limit %zu reached", l->cfg.max_conns);
		refuse(l, why);
		return;
	}
	l->in_callback = 1;
	l->taken = 0;
	rc = l->cfg.on_connection(l, l->cfg.data);
	l->in_callback = 0;
	/* The callback may have closed the listener: then the socket (and the
	 * waiting connection with it) is closing already. */
	if (!l->taken && !l->closing)
		refuse(l, rc < 0 ? dp_error_detail(rc) : "not taken");
}

static void on_socket_closed(uv_handle_t *h)
{
	dp_listener *l = h->data;

	if (l->started && l->cfg.on_closed)
		l->cfg.on_closed(l->cfg.data);
	free(l);
}

int dp_listener_start_addr(uv_loop_t *loop, const dp_listener_config *cfg,
			   const struct sockaddr *sa, dp_listener **out)
{
	struct sockaddr_storage ss;
	int len = (int)sizeof(ss);
	dp_listener *l;
	int r;

	DP_REQUIRE(loop != NULL && cfg != NULL && cfg->on_connection != NULL && sa != NULL &&
		   out != NULL);
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return dp_error_set(DP_ENOMEM, "listen: out of memory");
	l->cfg = *cfg;
	if (l->cfg.tag == NULL)
		l->cfg.tag = "listener";
	dp_addr_format(sa, l->addr, sizeof(l->addr));
	r = uv_tcp_init(loop, &l->tcp);
	if (r < 0) {
		dp_error_set(r, "listen on %s: %s", l->addr, uv_strerror(r));
		free(l);
		return r;
	}
	l->tcp.data = l;
	r = uv_tcp_bind(&l->tcp, sa, 0);
	if (r == 0)
		r = uv_listen((uv_stream_t *)&l->tcp, BACKLOG, on_connection);
	if (r == 0)
		r = uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&ss, &len);
	if (r < 0) {
		dp_error_set(r, "listen on %s: %s", l->addr, uv_strerror(r));
		uv_close((uv_handle_t *)&l->tcp, on_socket_closed);
		return r;
	}
	dp_addr_format((struct sockaddr *)&ss, l->addr, sizeof(l->addr));
	l->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						 : ((struct sockaddr_in *)&ss)->sin_port);
	l->started = 1;
	*out = l;
	return 0;
}

/* A literal, or a name resolved synchronously (startup only). */
static int resolve(uv_loop_t *loop, const char *host, uint16_t port, struct sockaddr_storage *ss)
{
	uv_getaddrinfo_t req;
	struct addrinfo hints;
	char portstr[8];
	int r;

	memset(ss, 0, sizeof(*ss));
	if (uv_ip6_addr(host, port, (struct sockaddr_in6 *)ss) == 0)
		return 0;
	if (uv_ip4_addr(host, port, (struct sockaddr_in *)ss) == 0)
		return 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(portstr, sizeof(portstr), "%u", port);
	r = uv_getaddrinfo(loop, &req, NULL, host, portstr, &hints);
	if (r < 0)
		return dp_error_set(DP_ENOENT, "listen: cannot resolve '%s': %s", host, uv_strerror(r));
	memcpy(ss, req.addrinfo->ai_addr, req.addrinfo->ai_addrlen);
	uv_freeaddrinfo(req.addrinfo);
	return 0;
}

int dp_listener_start(uv_loop_t *loop, const dp_listener_config *cfg, const char *host,
		      uint16_t port, dp_listener **out)
{
	struct sockaddr_storage ss;
	int any = host == NULL || *host == '\0' || strcmp(host, "*") == 0;
	int r;

	DP_REQUIRE(loop != NULL && cfg != NULL && out != NULL);
	r = resolve(loop, any ? "::" : host, port, &ss);
	if (r == 0)
		r = dp_listener_start_addr(loop, cfg, (struct sockaddr *)&ss, out);
	if (r < 0 && any) {
		/* No IPv6 on this host: every IPv4 address instead. */
		r = resolve(loop, "0.0.0.0", port, &ss);
		if (r == 0)
			r = dp_listener_start_addr(loop, cfg, (struct sockaddr *)&ss, out);
	}
	return r;
}

int dp_listener_accept(dp_listener *l, uv_tcp_t *tcp, char *peer, size_t peer_size)
{
	int r;

	DP_REQUIRE(l != NULL && tcp != NULL && l->in_callback && !l->taken);
	/* Success or not, the waiting connection is used up (libuv closes a
	 * socket it could not adopt). */
	l->taken = 1;
	r = uv_accept((uv_stream_t *)&l->tcp, (uv_stream_t *)tcp);
	if (r < 0) {
		DP_WARN(l->cfg.tag, "accept failed listen=%s err=\"%s\"", l->addr, uv_strerror(r));
		return dp_error_set(r, "accept on %s: %s", l->addr, uv_strerror(r));
	}
	l->live++;
	if (peer != NULL && peer_size > 0)
		peer_text(tcp, peer, peer_size);
	return 0;
}

void dp_listener_release(dp_listener *l)
{
	DP_REQUIRE(l != NULL && !l->closing && l->live > 0);
	l->live--;
}

uint16_t dp_listener_port(const dp_listener *l)
{
	DP_REQUIRE(l != NULL);
	return l->port;
}

size_t dp_listener_live(const dp_listener *l)
{
	DP_REQUIRE(l != NULL);
	return l->live;
}

void dp_listener_close(dp_listener *l)
{
	DP_REQUIRE(l != NULL && !l->closing);
	l->closing = 1;
	if (l->cfg.on_close)
		l->cfg.on_close(l, l->cfg.data);
	uv_close((uv_handle_t *)&l->tcp, on_socket_closed);
}
