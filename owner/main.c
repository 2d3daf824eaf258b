/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd: the lifecycle -- settings, startup checks, signals, metrics
 * endpoint, THE one way to stop (stop(), which the client reaches through
 * the callback registered here), and the exit code.  The top of the
 * daemon: it builds budget, answer and client, in that order, and hands
 * each what it needs (own.h).
 *
 * Startup is all-or-nothing and silent until it has succeeded: every check
 * that can fail (flags, certificates, dataset, ledger, metrics address)
 * runs before the first log line, so a bad start prints exactly one line
 * on stderr and exits 2 (bad configuration or input) or 1 (anything else). */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/log.h"
#include "common/core/schema.h"
#include "common/core/serve.h"
#include "common/net/addr.h"
#include "common/net/config.h"
#include "common/net/frame.h"
#include "common/net/httpd.h"
#include "common/net/schemasum.h"
#include "common/net/tls.h"

#include "common/core/fingerprint.h"
#include "owner/own.h"

/* The daemon: the settings and what startup makes, and the three roles. */
struct own_daemon {
	struct own_settings set;
	char id[DP_TLS_ID_MAX + 1];     /* our identity: CN of --cert */
	char host[DP_ADDR_HOST_MAX + 1]; /* from --learner */
	uint16_t port;
	char *model_out;                /* resolved path (owned) */
	char *model_before;             /* the default before: <ledger>/../model.json
					   (owned; NULL with --model-out) */
	char *served_out;               /* --peer --serve: resolved path (owned) */
	char schema_fp[DP_FINGERPRINT_SIZE]; /* of our rows (Hello.schema) */
	dp_schemasum *schema_sum;       /* what it is of (Hello.schema_summary) */
	dp_dataset ds;
	dp_dataset curv;                /* --curvature (have_curv) */
	bool have_curv;
	SSL_CTX *ctx;
	dp_csprng *rng;
	dp_bitsource bits;              /* the loop thread's: clock gaps, backoff */
	dp_csprng *answer_rng;
	dp_bitsource answer_bits;       /* the answer worker's: the noise */
	struct own_metrics m;

	struct own_budget budget;
	struct own_answer answer;
	struct own_client client;
	struct own_peer *peer;          /* --peer: the agent instead of the client */
	SSL_CTX *server_ctx;            /* --peer: for the neighbours that dial us */
	struct own_progress progress;

	uv_loop_t *loop;
	uv_signal_t sigterm, sigint;
	struct dp_httpd *httpd;
	bool stopping;
	int exit_code;
};

static struct own_daemon ownerd;

