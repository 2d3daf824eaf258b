/* SPDX-License-Identifier: Apache-2.0 */
/* Baseline for the daemon throughput benchmark (docs/bench-daemons.md): a
 * raw request-response ping-pong over the project's own transport
 * (common/net/conn.h: TLS 1.3 with mutual authentication on libuv, frames of
 * common/net/frame.h, every message validated on receipt), exchanging per
 * round trip exactly the messages of one strict-mode learnerd iteration:
 *
 *   server ("learner")                     client ("owner")
 *      Query{k, theta[p]}        ------>
 *                                <------   Answer{k, gradient[p], epsilon_spent,
 *                                                 epsilon_left, answers_given}
 *                                <------   UpdateRequest{}
 *      next Query ...
 *
 * The Answer and the UpdateRequest are two separate sends (two TLS
 * records), as in ownerd.  By default the server sends the next Query as
 * soon as the Answer arrives, as learnerd does when its request queue is
 * not empty (the UpdateRequest then travels off the critical path, but it
 * is still received, decoded and validated, and one must arrive per
 * Answer); with --wait-request it waits for the UpdateRequest too (one
 * owner, strictly alternating).  Nothing else is done: no gradient, no
 * noise, no ledger, no trace -- the transport's cost only.
 *
 * By default the client runs in a forked child process (two processes,
 * like learnerd and ownerd); --one-process runs both ends on one loop.
 *
 *   tls_pingpong --ca CA --server-cert F --server-key F
 *                --client-cert F --client-key F
 *                [--p 11] [--seconds 3] [--warmup 2000] [--one-process]
 *                [--wait-request]
 *
 * Prints one JSON line on stdout:
 *   {"rt_per_s": ..., "round_trips": ..., "seconds": ..., "p": ..., "procs": ...,
 *    "query_bytes": ..., "answer_bytes": ..., "request_bytes": ...}
 * (message sizes are frame bodies as encoded for the first measured
 * round trip, without the 4-byte header or TLS overhead).  Exit 0 on
 * success, 1 on a failure (message on stderr), 2 on bad usage. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "common/net/conn.h"
#include "common/net/frame.h"
#include "common/net/listener.h"
#include "tests/lib/opts.h"
#include "tests/lib/peer.h"

static struct {
	char *ca, *scert, *skey, *ccert, *ckey;
	size_t p;
	double seconds;
	uint64_t warmup;
	bool one_process;
	bool wait_request;
} A;

/* ---- server side (the "learner") ---------------------------------------- */

static struct {
	uv_loop_t *loop;
	dp_listener *lst;
	dp_conn *conn;
	uv_timer_t guard;       /* fails a run that does not finish in time */
	double *theta;
	uint64_t k, answered, requests, measured;
	uint64_t t0, t1;        /* uv_hrtime of the start/end of measurement */
	int got_answer;         /* Answer of the current k seen */
	int failed, finished;
	size_t qbytes, abytes, rbytes;
} S;

static double elapsed_secs(uint64_t a, uint64_t b)
{
	return (double)(b - a) * 1e-9;
}

static void server_fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "tls_pingpong: server: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	S.failed = 1;
	if (S.conn)
		dp_conn_close(S.conn);
}

static void server_send_query(void)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Query q = DPASYNC__QUERY__INIT;
	int rc;

	S.k++;
	/* Values with full mantissas: packed doubles are 8 bytes whatever
	 * their value, but keep the payload realistic anyway. */
	for (size_t j = 0; j < A.p; j++)
		S.theta[j] = 0.1 * (double)(j + 1) + 1e-9 * (double)S.k;
	q.k = S.k;
	q.n_theta = A.p;
	q.theta = S.theta;
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_QUERY;
	env.query = &q;
	if (S.qbytes == 0 && S.k > A.warmup)
		S.qbytes = dpasync__envelope__get_packed_size(&env);
	S.got_answer = 0;
	rc = dp_conn_send(S.conn, &env);
	if (rc < 0)
		server_fail("send: %s", dp_error_detail(rc));
}

/* End of measurement: close gracefully; the client exits when it sees the
 * close, the listener is closed so the loop can end. */
static void server_finish(void)
{
	S.finished = 1;
	dp_conn_close(S.conn);
}

