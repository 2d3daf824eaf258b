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
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "common/core/num.h"
#include "common/net/addr.h"
#include "common/net/conn.h"
#include "common/net/frame.h"
#include "common/net/tls.h"

struct stub_owner {
	char id[32];
	dp_conn *conn;
	uint64_t T, answers, max_k;
	int welcomed, done, closed;
};

static char learner_host[DP_ADDR_HOST_MAX + 1];

static struct {
	const char *host, *ca, *certs;
	uint16_t port;
	size_t n, p, first;
	uint64_t rows;
	double rate;
} A = { .p = 11, .rows = 50, .first = 1, .rate = 1.0 };

static uv_loop_t *loop;
static uv_idle_t feeder;        /* --connect-chunk: starts the next chunk */
static size_t next_owner;
static size_t connect_chunk;
static struct stub_owner *own;
static double *grad;
static size_t n_closed, n_done;
static int failed;

static void send_env(struct stub_owner *o, Dpasync__Envelope *env)
{
	int rc;

	env->version = DP_PROTO_VERSION;
	rc = dp_conn_send(o->conn, env);
	if (rc < 0) {
		fprintf(stderr, "bench_owner_stub %s: send %s: %s\n", o->id, dp_frame_kind(env),
			dp_error_detail(rc));
		failed = 1;
	}
}

static void send_update_request(struct stub_owner *o)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__UpdateRequest u = DPASYNC__UPDATE_REQUEST__INIT;

	env.msg_case = DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST;
	env.update_request = &u;
	send_env(o, &env);
}

static int on_handshake(dp_conn *c, const char *peer_id)
{
	struct stub_owner *o = dp_conn_data(c);
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Hello h = DPASYNC__HELLO__INIT;

	o->conn = c;
	h.version = DP_PROTO_VERSION;
	h.owner_id = o->id;
	h.n_rows = A.rows;
	h.n_features = (uint32_t)A.p;
	h.epsilon = 1.0;
	h.rate = A.rate;
	env.msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
	env.hello = &h;
	send_env(o, &env);
	return 0;
}

static void answer_query(struct stub_owner *o, const Dpasync__Query *q)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Answer a = DPASYNC__ANSWER__INIT;
	uint64_t K = o->T ? o->T : 1;

	if (q->k <= o->max_k) {
		fprintf(stderr, "bench_owner_stub %s: query id %llu after %llu\n", o->id,
			(unsigned long long)q->k, (unsigned long long)o->max_k);
		failed = 1;
		dp_conn_close(o->conn);
		return;
	}
	o->max_k = q->k;
	for (size_t j = 0; j < A.p; j++)
		grad[j] = 0.5 * q->theta[j];
	o->answers++;
	a.k = q->k;
	a.n_gradient = A.p;
	a.gradient = grad;
	a.answers_given = o->answers;
	a.epsilon_spent = (double)o->answers / (double)K;
	a.epsilon_left = a.epsilon_spent < 1.0 ? 1.0 - a.epsilon_spent : 0.0;
	env.msg_case = DPASYNC__ENVELOPE__MSG_ANSWER;
	env.answer = &a;
	send_env(o, &env);
	if (o->answers < K && o->conn && dp_conn_is_open(o->conn))
		send_update_request(o);
}