#define S (ownerd.set)
static const struct dp_config_entry entries[] = {
	{ .name = "learner", DP_CFG_STRING(&S.learner),
	  .group = "Learner", .metavar = "HOST:PORT",
	  .help = "address of learnerd ([v6]:port for IPv6 literals); required unless --peer" },
	{ .name = "server-name", DP_CFG_STRING(&S.server_name), .def = "learner",
	  .group = "Learner", .metavar = "NAME",
	  .help = "name the learner's certificate must carry" },
	{ .name = "learner-pin", DP_CFG_STRING(&S.learner_pin), .group = "Learner",
	  .metavar = "sha256//B64[;...]",
	  .help = "accept only a learner whose public key has this pin (dpasync certs --pin "
		  "learner.crt); ';' separates the pins of a key rotation" },
	{ .name = "ca", DP_CFG_PATH(&S.ca), .flags = DP_CONFIG_REQUIRED, .group = "TLS",
	  .help = "deployment CA certificate (PEM)" },
	{ .name = "cert", DP_CFG_PATH(&S.cert), .flags = DP_CONFIG_REQUIRED, .group = "TLS",
	  .help = "this owner's certificate (PEM); its CN is the owner's identity" },
	{ .name = "key", DP_CFG_PATH(&S.key), .flags = DP_CONFIG_REQUIRED, .group = "TLS",
	  .help = "this owner's private key (PEM)" },
	{ .name = "crl", DP_CFG_PATH(&S.crl), .group = "TLS", .metavar = "FILE",
	  .help = "the CA's revocation list (PEM, from dpasync certs --crl): a revoked learner "
		  "is refused" },
	{ .name = "data", DP_CFG_PATH(&S.data), .flags = DP_CONFIG_REQUIRED, .group = "Data",
	  .metavar = "CSV", .help = "the owner's rows (CSV with a header, optionally .gz)" },
	{ .name = "target", DP_CFG_STRING(&S.target), .group = "Data", .metavar = "COL",
	  .help = "target column (default y, or the schema's target)" },
	{ .name = "bias", DP_CFG_BOOL(&S.bias), .def = "false", .group = "Data",
	  .help = "append a constant-1 bias column; must equal the job's bias (Welcome), "
		  "else this owner leaves with exit 2" },
	{ .name = "schema", DP_CFG_PATH(&S.schema), .group = "Data",
	  .help = "feature schema (JSON) shared by all owners" },
	{ .name = "epsilon", DP_CFG_DOUBLE_INF(&S.epsilon), .def = "1", .min = 0,
	  .max = INFINITY, .min_exclusive = true, .group = "Privacy",
	  .help = "privacy budget of each job (inf only with --allow-no-noise)" },
	{ .name = "lifetime-epsilon", DP_CFG_DOUBLE_INF(&S.lifetime_epsilon), .def = "0",
	  .min = 0, .max = INFINITY, .group = "Privacy",
	  .help = "privacy budget of the dataset over all jobs, recorded in the ledger directory "
		  "at its first start (0: the recorded cap, or --epsilon for a new directory; inf: "
		  "no lifetime cap); above the recorded cap it is refused (dpasync ledger "
		  "raise-lifetime raises it), below it lowers it for good (docs/ledger.md §11)" },
	{ .name = "delta", DP_CFG_DOUBLE(&S.delta), .def = "0", .min = 0, .max = 1,
	  .group = "Privacy",
	  .help = "delta of the (epsilon, delta) guarantee of each job, below 1/n (0: pure "
		  "epsilon-DP only, Gaussian jobs refused; > 0 allows them; peer mode, at most "
		  "0.5: the budget is split by advanced composition, or with --mechanism gaussian "
		  "taken as zCDP at this delta; docs/ownerd.md \"Mechanisms and delta\")" },
	{ .name = "lifetime-delta", DP_CFG_DOUBLE(&S.lifetime_delta), .def = "-1", .min = -1,
	  .max = 1, .group = "Privacy",
	  .help = "delta of the dataset's guarantee over all jobs, at least --delta (-1: "
		  "--delta)" },
	{ .name = "answers-cap", DP_CFG_U64(&S.answers_cap), .def = "0", .group = "Privacy",
	  .metavar = "K",
	  .help = "most answers ever given (0 = the K_i the learner plans, sent in its Welcome)" },
	{ .name = "ledger", DP_CFG_PATH(&S.ledger), .flags = DP_CONFIG_REQUIRED,
	  .group = "Privacy", .metavar = "DIR",
	  .help = "budget ledger directory, one ledger file per job (created on first use)" },
	{ .name = "reserve-ahead", DP_CFG_BOOL(&S.reserve_ahead), .def = "true",
	  .group = "Privacy",
	  .help = "reserve the next answer's share, synced after each answer is sent, so that no "
		  "fdatasync waits between a query and its answer; a crash or the job's end "
		  "forfeits at most that one share (docs/ledger.md §9)" },
	{ .name = "allow-no-noise", DP_CFG_BOOL(&S.allow_no_noise), .def = "false",
	  .group = "Privacy", .help = "permit --epsilon inf (exact answers; testing only)" },
	{ .name = "theta-max", DP_CFG_DOUBLE_INF(&S.theta_max), .def = "1e6", .min = 0,
	  .max = INFINITY, .min_exclusive = true, .group = "Privacy", .metavar = "X",
	  .help = "refuse a query with some |theta_j| above X (inf: no bound; docs/privacy.md "
		  "§7)" },
	{ .name = "rate", DP_CFG_DOUBLE(&S.rate), .def = "1", .min = 0, .max = 1e6,
	  .min_exclusive = true, .group = "Clock", .metavar = "R",
	  .help = "Poisson clock rate (update requests per second)" },
	{ .name = "welcome-timeout", DP_CFG_DURATION(&S.welcome_timeout), .def = "10m",
	  .min = 0.01, .max = 1e6, .group = "Learner", .metavar = "SECONDS",
	  .help = "reconnect when no Welcome arrives this long after the handshake (the learner "
		  "sends it once every owner has said Hello)" },
	{ .name = "once", DP_CFG_BOOL(&S.once), .def = "false", .group = "Learner",
	  .help = "exit after one job (0 after Done) instead of waiting for the next job" },
	{ .name = "connect-attempts", DP_CFG_U64(&S.connect_attempts), .def = "10", .min = 0,
	  .max = 1e9, .group = "Learner", .metavar = "N",
	  .help = "with --once: exit 1 after N attempts that reach something other than the "
		  "verified learner on its address, with no Welcome between them (0: never); "
		  "without --once ownerd retries for ever" },
	{ .name = "model-out", DP_CFG_PATH(&S.model_out), .group = "Output",
	  .help = "where the final model from Done is saved (default: model.json in the "
		  "ledger directory)" },
	{ .name = "metrics-listen", DP_CFG_STRING(&S.metrics_listen), .def = "",
	  .group = "Operations", .metavar = "HOST:PORT",
	  .help = "Prometheus /metrics and /healthz (empty = off; port 0 = any)" },
	{ .name = "port-file", DP_CFG_PATH(&S.port_file), .group = "Operations",
	  .help = "written once running: 'metrics=PORT' (0 when metrics are off)" },
	{ .name = "peer", DP_CFG_BOOL(&S.peer), .def = "false", .group = "Peer",
	  .help = "peer mode: an agent of docs/peer-agents.md, no learner" },
	{ .name = "graph", DP_CFG_PATH(&S.graph), .group = "Peer", .metavar = "CSV",
	  .help = "the graph (a,b,w); our neighbours are those of our certificate's CN" },
	{ .name = "peers", DP_CFG_PATH(&S.peers), .group = "Peer", .metavar = "CSV",
	  .help = "address book id,addr of the neighbours (read again at every dial)" },
	{ .name = "listen", DP_CFG_STRING(&S.listen), .def = "127.0.0.1:0", .group = "Peer",
	  .metavar = "HOST:PORT", .help = "where the neighbours that dial us connect (port 0: any)" },
	{ .name = "schedule", DP_CFG_PATH(&S.schedule), .group = "Peer", .metavar = "CSV",
	  .help = "step,agent: wake exactly at our listed steps (reproducible runs) instead of "
		  "the Poisson clock" },
	{ .name = "model", DP_CFG_ENUM(&S.model, dp_model_names), .def = "linear",
	  .group = "Peer", .help = "the local loss" },
	{ .name = "mechanism", DP_CFG_ENUM(&S.mechanism, dp_query_mech_names),
	  .def = "laplace", .given = &S.mechanism_given, .group = "Peer",
	  .help = "the noisy gradients' mechanism, as dpasync sim --mode p2p --mechanism: "
		  "laplace (L1 --clip, the paper's) | gaussian (L2 --clip, zCDP at --delta > 0; "
		  "docs/peer-agents.md \"Privacy\"); --peer only" },
	{ .name = "mu", DP_CFG_DOUBLE(&S.mu), .def = "1", .min = 0, .min_exclusive = true,
	  .max = 1e12, .group = "Peer", .help = "trade-off mu between smoothing and the local loss" },
	{ .name = "confidence", DP_CFG_DOUBLE(&S.confidence), .def = "1", .min = 0,
	  .min_exclusive = true, .max = 1, .group = "Peer",
	  .help = "confidence c_i = m_i / max_j m_j" },
	{ .name = "lambda", DP_CFG_DOUBLE(&S.lambda), .def = "-1", .min = -1, .max = 1e12,
	  .group = "Peer",
	  .help = "lambda_i of the local loss (-1: --lambda-per-row / m_i)" },
	{ .name = "lambda-per-row", DP_CFG_DOUBLE(&S.lambda_per_row), .def = "1", .min = 0,
	  .max = 1e12, .group = "Peer", .help = "lambda_i = this / m_i unless --lambda" },
	{ .name = "clip", DP_CFG_DOUBLE(&S.clip), .def = "1", .min = 0, .min_exclusive = true,
	  .max = 1e12, .group = "Peer",
	  .help = "clip of each row's gradient (the sensitivity): L1, L2 for --mechanism "
		  "gaussian" },
	{ .name = "x2max", DP_CFG_DOUBLE(&S.x2max), .def = "0", .min = 0, .max = 1e12,
	  .group = "Peer", .help = "public bound on ||x||_2^2 for the smoothness (0: p)" },
	{ .name = "wakeups", DP_CFG_U64(&S.wakeups), .def = "10", .min = 1, .max = 1e9,
	  .given = &S.wakeups_given, .group = "Peer", .metavar = "T", .help = "wake-ups T_i the budget is split over" },
	{ .name = "warm-start", DP_CFG_DOUBLE(&S.warm_start), .def = "0", .min = 0,
	  .max = 1e12, .group = "Peer", .metavar = "EPS",
	  .help = "private local warm start spending EPS of --epsilon (0: none)" },
	{ .name = "warm-steps", DP_CFG_U64(&S.warm_steps), .def = "10", .min = 1, .max = 1000,
	  .group = "Peer", .metavar = "K",
	  .help = "noisy gradient steps of the warm start, EPS/K each" },
	{ .name = "trace", DP_CFG_PATH(&S.trace), .group = "Peer", .metavar = "CSV",
	  .help = "per-wake-up wall-clock trace (default: trace.csv in the ledger directory)" },
	{ .name = "linger", DP_CFG_DURATION(&S.linger), .def = "60", .min = 0, .max = 1e6,
	  .group = "Peer", .metavar = "SECONDS",
	  .help = "once done, wait at most this long for the neighbours to be done" },
	{ .name = "serve", DP_CFG_ENUM(&S.serve, own_serve_names), .def = "none",
	  .group = "Served model",
	  .help = "refit: also fit a personal model on our rows towards a prior pooled from "
		  "the releases (not private, never sent; docs/peer-agents.md §6)" },
	{ .name = "release", DP_CFG_ENUM(&S.release, dp_serve_release_names), .def = "models",
	  .given = &S.release_given, .group = "Served model",
	  .help = "what we release: models (the noisy models of the wake-ups) | grad0 (one "
		  "noisy clipped gradient at 0, the whole budget)" },
	{ .name = "prior", DP_CFG_ENUM(&S.prior, dp_serve_prior_names), .def = "graph",
	  .given = &S.prior_given, .group = "Served model",
	  .help = "the prior pools the releases of graph (us and our neighbours, W_ij) | all "
		  "(every agent, relayed over the graph)" },
	{ .name = "prior-scale", DP_CFG_ENUM(&S.prior_scale, dp_serve_scale_names),
	  .def = "fit", .given = &S.scale_given, .group = "Served model",
	  .help = "fit (the prior's length fitted on our rows) | none" },
	{ .name = "curvature", DP_CFG_PATH(&S.curvature), .group = "Served model",
	  .metavar = "CSV",
	  .help = "--release grad0: public rows (our columns) whose second moment turns the "
		  "pooled gradient into the prior (default: our own rows)" },
	{ .name = "tau", DP_CFG_DOUBLES(&S.taus), .min = 0, .max = 1e12,
	  .group = "Served model", .metavar = "T,..",
	  .help = "the tau grid, 0 among it (one value: tau fixed; default "
		  "0,1,3,10,30,100,300,1000)" },
	{ .name = "folds", DP_CFG_U64(&S.folds), .def = "5", .min = 2, .max = 1000,
	  .given = &S.folds_given, .group = "Served model", .metavar = "K",
	  .help = "cross-validation folds for tau (row r in fold r mod K)" },
	{ .name = "served-out", DP_CFG_PATH(&S.served_out), .group = "Served model",
	  .help = "the served model's file (default: served.json in the ledger directory)" },
	{ .name = "log-level", DP_CFG_ENUM(&S.log_level, dp_log_level_names), .def = "info",
	  .group = "Operations", .help = "least severe log level printed" },
	{ .name = "progress-every", DP_CFG_DURATION(&S.progress_every), .def = "10", .min = 0,
	  .max = 1e6, .group = "Operations", .metavar = "SECONDS",
	  .help = "one summary line (answers, ticks, epsilon) this often, and one at exit "
		  "(0 = only at exit)" },
	{ .name = "max-frame", DP_CFG_SIZE(&S.max_frame), .def = "16777216", .min = 64,
	  .max = (double)DP_FRAME_MAX_LIMIT, .group = "Operations", .metavar = "BYTES",
	  .help = "largest wire frame accepted or sent" },
	DP_CONFIG_END,
};
#undef S


