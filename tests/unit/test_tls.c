/* SPDX-License-Identifier: Apache-2.0 */
/* TLS contexts and identities: dp_tls_ctx_new's checks at load time (files,
 * key/certificate match, validity, issuer, extendedKeyUsage, revocation
 * lists, pins), the public-key pin, the identity
 * rules of dp_tls_cert_identity, dp_tls_check_name, dp_tls_client_setup.
 * Certificates are made with tools/lib/certs.c, or by hand below when a
 * test needs one that tool would refuse to make. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "common/core/error.h"
#include "common/net/tls.h"
#include "tools/lib/certs.h"
#include "tools/lib/crl.h"

static char g_dir[64];
static char p_ca[128], p_cab[128], p_junk[128];

static void path_of(char *out, size_t n, const char *base, const char *ext)
{
	snprintf(out, n, "%s/%s.%s", g_dir, base, ext);
}

static void make_leaf(const char *base, const char *cn, unsigned eku, X509 *ca, EVP_PKEY *cak,
		      int64_t nb, int64_t life)
{
	static const char *const dns[] = { "localhost" };
	dp_cert_spec s = { .cn = cn, .dns = dns, .n_dns = 1, .eku = eku, .not_before = nb,
			   .lifetime = life };
	EVP_PKEY *k;
	X509 *x;

	assert_int_equal(dp_certs_make_leaf(&s, ca, cak, &k, &x), 0);
	assert_int_equal(dp_certs_write(g_dir, base, k, x, 0), 0);
	EVP_PKEY_free(k);
	X509_free(x);
}

static int group_setup(void **state)
{
	EVP_PKEY *cak, *bk;
	X509 *ca, *cb;
	FILE *f;

	strcpy(g_dir, "/tmp/dp_test_tls_XXXXXX");
	if (mkdtemp(g_dir) == NULL)
		return -1;
	assert_int_equal(dp_certs_make_ca("CA A", -DP_CERTS_BACKDATE, 30 * DP_CERTS_DAY, &cak, &ca), 0);
	assert_int_equal(dp_certs_write(g_dir, "ca", cak, ca, 0), 0);
	make_leaf("learner", "learner", 0, ca, cak, -DP_CERTS_BACKDATE, DP_CERTS_DAY);
	make_leaf("owner-1", "owner-1", 0, ca, cak, -DP_CERTS_BACKDATE, DP_CERTS_DAY);
	make_leaf("client", "owner-2", DP_CERT_EKU_CLIENT, ca, cak, -DP_CERTS_BACKDATE, DP_CERTS_DAY);
	make_leaf("server", "learner", DP_CERT_EKU_SERVER, ca, cak, -DP_CERTS_BACKDATE,
		  DP_CERTS_DAY);
	make_leaf("expired", "owner-3", 0, ca, cak, -2 * DP_CERTS_DAY, DP_CERTS_DAY);
	make_leaf("notyet", "owner-4", 0, ca, cak, DP_CERTS_DAY, DP_CERTS_DAY);
	/* Another CA issuing a certificate with a configured owner's name. */
	assert_int_equal(dp_certs_make_ca("CA B", -DP_CERTS_BACKDATE, DP_CERTS_DAY, &bk, &cb), 0);
	assert_int_equal(dp_certs_write(g_dir, "cab", bk, cb, 0), 0);
	make_leaf("rogue", "owner-1", 0, cb, bk, -DP_CERTS_BACKDATE, DP_CERTS_DAY);
	EVP_PKEY_free(cak);
	EVP_PKEY_free(bk);
	X509_free(ca);
	X509_free(cb);

	path_of(p_ca, sizeof(p_ca), "ca", "crt");
	path_of(p_cab, sizeof(p_cab), "cab", "crt");
	path_of(p_junk, sizeof(p_junk), "junk", "txt");
	f = fopen(p_junk, "w");
	assert_non_null(f);
	fputs("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n", f);
	fclose(f);
	return 0;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static int group_teardown(void **state)
{
	nftw(g_dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* ---- dp_tls_ctx_new ------------------------------------------------------- */

static void expect_ctx_ok(int server, const char *ca, const char *base)
{
	char c[128], k[128];
	dp_tls_files f = { .ca_file = ca, .cert_file = c, .key_file = k };
	SSL_CTX *ctx = NULL;
	int r;

	path_of(c, sizeof(c), base, "crt");
	path_of(k, sizeof(k), base, "key");
	r = dp_tls_ctx_new(server, &f, &ctx);
	if (r != 0)
		fail_msg("ctx %s: %s", base, dp_error_detail(r));
	assert_non_null(ctx);
	assert_int_equal(SSL_CTX_get_min_proto_version(ctx), TLS1_3_VERSION);
	assert_int_equal(SSL_CTX_get_max_proto_version(ctx), TLS1_3_VERSION);
	assert_int_equal(SSL_CTX_get_verify_mode(ctx),
			 SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
	SSL_CTX_free(ctx);
}

static void expect_ctx_error(int server, const char *ca, const char *cert, const char *key,
			     int code, const char *needle)
{
	dp_tls_files f = { .ca_file = ca, .cert_file = cert, .key_file = key };
	SSL_CTX *ctx = (SSL_CTX *)"untouched";
	int r = dp_tls_ctx_new(server, &f, &ctx);

	if (r != code || strstr(dp_error_detail(r), needle) == NULL)
		fail_msg("expected %d '%s', got %d '%s'", code, needle, r, dp_error_detail(r));
	assert_string_equal((char *)ctx, "untouched");
	/* Nothing left on OpenSSL's error queue for the next caller. */
	assert_int_equal(ERR_peek_error(), 0);
}

static void test_ctx_ok(void **state)
{
	expect_ctx_ok(1, p_ca, "learner");
	expect_ctx_ok(0, p_ca, "owner-1");
	expect_ctx_ok(0, p_ca, "client");
	expect_ctx_ok(1, p_ca, "server");
}

static void test_ctx_files(void **state)
{
	char lc[128], lk[128], missing[128];

	path_of(lc, sizeof(lc), "learner", "crt");
	path_of(lk, sizeof(lk), "learner", "key");
	path_of(missing, sizeof(missing), "missing", "crt");

	/* Missing paths: no file given at all, or no such file. */
	expect_ctx_error(1, NULL, lc, lk, DP_EINVAL, "no CA file");
	expect_ctx_error(1, p_ca, "", lk, DP_EINVAL, "no certificate file");
	expect_ctx_error(1, p_ca, lc, NULL, DP_EINVAL, "no key file");
	expect_ctx_error(1, missing, lc, lk, DP_ETLS, "cannot read CA file");
	expect_ctx_error(1, p_ca, missing, lk, DP_ETLS, "No such file");
	expect_ctx_error(1, p_ca, lc, missing, DP_ETLS, "cannot read key file");

	/* Unreadable (root reads everything: checked only as another user). */
	if (geteuid() != 0) {
		char uk[128];
		FILE *in = fopen(lk, "r"), *out;
		char buf[4096];
		size_t n;

		path_of(uk, sizeof(uk), "unreadable", "key");
		out = fopen(uk, "w");
		assert_non_null(in);
		assert_non_null(out);
		n = fread(buf, 1, sizeof(buf), in);
		fwrite(buf, 1, n, out);
		fclose(in);
		fclose(out);
		assert_int_equal(chmod(uk, 0), 0);
		expect_ctx_error(1, p_ca, lc, uk, DP_ETLS, "Permission denied");
	} else {
		print_message("running as root: unreadable-file case skipped\n");
	}

	/* Files that are not what they should be. */
	expect_ctx_error(1, lk, lc, lk, DP_ETLS, "no usable CA certificate");
	expect_ctx_error(1, p_junk, lc, lk, DP_ETLS, "no usable CA certificate");
	expect_ctx_error(1, p_ca, lk, lk, DP_ETLS, "no usable certificate");
	expect_ctx_error(1, p_ca, p_junk, lk, DP_ETLS, "no usable certificate");
	expect_ctx_error(1, p_ca, lc, lc, DP_ETLS, "no usable private key");
	expect_ctx_error(1, p_ca, lc, p_junk, DP_ETLS, "no usable private key");
}

static void test_ctx_certificate(void **state)
{
	char lc[128], lk[128], o1k[128], xc[128], xk[128], nc[128], nk[128], rc[128], rk[128];
	char cc[128], ck[128], sc[128], sk[128];

	path_of(lc, sizeof(lc), "learner", "crt");
	path_of(lk, sizeof(lk), "learner", "key");
	path_of(o1k, sizeof(o1k), "owner-1", "key");
	path_of(xc, sizeof(xc), "expired", "crt");
	path_of(xk, sizeof(xk), "expired", "key");
	path_of(nc, sizeof(nc), "notyet", "crt");
	path_of(nk, sizeof(nk), "notyet", "key");
	path_of(rc, sizeof(rc), "rogue", "crt");
	path_of(rk, sizeof(rk), "rogue", "key");
	path_of(cc, sizeof(cc), "client", "crt");
	path_of(ck, sizeof(ck), "client", "key");
	path_of(sc, sizeof(sc), "server", "crt");
	path_of(sk, sizeof(sk), "server", "key");

	/* Key and certificate do not belong together. */
	expect_ctx_error(1, p_ca, lc, o1k, DP_ETLS, "does not match");
	expect_ctx_error(1, p_ca, rc, lk, DP_ETLS, "does not match");
	/* Own certificate out of its validity period. */
	expect_ctx_error(0, p_ca, xc, xk, DP_ETLS, "expired on");
	expect_ctx_error(1, p_ca, xc, xk, DP_ETLS, "expired on");
	expect_ctx_error(0, p_ca, nc, nk, DP_ETLS, "is not valid before");
	/* A CA that did not issue the certificate, both ways round. */
	expect_ctx_error(0, p_ca, rc, rk, DP_ETLS, "does not verify against CA");
	expect_ctx_error(1, p_cab, lc, lk, DP_ETLS, "does not verify against CA");
	/* extendedKeyUsage: clientAuth only cannot serve, serverAuth only
	 * cannot be a client. */
	expect_ctx_error(1, p_ca, cc, ck, DP_ETLS, "for a server");
	expect_ctx_error(0, p_ca, sc, sk, DP_ETLS, "for a client");
}

/* ---- identities ---------------------------------------------------------- */

/* A self-signed certificate with the given subject CNs (raw UTF-8, no
 * length limit) and subjectAltName (OpenSSL config syntax, or NULL). */
static X509 *bare_cert(EVP_PKEY *k, const char *const *cns, size_t ncn, const char *san)
{
	X509 *x = X509_new();
	X509_NAME *n;

	assert_non_null(x);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -300);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	assert_int_equal(X509_set_pubkey(x, k), 1);
	n = X509_get_subject_name(x);
	assert_int_equal(X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC,
						    (const unsigned char *)"test", -1, -1, 0), 1);
	/* V_ASN1_UTF8STRING, not MBSTRING_UTF8: no ub-common-name check. */
	for (size_t i = 0; i < ncn; i++)
		assert_int_equal(X509_NAME_add_entry_by_txt(n, "CN", V_ASN1_UTF8STRING,
							    (const unsigned char *)cns[i], -1,
							    -1, 0), 1);
	X509_set_issuer_name(x, n);
	if (san != NULL) {
		X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);

		assert_non_null(e);
		assert_int_equal(X509_add_ext(x, e, -1), 1);
		X509_EXTENSION_free(e);
	}
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	return x;
}

