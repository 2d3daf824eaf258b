/* SPDX-License-Identifier: Apache-2.0 */
/* Certificate generation: the chain verifies with OpenSSL's own verifier,
 * names and extensions are what was asked for, files have the right modes
 * and are never overwritten without force. */
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

#include "tools/lib/certs.h"
#include "common/core/error.h"

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static char *mktmp(void)
{
	char *d = strdup("/tmp/dp_test_certs_XXXXXX");

	assert_non_null(d);
	assert_non_null(mkdtemp(d));
	return d;
}

static void rmtmp(char *d)
{
	nftw(d, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

/* Verify leaf against a store holding only ca, for a TLS purpose. */
static int verify(X509 *ca, X509 *leaf, int purpose)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *sc = X509_STORE_CTX_new();
	int ok, err;

	assert_non_null(st);
	assert_non_null(sc);
	assert_int_equal(X509_STORE_add_cert(st, ca), 1);
	assert_int_equal(X509_STORE_CTX_init(sc, st, leaf, NULL), 1);
	X509_STORE_CTX_set_purpose(sc, purpose);
	ok = X509_verify_cert(sc);
	err = X509_STORE_CTX_get_error(sc);
	X509_STORE_CTX_free(sc);
	X509_STORE_free(st);
	ERR_clear_error();
	return ok == 1 ? X509_V_OK : err;
}

static X509 *read_cert(const char *path)
{
	FILE *f = fopen(path, "r");
	X509 *x;

	assert_non_null(f);
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	assert_non_null(x);
	return x;
}

static EVP_PKEY *read_key(const char *path)
{
	FILE *f = fopen(path, "r");
	EVP_PKEY *k;

	assert_non_null(f);
	k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	assert_non_null(k);
	return k;
}

static void assert_cn(X509 *x, const char *want)
{
	char cn[128];

	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn,
					      sizeof(cn)) > 0);
	assert_string_equal(cn, want);
}

/* SAN as a string "DNS:a,IP:7f000001,..." built from the parsed extension. */
static void san_string(X509 *x, char *out, size_t size)
{
	GENERAL_NAMES *gn = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	size_t off = 0;

	out[0] = '\0';
	assert_non_null(gn);
	for (int i = 0; i < sk_GENERAL_NAME_num(gn); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gn, i);
		const ASN1_STRING *s;

		if (g->type == GEN_DNS) {
			s = g->d.dNSName;
			off += (size_t)snprintf(out + off, size - off, "%sDNS:%.*s", off ? "," : "",
						ASN1_STRING_length(s),
						(const char *)ASN1_STRING_get0_data(s));
		} else if (g->type == GEN_IPADD) {
			s = g->d.iPAddress;
			off += (size_t)snprintf(out + off, size - off, "%sIP:", off ? "," : "");
			for (int j = 0; j < ASN1_STRING_length(s); j++)
				off += (size_t)snprintf(out + off, size - off, "%02x",
							ASN1_STRING_get0_data(s)[j]);
		}
	}
	GENERAL_NAMES_free(gn);
}

static mode_t file_mode(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 0777;
}

