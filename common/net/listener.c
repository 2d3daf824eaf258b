/* SPDX-License-Identifier: Apache-2.0 */
#include "common/net/listener.h"
#include "common/core/error.h"
#include "common/core/log.h"
#include "common/net/addr.h"
#include "common/net/metrics.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel's accept queue.  When it is full, Linux drops new SYNs and
 * the peer retries after 1 s, then 3 s: a flood of idle connections that
 * keeps a short queue full delays an owner's connect by seconds however
 * fast we accept and evict.  A long queue (the kernel caps it at
 * net.core.somaxconn, 4096 by default since Linux 5.4) lets every such
 * connection wait in it and be accepted, and evicted, in turn. */
#define BACKLOG 4096
/* Accepts in a row before the loop gets a turn.  libuv accepts until the
 * kernel's queue is empty; a flood that refills it as fast as we evict
 * would keep the loop from ever reading an owner's handshake. */
#define ACCEPT_BURST 32
/* At most one warning per this many ms about evictions and refusals: a
 * flood of strangers must not become a flood of log lines. */
#define WARN_EVERY_MS 10000

enum slot_state { SLOT_NONE = 0, SLOT_IDLE, SLOT_ACTIVE, SLOT_SETTLED, SLOT_GONE };

struct list {
	dp_listener_slot *head, *tail;   /* oldest first */
};

struct dp_listener {
	uv_tcp_t tcp;
	uv_idle_t resume;       /* the next accept, after a turn of the loop */
	int handles;            /* handles whose close callback is still due */
	unsigned burst;         /* accepts since the loop last had a turn */
	int deferred;           /* a connection waits in libuv for resume */
	dp_listener_config cfg;
	size_t live;
	size_t pending;
	struct list idle, active;
	uint64_t evicted, refused;
	uint32_t next_seq;      /* dp_listener_slot.seq of the next accept */
	uint64_t warn_at;       /* uv_now of the last warning (0: none yet) */
	uint64_t quiet_evicted, quiet_refused;  /* since that warning */
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

/* ---- pending lists ------------------------------------------------------- */

static void list_push(struct list *li, dp_listener_slot *s)
{
	s->next = NULL;
	s->prev = li->tail;
	if (li->tail)
		li->tail->next = s;
	else
		li->head = s;
	li->tail = s;
}

/* Into the active list by accept order, not by the order of activation:
 * a connection accepted first is the oldest even when its first byte was
 * read after a later one's.  The walk starts at the tail, where a slot
 * that has just spoken normally belongs. */
static void list_insert_by_age(struct list *li, dp_listener_slot *s)
{
	dp_listener_slot *after = li->tail;

	while (after != NULL && (int32_t)(after->seq - s->seq) > 0)
		after = after->prev;
	s->prev = after;
	s->next = after ? after->next : li->head;
	if (s->next)
		s->next->prev = s;
	else
		li->tail = s;
	if (after)
		after->next = s;
	else
		li->head = s;
}

static void list_unlink(struct list *li, dp_listener_slot *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		li->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		li->tail = s->prev;
	s->prev = s->next = NULL;
}

static struct list *list_of(dp_listener *l, dp_listener_slot *s)
{
	return s->state == SLOT_IDLE ? &l->idle : &l->active;
}

static void gauge(dp_listener *l)
{
	if (l->cfg.m_pending)
		dp_metrics_set(l->cfg.m_pending, (double)l->pending);
}

/* The address without its port, IPv4-mapped IPv6 folded into IPv4, so
 * that one host counts once whichever way it reached a dual-stack socket. */
static void addr_key(uv_tcp_t *tcp, unsigned char key[17])
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct sockaddr_storage ss;
	int len = (int)sizeof(ss);