static void expect_identity(EVP_PKEY *k, const char *const *cns, size_t ncn, const char *san,
			    const char *want)
{
	X509 *x = bare_cert(k, cns, ncn, san);
	char id[DP_TLS_ID_MAX + 1];
	int r = dp_tls_cert_identity(x, id, sizeof(id));

	if (r != 0)
		fail_msg("identity: %s", dp_error_detail(r));
	assert_string_equal(id, want);
	X509_free(x);
}

static void expect_identity_error(EVP_PKEY *k, const char *const *cns, size_t ncn,
				  const char *san, const char *needle)
{
	X509 *x = bare_cert(k, cns, ncn, san);
	char id[DP_TLS_ID_MAX + 1] = "untouched";
	int r = dp_tls_cert_identity(x, id, sizeof(id));

	if (r != DP_ETLS || strstr(dp_error_detail(r), needle) == NULL)
		fail_msg("expected DP_ETLS '%s', got %d '%s'", needle, r, dp_error_detail(r));
	assert_string_equal(id, "untouched");
	X509_free(x);
}

static void test_cert_identity(void **state)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	char id[DP_TLS_ID_MAX + 1], cn64[DP_TLS_ID_MAX + 2];
	const char *cn[2];
	char lc[128];
	FILE *f;
	X509 *x;

	assert_non_null(k);
	/* A certificate made by `dpasync certs`. */
	path_of(lc, sizeof(lc), "learner", "crt");
	f = fopen(lc, "r");
	assert_non_null(f);
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	assert_non_null(x);
	assert_int_equal(dp_tls_cert_identity(x, id, sizeof(id)), 0);
	assert_string_equal(id, "learner");
	X509_free(x);
	assert_int_equal(dp_tls_cert_identity(NULL, id, sizeof(id)), DP_ETLS);

	/* Without SAN DNS entries the CN alone is the identity; with them,
	 * the CN must be one of them (compared without regard to case). */
	cn[0] = "owner-1";
	expect_identity(k, cn, 1, NULL, "owner-1");
	expect_identity(k, cn, 1, "IP:127.0.0.1", "owner-1");
	expect_identity(k, cn, 1, "DNS:other,DNS:owner-1", "owner-1");
	cn[0] = "Owner-1";
	expect_identity(k, cn, 1, "DNS:owner-1", "Owner-1");
	cn[0] = "owner-2";
	expect_identity_error(k, cn, 1, "DNS:owner-1,DNS:localhost",
			      "certificate CN 'owner-2' is not among its 2 SAN DNS names");

	/* Exactly one CN. */
	expect_identity_error(k, NULL, 0, "DNS:owner-1", "no subject CN");
	cn[0] = "owner-1";
	cn[1] = "owner-2";
	expect_identity_error(k, cn, 2, NULL, "more than one subject CN");
	cn[1] = "owner-1";
	expect_identity_error(k, cn, 2, NULL, "more than one subject CN");

	/* 1..DP_TLS_ID_MAX printable ASCII bytes, no spaces. */
	memset(cn64, 'a', sizeof(cn64));
	cn64[DP_TLS_ID_MAX] = '\0';
	cn[0] = cn64;
	expect_identity(k, cn, 1, NULL, cn64);
	cn64[DP_TLS_ID_MAX] = 'a';
	cn64[DP_TLS_ID_MAX + 1] = '\0';
	expect_identity_error(k, cn, 1, NULL, "longer than 64 bytes");
	cn[0] = "owner 1";
	expect_identity_error(k, cn, 1, NULL, "outside printable ASCII");
	cn[0] = "own\xc3\xa9r";
	expect_identity_error(k, cn, 1, NULL, "outside printable ASCII");
	cn[0] = "";
	expect_identity_error(k, cn, 1, NULL, "cannot be decoded");

	/* The CN of a certificate from dp_certs_make_leaf, renamed so that it
	 * is not among its SAN DNS names, is refused; two CNs too. */
	{
		EVP_PKEY *cak, *lk;
		X509 *ca;
		X509_NAME *n;
		dp_cert_spec s = { .cn = "owner-1", .lifetime = DP_CERTS_DAY };

		assert_int_equal(dp_certs_make_ca("t", 0, DP_CERTS_DAY, &cak, &ca), 0);
		assert_int_equal(dp_certs_make_leaf(&s, ca, cak, &lk, &x), 0);
		n = X509_get_subject_name(x);
		X509_NAME_ENTRY_free(X509_NAME_delete_entry(n, X509_NAME_get_index_by_NID(n,
						NID_commonName, -1)));
		X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (unsigned char *)"owner-2", -1,
					   -1, 0);
		assert_int_equal(dp_tls_cert_identity(x, id, sizeof(id)), DP_ETLS);
		assert_non_null(strstr(dp_error_detail(DP_ETLS), "SAN"));
		X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (unsigned char *)"owner-1", -1,
					   -1, 0);
		assert_int_equal(dp_tls_cert_identity(x, id, sizeof(id)), DP_ETLS);
		X509_free(x);
		X509_free(ca);
		EVP_PKEY_free(lk);
		EVP_PKEY_free(cak);
	}
	EVP_PKEY_free(k);
	assert_int_equal(ERR_peek_error(), 0);
}

