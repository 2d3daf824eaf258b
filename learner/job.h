/* SPDX-License-Identifier: Apache-2.0 */
/* The learner's job without sockets: liblearner, the part of learnerd that
 * decides (docs/learnerd.md, docs/style.md "Layout").  learnerd, the unit
 * tests (tests/unit/test_sched.c, ...) and the fuzz targets link it.
 *
 *   sched.c       decisions: request FIFO, query slots, query and Hello
 *                 timeouts, broadcast and sync rounds, stall and idle
 *                 detection, the end of the job; each function leaves a
 *                 struct lrn_decision for the daemon to carry out
 *   state.c       the plan (docs/planner.md) and theta_L, theta_i, k, n_i:
 *                 starting training, updates
 *   checkpoint.c  crash-safe checkpoint.json (save, load, compare)
 *   trace.c       trace.csv and rounds.csv
 *   stats.c       Prometheus metrics
 *   clock.c       monotonic and wall time
 *
 * Calls go one way, down this list.  struct lrn_job is one job: the
 * settings, the owners as the job sees them, the plan, theta_L and k, the
 * request FIFO and the query slots, the sync round, and the files that
 * record it (trace, rounds, checkpoint).  It knows no event loop, no TLS
 * and no connection: the daemon (learner/lrn.h) embeds it, keeps the
 * connections, tells it what happened on them (the lrn_sched_* events and
 * the owners' connected/hello/welcomed flags) and carries out what it
 * decides.  Everything runs on one thread; nothing here is thread-safe. */
#ifndef LRN_JOB_H
#define LRN_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/core/model.h"
#include "common/core/plan.h"
#include "common/core/query.h"
#include "common/net/frame.h"
#include "common/net/metrics.h"
#include "common/net/tls.h"

/* The most rows an owner may claim in its Hello (2^40, about 1.1e12): a
 * larger claim is refused (docs/protocol.md §5).  It keeps n = sum of n_i
 * far from overflowing and every weight n_i / n exact enough in a double. */
#define LRN_MAX_ROWS (UINT64_C(1) << 40)

/* The bounds on the rest of a Hello's claims (docs/protocol.md §5 "Limits
 * on a Hello's claims"), so that no owner's claim steers the others' plan:
 *   LRN_EPSILON_MIN  a per-job epsilon below it is refused (Goodbye
 *                    BAD_CLAIM); a budget left below it is nothing left
 *                    (the owner is left out of the plan).  Below it an
 *                    answer is noise, and rounding residues of a spent
 *                    ledger (under 1e-3 for K up to 10^6 answers of a
 *                    nano-epsilon each) never count as budget.
 *   LRN_RATE_RATIO   a clock rate is planned as at most this many times
 *                    the median of the owners' rates (logged when cut),
 *   LRN_RATE_MAX     and at most this many ticks per second, so that the
 *                    shares pi_i = rate_i / sum of rates stay finite. */
#define LRN_EPSILON_MIN 1e-3
#define LRN_RATE_RATIO  10.0
#define LRN_RATE_MAX    1e9

/* request and broadcast run the async algorithm; sync1 and sync2 run the
 * synchronous rounds of docs/design.md §5 (every owner answers at theta[k],
 * then one dp_algo_sync1_step / dp_algo_sync2_step). */
enum lrn_mode { LRN_MODE_REQUEST = 0, LRN_MODE_BROADCAST = 1, LRN_MODE_SYNC1 = 2,
		LRN_MODE_SYNC2 = 3 };

/* X is a struct lrn_job or the daemon's struct lrn (both have s). */
#define LRN_SYNC(X) ((X)->s->mode == LRN_MODE_SYNC1 || (X)->s->mode == LRN_MODE_SYNC2)

