/* SPDX-License-Identifier: Apache-2.0 */
/* TLS connections over libuv: real sockets on loopback (ports chosen at run
 * time), one loop running both the server and the client.  Certificates
 * are made with tools/lib/certs.c into a temporary directory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <errno.h>
#include <unistd.h>

#include <openssl/err.h>
#include <uv.h>

#include "tools/lib/certs.h"
#include "common/core/error.h"
#include "common/net/conn.h"
#include "common/net/frame.h"
#include "common/net/listener.h"
#include "common/net/tls.h"

/* ---- certificates ---------------------------------------------------------- */

static char g_dir[64];
static char p_ca[128], p_bundle[128];
static SSL_CTX *srv_ctx, *cli_ctx, *cli2_ctx, *rogue_ctx, *nocert_ctx, *expired_ctx;

static void path_of(char *out, size_t n, const char *base, const char *ext)
{
	snprintf(out, n, "%s/%s.%s", g_dir, base, ext);
}

static void make_leaf(const char *base, const char *cn, X509 *ca, EVP_PKEY *cak,
		      int64_t nb, int64_t life)
{
	static const char *const dns[] = { "localhost" };
	static const char *const ips[] = { "127.0.0.1", "::1" };
	dp_cert_spec s = { .cn = cn, .not_before = nb, .lifetime = life };
	EVP_PKEY *k;
	X509 *x;

	if (strcmp(cn, "learner") == 0) {
		s.dns = dns;
		s.n_dns = 1;
		s.ips = ips;
		s.n_ips = 2;
	}
	assert_int_equal(dp_certs_make_leaf(&s, ca, cak, &k, &x), 0);
	assert_int_equal(dp_certs_write(g_dir, base, k, x, 0), 0);
	EVP_PKEY_free(k);
	X509_free(x);
}

static SSL_CTX *ctx_for(int server, const char *ca, const char *base)
{
	char c[128], k[128];
	dp_tls_files f = { .ca_file = ca, .cert_file = c, .key_file = k };
	SSL_CTX *ctx = NULL;
	int r;

	path_of(c, sizeof(c), base, "crt");
	path_of(k, sizeof(k), base, "key");
	r = dp_tls_ctx_new(server, &f, &ctx);
	if (r != 0)
		fail_msg("ctx %s: %s", base, dp_error_detail(r));
	return ctx;
}

/* A client context built by hand, bypassing dp_tls_ctx_new's own checks:
 * trusts the CA, TLS 1.3, optionally presents a certificate. */
static SSL_CTX *raw_client_ctx(const char *base)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	char c[128], k[128];

	assert_non_null(ctx);
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	assert_int_equal(SSL_CTX_load_verify_file(ctx, p_ca), 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (base != NULL) {
		path_of(c, sizeof(c), base, "crt");
		path_of(k, sizeof(k), base, "key");
		assert_int_equal(SSL_CTX_use_certificate_file(ctx, c, SSL_FILETYPE_PEM), 1);
		assert_int_equal(SSL_CTX_use_PrivateKey_file(ctx, k, SSL_FILETYPE_PEM), 1);
	}
	return ctx;
}

static void cat(const char *out, const char *a, const char *b)
{
	char buf[8192];
	FILE *o = fopen(out, "w");
	const char *in[2] = { a, b };

	assert_non_null(o);
	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(in[i], "r");
		size_t n;

		assert_non_null(f);
		for (;;) {
			n = fread(buf, 1, sizeof(buf), f);
			if (n == 0)
				break;
			fwrite(buf, 1, n, o);
		}
		fclose(f);
	}
	fclose(o);
}

