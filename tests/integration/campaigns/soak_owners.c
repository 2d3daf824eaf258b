/* SPDX-License-Identifier: Apache-2.0 */
/* Many churning owners for learnerd's soak test (docs/soak.md): one
 * process, one libuv loop, owners owner-FIRST .. owner-(FIRST+N-1)
 * (certificates DIR/owner-i.crt/.key), speaking the real protocol over
 * mutual TLS through common/net/conn.h.  Each owner connects, says Hello,
 * and once welcomed sends an UpdateRequest every INTERVAL ms (answering
 * each Query with the gradient 0.5 * theta: no data, no noise, no ledger);
 * it then disconnects and reconnects after a random pause, for ever:
 *
 *   - 1 connection in 10 is closed right after its TLS handshake, before
 *     Hello (an admitted identity that never speaks);
 *   - 1 in 10 is closed right after its Hello, often before its Welcome;
 *   - the others stay welcomed for STAY-MIN..STAY-MAX ms (uniform) and are
 *     then closed gracefully, often with a query in flight.
 *
 * The pause before reconnecting is uniform in AWAY-MIN..AWAY-MAX ms.  Random
 * draws come from the CSPRNG (common/core/rng.h).  Test only, never
 * installed; never a privacy mechanism.
 *
 *   soak_owners --learner HOST:PORT --ca F --certs DIR --owners N [--first I]
 *               [--p P] [--rows R] [--interval-ms 250] [--stay-min-ms 1000]
 *               [--stay-max-ms 5000] [--away-min-ms 200] [--away-max-ms 2000]
 *
 * SIGUSR1 pauses the churn: every owner disconnects and stays away until
 * SIGUSR2, when they come back within a second (the soak test counts
 * learnerd's descriptors while no owner is connected).
 *
 * Runs until SIGTERM or SIGINT, then closes every connection and prints
 *   soak_owners connects=C welcomes=W answers=A closes=X errors=E
 * on stdout.  Exit 0 when no error was seen (an error: a connection closed
 * with a failure reason we did not cause, an unexpected message, a query id
 * that went backwards); 1 otherwise (the first errors on stderr); 2 on bad
 * usage. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "common/core/rng.h"
#include "common/net/addr.h"
#include "common/net/conn.h"
#include "common/net/frame.h"
#include "tests/lib/opts.h"
#include "tests/lib/peer.h"

enum plan { PLAN_NO_HELLO, PLAN_HELLO_ONLY, PLAN_STAY };

struct owner {
	char id[TST_PEER_ID_MAX];
	SSL_CTX *ctx;
	dp_conn *conn;
	uv_timer_t life;            /* stay timer while connected, reconnect timer while away */
	uv_timer_t req;             /* next UpdateRequest */
	enum plan plan;
	uint64_t K, answers, max_k;
	int welcomed;
};

static struct tst_opts_owners O;
static struct {
	uint64_t interval, stay_min, stay_max, away_min, away_max;
} A;

static uv_loop_t *loop;
static uv_signal_t sig_term, sig_int, sig_pause, sig_resume;
static struct owner *own;
static double *grad;
static dp_csprng *rng;
static int stopping, paused;
static unsigned long long n_connects, n_welcomes, n_answers, n_closes, n_errors;

static void error_line(const struct owner *o, const char *what, const char *detail)
{
	n_errors++;
	if (n_errors <= 10)
		fprintf(stderr, "soak_owners %s: %s: %s\n", o->id, what, detail);
}

static uint64_t uniform_ms(uint64_t lo, uint64_t hi)
{
	dp_bitsource bits = dp_rng_csprng_bits(rng);
	uint64_t r = 0;

	if (hi <= lo)
		return lo;
	if (dp_rng_below(&bits, hi - lo + 1, &r) < 0)
		return lo;
	return lo + r;
}

/* rc of sending a message of kind `kind` on o's connection. */
static void sent(struct owner *o, const char *kind, int rc)
{
	/* DP_ESTATE: we closed it ourselves a moment ago; the rest is reported
	 * again by on_close with its reason. */
	if (rc < 0 && rc != DP_ESTATE)
		error_line(o, kind, dp_error_detail(rc));
}

static void send_env(struct owner *o, Dpasync__Envelope *env)
{
	sent(o, dp_frame_kind(env), tst_peer_send(o->conn, env));
}

static void send_update_request(uv_timer_t *t)
{
	struct owner *o = t->data;

	if (o->conn == NULL || !dp_conn_is_open(o->conn) || !o->welcomed)
		return;
	sent(o, "update_request", tst_peer_send_request(o->conn));
}

