/* SPDX-License-Identifier: Apache-2.0 */
/* TLS set-up for the test programs that speak the real protocol
 * (docs/protocol.md) in place of an owner or of the learner: fake_owner,
 * soak_owners, audit_learner, bench_owner_stub, tls_pingpong.  Thin
 * wrappers over common/net/tls.h and common/net/conn.h that fix what they
 * all share: the certificate file names of `dpasync certs`, the learner's
 * identity "learner", the protocol version on every message.  Loop
 * thread only, like conn.h.  Test only, never installed. */
#ifndef TST_PEER_H
#define TST_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "common/net/conn.h"
#include "common/net/listener.h"

/* Room for an identity "owner-N" with its NUL. */
#define TST_PEER_ID_MAX 32

/* A TLS context (dp_tls_ctx_new) from three PEM files: the deployment CA,
 * our certificate and our key; is_server 1 for the learner's side, 0 for
 * an owner's.  *out is the caller's (SSL_CTX_free; a connection or a
 * listener takes its own reference).  Errors are dp_tls_ctx_new's
 * (DP_EINVAL, DP_ENOENT, DP_ETLS, DP_ENOMEM, with a detail); *out
 * untouched. */
int tst_peer_ctx(int is_server, const char *ca, const char *cert, const char *key,
		 SSL_CTX **out);

/* The client context of owner number n from a certificate directory as
 * `dpasync certs` writes it: DIR/owner-N.crt and DIR/owner-N.key, with
 * the CA file ca.  id (idsize bytes, at least TST_PEER_ID_MAX) receives
 * the identity "owner-N".  Errors: DP_ERANGE (a path longer than
 * PATH_MAX, or id too small), else as tst_peer_ctx; *out untouched. */
int tst_peer_owner_ctx(const char *ca, const char *dir, size_t n, char *id, size_t idsize,
		       SSL_CTX **out);

/* Start connecting, as an owner with the client context ctx, to the
 * learner at host:port, accepting only a server whose certificate names
 * "learner" (docs/protocol.md §1).  cb are the connection's callbacks,
 * data its initial dp_conn_data, handshake_timeout_ms the limit on
 * resolution, connection and handshake (0: conn.h's default).  *out
 * receives the connection (conn.h's lifetime rules).  Errors are
 * dp_conn_connect's, synchronous, with no callback; *out untouched. */
int tst_peer_connect(uv_loop_t *loop, SSL_CTX *ctx, const dp_conn_callbacks *cb, void *data,
		     uint32_t handshake_timeout_ms, const char *host, uint16_t port,
		     dp_conn **out);

/* Listen, as the learner with the server context ctx, on host:port (port
 * 0 picks one: dp_listener_port), with at most max_conns live
 * connections (0: no limit) and no other admission limit.  cb are the
 * callbacks of every accepted connection.  *out receives the listener
 * (dp_listener_close).  Errors are dp_conn_listen's; *out untouched. */
int tst_peer_listen(uv_loop_t *loop, SSL_CTX *ctx, const dp_conn_callbacks *cb,
		    size_t max_conns, const char *host, uint16_t port, dp_listener **out);

/* Stamp env with DP_PROTO_VERSION and send it (dp_conn_send; the caller
 * keeps env).  Returns dp_conn_send's 0 or error. */
int tst_peer_send(dp_conn *c, Dpasync__Envelope *env);

/* Send an UpdateRequest (an owner asking for its next query).  As
 * tst_peer_send. */
int tst_peer_send_request(dp_conn *c);

/* Send the Answer to query k: gradient[0..p), the owner's answers_given
 * (this one included), and the accounting of an owner that charges
 * epsilon / K per answer: epsilon_spent = epsilon * answers_given / K,
 * epsilon_left = epsilon - epsilon_spent, or 0 when that is negative.
 * K must not be 0.  As tst_peer_send (the caller keeps gradient). */
int tst_peer_send_answer(dp_conn *c, uint64_t k, const double *gradient, size_t p,
			 uint64_t answers_given, double epsilon, uint64_t K);

#endif
