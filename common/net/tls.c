/* SPDX-License-Identifier: Apache-2.0 */
#include "common/net/tls.h"
#include "common/core/error.h"
#include "common/core/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/* The verify errors verify_cb sets, in words that say what to fix. */
static const char *verify_hint(SSL *ssl, long v)
{
	if (v == X509_V_ERR_INVALID_PURPOSE)
		return SSL_is_server(ssl) ? " (a client needs extendedKeyUsage clientAuth)"
					  : " (a server needs extendedKeyUsage serverAuth)";
	if (v == X509_V_ERR_APPLICATION_VERIFICATION)
		return " (public key not pinned)";
	return "";
}

const char *dp_tls_error_string(SSL *ssl, char *buf, size_t size)
{
	unsigned long e = ERR_get_error();
	size_t off = 0;

	DP_REQUIRE(buf != NULL || size == 0);
	if (size == 0)
		return buf;
	buf[0] = '\0';
	if (e != 0) {
		ERR_error_string_n(e, buf, size);
		off = strlen(buf);
	}
	if (ssl != NULL) {
		long v = SSL_get_verify_result(ssl);

		if (v != X509_V_OK && off + 1 < size)
			snprintf(buf + off, size - off, "%scertificate verify: %s%s",
				 off ? "; " : "", X509_verify_cert_error_string(v),
				 verify_hint(ssl, v));
	}
	if (buf[0] == '\0')
		snprintf(buf, size, "unspecified TLS error");
	ERR_clear_error();
	return buf;
}

/* fopen first so that a missing or unreadable file gets errno's words
 * instead of OpenSSL's "system library" chain. */
static int readable(const char *what, const char *path)
{
	FILE *f;

	if (path == NULL || *path == '\0')
		return dp_error_set(DP_EINVAL, "tls: no %s file given", what);
	f = fopen(path, "r");
	if (f == NULL)
		return dp_error_set(DP_ETLS, "tls: cannot read %s file '%s': %s", what, path,
				    strerror(errno));
	fclose(f);
	return 0;
}

static int tls_fail(const char *fmt_prefix, const char *path)
{
	char eb[256];

	dp_tls_error_string(NULL, eb, sizeof(eb));
	return dp_error_set(DP_ETLS, "tls: %s '%s': %s", fmt_prefix, path, eb);
}

static void asn1_time_text(const ASN1_TIME *t, char *buf, size_t size)
{
	BIO *b = BIO_new(BIO_s_mem());
	int n = 0;

	buf[0] = '\0';
	if (b == NULL)
		return;
	if (ASN1_TIME_print(b, t) == 1)
		n = BIO_read(b, buf, (int)size - 1);
	buf[n > 0 ? n : 0] = '\0';
	BIO_free(b);
}

static EVP_PKEY *read_key(const char *path)
{
	FILE *f = fopen(path, "r");
	EVP_PKEY *k;
	struct stat st;

	if (f == NULL)
		return NULL;
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077) != 0)
		DP_WARN("tls", "key file '%s' is readable by group or others (mode %03o); "
			"chmod 600 it", path, (unsigned)(st.st_mode & 0777));
	k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	return k;
}

/* ---- roles, pins and revocation (docs/protocol.md §1) ------------------- */

/* 1 when cert carries extendedKeyUsage with `xku` (XKU_SSL_*).  Unlike
 * OpenSSL's purpose check, a certificate without the extension has no role. */
static int has_eku(X509 *cert, uint32_t xku)
{
	return (X509_get_extension_flags(cert) & EXFLAG_XKUSAGE) != 0 &&
	       (X509_get_extended_key_usage(cert) & xku) != 0;
}

#define PIN_PREFIX "sha256//"
#define PINS_MAX   16

/* The pins of a context, kept in its ex_data and freed with it. */
struct pinset {
	size_t n;
	char pin[PINS_MAX][DP_TLS_PIN_LEN + 1];
};

static int pin_idx = -1;
static pthread_once_t pin_once = PTHREAD_ONCE_INIT;

