/* ownerd: the connection to the learner.
 *
 * connect -> TLS -> Hello -> Welcome -> (UpdateRequest / Query / Answer)* -> Done.
 * A problem with what the learner sends closes this connection with a
 * logged reason and the daemon reconnects after a backoff; a problem with
 * our own ledger stops the daemon (the ledger binds the job for good). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/core/error.h"
#include "common/net/frame.h"
#include "common/core/log.h"
#include "common/core/modelfile.h"

#include "owner/own.h"

static void own__on_retry(uv_timer_t *t);

void own_ledger_identity(const struct own_daemon *d, const char *job, char *out, size_t size)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[33];
	int n;

	n = snprintf(out, size, "owner=%s job=%s", d->id, job);
	if (n >= 0 && (size_t)n < size && (size_t)n <= DP_LEDGER_IDENTITY_MAX)
		return;
	/* A long job name is bound by its hash (the header holds 127 bytes). */
	EVP_Digest(job, strlen(job), md, &mdlen, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	snprintf(out, size, "owner=%s job-sha256=%s", d->id, hex);
}

int own_client_send(struct own_daemon *d, const Dpasync__Envelope *m)
{
	int r;

	if (d->conn == NULL)
		return DP_ESTATE;
	r = dp_conn_send(d->conn, m);
	if (r < 0)
		DP_WARN("conn", "send %s failed peer=%s: %s", dp_frame_kind(m),
			dp_conn_peer_addr(d->conn), dp_error_detail(r));
	return r;
}

void own_client_drop(struct own_daemon *d, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	if (d->conn == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	DP_WARN("conn", "closing peer=%s reason=%s", dp_conn_peer_addr(d->conn), why);
	d->welcomed = false;    /* nothing more is handled on this connection */
	dp_conn_close(d->conn);
}

/* ---- backoff --------------------------------------------------------------- */

static void own__schedule_retry(struct own_daemon *d)
{
	double cap = OWN_BACKOFF_BASE_S, u = 0.5, delay;
	int r;

	for (unsigned i = 0; i < d->attempt && cap < OWN_BACKOFF_MAX_S; i++)
		cap *= 2;
	if (cap > OWN_BACKOFF_MAX_S)
		cap = OWN_BACKOFF_MAX_S;
	if (d->attempt < 64)
		d->attempt++;
	r = dp_rng_uniform(&d->bits, &u);
	if (r < 0) {
		DP_ERROR("owner", "random generator failed: %s", dp_error_detail(r));
		own_stop(d, OWN_EXIT_FAIL);
		return;
	}
	delay = u * cap;   /* full jitter */
	DP_INFO("conn", "reconnecting in=%.3fs attempt=%u", delay, d->attempt);
	uv_timer_start(&d->retry_timer, own__on_retry, (uint64_t)llround(delay * 1000.0), 0);
}

static void own__on_retry(uv_timer_t *t)
{
	struct own_daemon *d = t->data;

	dp_metrics_inc(d->m.reconnects);
	own_client_start(d);
}

/* ---- Hello / Welcome ----------------------------------------------------- */

static void own__send_hello(struct own_daemon *d)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Hello h = DPASYNC__HELLO__INIT;

	h.version = DP_PROTO_VERSION;
	h.owner_id = d->id;
	h.n_rows = d->ds.n;
	h.n_features = (uint32_t)d->p;
	h.epsilon = d->set.epsilon;
	h.answers_cap = d->set.answers_cap;
	h.answers_given = d->ledger ? dp_ledger_answers(d->ledger) : 0;
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
	env.hello = &h;
	own_client_send(d, &env);
}

static void own__on_welcome_timeout(uv_timer_t *t)
{
	struct own_daemon *d = t->data;

	own_client_drop(d, "no Welcome within %u s", OWN_WELCOME_TIMEOUT_MS / 1000);
}

/* First Welcome of the process: bind (create or check) the ledger for this
 * job.  Returns 0, or an exit code after logging why. */
