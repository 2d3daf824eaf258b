/* ownerd: settings, startup checks, signals, metrics endpoint, exit.
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

#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/net/config.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/net/frame.h"
#include "common/net/httpd.h"
#include "common/core/log.h"
#include "common/core/num.h"
#include "common/core/schema.h"

#include "owner/own.h"

static struct own_daemon own__d;

static const char *const own__log_levels[] = { "debug", "info", "warn", "error", NULL };

#define S (own__d.set)
static const struct dp_config_entry own__entries[] = {
	{ .name = "learner", DP_CFG_STRING(&S.learner), .flags = DP_CONFIG_REQUIRED,
	  .group = "Learner", .metavar = "HOST:PORT",
	  .help = "address of learnerd ([v6]:port for IPv6 literals)" },
	{ .name = "server-name", DP_CFG_STRING(&S.server_name), .def = "learner",
	  .group = "Learner", .metavar = "NAME",
	  .help = "name the learner's certificate must carry" },
	{ .name = "ca", DP_CFG_PATH(&S.ca), .flags = DP_CONFIG_REQUIRED, .group = "TLS",
	  .help = "deployment CA certificate (PEM)" },
	{ .name = "cert", DP_CFG_PATH(&S.cert), .flags = DP_CONFIG_REQUIRED, .group = "TLS",
	  .help = "this owner's certificate (PEM); its CN is the owner's identity" },
	{ .name = "key", DP_CFG_PATH(&S.key), .flags = DP_CONFIG_REQUIRED, .group = "TLS",
	  .help = "this owner's private key (PEM)" },
	{ .name = "data", DP_CFG_PATH(&S.data), .flags = DP_CONFIG_REQUIRED, .group = "Data",
	  .metavar = "CSV", .help = "the owner's rows (CSV with a header, optionally .gz)" },
	{ .name = "target", DP_CFG_STRING(&S.target), .group = "Data", .metavar = "COL",
	  .help = "target column (default y, or the schema's target)" },
	{ .name = "bias", DP_CFG_BOOL(&S.bias), .def = "false", .group = "Data",
	  .help = "append a constant-1 bias column" },
	{ .name = "schema", DP_CFG_PATH(&S.schema), .group = "Data",
	  .help = "feature schema (JSON) shared by all owners" },
	{ .name = "epsilon", DP_CFG_DOUBLE_INF(&S.epsilon), .def = "1", .min = 0,
	  .max = INFINITY, .min_exclusive = true, .group = "Privacy",
	  .help = "total privacy budget of this owner (inf only with --allow-no-noise)" },
	{ .name = "answers-cap", DP_CFG_U64(&S.answers_cap), .def = "0", .group = "Privacy",
	  .metavar = "K", .help = "most answers ever given (0 = T from the learner's Welcome)" },
	{ .name = "ledger", DP_CFG_PATH(&S.ledger), .flags = DP_CONFIG_REQUIRED,
	  .group = "Privacy", .help = "budget ledger file (created on first use)" },
	{ .name = "allow-no-noise", DP_CFG_BOOL(&S.allow_no_noise), .def = "false",
	  .group = "Privacy", .help = "permit --epsilon inf (exact answers; testing only)" },
	{ .name = "rate", DP_CFG_DOUBLE(&S.rate), .def = "1", .min = 0, .max = 1e6,
	  .min_exclusive = true, .group = "Clock", .metavar = "R",
	  .help = "Poisson clock rate (update requests per second)" },
	{ .name = "model-out", DP_CFG_PATH(&S.model_out), .group = "Output",
	  .help = "where the final model from Done is saved (default: model.json next to "
		  "the ledger)" },
	{ .name = "metrics-listen", DP_CFG_STRING(&S.metrics_listen), .def = "",
	  .group = "Operations", .metavar = "HOST:PORT",
	  .help = "Prometheus /metrics and /healthz (empty = off; port 0 = any)" },
	{ .name = "port-file", DP_CFG_PATH(&S.port_file), .group = "Operations",
	  .help = "written once running: 'metrics=PORT' (0 when metrics are off)" },
	{ .name = "log-level", DP_CFG_ENUM(&S.log_level, own__log_levels), .def = "info",
	  .group = "Operations", .help = "least severe log level printed" },
	{ .name = "max-frame", DP_CFG_SIZE(&S.max_frame), .def = "16777216", .min = 64,
	  .max = (double)DP_FRAME_MAX_LIMIT, .group = "Operations", .metavar = "BYTES",
	  .help = "largest wire frame accepted or sent" },
	DP_CONFIG_END,
};
#undef S

/* Prefix the current error detail (copied first: dp_error_set writes the
 * same per-thread buffer dp_error_detail returns). */
