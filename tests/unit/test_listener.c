/* SPDX-License-Identifier: Apache-2.0 */
/* The TCP listener on its own: port 0, every address, the cap on live
 * connections (accept-and-close beyond it, room again after a release),
 * the pending limits (eviction of the oldest pending connection of the
 * same address, idle before stalled before active, never a settled one,
 * never one making progress for a newcomer of its address), refusals, the
 * close hooks, bind errors.  Plain libuv clients on
 * loopback in the same loop as the listener. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <uv.h>

#include "common/core/error.h"
#include "common/net/addr.h"
#include "common/net/listener.h"

#define MAXC 48

struct peer {             /* the server's side of an accepted connection */
	uv_tcp_t tcp;
	dp_listener_slot slot;
	int open;
	char addr[DP_ADDR_TEXT_MAX];
};

struct client {
	uv_tcp_t tcp;
	uv_connect_t creq;
	char buf[64];
	int connected;        /* 1 ok, < 0 error */
	int ended;            /* read EOF or an error: the server closed */
	int open;
};

struct fix {
	uv_loop_t loop;
	uv_timer_t tick;      /* keeps UV_RUN_ONCE from blocking for long */
	dp_listener *l;
	int refuse;           /* on_connection refuses instead of accepting */
	int may_refuse;       /* dp_listener_accept may refuse (-EAGAIN) */
	int refused_at_accept;
	int closed_in_callback;
	int accepted;
	int on_close_calls, on_closed_calls;
	int evicted[MAXC];    /* peer indices, in the order evicted */
	int n_evicted;
	struct peer peer[MAXC];
	struct client cli[MAXC];
	int n_cli;
};

static void on_tick(uv_timer_t *t)
{
}

static void nothing_closed(uv_handle_t *h);

static int on_connection(dp_listener *l, void *data)
{
	struct fix *f = data;
	struct peer *p;

	assert_ptr_equal(l, f->l);
	if (f->refuse)
		return dp_error_set(DP_ENOMEM, "test refuses");
	assert_true(f->accepted < MAXC);
	p = &f->peer[f->accepted];
	assert_int_equal(uv_tcp_init(&f->loop, &p->tcp), 0);
	if (f->may_refuse) {
		int r = dp_listener_accept(l, &p->tcp, &p->slot, p->addr, sizeof(p->addr));

		if (r == -EAGAIN) {
			/* The handle stays ours to close; its peer index is used
			 * up (a closing handle is not initialised again). */
			uv_close((uv_handle_t *)&p->tcp, nothing_closed);
			f->refused_at_accept++;
			f->accepted++;
			return 0;
		}
		assert_int_equal(r, 0);
		p->open = 1;
		f->accepted++;
		return 0;
	}
	assert_int_equal(dp_listener_accept(l, &p->tcp, &p->slot, p->addr, sizeof(p->addr)), 0);
	p->open = 1;
	f->accepted++;
	return 0;
}

/* As a user must: close the evicted connection at once. */
static void on_evict(dp_listener *l, dp_listener_slot *s, void *data)
{
	struct fix *f = data;
	struct peer *p = (struct peer *)((char *)s - offsetof(struct peer, slot));

	assert_ptr_equal(l, f->l);
	assert_true(p->open);
	uv_close((uv_handle_t *)&p->tcp, nothing_closed);
	p->open = 0;
	f->evicted[f->n_evicted++] = (int)(p - f->peer);
	/* Released later, as a connection would be from its close callback:
	 * a no-op for an evicted slot. */
	dp_listener_release(l, s);
}

static void on_close(dp_listener *l, void *data)
{
	struct fix *f = data;

	assert_ptr_equal(l, f->l);
	f->on_close_calls++;
}

static void on_closed(void *data)
{
	((struct fix *)data)->on_closed_calls++;
}

static dp_listener_config config(struct fix *f, size_t max_conns)
{
	dp_listener_config c = {
		.tag = "test", .max_conns = max_conns, .on_connection = on_connection,
		.on_close = on_close, .on_closed = on_closed, .data = f,
	};

	return c;
}

static void fix_init(struct fix *f)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(uv_loop_init(&f->loop), 0);
	uv_timer_init(&f->loop, &f->tick);
	uv_timer_start(&f->tick, on_tick, 10, 10);
}

