/* SPDX-License-Identifier: Apache-2.0 */
/* TLS 1.3 with mutual authentication for the dpasync wire (docs/design.md §8).
 *
 * One deployment CA signs the learner and every owner.  Both sides present a
 * certificate and verify the peer's chain against that CA only (the system
 * trust store is never loaded).  Resumption is disabled, so every connection
 * runs a full handshake with both certificates.
 *
 * Identity: the peer's identity is the subject commonName (CN) of its leaf
 * certificate -- that is the authoritative name the learner matches against
 * its configured owners.  If the certificate also carries subjectAltName DNS
 * entries, the CN must be one of them (otherwise the certificate is
 * ambiguous and refused).  A client additionally checks that the server's
 * certificate matches the name it expects (SSL_set1_host: SAN DNS entries
 * when present, else CN), see dp_tls_client_setup().
 *
 * SSL_CTX objects are reference counted by OpenSSL: free with SSL_CTX_free. */
#ifndef DP_TLS_H
#define DP_TLS_H

#include <stddef.h>
#include <openssl/ssl.h>

/* Longest identity (X.509 ub-common-name). */
#define DP_TLS_ID_MAX 64

/* Text of a public-key pin: "sha256//" and the base64 of 32 bytes. */
#define DP_TLS_PIN_LEN 52

typedef struct dp_tls_files {
	const char *ca_file;    /* PEM: the deployment CA certificate(s) */
	const char *cert_file;  /* PEM: own certificate (optionally followed by a chain) */
	const char *key_file;   /* PEM: own private key (unencrypted) */
	const char *crl_file;   /* PEM: revocation lists of the CA; NULL or "": none */
	const char *pins;       /* accepted peer keys, "sha256//B64[;sha256//B64...]";
				 * NULL or "": any key the CA vouches for */
} dp_tls_files;

/* Build an SSL_CTX for the server (is_server != 0) or client side: TLS 1.3
 * only, peer certificate required and verified against ca_file only, own
 * certificate and key loaded and checked.  At load time the own certificate
 * is verified against the CA for its role (serverAuth for a server,
 * clientAuth for a client), so a wrong CA, an expired or not-yet-valid
 * certificate or a key that does not match fails at startup with a clear
 * detail rather than at the first handshake.
 *
 * Roles (docs/protocol.md §1): the peer's leaf certificate must carry an
 * extendedKeyUsage with the peer's role -- clientAuth when this side is the
 * server, serverAuth when it is the client; a certificate without the
 * extension is refused (OpenSSL alone would accept it for any role).  The
 * own certificate must carry its own role's usage too.
 * With crl_file, every CRL in it must be signed by a CA of ca_file, be
 * current (thisUpdate passed, nextUpdate ahead), and peers are checked
 * against it (X509_V_FLAG_CRL_CHECK); a revoked own certificate fails here.
 * With pins, the peer's leaf public key (SHA-256 of its DER
 * SubjectPublicKeyInfo, as curl's --pinnedpubkey) must be one of them; a
 * mismatch fails the handshake and logs the key the peer presented.
 * On success *out receives a new context (free with SSL_CTX_free); files
 * and out must not be NULL.
 * Errors (all with a one-line detail naming the file; *out untouched):
 *   DP_EINVAL  a path is NULL or empty, pins malformed;
 *   DP_ETLS    a file is unreadable or not PEM, key/cert mismatch, own
 *              certificate expired / not yet valid / not issued by the CA /
 *              lacking the needed extendedKeyUsage, revoked, a CRL file
 *              unreadable / without a CRL / not signed by the CA / expired
 *              / not yet valid, or an OpenSSL failure (detail includes the
 *              OpenSSL error string). */
int dp_tls_ctx_new(int is_server, const dp_tls_files *files, SSL_CTX **out);

/* Prepare a client SSL object (not NULL) to accept only a server whose
 * certificate matches expected_name (DNS-style name, e.g. "learner", or an
 * IP literal, checked against the SAN IP entries); a host name is also
 * sent as SNI.  DP_EINVAL for a NULL or empty name, DP_ETLS on OpenSSL
 * failure. */
int dp_tls_client_setup(SSL *ssl, const char *expected_name);

/* Check an identity (owner or learner name, a certificate CN): 1..
 * DP_TLS_ID_MAX bytes of [A-Za-z0-9._-], starting with a letter or digit.
 * DP_EINVAL with a detail otherwise. */
int dp_tls_check_name(const char *name);

/* Identity of a certificate: its subject CN, checked as described above
 * (exactly one CN, 1..DP_TLS_ID_MAX printable ASCII bytes without spaces,
 * and among the SAN DNS entries when there are any).  out receives the
 * NUL-terminated name; out_size must be > DP_TLS_ID_MAX.  A NULL cert and
 * every rule broken give DP_ETLS with a detail; out untouched then. */
int dp_tls_cert_identity(X509 *cert, char *out, size_t out_size);

/* The pin of a certificate's public key: "sha256//" + base64(SHA-256 of
 * the DER SubjectPublicKeyInfo), NUL-terminated; out_size must be >
 * DP_TLS_PIN_LEN.  DP_ETLS (NULL cert, OpenSSL failure) with a detail;
 * out untouched then. */
int dp_tls_cert_pin(X509 *cert, char *out, size_t out_size);

/* Check the syntax of a pin list ("sha256//B64[;sha256//B64...]", each
 * base64 text decoding to 32 bytes).  DP_EINVAL with a detail otherwise. */
int dp_tls_check_pins(const char *pins);

/* Identity of the verified peer of an SSL object after the handshake:
 * checks that a peer certificate was presented and verified (X509_V_OK),
 * then dp_tls_cert_identity.  DP_ETLS otherwise. */
int dp_tls_peer_identity(SSL *ssl, char *out, size_t out_size);

/* Format the reason of a failed TLS operation into buf: the first OpenSSL
 * error on this thread's queue (ERR_error_string_n), plus the certificate
 * verification result of ssl when it is not X509_V_OK (ssl may be NULL;
 * a missing extendedKeyUsage and a key that is not pinned are named),
 * or "unspecified TLS error" when there is neither.  Clears the error
 * queue.  Returns buf (untouched when size is 0). */
const char *dp_tls_error_string(SSL *ssl, char *buf, size_t size);

#endif