/* One round trip done (the Answer, and with --wait-request also the
 * UpdateRequest, of query k arrived): count it, then the next Query or
 * the end. */
static void server_round_done(void)
{
	S.answered++;
	if (S.answered == A.warmup) {
		S.t0 = uv_hrtime();
	} else if (S.answered > A.warmup) {
		uint64_t now = uv_hrtime();

		if (elapsed_secs(S.t0, now) >= A.seconds) {
			S.t1 = now;
			S.measured = S.answered - A.warmup;
			server_finish();
			return;
		}
	}
	server_send_query();
}

static void server_on_message(dp_conn *c, Dpasync__Envelope *m)
{
	if (S.finished || S.failed) {
		dp_frame_msg_free(m);
		return;
	}
	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_ANSWER:
		if (m->answer->k != S.k || S.got_answer) {
			server_fail("%s", "answer for the wrong k");
			break;
		}
		if (S.abytes == 0 && S.k > A.warmup)
			S.abytes = dpasync__envelope__get_packed_size(m);
		S.got_answer = 1;
		/* Without --wait-request the round trip ends here; the owner's
		 * UpdateRequest must still come (checked below). */
		if (!A.wait_request)
			server_round_done();
		break;
	case DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST:
		/* The first request starts the exchange; afterwards exactly one
		 * follows each Answer. */
		S.requests++;
		if (S.requests > S.k + 1 || (A.wait_request && S.k > 0 && !S.got_answer)) {
			server_fail("%s", "update request without an answer");
			break;
		}
		if (S.rbytes == 0 && S.k > A.warmup)
			S.rbytes = dpasync__envelope__get_packed_size(m);
		if (S.k == 0)
			server_send_query();
		else if (A.wait_request)
			server_round_done();
		break;
	default:
		server_fail("unexpected %s message", dp_frame_kind(m));
		break;
	}
	dp_frame_msg_free(m);
}

static int server_on_handshake(dp_conn *c, const char *peer_id)
{
	dp_frame_limits lim = { .p = A.p };

	if (S.conn != NULL)
		return -1;      /* one client only */
	S.conn = c;
	dp_conn_set_limits(c, &lim);
	return 0;
}

static void server_on_close(dp_conn *c, int reason, const char *detail)
{
	if (c != S.conn) {
		fprintf(stderr, "tls_pingpong: server: refused connection closed: %s\n", detail);
		return;
	}
	S.conn = NULL;
	if (!S.finished && !S.failed) {
		fprintf(stderr, "tls_pingpong: server: client closed early (%d: %s)\n", reason,
			detail);
		S.failed = 1;
	}
	if (S.lst) {
		dp_listener_close(S.lst);
		S.lst = NULL;
	}
	if (!uv_is_closing((uv_handle_t *)&S.guard))
		uv_close((uv_handle_t *)&S.guard, NULL);
}

static void on_guard(uv_timer_t *t)
{
	fprintf(stderr, "tls_pingpong: server: no result within the time limit\n");
	S.failed = 1;
	if (S.conn)
		dp_conn_close(S.conn);      /* on_close closes the rest */
	if (S.lst) {
		dp_listener_close(S.lst);
		S.lst = NULL;
	}
	uv_close((uv_handle_t *)&S.guard, NULL);
}

/* ---- client side (the "owner") ------------------------------------------ */

static struct {
	dp_conn *conn;
	double *grad;
	uint64_t answers;
	int done, failed;
} C;

static void client_sent(int rc)
{
	if (rc < 0) {
		fprintf(stderr, "tls_pingpong: client: send: %s\n", dp_error_detail(rc));
		C.failed = 1;
	}
}

static void client_send(Dpasync__Envelope *env)
{
	client_sent(tst_peer_send(C.conn, env));
}

static void client_request(void)
{
	client_sent(tst_peer_send_request(C.conn));
}

