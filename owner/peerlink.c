/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd --peer: the links of an agent to its neighbours (docs/peer-agents.md
 * "Connections"; the agent itself is peer.c, the contract peerlink.h).
 *
 * One mutual-TLS connection per pair of neighbours; the agent whose id
 * sorts first dials (with jittered backoff, the address read from the
 * address book at every attempt), the other listens.  The listener admits
 * only the neighbours of the graph that are due to dial it; the dialer
 * accepts only a server whose certificate names the neighbour.  On every
 * new connection both sides send their current model, so a neighbour that
 * was down catches up, and a neighbour that is down keeps the model it
 * last sent.  A model received is recorded here and reported up through
 * the agent's on_model callback, never by calling peer.c. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "common/net/addr.h"
#include "common/net/tls.h"

#include "owner/peerlink.h"


/* What a connection's data points at: a neighbour once admitted, the agent
 * before (the listener's connections), NULL once replaced. */
enum { KIND_NB = 1, KIND_AGENT = 2 };

size_t own_peerlink_connected(const struct own_peer *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_nb; i++)
		n += p->nb[i].conn != NULL;
	return n;
}

static void gauge_connected(struct own_peer *p)
{
	if (p->cfg.m->nb_up)
		dp_metrics_set(p->cfg.m->nb_up, (double)own_peerlink_connected(p));
}

/* ---- sending --------------------------------------------------------------- */

/* env (its version set here) to neighbour n: 0, or the failure, logged. */
static int send_env(struct nb *n, Dpasync__Envelope *env)
{
	int r;

	env->version = DP_PROTO_VERSION;
	r = dp_conn_send(n->conn, env);
	if (r < 0)
		DP_WARN("peer", "send to %s failed: %s", n->id, dp_error_detail(r));
	return r;
}

/* Our current model (with the flags of this pair) to one neighbour.
 * Nothing before the first release: an unreleased theta was never noised. */
static void send_model(struct own_peer *p, struct nb *n)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__PeerModel pm = DPASYNC__PEER_MODEL__INIT;

	if (n->conn == NULL || !dp_conn_is_open(n->conn))
		return;
	if (p->rel.on && p->rel.grad0)
		return;   /* no wake-ups: the one release is all that leaves */
	if (!p->released && !p->finished && !n->final)
		return;
	pm.agent_id = (char *)p->cfg.id;
	pm.step = p->step;
	pm.wakeups = p->done;
	pm.final = p->finished;
	pm.seen_final = n->final;
	/* Before any release (finished at once, no budget) we say so without a
	 * model: a vector of zeros is public. */
	pm.n_theta = p->p;
	pm.theta = p->released ? p->theta : p->cand;
	if (!p->released)
		memset(p->cand, 0, p->p * sizeof(double));
	env.msg_case = DPASYNC__ENVELOPE__MSG_PEER_MODEL;
	env.peer_model = &pm;
	if (send_env(n, &env) < 0)
		return;
	n->sent++;
	DP_DEBUG("peer", "model to=%s step=%llu final=%d seen_final=%d", n->id,
		 (unsigned long long)pm.step, (int)pm.final, (int)pm.seen_final);
	if (p->cfg.m->models_out)
		dp_metrics_inc(p->cfg.m->models_out);
}

void own_peerlink_send_all(struct own_peer *p)
{
	for (size_t i = 0; i < p->n_nb; i++)
		send_model(p, &p->nb[i]);
}

/* One PeerRelease to n: release `origin` (SIZE_MAX: the flags only). */
static void send_rel(struct own_peer *p, struct nb *n, size_t origin)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__PeerRelease pr = DPASYNC__PEER_RELEASE__INIT;

	if (n->conn == NULL || !dp_conn_is_open(n->conn))
		return;
	pr.origin = (char *)"";
	if (origin != SIZE_MAX) {
		pr.origin = (char *)dp_graph_id(p->graph, origin);
		pr.rows = p->rel.rows[origin];
		pr.n_value = p->p;
		pr.value = p->rel.vec + origin * p->p;
		pr.kind = p->rel.grad0 ? 1 : 2;
	}
	pr.complete = own_rel_complete(&p->rel) && p->rel.served;
	pr.seen_complete = n->complete;
	env.msg_case = DPASYNC__ENVELOPE__MSG_PEER_RELEASE;
	env.peer_release = &pr;
	if (send_env(n, &env) < 0 || origin == SIZE_MAX)
		return;
	n->rel_known[origin] = true;
	n->rel_sent++;
	DP_DEBUG("peer", "release of %s to=%s", pr.origin, n->id);
}