/* The settings table of main.c fills this.  Durations are seconds. */
struct lrn_settings {
	char *listen;              /* HOST:PORT */
	char *port_file;
	char *ca, *cert, *key;
	char *crl;                 /* NULL: no revocation list */
	char *owners;              /* comma-separated identities, or */
	char *owners_file;         /* one identity per line (owners.c) */
	int model;                 /* dp_model */
	uint64_t T;                /* 0: planned */
	double rho, eta;           /* 0: not given (eta planned) */
	double c;                  /* sync2 step c/sqrt(k); 0: planned */
	double lambda, theta_max;
	double clip;               /* 0: planned; the L2 clip with Gaussian */
	int mechanism;             /* dp_mech: how the owners noise their answers
				      (docs/learnerd.md "Mechanisms"; kept in the
				      checkpoint); Gaussian needs every owner to
				      allow it (Hello.gaussian) */
	char *public_path;         /* public constants for the planner, or NULL
				      (assumed from the data's shape) */
	double answers_margin;     /* K_i = ceil(T pi_i (1 + margin)) */
	uint64_t restart_slack;    /* sync: K_i = T - 1 + slack (docs/ledger.md §9) */
	uint64_t T_max;            /* largest T the planner considers (0: its own) */
	int mode;                  /* enum lrn_mode */
	double broadcast_interval;
	size_t max_inflight;
	double round_timeout;      /* sync: a round longer than this stops the job (0: never) */
	size_t round_quorum;       /* sync: answers that close a round (0: every owner) */
	size_t min_owners;         /* 0: N */
	double query_timeout;
	double hello_timeout;
	double idle_timeout;       /* 0: wait for ever */
	size_t features;           /* 0: from the first Hello */
	bool bias;
	bool freq_correction;   /* Remark 4 weights (dp_algo_freq_weight) */
	char *out;
	uint64_t checkpoint_every; /* 0: only on SIGTERM, stop and end */
	uint64_t snapshot_every;   /* the model every N iterations (sync: rounds)
				    * into snapshots.csv; 0: none (snapshot.c) */
	bool resume;
	char *metrics_listen;      /* empty or NULL: off */
	char *job;
	bool job_auto;             /* job was made here (no --job): a checkpoint's wins */
	size_t max_frame;
	double handshake_timeout;  /* silence after accept; handshake after its turn */
	size_t max_pending;        /* connections not yet admitted, at most */
	size_t max_pending_per_addr; /* the same from one address (0: no limit) */
	int log_level;             /* enum dp_log_level */
	double progress_every;     /* seconds between progress lines (0: none) */
};

/* One owner as the job sees it.  The daemon sets connected, hello,
 * welcomed and conn_since as its connection comes and goes (and the
 * Hello's fields); the rest is the job's. */
struct lrn_owner {
	char id[DP_TLS_ID_MAX + 1];
	size_t idx;
	bool connected;            /* an admitted connection (else away) */
	bool hello;                /* it has said Hello on that connection */
	bool welcomed;             /* it was sent its Welcome on that connection */
	double conn_since;         /* monotonic time the connection was admitted */
	bool ever_hello;           /* said Hello at least once in this job */
	uint64_t n_rows;           /* n_i (fixed once training started) */
	uint32_t n_features;       /* its last Hello's p (agreed on when p is
				    * not configured) */
	char schema[DP_FRAME_MAX_STR + 1]; /* its last Hello's fingerprint ("": none
				    * sent, an owner that predates it) */
	uint8_t *schema_sum;       /* its last Hello's schema summary, packed
				    * (NULL: none), kept only until the job's
				    * fingerprint is fixed (lrn_state_adopt_summary) */
	size_t schema_sum_len;
	double epsilon;            /* its per-job budget (Hello epsilon) */
	double eps_left;           /* what it can still spend on this job
				    * (docs/protocol.md §5 "Budget left and
				    * bounds"): the plan's eps_i */
	double lifetime_left;      /* its Hello's (INFINITY: not said) */
	double theta_bound;        /* it refuses a query beyond (INFINITY: not said) */
	double delta;              /* its per-job delta (0: pure epsilon-DP only, or
				    * not said) */
	bool gaussian;             /* it allows Gaussian answers (Hello.gaussian) */
	double rho_left;           /* a Gaussian job: what it can still spend in
				    * zCDP rho (INFINITY: no limit); 0 otherwise */
	bool same_job;             /* its Hello's counters are this job's */
	bool left_out;             /* it had no budget left when the job was
				    * planned: not in the plan, never welcomed
				    * or asked in this job */
	double rate;               /* clock rate from its Hello (the plan's pi_i) */
	uint64_t answers_cap;      /* from its Hello: its own K_i, 0 = none */
	uint64_t answers_given;    /* from its last Hello or Answer */
	uint64_t planned_cap;      /* the plan's K_i, sent in its Welcome (0: none) */
	bool exhausted;            /* refused, or no answers left (lrn_state_cap) */
	bool queued;               /* in the request FIFO */
	uint64_t queue_stamp;      /* its entry there (while queued) */
	bool inflight;             /* a query of this owner is out */
	bool round_has;            /* sync: answered the current round */
	double round_rtt;          /* sync: its answer's round trip this round */
	double *theta;             /* theta_i, p values (NULL until p known) */
	uint64_t iterations;       /* answers used */
	double eps_spent;          /* as last reported by the owner */
	struct dp_metric *m_iter, *m_eps;
};

