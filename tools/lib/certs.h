/* SPDX-License-Identifier: Apache-2.0 */
/* Certificates for a deployment (docs/design.md §8, `dpasync certs`).
 *
 * One CA signs a learner certificate and one certificate per owner.  All
 * keys are EC P-256 (ECDSA with SHA-256 signatures: supported by every TLS
 * 1.3 implementation), generated with EVP_PKEY_Q_keygen from OpenSSL's
 * CSPRNG.  Serial numbers are 16 bytes with 126 random bits.
 *
 *   CA:    subject CN=<ca cn>, basicConstraints critical CA:TRUE pathlen:0,
 *          keyUsage critical keyCertSign+cRLSign, SKID/AKID.
 *   leaf:  subject CN=<name>, basicConstraints critical CA:FALSE, keyUsage
 *          critical digitalSignature, extendedKeyUsage serverAuth and/or
 *          clientAuth, subjectAltName DNS:<name> plus the extra DNS names
 *          and IP addresses asked for, SKID/AKID.  dp_certs_deploy gives
 *          the learner DNS:localhost, IP:127.0.0.1 and IP:::1 as well.
 *
 * The CN is the identity the peer sees (tls.h); it is always also the
 * first SAN DNS entry so that both checks agree.  dp_certs_deploy gives the
 * learner serverAuth only and owners clientAuth only, so that no owner
 * certificate can serve as the learner's (docs/protocol.md §2); with
 * `peer` the owners are peer-mode agents and get both.
 *
 * Files are PEM.  Keys (unencrypted PKCS#8) are created 0600, certificates
 * 0644, each written to a temporary file, fsync'ed and then moved into
 * place, so a crash never leaves a half-written file. */
#ifndef DP_CERTS_H
#define DP_CERTS_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#define DP_CERTS_NAME_MAX 64
#define DP_CERTS_DAY      86400LL
/* Certificates start 5 minutes in the past to tolerate clock skew. */
#define DP_CERTS_BACKDATE 300LL

enum {
	DP_CERT_EKU_SERVER = 1,
	DP_CERT_EKU_CLIENT = 2,
};

typedef struct dp_cert_spec {
	const char *cn;               /* subject CN and first SAN DNS name */
	const char *const *dns;       /* extra SAN DNS names (may be NULL) */
	size_t n_dns;
	const char *const *ips;       /* SAN IP literals, IPv4 or IPv6 */
	size_t n_ips;
	unsigned eku;                 /* DP_CERT_EKU_*; 0 -> both */
	int64_t not_before;           /* seconds from now (negative: past) */
	int64_t lifetime;             /* seconds from not_before to notAfter, > 0 */
} dp_cert_spec;

/* A new self-signed CA with a fresh key.  cn may contain spaces (it is not
 * a peer identity).  On success *key and *cert receive new objects (free
 * with EVP_PKEY_free / X509_free).  Errors: DP_EINVAL (empty cn, lifetime
 * <= 0), DP_ETLS (OpenSSL failure, detail), DP_ENOMEM. */
int dp_certs_make_ca(const char *cn, int64_t not_before, int64_t lifetime,
		     EVP_PKEY **key, X509 **cert);

/* A new leaf certificate and key for spec, signed by ca_cert/ca_key.
 * Errors: DP_EINVAL (bad name or IP literal, lifetime <= 0, ca_key not the
 * key of ca_cert), DP_ETLS, DP_ENOMEM.  Outputs as for dp_certs_make_ca. */
int dp_certs_make_leaf(const dp_cert_spec *spec, X509 *ca_cert, EVP_PKEY *ca_key,
		       EVP_PKEY **key, X509 **cert);

/* Write cert to dir/<base>.crt (0644) and, when key is not NULL, key to
 * dir/<base>.key (0600).  Without force an existing file is an error and
 * nothing is replaced (the key, written first, is removed again if the
 * certificate cannot be placed).  Errors: DP_EINVAL (bad base), -EEXIST
 * (file exists and !force; detail names it), DP_EIO (write/sync/rename
 * failed, detail with strerror), DP_ETLS, DP_ENOMEM. */
int dp_certs_write(const char *dir, const char *base, EVP_PKEY *key, X509 *cert, int force);

/* Read a CA certificate and its key (PEM) for signing more leaves: the
 * certificate must be a CA (basicConstraints CA:TRUE) and the key must
 * match it.  Errors: DP_ETLS with a detail (unreadable, not PEM, not a CA,
 * mismatch), DP_ENOMEM. */
int dp_certs_load_ca(const char *cert_file, const char *key_file, X509 **cert, EVP_PKEY **key);

/* The whole `dpasync certs` job. */
typedef struct dp_certs_opts {
	const char *out_dir;          /* created (0700) if missing */
	const char *const *owners;    /* owner names, each dp_tls_check_name */
	size_t n_owners;
	const char *learner_name;     /* NULL -> "learner" */
	int with_learner;             /* with an existing CA: also make the learner
				       * certificate (always made with a new CA) */
	unsigned days;                /* leaf validity; 0 -> 365 */
	unsigned ca_days;             /* new CA validity; 0 -> 3650 */
	const char *ca_cert_file;     /* both set: reuse this CA instead of a new one */
	const char *ca_key_file;
	int force;                    /* replace existing files */
	int peer;                     /* owners are peer-mode agents: serverAuth and
				       * clientAuth, since an agent both dials its
				       * neighbours and accepts them
				       * (docs/peer-agents.md "Certificates") */
	void (*on_file)(const char *path, void *arg);  /* told each file written; may be NULL */
	void *arg;
} dp_certs_opts;

/* Make (or load) the CA, then the learner and owner certificates, into
 * out_dir: ca.crt, ca.key (new CA only), <learner>.crt/.key, <owner>.crt/.key.
 * With a reused CA, out_dir/ca.crt is written if missing and must otherwise
 * be that same CA.  All names are checked, must be distinct and not "ca";
 * an owner name must not be the learner's (learner_name, else "learner",
 * compared without case), "localhost" or an IPv4 literal;
 * without force every target is checked before anything is generated, so
 * an existing file leaves the directory as it was.
 * Errors: DP_EINVAL (bad options or names), -EEXIST (a target exists; use
 * force), DP_EIO, DP_ETLS, DP_ENOMEM -- each with a one-line detail. */
int dp_certs_deploy(const dp_certs_opts *o);

#endif
