/* SPDX-License-Identifier: Apache-2.0 */
/* The schema fingerprint.  See fingerprint.h. */
#include "common/core/fingerprint.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/schema.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include <openssl/evp.h>

/* Schema files are small JSON documents; this bounds what is read. */
#define SCHEMA_MAX (16u << 20)

static void hex(const unsigned char *md, unsigned n, char *out)
{
	for (unsigned i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static int line(EVP_MD_CTX *c, const char *key, const char *val)
{
	return EVP_DigestUpdate(c, key, strlen(key)) == 1 && EVP_DigestUpdate(c, " ", 1) == 1 &&
	       EVP_DigestUpdate(c, val, strlen(val)) == 1 && EVP_DigestUpdate(c, "\n", 1) == 1;
}

int dp_fingerprint_schema(const dp_dataset *ds, int bias, const char *schema_path,
			  char out[DP_FINGERPRINT_SIZE])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	char schema_hex[2 * 32 + 1] = "none";
	unsigned int mdlen = 0;
	EVP_MD_CTX *c;
	bool ok;
	int r;

	DP_REQUIRE(ds != NULL && out != NULL);
	if (schema_path != NULL) {
		char *buf = NULL;
		size_t len = 0;

		r = dp_file_read_all(schema_path, SCHEMA_MAX, &buf, &len);
		if (r < 0)
			return r;
		ok = EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL) == 1;
		free(buf);
		if (!ok)
			return dp_error_set(DP_ENOMEM, "fingerprint: SHA-256 failed");
		hex(md, 32, schema_hex);
	}
	c = EVP_MD_CTX_new();
	if (c == NULL)
		return dp_error_set(DP_ENOMEM, "fingerprint: out of memory");
	ok = EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1 &&
	     EVP_DigestUpdate(c, "dpasync-schema 1\n", 17) == 1;
	for (size_t j = 0; ok && j < ds->p; j++)
		ok = line(c, "feature", ds->names != NULL && ds->names[j] != NULL ? ds->names[j] : "");
	ok = ok && line(c, "target", ds->target != NULL ? ds->target : "y") &&
	     line(c, "bias", bias ? "1" : "0") && line(c, "schema", schema_hex) &&
	     EVP_DigestFinal_ex(c, md, &mdlen) == 1;
	EVP_MD_CTX_free(c);
	if (!ok)
		return dp_error_set(DP_ENOMEM, "fingerprint: SHA-256 failed");
	memcpy(out, "sha256:", 7);
	hex(md, 32, out + 7);
	return 0;
}

/* Whether schema s describes ds's columns and target (bias aside). */
static bool describes(const dp_schema *s, const dp_dataset *ds, int bias)
{
	const char *const *names = dp_schema_feature_names(s);
	size_t n = dp_schema_nfeatures(s);

	if (ds->names == NULL || ds->target == NULL || ds->p != n + (bias ? 1 : 0) ||
	    strcmp(ds->target, dp_schema_target(s)) != 0)
		return false;
	for (size_t j = 0; j < n; j++)
		if (ds->names[j] == NULL || strcmp(ds->names[j], names[j]) != 0)
			return false;
	return true;
}

int dp_fingerprint_applied(const dp_dataset *ds, int bias, char *path, size_t size)
{
	const char *slash;
	dp_schema *s = NULL;
	struct stat st;
	size_t dir;
	bool ok;
	int r;

	DP_REQUIRE(ds != NULL && path != NULL && size > 0);
	path[0] = '\0';
	if (ds->source == NULL || ds->source[0] == '(')
		return 0;   /* "(arrays)": no file */
	slash = strrchr(ds->source, '/');
	dir = slash != NULL ? (size_t)(slash - ds->source) + 1 : 0;
	if (dir + sizeof("schema.json") > size)
		return 0;
	memcpy(path, ds->source, dir);
	memcpy(path + dir, "schema.json", sizeof("schema.json"));
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		path[0] = '\0';
		return 0;
	}
	r = dp_schema_load(path, &s);
	if (r == DP_ENOMEM)
		return r;
	ok = r == 0 && describes(s, ds, bias);
	dp_schema_destroy(s);
	if (!ok)
		path[0] = '\0';
	return ok ? 1 : 0;
}

int dp_fingerprint_ok(const char *s)
{
	DP_REQUIRE(s != NULL);
	if (strncmp(s, "sha256:", 7) != 0 || strlen(s) != DP_FINGERPRINT_SIZE - 1)
		return 0;
	for (size_t i = 7; s[i] != '\0'; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}