struct lrn_query {
	bool used;                 /* sent and not yet answered */
	size_t owner;
	uint64_t qid;
	double sent;               /* monotonic send time */
	double wait;               /* seconds the request waited in the FIFO */
	double *bar;               /* p values: the point the owner evaluates */
	uint64_t round;            /* sync: the round it belongs to */
	uint64_t built_k;          /* k_done when bar was taken from theta_L */
};

/* What an owner's Hello claims, as the daemon reads it (server.c), for
 * lrn_state_check_hello and lrn_state_take_hello. */
struct lrn_claims {
	uint64_t n_rows;
	uint32_t n_features;
	double epsilon;            /* its per-job budget */
	double rate;               /* 0: not said (counted as 1) */
	uint64_t own_cap;          /* its own answers-cap (0: none) */
	uint64_t answers_cap;      /* the cap it will keep: own_cap, or its
				    * ledger's K when the counters are this
				    * job's (0: none) */
	uint64_t answers_given;    /* given in this job (0: its counters are
				    * another job's) */
	bool same_job;             /* its counters (Hello.job) are this job's */
	bool has_limits;           /* Hello.limits was sent (an owner that
				    * predates it: false, nothing is known) */
	double epsilon_left;       /* limits: left for Hello.job */
	double lifetime_left;      /* limits: left of its lifetime cap */
	double theta_max;          /* limits: its bound on |theta_j| */
	double delta;              /* its per-job delta (0: none, or not said) */
	double lifetime_delta;     /* its lifetime delta (0: none, or not said) */
	bool gaussian;             /* it answers a Gaussian job */
	double rho_left;           /* limits: rho left for Hello.job (read only
				    * with gaussian) */
};

/* What sched.c decides and the daemon (server.c) carries out. */
enum lrn_act {
	LRN_ACT_NONE = 0,  /* nothing to do */
	LRN_ACT_PUMP,      /* state changed: ask lrn_sched_next until NONE */
	LRN_ACT_WELCOME,   /* send owner o its Welcome (the plan exists) */
	LRN_ACT_QUERY,     /* send the query prepared in slot qr to owner o, then
			    * lrn_sched_sent (on a failed send: drop o) */
	LRN_ACT_DROP,      /* close owner o's connection; why: the reason */
	LRN_ACT_DONE,      /* k == T: end the job (LRN_END_DONE) */
	LRN_ACT_STOP,      /* end the job (LRN_END_FAIL); why: the message */
};

struct lrn_decision {
	enum lrn_act act;
	struct lrn_owner *o;       /* WELCOME, QUERY, DROP */
	struct lrn_query *qr;      /* QUERY */
	char why[512];             /* DROP, STOP */
	bool config;               /* STOP: a setting of learnerd is wrong, not
				    * the run (exit 2, docs/design.md §10) */
	const char *reason;        /* STOP: the partial model's word (static;
				    * docs/learnerd.md "Partial model") */
	int goodbye;               /* DROP: a Dpasync__GoodbyeCode to send first (0: none) */
};

struct lrn_stats {
	struct dp_metrics *reg;
	struct dp_metric *iterations, *connected, *queue_depth, *inflight;
	struct dp_metric *rtt, *wait, *refusals, *timeouts, *rejected;
	struct dp_metric *T_gauge;
	struct dp_metric *pending, *evicted, *refused;  /* the TLS listener's */
	struct dp_metric_family *owner_iter, *owner_eps;
};

