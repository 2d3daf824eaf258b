/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync certs: a deployment CA plus learner and owner certificates
 * (tools/lib/certs.h does the work). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/pem.h>

#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/net/config.h"
#include "common/net/tls.h"
#include "tools/cmds.h"
#include "tools/lib/certs.h"
#include "tools/lib/crl.h"
#include "tools/lib/kit.h"

struct certs_opts {
	char *out, *learner_name, *ca_cert, *ca_key, *pin, *crl, *kit, *learner_addr;
	uint64_t owners, days, ca_days;
	struct dp_config_strings names, revoke;
	bool force, peer, have_owners, have_learner, have_days, have_ca_days;
};

static void print_path(const char *path, void *arg)
{
	(void)arg;
	printf("%s\n", path);
}

/* Cross-field rules of the options (the table checks each one alone). */
static int check_opts(void *arg)
{
	const struct certs_opts *o = arg;
	int deploying = o->out || o->have_owners || o->names.n || o->have_learner ||
			o->have_ca_days || o->force || o->kit;

	if (o->pin != NULL) {
		if (deploying || o->crl || o->revoke.n || o->ca_cert || o->ca_key || o->have_days)
			return dp_error_set(DP_EINVAL, "--pin FILE goes alone");
		return 0;
	}
	if (o->revoke.n && o->crl == NULL)
		return dp_error_set(DP_EINVAL, "--revoke needs --crl FILE (the list to update)");
	if (o->crl != NULL) {
		if (deploying)
			return dp_error_set(DP_EINVAL, "--crl updates a revocation list: give it with "
					    "--ca-cert, --ca-key, [--revoke] and [--days] only");
		if (o->ca_cert == NULL || o->ca_key == NULL)
			return dp_error_set(DP_EINVAL, "--crl needs --ca-cert and --ca-key");
		return 0;
	}
	if (o->learner_addr && o->kit == NULL)
		return dp_error_set(DP_EINVAL, "--learner-addr applies to --kit only");
	if (o->kit && o->out)
		return dp_error_set(DP_EINVAL, "give either --out or --kit, not both");
	if (o->kit && o->peer)
		return dp_error_set(DP_EINVAL, "--kit makes a learner's and owners' folders; peer "
				    "agents (--peer) take --out");
	if (o->kit && o->ca_cert && !o->have_learner)
		return dp_error_set(DP_EINVAL, "--kit with --ca-cert needs --learner-name (the "
				    "owners' configs name the learner)");
	for (size_t i = 0; o->kit && i < o->names.n; i++)
		if (dp_kit_check_name(o->names.v[i]) != 0)
			return DP_EINVAL;
	if (o->out == NULL && o->kit == NULL)
		return dp_error_set(DP_EINVAL, "--out DIR or --kit DIR is required");
	if (o->have_owners && o->names.n)
		return dp_error_set(DP_EINVAL, "give either --owners or --names, not both");
	if ((o->ca_cert == NULL) != (o->ca_key == NULL))
		return dp_error_set(DP_EINVAL, "--ca-cert and --ca-key go together");
	if (!o->have_owners && !o->names.n && !(o->ca_cert && o->have_learner))
		return dp_error_set(DP_EINVAL, "--owners N or --names A,B,... is required");
	if (!o->ca_cert && o->ca_days < o->days)
		return dp_error_set(DP_EINVAL, "--ca-days (%llu) is shorter than --days (%llu)",
				    (unsigned long long)o->ca_days, (unsigned long long)o->days);
	return 0;
}

static void print_revoked(const char *file, const char *cn, const char *serial, int already,
			  void *arg)
{
	(void)arg;
	printf("%s: cn=%s serial=%s %s\n", file, cn, serial,
	       already ? "already revoked" : "revoked");
}

static int update_crl(const struct certs_opts *o)
{
	dp_crl_opts c = { .ca_cert_file = o->ca_cert, .ca_key_file = o->ca_key,
			  .crl_file = o->crl, .revoke = (const char *const *)o->revoke.v,
			  .n_revoke = o->revoke.n, .days = (unsigned)o->days,
			  .on_cert = print_revoked };
	size_t n = 0;
	int rc = dp_crl_update(&c, &n);

	/* Loading: what fails is reading the CA, the list and the
	 * certificates to revoke; writing fails with DP_EIO. */
	if (rc != 0) {
		dp_cmd_fail("certs", "%s", dp_error_detail(rc));
		return dp_exit_status(rc, DP_EXIT_PHASE_LOAD);
	}
	printf("%s: %zu revoked, valid %llu days\n", o->crl, n, (unsigned long long)o->days);
	return 0;
}