static int own__bind_ledger(struct own_daemon *d, const Dpasync__Welcome *w)
{
	unsigned flags = d->set.allow_no_noise ? DP_LEDGER_ALLOW_INF : 0;
	uint64_t K = d->set.answers_cap ? d->set.answers_cap : w->t;
	char ident[DP_LEDGER_IDENTITY_MAX + 1];
	double eps_q;
	int r;

	own_ledger_identity(d, w->job, ident, sizeof(ident));
	if (d->ledger) {
		/* Opened at startup from an existing file: it must be this job's. */
		if (strcmp(dp_ledger_identity(d->ledger), ident) != 0) {
			DP_ERROR("ledger", "ledger %s is bound to '%s' but the learner runs job '%s'; "
				 "use a new ledger file for a new job", d->set.ledger,
				 dp_ledger_identity(d->ledger), w->job);
			return OWN_EXIT_CONFIG;
		}
		if (d->cap_answers != K) {
			DP_ERROR("ledger", "ledger %s has answers cap %llu but this job needs %llu "
				 "(T=%llu); the caps of a ledger never change", d->set.ledger,
				 (unsigned long long)d->cap_answers, (unsigned long long)K,
				 (unsigned long long)w->t);
			return OWN_EXIT_CONFIG;
		}
		return 0;
	}
	r = dp_ledger_eps_share(d->set.epsilon, K, &eps_q);
	if (r < 0) {
		DP_ERROR("ledger", "epsilon %g cannot be split over K=%llu answers: %s",
			 d->set.epsilon, (unsigned long long)K, dp_error_detail(r));
		return OWN_EXIT_CONFIG;
	}
	r = dp_ledger_open(d->set.ledger, d->set.epsilon, K, ident, flags, &d->ledger);
	if (r < 0) {
		DP_ERROR("ledger", "cannot open ledger %s: %s", d->set.ledger,
			 r == DP_ESTATE ? "in use by another process" : dp_error_detail(r));
		return r == DP_EINVAL || r == DP_ECORRUPT ? OWN_EXIT_CONFIG : OWN_EXIT_FAIL;
	}
	d->cap_answers = K;
	d->eps_q = eps_q;
	DP_INFO("ledger", "bound path=%s identity=\"%s\" epsilon=%g K=%llu eps_q=%.9g",
		d->set.ledger, ident, d->set.epsilon, (unsigned long long)K, eps_q);
	return 0;
}

static void own__on_welcome(struct own_daemon *d, const Dpasync__Welcome *w)
{
	dp_model model;
	int r;

	if (d->welcomed) {
		own_client_drop(d, "second Welcome on one connection");
		return;
	}
	/* The conn layer already checked ranges and finiteness (dp_frame_validate
	 * with p = ours); what is left is what only the owner knows. */
	if (dp_model_parse(w->model, &model) < 0) {
		own_client_drop(d, "Welcome names model '%s', this owner supports linear, "
				"logistic and svm", w->model);
		return;
	}
	if (w->p != d->p) {
		own_client_drop(d, "Welcome.p=%u but this owner's data has p=%zu", w->p, d->p);
		return;
	}
	if (!(isfinite(w->clip_l1) && w->clip_l1 > 0 && isfinite(w->theta_max) &&
	      w->theta_max > 0 && isfinite(w->lambda) && w->lambda >= 0 &&
	      isfinite(w->rho) && w->rho > 0) || w->t == 0 || w->k_done > w->t) {
		own_client_drop(d, "Welcome has out-of-range parameters");
		return;
	}
	if ((r = dp_model_check_data(model, &d->ds)) < 0) {
		own_client_drop(d, "data does not fit model %s: %s", w->model,
				dp_error_detail(r));
		return;
	}
	if (d->job.have && strcmp(d->job.name, w->job) != 0) {
		DP_ERROR("owner", "learner switched from job '%s' to '%s'; this owner's ledger "
			 "is bound to the first", d->job.name, w->job);
		own_stop(d, OWN_EXIT_CONFIG);
		return;
	}
	if (d->job.have && d->set.answers_cap == 0 && w->t != d->cap_answers) {
		DP_ERROR("owner", "learner changed T from %llu to %llu; this owner's answer cap "
			 "is bound to the first", (unsigned long long)d->cap_answers,
			 (unsigned long long)w->t);
		own_stop(d, OWN_EXIT_CONFIG);
		return;
	}
	if (!d->job.have && (r = own__bind_ledger(d, w)) != 0) {
		own_stop(d, r);
		return;
	}

	uv_timer_stop(&d->welcome_timer);
	snprintf(d->job.name, sizeof(d->job.name), "%s", w->job);
	d->job.model = model;
	d->job.T = w->t;
	d->job.N = w->n;
	d->job.n_total = w->n_total;
	d->job.rho = w->rho;
	d->job.lambda = w->lambda;
	d->job.theta_max = w->theta_max;
	d->job.clip = w->clip_l1;
	d->job.broadcast = w->mode == DPASYNC__MODE__MODE_BROADCAST;
	d->job.k_done = w->k_done;
	d->job.have = true;
	d->welcomed = true;
	d->request_pending = false;
	own_clock_resume(d);
	d->attempt = 0;
	own_metrics_budget(d);
	DP_INFO("owner", "welcome job=%s model=%s T=%llu N=%u n_total=%llu p=%u clip=%g mode=%s "
		"k_done=%llu answers=%llu/%llu spent=%.9g left=%.9g", w->job, w->model,
		(unsigned long long)w->t, w->n, (unsigned long long)w->n_total, w->p,
		w->clip_l1, d->job.broadcast ? "broadcast" : "request",
		(unsigned long long)w->k_done, (unsigned long long)dp_ledger_answers(d->ledger),
		(unsigned long long)d->cap_answers, dp_ledger_spent(d->ledger),
		dp_ledger_left(d->ledger));
	if (!own_budget_left(d))
		DP_INFO("owner", "budget exhausted: staying connected (refusing) until Done");
}

/* ---- Done ------------------------------------------------------------------ */