/* Prefix the current error detail (copied first: dp_error_set writes the
 * same per-thread buffer dp_error_detail returns). */
static int wrap(int r, const char *prefix)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s", dp_error_detail(r));
	return dp_error_set(r, "%s: %s", prefix, buf);
}

/* Checks across settings; --learner is kept split for the client. */
static int validate(void *arg)
{
	struct own_daemon *d = arg;
	int r;

	if (d->set.peer) {
		if (d->set.learner != NULL)
			return dp_error_set(DP_EINVAL, "--learner and --peer exclude each other");
		if (d->set.graph == NULL || d->set.peers == NULL)
			return dp_error_set(DP_EINVAL, "--peer needs --graph and --peers");
	} else {
		if (d->set.learner == NULL)
			return dp_error_set(DP_EINVAL, "--learner is required (or --peer)");
		r = dp_addr_split("--learner", d->set.learner, 0, d->host, sizeof(d->host),
				  &d->port);
		if (r < 0)
			return r;
	}
	if (d->set.server_name == NULL || d->set.server_name[0] == '\0')
		return dp_error_set(DP_EINVAL, "--server-name must not be empty");
	if (d->set.learner_pin != NULL && d->set.learner_pin[0] != '\0') {
		r = dp_tls_check_pins(d->set.learner_pin);
		if (r < 0) {
			char buf[256];

			snprintf(buf, sizeof(buf), "%s", dp_error_detail(r));
			return dp_error_set(r, "--learner-pin: %s", buf);
		}
	}
	if (d->set.lambda < 0 && d->set.lambda != -1)
		return dp_error_set(DP_EINVAL, "--lambda must be >= 0, or -1 for --lambda-per-row");
	if (d->set.lifetime_epsilon != 0 && d->set.lifetime_epsilon < d->set.epsilon)
		return dp_error_set(DP_EINVAL, "--lifetime-epsilon %g is below --epsilon %g (a job "
				    "could never spend its budget)", d->set.lifetime_epsilon,
				    d->set.epsilon);
	r = own_mechanism_validate(&d->set);
	if (r == 0)
		r = own_peerserve_validate(&d->set);
	if (r < 0)
		return r;
	if (isinf(d->set.epsilon) && !d->set.allow_no_noise)
		return dp_error_set(DP_EINVAL, "--epsilon inf releases exact answers; it needs "
				    "--allow-no-noise");
	if (d->set.target != NULL && d->set.target[0] == '\0')
		return dp_error_set(DP_EINVAL, "--target must not be empty: set the data's target "
				    "column (a startup kit leaves it unset)");
	if (d->set.metrics_listen != NULL && d->set.metrics_listen[0] != '\0') {
		struct sockaddr_storage ss;

		r = dp_addr_parse_literal("--metrics-listen", d->set.metrics_listen,
					  DP_ADDR_PORT_ZERO, &ss);
		if (r < 0)
			return r;
	}
	return 0;
}

