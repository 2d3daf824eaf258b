/* learnerd: the TLS listener, admission of owners and message dispatch
 * (docs/protocol.md §1, §6). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/certs.h"
#include "common/core/error.h"
#include "common/net/frame.h"
#include "common/core/log.h"
#include "learner/lrn.h"

/* One learner per process: the callbacks of conn.h carry per-connection
 * data only (the owner, once admitted). */
static struct lrn *lrn__srv;

int lrn_parse_owners(const char *list, char ***names, size_t *count)
{
	char **v = NULL, *copy, *p, *tok;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (list == NULL || *list == '\0')
		return dp_error_set(DP_EINVAL, "owners: no owner identities given");
	copy = strdup(list);
	if (copy == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	p = copy;
	while ((tok = strsep(&p, ",")) != NULL) {
		char *end;

		while (*tok == ' ' || *tok == '\t')
			tok++;
		end = tok + strlen(tok);
		while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (*tok == '\0') {
			rc = dp_error_set(DP_EINVAL, "owners: empty identity in '%s'", list);
			goto fail;
		}
		if (dp_tls_check_name(tok) != 0 || strlen(tok) > DP_TLS_ID_MAX) {
			rc = dp_error_set(DP_EINVAL, "owners: '%s' is not a valid identity "
					  "(1..%d of A-Z a-z 0-9 . _ -)", tok, DP_TLS_ID_MAX);
			goto fail;
		}
		for (size_t i = 0; i < n; i++) {
			if (strcmp(v[i], tok) == 0) {
				rc = dp_error_set(DP_EINVAL, "owners: '%s' listed twice", tok);
				goto fail;
			}
		}
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 8;
			char **nv = realloc(v, nc * sizeof(*nv));

			if (nv == NULL) {
				rc = dp_error_set(DP_ENOMEM, "out of memory");
				goto fail;
			}
			v = nv;
			cap = nc;
		}
		v[n] = strdup(tok);
		if (v[n] == NULL) {
			rc = dp_error_set(DP_ENOMEM, "out of memory");
			goto fail;
		}
		n++;
	}
	free(copy);
	*names = v;
	*count = n;
	return 0;
fail:
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	free(copy);
	return rc;
}

int lrn_parse_hostport(const char *what, const char *s, char **host, uint16_t *port)
{
	const char *colon, *h = s;
	size_t hlen;
	char *end;
	unsigned long v;

	if (s == NULL || *s == '\0')
		return dp_error_set(DP_EINVAL, "%s: expected HOST:PORT", what);
	if (*s == '[') {
		const char *rb = strchr(s, ']');

		if (rb == NULL || rb[1] != ':')
			return dp_error_set(DP_EINVAL, "%s: expected [ADDR]:PORT, got '%s'", what, s);
		h = s + 1;
		hlen = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			return dp_error_set(DP_EINVAL, "%s: expected HOST:PORT, got '%s'", what, s);
		hlen = (size_t)(colon - s);
		if (memchr(s, ':', hlen) != NULL)
			return dp_error_set(DP_EINVAL, "%s: write an IPv6 address as [ADDR]:PORT, got '%s'",
					    what, s);
	}
	if (colon[1] < '0' || colon[1] > '9')
		return dp_error_set(DP_EINVAL, "%s: bad port in '%s'", what, s);
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || errno != 0 || v > 65535)
		return dp_error_set(DP_EINVAL, "%s: bad port in '%s'", what, s);
	*host = strndup(h, hlen);
	if (*host == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	*port = (uint16_t)v;
	return 0;
}

static struct lrn_owner *lrn__find(struct lrn *L, const char *id)
{
	for (size_t i = 0; i < L->N; i++)
		if (strcmp(L->owners[i].id, id) == 0)
			return &L->owners[i];
	return NULL;
}

void lrn_server_drop(struct lrn *L, struct lrn_owner *o, const char *reason)
{
	dp_conn *c = o->conn;

	if (c == NULL)
		return;
	DP_WARN("conn", "closing peer=%s id=%s reason=\"%s\"", dp_conn_peer_addr(c), o->id, reason);
	o->conn = NULL;
	o->hello = false;
	lrn_sched_owner_gone(L, o);
	/* conn data stays o: on_close still counts the connection down. */
	dp_conn_close(c);
	lrn_stats_gauges(L);
}

