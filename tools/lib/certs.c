#include "tools/lib/certs.h"
#include "common/core/error.h"
#include "common/net/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

static int dp__ossl_fail(const char *what)
{
	char eb[256] = "";
	unsigned long e = ERR_get_error();

	if (e != 0)
		ERR_error_string_n(e, eb, sizeof(eb));
	ERR_clear_error();
	return dp_error_set(DP_ETLS, "%s: %s", what, e ? eb : "OpenSSL failure");
}

static int dp__keygen(EVP_PKEY **out)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");

	if (k == NULL)
		return dp__ossl_fail("P-256 key generation");
	*out = k;
	return 0;
}

static int dp__add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
	int ok;

	if (ext == NULL) {
		char what[96];

		snprintf(what, sizeof(what), "extension %s=%s", OBJ_nid2sn(nid), value);
		return dp__ossl_fail(what);
	}
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	if (ok != 1)
		return dp__ossl_fail("adding an extension");
	return 0;
}

/* Skeleton shared by CA and leaf: version 3, random positive serial,
 * validity, subject CN, public key. */
static int dp__cert_base(X509 *x, const char *cn, int64_t not_before, int64_t lifetime,
			 EVP_PKEY *key)
{
	unsigned char rnd[16];
	BIGNUM *bn = NULL;
	ASN1_INTEGER *serial;
	X509_NAME *name;
	int64_t end = not_before + lifetime;
	int ok;

	if (X509_set_version(x, X509_VERSION_3) != 1)
		return dp__ossl_fail("certificate version");
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return dp__ossl_fail("random serial");
	rnd[0] &= 0x7f;     /* positive */
	rnd[0] |= 0x40;     /* and non-zero, full length */
	bn = BN_bin2bn(rnd, sizeof(rnd), NULL);
	serial = bn ? BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) : NULL;
	BN_free(bn);
	if (serial == NULL)
		return dp__ossl_fail("random serial");
	if (X509_time_adj_ex(X509_getm_notBefore(x), (int)(not_before / DP_CERTS_DAY),
			     (long)(not_before % DP_CERTS_DAY), NULL) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), (int)(end / DP_CERTS_DAY),
			     (long)(end % DP_CERTS_DAY), NULL) == NULL)
		return dp__ossl_fail("validity dates");
	name = X509_get_subject_name(x);
	ok = X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn,
					-1, -1, 0);
	if (ok != 1)
		return dp__ossl_fail("subject name");
	if (X509_set_pubkey(x, key) != 1)
		return dp__ossl_fail("public key");
	return 0;
}

