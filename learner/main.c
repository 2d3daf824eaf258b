/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: the lifecycle (docs/learnerd.md): settings, startup, signals,
 * the one way the job ends (end_job, registered as L->on_end) and the exit
 * code.  Startup errors come back here as return values: one line on
 * stderr, everything released, the exit code returned from main. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <time.h>

#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/file.h"
#include "common/core/log.h"
#include "common/core/modelfile.h"
#include "common/net/addr.h"
#include "common/net/config.h"
#include "common/net/frame.h"
#include "learner/lrn.h"

static struct lrn_settings S;

static const char *const modes[] = { "request", "broadcast", "sync1", "sync2", NULL };

#define G_NET "Network and TLS"
#define G_JOB "Job (must match the checkpoint on --resume)"
#define G_RUN "Scheduling"
#define G_OUT "Output and operation"

static const struct dp_config_entry entries[] = {
	{ .name = "listen", DP_CFG_STRING(&S.listen), .def = "0.0.0.0:7800", .group = G_NET,
	  .metavar = "HOST:PORT", .help = "TLS listener for owners (port 0: ephemeral)" },
	{ .name = "ca", DP_CFG_PATH(&S.ca), .flags = DP_CONFIG_REQUIRED, .group = G_NET,
	  .help = "deployment CA certificate (PEM)" },
	{ .name = "cert", DP_CFG_PATH(&S.cert), .flags = DP_CONFIG_REQUIRED, .group = G_NET,
	  .help = "learner certificate (PEM)" },
	{ .name = "key", DP_CFG_PATH(&S.key), .flags = DP_CONFIG_REQUIRED, .group = G_NET,
	  .help = "learner private key (PEM)" },
	{ .name = "crl", DP_CFG_PATH(&S.crl), .group = G_NET, .metavar = "FILE",
	  .help = "the CA's revocation list (PEM, from dpasync certs --crl): revoked owners "
		  "are refused" },
	{ .name = "owners", DP_CFG_STRING(&S.owners), .group = G_NET,
	  .metavar = "A,B,...", .help = "admitted owner identities (certificate CNs); or owners-file" },
	{ .name = "owners-file", DP_CFG_PATH(&S.owners_file), .group = G_NET, .metavar = "FILE",
	  .help = "admitted owner identities, one per line ('#' comments, blank lines\n"
		  "skipped): for lists too long for one argument" },
	{ .name = "max-frame", DP_CFG_SIZE(&S.max_frame), .def = "16777216", .min = 64,
	  .max = DP_FRAME_MAX_LIMIT, .group = G_NET, .metavar = "BYTES",
	  .help = "largest frame sent or received" },
	{ .name = "handshake-timeout", DP_CFG_DURATION(&S.handshake_timeout), .def = "30",
	  .min = 0.1, .max = 3600, .group = G_NET, .metavar = "SECONDS",
	  .help = "close a connection silent this long after its accept, or whose TLS\n"
		  "handshake is not done this long after its turn came (docs/protocol.md §6)" },
	{ .name = "max-pending", DP_CFG_SIZE(&S.max_pending), .def = "64", .min = 1, .max = 1e5,
	  .group = G_NET, .metavar = "M",
	  .help = "connections not yet admitted at most, besides one per owner (M + N);\n"
		  "a new one evicts the oldest, idle first (docs/protocol.md §6)" },
	{ .name = "max-pending-per-addr", DP_CFG_SIZE(&S.max_pending_per_addr), .def = "16",
	  .min = 0, .max = 1e5, .group = G_NET, .metavar = "M",
	  .help = "the same from one peer address (M + N), evicting that address's oldest\n"
		  "idle or stalled one, never a handshake making progress (0: no limit)" },

	{ .name = "job", DP_CFG_STRING(&S.job), .def = "", .group = G_JOB,
	  .metavar = "ID", .help = "job id sent in Welcome, model.json, trace.csv and the owners' ledgers "
		  "(empty: a new unique id, or the checkpoint's with --resume)" },
	{ .name = "model", DP_CFG_ENUM(&S.model, dp_model_names), .def = "linear", .group = G_JOB,
	  .help = "loss: linear regression, logistic regression, linear SVM" },
	{ .name = "t", .alias = "T", DP_CFG_U64(&S.T), .def = "0", .min = 0, .max = 1e15,
	  .group = G_JOB, .metavar = "N",
	  .help = "iterations T (0: planned from the owners' Hellos; docs/planner.md)" },
	{ .name = "rho", DP_CFG_DOUBLE(&S.rho), .def = "0", .min = 0, .max = INFINITY,
	  .group = G_JOB, .metavar = "R",
	  .help = "the paper's rho: eta = N rho / (2 lambda T^2); sync1: step rho/(T^2 k)\n"
		  "(0: not given)" },
	{ .name = "eta", DP_CFG_DOUBLE(&S.eta), .def = "0", .min = 0, .max = INFINITY,
	  .group = G_JOB, .metavar = "E",
	  .help = "owner-copy step (0: from rho, else planned; docs/learnerd.md)" },
	{ .name = "c", DP_CFG_DOUBLE(&S.c), .def = "0", .min = 0, .max = INFINITY, .group = G_JOB,
	  .metavar = "C", .help = "sync2: step c/sqrt(k) (0: planned)" },
	{ .name = "lambda", DP_CFG_DOUBLE(&S.lambda), .def = "0.01", .min = 0, .max = INFINITY,
	  .min_exclusive = true, .group = G_JOB, .metavar = "L",
	  .help = "regulariser g = lambda ||theta||^2 (> 0)" },
	{ .name = "theta-max", DP_CFG_DOUBLE(&S.theta_max), .def = "10", .min = 0,
	  .max = INFINITY, .min_exclusive = true, .group = G_JOB, .metavar = "M",
	  .help = "box bound on every coordinate" },
	{ .name = "clip", DP_CFG_DOUBLE(&S.clip), .def = "0", .min = 0, .max = INFINITY,
	  .group = G_JOB, .metavar = "X",
	  .help = "clip bound of per-example gradients, sent to owners: L1, or L2 with\n"
		  "--mechanism gaussian (0: planned)" },
	{ .name = "mechanism", DP_CFG_ENUM(&S.mechanism, dp_query_mech_names), .def = "laplace",
	  .group = G_JOB,
	  .help = "the owners' noise: laplace (the papers', L1 clip) or gaussian (discrete\n"
		  "Gaussian, L2 clip, zCDP; every owner must allow it with ownerd --delta)" },
	{ .name = "public", DP_CFG_PATH(&S.public_path), .group = G_JOB, .metavar = "FILE",
	  .help = "public constants for the planner (dpasync forecast, or prep's public.json; "
		  "default: assumed from the data's shape)" },
	{ .name = "answers-margin", DP_CFG_DOUBLE(&S.answers_margin), .def = "0.1", .min = 0,
	  .max = 100, .min_exclusive = true, .group = G_JOB, .metavar = "M",
	  .help = "planned answer caps K_i = ceil(T pi_i (1 + M)), pi_i = rate_i / sum of rates" },
	{ .name = "restart-slack", DP_CFG_U64(&S.restart_slack), .def = "2", .min = 0,
	  .max = DP_PLAN_SLACK_MAX, .group = G_JOB, .metavar = "S",
	  .help = "sync: planned answer caps K_i = T - 1 + S, so that each owner may\n"
		  "restart S times (each restart forfeits at most one answer's share)" },
	{ .name = "t-max", DP_CFG_U64(&S.T_max), .def = "0", .min = 0, .max = 1e15,
	  .group = G_JOB, .metavar = "N",
	  .help = "largest T the planner may choose (0: its own, 100000)" },
	{ .name = "features", DP_CFG_SIZE(&S.features), .def = "0", .min = 0,
	  .max = DP_FRAME_MAX_P, .group = G_JOB, .metavar = "P",
	  .help = "model dimension p incl. bias (0: --public's, else the one all owners' "
		  "Hellos agree on)" },
	{ .name = "bias", DP_CFG_BOOL(&S.bias), .def = "false", .group = G_JOB,
	  .help = "owners append a bias column (recorded in model.json)" },
	{ .name = "freq-correction", DP_CFG_BOOL(&S.freq_correction), .def = "false",
	  .group = G_JOB,
	  .help = "scale owner i's weight by 1/(N pi_i), pi_i its share of iterations (Remark 4)" },

	{ .name = "mode", DP_CFG_ENUM(&S.mode, modes), .def = "request", .group = G_RUN,
	  .help = "async: iterations start on owner requests or learner broadcasts;\n"
		  "sync1|sync2: rounds that ask every owner (docs/learnerd.md)" },
	{ .name = "round-timeout", DP_CFG_DURATION(&S.round_timeout), .def = "60", .min = 0,
	  .max = 86400, .group = G_RUN, .metavar = "SECONDS",
	  .help = "sync: stop (exit 1) when a round is not complete after this (0: never)" },
	{ .name = "round-quorum", DP_CFG_SIZE(&S.round_quorum), .def = "0", .min = 0, .max = 1e6,
	  .group = G_RUN, .metavar = "Q",
	  .help = "sync: close a round at the first Q answers, reweighted by their n_i\n"
		  "(0: every owner, the paper's algorithm)" },
	{ .name = "broadcast-interval", DP_CFG_DURATION(&S.broadcast_interval), .def = "0.1",
	  .min = 0.001, .max = 86400, .group = G_RUN, .metavar = "SECONDS",
	  .help = "broadcast mode: time between rounds of queries" },
	{ .name = "max-inflight", DP_CFG_SIZE(&S.max_inflight), .def = "1", .min = 1,
	  .max = 1e6, .group = G_RUN, .metavar = "K",
	  .help = "queries out at once (1: the paper's strict mode)" },
	{ .name = "min-owners", DP_CFG_SIZE(&S.min_owners), .def = "0", .min = 0, .max = 1e6,
	  .group = G_RUN, .metavar = "M", .help = "owners connected before training starts (0: N)" },
	{ .name = "query-timeout", DP_CFG_DURATION(&S.query_timeout), .def = "10",
	  .min = 0.01, .max = 86400, .group = G_RUN, .metavar = "SECONDS",
	  .help = "abandon a query (and drop its owner) after this" },
	{ .name = "hello-timeout", DP_CFG_DURATION(&S.hello_timeout), .def = "10",
	  .min = 0.01, .max = 86400, .group = G_RUN, .metavar = "SECONDS",
	  .help = "close an admitted connection that sends no Hello" },
	{ .name = "idle-timeout", DP_CFG_DURATION(&S.idle_timeout), .def = "1h", .min = 0,
	  .max = 1e9, .group = G_RUN, .metavar = "SECONDS",
	  .help = "stop (exit 1) when no owner can be queried for this long (0: never)" },

	{ .name = "out", DP_CFG_PATH(&S.out), .flags = DP_CONFIG_REQUIRED, .group = G_OUT,
	  .metavar = "DIR", .help = "model.json, trace.csv, checkpoint.json" },
	{ .name = "checkpoint-every", DP_CFG_U64(&S.checkpoint_every), .def = "100", .min = 0,
	  .max = 1e15, .group = G_OUT, .metavar = "C",
	  .help = "checkpoint every C iterations (0: only at stop)" },
	{ .name = "snapshot-every", DP_CFG_U64(&S.snapshot_every), .def = "0", .min = 0,
	  .max = 1e15, .group = G_OUT, .metavar = "N",
	  .help = "write the model every N iterations (sync: rounds), at the start\nand at the "
		  "end to DIR/snapshots.csv, for the psi the run\nreached over time (dpasync report "
		  "--data; 0: none)" },
	{ .name = "resume", DP_CFG_BOOL(&S.resume), .def = "false", .group = G_OUT,
	  .help = "continue from DIR/checkpoint.json (new job if there is none)" },
	{ .name = "port-file", DP_CFG_PATH(&S.port_file), .group = G_OUT, .metavar = "FILE",
	  .help = "write tls=PORT and metrics=PORT here once listening" },
	{ .name = "metrics-listen", DP_CFG_STRING(&S.metrics_listen), .def = "", .group = G_OUT,
	  .metavar = "HOST:PORT", .help = "Prometheus /metrics and /healthz (empty: off)" },
	{ .name = "log-level", DP_CFG_ENUM(&S.log_level, dp_log_level_names), .def = "info",
	  .group = G_OUT, .help = "least severe log messages written (stderr)" },
	{ .name = "progress-every", DP_CFG_DURATION(&S.progress_every), .def = "5", .min = 0,
	  .max = 1e6, .group = G_OUT, .metavar = "SECONDS",
	  .help = "a progress line (k/T, it/s, ETA, owners, epsilon) this often (0: none; "
		  "the summary at the end is always written)" },
	{ .name = NULL },
};

