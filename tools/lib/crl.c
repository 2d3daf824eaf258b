/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/lib/crl.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "tools/lib/certs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

static int ossl_fail(const char *what, const char *path)
{
	char eb[256] = "";
	unsigned long e = ERR_get_error();

	if (e != 0)
		ERR_error_string_n(e, eb, sizeof(eb));
	ERR_clear_error();
	return dp_error_set(DP_ETLS, "%s%s%s: %s", what, path ? " " : "", path ? path : "",
			    e ? eb : "OpenSSL failure");
}

static int read_cert(const char *path, X509 **out)
{
	FILE *f = fopen(path, "r");
	X509 *x;

	if (f == NULL)
		return dp_error_set(DP_ETLS, "cannot read certificate '%s': %s", path,
				    strerror(errno));
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	ERR_clear_error();
	if (x == NULL)
		return dp_error_set(DP_ETLS, "'%s' holds no PEM certificate", path);
	*out = x;
	return 0;
}

/* The previous list: absent is fine (*out stays NULL); present, it must be
 * a CRL this CA signed, or the new one would silently drop its entries. */
static int read_old(const char *path, X509 *ca, X509_CRL **out)
{
	FILE *f = fopen(path, "r");
	X509_CRL *crl;

	if (f == NULL) {
		if (errno == ENOENT)
			return 0;
		return dp_error_set(DP_ETLS, "cannot read CRL '%s': %s", path, strerror(errno));
	}
	crl = PEM_read_X509_CRL(f, NULL, NULL, NULL);
	fclose(f);
	ERR_clear_error();
	if (crl == NULL)
		return dp_error_set(DP_ETLS, "'%s' exists but holds no PEM CRL", path);
	if (X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(ca)) != 0 ||
	    X509_CRL_verify(crl, X509_get0_pubkey(ca)) != 1) {
		X509_CRL_free(crl);
		ERR_clear_error();
		return dp_error_set(DP_ETLS, "'%s' is not a CRL of this CA", path);
	}
	*out = crl;
	return 0;
}

static int listed(X509_CRL *crl, const ASN1_INTEGER *serial)
{
	STACK_OF(X509_REVOKED) *rv = X509_CRL_get_REVOKED(crl);

	for (int i = 0; i < sk_X509_REVOKED_num(rv); i++)
		if (ASN1_INTEGER_cmp(X509_REVOKED_get0_serialNumber(sk_X509_REVOKED_value(rv, i)),
				     serial) == 0)
			return 1;
	return 0;
}

static int add_serial(X509_CRL *crl, const ASN1_INTEGER *serial, const ASN1_TIME *when)
{
	X509_REVOKED *r = X509_REVOKED_new();

	if (r == NULL || X509_REVOKED_set_serialNumber(r, (ASN1_INTEGER *)serial) != 1 ||
	    X509_REVOKED_set_revocationDate(r, (ASN1_TIME *)when) != 1 ||
	    X509_CRL_add0_revoked(crl, r) != 1) {
		X509_REVOKED_free(r);
		return ossl_fail("adding a CRL entry", NULL);
	}
	return 0;
}

/* The entries of the old list, with their original dates. */
static int copy_entries(X509_CRL *crl, X509_CRL *old)
{
	STACK_OF(X509_REVOKED) *rv = X509_CRL_get_REVOKED(old);

	for (int i = 0; i < sk_X509_REVOKED_num(rv); i++) {
		X509_REVOKED *d = X509_REVOKED_dup(sk_X509_REVOKED_value(rv, i));

		if (d == NULL || X509_CRL_add0_revoked(crl, d) != 1) {
			X509_REVOKED_free(d);
			return ossl_fail("copying a CRL entry", NULL);
		}
	}
	return 0;
}

static void hex_serial(const ASN1_INTEGER *s, char *buf, size_t size)
{
	BIGNUM *bn = ASN1_INTEGER_to_BN(s, NULL);
	char *h = bn ? BN_bn2hex(bn) : NULL;

	snprintf(buf, size, "%s", h ? h : "?");
	OPENSSL_free(h);
	BN_free(bn);
}

/* One certificate to revoke: issued by the CA, not the CA itself. */
static int revoke_one(const dp_crl_opts *o, X509 *ca, X509_CRL *crl, const char *path,
		      const ASN1_TIME *now)
{
	X509 *x = NULL;
	char cn[65] = "?", serial[80];
	int r, already;

	r = read_cert(path, &x);
	if (r < 0)
		return r;
	if (X509_cmp(x, ca) == 0) {
		r = dp_error_set(DP_ETLS, "'%s' is the CA itself: make a new CA instead", path);
		goto out;
	}
	if (X509_check_issued(ca, x) != X509_V_OK || X509_verify(x, X509_get0_pubkey(ca)) != 1) {
		ERR_clear_error();
		r = dp_error_set(DP_ETLS, "'%s' was not issued by this CA", path);
		goto out;
	}
	already = listed(crl, X509_get0_serialNumber(x));
	if (!already) {
		r = add_serial(crl, X509_get0_serialNumber(x), now);
		if (r < 0)
			goto out;
	}
	X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn));
	ERR_clear_error();
	hex_serial(X509_get0_serialNumber(x), serial, sizeof(serial));
	if (o->on_cert != NULL)
		o->on_cert(path, cn, serial, already, o->arg);
	r = 0;