struct lrn_job {
	struct lrn_settings *s;    /* the daemon's; lrn_checkpoint_load may
				    * replace s->job (a generated id) */
	struct lrn_stats st;       /* stats.c: before any lrn_sched_* call */

	/* Schema agreement (docs/protocol.md §5): the job's fingerprint, once
	 * the owners' Hellos agreed on it (kept in the checkpoint), and the
	 * owner it came from; "" until then. */
	char schema_fp[DP_FRAME_MAX_STR + 1];
	char schema_from[DP_TLS_ID_MAX + 1];
	uint8_t *schema_sum;       /* the summary of schema_fp, packed (NULL: not
				    * yet heard; kept in the checkpoint since
				    * version 4) */
	size_t schema_sum_len;
	dp_model model;
	size_t N;
	size_t n_planned;          /* owners in the plan: N less those left out
				    * (N until the plan); the algorithm's N */
	struct lrn_owner *owners;
	struct dp_idmap *owner_map; /* id -> index into owners (lrn_state_find) */
	size_t p;                  /* 0 until known */
	uint64_t T;                /* 0 until planned (or --T) */
	bool started;              /* planned: n_i, T, eta, clip, K_i fixed
				    * (Welcome may go out, training may run) */
	bool gate_open;            /* min-owners reached: queries may go out */
	uint64_t n_total;
	double eta, rho, clip;
	double psi_pred, psi_zero; /* the plan's forecast (NaN: unknown) */
	bool measured;             /* its constants came from a public sample */
	dp_plan_public pub;        /* --public, read at startup */
	bool have_pub;
	dp_plan_public pub_other;  /* --public's constants for the other
				    * mechanism's norm, when it holds them */
	bool have_pub_other;
	double *theta_L;
	uint64_t k_done;
	uint64_t next_qid;         /* the next query id to send */
	uint64_t qid_reserved;     /* ids below this may be used before the
				    * next checkpoint; resume continues here */
	/* Kept by the daemon as connections come and go: */
	size_t n_hello;            /* owners connected with their Hello accepted
				    * (the connected gauge, without a scan) */
	size_t n_to_welcome;       /* of those, not yet sent their Welcome (the
				    * pump scans for them only when > 0) */
	size_t n_ever_hello;       /* owners that said Hello in this job (the
				    * plan waits for all of them) */
	size_t n_exhausted;        /* owners exhausted, wherever they are */
	size_t n_exhausted_away;   /* of those, without a Hello accepted (what
				    * min-owners counts besides n_hello) */
	/* Where the next scan for an owner to welcome, and the stall check's
	 * for a usable one, start: after the last found, wrapping around, so
	 * that a storm of N owners costs O(N) scans in all, not O(N^2)
	 * (docs/scale.md §5.1). */
	size_t welcome_next, usable_next;

	/* Scheduling (sched.c).  The request FIFO is a ring of 2N entries,
	 * oldest first: a request leaves it from the front in O(1), and one
	 * withdrawn (its owner gone or exhausted) stays as a stale entry,
	 * skipped when it comes to the front and dropped when the ring is
	 * full and compacted, so that no request costs a pass over the
	 * queue (docs/scale.md §5.1). */
	struct lrn_fifo_entry {
		size_t owner;
		uint64_t stamp;    /* live while it is the owner's queue_stamp */
		double t;          /* monotonic arrival time of the request */
	} *fifo;
	size_t fifo_cap, fifo_head, fifo_count;   /* ring size, front, entries */
	size_t fifo_len;           /* live requests: the owners queued */
	uint64_t fifo_stamp;       /* the last stamp given */
	struct lrn_query *q;       /* max_inflight slots */
	size_t inflight;
	size_t bcast_next;         /* round-robin start for broadcast */
	bool round;                /* a broadcast round is being served */
	size_t round_j;            /* owners of the round looked at so far */
	size_t round_last;         /* last owner asked in it, or SIZE_MAX */
	double stall_since;        /* monotonic; < 0 when not stalled */
	double first_query;        /* monotonic time of this process's first
				    * query; < 0 before it */
	uint64_t first_k;          /* k_done then (0, or a resume's k) */