/* Relaying (docs/peer-agents.md §6): with --prior all every
 * release we hold, else our own only; each at most once per connection. */
static bool relays(const struct own_peer *p, size_t origin)
{
	return p->rel.have[origin] && (p->rel.all || origin == p->rel.self);
}

void own_peerlink_send_release(struct own_peer *p, size_t origin)
{
	if (!relays(p, origin))
		return;
	for (size_t i = 0; i < p->n_nb; i++)
		if (!p->nb[i].rel_known[origin])
			send_rel(p, &p->nb[i], origin);
}

void own_peerlink_send_flags(struct own_peer *p)
{
	for (size_t i = 0; i < p->n_nb; i++)
		send_rel(p, &p->nb[i], SIZE_MAX);
}

/* A new connection: the neighbour may have restarted and lost what it
 * held, so everything we relay goes again, then our flags. */
static void send_held(struct own_peer *p, struct nb *n)
{
	if (!p->rel.on)
		return;
	memset(n->rel_known, 0, p->rel.N * sizeof(bool));
	/* its own release is its own to send: never relayed back to it */
	n->rel_known[dp_graph_find(p->graph, n->id)] = true;
	for (size_t j = 0; j < p->rel.N; j++)
		if (relays(p, j) && !n->rel_known[j])
			send_rel(p, n, j);
	send_rel(p, n, SIZE_MAX);
}

/* ---- connections -------------------------------------------------------------- */

static void dial(struct nb *n);

static void on_retry(uv_timer_t *t)
{
	dial(t->data);
}

static void schedule_retry(struct nb *n)
{
	double cap = OWN_BACKOFF_BASE_S, u = 0.5;

	if (n->peer->closed)
		return;
	for (unsigned i = 0; i < n->attempt && cap < OWN_BACKOFF_MAX_S; i++)
		cap *= 2;
	if (cap > OWN_BACKOFF_MAX_S)
		cap = OWN_BACKOFF_MAX_S;
	if (n->attempt < 64)
		n->attempt++;
	if (dp_rng_uniform(n->peer->cfg.bits, &u) < 0)
		u = 0.5;
	uv_timer_start(&n->retry, on_retry, (uint64_t)llround(u * cap * 1000.0), 0);
}

/* A PeerRelease from n: hold a release we pool, relay it on, note the
 * flags, and tell the agent (on_model). */
static void on_release(struct own_peer *p, struct nb *n, const Dpasync__PeerRelease *pr)
{
	bool was = n->complete;

	if (pr->origin[0] != '\0') {
		long o = dp_graph_find(p->graph, pr->origin);

		if (o < 0) {
			DP_WARN("peer", "closing peer=%s id=%s reason=release of '%s', not in the "
				"graph", dp_conn_peer_addr(n->conn), n->id, pr->origin);
			dp_conn_close(n->conn);
			return;
		}
		/* Every agent of a graph releases the same kind: a model is no
		 * gradient to pool. */
		if (pr->kind != (p->rel.grad0 ? 1u : 2u)) {
			DP_WARN("peer", "closing peer=%s id=%s reason=a %s release, this agent pools "
				"%s: every agent of the graph takes the same --release",
				dp_conn_peer_addr(n->conn), n->id, pr->kind == 1 ? "grad0" : "models",
				p->rel.grad0 ? "grad0" : "models");
			dp_conn_close(n->conn);
			return;
		}
		/* Without relaying a neighbour sends only its own release. */
		if (!p->rel.all && strcmp(pr->origin, n->id) != 0) {
			DP_WARN("peer", "closing peer=%s id=%s reason=release of '%s' relayed with "
				"--prior graph", dp_conn_peer_addr(n->conn), n->id, pr->origin);
			dp_conn_close(n->conn);
			return;
		}
		n->rel_received++;
		n->rel_known[o] = true;
		DP_DEBUG("peer", "release of %s from=%s", pr->origin, n->id);
		if (own_peerserve_store(p, (size_t)o, pr->value, pr->rows) == 1)
			own_peerlink_send_release(p, (size_t)o);
	}
	if (pr->complete)
		n->complete = true;
	if (pr->seen_complete)
		n->seen_complete = true;
	if (n->complete && !was)
		send_rel(p, n, SIZE_MAX);   /* confirms seen_complete */
	p->on_model(p);
}

