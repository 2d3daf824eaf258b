/* SPDX-License-Identifier: Apache-2.0 */
/* Startup kits: one folder per site from a `dpasync certs` output (kit.h). */
#include "tools/lib/kit.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/net/addr.h"
#include "common/net/config.h"
#include "common/net/nofile.h"

/* Largest ca.crt copied (a PEM certificate is about 1 kB). */
#define CA_MAX ((size_t)1 << 20)
/* The installed learner files: the names deploy/systemd/learnerd.service
 * and deploy/learnerd.conf use. */
#define LEARNER_DIR "learner"
/* learnerd's max-pending in the kit's learnerd.conf (its default), which
 * the drop-in's LimitNOFILE= assumes. */
#define KIT_MAX_PENDING 64u
/* deploy/systemd/learnerd.service's own LimitNOFILE=: a drop-in only ever
 * raises it (a lower limit would turn added owners into a refusal). */
#define KIT_UNIT_NOFILE 65536ull

int dp_kit_check_name(const char *owner)
{
	DP_REQUIRE(owner != NULL);
	if (strcasecmp(owner, LEARNER_DIR) == 0 || strcasecmp(owner, "ca") == 0)
		return dp_error_set(DP_EINVAL, "--kit: an owner cannot be named '%s' (a folder of "
				    "the kit)", owner);
	return 0;
}

/* The owners line of learnerd.conf ("owners = a, b, c"), which must fit in
 * one config line (DP_CONFIG_MAX_LINE). */
static int owners_line(const dp_kit_opts *o, char *buf, size_t size)
{
	size_t len = (size_t)snprintf(buf, size, "owners = ");

	for (size_t i = 0; i < o->n_owners && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "", o->owners[i]);
	if (len >= size || len > DP_CONFIG_MAX_LINE)
		return dp_error_set(DP_EINVAL, "--kit: the owner names do not fit on one line of "
				    "learnerd.conf (%d characters); use shorter names",
				    DP_CONFIG_MAX_LINE);
	return 0;
}

static int write_text(const dp_kit_opts *o, const char *path, const char *text, int mode)
{
	int rc = dp_file_write_atomic(path, text, strlen(text), mode);

	if (rc == 0 && o->on_file)
		o->on_file(path, o->arg);
	return rc;
}