static void leave(uv_timer_t *t)
{
	struct owner *o = t->data;

	if (o->conn != NULL)
		dp_conn_close(o->conn);
}

static int on_handshake(dp_conn *c, const char *peer_id)
{
	struct owner *o = dp_conn_data(c);
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Hello h = DPASYNC__HELLO__INIT;

	(void)peer_id;
	if (o->plan == PLAN_NO_HELLO) {
		dp_conn_close(c);
		return 0;
	}
	h.version = DP_PROTO_VERSION;
	h.owner_id = o->id;
	h.n_rows = O.rows;
	h.n_features = (uint32_t)O.p;
	h.epsilon = 1.0;
	h.rate = 1000.0 / (double)A.interval;
	h.answers_given = o->answers;
	env.msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
	env.hello = &h;
	send_env(o, &env);
	if (o->plan == PLAN_HELLO_ONLY)
		dp_conn_close(c);
	return 0;
}

static void answer_query(struct owner *o, const Dpasync__Query *q)
{
	uint64_t K = o->K ? o->K : 1;

	if (q->k <= o->max_k) {
		error_line(o, "query id went backwards", "");
		dp_conn_close(o->conn);
		return;
	}
	o->max_k = q->k;
	for (size_t j = 0; j < O.p; j++)
		grad[j] = 0.5 * q->theta[j];
	o->answers++;
	n_answers++;
	sent(o, "answer", tst_peer_send_answer(o->conn, q->k, grad, O.p, o->answers, 1.0, K));
	uv_timer_start(&o->req, send_update_request, A.interval, 0);
}

static void on_message(dp_conn *c, Dpasync__Envelope *m)
{
	struct owner *o = dp_conn_data(c);

	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_WELCOME: {
		dp_frame_limits lim = { .p = O.p };

		if (m->welcome->p != O.p || o->welcomed) {
			error_line(o, "bad Welcome", "wrong p or a second Welcome");
			dp_conn_close(c);
			break;
		}
		o->K = m->welcome->answers_cap ? m->welcome->answers_cap : m->welcome->t;
		o->welcomed = 1;
		n_welcomes++;
		dp_conn_set_limits(c, &lim);
		uv_timer_start(&o->req, send_update_request, A.interval, 0);
		uv_timer_start(&o->life, leave, uniform_ms(A.stay_min, A.stay_max), 0);
		break;
	}
	case DPASYNC__ENVELOPE__MSG_QUERY:
		if (o->welcomed && o->conn != NULL && dp_conn_is_open(c))
			answer_query(o, m->query);
		break;
	default:
		error_line(o, "unexpected message", dp_frame_kind(m));
		dp_conn_close(c);
		break;
	}
	dp_frame_msg_free(m);
}

static void reconnect(uv_timer_t *t);

static void on_close(dp_conn *c, int reason, const char *detail)
{
	struct owner *o = dp_conn_data(c);

	o->conn = NULL;
	o->welcomed = 0;
	n_closes++;
	uv_timer_stop(&o->req);
	if (reason != 0 && !stopping)
		error_line(o, "closed", detail);
	if (!stopping && !paused)
		uv_timer_start(&o->life, reconnect, uniform_ms(A.away_min, A.away_max), 0);
}

static int start_connection(struct owner *o)
{
	static const dp_conn_callbacks cb = {
		.on_handshake = on_handshake, .on_message = on_message, .on_close = on_close,
	};
	uint64_t r = uniform_ms(0, 9);
	int rc;

	o->plan = r == 0 ? PLAN_NO_HELLO : r == 1 ? PLAN_HELLO_ONLY : PLAN_STAY;
	/* A 30 s handshake limit: many handshakes on 2 busy cores. */
	rc = tst_peer_connect(loop, o->ctx, &cb, o, 30000, O.host, O.port, &o->conn);
	if (rc == 0)
		n_connects++;
	return rc;
}

static void reconnect(uv_timer_t *t)
{
	struct owner *o = t->data;
	int rc;

	if (stopping || paused)
		return;
	rc = start_connection(o);
	if (rc < 0) {
		error_line(o, "connect", dp_error_detail(rc));
		uv_timer_start(&o->life, reconnect, A.away_max, 0);
	}
}

static void on_pause(uv_signal_t *s, int signum)
{
	(void)s;
	(void)signum;
	paused = 1;
	for (size_t i = 0; i < O.n; i++) {
		uv_timer_stop(&own[i].life);
		uv_timer_stop(&own[i].req);
		if (own[i].conn != NULL)
			dp_conn_close(own[i].conn);
	}
}

