/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/peer.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/core/error.h"
#include "common/net/frame.h"
#include "common/net/tls.h"

int tst_peer_ctx(int is_server, const char *ca, const char *cert, const char *key,
		 SSL_CTX **out)
{
	dp_tls_files tf = { .ca_file = ca, .cert_file = cert, .key_file = key };

	return dp_tls_ctx_new(is_server, &tf, out);
}

int tst_peer_owner_ctx(const char *ca, const char *dir, size_t n, char *id, size_t idsize,
		       SSL_CTX **out)
{
	char name[TST_PEER_ID_MAX], cert[PATH_MAX], key[PATH_MAX];
	int rc;

	snprintf(name, sizeof(name), "owner-%zu", n);
	if ((size_t)snprintf(cert, sizeof(cert), "%s/%s.crt", dir, name) >= sizeof(cert) ||
	    (size_t)snprintf(key, sizeof(key), "%s/%s.key", dir, name) >= sizeof(key) ||
	    strlen(name) >= idsize)
		return dp_error_set(DP_ERANGE, "%s: path or identity too long", name);
	rc = tst_peer_ctx(0, ca, cert, key, out);
	if (rc == 0)
		memcpy(id, name, strlen(name) + 1);
	return rc;
}

int tst_peer_connect(uv_loop_t *loop, SSL_CTX *ctx, const dp_conn_callbacks *cb, void *data,
		     uint32_t handshake_timeout_ms, const char *host, uint16_t port,
		     dp_conn **out)
{
	dp_conn_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.ctx = ctx;
	cfg.cb = *cb;
	cfg.data = data;
	cfg.handshake_timeout_ms = handshake_timeout_ms;
	return dp_conn_connect(loop, &cfg, host, port, "learner", out);
}

int tst_peer_listen(uv_loop_t *loop, SSL_CTX *ctx, const dp_conn_callbacks *cb,
		    size_t max_conns, const char *host, uint16_t port, dp_listener **out)
{
	dp_conn_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.ctx = ctx;
	cfg.cb = *cb;
	cfg.max_conns = max_conns;
	return dp_conn_listen(loop, &cfg, host, port, out);
}

int tst_peer_send(dp_conn *c, Dpasync__Envelope *env)
{
	env->version = DP_PROTO_VERSION;
	return dp_conn_send(c, env);
}

int tst_peer_send_request(dp_conn *c)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__UpdateRequest u = DPASYNC__UPDATE_REQUEST__INIT;

	env.msg_case = DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST;
	env.update_request = &u;
	return tst_peer_send(c, &env);
}

int tst_peer_send_answer(dp_conn *c, uint64_t k, const double *gradient, size_t p,
			 uint64_t answers_given, double epsilon, uint64_t K)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Answer a = DPASYNC__ANSWER__INIT;

	DP_REQUIRE(K != 0);
	a.k = k;
	a.n_gradient = p;
	a.gradient = (double *)gradient;
	a.answers_given = answers_given;
	a.epsilon_spent = epsilon * (double)answers_given / (double)K;
	a.epsilon_left = epsilon - a.epsilon_spent;
	if (a.epsilon_left < 0)
		a.epsilon_left = 0;
	env.msg_case = DPASYNC__ENVELOPE__MSG_ANSWER;
	env.answer = &a;
	return tst_peer_send(c, &env);
}
