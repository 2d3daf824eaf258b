/* SPDX-License-Identifier: Apache-2.0 */
/* A minimal, fast owner for the daemon throughput benchmark
 * (docs/bench-daemons.md): a diagnostic that isolates learnerd's own
 * cost.  One process, one libuv loop, N owner connections (identities
 * owner-1 .. owner-N, certificates DIR/owner-i.crt/.key), speaking the
 * real protocol through common/net/conn.h, but with no clock, no data, no
 * noise and no ledger: each Query is answered at once with a gradient
 * 0.5 * theta, followed at once by the next UpdateRequest, so the
 * learner's request queue is never empty.  Never a privacy mechanism:
 * benchmark only, never installed.
 *
 *   bench_owner_stub --learner HOST:PORT --ca F --certs DIR --owners N
 *                    [--first 1] [--p 11] [--rows 50] [--rate 1]
 *                    [--connect-chunk 0]
 *
 * --first F: the identities are owner-F .. owner-(F+N-1) (the scale
 * benchmark, docs/scale.md, mixes stubs with real ownerd processes).
 * --rate R: the clock rate its Hellos state; the learner plans each
 * owner's share of the iterations from it (docs/planner.md).
 * --connect-chunk C: start C connections per turn of the loop instead of
 * all N before it runs (0).  With all at once, the loop writes every
 * ClientHello before it reads any server's answer, so on a loaded machine
 * the first handshakes wait tens of seconds on this process, not on the
 * learner; in chunks, all N still start within seconds and each answers
 * the learner at once, as N separate owners would.
 *
 * Exit 0 when every connection received Done; 1 otherwise (message on
 * stderr); 2 on bad usage. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "common/net/addr.h"
#include "common/net/conn.h"
#include "common/net/frame.h"
#include "tests/lib/opts.h"
#include "tests/lib/peer.h"

struct stub_owner {
	char id[TST_PEER_ID_MAX];
	dp_conn *conn;
	uint64_t T, answers, max_k;
	int welcomed, done, closed;
};

static struct tst_opts_owners O;
static double rate;

static uv_loop_t *loop;
static uv_idle_t feeder;        /* --connect-chunk: starts the next chunk */
static size_t next_owner;
static size_t connect_chunk;
static struct stub_owner *own;
static double *grad;
static size_t n_closed, n_done;
static int failed;

/* rc of sending a message of kind `kind` on o's connection. */
static void sent(struct stub_owner *o, const char *kind, int rc)
{
	if (rc < 0) {
		fprintf(stderr, "bench_owner_stub %s: send %s: %s\n", o->id, kind,
			dp_error_detail(rc));
		failed = 1;
	}
}

static void send_env(struct stub_owner *o, Dpasync__Envelope *env)
{
	sent(o, dp_frame_kind(env), tst_peer_send(o->conn, env));
}

static void send_update_request(struct stub_owner *o)
{
	sent(o, "update_request", tst_peer_send_request(o->conn));
}

static int on_handshake(dp_conn *c, const char *peer_id)
{
	struct stub_owner *o = dp_conn_data(c);
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Hello h = DPASYNC__HELLO__INIT;

	o->conn = c;
	h.version = DP_PROTO_VERSION;
	h.owner_id = o->id;
	h.n_rows = O.rows;
	h.n_features = (uint32_t)O.p;
	h.epsilon = 1.0;
	h.rate = rate;
	env.msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
	env.hello = &h;
	send_env(o, &env);
	return 0;
}

static void answer_query(struct stub_owner *o, const Dpasync__Query *q)
{
	uint64_t K = o->T ? o->T : 1;

	if (q->k <= o->max_k) {
		fprintf(stderr, "bench_owner_stub %s: query id %llu after %llu\n", o->id,
			(unsigned long long)q->k, (unsigned long long)o->max_k);
		failed = 1;
		dp_conn_close(o->conn);
		return;
	}
	o->max_k = q->k;
	for (size_t j = 0; j < O.p; j++)
		grad[j] = 0.5 * q->theta[j];
	o->answers++;
	sent(o, "answer", tst_peer_send_answer(o->conn, q->k, grad, O.p, o->answers, 1.0, K));
	if (o->answers < K && o->conn && dp_conn_is_open(o->conn))
		send_update_request(o);
}