static void client_on_message(dp_conn *c, Dpasync__Envelope *m)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Answer a = DPASYNC__ANSWER__INIT;

	if (m->msg_case != DPASYNC__ENVELOPE__MSG_QUERY) {
		fprintf(stderr, "tls_pingpong: client: unexpected %s message\n", dp_frame_kind(m));
		C.failed = 1;
		dp_frame_msg_free(m);
		dp_conn_close(c);
		return;
	}
	/* A gradient-like payload of the same size as ownerd's. */
	for (size_t j = 0; j < A.p; j++)
		C.grad[j] = 0.5 * m->query->theta[j] - 0.01 * (double)j;
	C.answers++;
	a.k = m->query->k;
	a.n_gradient = A.p;
	a.gradient = C.grad;
	a.epsilon_spent = 1e-4 * (double)C.answers;
	a.epsilon_left = 1e9 - a.epsilon_spent;   /* stays positive */
	a.answers_given = C.answers;
	env.msg_case = DPASYNC__ENVELOPE__MSG_ANSWER;
	env.answer = &a;
	dp_frame_msg_free(m);
	client_send(&env);
	if (!C.failed)
		client_request();
}

static int client_on_handshake(dp_conn *c, const char *peer_id)
{
	dp_frame_limits lim = { .p = A.p };

	C.conn = c;
	dp_conn_set_limits(c, &lim);
	client_request();    /* the first request starts the exchange */
	return 0;
}

static void client_on_close(dp_conn *c, int reason, const char *detail)
{
	C.conn = NULL;
	C.done = 1;
	if (reason != 0) {
		fprintf(stderr, "tls_pingpong: client: connection failed (%d: %s)\n", reason,
			detail);
		C.failed = 1;
	}
}