static const struct dp_config_spec spec = {
	.program = "ownerd",
	.summary = "dpasync data owner: answers the learner's gradient queries with "
		   "differential privacy and keeps a durable budget ledger.",
	.entries = entries,
	.validate = validate,
	.validate_arg = &ownerd,
};

static int die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dp_log_vplain("ownerd", fmt, ap);
	va_end(ap);
	return code;
}

/* Our identity is the CN of our own certificate (what the learner sees). */
static int load_identity(struct own_daemon *d)
{
	FILE *f = fopen(d->set.cert, "r");
	X509 *x;
	int r;

	if (f == NULL)
		return dp_error_set(DP_ETLS, "%s: %s", d->set.cert, strerror(errno));
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (x == NULL)
		return dp_error_set(DP_ETLS, "%s: not a PEM certificate", d->set.cert);
	r = dp_tls_cert_identity(x, d->id, sizeof(d->id));
	X509_free(x);
	if (r < 0)
		return wrap(r, d->set.cert);
	return 0;
}

static int load_data(struct own_daemon *d)
{
	dp_schema *schema = NULL;
	dp_load_opts o = { 0 };
	const char *schema_path = d->set.schema;
	char applied[4096];
	int r;

	if (d->set.schema) {
		r = dp_schema_load(d->set.schema, &schema);
		if (r < 0)
			return r;
		o.schema = schema;
		o.target = d->set.target;   /* NULL: the schema's */
	} else {
		o.target = d->set.target ? d->set.target : "y";
	}
	o.bias = d->set.bias;
	r = dp_dataset_load(&d->ds, d->set.data, &o);
	if (r == 0 && d->set.curvature) {
		r = dp_dataset_load(&d->curv, d->set.curvature, &o);
		if (r == 0 && d->curv.p != d->ds.p)
			r = dp_error_set(DP_EINVAL, "--curvature %s: %zu columns, our data %zu",
					 d->set.curvature, d->curv.p, d->ds.p);
		d->have_curv = r == 0;
	}
	/* A file `dpasync prep` made: its schema.json was applied, and counts
	 * in the fingerprint and the summary (docs/ownerd.md "Prepared data"). */
	if (r == 0 && schema_path == NULL) {
		r = dp_fingerprint_applied(&d->ds, d->set.bias, applied, sizeof(applied));
		if (r == 1) {
			schema_path = applied;
			r = dp_schema_load(applied, &schema);
			if (r == 0)
				DP_INFO("owner", "data %s prepared with %s (applied already)",
					d->set.data, applied);
		}
	}
	if (r == 0)
		r = dp_fingerprint_schema(&d->ds, d->set.bias, schema_path, d->schema_fp);
	if (r == 0)
		r = dp_schemasum_new(&d->ds, d->set.bias, schema, &d->schema_sum);
	dp_schema_destroy(schema);
	return r;
}

/* The model's path: --model-out, or model.json in the ledger directory,
 * which is this owner's alone (its lock).  Its parent, the default
 * before, is shared by sibling ledger directories (docs/ownerd.md "Files"):
 * it is remembered to be named, never read or written. */