static void on_message(dp_conn *c, Dpasync__Envelope *m)
{
	struct stub_owner *o = dp_conn_data(c);

	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_WELCOME: {
		dp_frame_limits lim = { .p = A.p };

		if (m->welcome->p != A.p) {
			fprintf(stderr, "bench_owner_stub %s: Welcome.p=%u, expected %zu\n", o->id,
				m->welcome->p, A.p);
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
	char cert[4096], key[4096];
	dp_tls_files tf = { .ca_file = A.ca, .cert_file = cert, .key_file = key };
	dp_conn_config cfg;
	SSL_CTX *ctx;
	dp_conn *c;
	int rc;

	snprintf(o->id, sizeof(o->id), "owner-%zu", A.first + i);
	snprintf(cert, sizeof(cert), "%s/%s.crt", A.certs, o->id);
	snprintf(key, sizeof(key), "%s/%s.key", A.certs, o->id);
	rc = dp_tls_ctx_new(0, &tf, &ctx);
	if (rc < 0)
		return rc;
	memset(&cfg, 0, sizeof(cfg));
	cfg.ctx = ctx;
	cfg.cb.on_handshake = on_handshake;
	cfg.cb.on_message = on_message;
	cfg.cb.on_close = on_close;
	cfg.data = o;
	cfg.handshake_timeout_ms = 300000;   /* a storm of 10,000 handshakes on 2 busy cores */
	rc = dp_conn_connect(loop, &cfg, A.host, A.port, "learner", &c);
	SSL_CTX_free(ctx);
	return rc;
}

/* Start owners next_owner .. next_owner + count - 1; on a failure the
 * message is printed and the loop stopped. */
static int connect_some(size_t count)
{
	int rc;

	for (; count > 0 && next_owner < A.n; count--, next_owner++) {
		rc = connect_owner(&own[next_owner], next_owner);
		if (rc < 0) {
			fprintf(stderr, "bench_owner_stub: owner-%zu: %s\n", A.first + next_owner,
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
	if (next_owner == A.n)
		uv_close((uv_handle_t *)h, NULL);
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_owner_stub --learner HOST:PORT --ca F --certs DIR "
		"--owners N [--first F] [--p P] [--rows R] [--rate R] [--connect-chunk C]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "learner", required_argument, NULL, 'l' }, { "ca", required_argument, NULL, 'a' },
		{ "certs", required_argument, NULL, 'c' }, { "owners", required_argument, NULL, 'n' },
		{ "p", required_argument, NULL, 'p' }, { "rows", required_argument, NULL, 'r' },
		{ "first", required_argument, NULL, 'f' }, { "rate", required_argument, NULL, 'R' },
		{ "connect-chunk", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	int o, rc = 0;

	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		o = getopt_long(argc, argv, "", opts, NULL);
		if (o == -1)
			break;
		switch (o) {
		case 'l':
			rc = dp_addr_split("--learner", optarg, 0, learner_host,
					   sizeof(learner_host), &A.port);
			A.host = learner_host;
			break;
		case 'a': A.ca = optarg; break;
		case 'c': A.certs = optarg; break;
		case 'n': rc = dp_num_parse_size("--owners", optarg, &A.n); break;
		case 'p': rc = dp_num_parse_size("--p", optarg, &A.p); break;
		case 'r': rc = dp_num_parse_u64("--rows", optarg, &A.rows); break;
		case 'f': rc = dp_num_parse_size("--first", optarg, &A.first); break;
		case 'R': rc = dp_num_parse_double("--rate", optarg, 0, &A.rate); break;
		case 'k': rc = dp_num_parse_size("--connect-chunk", optarg, &connect_chunk); break;
		default: return usage();
		}
		if (rc < 0) {
			fprintf(stderr, "bench_owner_stub: %s\n", dp_error_detail(rc));
			return 2;
		}
	}
	if (optind != argc || !A.host || !A.ca || !A.certs || A.n == 0 || A.p == 0 || A.rows == 0 ||
	    A.first == 0 || !(A.rate >= 0))
		return usage();
	dp_log_set_level(DP_LOG_WARN);
	loop = uv_default_loop();
	own = calloc(A.n, sizeof(*own));
	grad = calloc(A.p, sizeof(double));
	if (own == NULL || grad == NULL) {
		fprintf(stderr, "bench_owner_stub: out of memory\n");
		return 1;
	}
	if (connect_chunk == 0) {
		if (connect_some(A.n) < 0)
			return 1;
	} else {
		uv_idle_init(loop, &feeder);
		uv_idle_start(&feeder, on_feed);
	}
	uv_run(loop, UV_RUN_DEFAULT);
	if (n_done != A.n)
		failed = 1;
	free(own);
	free(grad);
	return failed ? 1 : 0;
}