static void pins_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
		      void *argp)
{
	(void)parent;
	(void)ad;
	(void)idx;
	(void)argl;
	(void)argp;
	free(ptr);
}

static void pin_index_init(void)
{
	pin_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, pins_free);
}

int dp_tls_cert_pin(X509 *cert, char *out, size_t out_size)
{
	unsigned char *der = NULL, md[32];
	unsigned char b64[45];
	int n, ok;

	DP_REQUIRE(out != NULL && out_size > DP_TLS_PIN_LEN);
	if (cert == NULL)
		return dp_error_set(DP_ETLS, "no certificate");
	n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der);
	if (n <= 0) {
		ERR_clear_error();
		return dp_error_set(DP_ETLS, "cannot encode the certificate's public key");
	}
	ok = EVP_Digest(der, (size_t)n, md, NULL, EVP_sha256(), NULL);
	OPENSSL_free(der);
	if (ok != 1) {
		ERR_clear_error();
		return dp_error_set(DP_ETLS, "cannot hash the certificate's public key");
	}
	EVP_EncodeBlock(b64, md, (int)sizeof(md));
	snprintf(out, out_size, PIN_PREFIX "%s", (const char *)b64);
	return 0;
}

/* One pin of a list (len bytes at p) into out, in its canonical text. */
static int parse_pin(const char *p, size_t len, char *out)
{
	const size_t plen = sizeof(PIN_PREFIX) - 1;
	unsigned char raw[36], b64[45];

	if (len < plen || strncmp(p, PIN_PREFIX, plen) != 0)
		return dp_error_set(DP_EINVAL, "pin '%.*s' does not start with " PIN_PREFIX,
				    (int)(len > 60 ? 60 : len), p);
	if (len - plen != 44 ||
	    EVP_DecodeBlock(raw, (const unsigned char *)p + plen, 44) != 33)
		return dp_error_set(DP_EINVAL, "pin '%.*s' is not " PIN_PREFIX "followed by the "
				    "base64 of a SHA-256 hash (44 characters)",
				    (int)(len > 60 ? 60 : len), p);
	/* Re-encoding must give the same text: no stray bits, padding right. */
	EVP_EncodeBlock(b64, raw, 32);
	if (memcmp(b64, p + plen, 44) != 0)
		return dp_error_set(DP_EINVAL, "pin '%.*s' is not canonical base64", (int)len, p);
	memcpy(out, p, len);
	out[len] = '\0';
	return 0;
}

static int parse_pins(const char *text, struct pinset *ps)
{
	const char *p = text;

	ps->n = 0;
	for (;;) {
		const char *end = strchr(p, ';');
		size_t len;
		int r;

		/* Blanks around an item are allowed ("A ; B"). */
		while (*p == ' ' || *p == '\t')
			p++;
		len = end ? (size_t)(end - p) : strlen(p);
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;

		if (ps->n == PINS_MAX)
			return dp_error_set(DP_EINVAL, "more than %d pins", PINS_MAX);
		r = parse_pin(p, len, ps->pin[ps->n]);
		if (r < 0)
			return r;
		ps->n++;
		if (end == NULL)
			return 0;
		p = end + 1;
	}
}

int dp_tls_check_pins(const char *pins)
{
	struct pinset ps;

	if (pins == NULL || *pins == '\0')
		return dp_error_set(DP_EINVAL, "no pin given");
	return parse_pins(pins, &ps);
}

static int pinned(const struct pinset *ps, X509 *cert)
{
	char pin[DP_TLS_PIN_LEN + 1], cn[DP_TLS_ID_MAX + 1] = "?";

	if (dp_tls_cert_pin(cert, pin, sizeof(pin)) < 0)
		return 0;
	for (size_t i = 0; i < ps->n; i++)
		if (strcmp(pin, ps->pin[i]) == 0)
			return 1;
	X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
	ERR_clear_error();
	DP_WARN("tls", "refusing peer certificate cn=%s: its public key %s is not pinned "
		"(%zu pin%s configured)", cn, pin, ps->n, ps->n == 1 ? "" : "s");
	return 0;
}