#define RUN_UNTIL(f, cond)                                                             \
	do {                                                                           \
		uint64_t t0_ = uv_now(&(f)->loop);                                     \
		while (!(cond)) {                                                      \
			uv_run(&(f)->loop, UV_RUN_ONCE);                               \
			if (uv_now(&(f)->loop) - t0_ > 5000)                           \
				fail_msg("timed out waiting for %s", #cond);           \
		}                                                                      \
	} while (0)

static void nothing_closed(uv_handle_t *h)
{
}

static void cli_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
	struct client *c = h->data;

	*b = uv_buf_init(c->buf, sizeof(c->buf));
}

static void cli_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct client *c = s->data;

	if (n < 0)
		c->ended = 1;
}

static void cli_connected(uv_connect_t *req, int status)
{
	struct client *c = req->data;

	c->connected = status == 0 ? 1 : status;
	if (status == 0)
		assert_int_equal(uv_read_start((uv_stream_t *)&c->tcp, cli_alloc, cli_read), 0);
}

static struct client *cli_connect(struct fix *f, const char *ip, uint16_t port)
{
	struct client *c = &f->cli[f->n_cli++];
	struct sockaddr_storage ss;

	assert_true(f->n_cli <= MAXC);
	if (strchr(ip, ':'))
		assert_int_equal(uv_ip6_addr(ip, port, (struct sockaddr_in6 *)&ss), 0);
	else
		assert_int_equal(uv_ip4_addr(ip, port, (struct sockaddr_in *)&ss), 0);
	assert_int_equal(uv_tcp_init(&f->loop, &c->tcp), 0);
	c->tcp.data = c;
	c->creq.data = c;
	c->open = 1;
	assert_int_equal(uv_tcp_connect(&c->creq, &c->tcp, (struct sockaddr *)&ss, cli_connected),
			 0);
	return c;
}

/* Close whatever is still open, close the listener if the test did not,
 * and check that the loop ends with every handle closed. */
static void fix_done(struct fix *f)
{
	for (int i = 0; i < f->n_cli; i++)
		if (f->cli[i].open)
			uv_close((uv_handle_t *)&f->cli[i].tcp, nothing_closed);
	for (int i = 0; i < f->accepted; i++)
		if (f->peer[i].open)
			uv_close((uv_handle_t *)&f->peer[i].tcp, nothing_closed);
	if (f->l != NULL)
		dp_listener_close(f->l);
	uv_close((uv_handle_t *)&f->tick, nothing_closed);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&f->loop), 0);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_port0_and_close(void **state)
{
	struct fix f;
	dp_listener_config c;
	struct client *cl;
	uint16_t port;

	fix_init(&f);
	c = config(&f, 0);
	assert_int_equal(dp_listener_start(&f.loop, &c, "127.0.0.1", 0, &f.l), 0);
	port = dp_listener_port(f.l);
	assert_true(port != 0);
	assert_int_equal(dp_listener_live(f.l), 0);

	cl = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 1 && cl->connected == 1);
	assert_int_equal(dp_listener_live(f.l), 1);
	/* The peer as dp_addr_format writes it. */
	assert_memory_equal(f.peer[0].addr, "127.0.0.1:", 10);
	assert_true(strtoul(f.peer[0].addr + 10, NULL, 10) > 0);

	/* on_close runs inside dp_listener_close; on_closed from the loop.
	 * The accepted connection is not touched. */
	dp_listener_close(f.l);
	assert_int_equal(f.on_close_calls, 1);
	assert_int_equal(f.on_closed_calls, 0);
	f.l = NULL;
	RUN_UNTIL(&f, f.on_closed_calls == 1);
	assert_true(f.peer[0].open);
	assert_false(cl->ended);

	/* Nothing listens on the port any more. */
	{
		struct client *late = cli_connect(&f, "127.0.0.1", port);

		RUN_UNTIL(&f, late->connected != 0);
		assert_int_equal(late->connected, UV_ECONNREFUSED);
	}
	fix_done(&f);
	assert_int_equal(f.on_close_calls, 1);
	assert_int_equal(f.on_closed_calls, 1);
}