/* The pin ownerd's --learner-pin takes, from a certificate file. */
static int print_pin(const char *path)
{
	char pin[DP_TLS_PIN_LEN + 1];
	FILE *f = fopen(path, "r");
	X509 *x;
	int rc;

	if (f == NULL) {
		dp_cmd_fail("certs", "cannot read '%s'", path);
		return dp_exit_status(DP_ETLS, DP_EXIT_PHASE_LOAD);
	}
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	ERR_clear_error();
	if (x == NULL) {
		dp_cmd_fail("certs", "'%s' holds no PEM certificate", path);
		return dp_exit_status(DP_ETLS, DP_EXIT_PHASE_LOAD);
	}
	rc = dp_tls_cert_pin(x, pin, sizeof(pin));
	X509_free(x);
	if (rc != 0) {
		dp_cmd_fail("certs", "%s: %s", path, dp_error_detail(rc));
		return dp_exit_status(rc, DP_EXIT_PHASE_RUN);
	}
	printf("%s\n", pin);
	return 0;
}

/* --kit: a site folder that exists is replaced only with --force. */
static int kit_free_site(const struct certs_opts *o, const char *site)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", o->kit, site);
	if (!o->force && stat(path, &st) == 0)
		return dp_error_set(DP_EINVAL, "%s exists (use --force to replace)", path);
	return 0;
}

static int deploy(void *arg)
{
	const struct certs_opts *o = arg;
	dp_certs_opts c = { .out_dir = o->out, .learner_name = o->learner_name,
			    .with_learner = o->have_learner, .days = (unsigned)o->days,
			    .ca_days = (unsigned)o->ca_days, .ca_cert_file = o->ca_cert,
			    .ca_key_file = o->ca_key, .force = o->force, .peer = o->peer,
			    .on_file = print_path };
	char (*gen)[32] = NULL, **names = NULL, cadir[4096];
	int rc = 0;

	if (o->pin != NULL)
		return print_pin(o->pin);
	if (o->crl != NULL)
		return update_crl(o);
	if (o->names.n) {
		c.owners = (const char *const *)o->names.v;
		c.n_owners = o->names.n;
	} else if (o->have_owners) {
		gen = calloc(o->owners, sizeof(*gen));
		names = calloc(o->owners, sizeof(*names));
		if (gen == NULL || names == NULL) {
			dp_cmd_fail("certs", "out of memory");
			free(names);
			free(gen);
			return dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
		}
		for (uint64_t i = 0; i < o->owners; i++) {
			snprintf(gen[i], sizeof(gen[i]), "owner-%llu", (unsigned long long)i + 1);
			names[i] = gen[i];
		}
		c.owners = (const char *const *)names;
		c.n_owners = o->owners;
	}
	if (o->kit) {
		snprintf(cadir, sizeof(cadir), "%s/ca", o->kit);
		c.out_dir = cadir;
		c.on_file = NULL;   /* the kit's files are printed where they end up */
		rc = kit_free_site(o, "learner");
		for (size_t i = 0; i < c.n_owners && rc == 0; i++)
			rc = kit_free_site(o, c.owners[i]);
	}
	if (rc == 0)
		rc = dp_certs_deploy(&c);
	if (rc == 0 && o->kit) {
		dp_kit_opts k = { .dir = o->kit, .owners = c.owners, .n_owners = c.n_owners,
				  .learner_name = o->learner_name ? o->learner_name : "learner",
				  .learner_addr = o->learner_addr, .on_file = print_path };
		snprintf(cadir, sizeof(cadir), "%s/ca/ca.crt", o->kit);
		print_path(cadir, NULL);
		if (!o->ca_cert) {
			snprintf(cadir, sizeof(cadir), "%s/ca/ca.key", o->kit);
			print_path(cadir, NULL);
		}
		rc = dp_kit_write(&k);
	}
	free(names);
	free(gen);
	if (rc != 0) {
		dp_cmd_fail("certs", "%s", dp_error_detail(rc));
		return dp_exit_status(rc, DP_EXIT_PHASE_RUN);
	}
	return 0;
}