out:
	X509_free(x);
	return r;
}

/* cRLNumber (one above the old list's) and authorityKeyIdentifier. */
static int add_crl_exts(X509_CRL *crl, X509_CRL *old, X509 *ca)
{
	ASN1_INTEGER *num = old ? X509_CRL_get_ext_d2i(old, NID_crl_number, NULL, NULL) : NULL;
	BIGNUM *bn = num ? ASN1_INTEGER_to_BN(num, NULL) : BN_new();
	X509_EXTENSION *akid;
	X509V3_CTX v3;
	int ok;

	ASN1_INTEGER_free(num);
	num = NULL;
	ok = bn != NULL && BN_add_word(bn, 1) == 1;
	if (ok)
		num = BN_to_ASN1_INTEGER(bn, NULL);
	BN_free(bn);
	ok = num != NULL && X509_CRL_add1_ext_i2d(crl, NID_crl_number, num, 0, 0) == 1;
	ASN1_INTEGER_free(num);
	if (!ok)
		return ossl_fail("CRL number", NULL);
	X509V3_set_ctx(&v3, ca, NULL, NULL, crl, 0);
	akid = X509V3_EXT_conf_nid(NULL, &v3, NID_authority_key_identifier, "keyid:always");
	ok = akid != NULL && X509_CRL_add_ext(crl, akid, -1) == 1;
	X509_EXTENSION_free(akid);
	if (!ok)
		return ossl_fail("CRL authority key identifier", NULL);
	return 0;
}

static int write_crl(X509_CRL *crl, const char *path)
{
	BIO *b = BIO_new(BIO_s_mem());
	BUF_MEM *bm = NULL;
	int r;

	if (b == NULL || PEM_write_bio_X509_CRL(b, crl) != 1) {
		BIO_free(b);
		return ossl_fail("encoding the CRL", NULL);
	}
	BIO_get_mem_ptr(b, &bm);
	/* Public: every daemon of the deployment reads it. */
	r = dp_file_write_atomic(path, bm->data, bm->length, 0644);
	BIO_free(b);
	return r;
}

int dp_crl_update(const dp_crl_opts *o, size_t *n_entries)
{
	unsigned days = o->days ? o->days : 365;
	time_t now = time(NULL);
	X509 *ca = NULL;
	EVP_PKEY *ca_key = NULL;
	X509_CRL *old = NULL, *crl = NULL;
	ASN1_TIME *t_now = NULL, *t_this = NULL, *t_next = NULL;
	int r;

	DP_REQUIRE(o != NULL && (o->revoke != NULL || o->n_revoke == 0));
	if (o->ca_cert_file == NULL || o->ca_key_file == NULL)
		return dp_error_set(DP_EINVAL, "a CRL needs the CA's certificate and key");
	if (o->crl_file == NULL || *o->crl_file == '\0')
		return dp_error_set(DP_EINVAL, "no CRL file given");
	if (days > 36500)
		return dp_error_set(DP_EINVAL, "CRL validity of %u days is too long", days);
	r = dp_certs_load_ca(o->ca_cert_file, o->ca_key_file, &ca, &ca_key);
	if (r < 0)
		return r;
	r = read_old(o->crl_file, ca, &old);
	if (r < 0)
		goto out;
	ERR_clear_error();
	crl = X509_CRL_new();
	t_now = X509_time_adj_ex(NULL, 0, 0, &now);
	t_this = X509_time_adj_ex(NULL, 0, -(long)DP_CERTS_BACKDATE, &now);
	t_next = X509_time_adj_ex(NULL, (int)days, 0, &now);
	if (crl == NULL || t_now == NULL || t_this == NULL || t_next == NULL ||
	    X509_CRL_set_version(crl, 1) != 1 ||
	    X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca)) != 1 ||
	    X509_CRL_set1_lastUpdate(crl, t_this) != 1 ||
	    X509_CRL_set1_nextUpdate(crl, t_next) != 1) {
		r = ossl_fail("new CRL", NULL);
		goto out;
	}
	r = old ? copy_entries(crl, old) : 0;
	for (size_t i = 0; r == 0 && i < o->n_revoke; i++)
		r = revoke_one(o, ca, crl, o->revoke[i], t_now);
	if (r == 0)
		r = add_crl_exts(crl, old, ca);
	if (r < 0)
		goto out;
	if (X509_CRL_sort(crl) != 1 || X509_CRL_sign(crl, ca_key, EVP_sha256()) <= 0) {
		r = ossl_fail("signing the CRL", NULL);
		goto out;
	}
	r = write_crl(crl, o->crl_file);
	if (r == 0 && n_entries != NULL) {
		/* An empty list has no stack at all (num is -1). */
		int n = sk_X509_REVOKED_num(X509_CRL_get_REVOKED(crl));

		*n_entries = n > 0 ? (size_t)n : 0;
	}
out:
	ASN1_TIME_free(t_now);
	ASN1_TIME_free(t_this);
	ASN1_TIME_free(t_next);
	X509_CRL_free(crl);
	X509_CRL_free(old);
	EVP_PKEY_free(ca_key);
	X509_free(ca);
	ERR_clear_error();
	return r;
}
