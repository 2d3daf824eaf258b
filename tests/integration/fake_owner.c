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
 *                               then: inf, E or epsilon, inf)
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
#include <getopt.h>
#include <math.h>
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

static struct {
	char host[DP_ADDR_HOST_MAX + 1];
	const char *ca, *cert, *key, *id, *done_file, *welcome_file;
	uint16_t port;
	size_t p;
	uint64_t rows, cap, given;
	double eps, ga, *gc, interval, reconnect_for, rate;
	double theta_max, eps_left, life_left;
	int limits;
	size_t ngc;
	uint64_t nan_at, silent_at, refuse_at;
	int no_request;
} A = { .eps = 1.0, .interval = 0.0, .rate = 1.0, .theta_max = INFINITY, .eps_left = NAN,
	.life_left = INFINITY };

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

static void send_msg(Dpasync__Envelope *env)
{
	int rc;

	env->version = DP_PROTO_VERSION;
	rc = dp_conn_send(conn, env);
	if (rc < 0)
		fprintf(stderr, "fake_owner %s: send: %s\n", A.id, dp_error_detail(rc));
}

static void send_request(void)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__UpdateRequest u = DPASYNC__UPDATE_REQUEST__INIT;

	if (A.no_request || conn == NULL || !welcomed_now)
		return;
	env.msg_case = DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST;
	env.update_request = &u;
	send_msg(&env);
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
	if (A.limits) {
		lim.theta_max = A.theta_max;
		lim.epsilon_left = isnan(A.eps_left) ? A.eps : A.eps_left;
		lim.lifetime_left = A.life_left;
		h.limits = &lim;
	}
	h.owner_id = (char *)A.id;
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
	Dpasync__Answer a = DPASYNC__ANSWER__INIT;
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
		g[j] = A.ga * q->theta[j] + A.gc[j];
	answers++;
	if (answers == A.nan_at)
		g[0] = NAN;
	a.k = q->k;
	a.n_gradient = A.p;
	a.gradient = g;
	a.answers_given = A.given + answers;
	a.epsilon_spent = A.eps * (double)a.answers_given / (double)K;
	a.epsilon_left = A.eps - a.epsilon_spent;
	if (a.epsilon_left < 0)
		a.epsilon_left = 0;
	env.msg_case = DPASYNC__ENVELOPE__MSG_ANSWER;
	env.answer = &a;
	send_msg(&env);
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
	dp_conn_config cfg = { .ctx = ctx };
	dp_conn *c;
	int rc;

	cfg.cb.on_handshake = on_handshake;
	cfg.cb.on_message = on_message;
	cfg.cb.on_close = on_close;
	cfg.handshake_timeout_ms = 3000;
	rc = dp_conn_connect(loop, &cfg, A.host, A.port, "learner", &c);
	if (rc < 0) {
		fprintf(stderr, "fake_owner %s: connect: %s\n", A.id, dp_error_detail(rc));
		finish(4);
	}
}

/* Any double strtod reads, subnormals included (a liar's claim, e.g.
 * 5e-324, which dp_num_parse_double refuses as out of range). */
