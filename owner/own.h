/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd: the data owner's daemon (docs/design.md §7, docs/ownerd.md).
 *
 * One libuv loop thread, and one worker computing an answer at a time off
 * it (answer.c, docs/ownerd.md "Threads").  Roles, one file each, calls going one way:
 *
 *   main.c    lifecycle: settings (config table, flags), startup checks,
 *      |      signals, metrics/health endpoint, THE one way to stop, the
 *      |      exit code
 *      v
 *   client.c  network: connect, Hello/Welcome, message dispatch, Done,
 *      |      reconnection with backoff; sends what the decisions return
 *      v
 *   answer.c  the decision for one Query (validate, spend, and return
 *      |      Answer / Refuse / drop the connection / stop) -- it never
 *      |      sends, drops or stops by itself
 *   clock.c   the Poisson clock (owned by the client)
 *   progress.c  the summary line every few seconds and at exit (main's; it
 *      |        reads the metrics and the budget, calls nothing above)
 *      v
 *   budget.c  state: the ledger, the per-answer share, the privacy order
 *             (budget.h)
 *
 * With --peer (docs/peer-agents.md) main builds peer.c instead of client.c
 * and answer.c: the agent's wake-ups (the decisions and the update) and
 * their order against the ledger, with peerlink.c (the connections to its
 * neighbours and the PeerModel messages; its contract is peerlink.h, a
 * received model comes back up by callback), clock.c and budget.c below it
 * and peerfile.c (the address book) beside it.
 *
 * Calls go down only.  Events go back up by return value (answer.c's
 * struct own_reply, budget.c's codes) or by a callback the upper layer
 * registers: the clock's ticks and its failure reach the client through
 * own_clock_tick_fn / own_clock_fail_fn, and stopping reaches main through
 * the own_stop_fn main gives the client.  Each role has its own struct;
 * main.c's struct own_daemon holds them all and is private to main.c. */
#ifndef OWN_H
#define OWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>
#include <openssl/ssl.h>

#include "common/core/dataset.h"
#include "common/core/exit.h"   /* exit codes: docs/design.md §10 "Exit status" */
#include "common/core/model.h"
#include "common/core/query.h"
#include "common/core/rng.h"
#include "common/net/config.h"
#include "common/net/conn.h"
#include "common/net/frame.h"
#include "common/net/metrics.h"

#include "owner/budget.h"

/* Reconnection backoff: full jitter over [0, min(MAX, BASE * 2^attempt)]. */
#define OWN_BACKOFF_BASE_S  0.1
#define OWN_BACKOFF_MAX_S   10.0
/* Waiting for the next job (after Done, or once the job's learner is
 * gone): 1 s doubling to 60 s, no jitter, one log line per step
 * (docs/ownerd.md "Serving successive jobs"). */
#define OWN_IDLE_BASE_S     1.0
#define OWN_IDLE_MAX_S      60.0

/* --serve, and the values of --release and --prior the agent tests
 * (dp_serve_release_names, dp_serve_prior_names). */
extern const char *const own_serve_names[];
enum { OWN_RELEASE_MODELS = 0, OWN_RELEASE_GRAD0 = 1 };
enum { OWN_PRIOR_GRAPH = 0, OWN_PRIOR_ALL = 1 };

/* Settings filled by common/net/config.h (main.c holds the table); read-only
 * once the daemon runs. */
struct own_settings {
	char *learner;          /* HOST:PORT */
	char *server_name;      /* expected name in the learner's certificate */
	char *learner_pin;      /* accepted learner keys ("sha256//..;.."); NULL: any */
	char *ca, *cert, *key;
	char *crl;              /* NULL: no revocation list */
	char *data;             /* CSV */
	char *target;           /* NULL: "y", or the schema's target */
	bool bias;
	char *schema;
	double epsilon;         /* each job's budget; +inf only with allow_no_noise */
	double lifetime_epsilon; /* the dataset's over all jobs; 0: epsilon */
	double delta;           /* the delta of the (epsilon, delta) guarantee of each
				   job, in [0, 1): 0 = pure epsilon-DP, Gaussian
				   refused; peer mode: > 0 = advanced composition
				   (docs/ownerd.md "Mechanisms and delta") */
	double lifetime_delta;  /* the same over all jobs; -1: not given (delta) */
	bool once;              /* exit after one job */
	uint64_t connect_attempts; /* with once: give up (exit 1) after this many
				   attempts that reached something other than
				   the verified learner (0: never) */
	bool reserve_ahead;     /* sync the next answer's share after the send (docs/ledger.md §9) */
	uint64_t answers_cap;   /* K_i; 0 = the learner's K_i from the first
				   Welcome (T when it carries none) */
	double rate;            /* Poisson clock ticks per second (sent in Hello) */
	double theta_max;       /* a Query with some |theta_j| above is refused */
	double welcome_timeout; /* seconds from the handshake to the Welcome; the
				   learner withholds it until every owner has
				   said Hello, so it is long */
	char *ledger;
	char *model_out;        /* NULL: model.json in the ledger directory */
	char *metrics_listen;   /* "" or NULL: off */
	char *port_file;
	bool allow_no_noise;
	int log_level;          /* enum dp_log_level */
	size_t max_frame;
	/* Peer mode (docs/peer-agents.md): no learner; the agent runs the
	 * update of docs/design.md §6 with its neighbours. */
	bool peer;
	char *graph;            /* a,b,w CSV (docs/p2p.md "Graph file") */
	char *peers;            /* address book: id,addr CSV, re-read at every dial */
	char *listen;           /* HOST:PORT for the neighbours that dial us */
	char *schedule;         /* step,agent CSV: wake exactly at the listed steps */
	char *trace;            /* per-agent wall-clock trace (CSV); NULL: trace.csv in the
				   ledger directory */
	int model;              /* enum dp_model: linear | logistic */
	int mechanism;          /* enum dp_mech of the agent's releases: laplace
				   (L1 --clip, pure epsilon charges) | gaussian (L2
				   --clip, rho charges at --delta > 0;
				   docs/peer-agents.md "Privacy") */
	bool mechanism_given;   /* --mechanism was set (refused without --peer) */
	double mu, confidence, lambda, lambda_per_row, clip, x2max, warm_start;
				/* lambda -1: lambda_per_row / m_i */
	uint64_t wakeups;       /* T_i */
	uint64_t warm_steps;    /* noisy steps of the warm start */
	double linger;          /* seconds to wait, once done, for the neighbours */
	/* --serve refit (docs/peer-agents.md §6): a personal
	 * model fitted on our rows towards a prior pooled from releases. */
	int serve;              /* own_serve_names: 0 none, 1 refit */
	int release;            /* dp_serve_release_names: models | grad0 */
	int prior;              /* dp_serve_prior_names: graph | all */
	int prior_scale;        /* dp_serve_scale_names: fit | none */
	char *curvature;        /* grad0: public rows for the prior's Hessian */
	struct dp_config_doubles taus; /* the tau grid (empty: dp_serve_taus) */
	uint64_t folds;
	char *served_out;       /* NULL: served.json in the ledger directory */
	bool release_given, prior_given, scale_given, folds_given, wakeups_given;
	double progress_every;  /* seconds between summary lines (0: none) */
};

/* The registry and its series; main.c creates them, the roles update them. */
struct own_metrics {
	struct dp_metrics *reg;
	struct dp_metric *answers;     /* dpasync_owner_answers_total (client) */
	struct dp_metric *refusals;    /* dpasync_owner_refusals_total (client) */
	struct dp_metric *eps_spent;   /* dpasync_owner_epsilon_spent{job_id} (budget) */
	struct dp_metric *eps_left;    /* dpasync_owner_epsilon_left{job_id} (budget) */
	struct dp_metric *life_cap;    /* dpasync_owner_lifetime_epsilon_cap (budget) */
	struct dp_metric *life_spent;  /* dpasync_owner_lifetime_epsilon_spent (budget) */
	struct dp_metric *life_left;   /* dpasync_owner_lifetime_epsilon_left (budget) */
	struct dp_metric *life_rho;    /* dpasync_owner_lifetime_rho_spent (budget) */
	struct dp_metric *life_at_delta;  /* dpasync_owner_lifetime_epsilon_at_delta{delta} (budget) */
	struct dp_metric *grad_secs;   /* dpasync_owner_gradient_seconds (answer) */
	struct dp_metric *connected;   /* dpasync_owner_connected (client) */
	struct dp_metric *reconnects;  /* dpasync_owner_reconnects_total (client) */
	struct dp_metric_family *connect_failures; /* ..._connect_failures_total{reason} (client) */
	/* peer mode (peer.c) */
	struct dp_metric *wakeups;     /* dpasync_peer_wakeups_total */
	struct dp_metric *models_in;   /* dpasync_peer_models_received_total */
	struct dp_metric *models_out;  /* dpasync_peer_models_sent_total */
	struct dp_metric *nb_up;       /* dpasync_peer_neighbours_connected */
	struct dp_metric *ticks;       /* dpasync_owner_clock_ticks_total (client) */
	struct dp_metric *ticks_skipped; /* ..._clock_ticks_skipped_total (client) */
};

/* How a lower layer asks main to stop the daemon with an exit code (the
 * first code wins). */
typedef void (*own_stop_fn)(void *arg, int code);

/* What the learner's Welcome told us (the job this owner takes part in). */
struct own_job {
	bool have;              /* a Welcome was accepted at least once */
	char name[DP_FRAME_MAX_STR + 1];
	dp_model model;
	uint64_t T;
	uint32_t N;
	uint64_t n_total;
	double rho, lambda, theta_max, clip;
	dp_mech mech;           /* the Welcome's mechanism (docs/protocol.md §5) */
	double clip_l2;         /* Gaussian: the Welcome's L2 clip (0 for Laplace) */
	bool broadcast;         /* mode: broadcast (no UpdateRequest) */
	uint64_t k_done;
};

/* ---- clock.c: the Poisson clock ----------------------------------------- */

/* A tick.  Returns true to stop the clock for good (peer mode, once its
 * wake-ups are done); false keeps it ticking.  The
 * owner's client always keeps it ticking, also while a request is
 * outstanding: those ticks are counted as skipped (docs/ownerd.md §4). */
typedef bool (*own_clock_tick_fn)(void *arg);
/* The CSPRNG failed while drawing a gap (logged): the clock has stopped. */
typedef void (*own_clock_fail_fn)(void *arg, int err);

struct own_clock {
	uv_timer_t timer;
	dp_bitsource *bits;
	double rate;
	own_clock_tick_fn on_tick;
	own_clock_fail_fn on_fail;
	void *arg;
	bool closed;
};

/* Initialise the timer on loop and arm the first gap.  bits must outlive
 * the clock.  0, or a DP_E... code from the generator. */
int own_clock_start(struct own_clock *c, uv_loop_t *loop, dp_bitsource *bits, double rate,
		    own_clock_tick_fn on_tick, own_clock_fail_fn on_fail, void *arg);
/* Draw the next gap afresh from now (the owner has become free to ask);
 * the same law as the running clock's next tick, by memorylessness.  A
 * generator failure stops the daemon through on_fail. */
void own_clock_restart(struct own_clock *c);
/* Stop for good and close the timer (freed when the loop runs). */
void own_clock_close(struct own_clock *c);

/* ---- settle.c: the settle's sync off the loop -------------------------- */

typedef void (*own_settle_fail_fn)(void *arg);

/* own_budget_settle, then its fdatasync on libuv's thread pool; on_fail(arg)
 * when that sync fails (the ledger has failed: stop).  0, or DP_EIO when
 * the write failed (the ledger has failed). */
int own_settle(uv_loop_t *loop, struct own_budget *b, own_settle_fail_fn on_fail, void *arg);

/* ---- answer.c: the decision for one Query -------------------------------- */

enum own_reply_kind {
	OWN_REPLY_ANSWER,       /* send the Answer */
	OWN_REPLY_REFUSE,       /* send Refuse{k, refuse} */
	OWN_REPLY_DROP,         /* close the connection, logging `drop` */
	OWN_REPLY_STOP,         /* send Refuse{k, refuse} if refuse != NULL, then stop */
	OWN_REPLY_DISCARD,      /* own_answer_cancel'ed: nothing charged, nothing to send */
};

struct own_reply {
	enum own_reply_kind kind;
	uint64_t k;
	const char *refuse;     /* static reason string */
	char drop[256];
	int exit_code;          /* STOP */
	/* ANSWER only: */
	const double *gradient; /* p values, the module's scratch: wiped by own_answer_wipe */
	size_t p;
	struct own_budget_status after;   /* the ledger after the charge */
	dp_query_info info;
	double secs;            /* time to compute */
};

/* Datasets of at most this many cells (n * p, 16 MiB of doubles) are
 * computed on the loop thread: a pass over them takes about 1-2 ms, and
 * below that the hand-over to a worker and back is a visible part of an
 * answer's latency (+30-60 us at 11,000 cells, +0.2 ms at 1.1 million,
 * within this machine's noise at 2.2 million: docs/ownerd.md "Threads").
 * The choice depends on n and p alone, which the learner knows from the
 * Hello. */
#define OWN_ANSWER_INLINE_CELLS (1u << 21)

/* A decision that needed the worker, delivered on the loop thread. */
typedef void (*own_answer_done_fn)(void *arg, const struct own_reply *rep);

/* The answerer.  Its computation runs on libuv's thread pool; everything
 * else, the ledger included, on the loop thread (docs/ownerd.md "Threads"). */
struct own_answer {
	uv_loop_t *loop;
	const dp_dataset *ds;
	dp_bitsource *bits;         /* the worker's own: a dp_csprng is not shared */
	struct own_budget *budget;
	struct dp_metric *grad_secs;
	double theta_max;           /* refuse a Query with some |theta_j| above */
	own_answer_done_fn done;
	void *done_arg;
	double *grad;               /* p doubles, owned; wiped after every query */
	double *theta;              /* p doubles, owned: the query's theta, copied */
	/* The answer in flight: written on the loop thread before the work is
	 * queued, by the worker while it runs, read back after it. */
	uv_work_t req;
	bool busy;                  /* queued or running; done not yet called */
	bool cancelled;             /* own_answer_cancel: its reply is not wanted */
	struct own_budget_ticket ticket;
	dp_model model;
	dp_mech mech;               /* the job's mechanism */
	double clip;                /* its clip: L1 for Laplace, L2 for Gaussian */
	dp_query_info info;
	double secs;
	int err;                    /* the computation's failure (0: none) */
	char detail[256];           /* its detail (error details are per thread) */
};

/* Allocate the scratch for p = ds->p.  Everything given must outlive the
 * answerer; bits is used by the worker thread only.  theta_max > 0 (may be
 * INFINITY): the bound on |theta_j| of the queries answered.  done is
 * called on the loop thread with the decision of every query that
 * own_answer_query() queued.  0 or DP_ENOMEM. */
int own_answer_init(struct own_answer *a, uv_loop_t *loop, const dp_dataset *ds,
		    dp_bitsource *bits, struct own_budget *budget, struct dp_metric *grad_secs,
		    double theta_max, own_answer_done_fn done, void *done_arg);
/* Wipe and free the scratch.  Idempotent.  Not while busy (the loop has
 * run out, so the work has ended, when main calls it). */
void own_answer_free(struct own_answer *a);
/* Decide on Query q of the welcomed job (q and job stay the caller's; what
 * the computation needs is copied).  Returns false with the decision in
 * *out when it was made at once: a refusal, a drop or a stop, or any
 * decision on a dataset of at most OWN_ANSWER_INLINE_CELLS cells, which is
 * computed right here.  Returns true when the budget's check passed and
 * the answer is being computed on the worker: *out holds no decision
 * (ignore it) and the decision reaches done() later, on the loop thread.  Nothing is sent, dropped or
 * stopped here.  An OWN_REPLY_ANSWER was charged durably and may be
 * released; the caller calls own_answer_wipe() once it has been sent.
 * Loop thread only; not while busy (one answer in flight). */
bool own_answer_query(struct own_answer *a, const struct own_job *job,
		      const Dpasync__Query *q, struct own_reply *out);
/* Is an answer queued or being computed? */
bool own_answer_busy(const struct own_answer *a);
/* The answer in flight is not wanted any more (connection closed, daemon
 * stopping): it is cancelled if it has not started, else left to finish;
 * either way done() later receives OWN_REPLY_DISCARD, nothing is charged
 * and the gradient is wiped.  A no-op when not busy.  Loop thread only. */
void own_answer_cancel(struct own_answer *a);
void own_answer_wipe(struct own_answer *a);

/* ---- progress.c: the periodic summary line -------------------------------- */

struct own_progress {
	uv_timer_t timer;           /* unreferenced; closed by the shutdown's walk */
	const struct own_budget *budget;
	const struct own_metrics *m;
};

/* Log own_progress_line every `every` seconds (0: never).  budget and m
 * outlive the loop.  0, or a negative libuv code (detail set). */
int own_progress_start(struct own_progress *p, uv_loop_t *loop, double every,
		       const struct own_budget *budget, const struct own_metrics *m);
/* One info line: answers, refusals, clock ticks and ticks skipped in this
 * process, the ledger's answers, epsilon spent and left, connected;
 * final marks the one written at exit. */
void own_progress_line(const struct own_progress *p, bool final);

/* ---- client.c: the connection to the learner ------------------------------ */

/* What the client works with; everything pointed to outlives the client. */
struct own_client_config {
	uv_loop_t *loop;
	const struct own_settings *set;
	SSL_CTX *ctx;
	const char *id;             /* our identity (Hello) */
	const char *host;           /* the learner */
	uint16_t port;
	const char *model_out;      /* where Done's model is saved */
	const dp_dataset *ds;
	const char *schema_fp;      /* fingerprint of our rows (Hello.schema) */
	Dpasync__SchemaSummary *schema_sum; /* what it is of (Hello.schema_summary) */
	dp_bitsource *bits;         /* backoff jitter and clock gaps */
	struct own_budget *budget;
	struct own_answer *answer;
	const struct own_metrics *m;
	own_stop_fn stop;           /* main's; the only way to stop */
	void *stop_arg;
};

struct own_client {
	struct own_client_config cfg;
	struct own_job job;
	struct own_clock clock;
	dp_conn *conn;
	bool welcomed;              /* Welcome accepted on this connection */
	bool request_pending;       /* UpdateRequest sent, no Query yet */
	bool closed;                /* own_client_close was called */
	bool retry_deferred;        /* reconnect once the answer in flight has ended */
	unsigned attempt;           /* backoff exponent */
	bool idle;                  /* between jobs: polling with the idle backoff */
	unsigned idle_step;         /* its exponent */
	bool goodbye;               /* the learner said why it closes (logged) */
	bool handshaken;            /* this connection's TLS handshake completed */
	bool welcomed_once;         /* this connection got a Welcome (welcomed is
				       cleared before on_close runs) */
	bool lifetime_told;         /* the learner was told the lifetime budget is spent */
	/* Attempts that failed before the connection was established, since
	 * the last Welcome (docs/ownerd.md "Reconnection"): */
	uint64_t failed;            /* all of them */
	uint64_t unverified;        /* those that reached something other than
				       the verified learner (once: connect_attempts) */
	uint64_t unlogged;          /* failed since the last line about one */
	uint64_t logged_ms;         /* loop time of that line */
	uv_timer_t retry_timer;
	uv_timer_t welcome_timer;
};

/* Create the series of dpasync_owner_connect_failures_total, initialise
 * the timers and start the clock (nothing is connected yet).  0, or a
 * DP_E... code with the detail "metrics: ..." (DP_ENOMEM) or "clock: ...". */
int own_client_init(struct own_client *c, const struct own_client_config *cfg);
/* The answer's own_answer_done_fn (arg: the client), which main gives
 * own_answer_init: sends what the worker's answer turned into. */
void own_client_answered(void *arg, const struct own_reply *rep);
/* Start a connection attempt now (no-op while one exists or closed). */
void own_client_start(struct own_client *c);
/* For good: stop the clock and timers and close the connection (what is
 * queued, a final Refuse, is flushed).  Handles are freed when the loop
 * runs.  Called by main when the daemon stops. */
void own_client_close(struct own_client *c);

/* ---- peer.c: an agent of peer mode (docs/peer-agents.md) ------------------ */

/* What the agent works with; everything pointed to outlives it. */
struct own_peer_config {
	uv_loop_t *loop;
	const struct own_settings *set;
	SSL_CTX *server_ctx, *client_ctx;
	const char *id;             /* our identity (certificate CN) */
	const dp_dataset *ds;
	const dp_dataset *curvature; /* --curvature's rows (NULL: none) */
	dp_bitsource *bits;         /* loop thread: clock gaps, backoff jitter */
	dp_bitsource *noise;        /* the noise of the wake-ups (loop thread too) */
	struct own_budget *budget;  /* not open: own_peer_new opens it */
	struct own_budget_config budget_cfg; /* path, identity, metrics; the caps
				       are the peer plan's */
	const struct own_metrics *m;
	const char *model_out;      /* --model-out, by default <ledger>/model.json */
	const char *served_out;     /* --served-out, by default <ledger>/served.json */
	const char *model_before;   /* by default only: where the model was kept
				       before (<ledger>/../model.json, shared by
				       sibling ledger directories), never read;
				       NULL with --model-out */
	own_stop_fn stop;
	void *stop_arg;
};

struct own_peer;

/* Load the graph, the schedule and our last model (after a restart), bind
 * the ledger.  Startup only: 0 or a DP_E... code with a one-line
 * detail (DP_EINVAL / DP_EFORMAT / DP_ENOENT: bad configuration or input;
 * DP_EINVAL also for a restart with charges, no model of its own and one
 * at model_before, which may be another agent's: docs/peer-agents.md §4).
 * *out receives the agent. */
int own_peer_new(const struct own_peer_config *cfg, struct own_peer **out);
/* Listen for the neighbours that dial us (--listen).  Startup only, after
 * --check-config: 0 or a DP_E... code with a one-line detail. */
int own_peer_listen(struct own_peer *p);
/* The port we listen on. */
uint16_t own_peer_port(const struct own_peer *p);
/* Start the clock (or the schedule), the warm start and the dialling. */
void own_peer_start(struct own_peer *p);
/* For good: close the clock, timers, listener and connections (freed when
 * the loop runs; the memory itself with own_peer_free after the loop). */
void own_peer_close(struct own_peer *p);
void own_peer_free(struct own_peer *p);

/* ---- mechanism.c: the mechanisms allowed, the delta ----------------------------- */

/* The checks of --delta, --lifetime-delta and --mechanism (docs/ownerd.md
 * "Mechanisms and delta"): delta in [0, 1) (at most 0.5 in peer mode),
 * lifetime delta -1 (not given) or in [delta, 1); --mechanism only with
 * --peer, and gaussian only with delta > 0.  0 or DP_EINVAL with a
 * one-line detail. */
int own_mechanism_validate(const struct own_settings *s);
/* The lifetime delta configured: --lifetime-delta, or --delta when not
 * given (what a new ledger directory records; the one in force is the
 * directory's, docs/ownerd.md "Mechanisms and delta"). */
double own_mechanism_lifetime_delta(const struct own_settings *s);
/* Whether delta >= 1/n_rows, a delta that would allow releasing a row
 * outright (warned at startup). */
bool own_mechanism_delta_large(const struct own_settings *s, uint64_t n_rows);
/* Whether this owner answers a Gaussian job (Hello.gaussian): delta and the
 * lifetime delta in force (the ledger directory's, own_budget_status) > 0,
 * and a build that answers with Gaussian noise. */
bool own_mechanism_gaussian(const struct own_settings *s, double lifetime_delta);
/* What a Gaussian job can still spend in zCDP rho, given what it can
 * spend in epsilon (HelloLimits.rho_left): the largest rho whose
 * conversion at --delta is within eps_left (dp_zcdp_rho_for, before the
 * sampler's slack); INFINITY for INFINITY; 0 when Gaussian is not allowed
 * or nothing is left. */
double own_mechanism_rho_left(const struct own_settings *s, double lifetime_delta,
			      double eps_left);
/* A Welcome's mechanism against this owner's (docs/protocol.md §5
 * "Mechanisms"): 0 when it is allowed, else DP_EREFUSED with why (size
 * bytes) naming the job and the fix; nothing is logged or sent. */
int own_mechanism_check_welcome(const struct own_settings *s, double lifetime_delta,
				const Dpasync__Welcome *w, char *why, size_t size);

/* ---- peerserve.c: the served model (docs/peer-agents.md §6) - */

/* The --serve options together, and against --peer, --release grad0's one
 * release and the tau grid.  0 or DP_EINVAL with a one-line detail. */
int own_peerserve_validate(const struct own_settings *s);

/* ---- peerfile.c: the address book ------------------------------------------- */

/* The address of `id` in the address book (id,addr CSV): 0 with host and
 * port filled, DP_ENOENT when the file or the id is missing, DP_EFORMAT. */
int own_peerfile_addr(const char *path, const char *id, char *host, size_t host_size,
		      uint16_t *port);

#endif