/* Runs for each certificate of the peer's chain after OpenSSL's own checks
 * (chain, validity, revocation); on the leaf, the role and the pins. */
static int verify_cb(int ok, X509_STORE_CTX *sc)
{
	SSL *ssl;
	X509 *cert;
	const struct pinset *ps;

	if (ok != 1 || X509_STORE_CTX_get_error_depth(sc) != 0)
		return ok;
	ssl = X509_STORE_CTX_get_ex_data(sc, SSL_get_ex_data_X509_STORE_CTX_idx());
	cert = X509_STORE_CTX_get_current_cert(sc);
	if (ssl == NULL || cert == NULL)
		return ok;
	if (!has_eku(cert, SSL_is_server(ssl) ? XKU_SSL_CLIENT : XKU_SSL_SERVER)) {
		X509_STORE_CTX_set_error(sc, X509_V_ERR_INVALID_PURPOSE);
		return 0;
	}
	ps = pin_idx >= 0 ? SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), pin_idx) : NULL;
	if (ps != NULL && !pinned(ps, cert)) {
		X509_STORE_CTX_set_error(sc, X509_V_ERR_APPLICATION_VERIFICATION);
		return 0;
	}
	return 1;
}

static int set_pins(SSL_CTX *ctx, const char *text)
{
	struct pinset *ps;
	int r;

	pthread_once(&pin_once, pin_index_init);
	if (pin_idx < 0)
		return dp_error_set(DP_ETLS, "tls: no ex_data index for the pins");
	ps = malloc(sizeof(*ps));
	if (ps == NULL)
		return dp_error_set(DP_ENOMEM, "tls: out of memory");
	r = parse_pins(text, ps);
	if (r == 0 && SSL_CTX_set_ex_data(ctx, pin_idx, ps) != 1)
		r = dp_error_set(DP_ETLS, "tls: cannot attach the pins");
	if (r < 0)
		free(ps);
	return r;
}

/* A CRL must come from a CA of the store and be current when loaded. */
static int check_crl(X509_CRL *crl, STACK_OF(X509) *cas, const char *path, int i)
{
	const ASN1_TIME *next = X509_CRL_get0_nextUpdate(crl);
	int signed_ok = 0;
	char tb[64];

	for (int j = 0; j < sk_X509_num(cas) && !signed_ok; j++) {
		X509 *ca = sk_X509_value(cas, j);

		signed_ok = X509_NAME_cmp(X509_get_subject_name(ca), X509_CRL_get_issuer(crl)) == 0 &&
			    X509_CRL_verify(crl, X509_get0_pubkey(ca)) == 1;
	}
	ERR_clear_error();
	if (!signed_ok)
		return dp_error_set(DP_ETLS, "tls: CRL %d in '%s' is not signed by a CA of the CA "
				    "file", i, path);
	if (X509_cmp_current_time(X509_CRL_get0_lastUpdate(crl)) >= 0) {
		asn1_time_text(X509_CRL_get0_lastUpdate(crl), tb, sizeof(tb));
		return dp_error_set(DP_ETLS, "tls: CRL %d in '%s' is not valid before %s", i, path,
				    tb);
	}
	if (next != NULL && X509_cmp_current_time(next) <= 0) {
		asn1_time_text(next, tb, sizeof(tb));
		return dp_error_set(DP_ETLS, "tls: CRL %d in '%s' expired on %s (issue a new one: "
				    "dpasync certs --crl)", i, path, tb);
	}
	return 0;
}