int dp_certs_make_ca(const char *cn, int64_t not_before, int64_t lifetime,
		     EVP_PKEY **key_out, X509 **cert_out)
{
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	X509V3_CTX v3;
	int r;

	if (cn == NULL || *cn == '\0' || strlen(cn) > DP_CERTS_NAME_MAX)
		return dp_error_set(DP_EINVAL, "CA name must have 1..%d bytes",
				    DP_CERTS_NAME_MAX);
	if (lifetime <= 0)
		return dp_error_set(DP_EINVAL, "CA lifetime must be positive");
	ERR_clear_error();
	if ((r = dp__keygen(&key)) < 0)
		return r;
	x = X509_new();
	if (x == NULL) {
		r = dp__ossl_fail("new certificate");
		goto fail;
	}
	if ((r = dp__cert_base(x, cn, not_before, lifetime, key)) < 0)
		goto fail;
	if (X509_set_issuer_name(x, X509_get_subject_name(x)) != 1) {
		r = dp__ossl_fail("issuer name");
		goto fail;
	}
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	if ((r = dp__add_ext(x, &v3, NID_basic_constraints, "critical,CA:TRUE,pathlen:0")) < 0 ||
	    (r = dp__add_ext(x, &v3, NID_key_usage, "critical,keyCertSign,cRLSign")) < 0 ||
	    (r = dp__add_ext(x, &v3, NID_subject_key_identifier, "hash")) < 0 ||
	    (r = dp__add_ext(x, &v3, NID_authority_key_identifier, "keyid:always")) < 0)
		goto fail;
	if (X509_sign(x, key, EVP_sha256()) <= 0) {
		r = dp__ossl_fail("signing the CA certificate");
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

int dp_certs_make_leaf(const dp_cert_spec *s, X509 *ca, EVP_PKEY *ca_key,
		       EVP_PKEY **key_out, X509 **cert_out)
{
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	X509V3_CTX v3;
	char *san = NULL;
	size_t san_len, off;
	unsigned eku = s->eku ? s->eku : (DP_CERT_EKU_SERVER | DP_CERT_EKU_CLIENT);
	int r;

	if ((r = dp_tls_check_name(s->cn)) < 0)
		return r;
	for (size_t i = 0; i < s->n_dns; i++)
		if ((r = dp_tls_check_name(s->dns[i])) < 0)
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

	ERR_clear_error();
	if ((r = dp__keygen(&key)) < 0)
		goto fail;
	x = X509_new();
	if (x == NULL) {
		r = dp__ossl_fail("new certificate");
		goto fail;
	}
	if ((r = dp__cert_base(x, s->cn, s->not_before, s->lifetime, key)) < 0)
		goto fail;
	if (X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1) {
		r = dp__ossl_fail("issuer name");
		goto fail;
	}
	X509V3_set_ctx(&v3, ca, x, NULL, NULL, 0);
	if ((r = dp__add_ext(x, &v3, NID_basic_constraints, "critical,CA:FALSE")) < 0 ||
	    (r = dp__add_ext(x, &v3, NID_key_usage, "critical,digitalSignature")) < 0 ||
	    (r = dp__add_ext(x, &v3, NID_ext_key_usage,
			     eku == DP_CERT_EKU_SERVER ? "serverAuth" :
			     eku == DP_CERT_EKU_CLIENT ? "clientAuth" : "serverAuth,clientAuth")) < 0 ||
	    (r = dp__add_ext(x, &v3, NID_subject_alt_name, san)) < 0 ||
	    (r = dp__add_ext(x, &v3, NID_subject_key_identifier, "hash")) < 0 ||
	    (r = dp__add_ext(x, &v3, NID_authority_key_identifier, "keyid:always")) < 0)
		goto fail;
	if (X509_sign(x, ca_key, EVP_sha256()) <= 0) {
		r = dp__ossl_fail("signing the certificate");
		goto fail;
	}
	free(san);
	*key_out = key;
	*cert_out = x;
	return 0;
fail:
	free(san);
	X509_free(x);
	EVP_PKEY_free(key);
	return r;
}

/* ---- files ---------------------------------------------------------------- */

static int dp__fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return dp_error_set(DP_EIO, "open directory '%s': %s", dir, strerror(errno));
	if (fsync(fd) != 0 && errno != EINVAL) {
		int e = errno;

		close(fd);
		return dp_error_set(DP_EIO, "sync directory '%s': %s", dir, strerror(e));
	}
	close(fd);
	return 0;
}

/* Write data to path through a temporary file in the same directory.
 * Without force the final step is link(2), which fails if path exists,
 * so a file that appeared meanwhile is never replaced. */
static int dp__write_file(const char *dir, const char *path, const char *data, size_t len,
			  mode_t mode, int force)
{
	char tmp[4096];
	int fd, e;
	size_t off = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= sizeof(tmp))
		return dp_error_set(DP_EINVAL, "path too long: %s", path);
	fd = mkstemp(tmp);      /* created 0600 */
	if (fd < 0)
		return dp_error_set(DP_EIO, "create '%s': %s", tmp, strerror(errno));
	if (fchmod(fd, mode) != 0)
		goto io_fail;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto io_fail;
		off += (size_t)n;
	}
	if (fsync(fd) != 0)
		goto io_fail;
	if (close(fd) != 0) {
		fd = -1;
		goto io_fail;
	}
	fd = -1;
	if (force) {
		if (rename(tmp, path) != 0)
			goto io_fail;
	} else {
		if (link(tmp, path) != 0) {
			e = errno;
			unlink(tmp);
			if (e == EEXIST)
				return dp_error_set(-EEXIST, "'%s' already exists "
						    "(use --force to replace it)", path);
			return dp_error_set(DP_EIO, "create '%s': %s", path, strerror(e));
		}
		unlink(tmp);
	}
	return dp__fsync_dir(dir);
io_fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return dp_error_set(DP_EIO, "write '%s': %s", path, strerror(e));
}

static int dp__pem_key(EVP_PKEY *key, BIO **out)
{
	BIO *b = BIO_new(BIO_s_mem());

	if (b == NULL || PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1) {
		BIO_free(b);
		return dp__ossl_fail("encoding the private key");
	}
	*out = b;
	return 0;
}