static int resolve_model_out(struct own_daemon *d)
{
	char *dirbuf;
	int n;

	/* The served model (--peer --serve) beside it, in the agent's own
	 * ledger directory: never a sibling's. */
	if (d->set.serve)
		n = d->set.served_out ? asprintf(&d->served_out, "%s", d->set.served_out) :
			asprintf(&d->served_out, "%s/served.json", d->set.ledger);
	else
		n = 0;
	if (n < 0) {
		d->served_out = NULL;
		return DP_ENOMEM;
	}
	if (d->set.model_out) {
		d->model_out = strdup(d->set.model_out);
		return d->model_out ? 0 : DP_ENOMEM;
	}
	if (asprintf(&d->model_out, "%s/model.json", d->set.ledger) < 0) {
		d->model_out = NULL;
		return DP_ENOMEM;
	}
	dirbuf = strdup(d->set.ledger);
	if (dirbuf == NULL)
		return DP_ENOMEM;
	n = asprintf(&d->model_before, "%s/model.json", dirname(dirbuf));
	free(dirbuf);
	if (n < 0) {
		d->model_before = NULL;
		return DP_ENOMEM;
	}
	return 0;
}

/* sshd's StrictModes (docs/ownerd.md "File permissions"): the key, the
 * rows and the ledger directory, and in peer mode a model given with
 * --model-out (read back after a restart), may be writable by this user
 * and root only. */
static int check_trusted(const struct own_daemon *d)
{
	int r;

	r = dp_file_check_trusted("--key", d->set.key);
	if (r == 0)
		r = dp_file_check_trusted("--data", d->set.data);
	if (r == 0)
		r = dp_file_check_trusted("--ledger", d->set.ledger);
	if (r == 0 && d->set.peer && d->set.model_out != NULL)
		r = dp_file_check_trusted("--model-out", d->set.model_out);
	/* read back after a restart (the releases it pooled) */
	if (r == 0 && d->set.serve && d->set.served_out != NULL)
		r = dp_file_check_trusted("--served-out", d->set.served_out);
	return r;
}

/* ---- metrics ------------------------------------------------------------ */

