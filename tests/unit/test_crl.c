/* SPDX-License-Identifier: Apache-2.0 */
/* The CA's revocation list (tools/lib/crl.c): a new list, entries added and
 * kept across updates with a growing cRLNumber, a certificate revoked twice
 * listed once, OpenSSL's verifier refusing exactly the revoked certificate
 * with the list, and the inputs refused without writing anything. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "common/core/error.h"
#include "tools/lib/certs.h"
#include "tools/lib/crl.h"

static char g_dir[64];

static const char *path_of(const char *name)
{
	static char buf[64][256];   /* enough for every path one test holds */
	static int i;

	i = (i + 1) % 64;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", g_dir, name);
	return buf[i];
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static int group_setup(void **state)
{
	static const char *const a[] = { "alice", "bob" };
	static const char *const c[] = { "carol" };
	dp_certs_opts o = { 0 };

	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/tmp/dp_test_crl_XXXXXX");
	if (mkdtemp(g_dir) == NULL)
		return -1;
	o.out_dir = path_of("a");
	o.owners = a;
	o.n_owners = 2;
	if (dp_certs_deploy(&o) != 0)
		return -1;
	o.out_dir = path_of("b");
	o.owners = c;
	o.n_owners = 1;
	return dp_certs_deploy(&o) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	nftw(g_dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
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

static X509_CRL *read_crl(const char *path)
{
	FILE *f = fopen(path, "r");
	X509_CRL *c;

	assert_non_null(f);
	c = PEM_read_X509_CRL(f, NULL, NULL, NULL);
	fclose(f);
	assert_non_null(c);
	return c;
}

static long crl_number(X509_CRL *c)
{
	ASN1_INTEGER *n = X509_CRL_get_ext_d2i(c, NID_crl_number, NULL, NULL);
	long v;

	assert_non_null(n);
	v = ASN1_INTEGER_get(n);
	ASN1_INTEGER_free(n);
	return v;
}

/* OpenSSL's own verdict on leaf with the CA and the list. */
static int verify_with(const char *leaf, X509_CRL *crl)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *sc = X509_STORE_CTX_new();
	X509 *ca = read_cert(path_of("a/ca.crt")), *x = read_cert(leaf);
	int err;

	X509_STORE_add_cert(st, ca);
	X509_STORE_add_crl(st, crl);
	X509_STORE_set_flags(st, X509_V_FLAG_CRL_CHECK);
	X509_STORE_CTX_init(sc, st, x, NULL);
	X509_verify_cert(sc);
	err = X509_STORE_CTX_get_error(sc);
	X509_STORE_CTX_free(sc);
	X509_STORE_free(st);
	X509_free(ca);
	X509_free(x);
	ERR_clear_error();
	return err;
}

static int n_told, n_already;

static void on_cert(const char *file, const char *cn, const char *serial, int already, void *arg)
{
	(void)file;
	(void)serial;
	(void)arg;
	assert_true(strcmp(cn, "alice") == 0 || strcmp(cn, "bob") == 0);
	n_told++;
	n_already += already;
}

static dp_crl_opts opts(const char *crl, const char *const *revoke, size_t n)
{
	dp_crl_opts o = { .ca_cert_file = path_of("a/ca.crt"), .ca_key_file = path_of("a/ca.key"),
			  .crl_file = crl, .revoke = revoke, .n_revoke = n, .days = 7,
			  .on_cert = on_cert };

	return o;
}

static void test_update(void **state)
{
	const char *crl = path_of("a.crl");
	const char *alice[] = { path_of("a/alice.crt") };
	const char *both[] = { path_of("a/bob.crt"), path_of("a/alice.crt"), path_of("a/bob.crt") };
	dp_crl_opts o;
	X509_CRL *c;
	size_t n = 99;
	struct stat st;

	(void)state;
	/* A new, empty list, valid `days` days, public. */
	o = opts(crl, NULL, 0);
	{
		mode_t old = umask(022);

		assert_int_equal(dp_crl_update(&o, &n), 0);
		umask(old);
	}
	assert_int_equal(n, 0);
	assert_int_equal(stat(crl, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	c = read_crl(crl);
	assert_int_equal(crl_number(c), 1);
	assert_true(X509_cmp_time(X509_CRL_get0_nextUpdate(c), NULL) > 0);
	{
		time_t t = time(NULL) + 8 * 86400;

		assert_true(X509_cmp_time(X509_CRL_get0_nextUpdate(c), &t) < 0);
	}
	assert_int_equal(verify_with(alice[0], c), X509_V_OK);
	X509_CRL_free(c);

	/* Alice revoked; bob still good. */
	o = opts(crl, alice, 1);
	n_told = n_already = 0;
	assert_int_equal(dp_crl_update(&o, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(n_told, 1);
	assert_int_equal(n_already, 0);
	c = read_crl(crl);
	assert_int_equal(crl_number(c), 2);
	assert_int_equal(verify_with(path_of("a/alice.crt"), c), X509_V_ERR_CERT_REVOKED);
	assert_int_equal(verify_with(path_of("a/bob.crt"), c), X509_V_OK);
	X509_CRL_free(c);

	/* Bob added (twice), alice kept and reported as already there. */
	o = opts(crl, both, 3);
	n_told = n_already = 0;
	assert_int_equal(dp_crl_update(&o, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(n_told, 3);
	assert_int_equal(n_already, 2);
	c = read_crl(crl);
	assert_int_equal(crl_number(c), 3);
	assert_int_equal(verify_with(path_of("a/bob.crt"), c), X509_V_ERR_CERT_REVOKED);
	assert_int_equal(verify_with(path_of("a/alice.crt"), c), X509_V_ERR_CERT_REVOKED);
	X509_CRL_free(c);

	/* Renewed with no certificate: same entries, next number. */
	o = opts(crl, NULL, 0);
	assert_int_equal(dp_crl_update(&o, &n), 0);
	assert_int_equal(n, 2);
	c = read_crl(crl);
	assert_int_equal(crl_number(c), 4);
	X509_CRL_free(c);
}

static void expect_fail(dp_crl_opts *o, int code, const char *needle)
{
	int r = dp_crl_update(o, NULL);

	if (r != code || strstr(dp_error_detail(r), needle) == NULL)
		fail_msg("expected %d '%s', got %d '%s'", code, needle, r, dp_error_detail(r));
	assert_int_equal(ERR_peek_error(), 0);
}

static void test_refused(void **state)
{
	const char *crl = path_of("r.crl");
	const char *carol[] = { path_of("b/carol.crt") };
	const char *ca[] = { path_of("a/ca.crt") };
	const char *missing[] = { path_of("a/nobody.crt") };
	const char *key[] = { path_of("a/alice.key") };
	dp_crl_opts o;
	FILE *f;

	(void)state;
	/* Another CA's certificate, the CA itself, no file, not a certificate. */
	o = opts(crl, carol, 1);
	expect_fail(&o, DP_ETLS, "not issued by this CA");
	o = opts(crl, ca, 1);
	expect_fail(&o, DP_ETLS, "the CA itself");
	o = opts(crl, missing, 1);
	expect_fail(&o, DP_ETLS, "cannot read certificate");
	o = opts(crl, key, 1);
	expect_fail(&o, DP_ETLS, "no PEM certificate");
	assert_int_equal(access(crl, F_OK), -1);

	/* An existing list of another CA, or not a list: kept as it was. */
	o = opts(path_of("b.crl"), NULL, 0);
	o.ca_cert_file = path_of("b/ca.crt");
	o.ca_key_file = path_of("b/ca.key");
	assert_int_equal(dp_crl_update(&o, NULL), 0);
	o = opts(path_of("b.crl"), NULL, 0);
	expect_fail(&o, DP_ETLS, "not a CRL of this CA");
	f = fopen(crl, "w");
	assert_non_null(f);
	fputs("not a CRL\n", f);
	fclose(f);
	o = opts(crl, NULL, 0);
	expect_fail(&o, DP_ETLS, "holds no PEM CRL");

	/* The CA's key must match. */
	o = opts(path_of("k.crl"), NULL, 0);
	o.ca_key_file = path_of("b/ca.key");
	expect_fail(&o, DP_ETLS, "does not match");
	o = opts(NULL, NULL, 0);
	expect_fail(&o, DP_EINVAL, "no CRL file");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_update),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