/* Identities as configured (owner names, --learner-name). */
static void test_check_name(void **state)
{
	char long65[66];

	assert_int_equal(dp_tls_check_name("owner-1"), 0);
	assert_int_equal(dp_tls_check_name("x.y_z"), 0);
	assert_int_equal(dp_tls_check_name("9"), 0);
	assert_int_equal(dp_tls_check_name("Learner"), 0);
	assert_int_equal(dp_tls_check_name(""), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL), "identity is empty");
	assert_int_equal(dp_tls_check_name(NULL), DP_EINVAL);
	assert_int_equal(dp_tls_check_name("-x"), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "must start with a letter or digit"));
	assert_int_equal(dp_tls_check_name(".x"), DP_EINVAL);
	assert_int_equal(dp_tls_check_name("_x"), DP_EINVAL);
	assert_int_equal(dp_tls_check_name("a b"), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "character ' ' not allowed"));
	assert_int_equal(dp_tls_check_name("a,b"), DP_EINVAL);
	assert_int_equal(dp_tls_check_name("a/b"), DP_EINVAL);
	assert_int_equal(dp_tls_check_name("a:b"), DP_EINVAL);
	assert_int_equal(dp_tls_check_name("own\xc3\xa9r"), DP_EINVAL);
	memset(long65, 'a', 65);
	long65[65] = '\0';
	assert_int_equal(dp_tls_check_name(long65), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "longer than 64 bytes"));
	long65[64] = '\0';
	assert_int_equal(dp_tls_check_name(long65), 0);
}