static void test_cap(void **state)
{
	struct fix f;
	dp_listener_config c;
	struct client *a, *b, *x, *d;
	uint16_t port;

	fix_init(&f);
	c = config(&f, 2);
	assert_int_equal(dp_listener_start(&f.loop, &c, "127.0.0.1", 0, &f.l), 0);
	port = dp_listener_port(f.l);

	a = cli_connect(&f, "127.0.0.1", port);
	b = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 2);
	assert_int_equal(dp_listener_live(f.l), 2);

	/* Beyond the cap: accepted and closed at once, never offered. */
	x = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, x->ended);
	assert_int_equal(f.accepted, 2);
	assert_int_equal(dp_listener_live(f.l), 2);
	assert_false(a->ended);
	assert_false(b->ended);

	/* One connection gone and released: room for the next. */
	uv_close((uv_handle_t *)&f.peer[0].tcp, nothing_closed);
	f.peer[0].open = 0;
	dp_listener_release(f.l, &f.peer[0].slot);
	assert_int_equal(dp_listener_live(f.l), 1);
	RUN_UNTIL(&f, a->ended);
	d = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 3);
	assert_int_equal(dp_listener_live(f.l), 2);
	assert_false(d->ended);
	fix_done(&f);
}

static void test_refused_by_user(void **state)
{
	struct fix f;
	dp_listener_config c;
	struct client *x, *y;
	uint16_t port;

	fix_init(&f);
	c = config(&f, 0);
	assert_int_equal(dp_listener_start(&f.loop, &c, "127.0.0.1", 0, &f.l), 0);
	port = dp_listener_port(f.l);

	/* on_connection returns an error without taking the connection: it
	 * is closed, and the listener keeps accepting. */
	f.refuse = 1;
	x = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, x->ended);
	assert_int_equal(dp_listener_live(f.l), 0);
	f.refuse = 0;
	y = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 1 && y->connected == 1);
	assert_int_equal(dp_listener_live(f.l), 1);
	fix_done(&f);
}

static void cli_send_byte(struct client *c)
{
	uv_buf_t b = uv_buf_init("x", 1);

	assert_int_equal(uv_try_write((uv_stream_t *)&c->tcp, &b, 1), 1);
}

/* The same with stall_ms (0: no protection of progress). */
static uint16_t start_two(struct fix *f, size_t max_pending, size_t per_addr,
			  uint32_t stall_ms, struct client **a, struct client **b)
{
	dp_listener_config c;
	uint16_t port;

	fix_init(f);
	f->may_refuse = stall_ms != 0;
	c = config(f, 0);
	c.max_pending = max_pending;
	c.max_pending_per_addr = per_addr;
	c.stall_ms = stall_ms;
	c.on_evict = on_evict;
	assert_int_equal(dp_listener_start(&f->loop, &c, "127.0.0.1", 0, &f->l), 0);
	port = dp_listener_port(f->l);
	*a = cli_connect(f, "127.0.0.1", port);
	RUN_UNTIL(f, f->accepted == 1 && (*a)->connected == 1);
	*b = cli_connect(f, "127.0.0.1", port);
	RUN_UNTIL(f, f->accepted == 2 && (*b)->connected == 1);
	return port;
}

/* A listener with eviction and these pending limits, and two clients
 * connected and accepted (peers 0 and 1), in that order.  Returns the port. */
static uint16_t start_with_two(struct fix *f, size_t max_pending, size_t per_addr,
			       struct client **a, struct client **b)
{
	return start_two(f, max_pending, per_addr, 0, a, b);
}

/* Client c sends a byte and the server side of peer i reads it, as a
 * connection in its handshake would, and says so: nothing waits unread. */
static void speak(struct fix *f, struct client *c, int i)
{
	uv_os_fd_t fd;
	char b[16];

	cli_send_byte(c);
	assert_int_equal(uv_fileno((uv_handle_t *)&f->peer[i].tcp, &fd), 0);
	RUN_UNTIL(f, recv(fd, b, sizeof(b), MSG_DONTWAIT) > 0);
	dp_listener_progress(f->l, &f->peer[i].slot);
}

static void run_for(struct fix *f, uint64_t ms)
{
	uint64_t t0;

	uv_update_time(&f->loop);
	t0 = uv_now(&f->loop);
	RUN_UNTIL(f, uv_now(&f->loop) - t0 >= ms);
}

/* Two pending connections at most from one address: a third evicts the
 * oldest idle one (b), not the older one that has sent a byte (a), even
 * though nobody read it yet.  A settled connection is never evicted. */