int dp_cmd_certs(int argc, char **argv)
{
	struct certs_opts o = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "out", DP_CFG_PATH(&o.out), .metavar = "DIR",
		  .help = "output directory (created if missing)" },
		{ .name = "kit", DP_CFG_PATH(&o.kit), .metavar = "DIR",
		  .help = "instead of --out: startup kits, one folder per\n"
			  "site (DIR/learner, DIR/<owner>: certificate,\n"
			  "key, ca.crt, config, README.md) and DIR/ca" },
		{ .name = "learner-addr", DP_CFG_STRING(&o.learner_addr), .metavar = "HOST:PORT",
		  .help = "--kit: where owners reach the learner\n"
			  "(default: the learner's name, port 7800)" },
		{ .name = "owners", DP_CFG_U64(&o.owners), .min = 1, .max = 100000,
		  .given = &o.have_owners, .help = "owners named owner-1 ... owner-N" },
		{ .name = "names", DP_CFG_STRINGS(&o.names),
		  .help = "owners with these names (letters, digits,\n. _ -)" },
		{ .name = "learner-name", DP_CFG_STRING(&o.learner_name), .given = &o.have_learner,
		  .metavar = "NAME", .help = "learner certificate name (default learner)" },
		{ .name = "days", DP_CFG_U64(&o.days), .def = "365", .min = 1, .max = 36500,
		  .given = &o.have_days, .metavar = "D",
		  .help = "validity of learner and owner certificates\n"
			  "(with --crl: of the revocation list)" },
		{ .name = "ca-days", DP_CFG_U64(&o.ca_days), .def = "3650", .min = 1, .max = 36500,
		  .given = &o.have_ca_days, .metavar = "D", .help = "validity of a new CA" },
		{ .name = "ca-cert", DP_CFG_PATH(&o.ca_cert), .metavar = "FILE",
		  .help = "reuse this CA certificate (with --ca-key) to\n"
			  "add owners; the learner certificate is then\n"
			  "made only when --learner-name is given" },
		{ .name = "ca-key", DP_CFG_PATH(&o.ca_key), .metavar = "FILE",
		  .help = "the key of --ca-cert" },
		{ .name = "force", DP_CFG_BOOL(&o.force), .help = "replace existing files" },
		{ .name = "peer", DP_CFG_BOOL(&o.peer),
		  .help = "certificates for peer-mode agents (ownerd --peer):\nserverAuth and "
			  "clientAuth" },
		{ .name = "crl", DP_CFG_PATH(&o.crl), .metavar = "FILE",
		  .help = "write the CA's revocation list here (with\n"
			  "--ca-cert, --ca-key): the entries of an\n"
			  "existing FILE are kept, --revoke adds more;\n"
			  "run again before it expires (--days)" },
		{ .name = "revoke", DP_CFG_STRINGS(&o.revoke), .metavar = "CRT,...",
		  .help = "certificate files to add to --crl" },
		{ .name = "pin", DP_CFG_PATH(&o.pin), .metavar = "FILE",
		  .help = "print the public-key pin of the certificate\n"
			  "in FILE (sha256//BASE64, for ownerd's\n"
			  "--learner-pin) and exit" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync certs",
		.command = true,
		.synopsis = "--out DIR (--owners N | --names A,B,...) [options]\n"
			    "--kit DIR (--owners N | --names A,B,...) [--learner-name NAME]\n"
			    "    [--learner-addr HOST:PORT] [options]\n"
			    "--ca-cert F --ca-key K --crl FILE [--revoke CRT,...] [--days D]\n"
			    "--pin FILE.crt",
		.summary = "Make a deployment CA and the TLS certificates of the learner and the owners\n"
			   "(EC P-256, TLS 1.3, mutual authentication).  Files in DIR:\n"
			   "  ca.crt ca.key              the CA (keep ca.key off the daemons' machines)\n"
			   "  learner.crt learner.key    the learner (SAN: its name, localhost, 127.0.0.1, ::1)\n"
			   "  <owner>.crt <owner>.key    one pair per owner; the certificate's CN is the\n"
			   "                             owner's identity on the wire\n"
			   "Keys are written with mode 0600.  The learner's certificate has\n"
			   "extendedKeyUsage serverAuth only, an owner's clientAuth only; owner names\n"
			   "may not be the learner's name, localhost or an IP address.\n"
			   "--kit DIR writes the same into DIR/ca, then moves each site's pair into\n"
			   "a folder of its own with ca.crt, a ready config (/etc/dpasync and\n"
			   "/var/lib/dpasync paths, as deploy/systemd expects; the learner's pair as\n"
			   "learner.crt/.key) and a README.md of the site's install steps.\n"
			   "--crl writes the CA's revocation list (daemons' --crl); --pin prints the\n"
			   "pin of a certificate's public key (ownerd's --learner-pin).",
		.entries = entries,
		.validate = check_opts,
		.validate_arg = &o,
	};

	return dp_cmd_run(&spec, argc, argv, deploy, &o);
}