/* ---- client setup and error text ------------------------------------------ */

static void test_client_setup(void **state)
{
	char c[128], k[128];
	dp_tls_files f = { .ca_file = p_ca, .cert_file = c, .key_file = k };
	SSL_CTX *ctx = NULL;
	SSL *ssl;
	char buf[128];

	path_of(c, sizeof(c), "owner-1", "crt");
	path_of(k, sizeof(k), "owner-1", "key");
	assert_int_equal(dp_tls_ctx_new(0, &f, &ctx), 0);

	ssl = SSL_new(ctx);
	assert_non_null(ssl);
	assert_int_equal(dp_tls_client_setup(ssl, ""), DP_EINVAL);
	assert_int_equal(dp_tls_client_setup(ssl, NULL), DP_EINVAL);
	assert_int_equal(dp_tls_client_setup(ssl, "learner"), 0);
	assert_string_equal(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name), "learner");
	SSL_free(ssl);

	/* An address literal is checked against SAN IP entries and never
	 * sent as SNI. */
	ssl = SSL_new(ctx);
	assert_non_null(ssl);
	assert_int_equal(dp_tls_client_setup(ssl, "127.0.0.1"), 0);
	assert_null(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name));
	SSL_free(ssl);
	ssl = SSL_new(ctx);
	assert_int_equal(dp_tls_client_setup(ssl, "::1"), 0);
	assert_null(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name));
	SSL_free(ssl);
	SSL_CTX_free(ctx);

	/* Nothing to report: a fixed text, never an empty string. */
	ERR_clear_error();
	assert_string_equal(dp_tls_error_string(NULL, buf, sizeof(buf)), "unspecified TLS error");
}

