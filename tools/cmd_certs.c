/* dpasync certs: a deployment CA plus learner and owner certificates
 * (tools/lib/certs.h does the work). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/certs.h"
#include "tools/cmds.h"
#include "common/core/error.h"
#include "common/core/num.h"

static const char dp__certs_usage[] =
	"usage: dpasync certs --out DIR (--owners N | --names A,B,...) [options]\n"
	"\n"
	"Make a deployment CA and the TLS certificates of the learner and the owners\n"
	"(EC P-256, TLS 1.3, mutual authentication).  Files in DIR:\n"
	"  ca.crt ca.key              the CA (keep ca.key off the daemons' machines)\n"
	"  learner.crt learner.key    the learner (SAN: its name, localhost, 127.0.0.1, ::1)\n"
	"  <owner>.crt <owner>.key    one pair per owner; the certificate's CN is the\n"
	"                             owner's identity on the wire\n"
	"Keys are written with mode 0600.\n"
	"\n"
	"  --out DIR            output directory (created if missing; required)\n"
	"  --owners N           owners named owner-1 ... owner-N\n"
	"  --names A,B,...      owners with these names (letters, digits, . _ -)\n"
	"  --learner-name NAME  learner certificate name (default learner)\n"
	"  --days D             validity of learner and owner certificates (default 365)\n"
	"  --ca-days D          validity of a new CA (default 3650)\n"
	"  --ca-cert FILE       reuse this CA certificate (with --ca-key) to add\n"
	"  --ca-key FILE        owners; the learner certificate is then made only\n"
	"                       when --learner-name is given\n"
	"  --force              replace existing files\n"
	"  --help               this text\n";

static void dp__certs_print(const char *path, void *arg)
{
	printf("%s\n", path);
}

/* Split a comma-separated list in place; *out is malloc'ed. */
static int dp__split_names(char *s, char ***out, size_t *count)
{
	size_t n = 1, k = 0;
	char **v, *p, *tok;

	for (p = s; *p; p++)
		if (*p == ',')
			n++;
	v = calloc(n, sizeof(*v));
	if (v == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	p = s;
	while ((tok = strsep(&p, ",")) != NULL) {
		if (*tok == '\0') {
			free(v);
			return dp_error_set(DP_EINVAL, "--names: empty name in the list");
		}
		v[k++] = tok;
	}
	*out = v;
	*count = k;
	return 0;
}

int dp_cmd_certs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "owners", required_argument, NULL, 'n' },
		{ "names", required_argument, NULL, 'N' },
		{ "learner-name", required_argument, NULL, 'l' },
		{ "days", required_argument, NULL, 'd' },
		{ "ca-days", required_argument, NULL, 'D' },
		{ "ca-cert", required_argument, NULL, 'c' },
		{ "ca-key", required_argument, NULL, 'k' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	dp_certs_opts o = { 0 };
	uint64_t n_owners = 0, days = 365, ca_days = 3650;
	int have_n = 0, c, rc = 2, err;
	char *names_arg = NULL, **names = NULL, (*gen)[32] = NULL;
	size_t n_names = 0;

	optind = 1;
	opterr = 0;     /* one line of our own instead of getopt's */
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		err = 0;
		switch (c) {
		case 'o': o.out_dir = optarg; break;
		case 'n': have_n = 1; err = dp_num_parse_u64("--owners", optarg, &n_owners); break;
		case 'N': names_arg = optarg; break;
		case 'l': o.learner_name = optarg; o.with_learner = 1; break;
		case 'd': err = dp_num_parse_u64("--days", optarg, &days); break;
		case 'D': err = dp_num_parse_u64("--ca-days", optarg, &ca_days); break;
		case 'c': o.ca_cert_file = optarg; break;
		case 'k': o.ca_key_file = optarg; break;
		case 'f': o.force = 1; break;
		case 'h': fputs(dp__certs_usage, stdout); return 0;
		case ':':
			dp_tool_fail("certs", "option '%s' needs a value", argv[optind - 1]);
			return 2;
		default:
			dp_tool_fail("certs", "unknown option '%s' (try dpasync certs --help)",
				     argv[optind - 1]);
			return 2;
		}
		if (err) {
			dp_tool_fail("certs", "%s", dp_error_detail(err));
			return 2;
		}
	}
	if (optind < argc) {
		dp_tool_fail("certs", "unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (o.out_dir == NULL) {
		dp_tool_fail("certs", "--out is required (try dpasync certs --help)");
		return 2;
	}
	if (have_n && names_arg) {
		dp_tool_fail("certs", "give either --owners or --names, not both");
		return 2;
	}
	if ((o.ca_cert_file == NULL) != (o.ca_key_file == NULL)) {
		dp_tool_fail("certs", "--ca-cert and --ca-key go together");
		return 2;
	}
	if (!have_n && !names_arg && !(o.ca_cert_file && o.learner_name)) {
		dp_tool_fail("certs", "--owners N or --names A,B,... is required "
			     "(try dpasync certs --help)");
		return 2;
	}
	if (have_n && (n_owners == 0 || n_owners > 100000)) {
		dp_tool_fail("certs", "--owners must be between 1 and 100000");
		return 2;
	}
	if (days == 0 || days > 36500 || ca_days == 0 || ca_days > 36500) {
		dp_tool_fail("certs", "--days and --ca-days must be between 1 and 36500");
		return 2;
	}
	if (!o.ca_cert_file && ca_days < days) {
		dp_tool_fail("certs", "--ca-days (%llu) is shorter than --days (%llu)",
			     (unsigned long long)ca_days, (unsigned long long)days);
		return 2;
	}
	if (names_arg) {
		err = dp__split_names(names_arg, &names, &n_names);
		if (err) {
			dp_tool_fail("certs", "%s", dp_error_detail(err));
			return err == DP_ENOMEM ? 1 : 2;
		}
		o.owners = (const char *const *)names;
		o.n_owners = n_names;
	} else if (have_n) {
		gen = calloc(n_owners, sizeof(*gen));
		names = calloc(n_owners, sizeof(*names));
		if (gen == NULL || names == NULL) {
			dp_tool_fail("certs", "out of memory");
			rc = 1;
			goto done;
		}
		for (uint64_t i = 0; i < n_owners; i++) {
			snprintf(gen[i], sizeof(gen[i]), "owner-%llu", (unsigned long long)i + 1);
			names[i] = gen[i];
		}
		o.owners = (const char *const *)names;
		o.n_owners = n_owners;
	}
	o.days = (unsigned)days;
	o.ca_days = (unsigned)ca_days;
	o.on_file = dp__certs_print;
	err = dp_certs_deploy(&o);
	if (err) {
		dp_tool_fail("certs", "%s", dp_error_detail(err));
		rc = err == DP_EINVAL ? 2 : 1;
		goto done;
	}
	rc = 0;
done:
	free(names);
	free(gen);
	return rc;
}