static int lrn__on_handshake(dp_conn *c, const char *peer_id)
{
	struct lrn *L = lrn__srv;
	struct lrn_owner *o;

	if (L->phase != LRN_RUN) {
		DP_INFO("conn", "closing peer=%s id=%s reason=\"learner is shutting down\"",
			dp_conn_peer_addr(c), peer_id);
		return 1;
	}
	o = lrn__find(L, peer_id);
	if (o == NULL) {
		DP_WARN("conn", "closing peer=%s id=%s reason=\"identity not in owners\"",
			dp_conn_peer_addr(c), peer_id);
		dp_metrics_inc(L->st.rejected);
		return 1;
	}
	if (o->conn != NULL) {
		DP_WARN("conn", "closing peer=%s id=%s reason=\"identity already connected from %s\"",
			dp_conn_peer_addr(c), peer_id, dp_conn_peer_addr(o->conn));
		dp_metrics_inc(L->st.rejected);
		return 1;
	}
	o->conn = c;
	o->hello = false;
	o->conn_since = lrn_mono();
	dp_conn_set_data(c, o);
	L->open_conns++;
	DP_INFO("conn", "owner connected id=%s peer=%s", o->id, dp_conn_peer_addr(c));
	return 0;
}

static void lrn__on_close(dp_conn *c, int reason, const char *detail)
{
	struct lrn *L = lrn__srv;
	struct lrn_owner *o = dp_conn_data(c);

	if (o == NULL) {
		/* on_handshake refusals (DP_EPROTO) were logged there; a TLS
		 * failure (another CA, no certificate, timeout) is logged here so
		 * an operator sees who knocked. */
		if (reason != 0 && reason != DP_EPROTO)
			DP_WARN("conn", "handshake failed peer=%s reason=\"%s\"", dp_conn_peer_addr(c),
				detail);
		return;
	}
	L->open_conns--;
	if (o->conn == c) {
		if (reason != 0)
			DP_WARN("conn", "closing peer=%s id=%s reason=\"%s\"", dp_conn_peer_addr(c),
				o->id, detail);
		else
			DP_INFO("conn", "owner disconnected id=%s peer=%s", o->id, dp_conn_peer_addr(c));
		o->conn = NULL;
		o->hello = false;
		lrn_sched_owner_gone(L, o);
		lrn_stats_gauges(L);
		if (L->phase == LRN_RUN)
			lrn_sched_pump(L);
	}
	if (L->open_conns == 0 && L->phase != LRN_RUN)
		lrn_sched_stop_timers(L);   /* the last handles: the loop can end */
}

static void lrn__send_welcome(struct lrn *L, struct lrn_owner *o)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Welcome w = DPASYNC__WELCOME__INIT;
	int rc;

	w.job = L->s->job;
	w.model = (char *)dp_model_name(L->model);
	w.t = L->T;
	w.n = (uint32_t)L->N;
	lrn_state_welcome_params(L, &w.n_total, &w.rho);
	w.lambda = L->s->lambda;
	w.theta_max = L->s->theta_max;
	w.clip_l1 = lrn_state_clip(L);
	w.mode = L->s->mode == LRN_MODE_BROADCAST ? DPASYNC__MODE__MODE_BROADCAST
						  : DPASYNC__MODE__MODE_REQUEST;
	w.p = (uint32_t)L->p;
	w.k_done = L->k_done;
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_WELCOME;
	env.welcome = &w;
	rc = dp_conn_send(o->conn, &env);
	if (rc < 0)
		DP_WARN("conn", "welcome to id=%s failed: %s", o->id, dp_error_detail(rc));
}

static void lrn__on_hello(struct lrn *L, struct lrn_owner *o, const Dpasync__Hello *h)
{
	char why[256];
	uint64_t cap;
	dp_frame_limits lim = { 0 };

	if (o->hello) {
		lrn_server_drop(L, o, "second Hello on one connection");
		return;
	}
	if (strcmp(h->owner_id, o->id) != 0) {
		snprintf(why, sizeof(why), "Hello owner_id '%s' is not the certificate identity",
			 h->owner_id);
		lrn_server_drop(L, o, why);
		return;
	}
	if (L->p == 0) {
		if (lrn_state_set_p(L, h->n_features) < 0) {
			lrn_server_drop(L, o, dp_error_detail(DP_EINVAL));
			return;
		}
		DP_INFO("learner", "p=%zu from the Hello of id=%s", L->p, o->id);
	} else if (h->n_features != L->p) {
		snprintf(why, sizeof(why), "Hello n_features %u differs from the job's p %zu",
			 h->n_features, L->p);
		lrn_server_drop(L, o, why);
		return;
	}
	if (L->started && h->n_rows != o->n_rows) {
		snprintf(why, sizeof(why), "Hello n_rows %llu differs from n_i %llu fixed when "
			 "training started", (unsigned long long)h->n_rows,
			 (unsigned long long)o->n_rows);
		lrn_server_drop(L, o, why);
		return;
	}
	o->n_rows = h->n_rows;
	o->epsilon = h->epsilon;
	o->answers_cap = h->answers_cap;
	o->answers_given = h->answers_given;
	o->hello = true;
	o->ever_hello = true;
	lim.p = L->p;
	dp_conn_set_limits(o->conn, &lim);
	if (isinf(h->epsilon))
		DP_WARN("learner", "owner id=%s has epsilon=inf: its answers carry no noise", o->id);
	DP_INFO("learner", "hello id=%s n_rows=%llu p=%u epsilon=%g answers_cap=%llu "
		"answers_given=%llu", o->id, (unsigned long long)h->n_rows, h->n_features,
		h->epsilon, (unsigned long long)h->answers_cap,
		(unsigned long long)h->answers_given);
	lrn__send_welcome(L, o);
	lrn_stats_gauges(L);

	/* The owner's ledger is the authority on its budget: a reconnecting
	 * owner with answers left is usable again even after a Refuse. */
	cap = h->answers_cap ? h->answers_cap : L->T;
	if (h->answers_given >= cap) {
		lrn_sched_exhausted(L, o, "no answers left per its Hello");
		if (L->phase == LRN_RUN)
			lrn_sched_pump(L);   /* it may still complete the start */
		return;
	}
	if (o->exhausted) {
		DP_INFO("learner", "owner id=%s has answers left again (%llu of %llu given)", o->id,
			(unsigned long long)h->answers_given, (unsigned long long)cap);
		o->exhausted = false;
	}
	lrn_sched_pump(L);
}