static void test_evict_per_addr(void **state)
{
	struct fix f;
	struct client *a, *b, *x, *d, *e;
	uint16_t port = start_with_two(&f, 0, 2, &a, &b);

	cli_send_byte(a);
	assert_int_equal(dp_listener_pending(f.l), 2);

	x = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 3 && b->ended);
	assert_int_equal(f.n_evicted, 1);
	assert_int_equal(f.evicted[0], 1);
	assert_false(a->ended);
	assert_false(x->ended);
	assert_int_equal(dp_listener_pending(f.l), 2);
	assert_int_equal(dp_listener_live(f.l), 2);
	assert_int_equal(dp_listener_evicted(f.l), 1);

	/* a is admitted: it leaves the pending count and stays for good. */
	dp_listener_settle(f.l, &f.peer[0].slot);
	assert_int_equal(dp_listener_pending(f.l), 1);
	d = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 4 && d->connected == 1);
	assert_int_equal(f.n_evicted, 1);
	e = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 5 && x->ended);
	assert_int_equal(f.n_evicted, 2);
	assert_int_equal(f.evicted[1], 2);
	assert_false(a->ended);
	assert_false(d->ended);
	assert_false(e->ended);
	assert_int_equal(dp_listener_live(f.l), 3);
	assert_int_equal(dp_listener_pending(f.l), 2);
	assert_int_equal(dp_listener_refused(f.l), 0);
	fix_done(&f);
}

/* The overall pending limit evicts the oldest pending connection; with
 * max_conns filled by settled connections only, a new one is refused. */
static void test_evict_pending_and_cap(void **state)
{
	struct fix f;
	dp_listener_config c;
	struct client *a, *b, *x, *y;
	uint16_t port;

	fix_init(&f);
	c = config(&f, 2);
	c.max_pending = 1;
	c.on_evict = on_evict;
	assert_int_equal(dp_listener_start(&f.loop, &c, "127.0.0.1", 0, &f.l), 0);
	port = dp_listener_port(f.l);

	a = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 1 && a->connected == 1);
	b = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 2 && a->ended);
	assert_int_equal(f.n_evicted, 1);
	assert_int_equal(f.evicted[0], 0);
	dp_listener_settle(f.l, &f.peer[1].slot);
	x = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 3 && x->connected == 1);
	dp_listener_settle(f.l, &f.peer[2].slot);
	assert_int_equal(dp_listener_live(f.l), 2);
	assert_int_equal(dp_listener_pending(f.l), 0);

	/* Two settled connections fill max_conns: nothing to evict. */
	y = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, y->ended);
	assert_int_equal(f.accepted, 3);
	assert_int_equal(dp_listener_refused(f.l), 1);
	assert_int_equal(f.n_evicted, 1);
	assert_false(b->ended);
	assert_false(x->ended);
	fix_done(&f);
}

/* "Oldest" is by accept, not by first byte: a was accepted before b but
 * spoke after it; at the limit a is the one evicted.  (Ordering active
 * connections by activation once evicted b here, which left an old idle
 * client in place and the newer one cut.) */
static void test_evict_oldest_by_accept(void **state)
{
	struct fix f;
	struct client *a, *b, *x;
	uint16_t port = start_with_two(&f, 2, 0, &a, &b);

	dp_listener_progress(f.l, &f.peer[1].slot);
	dp_listener_progress(f.l, &f.peer[0].slot);
	x = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 3 && a->ended);
	assert_int_equal(f.n_evicted, 1);
	assert_int_equal(f.evicted[0], 0);
	assert_false(b->ended);
	assert_false(x->ended);
	assert_int_equal(dp_listener_pending(f.l), 2);
	fix_done(&f);
}

/* With stall_ms, the per-address limit never evicts a connection making
 * progress for a newcomer of its address: two handshakes under way (bytes
 * just read, or waiting unread) stay, and the third connection is
 * refused; once one of them is settled, the next gets its place.  (Without
 * stall_ms the third evicts the oldest, test_evict_per_addr: a storm from
 * one address cut its own handshakes for ever.) */
static void test_progress_kept_per_addr(void **state)
{
	struct fix f;
	struct client *a, *b, *x, *y;
	uint16_t port = start_two(&f, 0, 2, 60000, &a, &b);

	speak(&f, a, 0);
	cli_send_byte(b);                  /* waits unread: progress too */
	x = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, x->ended);
	assert_int_equal(f.refused_at_accept, 1);
	assert_int_equal(dp_listener_refused(f.l), 1);
	assert_int_equal(f.n_evicted, 0);
	assert_false(a->ended);
	assert_false(b->ended);
	assert_int_equal(dp_listener_pending(f.l), 2);
	assert_int_equal(dp_listener_live(f.l), 2);

	dp_listener_settle(f.l, &f.peer[0].slot);
	y = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 4 && y->connected == 1);
	run_for(&f, 50);
	assert_false(y->ended);
	assert_int_equal(dp_listener_pending(f.l), 2);
	assert_int_equal(dp_listener_refused(f.l), 1);
	assert_int_equal(f.n_evicted, 0);
	fix_done(&f);
}