/* ---- roles, pins, revocation lists --------------------------------------- */

static void expect_ctx_extra_error(int server, const char *base, const char *crl,
				   const char *pins, int code, const char *needle)
{
	char c[128], k[128];
	dp_tls_files f = { .ca_file = p_ca, .cert_file = c, .key_file = k, .crl_file = crl,
			   .pins = pins };
	SSL_CTX *ctx = (SSL_CTX *)"untouched";
	int r;

	path_of(c, sizeof(c), base, "crt");
	path_of(k, sizeof(k), base, "key");
	r = dp_tls_ctx_new(server, &f, &ctx);
	if (r != code || (code != 0 && strstr(dp_error_detail(r), needle) == NULL))
		fail_msg("%s crl=%s pins=%s: expected %d '%s', got %d '%s'", base,
			 crl ? crl : "-", pins ? pins : "-", code, needle, r,
			 r ? dp_error_detail(r) : "");
	if (code == 0)
		SSL_CTX_free(ctx);
	else
		assert_string_equal((char *)ctx, "untouched");
	assert_int_equal(ERR_peek_error(), 0);
}

/* A CRL of CA A signed by hand, valid from now+from to now+to seconds. */
static void crl_at(const char *path, long from, long to)
{
	char cac[128], cak[128];
	X509 *ca;
	EVP_PKEY *k;
	X509_CRL *c = X509_CRL_new();
	ASN1_TIME *t1 = X509_gmtime_adj(NULL, from), *t2 = X509_gmtime_adj(NULL, to);
	FILE *f;

	path_of(cac, sizeof(cac), "ca", "crt");
	path_of(cak, sizeof(cak), "ca", "key");
	assert_int_equal(dp_certs_load_ca(cac, cak, &ca, &k), 0);
	assert_int_equal(X509_CRL_set_version(c, 1), 1);
	assert_int_equal(X509_CRL_set_issuer_name(c, X509_get_subject_name(ca)), 1);
	assert_int_equal(X509_CRL_set1_lastUpdate(c, t1), 1);
	assert_int_equal(X509_CRL_set1_nextUpdate(c, t2), 1);
	assert_true(X509_CRL_sign(c, k, EVP_sha256()) > 0);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509_CRL(f, c), 1);
	fclose(f);
	ASN1_TIME_free(t1);
	ASN1_TIME_free(t2);
	X509_CRL_free(c);
	X509_free(ca);
	EVP_PKEY_free(k);
}