static int load_crls(SSL_CTX *ctx, const char *path)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	STACK_OF(X509) *cas = X509_STORE_get1_all_certs(st);
	BIO *b = NULL;
	X509_CRL *crl;
	int r, n = 0;

	if (cas == NULL)
		return dp_error_set(DP_ENOMEM, "tls: out of memory");
	r = readable("CRL", path);
	if (r < 0)
		goto out;
	ERR_clear_error();
	b = BIO_new_file(path, "r");
	if (b == NULL) {
		r = tls_fail("cannot read CRL file", path);
		goto out;
	}
	for (;;) {
		crl = PEM_read_bio_X509_CRL(b, NULL, NULL, NULL);
		if (crl == NULL)
			break;
		n++;
		r = check_crl(crl, cas, path, n);
		if (r == 0 && X509_STORE_add_crl(st, crl) != 1)
			r = tls_fail("cannot use CRL from", path);
		X509_CRL_free(crl);
		if (r < 0)
			goto out;
	}
	/* The loop ends at the end of the file (no start line) or at a block
	 * that does not parse. */
	if (ERR_GET_REASON(ERR_peek_last_error()) != PEM_R_NO_START_LINE) {
		r = tls_fail("malformed CRL in", path);
		goto out;
	}
	ERR_clear_error();
	if (n == 0) {
		r = dp_error_set(DP_ETLS, "tls: no PEM CRL in '%s'", path);
		goto out;
	}
	X509_STORE_set_flags(st, X509_V_FLAG_CRL_CHECK);
	r = 0;
out:
	BIO_free(b);
	sk_X509_pop_free(cas, X509_free);
	return r;
}

/* The own certificate is checked at load time against the same store that
 * will verify peers, with the purpose of this side's role. */
static int check_own(SSL_CTX *ctx, int is_server, const dp_tls_files *fl)
{
	X509 *cert = SSL_CTX_get0_certificate(ctx);
	STACK_OF(X509) *chain = NULL;
	X509_STORE_CTX *sc;
	char tb[64];
	int ok, err;

	if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
		asn1_time_text(X509_get0_notAfter(cert), tb, sizeof(tb));
		return dp_error_set(DP_ETLS, "tls: certificate '%s' expired on %s", fl->cert_file, tb);
	}
	if (X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0) {
		asn1_time_text(X509_get0_notBefore(cert), tb, sizeof(tb));
		return dp_error_set(DP_ETLS, "tls: certificate '%s' is not valid before %s",
				    fl->cert_file, tb);
	}
	SSL_CTX_get0_chain_certs(ctx, &chain);
	sc = X509_STORE_CTX_new();
	if (sc == NULL)
		return dp_error_set(DP_ENOMEM, "tls: out of memory");
	if (X509_STORE_CTX_init(sc, SSL_CTX_get_cert_store(ctx), cert, chain) != 1) {
		X509_STORE_CTX_free(sc);
		return tls_fail("cannot verify certificate", fl->cert_file);
	}
	X509_STORE_CTX_set_purpose(sc, is_server ? X509_PURPOSE_SSL_SERVER : X509_PURPOSE_SSL_CLIENT);
	ok = X509_verify_cert(sc);
	err = X509_STORE_CTX_get_error(sc);
	X509_STORE_CTX_free(sc);
	ERR_clear_error();
	if (ok != 1)
		return dp_error_set(DP_ETLS, "tls: certificate '%s' does not verify against CA '%s' "
				    "for a %s: %s", fl->cert_file, fl->ca_file,
				    is_server ? "server" : "client", X509_verify_cert_error_string(err));
	if (!has_eku(cert, is_server ? XKU_SSL_SERVER : XKU_SSL_CLIENT))
		return dp_error_set(DP_ETLS, "tls: certificate '%s' has no extendedKeyUsage %s, "
				    "which a %s needs", fl->cert_file,
				    is_server ? "serverAuth" : "clientAuth",
				    is_server ? "server" : "client");
	return 0;
}