static int own__wrap(int r, const char *prefix)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s", dp_error_detail(r));
	return dp_error_set(r, "%s: %s", prefix, buf);
}

/* "host:port" or "[v6]:port", port 1..65535. */
static int own__parse_hostport(const char *s, char *host, size_t hsize, uint16_t *port)
{
	const char *colon, *h = s;
	size_t hl;
	uint64_t v;

	if (s[0] == '[') {
		const char *e = strchr(s, ']');

		if (e == NULL || e[1] != ':')
			return dp_error_set(DP_EINVAL, "--learner '%s': expected [ADDR]:PORT", s);
		h = s + 1;
		hl = (size_t)(e - h);
		colon = e + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || memchr(s, ':', (size_t)(colon - s)) != NULL)
			return dp_error_set(DP_EINVAL, "--learner '%s': expected HOST:PORT", s);
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= hsize)
		return dp_error_set(DP_EINVAL, "--learner '%s': bad host", s);
	if (dp_num_parse_u64("--learner port", colon + 1, &v) < 0 || v == 0 || v > 65535)
		return dp_error_set(DP_EINVAL, "--learner '%s': port must be 1..65535", s);
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (uint16_t)v;
	return 0;
}

static int own__validate(void *arg)
{
	struct own_daemon *d = arg;
	char host[256];
	uint16_t port;
	int r;

	if ((r = own__parse_hostport(d->set.learner, host, sizeof(host), &port)) < 0)
		return r;
	if (d->set.server_name == NULL || d->set.server_name[0] == '\0')
		return dp_error_set(DP_EINVAL, "--server-name must not be empty");
	if (isinf(d->set.epsilon) && !d->set.allow_no_noise)
		return dp_error_set(DP_EINVAL, "--epsilon inf releases exact answers; it needs "
				    "--allow-no-noise");
	if (d->set.target != NULL && d->set.target[0] == '\0')
		return dp_error_set(DP_EINVAL, "--target must not be empty");
	if (d->set.metrics_listen != NULL && d->set.metrics_listen[0] != '\0') {
		struct sockaddr_storage ss;

		if ((r = dp_httpd_parse_addr(d->set.metrics_listen, &ss)) < 0)
			return own__wrap(r, "--metrics-listen");
	}
	return 0;
}

static const struct dp_config_spec own__spec = {
	.program = "ownerd",
	.summary = "dpasync data owner: answers the learner's gradient queries with "
		   "differential privacy and keeps a durable budget ledger.",
	.entries = own__entries,
	.validate = own__validate,
	.validate_arg = &own__d,
};

/* Map a library error to the exit code of a startup failure. */
static int own__exit_for(int err)
{
	switch (err) {
	case DP_EINVAL:
	case DP_EFORMAT:
	case DP_ENOENT:
	case DP_ECORRUPT:
	case DP_ETLS:
	case DP_ERANGE:
		return OWN_EXIT_CONFIG;
	default:
		return OWN_EXIT_FAIL;
	}
}