static const double grad_buckets[] = {
	0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

static int metrics_init(struct own_metrics *m)
{
	/* The two gauges of one job's ledger name it (docs/operations.md §2). */
	static const char *const job_id[] = { "job_id", NULL };
	static const char *const unbound[] = { "" };
	static const char *const delta[] = { "delta", NULL };
	static const char *const pure[] = { "0" };
	struct dp_metric_family *spent = NULL, *left = NULL, *at_delta = NULL;
	const struct dp_metrics_def defs[] = {
		{ DP_METRIC_COUNTER, "dpasync_owner_answers_total",
		  "Noisy answers sent to the learner (this process).", .series = &m->answers },
		{ DP_METRIC_COUNTER, "dpasync_owner_refusals_total",
		  "Queries refused (budget exhausted, repeated query, ledger failure).",
		  .series = &m->refusals },
		{ DP_METRIC_GAUGE, "dpasync_owner_epsilon_spent",
		  "Privacy budget spent according to the ledger of the job job_id.",
		  .labels = job_id, .family = &spent },
		{ DP_METRIC_GAUGE, "dpasync_owner_epsilon_left",
		  "Privacy budget left according to the ledger of the job job_id.",
		  .labels = job_id, .family = &left },
		{ DP_METRIC_GAUGE, "dpasync_owner_lifetime_epsilon_cap",
		  "Lifetime privacy budget of the dataset, as the ledger directory records it.",
		  .series = &m->life_cap },
		{ DP_METRIC_GAUGE, "dpasync_owner_lifetime_epsilon_spent",
		  "Privacy budget spent over every job of the dataset.", .series = &m->life_spent },
		{ DP_METRIC_GAUGE, "dpasync_owner_lifetime_epsilon_left",
		  "Lifetime privacy budget left.", .series = &m->life_left },
		{ DP_METRIC_GAUGE, "dpasync_owner_lifetime_rho_spent",
		  "Privacy budget spent over every job of the dataset as zCDP rho (Laplace "
		  "answers' eps^2/2 and Gaussian answers' rho).", .series = &m->life_rho },
		{ DP_METRIC_GAUGE, "dpasync_owner_lifetime_epsilon_at_delta",
		  "Privacy budget spent over every job of the dataset: the best valid epsilon "
		  "at the lifetime delta.", .labels = delta, .family = &at_delta },
		{ DP_METRIC_HISTOGRAM, "dpasync_owner_gradient_seconds",
		  "Time to compute one noisy answer.", grad_buckets,
		  sizeof(grad_buckets) / sizeof(grad_buckets[0]), .series = &m->grad_secs },
		{ DP_METRIC_GAUGE, "dpasync_owner_connected",
		  "1 while a TLS connection to the learner is up.", .series = &m->connected },
		{ DP_METRIC_COUNTER, "dpasync_owner_reconnects_total",
		  "Connection attempts after the first one.", .series = &m->reconnects },
		{ DP_METRIC_COUNTER, "dpasync_owner_connect_failures_total",
		  "Attempts to reach the learner that failed before the connection was "
		  "established, by reason.", .labels = (const char *const[]){ "reason", NULL },
		  .family = &m->connect_failures },
		{ DP_METRIC_COUNTER, "dpasync_peer_wakeups_total",
		  "Peer mode: wake-ups done (this process).", .series = &m->wakeups },
		{ DP_METRIC_COUNTER, "dpasync_peer_models_received_total",
		  "Peer mode: models received from neighbours.", .series = &m->models_in },
		{ DP_METRIC_COUNTER, "dpasync_peer_models_sent_total",
		  "Peer mode: models sent to neighbours.", .series = &m->models_out },
		{ DP_METRIC_GAUGE, "dpasync_peer_neighbours_connected",
		  "Peer mode: neighbours with a live connection.", .series = &m->nb_up },
		{ DP_METRIC_COUNTER, "dpasync_owner_clock_ticks_total",
		  "Ticks of the Poisson clock.", .series = &m->ticks },
		{ DP_METRIC_COUNTER, "dpasync_owner_clock_ticks_skipped_total",
		  "Ticks that sent no update request: one pending, not welcomed, broadcast, "
		  "no budget left.", .series = &m->ticks_skipped },
	};
	int r;

	r = dp_metrics_new(&m->reg);
	if (r == 0)
		r = dp_metrics_define(m->reg, defs, sizeof(defs) / sizeof(defs[0]));
	if (r == 0)
		r = dp_metrics_series(spent, unbound, &m->eps_spent);
	if (r == 0)
		r = dp_metrics_series(left, unbound, &m->eps_left);
	if (r == 0)
		r = dp_metrics_series(at_delta, pure, &m->life_at_delta);
	if (r == 0)
		r = dp_metrics_process(m->reg, "ownerd");
	return r;
}

/* ---- signals and shutdown ----------------------------------------------- */

static void close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void walk_close(uv_handle_t *h, void *arg)
{
	(void)arg;
	close_handle(h);
}

/* THE one way to stop (the first code wins): the client closes its clock,
 * timers and connection, then the signals and the metrics server close;
 * the loop runs out and main() returns the code. */
static void stop(struct own_daemon *d, int code)
{
	if (d->stopping)
		return;
	d->stopping = true;
	d->exit_code = code;
	if (d->set.peer)
		own_peer_close(d->peer);
	else
		own_client_close(&d->client);
	close_handle((uv_handle_t *)&d->sigterm);
	close_handle((uv_handle_t *)&d->sigint);
	if (d->httpd) {
		dp_httpd_close(d->httpd, NULL, NULL);
		d->httpd = NULL;
	}
}

/* How the client reaches stop() (own_stop_fn). */
static void on_stop(void *arg, int code)
{
	stop(arg, code);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct own_daemon *d = h->data;

	DP_INFO("owner", "signal=%s shutting down", signum == SIGTERM ? "TERM" : "INT");
	stop(d, DP_EXIT_OK);
}

/* ---- startup ------------------------------------------------------------ */

static int start_roles(struct own_daemon *d)
{
	struct own_client_config cc = {
		.loop = d->loop,
		.set = &d->set,
		.ctx = d->ctx,
		.id = d->id,
		.host = d->host,
		.port = d->port,
		.model_out = d->model_out,
		.ds = &d->ds,
		.schema_fp = d->schema_fp,
		.schema_sum = dp_schemasum_msg(d->schema_sum),
		.bits = &d->bits,
		.budget = &d->budget,
		.answer = &d->answer,
		.m = &d->m,
		.stop = on_stop,
		.stop_arg = d,
	};

	return own_client_init(&d->client, &cc);
}

/* Peer mode's startup: the randomness and the loop first (the agent
 * listens at once), then the agent, which opens the ledger with its own
 * plan.  0, or the exit code after the one line. */
static int start_peer(struct own_daemon *d, const struct own_budget_config *bc)
{
	struct own_peer_config pc;
	int r;

	r = dp_rng_csprng_new(&d->rng);
	if (r == 0)
		r = dp_rng_csprng_new(&d->answer_rng);
	if (r < 0)
		return die(dp_exit_status(r, DP_EXIT_PHASE_RUN), "random generator: %s",
			   dp_error_detail(r));
	d->bits = dp_rng_csprng_bits(d->rng);
	d->answer_bits = dp_rng_csprng_bits(d->answer_rng);
	d->loop = uv_default_loop();
	memset(&pc, 0, sizeof(pc));
	pc.loop = d->loop;
	pc.set = &d->set;
	pc.server_ctx = d->server_ctx;
	pc.client_ctx = d->ctx;
	pc.id = d->id;
	pc.ds = &d->ds;
	pc.curvature = d->have_curv ? &d->curv : NULL;
	pc.bits = &d->bits;
	pc.noise = &d->answer_bits;
	pc.budget = &d->budget;
	pc.budget_cfg = *bc;
	pc.m = &d->m;
	pc.model_out = d->model_out;
	pc.model_before = d->model_before;
	pc.served_out = d->served_out;
	pc.stop = on_stop;
	pc.stop_arg = d;
	r = own_peer_new(&pc, &d->peer);
	if (r < 0)
		return die(dp_exit_status(r, DP_EXIT_PHASE_LOAD), "%s", dp_error_detail(r));
	return 0;
}

/* A delta that allows Gaussian jobs in a directory whose lifetime delta is
 * 0 (one created before the record) allows none: say so once at startup
 * (docs/ownerd.md "Mechanisms and delta"). */
static void warn_lifetime_delta(const struct own_daemon *d)
{
	struct own_budget_status st;

	own_budget_status(&d->budget, &st);
	if (!d->set.peer && d->set.delta > 0 && !(st.lifetime_delta > 0))
		DP_WARN("owner", "--delta %g, but the ledger directory %s records lifetime delta 0: "
			"Gaussian jobs are refused (docs/ownerd.md \"Mechanisms and delta\")",
			d->set.delta, d->set.ledger);
}

static int startup(struct own_daemon *d, enum dp_config_action action)
{
	struct own_budget_config bc;
	dp_tls_files tf;
	int r;

	/* Quiet until started: a failed start prints one line (the library's
	 * info lines, e.g. "ledger opened", would come first otherwise). */
	dp_log_set_level(d->set.log_level > DP_LOG_WARN ? (enum dp_log_level)d->set.log_level
			 : DP_LOG_WARN);

	r = check_trusted(d);
	if (r < 0)
		return die(dp_exit_status(r, DP_EXIT_PHASE_LOAD), "%s", dp_error_detail(r));
	memset(&tf, 0, sizeof(tf));
	tf.ca_file = d->set.ca;
	tf.cert_file = d->set.cert;
	tf.key_file = d->set.key;
	tf.crl_file = d->set.crl;
	tf.pins = d->set.peer ? NULL : d->set.learner_pin;
	r = dp_tls_ctx_new(0, &tf, &d->ctx);
	if (r == 0 && d->set.peer)
		r = dp_tls_ctx_new(1, &tf, &d->server_ctx);
	if (r < 0)
		return die(dp_exit_status(r, DP_EXIT_PHASE_LOAD), "TLS: %s%s", dp_error_detail(r),
			   d->set.peer ? " (an agent both dials and listens: make its certificate "
					 "with dpasync certs --peer)" : "");
	r = load_identity(d);
	if (r < 0)
		return die(dp_exit_status(r, DP_EXIT_PHASE_LOAD), "TLS: %s", dp_error_detail(r));
	r = load_data(d);
	if (r < 0)
		return die(dp_exit_status(r, DP_EXIT_PHASE_LOAD), "data: %s", dp_error_detail(r));
	if (own_mechanism_delta_large(&d->set, d->ds.n))
		DP_WARN("owner", "--delta %g is at least 1/n = 1/%zu: a mechanism that releases one "
			"row outright would meet it (docs/ownerd.md \"Mechanisms and delta\")",
			d->set.delta, d->ds.n);
	r = resolve_model_out(d);
	if (r < 0)
		return die(dp_exit_status(r, DP_EXIT_PHASE_ARGS), "out of memory");
	r = metrics_init(&d->m);
	if (r < 0)
		return die(dp_exit_status(r, DP_EXIT_PHASE_RUN), "metrics: %s", dp_error_detail(r));

	memset(&bc, 0, sizeof(bc));
	bc.path = d->set.ledger;
	bc.epsilon = d->set.epsilon;
	bc.lifetime = d->set.lifetime_epsilon != 0 ? d->set.lifetime_epsilon : d->set.epsilon;
	bc.lifetime_given = d->set.lifetime_epsilon != 0;
	bc.lifetime_delta = own_mechanism_lifetime_delta(&d->set);
	bc.delta = d->set.delta;
	bc.lifetime_delta_given = d->set.lifetime_delta != -1;
	bc.check_only = action == DP_CONFIG_CHECK;
	bc.answers_cap = d->set.answers_cap;
	bc.allow_inf = d->set.allow_no_noise;
	bc.reserve_ahead = d->set.reserve_ahead && !d->set.peer;
	bc.owner_id = d->id;
	bc.spent = d->m.eps_spent;
	bc.left = d->m.eps_left;
	bc.life_cap = d->m.life_cap;
	bc.life_spent = d->m.life_spent;
	bc.life_left = d->m.life_left;
	bc.life_rho = d->m.life_rho;
	bc.life_at_delta = d->m.life_at_delta;
	if (d->set.peer) {
		r = start_peer(d, &bc);
		if (r != 0)
			return r;
	} else {
		r = own_budget_open(&d->budget, &bc);
		if (r < 0)
			return die(dp_exit_status(r, DP_EXIT_PHASE_LOAD), "%s", dp_error_detail(r));
	}
	warn_lifetime_delta(d);
	if (action == DP_CONFIG_CHECK) {
		char line[1024];

		own_budget_describe(&d->budget, line, sizeof(line));
		if (dp_config_print(&spec, stdout) < 0 || printf("# %s\n", line) < 0 ||
		    fflush(stdout) != 0)
			return die(dp_exit_status(DP_EIO, DP_EXIT_PHASE_RUN),
				   "cannot write to stdout");
		return -1;
	}
	if (d->rng == NULL) {
		r = dp_rng_csprng_new(&d->rng);
		if (r < 0)
			return die(dp_exit_status(r, DP_EXIT_PHASE_RUN), "random generator: %s",
				   dp_error_detail(r));
		d->bits = dp_rng_csprng_bits(d->rng);
		/* The worker's own: a dp_csprng hands out a buffer and is used by
		 * one thread only (docs/ownerd.md "Threads"). */
		r = dp_rng_csprng_new(&d->answer_rng);
		if (r < 0)
			return die(dp_exit_status(r, DP_EXIT_PHASE_RUN), "random generator: %s",
				   dp_error_detail(r));
		d->answer_bits = dp_rng_csprng_bits(d->answer_rng);
	}
	d->loop = uv_default_loop();
	r = own_answer_init(&d->answer, d->loop, &d->ds, &d->answer_bits, &d->budget,
			    d->m.grad_secs, d->set.theta_max, own_client_answered, &d->client);
	if (r < 0)
		return die(dp_exit_status(r, DP_EXIT_PHASE_RUN), "out of memory");
	uv_signal_init(d->loop, &d->sigterm);
	uv_signal_init(d->loop, &d->sigint);
	d->sigterm.data = d->sigint.data = d;
	r = uv_signal_start(&d->sigterm, on_signal, SIGTERM);
	if (r == 0)
		r = uv_signal_start(&d->sigint, on_signal, SIGINT);
	if (r < 0)
		return die(dp_exit_status(r, DP_EXIT_PHASE_RUN), "signals: %s", uv_strerror(r));

	if (d->set.metrics_listen && d->set.metrics_listen[0]) {
		struct dp_httpd_options ho = { .listen = d->set.metrics_listen,
					       .metrics = d->m.reg };

		r = dp_httpd_new(d->loop, &ho, &d->httpd);
		if (r < 0)
			return die(dp_exit_status(r, DP_EXIT_PHASE_RUN), "--metrics-listen %s: %s",
				   d->set.metrics_listen,
				   dp_error_detail(r));
	}
	if (d->peer) {
		r = own_peer_listen(d->peer);
		if (r < 0)
			return die(dp_exit_status(r, DP_EXIT_PHASE_RUN), "%s", dp_error_detail(r));
	}
	if (d->set.port_file) {
		char line[32];
		int n = snprintf(line, sizeof(line), "metrics=%u\npeer=%u\n",
				 d->httpd ? (unsigned)dp_httpd_port(d->httpd) : 0u,
				 d->peer ? (unsigned)own_peer_port(d->peer) : 0u);

		r = dp_file_write_atomic(d->set.port_file, line, (size_t)n, DP_FILE_MODE_SHARED);
		if (r < 0)
			return die(dp_exit_status(r, DP_EXIT_PHASE_RUN), "--port-file: %s",
				   dp_error_detail(r));
	}
	if (!d->set.peer) {
		r = start_roles(d);
		if (r < 0)
			return die(dp_exit_status(r, DP_EXIT_PHASE_RUN), "%s", dp_error_detail(r));
		r = own_progress_start(&d->progress, d->loop, d->set.progress_every, &d->budget,
				       &d->m);
		if (r < 0)
			return die(dp_exit_status(r, DP_EXIT_PHASE_RUN), "%s", dp_error_detail(r));
	}
	dp_log_set_level((enum dp_log_level)d->set.log_level);
	return 0;
}

/* A model at the old default place is left alone: it may be another
 * owner's (docs/ownerd.md "Files").  Said once, after the start. */
static void warn_model_before(const struct own_daemon *d)
{
	if (d->model_before == NULL || access(d->model_before, F_OK) != 0)
		return;
	DP_WARN("owner", "%s is neither read nor written any more (owners whose ledger "
		"directories are siblings all saved their model there): this owner's model is %s, "
		"in its ledger directory", d->model_before, d->model_out);
}

static void cleanup(struct own_daemon *d)
{
	if (d->httpd) {
		dp_httpd_close(d->httpd, NULL, NULL);
		d->httpd = NULL;
	}
	if (d->loop) {
		/* Whatever is still open (nothing, normally) is closed and the
		 * loop drained so every close callback has run. */
		uv_walk(d->loop, walk_close, NULL);
		uv_run(d->loop, UV_RUN_DEFAULT);
		uv_loop_close(d->loop);
	}
	own_budget_close(&d->budget);
	own_peer_free(d->peer);
	own_answer_free(&d->answer);
	dp_metrics_destroy(d->m.reg);
	dp_rng_csprng_destroy(d->rng);
	dp_rng_csprng_destroy(d->answer_rng);
	if (d->ctx)
		SSL_CTX_free(d->ctx);
	if (d->server_ctx)
		SSL_CTX_free(d->server_ctx);
	dp_dataset_free(&d->ds);
	if (d->have_curv)
		dp_dataset_free(&d->curv);
	dp_schemasum_free(d->schema_sum);
	free(d->model_out);
	free(d->model_before);
	free(d->served_out);
	dp_config_free(&spec);
}

int main(int argc, char **argv)
{
	struct own_daemon *d = &ownerd;
	struct own_budget_status st;
	enum dp_config_action action;
	int r;

	signal(SIGPIPE, SIG_IGN);
	r = dp_config_load(&spec, argc, argv, &action);
	if (r < 0) {
		const char *det = dp_error_detail(r);

		return die(dp_exit_status(r, DP_EXIT_PHASE_ARGS), "%s (see ownerd --help)", det);
	}
	if (action == DP_CONFIG_HELP) {
		dp_config_print_help(&spec, stdout);
		return 0;
	}
	if (action == DP_CONFIG_VERSION) {
		printf("ownerd %s\n", DP_VERSION);
		return 0;
	}
	r = startup(d, action);
	if (r != 0) {
		cleanup(d);
		return r < 0 ? DP_EXIT_OK : r;   /* -1: --check-config passed */
	}

	warn_model_before(d);
	if (d->set.peer) {
		if (d->httpd)
			DP_INFO("owner", "metrics listening port=%u",
				(unsigned)dp_httpd_port(d->httpd));
		own_peer_start(d->peer);
		uv_run(d->loop, UV_RUN_DEFAULT);
		r = d->exit_code;
		own_budget_status(&d->budget, &st);
		DP_INFO("owner", "exit code=%d wakeups+warm=%llu spent=%.9g left=%.9g", r,
			(unsigned long long)st.answers, st.spent, st.left);
		cleanup(d);
		return r;
	}
	own_budget_status(&d->budget, &st);
	DP_INFO("owner", "starting id=%s learner=%s:%u rows=%zu p=%zu epsilon=%g "
		"answers_cap=%llu rate=%g ledger=%s answers=%llu lifetime_cap=%.9g "
		"lifetime_left=%.9g", d->id, d->host, (unsigned)d->port, d->ds.n, d->ds.p,
		d->set.epsilon, (unsigned long long)d->set.answers_cap, d->set.rate, d->set.ledger,
		(unsigned long long)st.answers, st.lifetime_cap, st.lifetime_left);
	if (d->httpd)
		DP_INFO("owner", "metrics listening port=%u", (unsigned)dp_httpd_port(d->httpd));
	own_client_start(&d->client);
	uv_run(d->loop, UV_RUN_DEFAULT);

	r = d->exit_code;
	own_progress_line(&d->progress, true);
	own_budget_status(&d->budget, &st);
	if (st.bound)
		DP_INFO("owner", "exit code=%d answers=%llu spent=%.9g left=%.9g", r,
			(unsigned long long)st.answers, st.spent, st.left);
	else
		DP_INFO("owner", "exit code=%d", r);
	cleanup(d);
	return r;
}