/* Per address: the idle one goes first, then the one stalled longest
 * (nothing for stall_ms), even when a connection making progress is
 * older; one whose bytes its user holds (waiting for its turn) makes
 * progress however old they are. */
static void test_stalled_before_progress(void **state)
{
	struct fix f;
	struct client *a, *b, *c, *d, *x, *y, *z;
	uint16_t port = start_two(&f, 0, 4, 1000, &a, &b);

	c = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 3 && c->connected == 1);
	d = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 4 && d->connected == 1);
	speak(&f, a, 0);
	speak(&f, b, 1);
	speak(&f, d, 3);
	dp_listener_hold(f.l, &f.peer[3].slot);
	run_for(&f, 1300);                 /* a, b stalled; d held; c idle */
	speak(&f, a, 0);                   /* a makes progress again */

	x = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 5 && c->ended);
	assert_int_equal(f.n_evicted, 1);
	assert_int_equal(f.evicted[0], 2);          /* c: idle */
	speak(&f, x, 4);
	y = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 6 && b->ended);
	assert_int_equal(f.n_evicted, 2);
	assert_int_equal(f.evicted[1], 1);          /* b: stalled, though a is older */
	assert_false(a->ended);
	assert_false(d->ended);

	/* a, d and x make progress, y is idle: y goes. */
	z = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 7 && y->ended);
	assert_int_equal(f.evicted[2], 5);
	assert_false(x->ended);
	assert_false(z->ended);
	assert_int_equal(dp_listener_refused(f.l), 0);
	assert_int_equal(dp_listener_pending(f.l), 4);
	fix_done(&f);
}

/* Over the overall limit (any address), progress protects nothing: the
 * idle and stalled ones still go first, then the oldest of the others, so
 * that a newcomer of another address always gets its chance. */
static void test_overall_limit_with_stall(void **state)
{
	struct fix f;
	struct client *a, *b, *x, *y;
	uint16_t port = start_two(&f, 2, 0, 1000, &a, &b);

	speak(&f, a, 0);
	speak(&f, b, 1);
	run_for(&f, 1300);
	speak(&f, a, 0);                   /* b stalled, a making progress */
	x = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 3 && b->ended);
	assert_int_equal(f.evicted[0], 1);
	assert_false(a->ended);
	speak(&f, x, 2);
	y = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 4 && a->ended);
	assert_int_equal(f.n_evicted, 2);
	assert_int_equal(f.evicted[1], 0);          /* a: the oldest */
	assert_false(x->ended);
	assert_false(y->ended);
	assert_int_equal(dp_listener_refused(f.l), 0);
	fix_done(&f);
}

/* 40 connections waiting at once: 32 are accepted in a row, then the loop
 * gets a turn and the rest follow; closing the listener while one waits
 * in libuv closes it too. */
static void test_accept_burst(void **state)
{
	struct fix f;
	dp_listener_config c;
	uint16_t port;
	int i, ended;

	fix_init(&f);
	c = config(&f, 0);
	assert_int_equal(dp_listener_start(&f.loop, &c, "127.0.0.1", 0, &f.l), 0);
	port = dp_listener_port(f.l);
	for (i = 0; i < 40; i++)
		cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted == 40);
	assert_int_equal(dp_listener_live(f.l), 40);
	fix_done(&f);

	fix_init(&f);
	c = config(&f, 0);
	assert_int_equal(dp_listener_start(&f.loop, &c, "127.0.0.1", 0, &f.l), 0);
	port = dp_listener_port(f.l);
	for (i = 0; i < 40; i++)
		cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, f.accepted >= 32);
	assert_int_equal(f.accepted, 32);
	dp_listener_close(f.l);
	f.l = NULL;
	RUN_UNTIL(&f, f.on_closed_calls == 1);
	/* The ones never accepted end (reset or EOF); the accepted stay. */
	for (ended = 0, i = 32; i < 40; i++) {
		RUN_UNTIL(&f, f.cli[i].ended || f.cli[i].connected < 0);
		ended++;
	}
	assert_int_equal(ended, 8);
	for (i = 0; i < 32; i++)
		assert_false(f.cli[i].ended);
	fix_done(&f);
}

/* Every address ("*"): reachable over IPv4 and, where the host has it,
 * IPv6 loopback. */