static void own__on_done(struct own_daemon *d, const Dpasync__Done *m)
{
	dp_modelfile mf;
	int r;

	if (!d->welcomed) {
		own_client_drop(d, "Done before Welcome");
		return;
	}
	if (m->n_final_theta != d->p) {
		own_client_drop(d, "Done.final_theta has dimension %zu, expected %zu",
				m->n_final_theta, d->p);
		return;
	}
	for (size_t q = 0; q < d->p; q++)
		if (!isfinite(m->final_theta[q])) {
			own_client_drop(d, "Done.final_theta[%zu] is not finite", q);
			return;
		}
	if (m->t != d->job.T) {
		own_client_drop(d, "Done.T=%llu but the job's T is %llu",
				(unsigned long long)m->t, (unsigned long long)d->job.T);
		return;
	}
	memset(&mf, 0, sizeof(mf));
	mf.model = d->job.model;
	mf.p = d->p;
	mf.theta = m->final_theta;
	mf.features = d->ds.names;
	mf.bias = d->set.bias;
	mf.T = (size_t)m->t;
	mf.lambda = d->job.lambda;
	mf.theta_max = d->job.theta_max;
	mf.clip = d->job.clip;
	snprintf(mf.mode, sizeof(mf.mode), "async");
	r = dp_modelfile_write(d->model_out, &mf);
	if (r < 0) {
		DP_ERROR("owner", "done: cannot save the model to %s: %s", d->model_out,
			 dp_error_detail(r));
		own_stop(d, OWN_EXIT_FAIL);
		return;
	}
	DP_INFO("owner", "done job=%s T=%llu model=%s answers=%llu spent=%.9g", d->job.name,
		(unsigned long long)m->t, d->model_out,
		(unsigned long long)dp_ledger_answers(d->ledger), dp_ledger_spent(d->ledger));
	own_stop(d, OWN_EXIT_OK);
}

/* ---- callbacks ------------------------------------------------------------- */

static int own__on_handshake(dp_conn *c, const char *peer_id)
{
	struct own_daemon *d = dp_conn_data(c);

	if (d->stopping)
		return 1;
	DP_INFO("conn", "connected peer=%s id=%s", dp_conn_peer_addr(c), peer_id);
	dp_metrics_set(d->m.connected, 1);
	own__send_hello(d);
	uv_timer_start(&d->welcome_timer, own__on_welcome_timeout, OWN_WELCOME_TIMEOUT_MS, 0);
	return 0;
}

static void own__on_message(dp_conn *c, Dpasync__Envelope *m)
{
	struct own_daemon *d = dp_conn_data(c);

	if (d->stopping || c != d->conn) {
		dp_frame_msg_free(m);
		return;
	}
	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_WELCOME:
		own__on_welcome(d, m->welcome);
		break;
	case DPASYNC__ENVELOPE__MSG_QUERY:
		if (!d->welcomed)
			own_client_drop(d, "Query before Welcome");
		else
			own_answer_query(d, m->query);
		break;
	case DPASYNC__ENVELOPE__MSG_DONE:
		own__on_done(d, m->done);
		break;
	default:
		own_client_drop(d, "unexpected %s message from the learner", dp_frame_kind(m));
		break;
	}
	dp_frame_msg_free(m);
}

static void own__on_close(dp_conn *c, int reason, const char *detail)
{
	struct own_daemon *d = dp_conn_data(c);

	if (c != d->conn)
		return;
	d->conn = NULL;
	d->welcomed = false;
	d->request_pending = false;
	own_clock_resume(d);
	dp_metrics_set(d->m.connected, 0);
	if (!uv_is_closing((uv_handle_t *)&d->welcome_timer))
		uv_timer_stop(&d->welcome_timer);
	if (d->stopping) {
		DP_DEBUG("conn", "closed: %s", detail ? detail : "");
		return;
	}
	if (reason == 0)
		DP_INFO("conn", "connection to the learner closed: %s", detail ? detail : "");
	else
		DP_WARN("conn", "connection to the learner failed reason=%s detail=%s",
			dp_strerror(reason), detail ? detail : "");
	own__schedule_retry(d);
}

void own_client_start(struct own_daemon *d)
{
	dp_conn_config cfg;
	dp_frame_limits lim;
	int r;

	if (d->stopping || d->conn != NULL)
		return;
	memset(&cfg, 0, sizeof(cfg));
	memset(&lim, 0, sizeof(lim));
	lim.p = d->p;
	cfg.ctx = d->ctx;
	cfg.cb.on_handshake = own__on_handshake;
	cfg.cb.on_message = own__on_message;
	cfg.cb.on_close = own__on_close;
	cfg.data = d;
	cfg.max_frame = (uint32_t)d->set.max_frame;
	cfg.limits = &lim;
	d->connects++;
	DP_DEBUG("conn", "connecting to=%s:%u attempt=%u", d->host, (unsigned)d->port, d->attempt);
	r = dp_conn_connect(d->loop, &cfg, d->host, d->port, d->set.server_name, &d->conn);
	if (r < 0) {
		d->conn = NULL;
		DP_WARN("conn", "cannot start connecting to %s:%u: %s", d->host, (unsigned)d->port,
			dp_error_detail(r));
		own__schedule_retry(d);
	}
}
