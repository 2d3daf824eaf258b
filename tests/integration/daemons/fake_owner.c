/* SPDX-License-Identifier: Apache-2.0 */
/* A scripted owner for learnerd's integration test (test only, never
 * installed).  It speaks the real protocol through common/net/conn.h but
 * answers a deterministic "gradient" ga * theta + gc instead of a noisy
 * query, so the test can recompute theta_L exactly from trace.csv.
 *
 *   fake_owner --learner HOST:PORT --ca F --cert F --key F --id NAME
 *              --p P --rows N --grad-a A --grad-c C1,C2,...
 *              [--epsilon E] [--answers-cap K] [--answers-given G] [--rate R]
 *              [--theta-max M] [--epsilon-left E] [--lifetime-left L]
 *                               any of these sends Hello.limits (the others
 *                               then: inf, --epsilon, inf)
 *              [--interval S]   seconds between an answer and the next request
 *              [--nan-at M]     the M-th answer carries a NaN
 *              [--silent-at M]  the M-th query is never answered
 *              [--refuse-at M]  the M-th query is refused ("budget exhausted")
 *              [--reconnect S]  reconnect for up to S seconds after a close
 *              [--done-file F]  write the final theta of Done here
 *              [--no-request]   never send UpdateRequest (broadcast mode)
 *              [--welcome-file F]  append "T=.. K=.. time=.." for every Welcome
 *
 * Like ownerd, the answer cap K is --answers-cap, else the Welcome's
 * answers_cap (else T), bound at the first Welcome; the Hello reports it
 * once bound, and a later Welcome with another K is a bad Welcome.
 *
 * Exit: 0 after Done; 3 closed before any Welcome (refused); 4 closed
 * after a Welcome and not reconnecting; 5 a query id that did not
 * increase; 6 a bad Welcome or Done; 7 a query past the answer cap K
 * (the learner must never send one); 2 usage. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "common/net/addr.h"
#include "common/net/conn.h"
#include "common/net/frame.h"
#include "tests/lib/opts.h"
#include "tests/lib/peer.h"

static struct {
	char *learner, *ca, *cert, *key, *id, *done_file, *welcome_file, *eps_text;
	char host[DP_ADDR_HOST_MAX + 1];
	uint16_t port;
	size_t p;
	uint64_t rows, cap, given;
	double eps, ga, interval, reconnect_for, rate;
	struct dp_config_doubles gc;
	uint64_t nan_at, silent_at, refuse_at;
	bool request;
	double theta_max, eps_left, life_left;
	bool have_theta, have_eps_left, have_life_left;
} A;

static uv_loop_t *loop;
static SSL_CTX *ctx;
static dp_conn *conn;
static uv_timer_t req_timer, re_timer;
static int welcomed_now, welcomed_ever, done, exit_code = 4;
static uint64_t T, K, max_k, queries, answers;
static double deadline;

static void connect_learner(void);

static double now_s(void)
{
	return (double)uv_hrtime() * 1e-9;
}

static void finish(int code)
{
	exit_code = code;
	uv_timer_stop(&req_timer);
	uv_timer_stop(&re_timer);
	uv_close((uv_handle_t *)&req_timer, NULL);
	uv_close((uv_handle_t *)&re_timer, NULL);
	if (conn)
		dp_conn_close(conn);
}

static void send_failed(int rc)
{
	if (rc < 0)
		fprintf(stderr, "fake_owner %s: send: %s\n", A.id, dp_error_detail(rc));
}

static void send_msg(Dpasync__Envelope *env)
{
	send_failed(tst_peer_send(conn, env));
}

static void send_request(void)
{
	if (!A.request || conn == NULL || !welcomed_now)
		return;
	send_failed(tst_peer_send_request(conn));
}

static void on_req_timer(uv_timer_t *t)
{
	send_request();
}

static int on_handshake(dp_conn *c, const char *peer_id)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Hello h = DPASYNC__HELLO__INIT;
	Dpasync__HelloLimits lim = DPASYNC__HELLO_LIMITS__INIT;

	h.version = 1;
	if (A.have_theta || A.have_eps_left || A.have_life_left) {
		lim.theta_max = A.have_theta ? A.theta_max : INFINITY;
		lim.epsilon_left = A.have_eps_left ? A.eps_left : A.eps;
		lim.lifetime_left = A.have_life_left ? A.life_left : INFINITY;
		h.limits = &lim;
	}
	h.owner_id = A.id;
	h.n_rows = A.rows;
	h.n_features = (uint32_t)A.p;
	h.epsilon = A.eps;
	h.answers_cap = A.cap ? A.cap : K;
	h.answers_given = A.given + answers;
	h.rate = A.rate;
	env.msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
	env.hello = &h;
	conn = c;
	send_msg(&env);
	return 0;
}

static void on_query(const Dpasync__Query *q)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Refuse r = DPASYNC__REFUSE__INIT;
	double *g;

	if (q->k <= max_k) {
		fprintf(stderr, "fake_owner %s: query id %llu after %llu\n", A.id,
			(unsigned long long)q->k, (unsigned long long)max_k);
		finish(5);
		return;
	}
	max_k = q->k;
	if (A.given + answers >= K) {
		fprintf(stderr, "fake_owner %s: query k=%llu after %llu answers, cap %llu\n", A.id,
			(unsigned long long)q->k, (unsigned long long)(A.given + answers),
			(unsigned long long)K);
		finish(7);
		return;
	}
	queries++;
	if (queries == A.silent_at)
		return;
	if (queries == A.refuse_at) {
		r.k = q->k;
		r.reason = "budget exhausted";
		env.msg_case = DPASYNC__ENVELOPE__MSG_REFUSE;
		env.refuse = &r;
		send_msg(&env);
		return;
	}
	g = calloc(A.p, sizeof(double));
	if (g == NULL)
		abort();
	for (size_t j = 0; j < A.p; j++)
		g[j] = A.ga * q->theta[j] + A.gc.v[j];
	answers++;
	if (answers == A.nan_at)
		g[0] = NAN;
	send_failed(tst_peer_send_answer(conn, q->k, g, A.p, A.given + answers, A.eps, K));
	free(g);
	if (A.interval > 0)
		uv_timer_start(&req_timer, on_req_timer, (uint64_t)(A.interval * 1000), 0);
	else
		send_request();
}

static void on_message(dp_conn *c, Dpasync__Envelope *m)
{
	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_WELCOME: {
		dp_frame_limits lim = { .p = A.p };
		const Dpasync__Welcome *w = m->welcome;
		uint64_t want = A.cap ? A.cap : w->answers_cap ? w->answers_cap : w->t;

		if (w->p != A.p || w->n_total < A.rows || (K != 0 && want != K)) {
			fprintf(stderr, "fake_owner %s: bad welcome p=%u n_total=%llu K=%llu (bound "
				"%llu)\n", A.id, w->p, (unsigned long long)w->n_total,
				(unsigned long long)want, (unsigned long long)K);
			finish(6);
			break;
		}
		if (A.welcome_file) {
			FILE *f = fopen(A.welcome_file, "a");

			if (f) {
				fprintf(f, "T=%llu K=%llu time=%.6f\n", (unsigned long long)w->t,
					(unsigned long long)w->answers_cap, now_s());
				fclose(f);
			}
		}
		T = w->t;
		K = want;
		welcomed_now = welcomed_ever = 1;
		dp_conn_set_limits(c, &lim);
		send_request();
		break;
	}
	case DPASYNC__ENVELOPE__MSG_QUERY:
		on_query(m->query);
		break;
	case DPASYNC__ENVELOPE__MSG_DONE:
		if (m->done->t != T) {
			finish(6);
			break;
		}
		if (A.done_file) {
			FILE *f = fopen(A.done_file, "w");

			if (f) {
				for (size_t j = 0; j < m->done->n_final_theta; j++)
					fprintf(f, "%s%.17g", j ? "," : "", m->done->final_theta[j]);
				fputc('\n', f);
				fclose(f);
			}
		}
		done = 1;
		finish(0);
		break;
	case DPASYNC__ENVELOPE__MSG_GOODBYE:
		/* The learner's reason; the close that follows ends us (3). */
		fprintf(stderr, "fake_owner %s: goodbye code=%d: %s\n", A.id, (int)m->goodbye->code,
			m->goodbye->text ? m->goodbye->text : "");
		break;
	default:
		fprintf(stderr, "fake_owner %s: unexpected %s\n", A.id, dp_frame_kind(m));
		finish(6);
	}
	dp_frame_msg_free(m);
}