static int validate(void *arg)
{
	struct lrn_settings *s = arg;
	char **names = NULL, host[DP_ADDR_HOST_MAX + 1];
	size_t n = 0;
	uint16_t port;
	int rc;

	rc = lrn_owners_load(s, &names, &n);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (s->min_owners > n)
		return dp_error_set(DP_EINVAL, "min-owners %zu exceeds the %zu configured owners",
				    s->min_owners, n);
	if (s->rho > 0 && s->eta > 0)
		return dp_error_set(DP_EINVAL, "give rho or eta, not both");
	if (s->T == 1)
		return dp_error_set(DP_EINVAL, "t: at least 2 iterations (0: planned)");
	if (s->mode >= LRN_MODE_SYNC1) {
		if (s->eta > 0)
			return dp_error_set(DP_EINVAL, "eta applies to the async modes (sync1: rho, "
					    "sync2: c)");
		if (s->rho > 0 && s->mode == LRN_MODE_SYNC2)
			return dp_error_set(DP_EINVAL, "rho applies to the async modes and sync1 "
					    "(sync2: c)");
		if (s->freq_correction)
			return dp_error_set(DP_EINVAL, "freq-correction applies to the async modes");
		if (s->round_quorum > n)
			return dp_error_set(DP_EINVAL, "round-quorum %zu exceeds the %zu configured "
					    "owners", s->round_quorum, n);
	} else if (s->c > 0) {
		return dp_error_set(DP_EINVAL, "c applies to --mode sync2");
	}
	rc = dp_addr_split("listen", s->listen, DP_ADDR_PORT_ZERO, host, sizeof(host), &port);
	if (rc < 0)
		return rc;
	if (s->metrics_listen && *s->metrics_listen) {
		struct sockaddr_storage ss;

		rc = dp_addr_parse_literal("metrics-listen", s->metrics_listen, DP_ADDR_PORT_ZERO,
					   &ss);
		if (rc < 0)
			return rc;
	}
	if (s->job != NULL && strlen(s->job) > DP_FRAME_MAX_STR)
		return dp_error_set(DP_EINVAL, "job: 1..%u characters", DP_FRAME_MAX_STR);
	for (const char *c = s->job; c != NULL && *c; c++)
		if (*c < 0x20 || *c > 0x7e || *c == ',' || *c == '"')
			return dp_error_set(DP_EINVAL, "job: printable ASCII without ',' or '\"' "
					    "(it is a column of trace.csv)");
	/* A Query carries p doubles (9 bytes each with its tag, packed: 8). */
	if (s->features > 0 && 8 * (uint64_t)s->features + 64 > s->max_frame)
		return dp_error_set(DP_EINVAL, "features %zu do not fit in max-frame %zu bytes",
				    s->features, s->max_frame);
	return 0;
}