static void on_resume(uv_signal_t *s, int signum)
{
	(void)s;
	(void)signum;
	if (!paused)
		return;
	paused = 0;
	for (size_t i = 0; i < O.n; i++)
		if (own[i].conn == NULL)
			uv_timer_start(&own[i].life, reconnect, uniform_ms(0, 1000), 0);
}

static void on_signal(uv_signal_t *s, int signum)
{
	(void)s;
	(void)signum;
	stopping = 1;
	uv_close((uv_handle_t *)&sig_term, NULL);
	uv_close((uv_handle_t *)&sig_int, NULL);
	uv_close((uv_handle_t *)&sig_pause, NULL);
	uv_close((uv_handle_t *)&sig_resume, NULL);
	for (size_t i = 0; i < O.n; i++) {
		if (own[i].conn != NULL)
			dp_conn_close(own[i].conn);
		uv_close((uv_handle_t *)&own[i].life, NULL);
		uv_close((uv_handle_t *)&own[i].req, NULL);
	}
}

static int init_owner(struct owner *o, size_t i)
{
	int rc;

	rc = tst_peer_owner_ctx(O.ca, O.certs, O.first + i, o->id, sizeof(o->id), &o->ctx);
	if (rc < 0)
		return rc;
	uv_timer_init(loop, &o->life);
	uv_timer_init(loop, &o->req);
	o->life.data = o;
	o->req.data = o;
	/* Spread the first connections over a second, as owners would arrive. */
	uv_timer_start(&o->life, reconnect, uniform_ms(0, 1000), 0);
	return 0;
}

static const struct dp_config_entry opts[] = {
	TST_OPTS_OWNERS(&O),
	{ .name = "interval-ms", DP_CFG_U64(&A.interval), .def = "250", .min = 1, .max = INFINITY,
	  .help = "between an answer and the next UpdateRequest" },
	{ .name = "stay-min-ms", DP_CFG_U64(&A.stay_min), .def = "1000",
	  .help = "shortest stay once welcomed" },
	{ .name = "stay-max-ms", DP_CFG_U64(&A.stay_max), .def = "5000", .help = "longest stay" },
	{ .name = "away-min-ms", DP_CFG_U64(&A.away_min), .def = "200",
	  .help = "shortest pause before reconnecting" },
	{ .name = "away-max-ms", DP_CFG_U64(&A.away_max), .def = "2000", .help = "longest pause" },
	DP_CONFIG_END,
};

int main(int argc, char **argv)
{
	static const struct dp_config_spec spec = {
		.program = "soak_owners", .summary = "Many churning owners for learnerd's soak test.",
		.entries = opts, .validate = tst_opts_owners_check, .validate_arg = &O,
		.command = true,
	};
	int rc, status;

	signal(SIGPIPE, SIG_IGN);
	if (!tst_opts_load(&spec, argc, argv, &status))
		return status;
	dp_log_set_level(DP_LOG_ERROR);
	loop = uv_default_loop();
	own = calloc(O.n, sizeof(*own));
	grad = calloc(O.p, sizeof(double));
	rc = dp_rng_csprng_new(&rng);
	if (own == NULL || grad == NULL || rc < 0) {
		fprintf(stderr, "soak_owners: out of memory\n");
		return 1;
	}
	uv_signal_init(loop, &sig_term);
	uv_signal_init(loop, &sig_int);
	uv_signal_start(&sig_term, on_signal, SIGTERM);
	uv_signal_start(&sig_int, on_signal, SIGINT);
	uv_signal_init(loop, &sig_pause);
	uv_signal_init(loop, &sig_resume);
	uv_signal_start(&sig_pause, on_pause, SIGUSR1);
	uv_signal_start(&sig_resume, on_resume, SIGUSR2);
	for (size_t i = 0; i < O.n; i++) {
		rc = init_owner(&own[i], i);
		if (rc < 0) {
			fprintf(stderr, "soak_owners: owner-%zu: %s\n", O.first + i,
				dp_error_detail(rc));
			return 1;
		}
	}
	uv_run(loop, UV_RUN_DEFAULT);
	printf("soak_owners connects=%llu welcomes=%llu answers=%llu closes=%llu errors=%llu\n",
	       n_connects, n_welcomes, n_answers, n_closes, n_errors);
	for (size_t i = 0; i < O.n; i++)
		SSL_CTX_free(own[i].ctx);
	uv_loop_close(loop);
	dp_rng_csprng_destroy(rng);
	free(own);
	free(grad);
	dp_config_free(&spec);
	return n_errors ? 1 : 0;
}