/* A leaf of CA A without extendedKeyUsage (dpasync certs never makes one). */
static void noeku_leaf(const char *base, const char *cn)
{
	char cac[128], cak[128], p[128];
	X509 *ca, *x = X509_new();
	EVP_PKEY *k, *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509V3_CTX v3;
	X509_EXTENSION *e;
	FILE *f;

	path_of(cac, sizeof(cac), "ca", "crt");
	path_of(cak, sizeof(cak), "ca", "key");
	assert_int_equal(dp_certs_load_ca(cac, cak, &ca, &k), 0);
	assert_non_null(key);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 4242);
	X509_gmtime_adj(X509_getm_notBefore(x), -300);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, key);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
				   (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(ca));
	X509V3_set_ctx(&v3, ca, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:FALSE");
	X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	path_of(p, sizeof(p), base, "crt");
	f = fopen(p, "w");
	assert_non_null(f);
	PEM_write_X509(f, x);
	fclose(f);
	path_of(p, sizeof(p), base, "key");
	f = fopen(p, "w");
	assert_non_null(f);
	PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	chmod(p, 0600);
	X509_free(x);
	X509_free(ca);
	EVP_PKEY_free(k);
	EVP_PKEY_free(key);
}

static void test_ctx_roles(void **state)
{
	(void)state;
	/* OpenSSL's purpose check takes a certificate without the extension
	 * for any role; the daemons do not (docs/protocol.md §1). */
	noeku_leaf("noeku", "owner-5");
	expect_ctx_extra_error(0, "noeku", NULL, NULL, DP_ETLS, "no extendedKeyUsage clientAuth");
	expect_ctx_extra_error(1, "noeku", NULL, NULL, DP_ETLS, "no extendedKeyUsage serverAuth");
}

static void test_pins(void **state)
{
	char lc[128], pin[DP_TLS_PIN_LEN + 1], pin2[DP_TLS_PIN_LEN + 1], two[256], bad[128];
	X509 *a, *b;
	FILE *f;

	(void)state;
	path_of(lc, sizeof(lc), "learner", "crt");
	f = fopen(lc, "r");
	a = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	path_of(lc, sizeof(lc), "owner-1", "crt");
	f = fopen(lc, "r");
	b = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	assert_int_equal(dp_tls_cert_pin(a, pin, sizeof(pin)), 0);
	assert_int_equal(dp_tls_cert_pin(b, pin2, sizeof(pin2)), 0);
	assert_int_equal(strlen(pin), DP_TLS_PIN_LEN);
	assert_memory_equal(pin, "sha256//", 8);
	assert_int_equal(pin[DP_TLS_PIN_LEN - 1], '=');
	assert_string_not_equal(pin, pin2);
	assert_int_equal(dp_tls_cert_pin(NULL, pin2, sizeof(pin2)), DP_ETLS);

	assert_int_equal(dp_tls_check_pins(pin), 0);
	snprintf(two, sizeof(two), "%s;%s", pin2, pin);
	assert_int_equal(dp_tls_check_pins(two), 0);
	snprintf(two, sizeof(two), " %s ;\t%s ", pin2, pin);
	assert_int_equal(dp_tls_check_pins(two), 0);
	assert_int_equal(dp_tls_check_pins(""), DP_EINVAL);
	assert_int_equal(dp_tls_check_pins("sha1//AAAA"), DP_EINVAL);
	assert_int_equal(dp_tls_check_pins("sha256//AAAA"), DP_EINVAL);
	snprintf(two, sizeof(two), "%s;", pin);
	assert_int_equal(dp_tls_check_pins(two), DP_EINVAL);
	/* Same length, not base64 / stray bits before the padding. */
	snprintf(bad, sizeof(bad), "%s", pin);
	bad[10] = '*';
	assert_int_equal(dp_tls_check_pins(bad), DP_EINVAL);
	snprintf(bad, sizeof(bad), "%s", pin);
	bad[DP_TLS_PIN_LEN - 2] = bad[DP_TLS_PIN_LEN - 2] == 'B' ? 'C' : 'B';
	assert_int_equal(dp_tls_check_pins(bad), DP_EINVAL);

	/* In a context: checked at load, malformed is DP_EINVAL. */
	expect_ctx_extra_error(0, "owner-1", NULL, pin, 0, "");
	expect_ctx_extra_error(0, "owner-1", NULL, "sha256//nope", DP_EINVAL, "sha256//");
	X509_free(a);
	X509_free(b);
}