static void on_message(dp_conn *c, Dpasync__Envelope *m)
{
	struct stub_owner *o = dp_conn_data(c);

	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_WELCOME: {
		dp_frame_limits lim = { .p = O.p };

		if (m->welcome->p != O.p) {
			fprintf(stderr, "bench_owner_stub %s: Welcome.p=%u, expected %zu\n", o->id,
				m->welcome->p, O.p);
			failed = 1;
			dp_conn_close(c);
			break;
		}
		o->T = m->welcome->t;
		o->welcomed = 1;
		dp_conn_set_limits(c, &lim);
		send_update_request(o);
		break;
	}
	case DPASYNC__ENVELOPE__MSG_QUERY:
		if (o->welcomed)
			answer_query(o, m->query);
		break;
	case DPASYNC__ENVELOPE__MSG_DONE:
		o->done = 1;
		n_done++;
		dp_conn_close(c);
		break;
	default:
		fprintf(stderr, "bench_owner_stub %s: unexpected %s\n", o->id, dp_frame_kind(m));
		failed = 1;
		dp_conn_close(c);
		break;
	}
	dp_frame_msg_free(m);
}

static void on_close(dp_conn *c, int reason, const char *detail)
{
	struct stub_owner *o = dp_conn_data(c);

	o->conn = NULL;
	o->closed = 1;
	n_closed++;
	if (!o->done) {
		fprintf(stderr, "bench_owner_stub %s: closed before Done (%d: %s)\n", o->id, reason,
			detail);
		failed = 1;
	}
}

static int connect_owner(struct stub_owner *o, size_t i)
{
	static const dp_conn_callbacks cb = {
		.on_handshake = on_handshake, .on_message = on_message, .on_close = on_close,
	};
	SSL_CTX *ctx;
	dp_conn *c;
	int rc;

	rc = tst_peer_owner_ctx(O.ca, O.certs, O.first + i, o->id, sizeof(o->id), &ctx);
	if (rc < 0)
		return rc;
	/* A 300 s handshake limit: a storm of 10,000 handshakes on 2 busy cores. */
	rc = tst_peer_connect(loop, ctx, &cb, o, 300000, O.host, O.port, &c);
	SSL_CTX_free(ctx);
	return rc;
}

/* Start owners next_owner .. next_owner + count - 1; on a failure the
 * message is printed and the loop stopped. */
static int connect_some(size_t count)
{
	int rc;

	for (; count > 0 && next_owner < O.n; count--, next_owner++) {
		rc = connect_owner(&own[next_owner], next_owner);
		if (rc < 0) {
			fprintf(stderr, "bench_owner_stub: owner-%zu: %s\n", O.first + next_owner,
				dp_error_detail(rc));
			failed = 1;
			uv_stop(loop);
			return rc;
		}
	}
	return 0;
}

static void on_feed(uv_idle_t *h)
{
	connect_some(connect_chunk);
	if (next_owner == O.n)
		uv_close((uv_handle_t *)h, NULL);
}

static const struct dp_config_entry opts[] = {
	TST_OPTS_OWNERS(&O),
	{ .name = "rate", DP_CFG_DOUBLE(&rate), .def = "1", .min = 0, .max = INFINITY,
	  .help = "clock rate said in each Hello" },
	{ .name = "connect-chunk", DP_CFG_SIZE(&connect_chunk), .def = "0", .min = 0, .max = 1e9,
	  .help = "connections started per turn of the loop (0: all before it runs)" },
	DP_CONFIG_END,
};

int main(int argc, char **argv)
{
	static const struct dp_config_spec spec = {
		.program = "bench_owner_stub", .summary = "A minimal, fast owner for the benchmarks.",
		.entries = opts, .validate = tst_opts_owners_check, .validate_arg = &O,
		.command = true,
	};
	int status;

	signal(SIGPIPE, SIG_IGN);
	if (!tst_opts_load(&spec, argc, argv, &status))
		return status;
	dp_log_set_level(DP_LOG_WARN);
	loop = uv_default_loop();
	own = calloc(O.n, sizeof(*own));
	grad = calloc(O.p, sizeof(double));
	if (own == NULL || grad == NULL) {
		fprintf(stderr, "bench_owner_stub: out of memory\n");
		return 1;
	}
	if (connect_chunk == 0) {
		if (connect_some(O.n) < 0)
			return 1;
	} else {
		uv_idle_init(loop, &feeder);
		uv_idle_start(&feeder, on_feed);
	}
	uv_run(loop, UV_RUN_DEFAULT);
	if (n_done != O.n)
		failed = 1;
	free(own);
	free(grad);
	dp_config_free(&spec);
	return failed ? 1 : 0;
}