	/* Sync rounds (sched.c, state.c).  k_done counts finished rounds and
	 * the job is done at T - 1 of them (theta[T]). */
	double step;               /* the plan's sync1 rho/T^2 or sync2 c */
	uint64_t sync_round;       /* the round being served, 0: none */
	double round_start;        /* its monotonic start */
	size_t round_got;          /* answers of it so far */
	double *round_ans;         /* N x p: each owner's answer in it, then p: agg */
	double *theta_hat;         /* sync2's running average (the output) */
	uint64_t answers;          /* answers used, over all rounds */

	/* The job's record (checkpoint.c, trace.c).  The paths are the
	 * daemon's (it sets and frees them); the streams are trace.c's. */
	FILE *trace;
	FILE *rounds;              /* sync: rounds.csv */
	FILE *snapshots;           /* snapshots.csv once its first row is due */
	char *trace_path, *ckpt_path, *rounds_path, *snapshots_path;
	bool io_failed;            /* a trace or checkpoint write failed: nothing
	                            * more is written (docs/reliability.md §4) */
};

/* ---- sched.c: the decisions --------------------------------------------- */
/* The request FIFO and the query slots (N owners known).  DP_ENOMEM. */
int lrn_sched_init(struct lrn_job *J);
void lrn_sched_free(struct lrn_job *J);
/* The next thing to do now: start training, k == T (DONE), open the gate,
 * the next query (QUERY, a slot prepared: its bar, query id and wait),
 * the idle timeout (STOP), or NONE.  A failure to prepare is STOP. */
void lrn_sched_next(struct lrn_job *J, double now, struct lrn_decision *d);
/* The query of slot qr left at monotonic time `sent`: it is in flight. */
void lrn_sched_sent(struct lrn_job *J, struct lrn_query *qr, double sent);
/* A query or a Hello overdue at `now`: DROP (the drop clears it), or NONE. */
void lrn_sched_expired(struct lrn_job *J, double now, struct lrn_decision *d);
/* The broadcast timer: queue a round of queries for lrn_sched_next.
 * false when training has not opened the gate (nothing to serve). */
bool lrn_sched_round(struct lrn_job *J);
/* Owner o's events at monotonic time now; each leaves NONE (ignored),
 * PUMP or STOP in d. */
void lrn_sched_request(struct lrn_job *J, struct lrn_owner *o, double now,
		       struct lrn_decision *d);
void lrn_sched_answer(struct lrn_job *J, struct lrn_owner *o, uint64_t k, const double *grad,
		      double eps_spent, double now, struct lrn_decision *d);
void lrn_sched_refuse(struct lrn_job *J, struct lrn_owner *o, uint64_t k, const char *reason,
		      struct lrn_decision *d);
/* Owner o said Hello (its counters are set, lrn_state_take_hello): with
 * nothing left to spend (lrn_state_no_budget) it is exhausted, logged
 * once, and -- when its counters are another job's, so that this job
 * could only be its next -- DROP with Goodbye BUDGET_SPENT (the owner
 * exits 2; docs/protocol.md §5 "Budget left and bounds"); an owner left
 * out of the plan gets DROP with BUDGET_SPENT or JOB_OVER; else usable
 * again.  STOP when every owner is now exhausted, else PUMP. */
void lrn_sched_hello(struct lrn_job *J, struct lrn_owner *o, struct lrn_decision *d);
/* Owner o left for good with its budget spent (Goodbye BUDGET_SPENT):
 * exhausted, and no longer awaited by min-owners; STOP when every owner is
 * exhausted, else PUMP. */
void lrn_sched_spent(struct lrn_job *J, struct lrn_owner *o, struct lrn_decision *d);
/* Owner o's connection is gone: drop its request and its query. */
void lrn_sched_owner_gone(struct lrn_job *J, struct lrn_owner *o);

/* ---- state.c ------------------------------------------------------------- */
/* A new job on settings s (kept, not copied) with the owners' names: the
 * owner table (theta vectors come with p), the model and T of s, query
 * ids from 1, no forecast.  J is zeroed first.  DP_ENOMEM. */