static int dp__pem_cert(X509 *cert, BIO **out)
{
	BIO *b = BIO_new(BIO_s_mem());

	if (b == NULL || PEM_write_bio_X509(b, cert) != 1) {
		BIO_free(b);
		return dp__ossl_fail("encoding the certificate");
	}
	*out = b;
	return 0;
}

/* Free a memory BIO after wiping its contents (it may hold a key). */
static void dp__bio_wipe_free(BIO *b)
{
	BUF_MEM *bm = NULL;

	if (b == NULL)
		return;
	BIO_get_mem_ptr(b, &bm);
	if (bm != NULL && bm->data != NULL)
		OPENSSL_cleanse(bm->data, bm->max);
	BIO_free(b);
}

static int dp__path(char *out, size_t size, const char *dir, const char *base, const char *ext)
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

	if (dir == NULL || *dir == '\0' || base == NULL || *base == '\0' || strchr(base, '/'))
		return dp_error_set(DP_EINVAL, "bad output directory or name");
	if ((r = dp__path(kpath, sizeof(kpath), dir, base, "key")) < 0 ||
	    (r = dp__path(cpath, sizeof(cpath), dir, base, "crt")) < 0)
		return r;
	ERR_clear_error();
	if ((r = dp__pem_cert(cert, &cb)) < 0)
		return r;
	if (!force && access(cpath, F_OK) == 0) {
		BIO_free(cb);
		return dp_error_set(-EEXIST, "'%s' already exists (use --force to replace it)",
				    cpath);
	}
	if (key != NULL) {
		if ((r = dp__pem_key(key, &kb)) < 0)
			goto out;
		BIO_get_mem_ptr(kb, &bm);
		r = dp__write_file(dir, kpath, bm->data, bm->length, 0600, force);
		if (r < 0)
			goto out;
	}
	BIO_get_mem_ptr(cb, &bm);
	r = dp__write_file(dir, cpath, bm->data, bm->length, 0644, force);
	if (r < 0 && key != NULL && !force)
		unlink(kpath);  /* we created it just now */
out:
	dp__bio_wipe_free(kb);
	BIO_free(cb);
	return r;
}

int dp_certs_load_ca(const char *cert_file, const char *key_file, X509 **cert_out,
		     EVP_PKEY **key_out)
{
	FILE *f;
	X509 *x;
	EVP_PKEY *k;

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

static int dp__mkdir_p(const char *dir)
{
	char buf[4096];
	size_t n = strlen(dir);
	struct stat st;

	if (n == 0 || n >= sizeof(buf))
		return dp_error_set(DP_EINVAL, "bad output directory");
	memcpy(buf, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0700) != 0 && errno != EEXIST)
			return dp_error_set(DP_EIO, "create directory '%s': %s", buf,
					    strerror(errno));
		buf[i] = dir[i];
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return dp_error_set(DP_EIO, "'%s' is not a directory", dir);
	return 0;
}

static int dp__exists_check(const char *dir, const char *base, int with_key)
{
	char path[4096];
	int r;

	if ((r = dp__path(path, sizeof(path), dir, base, "crt")) < 0)
		return r;
	if (access(path, F_OK) == 0)
		return dp_error_set(-EEXIST, "'%s' already exists (use --force to replace "
				    "it)", path);
	if (!with_key)
		return 0;
	if ((r = dp__path(path, sizeof(path), dir, base, "key")) < 0)
		return r;
	if (access(path, F_OK) == 0)
		return dp_error_set(-EEXIST, "'%s' already exists (use --force to replace "
				    "it)", path);
	return 0;
}

static void dp__told(const dp_certs_opts *o, const char *base, int with_key)
{
	char path[4096];

	if (o->on_file == NULL)
		return;
	if (with_key && dp__path(path, sizeof(path), o->out_dir, base, "key") == 0)
		o->on_file(path, o->arg);
	if (dp__path(path, sizeof(path), o->out_dir, base, "crt") == 0)
		o->on_file(path, o->arg);
}