static int group_setup(void **state)
{
	EVP_PKEY *cak, *bk;
	X509 *ca, *cb;
	char p_cab[128];

	strcpy(g_dir, "/tmp/dp_test_conn_XXXXXX");
	if (mkdtemp(g_dir) == NULL)
		return -1;
	assert_int_equal(dp_certs_make_ca("CA A", -DP_CERTS_BACKDATE, 30 * DP_CERTS_DAY, &cak, &ca), 0);
	assert_int_equal(dp_certs_write(g_dir, "ca", cak, ca, 0), 0);
	make_leaf("learner", "learner", ca, cak, -DP_CERTS_BACKDATE, DP_CERTS_DAY);
	make_leaf("owner-1", "owner-1", ca, cak, -DP_CERTS_BACKDATE, DP_CERTS_DAY);
	make_leaf("owner-2", "owner-2", ca, cak, -DP_CERTS_BACKDATE, DP_CERTS_DAY);
	make_leaf("expired", "owner-3", ca, cak, -2 * DP_CERTS_DAY, DP_CERTS_DAY);
	/* Another CA issuing a certificate with a configured owner's name. */
	assert_int_equal(dp_certs_make_ca("CA B", -DP_CERTS_BACKDATE, DP_CERTS_DAY, &bk, &cb), 0);
	assert_int_equal(dp_certs_write(g_dir, "cab", bk, cb, 0), 0);
	make_leaf("rogue", "owner-1", cb, bk, -DP_CERTS_BACKDATE, DP_CERTS_DAY);
	EVP_PKEY_free(cak);
	EVP_PKEY_free(bk);
	X509_free(ca);
	X509_free(cb);

	path_of(p_ca, sizeof(p_ca), "ca", "crt");
	path_of(p_cab, sizeof(p_cab), "cab", "crt");
	path_of(p_bundle, sizeof(p_bundle), "bundle", "crt");
	cat(p_bundle, p_ca, p_cab);

	srv_ctx = ctx_for(1, p_ca, "learner");
	cli_ctx = ctx_for(0, p_ca, "owner-1");
	cli2_ctx = ctx_for(0, p_ca, "owner-2");
	/* The rogue trusts both CAs, so it accepts the learner; the learner
	 * trusts only CA A. */
	rogue_ctx = ctx_for(0, p_bundle, "rogue");
	nocert_ctx = raw_client_ctx(NULL);
	expired_ctx = raw_client_ctx("expired");
	return 0;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static int group_teardown(void **state)
{
	SSL_CTX_free(srv_ctx);
	SSL_CTX_free(cli_ctx);
	SSL_CTX_free(cli2_ctx);
	SSL_CTX_free(rogue_ctx);
	SSL_CTX_free(nocert_ctx);
	SSL_CTX_free(expired_ctx);
	nftw(g_dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* ---- harness --------------------------------------------------------------- */

#define BIG_P 131072        /* 1 MiB of doubles */
#define UNREAD_P 4096       /* a 32 KiB Done: more than a small receive window */

typedef struct harness harness;

typedef struct side {
	harness *h;
	dp_conn *conn;
	int handshakes, closes, msgs;
	int reason;
	char detail[512];
	char id[DP_TLS_ID_MAX + 1];
	int kinds[16];          /* messages received per oneof case */
} side;

typedef struct raw_client {
	uv_tcp_t tcp;
	uv_connect_t creq;
	uv_write_t wreq;
	uv_buf_t wbuf;
	char rbuf[4096];
	int eof;
} raw_client;

enum scenario {
	SC_ROUNDTRIP, SC_REFUSED, SC_OVERSIZE, SC_ADMIT, SC_LAST_MESSAGE, SC_STREAM, SC_HELLO_BYE,
	SC_UNREAD,
};

struct harness {
	uv_loop_t loop;
	uv_timer_t guard;
	uv_timer_t tick;
	int tick_on;
	int timed_out;
	dp_listener *lst;
	uint16_t port;
	side srv, cli;
	int scenario;
	int want_srv, want_cli;   /* closes after which the listener is closed */
	raw_client raw;
	int raw_on;
	/* SC_STREAM */
	int sent, send_max, send_err, paced;
	atomic_int *stop_flag;
};

static double *big_a, *big_b;

static void fill_big(void)
{
	if (big_a != NULL)
		return;
	big_a = malloc(BIG_P * sizeof(double));
	big_b = malloc(BIG_P * sizeof(double));
	assert_non_null(big_a);
	assert_non_null(big_b);
	for (size_t i = 0; i < BIG_P; i++) {
		big_a[i] = (double)i * 0.25 - 7.0;      /* exact in binary */
		big_b[i] = -3.0 * big_a[i];
	}
}

static void check_done(harness *h)
{
	if (h->lst != NULL && h->srv.closes >= h->want_srv && h->cli.closes >= h->want_cli) {
		dp_listener_close(h->lst);
		h->lst = NULL;
		if (h->tick_on) {
			uv_timer_stop(&h->tick);
		}
		if (h->stop_flag)
			atomic_store(h->stop_flag, 1);
	}
}

static void send_or_fail(dp_conn *c, Dpasync__Envelope *e)
{
	int r = dp_conn_send(c, e);

	if (r != 0)
		fail_msg("send %s: %s", dp_frame_kind(e), dp_error_detail(r));
}

static void send_query(dp_conn *c, uint64_t k, double *v, size_t n)
{
	Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
	Dpasync__Query q = DPASYNC__QUERY__INIT;

	e.version = 1;
	e.msg_case = DPASYNC__ENVELOPE__MSG_QUERY;
	e.query = &q;
	q.k = k;
	q.n_theta = n;
	q.theta = v;
	send_or_fail(c, &e);
}

static void send_done(dp_conn *c, double *v, size_t n)
{
	Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
	Dpasync__Done d = DPASYNC__DONE__INIT;

	e.version = 1;
	e.msg_case = DPASYNC__ENVELOPE__MSG_DONE;
	e.done = &d;
	d.t = 1;
	d.n_final_theta = n;
	d.final_theta = v;
	send_or_fail(c, &e);
}

static int on_handshake(dp_conn *c, const char *id)
{
	side *s = dp_conn_data(c);
	harness *h = s->h;

	assert_ptr_equal(dp_conn_user(c), h);   /* cfg.user, on both sides */
	s->conn = c;
	s->handshakes++;
	snprintf(s->id, sizeof(s->id), "%s", id);
	assert_string_equal(dp_conn_peer_id(c), id);
	assert_true(dp_conn_is_open(c));
	if (s == &h->srv) {
		assert_true(dp_conn_is_server(c));
		if (h->scenario == SC_ADMIT && strcmp(id, "owner-1") != 0)
			return 1;
		if (h->scenario == SC_LAST_MESSAGE) {
			static double v[3] = { 1, 2, 3 };

			send_done(c, v, 3);
			dp_conn_close(c);
			dp_conn_close(c);       /* idempotent */
			assert_int_equal(dp_conn_send(c, NULL), DP_ESTATE);
		}
		if (h->scenario == SC_UNREAD) {
			fill_big();
			send_done(c, big_a, UNREAD_P);
			dp_conn_close(c);
		}
		return 0;
	}
	assert_false(dp_conn_is_server(c));
	if (h->scenario == SC_HELLO_BYE) {
		dp_conn_close(c);
	} else if (h->scenario == SC_ROUNDTRIP) {
		Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
		Dpasync__Hello hello = DPASYNC__HELLO__INIT;
		Dpasync__UpdateRequest ur = DPASYNC__UPDATE_REQUEST__INIT;

		e.version = 1;
		e.msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
		e.hello = &hello;
		hello.version = 1;
		hello.owner_id = "owner-1";
		hello.n_rows = 100;
		hello.n_features = BIG_P;
		hello.epsilon = 1.0;
	hello.rate = 1.0;
		send_or_fail(c, &e);
		/* Many small frames at once: several per TLS record and read. */
		e.msg_case = DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST;
		e.update_request = &ur;
		for (int i = 0; i < 50; i++)
			send_or_fail(c, &e);
	} else if (h->scenario == SC_OVERSIZE) {
		static double v[1000];

		send_query(c, 1, v, 1000);      /* ~8 KB; the server allows 1 KB */
	}
	return 0;
}

static void on_message(dp_conn *c, Dpasync__Envelope *m)
{
	side *s = dp_conn_data(c);
	harness *h = s->h;

	s->msgs++;
	if ((unsigned)m->msg_case < 16)
		s->kinds[m->msg_case]++;
	if (h->scenario == SC_ROUNDTRIP && s == &h->srv) {
		if (m->msg_case == DPASYNC__ENVELOPE__MSG_HELLO) {
			Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
			Dpasync__Welcome w = DPASYNC__WELCOME__INIT;
			dp_frame_limits lim = { .p = m->hello->n_features };

			assert_string_equal(m->hello->owner_id, "owner-1");
			dp_conn_set_limits(c, &lim);
			e.version = 1;
			e.msg_case = DPASYNC__ENVELOPE__MSG_WELCOME;
			e.welcome = &w;
			w.job = "test";
			w.model = "linear";
			w.t = 1;
			w.n = 1;
			w.n_total = 100;
			w.rho = 1;
			w.theta_max = 10;
			w.clip_l1 = 1;
			w.p = BIG_P;
			send_or_fail(c, &e);
		} else if (m->msg_case == DPASYNC__ENVELOPE__MSG_QUERY) {
			Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
			Dpasync__Answer a = DPASYNC__ANSWER__INIT;

			assert_int_equal(s->kinds[DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST], 50);
			assert_int_equal(m->query->n_theta, BIG_P);
			assert_memory_equal(m->query->theta, big_a, BIG_P * sizeof(double));
			e.version = 1;
			e.msg_case = DPASYNC__ENVELOPE__MSG_ANSWER;
			e.answer = &a;
			a.k = m->query->k;
			a.n_gradient = BIG_P;
			a.gradient = big_b;
			a.epsilon_spent = 0.5;
			a.epsilon_left = 0.5;
			send_or_fail(c, &e);
		}
	} else if (h->scenario == SC_ROUNDTRIP && s == &h->cli) {
		if (m->msg_case == DPASYNC__ENVELOPE__MSG_WELCOME) {
			assert_int_equal(m->welcome->p, BIG_P);
			send_query(c, 42, big_a, BIG_P);
		} else if (m->msg_case == DPASYNC__ENVELOPE__MSG_ANSWER) {
			assert_int_equal(m->answer->k, 42);
			assert_int_equal(m->answer->n_gradient, BIG_P);
			assert_memory_equal(m->answer->gradient, big_b, BIG_P * sizeof(double));
			dp_conn_close(c);
		}
	} else if (h->scenario == SC_LAST_MESSAGE && s == &h->cli) {
		assert_int_equal(m->msg_case, DPASYNC__ENVELOPE__MSG_DONE);
		assert_int_equal(m->done->n_final_theta, 3);
		assert_true(m->done->final_theta[2] == 3.0);
	}
	dp_frame_msg_free(m);
}

static void on_close(dp_conn *c, int reason, const char *detail)
{
	side *s = dp_conn_data(c);

	assert_ptr_equal(dp_conn_user(c), s->h);
	s->closes++;
	s->reason = reason;
	snprintf(s->detail, sizeof(s->detail), "%s", detail);
	s->conn = NULL;
	check_done(s->h);
}

static void on_guard(uv_timer_t *t)
{
	harness *h = t->data;

	h->timed_out = 1;
	uv_stop(&h->loop);
}

static dp_conn_config base_cfg(harness *h, SSL_CTX *ctx, side *s)
{
	dp_conn_config cfg = { 0 };

	cfg.ctx = ctx;
	cfg.cb.on_handshake = on_handshake;
	cfg.cb.on_message = on_message;
	cfg.cb.on_close = on_close;
	cfg.data = s;
	cfg.user = h;
	return cfg;
}

static void h_init(harness *h, int scenario)
{
	memset(h, 0, sizeof(*h));
	assert_int_equal(uv_loop_init(&h->loop), 0);
	h->srv.h = h->cli.h = h;
	h->scenario = scenario;
	h->want_srv = h->want_cli = 1;
	uv_timer_init(&h->loop, &h->guard);
	h->guard.data = h;
	uv_timer_start(&h->guard, on_guard, 20000, 0);
	uv_unref((uv_handle_t *)&h->guard);
	uv_timer_init(&h->loop, &h->tick);
	h->tick.data = h;
	h->tick_on = 1;
	uv_unref((uv_handle_t *)&h->tick);
}

static void h_listen(harness *h, const dp_conn_config *cfg)
{
	int r = dp_conn_listen(&h->loop, cfg, "127.0.0.1", 0, &h->lst);

	if (r != 0)
		fail_msg("listen: %s", dp_error_detail(r));
	h->port = dp_listener_port(h->lst);
	assert_true(h->port != 0);
}

static void h_connect(harness *h, const dp_conn_config *cfg, const char *host, const char *name)
{
	dp_conn *c = NULL;
	int r = dp_conn_connect(&h->loop, cfg, host, h->port, name, &c);

	if (r != 0)
		fail_msg("connect: %s", dp_error_detail(r));
	/* Not open yet. */
	assert_int_equal(dp_conn_send(c, NULL), DP_ESTATE);
	assert_string_equal(dp_conn_peer_id(c), "");
}

static void h_run(harness *h)
{
	uv_run(&h->loop, UV_RUN_DEFAULT);
	if (h->timed_out)
		fail_msg("loop did not finish: srv closes=%d (%s) cli closes=%d (%s)",
			 h->srv.closes, h->srv.detail, h->cli.closes, h->cli.detail);
	uv_close((uv_handle_t *)&h->guard, NULL);
	uv_close((uv_handle_t *)&h->tick, NULL);
	uv_run(&h->loop, UV_RUN_DEFAULT);
	/* Every handle was closed: nothing leaked on the loop. */
	assert_int_equal(uv_loop_close(&h->loop), 0);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_roundtrip(void **state)
{
	harness h;
	dp_conn_config sc, cc;
	dp_frame_limits lim = { .p = BIG_P };

	fill_big();
	h_init(&h, SC_ROUNDTRIP);
	sc = base_cfg(&h, srv_ctx, &h.srv);
	cc = base_cfg(&h, cli_ctx, &h.cli);
	cc.limits = &lim;
	h_listen(&h, &sc);
	h_connect(&h, &cc, "localhost", "learner");
	h_run(&h);

	assert_int_equal(h.srv.handshakes, 1);
	assert_string_equal(h.srv.id, "owner-1");
	assert_int_equal(h.cli.handshakes, 1);
	assert_string_equal(h.cli.id, "learner");
	assert_int_equal(h.srv.kinds[DPASYNC__ENVELOPE__MSG_HELLO], 1);
	assert_int_equal(h.srv.kinds[DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST], 50);
	assert_int_equal(h.srv.kinds[DPASYNC__ENVELOPE__MSG_QUERY], 1);
	assert_int_equal(h.srv.msgs, 52);
	assert_int_equal(h.cli.kinds[DPASYNC__ENVELOPE__MSG_WELCOME], 1);
	assert_int_equal(h.cli.kinds[DPASYNC__ENVELOPE__MSG_ANSWER], 1);
	assert_int_equal(h.cli.msgs, 2);
	assert_int_equal(h.cli.reason, 0);
	assert_string_equal(h.cli.detail, "closed locally");
	assert_int_equal(h.srv.reason, 0);
	assert_string_equal(h.srv.detail, "peer closed the connection");
}

/* A client that must be refused: the server never reports a handshake and
 * both sides close with DP_ETLS. */
static void run_refused(harness *h, SSL_CTX *client, const char *name)
{
	dp_conn_config sc, cc;

	h_init(h, SC_REFUSED);
	sc = base_cfg(h, srv_ctx, &h->srv);
	cc = base_cfg(h, client, &h->cli);
	h_listen(h, &sc);
	h_connect(h, &cc, "127.0.0.1", name);
	h_run(h);
	assert_int_equal(h->srv.handshakes, 0);
	assert_int_equal(h->srv.msgs + h->cli.msgs, 0);
	assert_int_equal(h->srv.closes, 1);
	assert_int_equal(h->cli.closes, 1);
	assert_int_equal(h->srv.reason, DP_ETLS);
	assert_int_equal(h->cli.reason, DP_ETLS);
}

static void test_other_ca_refused(void **state)
{
	harness h;

	run_refused(&h, rogue_ctx, "learner");
	assert_non_null(strstr(h.srv.detail, "certificate verify failed"));
	assert_non_null(strstr(h.srv.detail, "unable to get local issuer certificate"));
	assert_non_null(strstr(h.cli.detail, "unknown ca"));
}

static void test_no_cert_refused(void **state)
{
	harness h;

	run_refused(&h, nocert_ctx, "learner");
	assert_non_null(strstr(h.srv.detail, "peer did not return a certificate"));
	assert_non_null(strstr(h.cli.detail, "certificate required"));
}

static void test_expired_client_refused(void **state)
{
	harness h;

	run_refused(&h, expired_ctx, "learner");
	assert_non_null(strstr(h.srv.detail, "certificate has expired"));
}

static void test_server_name_mismatch(void **state)
{
	harness h;

	run_refused(&h, cli_ctx, "other-learner");
	assert_int_equal(h.cli.handshakes, 0);
	assert_non_null(strstr(h.cli.detail, "hostname mismatch"));
}

static void test_not_admitted(void **state)
{
	harness h;
	dp_conn_config sc, cc;

	h_init(&h, SC_ADMIT);
	sc = base_cfg(&h, srv_ctx, &h.srv);
	cc = base_cfg(&h, cli2_ctx, &h.cli);
	h_listen(&h, &sc);
	h_connect(&h, &cc, "127.0.0.1", "learner");
	h_run(&h);
	assert_int_equal(h.srv.handshakes, 1);
	assert_string_equal(h.srv.id, "owner-2");
	assert_int_equal(h.srv.reason, DP_EPROTO);
	assert_non_null(strstr(h.srv.detail, "'owner-2'"));
	assert_non_null(strstr(h.srv.detail, "not admitted"));
	assert_int_equal(h.cli.closes, 1);
}

static void test_oversized_frame(void **state)
{
	harness h;
	dp_conn_config sc, cc;

	h_init(&h, SC_OVERSIZE);
	sc = base_cfg(&h, srv_ctx, &h.srv);
	sc.max_frame = 1024;
	cc = base_cfg(&h, cli_ctx, &h.cli);
	h_listen(&h, &sc);
	h_connect(&h, &cc, "127.0.0.1", "learner");
	h_run(&h);
	assert_int_equal(h.srv.handshakes, 1);
	assert_int_equal(h.srv.msgs, 0);
	assert_int_equal(h.srv.reason, DP_EPROTO);
	assert_non_null(strstr(h.srv.detail, "exceeds the maximum 1024"));
	/* The server closed in good order (close_notify). */
	assert_int_equal(h.cli.closes, 1);
	assert_int_equal(h.cli.reason, 0);
}

static void test_last_message_delivered(void **state)
{
	harness h;
	dp_conn_config sc, cc;

	h_init(&h, SC_LAST_MESSAGE);
	sc = base_cfg(&h, srv_ctx, &h.srv);
	cc = base_cfg(&h, cli_ctx, &h.cli);
	h_listen(&h, &sc);
	h_connect(&h, &cc, "127.0.0.1", "learner");
	h_run(&h);
	assert_int_equal(h.cli.kinds[DPASYNC__ENVELOPE__MSG_DONE], 1);
	assert_int_equal(h.cli.reason, 0);
	assert_int_equal(h.srv.reason, 0);
	assert_string_equal(h.srv.detail, "closed locally");
}

/* Listen on every address ("*") and, when the host has IPv6 loopback, on
 * ::1 with the client expecting the server's IP address (SAN IP:::1). */
static void run_hello_bye(const char *listen_addr, const char *host, const char *name,
			  int *skipped)
{
	harness h;
	dp_conn_config sc, cc;
	dp_conn *c = NULL;
	int r;

	h_init(&h, SC_HELLO_BYE);
	sc = base_cfg(&h, srv_ctx, &h.srv);
	cc = base_cfg(&h, cli_ctx, &h.cli);
	r = dp_conn_listen(&h.loop, &sc, listen_addr, 0, &h.lst);
	if (r == -EADDRNOTAVAIL || r == -EAFNOSUPPORT) {
		*skipped = 1;
		h.lst = NULL;
		h_run(&h);
		return;
	}
	assert_int_equal(r, 0);
	h.port = dp_listener_port(h.lst);
	assert_int_equal(dp_conn_connect(&h.loop, &cc, host, h.port, name, &c), 0);
	h_run(&h);
	assert_int_equal(h.srv.handshakes, 1);
	assert_int_equal(h.cli.handshakes, 1);
	assert_string_equal(h.cli.id, "learner");
	assert_int_equal(h.cli.reason, 0);
	assert_int_equal(h.srv.reason, 0);
}

static void test_addresses(void **state)
{
	int skipped = 0;

	run_hello_bye("*", "127.0.0.1", "learner", &skipped);
	assert_int_equal(skipped, 0);
	run_hello_bye("127.0.0.1", "127.0.0.1", "127.0.0.1", &skipped);   /* SAN IP */
	run_hello_bye("::1", "::1", NULL, &skipped);
	if (skipped)
		print_message("no IPv6 loopback here: ::1 case skipped\n");
}

/* ---- raw TCP peers -------------------------------------------------------------- */

static void raw_alloc(uv_handle_t *hd, size_t sz, uv_buf_t *b)
{
	raw_client *r = hd->data;

	b->base = r->rbuf;
	b->len = sizeof(r->rbuf);
}

static void raw_closed(uv_handle_t *hd)
{
}

static void raw_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	raw_client *r = st->data;
	harness *h = (harness *)((char *)r - offsetof(harness, raw));

	if (n >= 0)
		return;
	r->eof = (n == UV_EOF || n == UV_ECONNRESET);
	uv_close((uv_handle_t *)&r->tcp, raw_closed);
	h->cli.closes++;
	check_done(h);
}

static void raw_written(uv_write_t *w, int status)
{
}

static void raw_connected(uv_connect_t *req, int status)
{
	raw_client *r = req->data;

	assert_int_equal(status, 0);
	if (r->wbuf.len > 0)
		assert_int_equal(uv_write(&r->wreq, (uv_stream_t *)&r->tcp, &r->wbuf, 1,
					  raw_written), 0);
	assert_int_equal(uv_read_start((uv_stream_t *)&r->tcp, raw_alloc, raw_read), 0);
}

static void raw_connect(harness *h, const char *payload)
{
	struct sockaddr_in a;

	uv_ip4_addr("127.0.0.1", h->port, &a);
	uv_tcp_init(&h->loop, &h->raw.tcp);
	h->raw.tcp.data = &h->raw;
	h->raw.creq.data = &h->raw;
	h->raw.wbuf = uv_buf_init((char *)payload, payload ? (unsigned)strlen(payload) : 0);
	assert_int_equal(uv_tcp_connect(&h->raw.creq, &h->raw.tcp, (struct sockaddr *)&a,
					raw_connected), 0);
}

static void test_garbage_closes(void **state)
{
	harness h;
	dp_conn_config sc;
	static char junk[] = "GET / HTTP/1.1\r\nHost: learner\r\n\r\n"
			     "\x16\x03\x01\xff\xff garbage garbage garbage";

	h_init(&h, SC_REFUSED);
	sc = base_cfg(&h, srv_ctx, &h.srv);
	h_listen(&h, &sc);
	raw_connect(&h, junk);
	h_run(&h);
	assert_int_equal(h.srv.handshakes, 0);
	assert_int_equal(h.srv.closes, 1);
	assert_int_equal(h.srv.reason, DP_ETLS);
	assert_int_equal(h.raw.eof, 1);
}

static void test_handshake_timeout(void **state)
{
	harness h;
	dp_conn_config sc;
	uint64_t t0;

	h_init(&h, SC_REFUSED);
	sc = base_cfg(&h, srv_ctx, &h.srv);
	sc.handshake_timeout_ms = 200;
	h_listen(&h, &sc);
	raw_connect(&h, NULL);           /* connects and stays silent */
	t0 = uv_hrtime();
	h_run(&h);
	assert_int_equal(h.srv.reason, -ETIMEDOUT);
	assert_non_null(strstr(h.srv.detail, "200 ms"));
	assert_true(uv_hrtime() - t0 >= 190000000ull);
	assert_int_equal(h.raw.eof, 1);
}

/* Silent peers take no turn among the handshakes a listener runs at once
 * (64): with 70 of them accepted first, a real client's handshake is done
 * at once, not after theirs have timed out (5 s here).  Before, each took
 * a turn at its accept, and the client waited for the timeouts. */
static void test_silent_peers_take_no_turn(void **state)
{
	enum { SILENT = 70 };
	int fds[SILENT];
	struct sockaddr_in a;
	harness h;
	dp_conn_config sc, cc;
	uint64_t t0;

	h_init(&h, SC_HELLO_BYE);
	sc = base_cfg(&h, srv_ctx, &h.srv);
	sc.handshake_timeout_ms = 5000;
	h_listen(&h, &sc);
	uv_ip4_addr("127.0.0.1", h.port, &a);
	for (int i = 0; i < SILENT; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(connect(fds[i], (struct sockaddr *)&a, sizeof(a)), 0);
	}
	t0 = uv_hrtime();
	while (dp_listener_live(h.lst) < SILENT) {
		uv_run(&h.loop, UV_RUN_NOWAIT);
		assert_true(uv_hrtime() - t0 < 5000000000ull);
	}
	cc = base_cfg(&h, cli_ctx, &h.cli);
	t0 = uv_hrtime();
	h_connect(&h, &cc, "127.0.0.1", "learner");
	h_run(&h);
	assert_int_equal(h.cli.handshakes, 1);
	assert_int_equal(h.cli.reason, 0);
	assert_true(uv_hrtime() - t0 < 2500000000ull);
	for (int i = 0; i < SILENT; i++)
		close(fds[i]);
}

static void on_tick_close_listener(uv_timer_t *t)
{
	harness *h = t->data;

	/* A silent peer is still in its handshake: closing the listener
	 * closes it with -ECANCELED. */
	dp_listener_close(h->lst);
	h->lst = NULL;
}

static void test_listener_close_cancels_handshakes(void **state)
{
	harness h;
	dp_conn_config sc;

	h_init(&h, SC_REFUSED);
	sc = base_cfg(&h, srv_ctx, &h.srv);
	h_listen(&h, &sc);
	raw_connect(&h, NULL);
	uv_timer_start(&h.tick, on_tick_close_listener, 100, 0);
	h_run(&h);
	assert_int_equal(h.srv.closes, 1);
	assert_int_equal(h.srv.reason, -ECANCELED);
	assert_int_equal(h.raw.eof, 1);
}

/* max_conns = 1: a silent TCP peer holds the only slot, so a TLS client is
 * accepted and closed at once; once that peer has gone (and its
 * connection was released), the next client is served. */
static int cap_phase;
static int cap_first_reason;

static void on_tick_cap(uv_timer_t *t)
{
	harness *h = t->data;
	dp_conn_config cc = base_cfg(h, cli_ctx, &h->cli);

	switch (cap_phase) {
	case 0:
		raw_connect(h, NULL);
		cap_phase = 1;
		break;
	case 1:
		if (dp_listener_live(h->lst) != 1)
			break;
		h_connect(h, &cc, "127.0.0.1", "learner");
		cap_phase = 2;
		break;
	case 2:
		if (h->cli.closes != 1)
			break;
		cap_first_reason = h->cli.reason;
		assert_int_equal(dp_listener_live(h->lst), 1);
		uv_close((uv_handle_t *)&h->raw.tcp, raw_closed);
		cap_phase = 3;
		break;
	case 3:
		if (h->srv.closes != 1 || dp_listener_live(h->lst) != 0)
			break;
		h_connect(h, &cc, "127.0.0.1", "learner");
		cap_phase = 4;
		break;
	default:
		break;
	}
}

static void test_listener_cap(void **state)
{
	harness h;
	dp_conn_config sc;

	h_init(&h, SC_HELLO_BYE);
	h.want_srv = h.want_cli = 2;
	sc = base_cfg(&h, srv_ctx, &h.srv);
	sc.max_conns = 1;
	h_listen(&h, &sc);
	cap_phase = 0;
	uv_timer_start(&h.tick, on_tick_cap, 20, 20);
	h_run(&h);
	assert_int_equal(cap_phase, 4);
	/* The refused client: closed by the server before any handshake. */
	assert_true(cap_first_reason == DP_ETLS || cap_first_reason == -ECONNRESET);
	/* The silent peer's connection, then the second client's. */
	assert_int_equal(h.srv.handshakes, 1);
	assert_int_equal(h.cli.handshakes, 1);
	assert_int_equal(h.srv.reason, 0);
	assert_int_equal(h.cli.reason, 0);
}

static void test_connect_errors(void **state)
{
	harness h;
	dp_conn_config cc;
	uv_tcp_t t;
	struct sockaddr_in a;
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	dp_conn *c = NULL;

	/* A port with nothing listening: bound, never listen()ed. */
	h_init(&h, SC_REFUSED);
	uv_tcp_init(&h.loop, &t);
	uv_ip4_addr("127.0.0.1", 0, &a);
	assert_int_equal(uv_tcp_bind(&t, (struct sockaddr *)&a, 0), 0);
	assert_int_equal(uv_tcp_getsockname(&t, (struct sockaddr *)&ss, &len), 0);
	h.port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	h.want_srv = 0;
	cc = base_cfg(&h, cli_ctx, &h.cli);
	assert_int_equal(dp_conn_connect(&h.loop, &cc, "127.0.0.1", h.port, "learner", &c), 0);
	uv_run(&h.loop, UV_RUN_DEFAULT);
	assert_int_equal(h.cli.closes, 1);
	assert_int_equal(h.cli.reason, -ECONNREFUSED);
	assert_non_null(strstr(h.cli.detail, "127.0.0.1"));

	/* Closed by its owner while still resolving: on_close(0) later. */
	assert_int_equal(dp_conn_connect(&h.loop, &cc, "127.0.0.1", h.port, "learner", &c), 0);
	dp_conn_close(c);
	assert_int_equal(h.cli.closes, 1);      /* never synchronously */
	uv_run(&h.loop, UV_RUN_DEFAULT);
	assert_int_equal(h.cli.closes, 2);
	assert_int_equal(h.cli.reason, 0);

	/* Bad arguments: synchronous, no callback. */
	assert_int_equal(dp_conn_connect(&h.loop, &cc, "127.0.0.1", 0, NULL, &c), DP_EINVAL);
	assert_int_equal(dp_conn_connect(&h.loop, &cc, "", 1, NULL, &c), DP_EINVAL);
	uv_close((uv_handle_t *)&t, NULL);
	h_run(&h);
	assert_int_equal(h.cli.closes, 2);

	/* Listening twice on the same port. */
	{
		harness h2;
		dp_conn_config sc;
		dp_listener *l2 = NULL;

		h_init(&h2, SC_REFUSED);
		sc = base_cfg(&h2, srv_ctx, &h2.srv);
		h_listen(&h2, &sc);
		assert_int_equal(dp_conn_listen(&h2.loop, &sc, "127.0.0.1", h2.port, &l2),
				 -EADDRINUSE);
		assert_null(l2);
		assert_int_equal(dp_conn_listen(&h2.loop, &sc, "no such host.invalid", 0, &l2),
				 DP_ENOENT);
		dp_listener_close(h2.lst);
		h2.lst = NULL;
		h_run(&h2);
	}
}

/* ---- write-queue cap: a peer that never reads ------------------------------ */

typedef struct stuck {
	uint16_t port;
	int reading;             /* 1: a well-behaved client that reads everything */
	atomic_int stop;
	int hs_ok;
	size_t got;
} stuck;

static void *stuck_client(void *arg)
{
	stuck *s = arg;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(s->port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), small = 4096;
	SSL *ssl;
	char buf[16384];

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (!s->reading)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		return NULL;
	ssl = SSL_new(cli_ctx);
	SSL_set_fd(ssl, fd);
	SSL_set1_host(ssl, "learner");
	s->hs_ok = SSL_connect(ssl) == 1;
	if (s->reading && s->hs_ok) {
		struct timeval tv = { 0, 20000 };
		int idle = 0;

		/* Read until the server's close_notify; give up 2 s after the
		 * test said stop (the server never closed). */
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		for (;;) {
			int n = SSL_read(ssl, buf, sizeof(buf));

			if (n > 0) {
				s->got += (size_t)n;
				continue;
			}
			if (SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN)
				break;
			ERR_clear_error();
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				break;
			if (atomic_load(&s->stop)) {
				idle++;
				if (idle > 100)
					break;
			}
		}
	}
	/* A reader closes once it has the close_notify (the server waits for
	 * that EOF); the other waits for the end of the test. */
	while (!s->reading && !atomic_load(&s->stop))
		usleep(10000);
	SSL_free(ssl);
	close(fd);
	ERR_clear_error();
	return NULL;
}

static void on_stream_tick(uv_timer_t *t)
{
	harness *h = t->data;
	int r;

	if (h->srv.conn == NULL || !dp_conn_is_open(h->srv.conn)) {
		if (h->srv.conn == NULL && h->srv.closes == 0)
			return;      /* handshake not done yet */
		uv_timer_stop(t);
		return;
	}
	/* A flow-controlled sender waits while more than 1 MiB is queued. */
	if (h->paced && dp_conn_write_queue(h->srv.conn) > (1u << 20))
		return;
	{
		Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
		Dpasync__Done d = DPASYNC__DONE__INIT;

		e.version = 1;
		e.msg_case = DPASYNC__ENVELOPE__MSG_DONE;
		e.done = &d;
		d.t = 1;
		d.n_final_theta = BIG_P;
		d.final_theta = big_a;
		r = dp_conn_send(h->srv.conn, &e);
	}
	if (r != 0) {
		h->send_err = r;
		uv_timer_stop(t);
		return;
	}
	h->sent++;
	if (h->sent == h->send_max) {
		uv_timer_stop(t);
		dp_conn_close(h->srv.conn);
	}
}

static void run_stream(harness *h, stuck *s, int reading)
{
	dp_conn_config sc;
	pthread_t th;

	fill_big();
	h_init(h, SC_STREAM);
	h->want_cli = 0;
	h->send_max = 24;              /* 24 MiB in all */
	h->paced = reading;
	sc = base_cfg(h, srv_ctx, &h->srv);
	sc.max_write_queue = 4u << 20;
	h_listen(h, &sc);
	memset(s, 0, sizeof(*s));
	s->port = h->port;
	s->reading = reading;
	h->stop_flag = &s->stop;
	uv_timer_start(&h->tick, on_stream_tick, 5, 5);
	assert_int_equal(pthread_create(&th, NULL, stuck_client, s), 0);
	h_run(h);
	atomic_store(&s->stop, 1);
	pthread_join(th, NULL);
	assert_int_equal(s->hs_ok, 1);
}

static void test_write_queue_cap(void **state)
{
	harness h;
	stuck s;

	run_stream(&h, &s, 0);
	assert_int_equal(h.send_err, -ENOBUFS);
	assert_true(h.sent < h.send_max);
	assert_int_equal(h.srv.reason, -ENOBUFS);
	assert_non_null(strstr(h.srv.detail, "not reading"));
}

/* Control: a sender that watches dp_conn_write_queue, streaming to a client
 * that reads, never hits the cap (whatever the relative speeds). */
static void test_write_queue_reader_ok(void **state)
{
	harness h;
	stuck s;

	run_stream(&h, &s, 1);
	assert_int_equal(h.send_err, 0);
	assert_int_equal(h.sent, h.send_max);
	assert_int_equal(h.srv.reason, 0);
	assert_true(s.got >= (size_t)h.send_max * BIG_P * sizeof(double));
}

/* ---- closing with the peer's input unread ----------------------------------
 * The learner's Done can cross an owner's next request.  If the closing side
 * closed its socket with that request unread, the kernel would send a reset
 * and drop whatever part of the Done was still unacknowledged: here the part
 * that a client with a small receive window has not taken yet. */

typedef struct unread {
	uint16_t port;
	int hs_ok, notify, wrote;
	size_t got;
	unsigned long err;
} unread;

static void *unread_client(void *arg)
{
	unread *u = arg;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(u->port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), small = 4096;
	struct timeval tv = { 5, 0 };
	SSL *ssl;
	char buf[16384];

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return NULL;
	}
	ssl = SSL_new(cli_ctx);
	SSL_set_fd(ssl, fd);
	SSL_set1_host(ssl, "learner");
	u->hs_ok = SSL_connect(ssl) == 1;
	if (u->hs_ok) {
		/* after the server has closed: this input is never read */
		usleep(100000);
		u->wrote = SSL_write(ssl, "a request", 9) == 9;
		usleep(300000);
		for (;;) {
			int n = SSL_read(ssl, buf, sizeof(buf));

			if (n > 0) {
				u->got += (size_t)n;
				continue;
			}
			u->notify = SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN;
			u->err = ERR_peek_last_error();
			break;
		}
		if (u->notify)
			(void)SSL_shutdown(ssl);
	}
	SSL_free(ssl);
	close(fd);
	ERR_clear_error();
	return NULL;
}

static void test_close_with_unread_input(void **state)
{
	harness h;
	dp_conn_config sc;
	unread u = { 0 };
	pthread_t th;

	h_init(&h, SC_UNREAD);
	h.want_cli = 0;
	sc = base_cfg(&h, srv_ctx, &h.srv);
	h_listen(&h, &sc);
	u.port = h.port;
	assert_int_equal(pthread_create(&th, NULL, unread_client, &u), 0);
	h_run(&h);
	pthread_join(th, NULL);
	assert_int_equal(u.hs_ok, 1);
	assert_int_equal(u.wrote, 1);
	/* the whole Done (its doubles and framing), then close_notify */
	assert_true(u.got > UNREAD_P * sizeof(double));
	if (!u.notify)
		fail_msg("no close_notify after %zu bytes (%s)", u.got, ERR_reason_error_string(u.err));
	assert_int_equal(h.srv.reason, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_other_ca_refused),
		cmocka_unit_test(test_no_cert_refused),
		cmocka_unit_test(test_expired_client_refused),
		cmocka_unit_test(test_server_name_mismatch),
		cmocka_unit_test(test_not_admitted),
		cmocka_unit_test(test_oversized_frame),
		cmocka_unit_test(test_last_message_delivered),
		cmocka_unit_test(test_close_with_unread_input),
		cmocka_unit_test(test_garbage_closes),
		cmocka_unit_test(test_handshake_timeout),
		cmocka_unit_test(test_silent_peers_take_no_turn),
		cmocka_unit_test(test_listener_close_cancels_handshakes),
		cmocka_unit_test(test_listener_cap),
		cmocka_unit_test(test_connect_errors),
		cmocka_unit_test(test_write_queue_cap),
		cmocka_unit_test(test_write_queue_reader_ok),
	};
	int r = cmocka_run_group_tests(tests, group_setup, group_teardown);

	free(big_a);
	free(big_b);
	return r;
}