static void on_re_timer(uv_timer_t *t)
{
	connect_learner();
}

static void on_close(dp_conn *c, int reason, const char *detail)
{
	int was = welcomed_now;

	conn = NULL;
	welcomed_now = 0;
	uv_timer_stop(&req_timer);
	if (done || exit_code != 4 || uv_is_closing((uv_handle_t *)&re_timer))
		return;
	if (A.reconnect_for > 0 && now_s() < deadline) {
		uv_timer_start(&re_timer, on_re_timer, 200, 0);
		return;
	}
	fprintf(stderr, "fake_owner %s: closed (%d: %s)\n", A.id, reason, detail);
	finish(was || welcomed_ever ? 4 : 3);
}

static void connect_learner(void)
{
	static const dp_conn_callbacks cb = {
		.on_handshake = on_handshake, .on_message = on_message, .on_close = on_close,
	};
	dp_conn *c;
	int rc;

	rc = tst_peer_connect(loop, ctx, &cb, NULL, 3000, A.host, A.port, &c);
	if (rc < 0) {
		fprintf(stderr, "fake_owner %s: connect: %s\n", A.id, dp_error_detail(rc));
		finish(4);
	}
}

/* What the table cannot say: the learner's address, a gradient with p
 * constants, and an epsilon of any double strtod reads (a liar's claim
 * such as 5e-324, a subnormal the table's parser refuses as out of
 * range). */