static void on_message(dp_conn *c, Dpasync__Envelope *m)
{
	struct nb *n = dp_conn_data(c);
	struct own_peer *p;
	const Dpasync__PeerModel *pm;

	if (n == NULL || n->conn != c) {
		dp_frame_msg_free(m);
		return;
	}
	p = n->peer;
	if (m->msg_case == DPASYNC__ENVELOPE__MSG_PEER_RELEASE && p->rel.on) {
		on_release(p, n, m->peer_release);
		dp_frame_msg_free(m);
		return;
	}
	if (m->msg_case != DPASYNC__ENVELOPE__MSG_PEER_MODEL) {
		DP_WARN("peer", "closing peer=%s id=%s reason=unexpected %s", dp_conn_peer_addr(c),
			n->id, dp_frame_kind(m));
		dp_frame_msg_free(m);
		dp_conn_close(c);
		return;
	}
	pm = m->peer_model;
	if (strcmp(pm->agent_id, n->id) != 0) {
		DP_WARN("peer", "closing peer=%s id=%s reason=model names agent '%s'",
			dp_conn_peer_addr(c), n->id, pm->agent_id);
		dp_frame_msg_free(m);
		dp_conn_close(c);
		return;
	}
	n->received++;
	DP_DEBUG("peer", "model from=%s step=%llu final=%d seen_final=%d", n->id,
		 (unsigned long long)pm->step, (int)pm->final, (int)pm->seen_final);
	if (p->cfg.m->models_in)
		dp_metrics_inc(p->cfg.m->models_in);
	if (!n->have || pm->step > n->step) {
		memcpy(n->theta, pm->theta, p->p * sizeof(double));
		n->step = pm->step;
		n->have = true;
	}
	if (pm->final && !n->final) {
		n->final = true;
		send_model(p, n);   /* confirms seen_final */
	}
	if (pm->seen_final)
		n->seen_final = true;
	dp_frame_msg_free(m);
	p->on_model(p);
}

static void on_close(dp_conn *c, int reason, const char *detail)
{
	struct nb *n = dp_conn_data(c);

	if (n == NULL || n->conn != c) {
		if (reason != 0 && n != NULL)
			DP_INFO("peer", "connection to %s closed: %s", n->id, detail);
		if (n != NULL && n->dialer && n->connecting && n->conn == NULL) {
			n->connecting = false;
			schedule_retry(n);
		}
		return;
	}
	n->conn = NULL;
	n->connecting = false;
	DP_INFO("peer", "neighbour=%s disconnected reason=%s", n->id,
		reason == 0 ? "closed" : detail);
	gauge_connected(n->peer);
	if (n->dialer && !n->peer->closed)
		schedule_retry(n);
}

static void adopt(struct nb *n, dp_conn *c)
{
	if (n->conn != NULL && n->conn != c) {
		dp_conn *old = n->conn;

		/* A newer connection of the same neighbour wins (it restarted). */
		dp_conn_set_data(old, NULL);
		dp_conn_close(old);
	}
	n->conn = c;
	n->connecting = false;
	n->attempt = 0;
	n->connections++;
	dp_conn_set_data(c, n);
	DP_INFO("peer", "neighbour=%s connected peer=%s", n->id, dp_conn_peer_addr(c));
	gauge_connected(n->peer);
	send_model(n->peer, n);
	send_held(n->peer, n);
}

static struct nb *find(struct own_peer *p, const char *id)
{
	for (size_t i = 0; i < p->n_nb; i++)
		if (strcmp(p->nb[i].id, id) == 0)
			return &p->nb[i];
	return NULL;
}

/* Server side: only a neighbour that is due to dial us. */
static int on_accept_hs(dp_conn *c, const char *peer_id)
{
	struct own_peer *p = dp_conn_data(c);
	struct nb *n;

	if (p == NULL || p->kind != KIND_AGENT)
		return -1;
	n = find(p, peer_id);
	if (p->closed)
		return -1;
	if (n == NULL) {
		DP_WARN("peer", "refused peer=%s id=%s reason=not a neighbour in the graph",
			dp_conn_peer_addr(c), peer_id);
		return -1;
	}
	if (n->dialer) {
		DP_WARN("peer", "refused peer=%s id=%s reason=this agent dials %s, not the reverse",
			dp_conn_peer_addr(c), peer_id, peer_id);
		return -1;
	}
	adopt(n, c);
	return 0;
}

/* The listener's connections: before admission their data is the agent. */
static void on_accept_close(dp_conn *c, int reason, const char *detail)
{
	int *kind = dp_conn_data(c);

	if (kind != NULL && *kind == KIND_AGENT)
		return;
	on_close(c, reason, detail);
}

static int on_dial_hs(dp_conn *c, const char *peer_id)
{
	struct nb *n = dp_conn_data(c);

	if (n == NULL || strcmp(peer_id, n->id) != 0 || n->peer->closed) {
		DP_WARN("peer", "refused server id=%s reason=not the neighbour dialled", peer_id);
		return -1;
	}
	adopt(n, c);
	return 0;
}