static const struct dp_config_spec spec = {
	.program = "learnerd",
	.summary = "dpasync learner: asynchronous differentially-private training server",
	.entries = entries,
	.validate = validate,
	.validate_arg = &S,
};

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One clear line on stderr (the log format would bury it for scripts);
 * returns the exit code for the caller to return. */
static int fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dp_log_vplain("learnerd", fmt, ap);
	va_end(ap);
	return code;
}

static int lock_out(struct lrn *L)
{
	char *path;
	int fd, rc;

	if (asprintf(&path, "%s/.learnerd.lock", S.out) < 0)
		return dp_error_set(DP_ENOMEM, "out of memory");
	/* Private: another user who could open it could hold it with flock
	 * and keep `learnerd --resume` out. */
	rc = dp_file_open_private(path, O_RDWR | O_CREAT, &fd);
	if (rc < 0) {
		free(path);
		return rc;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		close(fd);
		dp_error_set(DP_EIO, "%s: %s", path,
			     e == EWOULDBLOCK ? "another learnerd is using this output directory"
					      : strerror(e));
		free(path);
		return DP_EIO;
	}
	free(path);
	L->lock_fd = fd;
	return 0;
}

static int out_paths(struct lrn *L)
{
	if (asprintf(&L->job.trace_path, "%s/trace.csv", S.out) < 0) {
		L->job.trace_path = NULL;
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	if (asprintf(&L->job.ckpt_path, "%s/checkpoint.json", S.out) < 0) {
		L->job.ckpt_path = NULL;
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	if (asprintf(&L->model_path, "%s/model.json", S.out) < 0) {
		L->model_path = NULL;
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	if (asprintf(&L->job.rounds_path, "%s/rounds.csv", S.out) < 0) {
		L->job.rounds_path = NULL;
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	if (asprintf(&L->job.snapshots_path, "%s/snapshots.csv", S.out) < 0) {
		L->job.snapshots_path = NULL;
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	return 0;
}

static int write_port_file(struct lrn *L)
{
	char buf[64];
	int len;

	if (S.port_file == NULL)
		return 0;
	if (L->httpd)
		len = snprintf(buf, sizeof(buf), "tls=%u\nmetrics=%u\n", L->tls_port, L->metrics_port);
	else
		len = snprintf(buf, sizeof(buf), "tls=%u\n", L->tls_port);
	return dp_file_write_atomic(S.port_file, buf, (size_t)len, DP_FILE_MODE_SHARED);
}

static void close_httpd(struct lrn *L)
{
	if (L->httpd) {
		dp_httpd_close(L->httpd, NULL, NULL);
		L->httpd = NULL;
	}
}

/* model.json from the job's output θ: complete (reason NULL) at k == T,
 * else partial, marked with k, the reason and the message why
 * (docs/learnerd.md "Partial model").  0, or the failure with its message
 * in msg. */
static int write_model(struct lrn *L, const char *reason, const char *why, char *msg,
		       size_t size)
{
	dp_modelfile mf = { .model = L->job.model, .p = L->job.p,
			    .theta = (double *)lrn_state_output(&L->job), .bias = S.bias,
			    .T = L->job.T, .lambda = S.lambda, .theta_max = S.theta_max,
			    .clip = L->job.clip, .job = S.job };
	Dpasync__SchemaSummary *sum;
	int rc;

	snprintf(mf.mode, sizeof(mf.mode), "%s",
		 LRN_SYNC(L) ? modes[S.mode] : "async");
	/* The fingerprint the owners agreed on: eval then refuses data that
	 * mean something else, e.g. another target (docs/learnerd.md §4).  An
	 * owner that predates it sends none, or what is no fingerprint. */
	if (dp_fingerprint_ok(L->job.schema_fp))
		memcpy(mf.schema, L->job.schema_fp, sizeof(mf.schema));
	/* And what the fingerprint is of, from the agreed Hellos' summary:
	 * eval, report and sim then read the data with the job's target
	 * rather than guess (docs/learnerd.md §4). */
	sum = lrn_state_job_summary(&L->job);
	if (sum != NULL)
		lrn_state_summary_names(&L->job, sum, &mf.features, &mf.target);
	if (reason != NULL) {
		mf.partial = 1;
		mf.k = L->job.k_done;
		snprintf(mf.reason, sizeof(mf.reason), "%s", reason);
		mf.detail = (char *)why;
	}
	rc = dp_modelfile_write(L->model_path, &mf, DP_FILE_MODE_PRIVATE);
	if (rc < 0)
		snprintf(msg, size, "model: %s", dp_error_detail(rc));
	free(mf.features);
	if (sum != NULL)
		dpasync__schema_summary__free_unpacked(sum, NULL);
	return rc;
}

/* k == T: model.json, then the final checkpoint.  0, or the failure with
 * its message in msg. */
static int write_outputs(struct lrn *L, char *msg, size_t size)
{
	int rc = write_model(L, NULL, NULL, msg, size);

	if (rc < 0)
		return rc;
	rc = lrn_checkpoint_save(&L->job, true);
	if (rc < 0) {
		snprintf(msg, size, "checkpoint: %s", dp_error_detail(rc));
		return rc;
	}
	return 0;
}

/* A job that stops before T after some answer was applied: the partial
 * model from the last θ, so that no ε is spent for nothing (docs/learnerd.md
 * "Partial model").  The exit status stays the stop's; only a failed write
 * after a signal makes it 1 (after a failure the stop's line is the
 * cause: a warning then). */
static void write_partial(struct lrn *L, enum lrn_end how, const char *reason,
			  const char *why)
{
	char msg[600];

	if (!L->job.started || L->job.k_done == 0) {
		if (L->job.started)
			DP_INFO("learner", "no model: no answer was applied (k=0)");
		return;
	}
	if (write_model(L, reason, why, msg, sizeof(msg)) < 0) {
		if (how == LRN_END_FAIL) {
			DP_WARN("learner", "partial model not written: %s", msg);
		} else {
			DP_ERROR("learner", "partial model not written: %s", msg);
			L->exit_code = DP_EXIT_FAIL;
		}
		return;
	}
	/* The reason is the file's; the line above says why in words. */
	DP_WARN("learner", "partial model written k=%llu of T=%llu path=%s",
		(unsigned long long)L->job.k_done, (unsigned long long)L->job.T, L->model_path);
}

/* THE way the job ends (L->on_end): k == T, a signal or a failure.  The
 * outputs are written (a partial model when it stops before T), the
 * server closes every connection, and the loop ends once the last one has
 * gone; main returns L->exit_code. */
static void end_job(struct lrn *L, enum lrn_end how, const char *reason, const char *why)
{
	char msg[600];
	bool partial = true, config = how == LRN_END_CONFIG;
	int rc;

	if (L->phase != LRN_RUN)
		return;
	if (config)
		how = LRN_END_FAIL;
	if (how == LRN_END_DONE) {
		rc = write_outputs(L, msg, sizeof(msg));
		if (rc == 0) {
			DP_INFO("learner", "job done k=%llu model=%s", (unsigned long long)L->job.k_done,
				L->model_path);
			lrn_progress_end(L, "done");
			L->phase = LRN_FINISHING;
			L->finished = true;
			L->exit_code = DP_EXIT_OK;
			lrn_server_close(L, true);
			close_httpd(L);
			return;
		}
		/* model.json is either the complete one or could not be
		 * written: no partial one over it. */
		partial = false;
		how = LRN_END_FAIL;
		why = msg;
	}
	L->phase = LRN_STOPPING;
	L->exit_code = config ? DP_EXIT_CONFIG : how == LRN_END_FAIL ? DP_EXIT_FAIL : DP_EXIT_OK;
	if (why)
		DP_ERROR("learner", "stopping: %s", why);
	lrn_progress_end(L, how == LRN_END_FAIL ? "failed" : "signal");
	if (partial)
		write_partial(L, how, how == LRN_END_SIGNAL ? "signal" : reason ? reason : "error",
			      why);
	if (L->job.io_failed) {
		DP_WARN("learner", "no final checkpoint after a write failure: --resume continues "
			"from the last good one path=%s", L->job.ckpt_path);
	} else if (L->job.started) {
		rc = lrn_checkpoint_save(&L->job, true);
		if (rc < 0 && how == LRN_END_FAIL && why) {
			/* The error line above is the cause (a disk that
			 * stays full fails this too): one error line. */
			DP_WARN("learner", "final checkpoint failed: %s", dp_error_detail(rc));
		} else if (rc < 0) {
			DP_ERROR("learner", "final checkpoint failed: %s", dp_error_detail(rc));
			L->exit_code = DP_EXIT_FAIL;
		} else {
			DP_INFO("learner", "checkpoint written k=%llu path=%s",
				(unsigned long long)L->job.k_done, L->job.ckpt_path);
		}
	}
	lrn_server_close(L, false);
	close_httpd(L);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct lrn *L = h->data;

	/* A second signal during the shutdown is ignored. */
	if (L->phase != LRN_RUN)
		return;
	DP_INFO("learner", "signal=%s: stopping", strsignal(signum));
	end_job(L, LRN_END_SIGNAL, "signal", NULL);
}

static int start_signals(struct lrn *L)
{
	int rc;

	uv_signal_init(L->loop, &L->sigterm);
	uv_signal_init(L->loop, &L->sigint);
	L->sigterm.data = L->sigint.data = L;
	L->signals_init = true;
	rc = uv_signal_start(&L->sigterm, on_signal, SIGTERM);
	if (rc == 0)
		rc = uv_signal_start(&L->sigint, on_signal, SIGINT);
	if (rc < 0)
		return dp_error_set(rc, "signals: %s", uv_strerror(rc));
	/* They stay watched until the process ends, so that a second signal
	 * during the shutdown is ignored; they do not keep the loop alive. */
	uv_unref((uv_handle_t *)&L->sigterm);
	uv_unref((uv_handle_t *)&L->sigint);
	return 0;
}

static void close_walk(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* Resume handling: the checkpoint is authoritative for the job's state.
 * 0, or the exit code (the line printed). */
static int load_state(struct lrn *L, bool check_only)
{
	int rc;

	if (access(L->job.ckpt_path, F_OK) != 0) {
		int e = errno;

		if (e != ENOENT)
			return fail(dp_exit_status(DP_EIO, DP_EXIT_PHASE_LOAD), "%s: %s",
				    L->job.ckpt_path, strerror(e));
		if (S.resume)
			DP_INFO("learner", "no checkpoint in %s: starting a new job", S.out);
		return 0;
	}
	if (!S.resume)
		return fail(dp_exit_status(DP_EEXIST, DP_EXIT_PHASE_LOAD),
			    "%s exists: use --resume to continue that job, or choose another --out",
			    L->job.ckpt_path);
	rc = lrn_checkpoint_load(&L->job);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_LOAD), "cannot resume: %s",
			    dp_error_detail(rc));
	if (!check_only) {
		DP_INFO("learner", "resuming job=%s from %s k=%llu T=%llu next_query=%llu", S.job,
			L->job.ckpt_path, (unsigned long long)L->job.k_done, (unsigned long long)L->job.T,
			(unsigned long long)L->job.next_qid);
		lrn_plan_log(&L->job, "checkpoint");
	}
	return 0;
}

/* Without --job: a new id, unique across learners (the time and 32 random
 * bits), e.g. job-20261124T111500Z-3f2a9c1e; a resumed job takes the
 * checkpoint's instead (lrn_checkpoint_load). */
static int make_job_id(void)
{
	unsigned char rnd[4];
	char buf[64];
	struct tm tm;
	time_t now = time(NULL);

	if (S.job != NULL && S.job[0] != '\0')
		return 0;
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return dp_error_set(DP_ERNG, "job id: random generator failed");
	gmtime_r(&now, &tm);
	snprintf(buf, sizeof(buf), "job-%04d%02d%02dT%02d%02d%02dZ-%02x%02x%02x%02x",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 rnd[0], rnd[1], rnd[2], rnd[3]);
	free(S.job);
	S.job = strdup(buf);
	if (S.job == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	S.job_auto = true;
	return 0;
}

/* The job's tables and files, before any socket.  0, -1 (--check-config
 * done) or the exit code (the line printed). */
static int prepare_job(struct lrn *L, enum dp_config_action action)
{
	dp_tls_files tf = { .ca_file = S.ca, .cert_file = S.cert, .key_file = S.key,
			    .crl_file = S.crl };
	char **names = NULL;
	size_t n = 0;
	int rc;

	rc = make_job_id();
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_ARGS), "%s", dp_error_detail(rc));
	rc = lrn_owners_load(&S, &names, &n);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_ARGS), "%s", dp_error_detail(rc));
	rc = lrn_state_init(&L->job, &S, names, n);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (rc == 0 && S.features > 0)
		rc = lrn_state_set_p(&L->job, S.features);
	if (rc == 0)
		rc = dp_addr_split("listen", S.listen, DP_ADDR_PORT_ZERO, L->listen_host,
				   sizeof(L->listen_host), &L->listen_port);
	if (rc == 0)
		rc = out_paths(L);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_ARGS), "%s", dp_error_detail(rc));
	/* sshd's StrictModes: a key or a checkpoint another user can replace
	 * is not ours to trust (docs/ownerd.md "File permissions"). */
	rc = dp_file_check_trusted("--key", S.key);
	if (rc == 0)
		rc = dp_file_check_trusted("--out", S.out);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_LOAD), "%s", dp_error_detail(rc));
	rc = lrn_plan_load_public(&L->job);
	/* The public constants are for one p: without `features`, that is the
	 * job's, so no owner's Hello decides it. */
	if (rc == 0 && L->job.have_pub && L->job.p == 0)
		rc = lrn_state_set_p(&L->job, L->job.pub.p);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_LOAD), "%s", dp_error_detail(rc));
	rc = dp_tls_ctx_new(1, &tf, &L->ctx);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_LOAD), "%s", dp_error_detail(rc));
	lrn_memtrim_init();
	/* Before any socket or output file; logged once the loop runs. */
	rc = lrn_fdlimit_raise(L);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_ARGS), "%s", dp_error_detail(rc));

	if (action == DP_CONFIG_CHECK) {
		if (S.resume) {
			rc = load_state(L, true);
			if (rc != 0)
				return rc;
		}
		dp_config_print(&spec, stdout);
		return -1;
	}

	rc = dp_file_mkdir_p(S.out, 0);
	if (rc == 0)
		rc = lock_out(L);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_RUN), "output directory: %s",
			    dp_error_detail(rc));
	rc = load_state(L, false);
	if (rc != 0)
		return rc;
	rc = lrn_trace_open(&L->job, L->job.started || L->job.k_done > 0);
	if (rc == 0)
		rc = lrn_snapshot_open(&L->job, L->job.started || L->job.k_done > 0);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_RUN), "%s", dp_error_detail(rc));
	return 0;
}