	memset(key, 0, 17);
	if (uv_tcp_getpeername(tcp, (struct sockaddr *)&ss, &len) != 0)
		return;
	if (ss.ss_family == AF_INET) {
		key[0] = 4;
		memcpy(key + 1, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	} else if (ss.ss_family == AF_INET6) {
		const unsigned char *a = ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr;

		if (memcmp(a, mapped, 12) == 0) {
			key[0] = 4;
			memcpy(key + 1, a + 12, 4);
		} else {
			key[0] = 6;
			memcpy(key + 1, a, 16);
		}
	}
}

/* Bytes already waiting on the socket of an idle slot: its peer has
 * spoken even if the loop has not read it yet.  A peer that has closed
 * (end of stream) has not: it is evicted first. */
static int has_input(dp_listener_slot *s)
{
	uv_os_fd_t fd;
	char b;
	ssize_t n;

	if (uv_fileno((uv_handle_t *)s->tcp, &fd) != 0)
		return 0;
	n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return n > 0;
}

static void warn_limited(dp_listener *l, const char *what, const char *peer, const char *why)
{
	uint64_t now = uv_now(l->tcp.loop);

	if (l->warn_at != 0 && now - l->warn_at < WARN_EVERY_MS)
		return;
	DP_WARN(l->cfg.tag, "%s listen=%s peer=%s reason=\"%s\" pending=%zu live=%zu "
		"evicted_since_last=%llu refused_since_last=%llu (at most one such line per %d s)",
		what, l->addr, peer, why, l->pending, l->live,
		(unsigned long long)l->quiet_evicted, (unsigned long long)l->quiet_refused,
		WARN_EVERY_MS / 1000);
	l->warn_at = now ? now : 1;
	l->quiet_evicted = l->quiet_refused = 0;
}

static void count_refused(dp_listener *l, const char *peer, const char *why)
{
	l->refused++;
	l->quiet_refused++;
	if (l->cfg.m_refused)
		dp_metrics_inc(l->cfg.m_refused);
	warn_limited(l, "refusing a connection", peer, why);
}

/* Whether active slot s has stalled: nothing heard for stall_ms and
 * nothing waiting unread (bytes waiting mean that we are the slow side:
 * they count as heard now, which also spares the next look a system call). */
static int stalled(dp_listener *l, dp_listener_slot *s, uint64_t now)
{
	if (l->cfg.stall_ms == 0)
		return 1;
	if (s->held || now - s->heard < l->cfg.stall_ms)
		return 0;
	if (has_input(s)) {
		s->heard = now;
		return 0;
	}
	return 1;
}

/* The oldest pending slot (of address key, or of any when key is NULL),
 * never `except`: the oldest idle one, else the oldest stalled one, else
 * (unless keep_progress) the oldest active one.  An idle one whose peer
 * has sent bytes meanwhile becomes active on the way. */
static dp_listener_slot *victim(dp_listener *l, const unsigned char *key,
				dp_listener_slot *except, int keep_progress)
{
	uint64_t now = uv_now(l->tcp.loop);
	dp_listener_slot *s, *next;

	for (s = l->idle.head; s != NULL; s = next) {
		next = s->next;
		if (s == except || (key && memcmp(s->key, key, 17) != 0))
			continue;
		if (!has_input(s))
			return s;
		list_unlink(&l->idle, s);
		s->state = SLOT_ACTIVE;
		s->heard = now;
		list_insert_by_age(&l->active, s);
	}
	for (s = l->active.head; s != NULL; s = s->next)
		if (s != except && (key == NULL || memcmp(s->key, key, 17) == 0) &&
		    stalled(l, s, now))
			return s;
	if (keep_progress)
		return NULL;
	for (s = l->active.head; s != NULL; s = s->next)
		if (s != except && (key == NULL || memcmp(s->key, key, 17) == 0))
			return s;
	return NULL;
}

static size_t pending_from(dp_listener *l, const unsigned char *key, dp_listener_slot *except)
{
	size_t n = 0;

	for (dp_listener_slot *s = l->idle.head; s; s = s->next)
		n += s != except && memcmp(s->key, key, 17) == 0;
	for (dp_listener_slot *s = l->active.head; s; s = s->next)
		n += s != except && memcmp(s->key, key, 17) == 0;
	return n;
}

static void evict(dp_listener *l, dp_listener_slot *s, const char *peer, const char *why)
{
	list_unlink(list_of(l, s), s);
	s->state = SLOT_GONE;
	l->pending--;
	l->live--;
	l->evicted++;
	l->quiet_evicted++;
	if (l->cfg.m_evicted)
		dp_metrics_inc(l->cfg.m_evicted);
	gauge(l);
	warn_limited(l, "evicting the oldest pending connection for a new one", peer, why);
	l->cfg.on_evict(l, s, l->cfg.data);
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
	count_refused(l, peer, why);
	uv_close((uv_handle_t *)t, free_handle);
}

static void on_connection(uv_stream_t *server, int status);

static void on_resume(uv_idle_t *h)
{
	dp_listener *l = h->data;

	uv_idle_stop(h);
	l->deferred = 0;
	l->burst = 0;
	if (!l->closing)
		on_connection((uv_stream_t *)&l->tcp, 0);
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
	if (l->burst >= ACCEPT_BURST) {
		/* Not taking it makes libuv hold it and stop watching the socket
		 * until it is accepted: in on_resume, after this turn's reads. */
		if (!l->deferred) {
			l->deferred = 1;
			uv_idle_start(&l->resume, on_resume);
		}
		return;
	}
	l->burst++;
	/* Full of settled connections (or no eviction): refuse before any
	 * allocation.  With pending ones, dp_listener_accept evicts. */
	if (l->cfg.max_conns != 0 && l->live >= l->cfg.max_conns &&
	    (l->cfg.on_evict == NULL || l->pending == 0)) {
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

	if (--l->handles > 0)
		return;
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
	DP_REQUIRE(cfg->on_evict != NULL ||
		   (cfg->max_pending == 0 && cfg->max_pending_per_addr == 0));
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
	uv_idle_init(loop, &l->resume);
	l->resume.data = l;
	l->handles = 2;
	r = uv_tcp_bind(&l->tcp, sa, 0);
	if (r == 0)
		r = uv_listen((uv_stream_t *)&l->tcp, BACKLOG, on_connection);
	if (r == 0)
		r = uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&ss, &len);
	if (r < 0) {
		dp_error_set(r, "listen on %s: %s", l->addr, uv_strerror(r));
		uv_close((uv_handle_t *)&l->resume, on_socket_closed);
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

/* Room for the pending connection of slot, just accepted: evict what the
 * limits require.  0, or -EAGAIN when only settled connections fill
 * max_conns. */
static int make_room(dp_listener *l, dp_listener_slot *slot, const char *peer)
{
	dp_listener_slot *v;
	char why[96];

	if (l->cfg.max_pending_per_addr != 0 &&
	    pending_from(l, slot->key, slot) >= l->cfg.max_pending_per_addr) {
		/* Never a handshake of the same address that is getting on: a
		 * storm from one address (a NAT, every owner back after a
		 * learner restart) would cut its own handshakes for ever. */
		v = victim(l, slot->key, slot, 1);
		if (v == NULL)
			return dp_error_set(-EAGAIN, "pending limit per address %zu reached, each "
					    "of them making progress",
					    l->cfg.max_pending_per_addr);
		snprintf(why, sizeof(why), "pending limit per address %zu reached",
			 l->cfg.max_pending_per_addr);
		evict(l, v, peer, why);
	}
	if (l->cfg.max_pending != 0 && l->pending > l->cfg.max_pending) {
		v = victim(l, NULL, slot, 0);
		if (v != NULL) {
			snprintf(why, sizeof(why), "pending limit %zu reached", l->cfg.max_pending);
			evict(l, v, peer, why);
		}
	}
	if (l->cfg.max_conns != 0 && l->live > l->cfg.max_conns) {
		v = l->cfg.on_evict ? victim(l, NULL, slot, 0) : NULL;
		snprintf(why, sizeof(why), "connection limit %zu reached", l->cfg.max_conns);
		if (v == NULL)
			return dp_error_set(-EAGAIN, "%s", why);
		evict(l, v, peer, why);
	}
	return 0;
}

int dp_listener_accept(dp_listener *l, uv_tcp_t *tcp, dp_listener_slot *slot, char *peer,
		       size_t peer_size)
{
	char who[DP_ADDR_TEXT_MAX];
	int r;

	DP_REQUIRE(l != NULL && tcp != NULL && slot != NULL && l->in_callback && !l->taken);
	DP_REQUIRE(slot->state == SLOT_NONE || slot->state == SLOT_GONE);
	/* Success or not, the waiting connection is used up (libuv closes a
	 * socket it could not adopt). */
	l->taken = 1;
	r = uv_accept((uv_stream_t *)&l->tcp, (uv_stream_t *)tcp);
	if (r < 0) {
		DP_WARN(l->cfg.tag, "accept failed listen=%s err=\"%s\"", l->addr, uv_strerror(r));
		return dp_error_set(r, "accept on %s: %s", l->addr, uv_strerror(r));
	}
	peer_text(tcp, who, sizeof(who));
	memset(slot, 0, sizeof(*slot));
	slot->tcp = tcp;
	addr_key(tcp, slot->key);
	slot->seq = l->next_seq++;
	/* A peer that spoke before we accepted is not idle. */
	slot->state = has_input(slot) ? SLOT_ACTIVE : SLOT_IDLE;
	slot->heard = uv_now(l->tcp.loop);
	list_push(list_of(l, slot), slot);
	l->live++;
	l->pending++;
	r = make_room(l, slot, who);
	if (r < 0) {
		list_unlink(list_of(l, slot), slot);
		slot->state = SLOT_GONE;
		l->live--;
		l->pending--;
		count_refused(l, who, dp_error_detail(r));
		return r;
	}
	gauge(l);
	if (peer != NULL && peer_size > 0)
		snprintf(peer, peer_size, "%s", who);
	return 0;
}

void dp_listener_progress(dp_listener *l, dp_listener_slot *slot)
{
	DP_REQUIRE(l != NULL && slot != NULL && !l->closing);
	if (slot->state != SLOT_IDLE && slot->state != SLOT_ACTIVE)
		return;
	slot->held = 0;
	slot->heard = uv_now(l->tcp.loop);
	if (slot->state != SLOT_IDLE)
		return;
	list_unlink(&l->idle, slot);
	slot->state = SLOT_ACTIVE;
	list_insert_by_age(&l->active, slot);
}

void dp_listener_hold(dp_listener *l, dp_listener_slot *slot)
{
	DP_REQUIRE(l != NULL && slot != NULL && !l->closing);
	if (slot->state == SLOT_IDLE || slot->state == SLOT_ACTIVE)
		slot->held = 1;
}

void dp_listener_settle(dp_listener *l, dp_listener_slot *slot)
{
	DP_REQUIRE(l != NULL && slot != NULL && !l->closing);
	if (slot->state != SLOT_IDLE && slot->state != SLOT_ACTIVE)
		return;
	list_unlink(list_of(l, slot), slot);
	slot->state = SLOT_SETTLED;
	l->pending--;
	gauge(l);
}

void dp_listener_release(dp_listener *l, dp_listener_slot *slot)
{
	DP_REQUIRE(l != NULL && slot != NULL && !l->closing);
	switch (slot->state) {
	case SLOT_IDLE:
	case SLOT_ACTIVE:
		list_unlink(list_of(l, slot), slot);
		l->pending--;
		gauge(l);
		/* fall through */
	case SLOT_SETTLED:
		DP_REQUIRE(l->live > 0);
		l->live--;
		break;
	default:
		break;
	}
	slot->state = SLOT_GONE;
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

size_t dp_listener_pending(const dp_listener *l)
{
	DP_REQUIRE(l != NULL);
	return l->pending;
}

uint64_t dp_listener_evicted(const dp_listener *l)
{
	DP_REQUIRE(l != NULL);
	return l->evicted;
}

uint64_t dp_listener_refused(const dp_listener *l)
{
	DP_REQUIRE(l != NULL);
	return l->refused;
}

void dp_listener_close(dp_listener *l)
{
	DP_REQUIRE(l != NULL && !l->closing);
	l->closing = 1;
	if (l->cfg.on_close)
		l->cfg.on_close(l, l->cfg.data);
	uv_close((uv_handle_t *)&l->resume, on_socket_closed);
	uv_close((uv_handle_t *)&l->tcp, on_socket_closed);
}