int lrn_state_init(struct lrn_job *J, struct lrn_settings *s, char **names, size_t count);
void lrn_state_free(struct lrn_job *J);
/* The owner of identity id, or NULL: O(1), through J->owner_map. */
struct lrn_owner *lrn_state_find(const struct lrn_job *J, const char *id);
/* Fix the job's p (from settings, --public, a checkpoint, or the value the
 * owners' Hellos agree on).  DP_EINVAL (does not fit max-frame), DP_ENOMEM. */
int lrn_state_set_p(struct lrn_job *J, size_t p);
/* Whether a Hello of owner o claiming c can be taken (docs/protocol.md §5
 * "Limits on a Hello's claims"): n_rows at most LRN_MAX_ROWS, the sum with
 * the other owners' n_i without overflow, n_features the job's p (or,
 * while p is not fixed, fitting max-frame), epsilon at least
 * LRN_EPSILON_MIN, its own answers-cap at most the largest T of the job
 * (lrn_state_t_limit), its theta bound at least the job's theta-max.  0,
 * or an error with why (size bytes) filled and *goodbye the code to send
 * before closing (0: none, the connection is only closed):
 *   DP_ERANGE  n_rows out of range (goodbye 0);
 *   DP_EINVAL  n_features (GOODBYE_BAD_DATA: the owner must not retry);
 *   DP_EREFUSED a claim out of its bound, or an owner that does not allow
 *              the job's mechanism (GOODBYE_BAD_CLAIM, docs/protocol.md §5
 *              "Mechanisms"). */
int lrn_state_check_hello(const struct lrn_job *J, const struct lrn_owner *o,
			  const struct lrn_claims *c, int *goodbye, char *why, size_t size);
/* Take a Hello's claims (checked) into owner o: n_rows, p, fingerprint
 * are the caller's; here the budget and counters: epsilon, eps_left (what
 * it can spend on this job: epsilon_left for its own job, else the
 * smaller of epsilon and lifetime_left; epsilon without limits), rate,
 * caps, answers given, theta bound; for a Gaussian job its rho left (the
 * job's own, else what the smaller of epsilon and lifetime_left is worth
 * at its delta), and nothing left (eps_left 0) when that is 0. */
void lrn_state_take_hello(struct lrn_job *J, struct lrn_owner *o, const struct lrn_claims *c);
/* Keep the schema summary of o's Hello (NULL: none) packed in o, in place
 * of the one before (docs/protocol.md §5 "Schema summary").  DP_ENOMEM
 * (o then keeps none: a mismatch is reported by fingerprints alone). */
int lrn_state_keep_summary(struct lrn_owner *o, const Dpasync__SchemaSummary *s);
/* The job's fingerprint is fixed: make o's summary the job's (when the job
 * has none yet and o's fingerprint is the job's) and free o's own, and
 * with `all` every owner's (once, when the owners agreed). */
void lrn_state_adopt_summary(struct lrn_job *J, struct lrn_owner *o, bool all);
/* Append to why (size bytes, NUL-terminated) ": <what differs>" between o's
 * summary and the reference (ref, len; NULL: nothing known), when both are
 * known and show a difference; why is left as it is otherwise. */
void lrn_state_summary_why(const struct lrn_owner *o, const uint8_t *ref, size_t len, char *why,
			   size_t size);
/* The job's summary, unpacked (free with
 * dpasync__schema_summary__free_unpacked), or NULL: none heard, or out of
 * memory. */
Dpasync__SchemaSummary *lrn_state_job_summary(const struct lrn_job *J);
/* The target and feature names of sum (the job's) for model.json: *names
 * a malloc'ed array of p pointers into sum (the caller frees the array),
 * *target into sum; both NULL when sum does not describe the job's p and
 * bias, or some name may have been cut or changed to fit a Hello (64 bytes
 * or more, or a '?': docs/protocol.md §5 "Schema summary"), since a name
 * written wrong would make eval refuse the right data. */
void lrn_state_summary_names(const struct lrn_job *J, const Dpasync__SchemaSummary *sum,
			     char ***names, char **target);
