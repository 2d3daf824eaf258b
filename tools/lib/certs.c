/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/lib/certs.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/net/tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

static int ossl_fail(const char *what)
{
	char eb[256] = "";
	unsigned long e = ERR_get_error();

	if (e != 0)
		ERR_error_string_n(e, eb, sizeof(eb));
	ERR_clear_error();
	return dp_error_set(DP_ETLS, "%s: %s", what, e ? eb : "OpenSSL failure");
}

static int keygen(EVP_PKEY **out)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");

	if (k == NULL)
		return ossl_fail("P-256 key generation");
	*out = k;
	return 0;
}

static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
	int ok;

	if (ext == NULL) {
		char what[96];

		snprintf(what, sizeof(what), "extension %s=%s", OBJ_nid2sn(nid), value);
		return ossl_fail(what);
	}
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	if (ok != 1)
		return ossl_fail("adding an extension");
	return 0;
}

/* An X.509v3 extension as OpenSSL's config text. */
struct ext {
	int nid;
	const char *value;
};

static int add_exts(X509 *x, X509V3_CTX *ctx, const struct ext *e, size_t n)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < n; i++)
		r = add_ext(x, ctx, e[i].nid, e[i].value);
	return r;
}

/* Skeleton shared by CA and leaf: version 3, random positive serial,
 * validity, subject CN, public key. */
static int cert_base(X509 *x, const char *cn, int64_t not_before, int64_t lifetime,
			 EVP_PKEY *key)
{
	unsigned char rnd[16];
	BIGNUM *bn = NULL;
	ASN1_INTEGER *serial;
	X509_NAME *name;
	int64_t end = not_before + lifetime;
	int ok;

	if (X509_set_version(x, X509_VERSION_3) != 1)
		return ossl_fail("certificate version");
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return ossl_fail("random serial");
	rnd[0] &= 0x7f;     /* positive */
	rnd[0] |= 0x40;     /* and non-zero, full length */
	bn = BN_bin2bn(rnd, sizeof(rnd), NULL);
	serial = bn ? BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) : NULL;
	BN_free(bn);
	if (serial == NULL)
		return ossl_fail("random serial");
	if (X509_time_adj_ex(X509_getm_notBefore(x), (int)(not_before / DP_CERTS_DAY),
			     (long)(not_before % DP_CERTS_DAY), NULL) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), (int)(end / DP_CERTS_DAY),
			     (long)(end % DP_CERTS_DAY), NULL) == NULL)
		return ossl_fail("validity dates");
	name = X509_get_subject_name(x);
	ok = X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn,
					-1, -1, 0);
	if (ok != 1)
		return ossl_fail("subject name");
	if (X509_set_pubkey(x, key) != 1)
		return ossl_fail("public key");
	return 0;
}

/* A new key and a certificate for it with these extensions, issued by
 * ca with ca_key, or self-signed when ca is NULL (`what` names it in the
 * signing error).  The steps shared by the CA and the leaves. */
static int issue(const char *cn, int64_t not_before, int64_t lifetime, X509 *ca,
		 EVP_PKEY *ca_key, const struct ext *exts, size_t n_exts, const char *what,
		 EVP_PKEY **key_out, X509 **cert_out)
{
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	X509V3_CTX v3;
	int r;

	ERR_clear_error();
	r = keygen(&key);
	if (r < 0)
		return r;
	x = X509_new();
	if (x == NULL) {
		r = ossl_fail("new certificate");
		goto fail;
	}
	r = cert_base(x, cn, not_before, lifetime, key);
	if (r < 0)
		goto fail;
	if (ca == NULL) {
		ca = x;
		ca_key = key;
	}
	if (X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1) {
		r = ossl_fail("issuer name");
		goto fail;
	}
	X509V3_set_ctx(&v3, ca, x, NULL, NULL, 0);
	r = add_exts(x, &v3, exts, n_exts);
	if (r < 0)
		goto fail;
	if (X509_sign(x, ca_key, EVP_sha256()) <= 0) {
		r = ossl_fail(what);
		goto fail;
	}
	*key_out = key;
	*cert_out = x;
	return 0;
fail:
	X509_free(x);
	EVP_PKEY_free(key);
	return r;
}

