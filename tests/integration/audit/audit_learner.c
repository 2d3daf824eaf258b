/* SPDX-License-Identifier: Apache-2.0 */
/* The privacy auditor's learner (docs/privacy-audit.md): it plays learnerd
 * against one real ownerd over mutual TLS 1.3 (common/net/conn.h, the
 * real protocol of docs/protocol.md) and collects that owner's answers at
 * one fixed theta.  It listens, admits the first connection, answers its
 * Hello with a Welcome in broadcast mode (so the owner answers whenever it
 * is asked) that fixes the mechanism, the clip bound (L1 for Laplace, L2
 * for Gaussian, docs/privacy-audit.md §8) and the answer cap K, then sends
 * Query k = 1 .. K, each at theta = 0, one at a time, and writes every
 * Answer's gradient to OUT as one line of p numbers (%.17g).  After the
 * K-th answer it sends Done and exits.  Test only, never installed.
 *
 *   audit_learner --ca F --cert F --key F --port-file F --answers K
 *                 --clip C --out FILE [--mechanism laplace|gaussian]
 *                 [--listen HOST:PORT]
 *
 * On success prints on stdout
 *   audit_learner answers=K eps_q=E n_rows=N p=P
 * where E is the per-answer share the owner reported (epsilon_spent /
 * answers_given of its last Answer).  Exit 0 on success, 1 on any failure
 * (a Refuse, a closed connection, an unexpected message; one line on
 * stderr), 2 on bad usage. */
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/log.h"
#include "common/core/query.h"
#include "common/net/addr.h"
#include "common/net/conn.h"
#include "common/net/frame.h"
#include "common/net/listener.h"
#include "tests/lib/opts.h"
#include "tests/lib/peer.h"

static struct {
	char *ca, *cert, *key, *port_file, *out, *listen;
	char host[DP_ADDR_HOST_MAX + 1];
	uint16_t port;
	uint64_t K;
	double clip;
	int mech;
} A;

static uv_loop_t *loop;
static dp_listener *lst;
static dp_conn *owner;
static FILE *out;
static double *theta;
static size_t p;
static uint64_t n_rows, k_sent, answers;
static double eps_q;
static int failed, finished;

static void fail(const char *what, const char *detail)
{
	if (!failed)
		fprintf(stderr, "audit_learner: %s%s%s\n", what, *detail ? ": " : "", detail);
	failed = 1;
	if (owner != NULL)
		dp_conn_close(owner);
	if (lst != NULL) {
		dp_listener_close(lst);
		lst = NULL;
	}
}

static void send_env(Dpasync__Envelope *env)
{
	int rc;

	rc = tst_peer_send(owner, env);
	if (rc < 0)
		fail(dp_frame_kind(env), dp_error_detail(rc));
}

static void send_query(void)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Query q = DPASYNC__QUERY__INIT;

	q.k = ++k_sent;
	q.n_theta = p;
	q.theta = theta;
	env.msg_case = DPASYNC__ENVELOPE__MSG_QUERY;
	env.query = &q;
	send_env(&env);
}

static void on_hello(const Dpasync__Hello *h)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Welcome w = DPASYNC__WELCOME__INIT;
	dp_frame_limits lim;

	if (p != 0) {
		fail("a second Hello", "");
		return;
	}
	p = h->n_features;
	n_rows = h->n_rows;
	theta = calloc(p, sizeof(double));
	if (theta == NULL) {
		fail("out of memory", "");
		return;
	}
	memset(&lim, 0, sizeof(lim));
	lim.p = p;
	dp_conn_set_limits(owner, &lim);
	w.job = "privacy-audit";
	w.model = "linear";
	w.t = A.K;
	w.n = 1;
	w.n_total = n_rows;
	w.rho = 1.0;
	w.lambda = 0.01;
	w.theta_max = 10.0;
	w.clip_l1 = A.clip;
	/* A Gaussian job's clip bounds each gradient's L2 norm
	 * (docs/protocol.md §5 "Mechanisms"). */
	if (A.mech == DP_MECH_GAUSSIAN) {
		w.mechanism = DPASYNC__MECHANISM__MECHANISM_GAUSSIAN;
		w.clip_l2 = A.clip;
	}
	w.mode = DPASYNC__MODE__MODE_BROADCAST;
	w.p = (uint32_t)p;
	w.k_done = 0;
	w.answers_cap = A.K;
	env.msg_case = DPASYNC__ENVELOPE__MSG_WELCOME;
	env.welcome = &w;
	send_env(&env);
	if (!failed)
		send_query();
}

static void send_done(void)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Done d = DPASYNC__DONE__INIT;

	d.n_final_theta = p;
	d.final_theta = theta;
	d.t = A.K;
	env.msg_case = DPASYNC__ENVELOPE__MSG_DONE;
	env.done = &d;
	send_env(&env);
	finished = 1;
	dp_conn_close(owner);
	dp_listener_close(lst);
	lst = NULL;
}

static void on_answer(const Dpasync__Answer *a)
{
	if (p == 0 || a->k != k_sent || a->n_gradient != p) {
		fail("an Answer that does not match the query", "");
		return;
	}
	for (size_t j = 0; j < p; j++)
		fprintf(out, j ? " %.17g" : "%.17g", a->gradient[j]);
	fputc('\n', out);
	answers++;
	if (a->answers_given > 0)
		eps_q = a->epsilon_spent / (double)a->answers_given;
	if (answers == A.K)
		send_done();
	else
		send_query();
}

