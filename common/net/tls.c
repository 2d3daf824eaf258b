#include "common/net/tls.h"
#include "common/core/error.h"
#include "common/core/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

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
			snprintf(buf + off, size - off, "%scertificate verify: %s",
				 off ? "; " : "", X509_verify_cert_error_string(v));
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
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
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
