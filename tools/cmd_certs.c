/* dpasync certs: a deployment CA plus learner and owner certificates
 * (tools/lib/certs.h does the work). */
#include <stdio.h>
#include <stdlib.h>

#include "common/core/error.h"
#include "common/net/config.h"
#include "tools/cmds.h"
#include "tools/lib/certs.h"

struct certs_opts {
	char *out, *learner_name, *ca_cert, *ca_key;
	uint64_t owners, days, ca_days;
	struct dp_config_strings names;
	bool force, have_owners, have_learner;
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

static int deploy(void *arg)
{
	const struct certs_opts *o = arg;
	dp_certs_opts c = { .out_dir = o->out, .learner_name = o->learner_name,
			    .with_learner = o->have_learner, .days = (unsigned)o->days,
			    .ca_days = (unsigned)o->ca_days, .ca_cert_file = o->ca_cert,
			    .ca_key_file = o->ca_key, .force = o->force, .on_file = print_path };
	char (*gen)[32] = NULL, **names = NULL;
	int rc;

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
			return 1;
		}
		for (uint64_t i = 0; i < o->owners; i++) {
			snprintf(gen[i], sizeof(gen[i]), "owner-%llu", (unsigned long long)i + 1);
			names[i] = gen[i];
		}
		c.owners = (const char *const *)names;
		c.n_owners = o->owners;
	}
	rc = dp_certs_deploy(&c);
	free(names);
	free(gen);
	if (rc != 0) {
		dp_cmd_fail("certs", "%s", dp_error_detail(rc));
		return rc == DP_EINVAL ? 2 : 1;
	}
	return 0;
}

int dp_cmd_certs(int argc, char **argv)
{
	struct certs_opts o = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "out", DP_CFG_PATH(&o.out), .flags = DP_CONFIG_REQUIRED, .metavar = "DIR",
		  .help = "output directory (created if missing)" },
		{ .name = "owners", DP_CFG_U64(&o.owners), .min = 1, .max = 100000,
		  .given = &o.have_owners, .help = "owners named owner-1 ... owner-N" },
		{ .name = "names", DP_CFG_STRINGS(&o.names),
		  .help = "owners with these names (letters, digits,\n. _ -)" },
		{ .name = "learner-name", DP_CFG_STRING(&o.learner_name), .given = &o.have_learner,
		  .metavar = "NAME", .help = "learner certificate name (default learner)" },
		{ .name = "days", DP_CFG_U64(&o.days), .def = "365", .min = 1, .max = 36500,
		  .metavar = "D", .help = "validity of learner and owner certificates" },
		{ .name = "ca-days", DP_CFG_U64(&o.ca_days), .def = "3650", .min = 1, .max = 36500,
		  .metavar = "D", .help = "validity of a new CA" },
		{ .name = "ca-cert", DP_CFG_PATH(&o.ca_cert), .metavar = "FILE",
		  .help = "reuse this CA certificate (with --ca-key) to\n"
			  "add owners; the learner certificate is then\n"
			  "made only when --learner-name is given" },
		{ .name = "ca-key", DP_CFG_PATH(&o.ca_key), .metavar = "FILE",
		  .help = "the key of --ca-cert" },
		{ .name = "force", DP_CFG_BOOL(&o.force), .help = "replace existing files" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync certs",
		.command = true,
		.synopsis = "--out DIR (--owners N | --names A,B,...) [options]",
		.summary = "Make a deployment CA and the TLS certificates of the learner and the owners\n"
			   "(EC P-256, TLS 1.3, mutual authentication).  Files in DIR:\n"
			   "  ca.crt ca.key              the CA (keep ca.key off the daemons' machines)\n"
			   "  learner.crt learner.key    the learner (SAN: its name, localhost, 127.0.0.1, ::1)\n"
			   "  <owner>.crt <owner>.key    one pair per owner; the certificate's CN is the\n"
			   "                             owner's identity on the wire\n"
			   "Keys are written with mode 0600.",
		.entries = entries,
		.validate = check_opts,
		.validate_arg = &o,
	};

	return dp_cmd_run(&spec, argc, argv, deploy, &o);
}