int dp_certs_make_ca(const char *cn, int64_t not_before, int64_t lifetime,
		     EVP_PKEY **key_out, X509 **cert_out)
{
	const struct ext exts[] = {
		{ NID_basic_constraints, "critical,CA:TRUE,pathlen:0" },
		{ NID_key_usage, "critical,keyCertSign,cRLSign" },
		{ NID_subject_key_identifier, "hash" },
		{ NID_authority_key_identifier, "keyid:always" },
	};

	DP_REQUIRE(key_out != NULL && cert_out != NULL);
	if (cn == NULL || *cn == '\0' || strlen(cn) > DP_CERTS_NAME_MAX)
		return dp_error_set(DP_EINVAL, "CA name must have 1..%d bytes",
				    DP_CERTS_NAME_MAX);
	if (lifetime <= 0)
		return dp_error_set(DP_EINVAL, "CA lifetime must be positive");
	return issue(cn, not_before, lifetime, NULL, NULL, exts, sizeof(exts) / sizeof(exts[0]),
		     "signing the CA certificate", key_out, cert_out);
}

int dp_certs_make_leaf(const dp_cert_spec *s, X509 *ca, EVP_PKEY *ca_key,
		       EVP_PKEY **key_out, X509 **cert_out)
{
	char *san = NULL;
	size_t san_len, off;
	unsigned eku;
	int r;

	DP_REQUIRE(s != NULL && ca != NULL && ca_key != NULL && key_out != NULL &&
		   cert_out != NULL);
	eku = s->eku ? s->eku : (DP_CERT_EKU_SERVER | DP_CERT_EKU_CLIENT);
	r = dp_tls_check_name(s->cn);
	for (size_t i = 0; r == 0 && i < s->n_dns; i++)
		r = dp_tls_check_name(s->dns[i]);
	if (r < 0)
		return r;
	san_len = 5 + strlen(s->cn) + 1;
	for (size_t i = 0; i < s->n_dns; i++)
		san_len += 5 + strlen(s->dns[i]);
	for (size_t i = 0; i < s->n_ips; i++) {
		unsigned char tmp[16];

		if (s->ips[i] == NULL || (inet_pton(AF_INET, s->ips[i], tmp) != 1 &&
					  inet_pton(AF_INET6, s->ips[i], tmp) != 1))
			return dp_error_set(DP_EINVAL, "'%s' is not an IP address",
					    s->ips[i] ? s->ips[i] : "");
		san_len += 4 + strlen(s->ips[i]);
	}
	if (s->lifetime <= 0)
		return dp_error_set(DP_EINVAL, "lifetime must be positive");
	if (X509_check_private_key(ca, ca_key) != 1) {
		ERR_clear_error();
		return dp_error_set(DP_EINVAL, "the CA key does not match the CA certificate");
	}
	san = malloc(san_len);
	if (san == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	off = (size_t)snprintf(san, san_len, "DNS:%s", s->cn);
	for (size_t i = 0; i < s->n_dns; i++)
		off += (size_t)snprintf(san + off, san_len - off, ",DNS:%s", s->dns[i]);
	for (size_t i = 0; i < s->n_ips; i++)
		off += (size_t)snprintf(san + off, san_len - off, ",IP:%s", s->ips[i]);
	{
		const struct ext exts[] = {
			{ NID_basic_constraints, "critical,CA:FALSE" },
			{ NID_key_usage, "critical,digitalSignature" },
			{ NID_ext_key_usage, eku == DP_CERT_EKU_SERVER ? "serverAuth" :
					     eku == DP_CERT_EKU_CLIENT ? "clientAuth" :
					     "serverAuth,clientAuth" },
			{ NID_subject_alt_name, san },
			{ NID_subject_key_identifier, "hash" },
			{ NID_authority_key_identifier, "keyid:always" },
		};

		r = issue(s->cn, s->not_before, s->lifetime, ca, ca_key, exts,
			  sizeof(exts) / sizeof(exts[0]), "signing the certificate", key_out,
			  cert_out);
	}
	free(san);
	return r;
}

/* ---- files ---------------------------------------------------------------- */

/* Write data to path atomically (common/core/file.h): with force over an
 * existing file; without it never replacing one, not even one that appears
 * meanwhile (dp_file_create_atomic links, where a rename would replace). */
static int write_file(const char *path, const char *data, size_t len, mode_t mode, int force)
{
	char detail[512];
	int rc;

	if (force)
		return dp_file_write_atomic(path, data, len, (int)mode);
	rc = dp_file_create_atomic(path, data, len, (int)mode);
	if (rc == DP_EEXIST)
		return dp_error_set(DP_EEXIST, "'%s' already exists (use --force to replace it)",
				    path);
	if (rc == DP_ENOENT) {
		/* A missing directory: for the caller, a write that failed. */
		snprintf(detail, sizeof(detail), "%s", dp_error_detail(rc));
		return dp_error_set(DP_EIO, "%s", detail);
	}
	return rc;
}

static int pem_key(EVP_PKEY *key, BIO **out)
{
	BIO *b = BIO_new(BIO_s_mem());

	if (b == NULL || PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1) {
		BIO_free(b);
		return ossl_fail("encoding the private key");
	}
	*out = b;
	return 0;
}

static int pem_cert(X509 *cert, BIO **out)
{
	BIO *b = BIO_new(BIO_s_mem());

	if (b == NULL || PEM_write_bio_X509(b, cert) != 1) {
		BIO_free(b);
		return ossl_fail("encoding the certificate");
	}
	*out = b;
	return 0;
}

/* Free a memory BIO after wiping its contents (it may hold a key). */
static void bio_wipe_free(BIO *b)
{
	BUF_MEM *bm = NULL;

	if (b == NULL)
		return;
	BIO_get_mem_ptr(b, &bm);
	if (bm != NULL && bm->data != NULL)
		OPENSSL_cleanse(bm->data, bm->max);
	BIO_free(b);
}

static int file_path(char *out, size_t size, const char *dir, const char *base, const char *ext)
{
	if ((size_t)snprintf(out, size, "%s/%s.%s", dir, base, ext) >= size)
		return dp_error_set(DP_EINVAL, "path too long: %s/%s.%s", dir, base, ext);
	return 0;
}

int dp_certs_write(const char *dir, const char *base, EVP_PKEY *key, X509 *cert, int force)
{
	char kpath[4096], cpath[4096];
	BIO *kb = NULL, *cb = NULL;
	BUF_MEM *bm;
	int r;

	DP_REQUIRE(cert != NULL);
	if (dir == NULL || *dir == '\0' || base == NULL || *base == '\0' || strchr(base, '/'))
		return dp_error_set(DP_EINVAL, "bad output directory or name");
	r = file_path(kpath, sizeof(kpath), dir, base, "key");
	if (r == 0)
		r = file_path(cpath, sizeof(cpath), dir, base, "crt");
	if (r < 0)
		return r;
	ERR_clear_error();
	r = pem_cert(cert, &cb);
	if (r < 0)
		return r;
	if (!force && access(cpath, F_OK) == 0) {
		BIO_free(cb);
		return dp_error_set(DP_EEXIST, "'%s' already exists (use --force to replace it)",
				    cpath);
	}
	if (key != NULL) {
		r = pem_key(key, &kb);
		if (r < 0)
			goto out;
		BIO_get_mem_ptr(kb, &bm);
		r = write_file(kpath, bm->data, bm->length, 0600, force);
		if (r < 0)
			goto out;
	}
	BIO_get_mem_ptr(cb, &bm);
	r = write_file(cpath, bm->data, bm->length, 0644, force);
	if (r < 0 && key != NULL && !force)
		unlink(kpath);  /* we created it just now */
out:
	bio_wipe_free(kb);
	BIO_free(cb);
	return r;
}

int dp_certs_load_ca(const char *cert_file, const char *key_file, X509 **cert_out,
		     EVP_PKEY **key_out)
{
	FILE *f;
	X509 *x;
	EVP_PKEY *k;

	DP_REQUIRE(cert_file != NULL && key_file != NULL && cert_out != NULL && key_out != NULL);
	f = fopen(cert_file, "r");
	if (f == NULL)
		return dp_error_set(DP_ETLS, "cannot read CA certificate '%s': %s", cert_file,
				    strerror(errno));
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (x == NULL) {
		ERR_clear_error();
		return dp_error_set(DP_ETLS, "'%s' holds no PEM certificate", cert_file);
	}
	if (X509_check_ca(x) != 1) {
		X509_free(x);
		return dp_error_set(DP_ETLS, "'%s' is not a CA certificate", cert_file);
	}
	f = fopen(key_file, "r");
	if (f == NULL) {
		int e = errno;

		X509_free(x);
		return dp_error_set(DP_ETLS, "cannot read CA key '%s': %s", key_file,
				    strerror(e));
	}
	k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (k == NULL) {
		X509_free(x);
		ERR_clear_error();
		return dp_error_set(DP_ETLS, "'%s' holds no PEM private key", key_file);
	}
	if (X509_check_private_key(x, k) != 1) {
		X509_free(x);
		EVP_PKEY_free(k);
		ERR_clear_error();
		return dp_error_set(DP_ETLS, "key '%s' does not match CA certificate '%s'",
				    key_file, cert_file);
	}
	*cert_out = x;
	*key_out = k;
	return 0;
}

/* ---- the whole job ------------------------------------------------------- */

/* The output directory, 0700 when new; it must end up a directory. */
static int make_out_dir(const char *dir)
{
	struct stat st;
	int r = dp_file_mkdir_p(dir, 1);

	if (r < 0)
		return r;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return dp_error_set(DP_EIO, "'%s' is not a directory", dir);
	return 0;
}

static int exists_check(const char *dir, const char *base, int with_key)
{
	static const char *const exts[] = { "crt", "key" };
	char path[4096];

	for (int i = 0; i < (with_key ? 2 : 1); i++) {
		int r = file_path(path, sizeof(path), dir, base, exts[i]);

		if (r < 0)
			return r;
		if (access(path, F_OK) == 0)
			return dp_error_set(-EEXIST, "'%s' already exists (use --force to "
					    "replace it)", path);
	}
	return 0;
}

static void told(const dp_certs_opts *o, const char *base, int with_key)
{
	char path[4096];

	if (o->on_file == NULL)
		return;
	if (with_key && file_path(path, sizeof(path), o->out_dir, base, "key") == 0)
		o->on_file(path, o->arg);
	if (file_path(path, sizeof(path), o->out_dir, base, "crt") == 0)
		o->on_file(path, o->arg);
}

/* With a reused CA: 1 if out_dir/ca.crt is already this CA, 0 if absent. */
static int ca_present(const char *dir, X509 *ca, int force)
{
	char path[4096];
	X509 *have;
	FILE *f;
	int same, r;

	r = file_path(path, sizeof(path), dir, "ca", "crt");
	if (r < 0)
		return r;
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	have = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	ERR_clear_error();
	same = have != NULL && X509_cmp(have, ca) == 0;
	X509_free(have);
	if (same)
		return 1;
	if (force)
		return 0;
	return dp_error_set(-EEXIST, "'%s' is a different CA certificate (use --force to "
			    "replace it)", path);
}

/* An owner's name must not be one a client could mistake for the learner:
 * the learner's name (server names match without regard to case, and with
 * a reused CA the learner's is "learner" unless --learner-name says
 * otherwise), localhost, or an address literal (docs/protocol.md §2). */
static int owner_name_ok(const char *a, const char *learner)
{
	struct in_addr v4;
	int r = dp_tls_check_name(a);

	if (r < 0)
		return r;
	if (strcmp(a, "ca") == 0)
		return dp_error_set(DP_EINVAL, "'ca' is reserved for the CA files");
	if (strcasecmp(a, learner) == 0)
		return dp_error_set(DP_EINVAL, "owner name '%s' is the learner's name: an owner "
				    "certificate must never pass for the learner", a);
	if (strcasecmp(a, "localhost") == 0)
		return dp_error_set(DP_EINVAL, "owner name '%s' is refused: it names the local "
				    "host, not an owner", a);
	/* inet_aton also takes the short forms ("127.1", "0x7f.1"). */
	if (inet_aton(a, &v4) != 0)
		return dp_error_set(DP_EINVAL, "owner name '%s' is an IP address literal; give "
				    "owners names", a);
	return 0;
}

int dp_certs_deploy(const dp_certs_opts *o)
{
	const char *learner = o->learner_name ? o->learner_name : "learner";
	int reuse = o->ca_cert_file != NULL || o->ca_key_file != NULL;
	int with_learner = !reuse || o->with_learner;
	int64_t leaf_life = (int64_t)(o->days ? o->days : 365) * DP_CERTS_DAY;
	int64_t ca_life = (int64_t)(o->ca_days ? o->ca_days : 3650) * DP_CERTS_DAY;
	static const char *const local_dns[] = { "localhost" };
	static const char *const local_ip[] = { "127.0.0.1", "::1" };
	EVP_PKEY *ca_key = NULL, *key = NULL;
	X509 *ca = NULL, *cert = NULL;
	int r = 0, ca_have = 0;

	DP_REQUIRE(o != NULL && (o->owners != NULL || o->n_owners == 0));
	if (o->out_dir == NULL || *o->out_dir == '\0')
		return dp_error_set(DP_EINVAL, "no output directory");
	if (reuse && (o->ca_cert_file == NULL || o->ca_key_file == NULL))
		return dp_error_set(DP_EINVAL, "an existing CA needs both its certificate "
				    "and its key");
	if (!with_learner && o->n_owners == 0)
		return dp_error_set(DP_EINVAL, "nothing to make (no owners, no learner)");
	if (with_learner)
		r = dp_tls_check_name(learner);
	if (r < 0)
		return r;
	for (size_t i = 0; i < o->n_owners; i++) {
		const char *a = o->owners[i];

		r = owner_name_ok(a, learner);
		if (r < 0)
			return r;
		for (size_t j = 0; j < i; j++)
			if (strcmp(a, o->owners[j]) == 0)
				return dp_error_set(DP_EINVAL, "owner name '%s' given twice", a);
	}
	if (with_learner && strcmp(learner, "ca") == 0)
		return dp_error_set(DP_EINVAL, "'ca' is reserved for the CA files");
	r = make_out_dir(o->out_dir);
	if (r < 0)
		return r;
	if (reuse) {
		r = dp_certs_load_ca(o->ca_cert_file, o->ca_key_file, &ca, &ca_key);
		if (r < 0)
			return r;
		r = ca_present(o->out_dir, ca, o->force);
		if (r < 0)
			goto out;
		ca_have = r;
		r = 0;
	}
	if (!o->force) {
		if (!reuse)
			r = exists_check(o->out_dir, "ca", 1);
		if (r == 0 && with_learner)
			r = exists_check(o->out_dir, learner, 1);
		for (size_t i = 0; r == 0 && i < o->n_owners; i++)
			r = exists_check(o->out_dir, o->owners[i], 1);
		if (r < 0)
			goto out;
	}
	if (!reuse) {
		r = dp_certs_make_ca("dpasync deployment CA", -DP_CERTS_BACKDATE, ca_life, &ca_key,
				     &ca);
		if (r == 0)
			r = dp_certs_write(o->out_dir, "ca", ca_key, ca, o->force);
		if (r < 0)
			goto out;
		told(o, "ca", 1);
	} else if (!ca_have) {
		r = dp_certs_write(o->out_dir, "ca", NULL, ca, o->force);
		if (r < 0)
			goto out;
		told(o, "ca", 0);
	}
	if (with_learner) {
		dp_cert_spec s = {
			.cn = learner, .dns = local_dns, .n_dns = 1, .ips = local_ip, .n_ips = 2,
			.eku = DP_CERT_EKU_SERVER,
			.not_before = -DP_CERTS_BACKDATE, .lifetime = leaf_life,
		};

		if (strcmp(learner, "localhost") == 0)
			s.n_dns = 0;
		r = dp_certs_make_leaf(&s, ca, ca_key, &key, &cert);
		if (r == 0)
			r = dp_certs_write(o->out_dir, learner, key, cert, o->force);
		if (r < 0)
			goto out;
		told(o, learner, 1);
		EVP_PKEY_free(key);
		X509_free(cert);
		key = NULL;
		cert = NULL;
	}
	for (size_t i = 0; i < o->n_owners; i++) {
		/* clientAuth only: an owner's certificate can never serve as the
		 * learner's (docs/protocol.md §2).  A peer-mode agent serves its
		 * neighbours too (docs/peer-agents.md "Certificates"). */
		dp_cert_spec s = {
			.cn = o->owners[i], .eku = o->peer ? 0 : DP_CERT_EKU_CLIENT,
			.not_before = -DP_CERTS_BACKDATE, .lifetime = leaf_life,
		};

		r = dp_certs_make_leaf(&s, ca, ca_key, &key, &cert);
		if (r == 0)
			r = dp_certs_write(o->out_dir, o->owners[i], key, cert, o->force);
		if (r < 0)
			goto out;
		told(o, o->owners[i], 1);
		EVP_PKEY_free(key);
		X509_free(cert);
		key = NULL;
		cert = NULL;
	}
	r = 0;
out:
	EVP_PKEY_free(key);
	X509_free(cert);
	EVP_PKEY_free(ca_key);
	X509_free(ca);
	return r;
}