static int on_handshake(dp_conn *c, const char *peer_id)
{
	(void)peer_id;
	if (owner != NULL)
		return -1;          /* one owner per audit run */
	owner = c;
	return 0;
}

static void on_message(dp_conn *c, Dpasync__Envelope *m)
{
	(void)c;
	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_HELLO:
		on_hello(m->hello);
		break;
	case DPASYNC__ENVELOPE__MSG_ANSWER:
		on_answer(m->answer);
		break;
	case DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST:
		break;
	case DPASYNC__ENVELOPE__MSG_REFUSE:
		fail("the owner refused", m->refuse->reason);
		break;
	case DPASYNC__ENVELOPE__MSG_GOODBYE:
		fail("the owner left", m->goodbye->text);
		break;
	default:
		fail("unexpected message", dp_frame_kind(m));
		break;
	}
	dp_frame_msg_free(m);
}

static void on_close(dp_conn *c, int reason, const char *detail)
{
	(void)reason;           /* detail says it for a human */
	if (c != owner)
		return;             /* a refused second connection */
	owner = NULL;
	if (!finished)
		fail("the owner's connection closed before the last answer", detail);
}

static int check_opts(void *arg)
{
	(void)arg;
	if (A.K == 0 || A.clip == 0)
		return dp_error_set(DP_EINVAL, "--answers and --clip are required");
	return dp_addr_split("--listen", A.listen, DP_ADDR_PORT_ZERO, A.host, sizeof(A.host),
			     &A.port);
}

static const struct dp_config_entry opts[] = {
	{ .name = "ca", DP_CFG_PATH(&A.ca), .flags = DP_CONFIG_REQUIRED, .help = "CA certificate" },
	{ .name = "cert", DP_CFG_PATH(&A.cert), .flags = DP_CONFIG_REQUIRED,
	  .help = "the learner's certificate" },
	{ .name = "key", DP_CFG_PATH(&A.key), .flags = DP_CONFIG_REQUIRED, .help = "its key" },
	{ .name = "port-file", DP_CFG_PATH(&A.port_file), .flags = DP_CONFIG_REQUIRED,
	  .help = "written \"tls=PORT\" once listening" },
	{ .name = "answers", DP_CFG_U64(&A.K), .min = 1, .max = INFINITY,
	  .help = "K, the answers to collect (required)" },
	{ .name = "clip", DP_CFG_DOUBLE(&A.clip), .min = 0, .max = INFINITY, .min_exclusive = true,
	  .help = "the clip bound of the Welcome (required; L2 with gaussian)" },
	{ .name = "mechanism", DP_CFG_ENUM(&A.mech, dp_query_mech_names), .def = "laplace",
	  .help = "the job's mechanism" },
	{ .name = "out", DP_CFG_PATH(&A.out), .flags = DP_CONFIG_REQUIRED,
	  .help = "one line of p numbers per answer" },
	{ .name = "listen", DP_CFG_STRING(&A.listen), .def = "127.0.0.1:0",
	  .metavar = "HOST:PORT", .help = "where to listen (port 0: any)" },
	DP_CONFIG_END,
};

int main(int argc, char **argv)
{
	static const struct dp_config_spec spec = {
		.program = "audit_learner", .summary = "The privacy auditor's learner.",
		.entries = opts, .validate = check_opts, .command = true,
	};
	static const dp_conn_callbacks cb = {
		.on_handshake = on_handshake, .on_message = on_message, .on_close = on_close,
	};
	SSL_CTX *ctx = NULL;
	char line[64];
	int rc, n, status;

	signal(SIGPIPE, SIG_IGN);
	if (!tst_opts_load(&spec, argc, argv, &status))
		return status;
	dp_log_set_level(DP_LOG_ERROR);
	out = fopen(A.out, "w");
	if (out == NULL) {
		fprintf(stderr, "audit_learner: cannot write %s\n", A.out);
		return 1;
	}
	loop = uv_default_loop();
	rc = tst_peer_ctx(1, A.ca, A.cert, A.key, &ctx);
	if (rc == 0) {
		rc = tst_peer_listen(loop, ctx, &cb, 4, A.host, A.port, &lst);
		SSL_CTX_free(ctx);
	}
	if (rc == 0) {
		n = snprintf(line, sizeof(line), "tls=%u\n", (unsigned)dp_listener_port(lst));
		rc = dp_file_write_atomic(A.port_file, line, (size_t)n, 0644);
	}
	if (rc < 0) {
		fprintf(stderr, "audit_learner: %s\n", dp_error_detail(rc));
		return 1;
	}
	uv_run(loop, UV_RUN_DEFAULT);
	if (fclose(out) != 0)
		fail("cannot write the answers", A.out);
	if (!failed && answers == A.K)
		printf("audit_learner answers=%" PRIu64 " eps_q=%.17g n_rows=%" PRIu64 " p=%zu\n",
		       answers, eps_q, n_rows, p);
	uv_loop_close(loop);
	free(theta);
	rc = failed || answers != A.K ? 1 : 0;
	dp_config_free(&spec);
	return rc;
}