static void test_any_address(void **state)
{
	struct fix f;
	dp_listener_config c;
	struct client *v4, *v6;
	uint16_t port;

	fix_init(&f);
	c = config(&f, 0);
	assert_int_equal(dp_listener_start(&f.loop, &c, "*", 0, &f.l), 0);
	port = dp_listener_port(f.l);
	assert_true(port != 0);
	v4 = cli_connect(&f, "127.0.0.1", port);
	RUN_UNTIL(&f, v4->connected != 0 && f.accepted == 1);
	assert_int_equal(v4->connected, 1);
	v6 = cli_connect(&f, "::1", port);
	RUN_UNTIL(&f, v6->connected != 0);
	if (v6->connected == 1) {
		RUN_UNTIL(&f, f.accepted == 2);
		assert_memory_equal(f.peer[1].addr, "[::1]:", 6);
	} else {
		print_message("no IPv6 loopback here: ::1 case skipped\n");
	}
	fix_done(&f);
}

static void test_start_errors(void **state)
{
	struct fix f;
	dp_listener_config c;
	dp_listener *l2 = NULL;
	struct sockaddr_storage ss;
	char text[64];

	fix_init(&f);
	c = config(&f, 0);
	assert_int_equal(dp_listener_start(&f.loop, &c, "127.0.0.1", 0, &f.l), 0);

	/* The same port twice: the bind error, *out untouched. */
	assert_int_equal(dp_listener_start(&f.loop, &c, "127.0.0.1", dp_listener_port(f.l), &l2),
			 -EADDRINUSE);
	snprintf(text, sizeof(text), "listen on 127.0.0.1:%u:", dp_listener_port(f.l));
	assert_non_null(strstr(dp_error_detail(-EADDRINUSE), text));
	assert_null(l2);
	snprintf(text, sizeof(text), "127.0.0.1:%u", dp_listener_port(f.l));
	assert_int_equal(dp_addr_parse_literal("t", text, 0, &ss), 0);
	assert_int_equal(dp_listener_start_addr(&f.loop, &c, (struct sockaddr *)&ss, &l2),
			 -EADDRINUSE);
	assert_null(l2);

	/* A name that does not resolve. */
	assert_int_equal(dp_listener_start(&f.loop, &c, "no such host.invalid", 0, &l2), DP_ENOENT);
	assert_non_null(strstr(dp_error_detail(DP_ENOENT), "cannot resolve 'no such host.invalid'"));
	assert_null(l2);

	/* An address this host does not have. */
	assert_int_equal(dp_addr_parse_literal("t", "192.0.2.1:0", DP_ADDR_PORT_ZERO, &ss), 0);
	assert_int_equal(dp_listener_start_addr(&f.loop, &c, (struct sockaddr *)&ss, &l2),
			 -EADDRNOTAVAIL);
	assert_null(l2);

	/* The failed listeners are freed by the loop, never reported closed. */
	fix_done(&f);
	assert_int_equal(f.on_close_calls, 1);
	assert_int_equal(f.on_closed_calls, 1);
}

/* The user closes the listener from inside on_connection: the waiting
 * connection goes with the socket. */
static int close_in_callback(dp_listener *l, void *data)
{
	struct fix *f = data;

	f->closed_in_callback++;
	dp_listener_close(l);
	f->l = NULL;
	return dp_error_set(DP_ESTATE, "closing");
}

static void test_close_in_callback(void **state)
{
	struct fix f;
	dp_listener_config c;
	struct client *x;

	fix_init(&f);
	c = config(&f, 0);
	c.on_connection = close_in_callback;
	assert_int_equal(dp_listener_start(&f.loop, &c, "127.0.0.1", 0, &f.l), 0);
	x = cli_connect(&f, "127.0.0.1", dp_listener_port(f.l));
	RUN_UNTIL(&f, f.on_closed_calls == 1 && x->ended);
	assert_int_equal(f.closed_in_callback, 1);
	assert_int_equal(f.on_close_calls, 1);
	fix_done(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_port0_and_close),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_refused_by_user),
		cmocka_unit_test(test_evict_per_addr),
		cmocka_unit_test(test_evict_pending_and_cap),
		cmocka_unit_test(test_evict_oldest_by_accept),
		cmocka_unit_test(test_progress_kept_per_addr),
		cmocka_unit_test(test_stalled_before_progress),
		cmocka_unit_test(test_overall_limit_with_stall),
		cmocka_unit_test(test_accept_burst),
		cmocka_unit_test(test_any_address),
		cmocka_unit_test(test_start_errors),
		cmocka_unit_test(test_close_in_callback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