static int client_start(uv_loop_t *loop, uint16_t port)
{
	static const dp_conn_callbacks cb = {
		.on_handshake = client_on_handshake, .on_message = client_on_message,
		.on_close = client_on_close,
	};
	SSL_CTX *ctx;
	dp_conn *c;
	int rc;

	C.grad = calloc(A.p, sizeof(double));
	if (C.grad == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	rc = tst_peer_ctx(0, A.ca, A.ccert, A.ckey, &ctx);
	if (rc < 0)
		return rc;
	rc = tst_peer_connect(loop, ctx, &cb, NULL, 0, "127.0.0.1", port, &c);
	SSL_CTX_free(ctx);
	return rc;
}

/* The forked client: its own loop, nothing shared with the parent's. */
static int client_main(int rfd)
{
	uv_loop_t loop;
	uint16_t port = 0;
	int rc;

	/* Never outlive the server process. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		return 1;
	if (read(rfd, &port, sizeof(port)) != (ssize_t)sizeof(port) || port == 0) {
		fprintf(stderr, "tls_pingpong: client: no port from the server\n");
		return 1;
	}
	close(rfd);
	uv_loop_init(&loop);
	rc = client_start(&loop, port);
	if (rc < 0) {
		fprintf(stderr, "tls_pingpong: client: %s\n", dp_error_detail(rc));
		return 1;
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	return C.failed ? 1 : 0;
}

static const struct dp_config_entry opts[] = {
	{ .name = "ca", DP_CFG_PATH(&A.ca), .flags = DP_CONFIG_REQUIRED, .help = "CA certificate" },
	{ .name = "server-cert", DP_CFG_PATH(&A.scert), .flags = DP_CONFIG_REQUIRED,
	  .help = "the server's (learner's) certificate" },
	{ .name = "server-key", DP_CFG_PATH(&A.skey), .flags = DP_CONFIG_REQUIRED,
	  .help = "its key" },
	{ .name = "client-cert", DP_CFG_PATH(&A.ccert), .flags = DP_CONFIG_REQUIRED,
	  .help = "the client's (an owner's) certificate" },
	{ .name = "client-key", DP_CFG_PATH(&A.ckey), .flags = DP_CONFIG_REQUIRED,
	  .help = "its key" },
	{ .name = "p", DP_CFG_SIZE(&A.p), .def = "11", .min = 1, .max = INFINITY,
	  .help = "theta and gradient length" },
	{ .name = "seconds", DP_CFG_DOUBLE(&A.seconds), .def = "3", .min = 0, .max = INFINITY,
	  .min_exclusive = true, .help = "measured time" },
	{ .name = "warmup", DP_CFG_U64(&A.warmup), .def = "2000",
	  .help = "round trips before the measurement" },
	{ .name = "one-process", DP_CFG_BOOL(&A.one_process), .def = "false",
	  .help = "both ends on one loop (default: the client in a forked child)" },
	{ .name = "wait-request", DP_CFG_BOOL(&A.wait_request), .def = "false",
	  .help = "the next Query waits for the UpdateRequest too" },
	DP_CONFIG_END,
};

int main(int argc, char **argv)
{
	static const struct dp_config_spec spec = {
		.program = "tls_pingpong",
		.summary = "Baseline for the daemon throughput benchmark: a raw TLS ping-pong.",
		.entries = opts, .command = true,
	};
	static const dp_conn_callbacks server_cb = {
		.on_handshake = server_on_handshake, .on_message = server_on_message,
		.on_close = server_on_close,
	};
	SSL_CTX *ctx;
	int rc = 0, pfd[2] = { -1, -1 }, status = 0;
	pid_t child = -1;
	uint16_t port;

	signal(SIGPIPE, SIG_IGN);
	if (!tst_opts_load(&spec, argc, argv, &status))
		return status;
	dp_log_set_level(DP_LOG_WARN);

	/* Fork before any loop or TLS state exists: the child builds its own. */
	if (!A.one_process) {
		if (pipe(pfd) != 0) {
			perror("tls_pingpong: pipe");
			return 1;
		}
		child = fork();
		if (child < 0) {
			perror("tls_pingpong: fork");
			return 1;
		}
		if (child == 0) {
			close(pfd[1]);
			_exit(client_main(pfd[0]));
		}
		close(pfd[0]);
	}

	S.theta = calloc(A.p, sizeof(double));
	S.loop = uv_default_loop();
	rc = tst_peer_ctx(1, A.ca, A.scert, A.skey, &ctx);
	if (rc == 0) {
		rc = tst_peer_listen(S.loop, ctx, &server_cb, 0, "127.0.0.1", 0, &S.lst);
		SSL_CTX_free(ctx);
	}
	if (rc < 0 || S.theta == NULL) {
		fprintf(stderr, "tls_pingpong: server: %s\n",
			S.theta ? dp_error_detail(rc) : "out of memory");
		if (child > 0) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
		}
		return 1;
	}
	port = dp_listener_port(S.lst);
	/* Handshake, warm-up and measurement take far less than this. */
	uv_timer_init(S.loop, &S.guard);
	uv_timer_start(&S.guard, on_guard, (uint64_t)((A.seconds + 60.0) * 1000.0), 0);
	if (A.one_process) {
		rc = client_start(S.loop, port);
		if (rc < 0) {
			fprintf(stderr, "tls_pingpong: client: %s\n", dp_error_detail(rc));
			return 1;
		}
	} else {
		if (write(pfd[1], &port, sizeof(port)) != (ssize_t)sizeof(port)) {
			perror("tls_pingpong: pipe write");
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			return 1;
		}
		close(pfd[1]);
	}

	uv_run(S.loop, UV_RUN_DEFAULT);

	if (child > 0) {
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "tls_pingpong: client process failed (status %d)\n", status);
			S.failed = 1;
		}
	} else if (C.failed) {
		S.failed = 1;
	}
	if (!S.failed && S.requests + 1 < S.answered) {
		fprintf(stderr, "tls_pingpong: %llu answers but only %llu update requests\n",
			(unsigned long long)S.answered, (unsigned long long)S.requests);
		S.failed = 1;
	}
	if (S.failed || S.measured == 0) {
		if (!S.failed)
			fprintf(stderr, "tls_pingpong: nothing measured\n");
		return 1;
	}
	printf("{\"rt_per_s\": %.1f, \"round_trips\": %llu, \"seconds\": %.6f, \"p\": %zu, "
	       "\"procs\": %d, \"wait_request\": %s, \"query_bytes\": %zu, "
	       "\"answer_bytes\": %zu, \"request_bytes\": %zu}\n",
	       (double)S.measured / elapsed_secs(S.t0, S.t1), (unsigned long long)S.measured,
	       elapsed_secs(S.t0, S.t1), A.p, A.one_process ? 1 : 2,
	       A.wait_request ? "true" : "false", S.qbytes, S.abytes, S.rbytes);
	free(S.theta);
	free(C.grad);
	dp_config_free(&spec);
	return 0;
}