/* The loop and its handles: metrics, the server, signals, the port file.
 * 0 or the exit code (the line printed). */
static int start_loop(struct lrn *L)
{
	int rc;

	L->loop = uv_default_loop();
	rc = lrn_stats_init(&L->job);
	if (rc == 0)
		rc = lrn_sched_init(&L->job);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_RUN), "%s", dp_error_detail(rc));
	L->on_end = end_job;
	rc = lrn_server_start(L);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_RUN), "cannot listen on %s: %s",
			    S.listen, dp_error_detail(rc));
	if (S.metrics_listen && *S.metrics_listen) {
		struct dp_httpd_options ho = { .listen = S.metrics_listen, .metrics = L->job.st.reg };

		rc = dp_httpd_new(L->loop, &ho, &L->httpd);
		if (rc < 0)
			return fail(dp_exit_status(rc, DP_EXIT_PHASE_RUN),
				    "cannot serve metrics on %s: %s", S.metrics_listen,
				    dp_error_detail(rc));
		L->metrics_port = dp_httpd_port(L->httpd);
	}
	rc = start_signals(L);
	if (rc == 0)
		rc = lrn_progress_start(L);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_RUN), "%s", dp_error_detail(rc));
	rc = write_port_file(L);
	if (rc < 0)
		return fail(dp_exit_status(rc, DP_EXIT_PHASE_RUN), "port file: %s",
			    dp_error_detail(rc));
	lrn_fdlimit_log(L);
	DP_INFO("learner", "listening tls=%s:%u metrics_port=%u job=%s model=%s T=%llu N=%zu "
		"mode=%s max_inflight=%zu k=%llu", L->listen_host, L->tls_port,
		L->metrics_port, S.job, dp_model_name(L->job.model),
		(unsigned long long)L->job.T, L->job.N, modes[S.mode], S.max_inflight,
		(unsigned long long)L->job.k_done);
	return 0;
}