static void lrn__on_message(dp_conn *c, Dpasync__Envelope *m)
{
	struct lrn *L = lrn__srv;
	struct lrn_owner *o = dp_conn_data(c);
	char why[128];

	if (o == NULL || o->conn != c || L->phase != LRN_RUN) {
		dp_frame_msg_free(m);
		return;
	}
	if (m->msg_case != DPASYNC__ENVELOPE__MSG_HELLO && !o->hello) {
		snprintf(why, sizeof(why), "%s before Hello", dp_frame_kind(m));
		lrn_server_drop(L, o, why);
		dp_frame_msg_free(m);
		return;
	}
	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_HELLO:
		lrn__on_hello(L, o, m->hello);
		break;
	case DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST:
		lrn_sched_request(L, o);
		break;
	case DPASYNC__ENVELOPE__MSG_ANSWER:
		o->answers_given = m->answer->answers_given;
		lrn_sched_answer(L, o, m->answer->k, m->answer->gradient, m->answer->epsilon_spent);
		break;
	case DPASYNC__ENVELOPE__MSG_REFUSE:
		lrn_sched_refuse(L, o, m->refuse->k, m->refuse->reason);
		break;
	default:
		snprintf(why, sizeof(why), "unexpected %s message from an owner", dp_frame_kind(m));
		lrn_server_drop(L, o, why);
		break;
	}
	dp_frame_msg_free(m);
}

int lrn_server_start(struct lrn *L)
{
	dp_conn_config cfg = { 0 };
	int rc;

	lrn__srv = L;
	cfg.ctx = L->ctx;
	cfg.cb.on_handshake = lrn__on_handshake;
	cfg.cb.on_message = lrn__on_message;
	cfg.cb.on_close = lrn__on_close;
	cfg.data = NULL;
	cfg.max_frame = (uint32_t)L->s->max_frame;
	/* Owners plus a margin for reconnects racing old connections and for
	 * strangers, so a flood of handshakes cannot exhaust descriptors. */
	cfg.max_conns = 4 * L->N + 16;
	rc = dp_listener_start(L->loop, &cfg, L->listen_host, L->listen_port, &L->listener);
	if (rc < 0)
		return rc;
	L->tls_port = dp_listener_port(L->listener);
	return 0;
}

void lrn_server_close_all(struct lrn *L, bool done)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Done d = DPASYNC__DONE__INIT;

	if (L->listener) {
		dp_listener_close(L->listener);
		L->listener = NULL;
	}
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_DONE;
	env.done = &d;
	d.n_final_theta = L->p;
	d.final_theta = L->theta_L;
	d.t = L->T;
	for (size_t i = 0; i < L->N; i++) {
		struct lrn_owner *o = &L->owners[i];
		dp_conn *c = o->conn;

		if (c == NULL)
			continue;
		if (done && o->hello) {
			int rc = dp_conn_send(c, &env);

			if (rc < 0)
				DP_WARN("conn", "done to id=%s failed: %s", o->id, dp_error_detail(rc));
			else
				DP_INFO("conn", "done sent id=%s", o->id);
		}
		o->conn = NULL;
		o->hello = false;
		/* Graceful: Done and close_notify leave first, bounded by the
		 * connection's close linger. */
		dp_conn_close(c);
	}
	lrn_stats_gauges(L);
}