/* Has owner o, by its last Hello, nothing left to spend on this job
 * (eps_left below LRN_EPSILON_MIN)? */
bool lrn_state_no_budget(const struct lrn_owner *o);

/* The job's counters over owner flags (n_hello, n_ever_hello, n_to_welcome,
 * n_exhausted, n_exhausted_away), kept without a scan: take owner o out
 * (sign -1) before changing its connected, hello, ever_hello, welcomed or
 * exhausted flags, and
 * put it back (+1) after.  Every change of those flags goes between the
 * two calls. */
void lrn_state_count(struct lrn_job *J, const struct lrn_owner *o, int sign);
/* The largest T the job may have: T when given and above t-max, else
 * t-max (DP_PLAN_T_MAX when 0); an owner's own cap above it is refused. */
uint64_t lrn_state_t_limit(const struct lrn_job *J);
/* ---- plan.c ------------------------------------------------------------- */

/* Read --public (when given) into J->pub and check it describes this job's
 * model and lambda, with clips of the job's mechanism's norm (L2 for
 * Gaussian: the file's "public_l2", dp_plan_public_read_norm); the other
 * norm's constants, when the file holds them too, into J->pub_other for
 * the comparison of the two mechanisms.  DP_EINVAL/DP_EFORMAT/DP_ENOENT
 * (detail). */
int lrn_plan_load_public(struct lrn_job *J);
/* Before the plan: --public's target and feature names (when its file
 * records them) must be those of the owners' agreed schema summary (when
 * known with whole names), else the forecast was made for other rows.
 * 0 (also when nothing can be compared), or DP_EINVAL with a detail naming
 * the file and the first difference (docs/learnerd.md §3). */
int lrn_plan_check_public(const struct lrn_job *J);
/* Every owner said Hello: fix n_i and n, and plan the job with
 * dp_plan_make over the owners that have budget left (an exhausted owner
 * is left out: left_out, not in n, N_planned or the plan; docs/planner.md
 * §1 "Budget left"): n_i, eps_i = what each has left, rate_i cut to
 * LRN_RATE_RATIO times the median (logged), an owner's own cap kept, the
 * settings given kept: T, eta, rho, clip, every K_i.  Refuses a plan the
 * owners cannot serve: fewer answers left than T (sync: than T - 1 for
 * one owner), or a budget left too small to split over its K_i in the
 * job's mechanism (dp_query_share, as the owner will bind it).  Logs the
 * plan, its warnings, and, when every planned owner allows both
 * mechanisms, both predictions (dp_plan_mech_line).  0 or DP_EBUDGET (no plan reaches T with what is
 * left), DP_EINVAL/DP_ERANGE/DP_ENOMEM (detail); on an error nothing is
 * started. */
int lrn_plan_start(struct lrn_job *J);
/* The plan's log line (also after a resume): from = "hellos" | "checkpoint". */
void lrn_plan_log(const struct lrn_job *J, const char *from);
/* The answers owner o gives at most, as far as the learner knows: its own
 * cap from its Hello, else the plan's K_i, else T; 0 while unknown (no own
 * cap, not planned yet). */
uint64_t lrn_state_cap(const struct lrn_job *J, const struct lrn_owner *o);
/* Apply the answer of query qr: theta_i, theta_L updated, k_done + 1. */
void lrn_state_apply(struct lrn_job *J, const struct lrn_query *qr, const double *answer);
/* The iterations that end the job: T (async), or the T - 1 rounds that
 * make theta[T] (sync). */
uint64_t lrn_state_goal(const struct lrn_job *J);
/* Sync: close the current round with the answers of the owners that gave
 * one (round_has): agg = sum of (n_i / n_answered) answer_i in owner order,
 * then the mode's step; k_done + 1.  With every owner this is exactly
 * dpasync sim's round (docs/learnerd.md "Sync rounds"). */
void lrn_state_round(struct lrn_job *J);
/* The model the job publishes: theta_L, or sync2's running average. */
const double *lrn_state_output(const struct lrn_job *J);