int dp_tls_ctx_new(int is_server, const dp_tls_files *fl, SSL_CTX **out)
{
	SSL_CTX *ctx = NULL;
	EVP_PKEY *key = NULL;
	char id[DP_TLS_ID_MAX + 1];
	int r;

	DP_REQUIRE(fl != NULL && out != NULL);
	r = readable("CA", fl->ca_file);
	if (r == 0)
		r = readable("certificate", fl->cert_file);
	if (r == 0)
		r = readable("key", fl->key_file);
	if (r < 0)
		return r;
	ERR_clear_error();
	ctx = SSL_CTX_new(is_server ? TLS_server_method() : TLS_client_method());
	if (ctx == NULL)
		return tls_fail("cannot create context for", fl->cert_file);
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1) {
		r = tls_fail("cannot require TLS 1.3 for", fl->cert_file);
		goto fail;
	}
	/* Only the deployment CA: no SSL_CTX_set_default_verify_paths. */
	if (SSL_CTX_load_verify_file(ctx, fl->ca_file) != 1) {
		r = tls_fail("no usable CA certificate in", fl->ca_file);
		goto fail;
	}
	if (is_server) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(fl->ca_file);

		if (names == NULL) {
			r = tls_fail("no usable CA certificate in", fl->ca_file);
			goto fail;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, fl->cert_file) != 1) {
		r = tls_fail("no usable certificate in", fl->cert_file);
		goto fail;
	}
	key = read_key(fl->key_file);
	if (key == NULL) {
		r = tls_fail("no usable private key in", fl->key_file);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
		char eb[256];

		dp_tls_error_string(NULL, eb, sizeof(eb));
		r = dp_error_set(DP_ETLS, "tls: private key '%s' does not match certificate '%s' (%s)",
				 fl->key_file, fl->cert_file, eb);
		goto fail;
	}
	EVP_PKEY_free(key);
	key = NULL;
	if (fl->crl_file != NULL && *fl->crl_file != '\0') {
		r = load_crls(ctx, fl->crl_file);
		if (r < 0)
			goto fail;
	}
	if (fl->pins != NULL && *fl->pins != '\0') {
		r = set_pins(ctx, fl->pins);
		if (r < 0)
			goto fail;
	}
	r = check_own(ctx, is_server, fl);
	if (r < 0)
		goto fail;
	r = dp_tls_cert_identity(SSL_CTX_get0_certificate(ctx), id, sizeof(id));
	if (r < 0) {
		char d[256];

		snprintf(d, sizeof(d), "%s", dp_error_detail(r));
		r = dp_error_set(DP_ETLS, "tls: certificate '%s': %s", fl->cert_file, d);
		goto fail;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verify_cb);
	SSL_CTX_set_verify_depth(ctx, 4);
	/* Full handshake every time: no tickets, no session cache. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	/* Send only the chain given in cert_file, never the CA from the
	 * verify store: every peer has the deployment CA already. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_NO_AUTO_CHAIN);
	*out = ctx;
	return 0;
fail:
	EVP_PKEY_free(key);
	SSL_CTX_free(ctx);
	ERR_clear_error();
	return r;
}

int dp_tls_client_setup(SSL *ssl, const char *name)
{
	unsigned char tmp[16];

	DP_REQUIRE(ssl != NULL);
	if (name == NULL || *name == '\0')
		return dp_error_set(DP_EINVAL, "tls: no expected server name");
	SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	/* SSL_set1_host treats an IP literal as an IP check (OpenSSL 3). */
	if (SSL_set1_host(ssl, name) != 1) {
		char eb[256];

		return dp_error_set(DP_ETLS, "tls: cannot expect server name '%s': %s", name,
				    dp_tls_error_string(NULL, eb, sizeof(eb)));
	}
	/* SNI carries host names only, never address literals (RFC 6066). */
	if (inet_pton(AF_INET, name, tmp) != 1 && inet_pton(AF_INET6, name, tmp) != 1)
		SSL_set_tlsext_host_name(ssl, name);
	return 0;
}