static int check_opts(void *arg)
{
	char *end;

	(void)arg;
	if (A.p == 0 || A.rows == 0 || A.gc.n != A.p)
		return dp_error_set(DP_EINVAL, "missing or inconsistent options: --p and --rows "
				    "must be positive and --grad-c must have p values");
	A.eps = strcmp(A.eps_text, "inf") == 0 ? INFINITY : strtod(A.eps_text, &end);
	if (strcmp(A.eps_text, "inf") != 0 && (end == A.eps_text || *end != '\0'))
		return dp_error_set(DP_EINVAL, "--epsilon: expected a number, got '%s'", A.eps_text);
	return dp_addr_split("--learner", A.learner, 0, A.host, sizeof(A.host), &A.port);
}

static const struct dp_config_entry opts[] = {
	{ .name = "learner", DP_CFG_STRING(&A.learner), .flags = DP_CONFIG_REQUIRED,
	  .metavar = "HOST:PORT", .help = "the learner's address" },
	{ .name = "ca", DP_CFG_PATH(&A.ca), .flags = DP_CONFIG_REQUIRED, .help = "CA certificate" },
	{ .name = "cert", DP_CFG_PATH(&A.cert), .flags = DP_CONFIG_REQUIRED,
	  .help = "this owner's certificate" },
	{ .name = "key", DP_CFG_PATH(&A.key), .flags = DP_CONFIG_REQUIRED, .help = "its key" },
	{ .name = "id", DP_CFG_STRING(&A.id), .flags = DP_CONFIG_REQUIRED,
	  .help = "owner identity said in the Hello" },
	{ .name = "p", DP_CFG_SIZE(&A.p), .help = "features" },
	{ .name = "rows", DP_CFG_U64(&A.rows), .help = "rows said in the Hello" },
	{ .name = "grad-a", DP_CFG_DOUBLE(&A.ga), .def = "0", .help = "the answer is A * theta + C" },
	{ .name = "grad-c", DP_CFG_DOUBLES(&A.gc), .flags = DP_CONFIG_REQUIRED,
	  .metavar = "C1,C2,...", .help = "C, p values" },
	{ .name = "epsilon", DP_CFG_STRING(&A.eps_text), .def = "1",
	  .help = "epsilon said in the Hello (any double, inf)" },
	{ .name = "answers-cap", DP_CFG_U64(&A.cap), .def = "0",
	  .help = "own answer cap K (0: the Welcome's)" },
	{ .name = "answers-given", DP_CFG_U64(&A.given), .def = "0",
	  .help = "answers given before this run" },
	{ .name = "rate", DP_CFG_DOUBLE(&A.rate), .def = "1", .help = "clock rate said in the Hello" },
	{ .name = "interval", .metavar = "S", DP_CFG_DOUBLE(&A.interval), .def = "0",
	  .help = "seconds between an answer and the next request" },
	{ .name = "nan-at", .metavar = "M", DP_CFG_U64(&A.nan_at), .def = "0", .help = "the M-th answer carries a NaN" },
	{ .name = "silent-at", .metavar = "M", DP_CFG_U64(&A.silent_at), .def = "0",
	  .help = "the M-th query is never answered" },
	{ .name = "refuse-at", .metavar = "M", DP_CFG_U64(&A.refuse_at), .def = "0",
	  .help = "the M-th query is refused (\"budget exhausted\")" },
	{ .name = "reconnect", .metavar = "S", DP_CFG_DOUBLE(&A.reconnect_for), .def = "0",
	  .help = "reconnect for up to S seconds after a close" },
	{ .name = "done-file", DP_CFG_PATH(&A.done_file), .help = "write the final theta of Done here" },
	{ .name = "request", DP_CFG_BOOL(&A.request), .def = "true",
	  .help = "send UpdateRequests (--no-request: never, as in broadcast mode)" },
	{ .name = "welcome-file", DP_CFG_PATH(&A.welcome_file),
	  .help = "append \"T=.. K=.. time=..\" for every Welcome" },
	{ .name = "theta-max", DP_CFG_DOUBLE_INF(&A.theta_max), .def = "inf", .given = &A.have_theta,
	  .help = "Hello.limits.theta_max (given: the Hello carries limits)" },
	{ .name = "epsilon-left", DP_CFG_DOUBLE_INF(&A.eps_left), .def = "inf",
	  .given = &A.have_eps_left, .help = "Hello.limits.epsilon_left (default: --epsilon)" },
	{ .name = "lifetime-left", DP_CFG_DOUBLE_INF(&A.life_left), .def = "inf",
	  .given = &A.have_life_left, .help = "Hello.limits.lifetime_left" },
	DP_CONFIG_END,
};

int main(int argc, char **argv)
{
	static const struct dp_config_spec spec = {
		.program = "fake_owner", .summary = "A scripted owner for learnerd's tests.",
		.entries = opts, .validate = check_opts, .command = true,
	};
	int rc, status;

	signal(SIGPIPE, SIG_IGN);   /* libuv writes with write(2) */
	if (!tst_opts_load(&spec, argc, argv, &status))
		return status;
	dp_log_set_level(DP_LOG_WARN);
	rc = tst_peer_ctx(0, A.ca, A.cert, A.key, &ctx);
	if (rc < 0) {
		fprintf(stderr, "fake_owner: %s\n", dp_error_detail(rc));
		return 2;
	}
	loop = uv_default_loop();
	uv_timer_init(loop, &req_timer);
	uv_timer_init(loop, &re_timer);
	deadline = now_s() + A.reconnect_for;
	connect_learner();
	uv_run(loop, UV_RUN_DEFAULT);
	SSL_CTX_free(ctx);
	dp_config_free(&spec);
	return exit_code;
}