static void test_crl_load(void **state)
{
	char crl[128], crl_b[128], revoked[128], expired[128], future[128], lc[128], empty[128];
	const char *rv[1];
	dp_crl_opts o = { 0 };
	FILE *f;

	(void)state;
	path_of(crl, sizeof(crl), "ca", "crl");
	path_of(crl_b, sizeof(crl_b), "cab", "crl");
	path_of(revoked, sizeof(revoked), "revoked", "crl");
	path_of(expired, sizeof(expired), "expired", "crl");
	path_of(future, sizeof(future), "future", "crl");
	path_of(empty, sizeof(empty), "empty", "crl");
	path_of(lc, sizeof(lc), "learner", "crt");
	o.ca_cert_file = p_ca;
	o.crl_file = crl;
	{
		char cak[128], cbc[128], cbk[128];

		path_of(cak, sizeof(cak), "ca", "key");
		o.ca_key_file = cak;
		assert_int_equal(dp_crl_update(&o, NULL), 0);
		rv[0] = lc;
		o.crl_file = revoked;
		o.revoke = rv;
		o.n_revoke = 1;
		assert_int_equal(dp_crl_update(&o, NULL), 0);
		path_of(cbc, sizeof(cbc), "cab", "crt");
		path_of(cbk, sizeof(cbk), "cab", "key");
		o = (dp_crl_opts){ .ca_cert_file = cbc, .ca_key_file = cbk, .crl_file = crl_b };
		assert_int_equal(dp_crl_update(&o, NULL), 0);
	}
	crl_at(expired, -2 * 86400, -60);
	crl_at(future, 3600, 2 * 86400);
	f = fopen(empty, "w");
	assert_non_null(f);
	fclose(f);

	/* A current list of the CA: the context loads, a revoked own
	 * certificate does not. */
	expect_ctx_extra_error(1, "learner", crl, NULL, 0, "");
	expect_ctx_extra_error(0, "owner-1", crl, NULL, 0, "");
	expect_ctx_extra_error(0, "owner-1", revoked, NULL, 0, "");
	expect_ctx_extra_error(1, "learner", revoked, NULL, DP_ETLS, "certificate revoked");
	/* Bad lists: one clear line each. */
	expect_ctx_extra_error(1, "learner", crl_b, NULL, DP_ETLS, "not signed by a CA");
	expect_ctx_extra_error(1, "learner", expired, NULL, DP_ETLS, "expired on");
	expect_ctx_extra_error(1, "learner", future, NULL, DP_ETLS, "not valid before");
	expect_ctx_extra_error(1, "learner", empty, NULL, DP_ETLS, "no PEM CRL");
	expect_ctx_extra_error(1, "learner", p_junk, NULL, DP_ETLS, "malformed CRL");
	expect_ctx_extra_error(1, "learner", "/nonexistent/x.crl", NULL, DP_ETLS,
			       "cannot read CRL file");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ctx_ok),
		cmocka_unit_test(test_ctx_files),
		cmocka_unit_test(test_ctx_certificate),
		cmocka_unit_test(test_cert_identity),
		cmocka_unit_test(test_check_name),
		cmocka_unit_test(test_client_setup),
		cmocka_unit_test(test_ctx_roles),
		cmocka_unit_test(test_pins),
		cmocka_unit_test(test_crl_load),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