int dp_tls_cert_identity(X509 *cert, char *out, size_t out_size)
{
	X509_NAME *subj;
	X509_NAME_ENTRY *ent;
	GENERAL_NAMES *san;
	unsigned char *utf8 = NULL;
	int idx, n, ndns = 0, match = 0;

	DP_REQUIRE(out != NULL && out_size > DP_TLS_ID_MAX);
	if (cert == NULL)
		return dp_error_set(DP_ETLS, "no certificate");
	subj = X509_get_subject_name(cert);
	idx = X509_NAME_get_index_by_NID(subj, NID_commonName, -1);
	if (idx < 0)
		return dp_error_set(DP_ETLS, "certificate has no subject CN");
	if (X509_NAME_get_index_by_NID(subj, NID_commonName, idx) >= 0)
		return dp_error_set(DP_ETLS, "certificate has more than one subject CN");
	ent = X509_NAME_get_entry(subj, idx);
	n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(ent));
	if (n <= 0) {
		/* An empty CN still comes back as an allocated "". */
		OPENSSL_free(utf8);
		ERR_clear_error();
		return dp_error_set(DP_ETLS, "certificate CN cannot be decoded");
	}
	if (n > DP_TLS_ID_MAX || (size_t)n >= out_size) {
		OPENSSL_free(utf8);
		return dp_error_set(DP_ETLS, "certificate CN longer than %d bytes", DP_TLS_ID_MAX);
	}
	for (int i = 0; i < n; i++) {
		if (utf8[i] < 0x21 || utf8[i] > 0x7e) {
			OPENSSL_free(utf8);
			return dp_error_set(DP_ETLS, "certificate CN has a character outside "
					    "printable ASCII");
		}
	}
	san = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	for (int i = 0; san != NULL && i < sk_GENERAL_NAME_num(san); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(san, i);
		const ASN1_IA5STRING *s;

		if (g->type != GEN_DNS)
			continue;
		ndns++;
		s = g->d.dNSName;
		if (ASN1_STRING_length(s) == n &&
		    strncasecmp((const char *)ASN1_STRING_get0_data(s), (const char *)utf8,
				(size_t)n) == 0)
			match = 1;
	}
	GENERAL_NAMES_free(san);
	ERR_clear_error();
	if (ndns > 0 && !match) {
		int r = dp_error_set(DP_ETLS, "certificate CN '%.*s' is not among its %d SAN DNS "
				     "names", n, (const char *)utf8, ndns);

		OPENSSL_free(utf8);
		return r;
	}
	memcpy(out, utf8, (size_t)n);
	out[n] = '\0';
	OPENSSL_free(utf8);
	return 0;
}

int dp_tls_peer_identity(SSL *ssl, char *out, size_t out_size)
{
	X509 *peer;
	long v;
	int r;

	DP_REQUIRE(ssl != NULL && out != NULL);
	peer = SSL_get0_peer_certificate(ssl);
	if (peer == NULL)
		return dp_error_set(DP_ETLS, "peer presented no certificate");
	v = SSL_get_verify_result(ssl);
	if (v != X509_V_OK)
		return dp_error_set(DP_ETLS, "peer certificate not verified: %s",
				    X509_verify_cert_error_string(v));
	r = dp_tls_cert_identity(peer, out, out_size);
	if (r < 0) {
		char d[256];

		snprintf(d, sizeof(d), "%s", dp_error_detail(r));
		return dp_error_set(r, "peer %s", d);
	}
	return 0;
}

int dp_tls_check_name(const char *name)
{
	size_t n;

	if (name == NULL || *name == '\0')
		return dp_error_set(DP_EINVAL, "identity is empty");
	n = strlen(name);
	if (n > DP_TLS_ID_MAX)
		return dp_error_set(DP_EINVAL, "identity '%.20s...' longer than %d bytes",
				    name, DP_TLS_ID_MAX);
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		int alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			    (ch >= '0' && ch <= '9');

		if (i == 0 && !alnum)
			return dp_error_set(DP_EINVAL, "identity '%s' must start with a "
					    "letter or digit", name);
		if (!alnum && ch != '.' && ch != '_' && ch != '-')
			return dp_error_set(DP_EINVAL, "identity '%s': character '%c' not "
					    "allowed (use letters, digits, '.', '_', '-')", name, ch);
	}
	return 0;
}
