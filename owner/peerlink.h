/* SPDX-License-Identifier: Apache-2.0 */
/* The state an agent of peer mode shares with its neighbour links, and the
 * contract of peerlink.c (docs/peer-agents.md).
 *
 * peer.c (the agent: wake-ups, budget plan, restore, trace, the end) calls
 * peerlink.c (the connections to the neighbours and the PeerModel
 * messages); peerlink.c never calls peer.c.  The one event that goes back
 * up, a model received, reaches the agent through the on_model callback
 * peer.c registers with own_peerlink_init (docs/style.md "Layout").
 * Only peer.c, peerlink.c and peerserve.c (the served model, whose
 * contract ends this header) include it; main.c sees the agent through
 * own.h alone. */
#ifndef OWN_PEERLINK_H
#define OWN_PEERLINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/core/algo.h"
#include "common/core/graph.h"
#include "common/net/tls.h"

#include "owner/own.h"

struct own_peer;

/* A model arrived from a neighbour (its flags are already recorded). */
typedef void (*own_peerlink_model_fn)(struct own_peer *p);

/* One neighbour of the graph.  kind stays the first member: a connection's
 * data is a neighbour or the agent, told apart by it (peerlink.c). */
struct nb {
	int kind;               /* set by own_peerlink_init */
	struct own_peer *peer;
	char id[DP_TLS_ID_MAX + 1];
	double w;
	bool dialer;            /* we dial it: our id sorts first */
	dp_conn *conn;          /* the pair's live connection, or NULL */
	bool connecting;
	double *theta;          /* its last model (zeros until heard from) */
	uint64_t step;          /* the step of theta; 0: none (or warm start) */
	bool have;              /* a model was received */
	bool final;             /* theta is its final model */
	bool seen_final;        /* it has confirmed holding our final model */
	uint64_t sent;          /* PeerModel messages queued to it, every connection */
	uint64_t received;      /* PeerModel messages accepted from it */
	unsigned connections;   /* connections adopted (1: never replaced nor lost) */
	uint64_t *steps;        /* --schedule: its steps */
	size_t n_steps;
	unsigned attempt;
	uv_timer_t retry;
	/* --serve (peerserve.c): per graph node, whether this neighbour holds
	 * that release (it sent it, or we did) on the current connection */
	bool *rel_known;
	bool complete;          /* it holds every release its prior pools */
	bool seen_complete;     /* it has seen our complete */
	uint64_t rel_sent, rel_received; /* PeerRelease values, every connection */
};

/* --serve refit: the releases the agent holds (peerserve.c). */
struct own_rel {
	bool on, grad0, all;        /* --serve refit, --release grad0, --prior all */
	size_t N, self;             /* graph nodes; our node */
	bool *need, *have;          /* N: pooled by our prior; held */
	double *vec;                /* N * p: the releases held */
	uint64_t *rows;             /* N: their agents' row counts */
	size_t n_need, n_have;      /* needed; needed and held */
	bool served;                /* the served model was fitted (or failed) */
};

/* Every release the prior pools is held. */
static inline bool own_rel_complete(const struct own_rel *r)
{
	return r->n_have == r->n_need;
}

struct own_peer {
	int kind;                   /* set by own_peerlink_init */
	struct own_peer_config cfg;
	dp_graph *graph;
	size_t n_nb;
	struct nb *nb;
	const double **nb_theta;    /* n_nb pointers into nb[].theta, for the update */
	double *nb_w;               /* n_nb weights */
	size_t p;
	double *theta, *cand, *grad;
	dp_algo_p2p_params ap;
	double lambda;
	uint64_t T;                 /* wake-ups */
	uint64_t done;              /* wake-ups done (from the ledger after a restart) */
	uint64_t step;              /* step of theta (0: none yet, or warm start) */
	uint64_t warm;              /* ledger records of the warm start (0 or --warm-steps) */
	double eps_warm_step;
	bool released;              /* theta has left (or may leave): it is noised */
	uint64_t *my_steps;         /* --schedule */
	size_t n_my;
	bool finished, closed;
	struct own_clock clock;
	bool clock_on;
	uv_timer_t linger;
	dp_listener *lst;
	uint16_t port;
	FILE *trace;
	struct own_rel rel;
	own_peerlink_model_fn on_model; /* registered by own_peerlink_init; also
					   called after a release arrived */
};

/* Mark the agent and its neighbours for the connections' callbacks, keep
 * on_model, and initialise the neighbours' retry timers on cfg.loop.  Once, at
 * the end of own_peer_new, after the graph is loaded. */
void own_peerlink_init(struct own_peer *p, own_peerlink_model_fn on_model);
/* Listen on host:port for the neighbours due to dial us.  0 or the code of
 * dp_conn_listen (its detail unchanged: the caller names the flag). */
int own_peerlink_listen(struct own_peer *p, const char *host, uint16_t port);
/* Dial every neighbour whose id sorts after ours (retrying with jittered
 * backoff until connected or closed). */
void own_peerlink_dial_all(struct own_peer *p);
/* Send our current model to every connected neighbour (nothing before the
 * first release unless finished). */
void own_peerlink_send_all(struct own_peer *p);
/* --serve: release `origin` (a graph node, held) to every connected
 * neighbour that does not hold it; with --prior graph only our own. */
void own_peerlink_send_release(struct own_peer *p, size_t origin);
/* --serve: our complete flag (and seen_complete of each) to every
 * connected neighbour. */
void own_peerlink_send_flags(struct own_peer *p);
/* Neighbours connected now. */
size_t own_peerlink_connected(const struct own_peer *p);
/* For good: the retry timers, the connections and the listener (freed when
 * the loop runs), after one info line per neighbour with its link's counts
 * (docs/peer-agents.md "Delivery at exit").  p->closed is already set. */
void own_peerlink_close(struct own_peer *p);

/* ---- peerserve.c (its contract; validation is in own.h) ---- */

/* Allocate p->rel for --serve (nothing otherwise), after the graph is
 * loaded.  0 or DP_ENOMEM. */
int own_peerserve_init(struct own_peer *p);
/* Hold release v[p] of graph node origin with its rows: 1 if it was
 * needed and new, 0 otherwise (already held, not pooled). */
int own_peerserve_store(struct own_peer *p, size_t origin, const double *v, uint64_t rows);
/* --release grad0 after a restart with `answers` charges: hold the saved
 * release (or, if it was never saved, go on without it, logged).  0. */
int own_peerserve_restore(struct own_peer *p, uint64_t answers);
/* --release grad0: the one release, charged (fdatasync) before it is
 * held, so before it may leave.  0, or the budget's code (DP_EBUDGET),
 * or the release's; logged. */
int own_peerserve_release(struct own_peer *p);
/* The served model from the releases held, once (later calls: 0):
 * written to cfg.served_out.  0 or the error (logged). */
int own_peerserve_fit(struct own_peer *p);
/* Free p->rel and the neighbours' rel_known. */
void own_peerserve_free(struct own_peer *p);

#endif