/* ---- checkpoint.c -------------------------------------------------------- */
#define LRN_CHECKPOINT_FORMAT  "dpasync-learner-checkpoint"
/* The format written; older ones are upgraded on load one version at a
 * time (docs/learnerd.md §5 "Versions"). */
#define LRN_CHECKPOINT_VERSION 5
/* Write J's state (with the plan: a resumed job never re-plans) to
 * J->ckpt_path atomically; reserves the next block of query ids (final:
 * the job is over or stopping, no block needed).  Flushes and fsyncs the
 * trace first.  0 or DP_EIO/DP_ENOMEM.  After a failed write of the trace
 * or of a checkpoint (J->io_failed) it writes nothing and returns DP_EIO:
 * the last good checkpoint stays. */
int lrn_checkpoint_save(struct lrn_job *J, bool final);
/* Load J->ckpt_path into J (after lrn_state_init), checking it belongs to
 * the configured job: T, eta, clip and every K_i are the checkpoint's
 * plan, and a setting given now (T, eta or rho, clip) must agree with it.
 * A file of an older version is upgraded in memory first (the next save
 * writes LRN_CHECKPOINT_VERSION); a newer one is refused.
 * DP_ENOENT (no file), DP_EFORMAT/DP_ECORRUPT (bad file, or a version
 * this learnerd does not read), DP_EINVAL (another job: the detail names
 * the setting).  On failure the owners' counters may be partly filled: the
 * caller exits. */
int lrn_checkpoint_load(struct lrn_job *J);

/* ---- trace.c ------------------------------------------------------------- */
/* Open trace.csv: new (header) or, on resume, truncated to the rows the
 * checkpoint holds (k_done; in sync, J->answers), and in sync rounds.csv
 * to its k_done rounds.  0, DP_EFORMAT (a trace of another format) or
 * DP_EIO. */
int lrn_trace_open(struct lrn_job *J, bool resume);
/* Append one row.  0, or DP_EIO with J->io_failed set. */
int lrn_trace_row(struct lrn_job *J, uint64_t k, double wall, const char *owner, double wait,
		  double rtt, double eps, uint64_t staleness);
/* Sync: one row of rounds.csv (opened on first use).  0, or DP_EIO with
 * J->io_failed set. */
int lrn_trace_round(struct lrn_job *J, uint64_t round, double wall, double secs,
		    size_t answers, uint64_t first_k, uint64_t last_k, const char *slowest,
		    double slowest_rtt);
/* fflush + fsync of trace.csv and rounds.csv.  0, or DP_EIO with
 * J->io_failed set (also when an earlier write of the stream failed: its
 * rows are lost). */
int lrn_trace_sync(struct lrn_job *J);
void lrn_trace_close(struct lrn_job *J);

/* ---- snapshot.c: the model over the run (docs/learnerd.md §4) ---------- */
/* With snapshot-every N > 0: at startup, resume true keeps the rows of
 * snapshots.csv up to the checkpoint's k_done (later ones are of
 * iterations the job does again) and appends after them; false starts it
 * anew at its first row.  0, or DP_EIO (detail). */
int lrn_snapshot_open(struct lrn_job *J, bool resume);
/* After iteration (sync: round) k_done, and at k_done 0 when training
 * starts: a row k,time_unix,theta_1..theta_p of the model learnerd would
 * output (lrn_state_output) when k_done is a multiple of N or the job's
 * goal.  A failed write stops the snapshots with one warning, never the
 * job: they are a record for the researcher, not the job's state. */
void lrn_snapshot_take(struct lrn_job *J);
void lrn_snapshot_close(struct lrn_job *J);

/* ---- stats.c ------------------------------------------------------------- */
/* The registry and every series (per owner too: after lrn_state_init).
 * 0, or DP_ENOMEM/DP_EINVAL (detail). */
int lrn_stats_init(struct lrn_job *J);
void lrn_stats_free(struct lrn_job *J);
/* Refresh the gauges (connected, queue depth, in flight).  A no-op before
 * lrn_stats_init. */
void lrn_stats_gauges(struct lrn_job *J);

/* ---- clock.c ------------------------------------------------------------- */
double lrn_clock_mono(void);   /* monotonic seconds */
double lrn_clock_wall(void);   /* Unix time, seconds */

#endif