static void dial(struct nb *n)
{
	struct own_peer *p = n->peer;
	dp_conn_config cc;
	dp_frame_limits lim = { .p = p->p };
	char host[DP_ADDR_HOST_MAX + 1];
	uint16_t port;
	dp_conn *c;
	int r;

	if (p->closed || n->conn != NULL || n->connecting)
		return;
	r = own_peerfile_addr(p->cfg.set->peers, n->id, host, sizeof(host), &port);
	if (r < 0) {
		DP_DEBUG("peer", "no address for %s yet: %s", n->id, dp_error_detail(r));
		schedule_retry(n);
		return;
	}
	memset(&cc, 0, sizeof(cc));
	cc.ctx = p->cfg.client_ctx;
	cc.cb.on_handshake = on_dial_hs;
	cc.cb.on_message = on_message;
	cc.cb.on_close = on_close;
	cc.data = n;
	cc.max_frame = (uint32_t)p->cfg.set->max_frame;
	cc.limits = &lim;
	n->connecting = true;
	r = dp_conn_connect(p->cfg.loop, &cc, host, port, n->id, &c);
	if (r < 0) {
		n->connecting = false;
		DP_WARN("peer", "dial %s at %s:%u failed: %s", n->id, host, (unsigned)port,
			dp_error_detail(r));
		schedule_retry(n);
	}
}

/* ---- the agent's calls ---------------------------------------------------------- */

void own_peerlink_init(struct own_peer *p, own_peerlink_model_fn on_model)
{
	p->kind = KIND_AGENT;
	p->on_model = on_model;
	for (size_t i = 0; i < p->n_nb; i++) {
		p->nb[i].kind = KIND_NB;
		uv_timer_init(p->cfg.loop, &p->nb[i].retry);
		p->nb[i].retry.data = &p->nb[i];
	}
}

int own_peerlink_listen(struct own_peer *p, const char *host, uint16_t port)
{
	dp_conn_config sc;
	dp_frame_limits lim;
	int r;

	memset(&sc, 0, sizeof(sc));
	memset(&lim, 0, sizeof(lim));
	lim.p = p->p;
	sc.ctx = p->cfg.server_ctx;
	sc.cb.on_handshake = on_accept_hs;
	sc.cb.on_message = on_message;
	sc.cb.on_close = on_accept_close;
	sc.data = p;
	sc.max_frame = (uint32_t)p->cfg.set->max_frame;
	sc.limits = &lim;
	sc.max_conns = 2 * p->n_nb + 16;
	sc.max_pending = 16;
	r = dp_conn_listen(p->cfg.loop, &sc, host, port, &p->lst);
	if (r < 0)
		return r;
	p->port = dp_listener_port(p->lst);
	return 0;
}

void own_peerlink_dial_all(struct own_peer *p)
{
	for (size_t i = 0; i < p->n_nb; i++)
		if (p->nb[i].dialer)
			dial(&p->nb[i]);
}

/* What each link carried, once at the end: with one connection a side
 * queued nothing the other did not read before either closed (the last
 * message of each direction is the one that lets the other side exit), so
 * a neighbour's received equals our sent (docs/peer-agents.md "Delivery at exit"). */
static void log_link(const struct own_peer *p, const struct nb *n)
{
	DP_INFO("peer", "link neighbour=%s sent=%llu received=%llu connections=%u final=%s "
		"seen_final=%s step=%llu", n->id, (unsigned long long)n->sent,
		(unsigned long long)n->received, n->connections, n->final ? "yes" : "no",
		n->seen_final ? "yes" : "no", (unsigned long long)n->step);
	if (p->rel.on)
		DP_INFO("peer", "link neighbour=%s releases_sent=%llu releases_received=%llu "
			"complete=%s seen_complete=%s", n->id, (unsigned long long)n->rel_sent,
			(unsigned long long)n->rel_received, n->complete ? "yes" : "no",
			n->seen_complete ? "yes" : "no");
}

void own_peerlink_close(struct own_peer *p)
{
	for (size_t i = 0; i < p->n_nb; i++) {
		uv_timer_t *t = &p->nb[i].retry;

		log_link(p, &p->nb[i]);
		if (t->loop != NULL && !uv_is_closing((uv_handle_t *)t))
			uv_close((uv_handle_t *)t, NULL);
		if (p->nb[i].conn)
			dp_conn_close(p->nb[i].conn);
	}
	if (p->lst) {
		dp_listener_close(p->lst);
		p->lst = NULL;
	}
}