static void test_chain_and_fields(void **state)
{
	EVP_PKEY *cak, *k, *ok, *xk;
	X509 *ca, *leaf, *other_ca, *exp;
	static const char *const dns[] = { "localhost" };
	static const char *const ips[] = { "127.0.0.1", "::1" };
	dp_cert_spec s = {
		.cn = "learner", .dns = dns, .n_dns = 1, .ips = ips, .n_ips = 2,
		.not_before = -DP_CERTS_BACKDATE, .lifetime = 30 * DP_CERTS_DAY,
	};
	char san[256], group[64];
	int days = -1, secs = -1;

	assert_int_equal(dp_certs_make_ca("test CA", -DP_CERTS_BACKDATE, 60 * DP_CERTS_DAY,
					  &cak, &ca), 0);
	assert_int_equal(X509_check_ca(ca), 1);
	assert_true(X509_get_key_usage(ca) & KU_KEY_CERT_SIGN);
	assert_int_equal(X509_check_issued(ca, ca), X509_V_OK);       /* self-signed */
	assert_int_equal(dp_certs_make_leaf(&s, ca, cak, &k, &leaf), 0);

	/* Chain verifies for both TLS roles; CN and SAN as asked. */
	assert_int_equal(verify(ca, leaf, X509_PURPOSE_SSL_SERVER), X509_V_OK);
	assert_int_equal(verify(ca, leaf, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
	assert_int_equal(X509_check_ca(leaf), 0);
	assert_cn(leaf, "learner");
	san_string(leaf, san, sizeof(san));
	assert_string_equal(san, "DNS:learner,DNS:localhost,IP:7f000001,"
			    "IP:00000000000000000000000000000001");
	assert_int_equal(X509_check_host(leaf, "learner", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(leaf, "owner-1", 0, 0, NULL), 0);
	assert_int_equal(X509_check_ip_asc(leaf, "127.0.0.1", 0), 1);
	assert_true(X509_get_extended_key_usage(leaf) & XKU_SSL_SERVER);
	assert_true(X509_get_extended_key_usage(leaf) & XKU_SSL_CLIENT);
	assert_true(X509_get_key_usage(leaf) & KU_DIGITAL_SIGNATURE);
	assert_false(X509_get_key_usage(leaf) & KU_KEY_CERT_SIGN);
	/* Validity length as asked, and P-256 keys. */
	assert_int_equal(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(leaf),
					X509_get0_notAfter(leaf)), 1);
	assert_int_equal(days, 30);
	assert_int_equal(secs, 0);
	assert_int_equal(EVP_PKEY_get_base_id(k), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_get_group_name(k, group, sizeof(group), NULL), 1);
	assert_string_equal(group, "prime256v1");
	assert_int_equal(X509_check_private_key(leaf, k), 1);
	assert_int_equal(X509_check_private_key(leaf, cak), 0);
	ERR_clear_error();

	/* clientAuth only: not usable as a server. */
	{
		EVP_PKEY *ck;
		X509 *cl;
		dp_cert_spec cs = s;

		cs.cn = "owner-9";
		cs.n_dns = cs.n_ips = 0;
		cs.eku = DP_CERT_EKU_CLIENT;
		assert_int_equal(dp_certs_make_leaf(&cs, ca, cak, &ck, &cl), 0);
		assert_int_equal(verify(ca, cl, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
		assert_int_equal(verify(ca, cl, X509_PURPOSE_SSL_SERVER), X509_V_ERR_INVALID_PURPOSE);
		san_string(cl, san, sizeof(san));
		assert_string_equal(san, "DNS:owner-9");
		EVP_PKEY_free(ck);
		X509_free(cl);
	}

	/* A leaf of another CA does not verify against this one. */
	assert_int_equal(dp_certs_make_ca("other CA", 0, DP_CERTS_DAY, &ok, &other_ca), 0);
	assert_int_equal(verify(other_ca, leaf, X509_PURPOSE_SSL_SERVER),
			 X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);

	/* Expired: valid from 2 days ago for 1 day. */
	s.not_before = -2 * DP_CERTS_DAY;
	s.lifetime = DP_CERTS_DAY;
	assert_int_equal(dp_certs_make_leaf(&s, ca, cak, &xk, &exp), 0);
	assert_int_equal(verify(ca, exp, X509_PURPOSE_SSL_SERVER), X509_V_ERR_CERT_HAS_EXPIRED);

	/* Bad inputs. */
	{
		EVP_PKEY *bk = NULL;
		X509 *bx = NULL;
		static const char *const badip[] = { "300.1.1.1" };
		dp_cert_spec b = s;

		b.lifetime = DP_CERTS_DAY;
		b.ips = badip;
		b.n_ips = 1;
		assert_int_equal(dp_certs_make_leaf(&b, ca, cak, &bk, &bx), DP_EINVAL);
		b.n_ips = 0;
		b.cn = "bad name";
		assert_int_equal(dp_certs_make_leaf(&b, ca, cak, &bk, &bx), DP_EINVAL);
		b.cn = "fine";
		assert_int_equal(dp_certs_make_leaf(&b, ca, ok, &bk, &bx), DP_EINVAL); /* wrong CA key */
		b.lifetime = 0;
		assert_int_equal(dp_certs_make_leaf(&b, ca, cak, &bk, &bx), DP_EINVAL);
		assert_null(bk);
		assert_null(bx);
	}

	EVP_PKEY_free(cak);
	EVP_PKEY_free(k);
	EVP_PKEY_free(ok);
	EVP_PKEY_free(xk);
	X509_free(ca);
	X509_free(leaf);
	X509_free(other_ca);
	X509_free(exp);
}

static void test_write_modes(void **state)
{
	char *dir = mktmp();
	char path[512];
	EVP_PKEY *cak, *k;
	X509 *ca, *x;
	mode_t old = umask(0);   /* modes must not depend on the caller's umask */

	assert_int_equal(dp_certs_make_ca("CA", 0, DP_CERTS_DAY, &cak, &ca), 0);
	assert_int_equal(dp_certs_write(dir, "ca", cak, ca, 0), 0);
	snprintf(path, sizeof(path), "%s/ca.key", dir);
	assert_int_equal(file_mode(path), 0600);
	k = read_key(path);
	assert_int_equal(X509_check_private_key(ca, k), 1);
	EVP_PKEY_free(k);
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	assert_int_equal(file_mode(path), 0644);
	x = read_cert(path);
	assert_int_equal(X509_cmp(x, ca), 0);
	X509_free(x);

	/* No overwrite without force: -EEXIST and the file is unchanged. */
	{
		EVP_PKEY *k2;
		X509 *c2;

		assert_int_equal(dp_certs_make_ca("CA2", 0, DP_CERTS_DAY, &k2, &c2), 0);
		assert_int_equal(dp_certs_write(dir, "ca", k2, c2, 0), -EEXIST);
		assert_non_null(strstr(dp_error_detail(-EEXIST), "--force"));
		x = read_cert(path);
		assert_int_equal(X509_cmp(x, ca), 0);
		X509_free(x);
		assert_int_equal(dp_certs_write(dir, "ca", k2, c2, 1), 0);
		x = read_cert(path);
		assert_int_equal(X509_cmp(x, c2), 0);
		X509_free(x);
		snprintf(path, sizeof(path), "%s/ca.key", dir);
		assert_int_equal(file_mode(path), 0600);
		k = read_key(path);
		assert_int_equal(X509_check_private_key(c2, k), 1);
		EVP_PKEY_free(k);
		EVP_PKEY_free(k2);
		X509_free(c2);
	}
	/* Certificate only. */
	assert_int_equal(dp_certs_write(dir, "pub", NULL, ca, 0), 0);
	snprintf(path, sizeof(path), "%s/pub.key", dir);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(dp_certs_write(dir, "a/b", NULL, ca, 0), DP_EINVAL);
	umask(old);
	EVP_PKEY_free(cak);
	X509_free(ca);
	rmtmp(dir);
}

static void test_deploy(void **state)
{
	char *dir = mktmp(), *dir2 = mktmp();
	char path[512], path2[512], san[256];
	static const char *const owners[] = { "alice", "bob" };
	dp_certs_opts o = { 0 };
	X509 *ca, *x;
	EVP_PKEY *k;
	struct stat st1, st2;

	o.out_dir = dir;
	o.owners = owners;
	o.n_owners = 2;
	o.days = 10;
	assert_int_equal(dp_certs_deploy(&o), 0);
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	ca = read_cert(path);
	assert_int_equal(X509_check_ca(ca), 1);

	snprintf(path, sizeof(path), "%s/learner.crt", dir);
	x = read_cert(path);
	assert_int_equal(verify(ca, x, X509_PURPOSE_SSL_SERVER), X509_V_OK);
	/* serverAuth only: the learner's certificate is no owner's. */
	assert_int_equal(verify(ca, x, X509_PURPOSE_SSL_CLIENT), X509_V_ERR_INVALID_PURPOSE);
	assert_int_equal(X509_get_extended_key_usage(x), XKU_SSL_SERVER);
	assert_cn(x, "learner");
	san_string(x, san, sizeof(san));
	assert_string_equal(san, "DNS:learner,DNS:localhost,IP:7f000001,"
			    "IP:00000000000000000000000000000001");
	snprintf(path, sizeof(path), "%s/learner.key", dir);
	assert_int_equal(file_mode(path), 0600);
	k = read_key(path);
	assert_int_equal(X509_check_private_key(x, k), 1);
	EVP_PKEY_free(k);
	X509_free(x);

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s.crt", dir, owners[i]);
		x = read_cert(path);
		/* clientAuth only: an owner's certificate cannot serve. */
		assert_int_equal(verify(ca, x, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
		assert_int_equal(verify(ca, x, X509_PURPOSE_SSL_SERVER), X509_V_ERR_INVALID_PURPOSE);
		assert_int_equal(X509_get_extended_key_usage(x), XKU_SSL_CLIENT);
		assert_cn(x, owners[i]);
		san_string(x, san, sizeof(san));
		snprintf(path2, sizeof(path2), "DNS:%s", owners[i]);
		assert_string_equal(san, path2);
		X509_free(x);
		snprintf(path, sizeof(path), "%s/%s.key", dir, owners[i]);
		assert_int_equal(file_mode(path), 0600);
	}
	snprintf(path, sizeof(path), "%s/ca.key", dir);
	assert_int_equal(file_mode(path), 0600);

	/* Again without force: refused before anything is touched. */
	snprintf(path, sizeof(path), "%s/alice.key", dir);
	assert_int_equal(stat(path, &st1), 0);
	assert_int_equal(dp_certs_deploy(&o), -EEXIST);
	assert_int_equal(stat(path, &st2), 0);
	assert_int_equal(st1.st_ino, st2.st_ino);
	assert_true(st1.st_mtim.tv_sec == st2.st_mtim.tv_sec &&
		    st1.st_mtim.tv_nsec == st2.st_mtim.tv_nsec);

	/* Reuse the CA to add an owner in another directory. */
	{
		static const char *const carol[] = { "carol" };
		dp_certs_opts r = { 0 };
		char cac[512], cak[512];

		snprintf(cac, sizeof(cac), "%s/ca.crt", dir);
		snprintf(cak, sizeof(cak), "%s/ca.key", dir);
		r.out_dir = dir2;
		r.owners = carol;
		r.n_owners = 1;
		r.ca_cert_file = cac;
		r.ca_key_file = cak;
		assert_int_equal(dp_certs_deploy(&r), 0);
		snprintf(path, sizeof(path), "%s/carol.crt", dir2);
		x = read_cert(path);
		assert_int_equal(verify(ca, x, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
		X509_free(x);
		snprintf(path, sizeof(path), "%s/ca.crt", dir2);
		x = read_cert(path);
		assert_int_equal(X509_cmp(x, ca), 0);
		X509_free(x);
		snprintf(path, sizeof(path), "%s/ca.key", dir2);
		assert_int_equal(access(path, F_OK), -1);      /* CA key not copied */
		snprintf(path, sizeof(path), "%s/learner.crt", dir2);
		assert_int_equal(access(path, F_OK), -1);      /* learner not asked for */

		/* Adding to the original directory: ca.crt there is the same CA. */
		r.out_dir = dir;
		assert_int_equal(dp_certs_deploy(&r), 0);
		/* A mismatched key is refused. */
		snprintf(cak, sizeof(cak), "%s/alice.key", dir);
		r.out_dir = dir2;
		assert_int_equal(dp_certs_deploy(&r), DP_ETLS);
		/* A leaf is not a CA. */
		snprintf(cac, sizeof(cac), "%s/alice.crt", dir);
		assert_int_equal(dp_certs_deploy(&r), DP_ETLS);
		assert_non_null(strstr(dp_error_detail(DP_ETLS), "not a CA"));
	}

	/* Name rules. */
	{
		static const char *const dup[] = { "x", "x" };
		static const char *const res[] = { "ca" };
		static const char *const lrn[] = { "learner" };
		dp_certs_opts b = { 0 };

		b.out_dir = dir2;
		b.owners = dup;
		b.n_owners = 2;
		assert_int_equal(dp_certs_deploy(&b), DP_EINVAL);
		b.owners = res;
		b.n_owners = 1;
		assert_int_equal(dp_certs_deploy(&b), DP_EINVAL);
		b.owners = lrn;
		assert_int_equal(dp_certs_deploy(&b), DP_EINVAL);
		/* Nothing that could pass for the learner, also when adding owners
		 * with a reused CA (the learner is then "learner" unless named). */
		{
			static const char *const bad[] = { "learner", "LEARNER", "localhost",
							   "LocalHost", "127.0.0.1", "10.1",
							   "srv" };
			char cac[512], cak[512];

			snprintf(cac, sizeof(cac), "%s/ca.crt", dir);
			snprintf(cak, sizeof(cak), "%s/ca.key", dir);
			b.ca_cert_file = cac;
			b.ca_key_file = cak;
			for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
				b.owners = &bad[i];
				b.learner_name = i + 1 == sizeof(bad) / sizeof(bad[0]) ? "SRV" : NULL;
				assert_int_equal(dp_certs_deploy(&b), DP_EINVAL);
				snprintf(path, sizeof(path), "%s/%s.crt", dir2, bad[i]);
				assert_int_equal(access(path, F_OK), -1);
			}
			b.learner_name = NULL;
			b.ca_cert_file = NULL;
			b.ca_key_file = NULL;
		}
		b.owners = NULL;
		b.n_owners = 0;
		b.ca_cert_file = "x";
		assert_int_equal(dp_certs_deploy(&b), DP_EINVAL);  /* key missing */
	}
	X509_free(ca);
	rmtmp(dir);
	rmtmp(dir2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_and_fields),
		cmocka_unit_test(test_write_modes),
		cmocka_unit_test(test_deploy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