/* Serve until the job has ended and every connection has closed. */
static int run(struct lrn *L)
{
	/* A resumed job that had already finished only rewrites its outputs. */
	lrn_server_pump(L);
	uv_run(L->loop, UV_RUN_DEFAULT);
	if (L->exit_code == DP_EXIT_OK && L->finished)
		printf("done k=%llu out=%s\n", (unsigned long long)L->job.k_done, S.out);
	fflush(stdout);
	return L->exit_code;
}

static void cleanup(struct lrn *L)
{
	if (L->loop != NULL) {
		/* A startup failure: the server may hold its listener and
		 * timers.  Then anything still open (the signals, normally) is
		 * closed so the loop can be closed cleanly. */
		if (L->phase == LRN_RUN) {
			L->phase = LRN_STOPPING;
			lrn_server_close(L, false);
		}
		close_httpd(L);
		uv_walk(L->loop, close_walk, NULL);
		uv_run(L->loop, UV_RUN_DEFAULT);
		uv_loop_close(L->loop);
		L->loop = NULL;
	}
	lrn_server_free(L);
	lrn_trace_close(&L->job);
	lrn_snapshot_close(&L->job);
	lrn_sched_free(&L->job);
	lrn_stats_free(&L->job);
	lrn_state_free(&L->job);
	SSL_CTX_free(L->ctx);
	free(L->job.trace_path);
	free(L->job.rounds_path);
	free(L->job.snapshots_path);
	free(L->job.ckpt_path);
	free(L->model_path);
	if (L->lock_fd >= 0)
		close(L->lock_fd);
	dp_config_free(&spec);
}

int main(int argc, char **argv)
{
	enum dp_config_action action;
	struct lrn Lst, *L = &Lst;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	memset(L, 0, sizeof(*L));
	L->s = &S;
	L->lock_fd = -1;
	rc = dp_config_load(&spec, argc, argv, &action);
	if (rc < 0) {
		rc = fail(dp_exit_status(rc, DP_EXIT_PHASE_ARGS), "%s", dp_error_detail(rc));
	} else if (action == DP_CONFIG_HELP) {
		dp_config_print_help(&spec, stdout);
		rc = DP_EXIT_OK;
	} else if (action == DP_CONFIG_VERSION) {
		printf("learnerd %s\n", DP_VERSION);
		rc = DP_EXIT_OK;
	} else {
		dp_log_set_level((enum dp_log_level)S.log_level);
		rc = prepare_job(L, action);
		if (rc == 0)
			rc = start_loop(L);
		if (rc == 0)
			rc = run(L);
		else if (rc < 0)
			rc = DP_EXIT_OK;   /* --check-config */
	}
	cleanup(L);
	return rc;
}