/* With a reused CA: 1 if out_dir/ca.crt is already this CA, 0 if absent. */
static int dp__ca_present(const char *dir, X509 *ca, int force)
{
	char path[4096];
	X509 *have;
	FILE *f;
	int same, r;

	if ((r = dp__path(path, sizeof(path), dir, "ca", "crt")) < 0)
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
	int r, ca_have = 0;

	if (o->out_dir == NULL || *o->out_dir == '\0')
		return dp_error_set(DP_EINVAL, "no output directory");
	if (reuse && (o->ca_cert_file == NULL || o->ca_key_file == NULL))
		return dp_error_set(DP_EINVAL, "an existing CA needs both its certificate "
				    "and its key");
	if (!with_learner && o->n_owners == 0)
		return dp_error_set(DP_EINVAL, "nothing to make (no owners, no learner)");
	if (with_learner && (r = dp_tls_check_name(learner)) < 0)
		return r;
	for (size_t i = 0; i < o->n_owners; i++) {
		const char *a = o->owners[i];

		if ((r = dp_tls_check_name(a)) < 0)
			return r;
		if (strcmp(a, "ca") == 0)
			return dp_error_set(DP_EINVAL, "'ca' is reserved for the CA files");
		if (with_learner && strcmp(a, learner) == 0)
			return dp_error_set(DP_EINVAL, "owner '%s' has the learner's name", a);
		for (size_t j = 0; j < i; j++)
			if (strcmp(a, o->owners[j]) == 0)
				return dp_error_set(DP_EINVAL, "owner name '%s' given twice", a);
	}
	if (with_learner && strcmp(learner, "ca") == 0)
		return dp_error_set(DP_EINVAL, "'ca' is reserved for the CA files");
	if ((r = dp__mkdir_p(o->out_dir)) < 0)
		return r;
	if (reuse) {
		if ((r = dp_certs_load_ca(o->ca_cert_file, o->ca_key_file, &ca, &ca_key)) < 0)
			return r;
		if ((r = dp__ca_present(o->out_dir, ca, o->force)) < 0)
			goto out;
		ca_have = r;
	}
	if (!o->force) {
		if (!reuse && (r = dp__exists_check(o->out_dir, "ca", 1)) < 0)
			goto out;
		if (with_learner && (r = dp__exists_check(o->out_dir, learner, 1)) < 0)
			goto out;
		for (size_t i = 0; i < o->n_owners; i++)
			if ((r = dp__exists_check(o->out_dir, o->owners[i], 1)) < 0)
				goto out;
	}
	if (!reuse) {
		if ((r = dp_certs_make_ca("dpasync deployment CA", -DP_CERTS_BACKDATE, ca_life,
					  &ca_key, &ca)) < 0 ||
		    (r = dp_certs_write(o->out_dir, "ca", ca_key, ca, o->force)) < 0)
			goto out;
		dp__told(o, "ca", 1);
	} else if (!ca_have) {
		if ((r = dp_certs_write(o->out_dir, "ca", NULL, ca, o->force)) < 0)
			goto out;
		dp__told(o, "ca", 0);
	}
	if (with_learner) {
		dp_cert_spec s = {
			.cn = learner, .dns = local_dns, .n_dns = 1, .ips = local_ip, .n_ips = 2,
			.eku = DP_CERT_EKU_SERVER | DP_CERT_EKU_CLIENT,
			.not_before = -DP_CERTS_BACKDATE, .lifetime = leaf_life,
		};

		if (strcmp(learner, "localhost") == 0)
			s.n_dns = 0;
		if ((r = dp_certs_make_leaf(&s, ca, ca_key, &key, &cert)) < 0 ||
		    (r = dp_certs_write(o->out_dir, learner, key, cert, o->force)) < 0)
			goto out;
		dp__told(o, learner, 1);
		EVP_PKEY_free(key);
		X509_free(cert);
		key = NULL;
		cert = NULL;
	}
	for (size_t i = 0; i < o->n_owners; i++) {
		/* Owners also serve (peer mode): serverAuth as well as clientAuth. */
		dp_cert_spec s = {
			.cn = o->owners[i], .eku = DP_CERT_EKU_SERVER | DP_CERT_EKU_CLIENT,
			.not_before = -DP_CERTS_BACKDATE, .lifetime = leaf_life,
		};

		if ((r = dp_certs_make_leaf(&s, ca, ca_key, &key, &cert)) < 0 ||
		    (r = dp_certs_write(o->out_dir, o->owners[i], key, cert, o->force)) < 0)
			goto out;
		dp__told(o, o->owners[i], 1);
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