static int own__die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int own__die(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("ownerd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

/* Our identity is the CN of our own certificate (what the learner sees). */
static int own__identity(struct own_daemon *d)
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
		return own__wrap(r, d->set.cert);
	return 0;
}

static int own__load_data(struct own_daemon *d)
{
	dp_schema *schema = NULL;
	dp_load_opts o = { 0 };
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
	dp_schema_destroy(schema);
	if (r < 0)
		return r;
	d->p = d->ds.p;
	return 0;
}

/* The ledger directory must exist and be writable; the ledger file, if it
 * exists, must verify, belong to this owner and carry our caps.  Then it is
 * opened for good (and locked) right away.  A missing file is created at
 * the first Welcome, when T (hence K) is known. */
static int own__open_ledger(struct own_daemon *d)
{
	unsigned flags = d->set.allow_no_noise ? DP_LEDGER_ALLOW_INF : 0;
	char *dirbuf, prefix[DP_TLS_ID_MAX + 16];
	dp_ledger *ro = NULL, *l = NULL;
	uint64_t cap_nano;
	const char *ident;
	char *identity;
	int r;

	dirbuf = strdup(d->set.ledger);
	if (dirbuf == NULL)
		return DP_ENOMEM;
	if (access(dirname(dirbuf), W_OK | X_OK) != 0) {
		r = dp_error_set(DP_EINVAL, "--ledger %s: directory not writable: %s",
				 d->set.ledger, strerror(errno));
		free(dirbuf);
		return r;
	}
	free(dirbuf);

	r = dp_ledger_open(d->set.ledger, 1.0, 1, NULL, flags | DP_LEDGER_READONLY, &ro);
	if (r == DP_ENOENT)
		return 0;
	if (r < 0)
		return r;   /* the detail names the file */

	ident = dp_ledger_identity(ro);
	snprintf(prefix, sizeof(prefix), "owner=%s job", d->id);
	if (strncmp(ident, prefix, strlen(prefix)) != 0) {
		r = dp_error_set(DP_EINVAL, "ledger %s belongs to '%s', not to owner %s",
				 d->set.ledger, ident, d->id);
		goto out;
	}
	if (isinf(d->set.epsilon))
		cap_nano = DP_LEDGER_INF;
	else if ((r = dp_ledger_nano_floor(d->set.epsilon, &cap_nano)) < 0)
		goto out;
	if (dp_ledger_cap_nano(ro) != cap_nano) {
		r = dp_error_set(DP_EINVAL, "ledger %s was created with epsilon %.9g, not %.9g "
				 "(the caps of a ledger never change)", d->set.ledger,
				 dp_ledger_cap(ro), d->set.epsilon);
		goto out;
	}
	if (d->set.answers_cap != 0 && dp_ledger_answers_cap(ro) != d->set.answers_cap) {
		r = dp_error_set(DP_EINVAL, "ledger %s was created with answers-cap %llu, not %llu "
				 "(the caps of a ledger never change)", d->set.ledger,
				 (unsigned long long)dp_ledger_answers_cap(ro),
				 (unsigned long long)d->set.answers_cap);
		goto out;
	}
	identity = strdup(ident);
	if (identity == NULL) {
		r = DP_ENOMEM;
		goto out;
	}
	d->cap_answers = dp_ledger_answers_cap(ro);
	dp_ledger_close(ro);
	ro = NULL;
	r = dp_ledger_open(d->set.ledger, d->set.epsilon, d->cap_answers, identity, flags, &l);
	free(identity);
	if (r < 0) {
		d->cap_answers = 0;
		if (r == DP_ESTATE)
			return dp_error_set(r, "ledger %s is in use by another process",
					    d->set.ledger);
		return r;
	}
	r = dp_ledger_eps_share(d->set.epsilon, d->cap_answers, &d->eps_q);
	if (r < 0) {
		dp_ledger_close(l);
		d->cap_answers = 0;
		return own__wrap(r, "--epsilon");
	}
	d->ledger = l;
	return 0;
out:
	dp_ledger_close(ro);
	return r;
}

static int own__model_out(struct own_daemon *d)
{
	char *dirbuf;
	size_t n;

	if (d->set.model_out) {
		d->model_out = strdup(d->set.model_out);
		return d->model_out ? 0 : DP_ENOMEM;
	}
	dirbuf = strdup(d->set.ledger);
	if (dirbuf == NULL)
		return DP_ENOMEM;
	n = strlen(dirbuf) + sizeof("/model.json");
	d->model_out = malloc(n);
	if (d->model_out)
		snprintf(d->model_out, n, "%s/model.json", dirname(dirbuf));
	free(dirbuf);
	return d->model_out ? 0 : DP_ENOMEM;
}

/* ---- metrics ------------------------------------------------------------ */

static const double own__grad_buckets[] = {
	0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

static int own__metrics_init(struct own_daemon *d)
{
	struct own_metrics *m = &d->m;
	int r;

	if ((r = dp_metrics_new(&m->reg)) < 0)
		return r;
	if ((r = dp_metrics_counter(m->reg, "dpasync_owner_answers_total",
				    "Noisy answers sent to the learner (this process).",
				    &m->answers)) < 0 ||
	    (r = dp_metrics_counter(m->reg, "dpasync_owner_refusals_total",
				    "Queries refused (budget exhausted, repeated query, ledger "
				    "failure).", &m->refusals)) < 0 ||
	    (r = dp_metrics_gauge(m->reg, "dpasync_owner_epsilon_spent",
				  "Privacy budget spent according to the ledger.",
				  &m->eps_spent)) < 0 ||
	    (r = dp_metrics_gauge(m->reg, "dpasync_owner_epsilon_left",
				  "Privacy budget left according to the ledger.",
				  &m->eps_left)) < 0 ||
	    (r = dp_metrics_histogram(m->reg, "dpasync_owner_gradient_seconds",
				      "Time to compute one noisy answer.", own__grad_buckets,
				      sizeof(own__grad_buckets) / sizeof(own__grad_buckets[0]),
				      &m->grad_secs)) < 0 ||
	    (r = dp_metrics_gauge(m->reg, "dpasync_owner_connected",
				  "1 while a TLS connection to the learner is up.",
				  &m->connected)) < 0 ||
	    (r = dp_metrics_counter(m->reg, "dpasync_owner_reconnects_total",
				    "Connection attempts after the first one.",
				    &m->reconnects)) < 0)
		return r;
	return 0;
}

void own_metrics_budget(struct own_daemon *d)
{
	if (d->ledger) {
		dp_metrics_set(d->m.eps_spent, dp_ledger_spent(d->ledger));
		dp_metrics_set(d->m.eps_left, dp_ledger_left(d->ledger));
	} else {
		dp_metrics_set(d->m.eps_spent, 0.0);
		dp_metrics_set(d->m.eps_left, d->set.epsilon);
	}
}

/* ---- signals and shutdown ----------------------------------------------- */

static void own__on_signal(uv_signal_t *h, int signum)
{
	struct own_daemon *d = h->data;

	DP_INFO("owner", "signal=%s shutting down", signum == SIGTERM ? "TERM" : "INT");
	own_stop(d, OWN_EXIT_OK);
}

static void own__close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void own__walk_close(uv_handle_t *h, void *arg)
{
	own__close_handle(h);
}

void own_stop(struct own_daemon *d, int code)
{
	if (d->stopping)
		return;
	d->stopping = true;
	d->exit_code = code;
	own_clock_stop(d);
	own__close_handle((uv_handle_t *)&d->retry_timer);
	own__close_handle((uv_handle_t *)&d->welcome_timer);
	own__close_handle((uv_handle_t *)&d->clock_timer);
	own__close_handle((uv_handle_t *)&d->sigterm);
	own__close_handle((uv_handle_t *)&d->sigint);
	if (d->conn)
		dp_conn_close(d->conn);  /* flushes what is queued (a final Refuse) */
	if (d->httpd) {
		dp_httpd_close(d->httpd, NULL, NULL);
		d->httpd = NULL;
	}
}

/* ---- startup ------------------------------------------------------------ */

static int own__startup(struct own_daemon *d, enum dp_config_action action)
{
	dp_tls_files tf;
	int r;

	/* Quiet until started: a failed start prints one line (the library's
	 * info lines, e.g. "ledger opened", would come first otherwise). */
	dp_log_set_level(d->set.log_level > DP_LOG_WARN ? (enum dp_log_level)d->set.log_level
			 : DP_LOG_WARN);
	own__parse_hostport(d->set.learner, d->host, sizeof(d->host), &d->port);

	tf.ca_file = d->set.ca;
	tf.cert_file = d->set.cert;
	tf.key_file = d->set.key;
	if ((r = dp_tls_ctx_new(0, &tf, &d->ctx)) < 0)
		return own__die(own__exit_for(r), "TLS: %s", dp_error_detail(r));
	if ((r = own__identity(d)) < 0)
		return own__die(own__exit_for(r), "TLS: %s", dp_error_detail(r));
	if ((r = own__load_data(d)) < 0)
		return own__die(own__exit_for(r), "data: %s", dp_error_detail(r));
	if ((r = own__model_out(d)) < 0)
		return own__die(OWN_EXIT_FAIL, "out of memory");
	if ((r = own__open_ledger(d)) < 0)
		return own__die(own__exit_for(r), "%s", dp_error_detail(r));
	if (action == DP_CONFIG_CHECK) {
		if (dp_config_print(&own__spec, stdout) < 0 || fflush(stdout) != 0)
			return own__die(OWN_EXIT_FAIL, "cannot write to stdout");
		return -1;
	}
	d->grad = calloc(d->p, sizeof(double));
	if (d->grad == NULL)
		return own__die(OWN_EXIT_FAIL, "out of memory");
	if ((r = dp_rng_csprng_new(&d->rng)) < 0)
		return own__die(OWN_EXIT_FAIL, "random generator: %s", dp_error_detail(r));
	d->bits = dp_rng_csprng_bits(d->rng);
	if ((r = own__metrics_init(d)) < 0)
		return own__die(OWN_EXIT_FAIL, "metrics: %s", dp_error_detail(r));

	d->loop = uv_default_loop();
	uv_timer_init(d->loop, &d->retry_timer);
	uv_timer_init(d->loop, &d->welcome_timer);
	uv_timer_init(d->loop, &d->clock_timer);
	d->retry_timer.data = d->welcome_timer.data = d->clock_timer.data = d;
	uv_signal_init(d->loop, &d->sigterm);
	uv_signal_init(d->loop, &d->sigint);
	d->sigterm.data = d->sigint.data = d;
	if ((r = uv_signal_start(&d->sigterm, own__on_signal, SIGTERM)) < 0 ||
	    (r = uv_signal_start(&d->sigint, own__on_signal, SIGINT)) < 0)
		return own__die(OWN_EXIT_FAIL, "signals: %s", uv_strerror(r));

	if (d->set.metrics_listen && d->set.metrics_listen[0]) {
		struct dp_httpd_options ho = { .listen = d->set.metrics_listen,
					       .metrics = d->m.reg };

		if ((r = dp_httpd_new(d->loop, &ho, &d->httpd)) < 0)
			return own__die(own__exit_for(r), "--metrics-listen %s: %s",
					d->set.metrics_listen, dp_error_detail(r));
	}
	if (d->set.port_file) {
		char line[32];
		int n = snprintf(line, sizeof(line), "metrics=%u\n",
				 d->httpd ? (unsigned)dp_httpd_port(d->httpd) : 0u);

		if ((r = dp_file_write_atomic(d->set.port_file, line, (size_t)n, 0644)) < 0)
			return own__die(OWN_EXIT_FAIL, "--port-file: %s", dp_error_detail(r));
	}
	own_metrics_budget(d);
	if ((r = own_clock_start(d)) < 0)
		return own__die(OWN_EXIT_FAIL, "clock: %s", dp_error_detail(r));
	dp_log_set_level((enum dp_log_level)d->set.log_level);
	return 0;
}

static void own__cleanup(struct own_daemon *d)
{
	if (d->httpd) {
		dp_httpd_close(d->httpd, NULL, NULL);
		d->httpd = NULL;
	}
	if (d->loop) {
		/* Whatever is still open (nothing, normally) is closed and the
		 * loop drained so every close callback has run. */
		uv_walk(d->loop, own__walk_close, NULL);
		uv_run(d->loop, UV_RUN_DEFAULT);
		uv_loop_close(d->loop);
	}
	dp_ledger_close(d->ledger);
	dp_metrics_destroy(d->m.reg);
	dp_rng_csprng_destroy(d->rng);
	if (d->grad) {
		OPENSSL_cleanse(d->grad, d->p * sizeof(double));
		free(d->grad);
	}
	if (d->ctx)
		SSL_CTX_free(d->ctx);
	dp_dataset_free(&d->ds);
	free(d->model_out);
	dp_config_free(&own__spec);
}

int main(int argc, char **argv)
{
	struct own_daemon *d = &own__d;
	enum dp_config_action action;
	int r;

	signal(SIGPIPE, SIG_IGN);
	r = dp_config_load(&own__spec, argc, argv, &action);
	if (r < 0) {
		const char *det = dp_error_detail(r);

		return own__die(r == DP_ENOMEM ? OWN_EXIT_FAIL : OWN_EXIT_CONFIG,
				"%s (see ownerd --help)", det);
	}
	if (action == DP_CONFIG_HELP) {
		dp_config_print_help(&own__spec, stdout);
		return 0;
	}
	if (action == DP_CONFIG_VERSION) {
		printf("ownerd %s\n", DP_VERSION);
		return 0;
	}
	r = own__startup(d, action);
	if (r != 0) {
		own__cleanup(d);
		return r < 0 ? OWN_EXIT_OK : r;   /* -1: --check-config passed */
	}

	DP_INFO("owner", "starting id=%s learner=%s:%u rows=%zu p=%zu epsilon=%g "
		"answers_cap=%llu rate=%g ledger=%s answers=%llu", d->id, d->host,
		(unsigned)d->port, d->ds.n, d->p, d->set.epsilon,
		(unsigned long long)d->set.answers_cap, d->set.rate, d->set.ledger,
		(unsigned long long)(d->ledger ? dp_ledger_answers(d->ledger) : 0));
	if (d->httpd)
		DP_INFO("owner", "metrics listening port=%u", (unsigned)dp_httpd_port(d->httpd));
	own_client_start(d);
	uv_run(d->loop, UV_RUN_DEFAULT);

	r = d->exit_code;
	if (d->ledger)
		DP_INFO("owner", "exit code=%d answers=%llu spent=%.9g left=%.9g", r,
			(unsigned long long)dp_ledger_answers(d->ledger),
			dp_ledger_spent(d->ledger), dp_ledger_left(d->ledger));
	else
		DP_INFO("owner", "exit code=%d", r);
	own__cleanup(d);
	return r;
}