/* The formatted text written like write_text, mode 0644. */
static int write_fmt(const dp_kit_opts *o, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int write_fmt(const dp_kit_opts *o, const char *path, const char *fmt, ...)
{
	char *text;
	va_list ap, ap2;
	int n, rc;

	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	text = n < 0 ? NULL : malloc((size_t)n + 1);
	if (text == NULL) {
		va_end(ap2);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	vsnprintf(text, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	rc = write_text(o, path, text, 0644);
	free(text);
	return rc;
}

/* DIR/ca/<from> becomes DIR/<site>/<to>. */
static int move(const dp_kit_opts *o, const char *site, const char *from, const char *to)
{
	char src[4096], dst[4096];

	snprintf(src, sizeof(src), "%s/ca/%s", o->dir, from);
	snprintf(dst, sizeof(dst), "%s/%s/%s", o->dir, site, to);
	if (rename(src, dst) != 0)
		return dp_error_set(DP_EIO, "%s: cannot move to %s: %s", src, dst, strerror(errno));
	if (o->on_file)
		o->on_file(dst, o->arg);
	return dp_file_sync_dir(dst);
}

/* The folder of one site with its key pair and a copy of ca.crt. */
static int site_files(const dp_kit_opts *o, const char *site, const char *cert_base,
		      const char *to_base, const char *ca, size_t ca_len)
{
	char dir[4096], from[300], to[300];
	int rc;

	snprintf(dir, sizeof(dir), "%s/%s", o->dir, site);
	rc = dp_file_mkdir_p(dir, 1);
	if (rc == 0) {
		snprintf(dir, sizeof(dir), "%s/%s/ca.crt", o->dir, site);
		rc = dp_file_write_atomic(dir, ca, ca_len, 0644);
		if (rc == 0 && o->on_file)
			o->on_file(dir, o->arg);
	}
	snprintf(from, sizeof(from), "%s.crt", cert_base);
	snprintf(to, sizeof(to), "%s.crt", to_base);
	if (rc == 0)
		rc = move(o, site, from, to);
	snprintf(from, sizeof(from), "%s.key", cert_base);
	snprintf(to, sizeof(to), "%s.key", to_base);
	if (rc == 0)
		rc = move(o, site, from, to);
	return rc;
}

/* DIR/<site>/<unit>.d/10-kit.conf, the layout of /etc/systemd/system:
 * makes the folder and puts the file's path in path. */
static int dropin_path(const dp_kit_opts *o, const char *site, const char *unit, char *path,
		       size_t size)
{
	int rc;

	snprintf(path, size, "%s/%s/%s.d", o->dir, site, unit);
	rc = dp_file_mkdir_p(path, 0);
	if (rc != 0)
		return rc;
	snprintf(path, size, "%s/%s/%s.d/10-kit.conf", o->dir, site, unit);
	return 0;
}

/* The learner's drop-in: LimitNOFILE= sized to the kit's owners with
 * learnerd's own formula (common/net/nofile.h), with the kit's
 * learnerd.conf (max-pending 64, metrics on). */
static int learner_dropin(const dp_kit_opts *o)
{
	unsigned long long need = dp_nofile_need(KIT_MAX_PENDING, o->n_owners, true);
	char path[4096];
	int rc;

	if (need < KIT_UNIT_NOFILE)
		need = KIT_UNIT_NOFILE;
	rc = dropin_path(o, LEARNER_DIR, "learnerd.service", path, sizeof(path));
	if (rc != 0)
		return rc;
	return write_fmt(o, path,
		"# SPDX-License-Identifier: Apache-2.0\n"
		"# systemd drop-in for learnerd.service of %s, made by dpasync certs --kit.\n"
		"# It names the site and sets the open-file limit to what this kit's %zu\n"
		"# owners need (docs/learnerd.md \"Descriptors\": max-pending 64 + 2 per\n"
		"# owner + 4, the metrics server's 65, 32 others), never below the unit's\n"
		"# 65536.  Raise it if you add owners or raise max-pending.  Install:\n"
		"#   sudo install -D -m 0644 learnerd.service.d/10-kit.conf "
		"/etc/systemd/system/learnerd.service.d/10-kit.conf && sudo systemctl daemon-reload\n"
		"[Unit]\n"
		"Description=dpasync learner %s for %zu owners (learnerd)\n\n"
		"[Service]\n"
		"LimitNOFILE=%llu\n",
		o->learner_name, o->n_owners, o->learner_name, o->n_owners, need);
}

/* An owner's drop-in: the site in Description= and the credential naming
 * its own key file instead of the template's %i.key. */
static int owner_dropin(const dp_kit_opts *o, const char *name)
{
	char unit[300], path[4096];
	int rc;

	snprintf(unit, sizeof(unit), "ownerd@%s.service", name);
	rc = dropin_path(o, name, unit, path, sizeof(path));
	if (rc != 0)
		return rc;
	return write_fmt(o, path,
		"# SPDX-License-Identifier: Apache-2.0\n"
		"# systemd drop-in for ownerd@%s.service, made by dpasync certs --kit: it\n"
		"# names the site and hands ownerd this owner's own key file\n"
		"# (/etc/dpasync/%s.key) as the credential owner.key.  Install:\n"
		"#   sudo install -D -m 0644 ownerd@%s.service.d/10-kit.conf "
		"/etc/systemd/system/ownerd@%s.service.d/10-kit.conf && sudo systemctl daemon-reload\n"
		"[Unit]\n"
		"Description=dpasync data owner %s, learner %s (ownerd)\n\n"
		"[Service]\n"
		"# The empty line resets the template's credential.\n"
		"LoadCredential=\n"
		"LoadCredential=owner.key:/etc/dpasync/%s.key\n",
		name, name, name, name, name, o->learner_name ? o->learner_name : "learner", name);
}

static int learner_site(const dp_kit_opts *o, const char *ca, size_t ca_len, uint16_t port)
{
	char owners[1024], path[4096];
	int rc;

	rc = owners_line(o, owners, sizeof(owners));
	if (rc == 0)
		rc = site_files(o, LEARNER_DIR, o->learner_name, "learner", ca, ca_len);
	if (rc != 0)
		return rc;
	snprintf(path, sizeof(path), "%s/%s/learnerd.conf", o->dir, LEARNER_DIR);
	rc = write_fmt(o, path,
		"# learnerd configuration of this deployment, made by dpasync certs --kit\n"
		"# (the keys of deploy/learnerd.conf; every key: docs/learnerd.md).\n"
		"# Install as /etc/dpasync/learnerd.conf (README.md), then check with:\n"
		"#   sudo learnerd --config /etc/dpasync/learnerd.conf --check-config\n"
		"[learnerd]\n"
		"listen = 0.0.0.0:%u\n"
		"ca = /etc/dpasync/ca.crt\n"
		"# The certificate of %s, installed under the names the unit uses.\n"
		"cert = /etc/dpasync/learner.crt\n"
		"key = /etc/dpasync/learner.key\n"
		"# crl = /etc/dpasync/ca.crl\n"
		"%s\n"
		"model = linear\n"
		"# t, eta, clip and the answer caps are planned once every owner has said\n"
		"# Hello (docs/planner.md); public = the output of dpasync forecast.\n"
		"# t = 0\n"
		"# public = /etc/dpasync/public.json\n"
		"answers-margin = 0.1\n"
		"bias = true\n"
		"lambda = 0.01\n"
		"theta-max = 10\n"
		"mode = request\n"
		"max-inflight = 1\n"
		"query-timeout = 10s\n"
		"# Under /var/lib/dpasync/learner (the unit's state directory); a new job\n"
		"# gets a new out.\n"
		"out = /var/lib/dpasync/learner/job1\n"
		"checkpoint-every = 100\n"
		"metrics-listen = 127.0.0.1:9464\n", port, o->learner_name, owners);
	if (rc == 0)
		rc = learner_dropin(o);
	if (rc != 0)
		return rc;
	snprintf(path, sizeof(path), "%s/%s/README.md", o->dir, LEARNER_DIR);
	rc = write_fmt(o, path,
		"# Learner kit: %s\n\n"
		"The learner's files of this deployment, from `dpasync certs --kit`. Its\n"
		"certificate (made for `%s`) is installed as `learner.crt` and\n"
		"`learner.key`, the names `deploy/systemd/learnerd.service` and\n"
		"`learnerd.conf` use. Guide: docs/deploy.md (\"systemd\", \"Startup kits\").\n\n"
		"1. Install the binaries, the user and the units once: the Debian package\n"
		"   (`sudo apt install ./dpasync_VERSION_ARCH.deb`, docs/deploy.md \"Debian\n"
		"   package\"), or by hand (docs/deploy.md, \"systemd\").\n"
		"2. Install this folder's files:\n\n"
		"       sudo install -d -m 0750 -g dpasync /etc/dpasync\n"
		"       sudo install -m 0644 ca.crt learner.crt /etc/dpasync/\n"
		"       sudo install -m 0600 learner.key /etc/dpasync/\n"
		"       sudo install -m 0640 -g dpasync learnerd.conf /etc/dpasync/\n"
		"       sudo install -D -m 0644 learnerd.service.d/10-kit.conf \\\n"
		"            /etc/systemd/system/learnerd.service.d/10-kit.conf\n"
		"       sudo systemctl daemon-reload\n\n"
		"   The drop-in sets LimitNOFILE= for the kit's owners (docs/deploy.md 2.7).\n"
		"3. Edit `/etc/dpasync/learnerd.conf` for the job (model, T, out); the\n"
		"   owners are those of the kit: %s.\n"
		"4. Check and start:\n\n"
		"       sudo learnerd --config /etc/dpasync/learnerd.conf --check-config\n"
		"       sudo systemctl enable --now learnerd\n"
		"       journalctl -u learnerd -f\n\n"
		"5. Owners dial port %u of `%s`: open it to them.\n",
		o->learner_name, o->learner_name, owners + strlen("owners = "), port,
		o->learner_name);
	return rc;
}

static int owner_site(const dp_kit_opts *o, const char *name, const char *ca, size_t ca_len,
		      const char *addr, const char *server_name)
{
	char path[4096];
	int rc;

	rc = site_files(o, name, name, name, ca, ca_len);
	if (rc != 0)
		return rc;
	snprintf(path, sizeof(path), "%s/%s/ownerd-%s.conf", o->dir, name, name);
	rc = write_fmt(o, path,
		"# /etc/dpasync/ownerd-%s.conf: settings of the systemd instance\n"
		"# ownerd@%s (deploy/systemd/ownerd@.service), made by dpasync certs --kit\n"
		"# (the keys of deploy/systemd/ownerd-owner-1.conf; every key: docs/ownerd.md).\n"
		"# Check with:\n"
		"#   sudo ownerd --config /etc/dpasync/ownerd-%s.conf --check-config\n"
		"[ownerd]\n"
		"learner = %s\n"
		"server-name = %s\n"
		"ca = /etc/dpasync/ca.crt\n"
		"cert = /etc/dpasync/%s.crt\n"
		"key = /etc/dpasync/%s.key\n"
		"# crl = /etc/dpasync/ca.crl\n"
		"# learner-pin = sha256//...   (dpasync certs --pin learner.crt)\n"
		"# The owner's rows; must be readable by user dpasync.\n"
		"data = /var/lib/dpasync/%s/data.csv\n"
		"# The target column of data.csv, the same at every owner of the job.\n"
		"# Left unset on purpose: ownerd refuses to start until it is set, since a\n"
		"# wrong one trains a model of another column without an error.\n"
		"target =\n"
		"bias = true\n"
		"epsilon = 1\n"
		"rate = 1\n"
		"welcome-timeout = 10m\n"
		"# In the instance's state directory: the ledger directory, one ledger per\n"
		"# job (docs/ledger.md §8), and the last job's model.\n"
		"ledger = /var/lib/dpasync/%s/ledger\n"
		"model-out = /var/lib/dpasync/%s/model.json\n"
		"metrics-listen = 127.0.0.1:9465\n",
		name, name, name, addr, server_name, name, name, name, name, name);
	if (rc == 0)
		rc = owner_dropin(o, name);
	if (rc != 0)
		return rc;
	snprintf(path, sizeof(path), "%s/%s/README.md", o->dir, name);
	rc = write_fmt(o, path,
		"# Owner kit: %s\n\n"
		"The files of owner `%s` (the CN of its certificate, its identity at the\n"
		"learner), from `dpasync certs --kit`. Keep `%s.key` secret: delete any\n"
		"other copy once it is installed. Guide: docs/deploy.md (\"systemd\",\n"
		"\"Startup kits\").\n\n"
		"1. Install the binaries, the user and the units once: the Debian package\n"
		"   (`sudo apt install ./dpasync_VERSION_ARCH.deb`, docs/deploy.md \"Debian\n"
		"   package\"), or by hand (docs/deploy.md, \"systemd\").\n"
		"2. Install this folder's files and the data:\n\n"
		"       sudo install -d -m 0750 -g dpasync /etc/dpasync\n"
		"       sudo install -m 0644 ca.crt %s.crt /etc/dpasync/\n"
		"       sudo install -m 0600 %s.key /etc/dpasync/\n"
		"       sudo install -m 0640 -g dpasync ownerd-%s.conf /etc/dpasync/\n"
		"       sudo install -d -m 0700 -o dpasync -g dpasync /var/lib/dpasync/%s\n"
		"       sudo install -m 0640 -o dpasync -g dpasync data.csv "
		"/var/lib/dpasync/%s/data.csv\n"
		"       sudo install -D -m 0644 ownerd@%s.service.d/10-kit.conf \\\n"
		"            /etc/systemd/system/ownerd@%s.service.d/10-kit.conf\n"
		"       sudo systemctl daemon-reload\n\n"
		"   The drop-in names this site and its key file (docs/deploy.md 2.7).\n"
		"3. Edit `/etc/dpasync/ownerd-%s.conf`: target, bias, epsilon, rate. It\n"
		"   dials the learner at `%s` and expects its certificate name `%s`.\n"
		"4. Check and start:\n\n"
		"       sudo ownerd --config /etc/dpasync/ownerd-%s.conf --check-config\n"
		"       sudo systemctl enable --now ownerd@%s\n"
		"       journalctl -u ownerd@%s -f\n\n"
		"The ledger directory (`/var/lib/dpasync/%s/ledger`) is this owner's record of\n"
		"its privacy budget: back it up, never restore an old copy (docs/ledger.md).\n",
		name, name, name, name, name, name, name, name, name, name, name, addr, server_name,
		name, name, name, name);
	return rc;
}

int dp_kit_write(const dp_kit_opts *o)
{
	char path[4096], addr[DP_ADDR_HOST_MAX + 16], host[DP_ADDR_HOST_MAX + 1], *ca = NULL;
	size_t ca_len = 0;
	uint16_t port = 0;
	int rc;

	DP_REQUIRE(o != NULL && o->dir != NULL && (o->owners != NULL || o->n_owners == 0));
	for (size_t i = 0; i < o->n_owners; i++) {
		rc = dp_kit_check_name(o->owners[i]);
		if (rc != 0)
			return rc;
	}
	if (o->learner_addr)
		snprintf(addr, sizeof(addr), "%s", o->learner_addr);
	else
		snprintf(addr, sizeof(addr), "%s:7800", o->learner_name ? o->learner_name : "learner");
	rc = dp_addr_split("--learner-addr", addr, 0, host, sizeof(host), &port);
	if (rc != 0)
		return rc;
	snprintf(path, sizeof(path), "%s/ca/ca.crt", o->dir);
	rc = dp_file_read_all(path, CA_MAX, &ca, &ca_len);
	if (rc != 0)
		return dp_error_set(rc, "%s: cannot read", path);
	if (o->learner_name)
		rc = learner_site(o, ca, ca_len, port);
	for (size_t i = 0; i < o->n_owners && rc == 0; i++)
		rc = owner_site(o, o->owners[i], ca, ca_len, addr,
				o->learner_name ? o->learner_name : "learner");
	free(ca);
	return rc;
}