static int parse_any_double(const char *what, const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	if (end == s || *end != '\0')
		return dp_error_set(DP_EINVAL, "%s: expected a number, got '%s'", what, s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "learner", required_argument, NULL, 'l' }, { "ca", required_argument, NULL, 'a' },
		{ "cert", required_argument, NULL, 'c' }, { "key", required_argument, NULL, 'k' },
		{ "id", required_argument, NULL, 'i' }, { "p", required_argument, NULL, 'p' },
		{ "rows", required_argument, NULL, 'n' }, { "grad-a", required_argument, NULL, 'A' },
		{ "grad-c", required_argument, NULL, 'C' }, { "epsilon", required_argument, NULL, 'e' },
		{ "answers-cap", required_argument, NULL, 'K' },
		{ "answers-given", required_argument, NULL, 'G' },
		{ "interval", required_argument, NULL, 'I' }, { "nan-at", required_argument, NULL, 'N' },
		{ "silent-at", required_argument, NULL, 'S' },
		{ "refuse-at", required_argument, NULL, 'R' },
		{ "reconnect", required_argument, NULL, 'r' },
		{ "done-file", required_argument, NULL, 'd' },
		{ "no-request", no_argument, NULL, 'q' },
		{ "rate", required_argument, NULL, 'T' },
		{ "welcome-file", required_argument, NULL, 'W' },
		{ "theta-max", required_argument, NULL, 'M' },
		{ "epsilon-left", required_argument, NULL, 'E' },
		{ "lifetime-left", required_argument, NULL, 'L' }, { NULL, 0, NULL, 0 },
	};
	dp_tls_files tf;
	int o, rc = 0;

	signal(SIGPIPE, SIG_IGN);   /* libuv writes with write(2) */
	for (;;) {
		o = getopt_long(argc, argv, "", opts, NULL);
		if (o == -1)
			break;
		switch (o) {
		case 'l':
			rc = dp_addr_split("--learner", optarg, 0, A.host, sizeof(A.host), &A.port);
			break;
		case 'a': A.ca = optarg; break;
		case 'c': A.cert = optarg; break;
		case 'k': A.key = optarg; break;
		case 'i': A.id = optarg; break;
		case 'p': rc = dp_num_parse_size("--p", optarg, &A.p); break;
		case 'n': rc = dp_num_parse_u64("--rows", optarg, &A.rows); break;
		case 'A': rc = dp_num_parse_double("--grad-a", optarg, 0, &A.ga); break;
		case 'C': rc = dp_num_parse_double_list("--grad-c", optarg, 0, &A.gc, &A.ngc); break;
		case 'e': rc = parse_any_double("--epsilon", optarg, &A.eps); break;
		case 'K': rc = dp_num_parse_u64("--answers-cap", optarg, &A.cap); break;
		case 'G': rc = dp_num_parse_u64("--answers-given", optarg, &A.given); break;
		case 'I': rc = dp_num_parse_double("--interval", optarg, 0, &A.interval); break;
		case 'N': rc = dp_num_parse_u64("--nan-at", optarg, &A.nan_at); break;
		case 'S': rc = dp_num_parse_u64("--silent-at", optarg, &A.silent_at); break;
		case 'R': rc = dp_num_parse_u64("--refuse-at", optarg, &A.refuse_at); break;
		case 'r': rc = dp_num_parse_double("--reconnect", optarg, 0, &A.reconnect_for); break;
		case 'd': A.done_file = optarg; break;
		case 'q': A.no_request = 1; break;
		case 'T': rc = dp_num_parse_double("--rate", optarg, 0, &A.rate); break;
		case 'W': A.welcome_file = optarg; break;
		case 'M': A.limits = 1; rc = dp_num_parse_double("--theta-max", optarg, 1, &A.theta_max); break;
		case 'E': A.limits = 1; rc = parse_any_double("--epsilon-left", optarg, &A.eps_left); break;
		case 'L': A.limits = 1; rc = parse_any_double("--lifetime-left", optarg, &A.life_left); break;
		default: return 2;
		}
		if (rc < 0) {
			fprintf(stderr, "fake_owner: %s\n", dp_error_detail(rc));
			return 2;
		}
	}
	if (!A.host[0] || !A.ca || !A.cert || !A.key || !A.id || A.p == 0 || A.rows == 0 ||
	    A.ngc != A.p) {
		fprintf(stderr, "fake_owner: missing or inconsistent options\n");
		return 2;
	}
	dp_log_set_level(DP_LOG_WARN);
	tf = (dp_tls_files){ .ca_file = A.ca, .cert_file = A.cert, .key_file = A.key };
	rc = dp_tls_ctx_new(0, &tf, &ctx);
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
	free(A.gc);
	return exit_code;
}
