/* learnerd internals: the learner of the async algorithm (docs/design.md §4, §7;
 * docs/learnerd.md; the protocol flow of docs/protocol.md).
 *
 * One libuv loop, one process, one job.  The roles are split by file:
 *   main.c        settings table, startup, signals, exit codes
 *   server.c      TLS listener, owner table, admission, message dispatch
 *   sched.c       request FIFO, queries in flight, timeouts, broadcast,
 *                 stall detection, the end of the job
 *   state.c       theta_L, theta_i, k, n_i: starting training, updates
 *   checkpoint.c  crash-safe checkpoint.json (save, load, compare)
 *   trace.c       trace.csv
 *   stats.c       Prometheus metrics
 * Everything runs on the loop thread; nothing here is thread-safe. */
#ifndef LRN_H
#define LRN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "common/net/conn.h"
#include "common/net/httpd.h"
#include "common/net/metrics.h"
#include "common/core/model.h"
#include "common/net/tls.h"

/* Exit codes (docs/learnerd.md). */
#define LRN_EXIT_OK      0   /* job done, or stopped by SIGTERM/SIGINT */
#define LRN_EXIT_FAIL    1   /* runtime failure: bind, I/O, job cannot finish */
#define LRN_EXIT_CONFIG  2   /* bad flags, config, certificates, checkpoint */

enum lrn_mode { LRN_MODE_REQUEST = 0, LRN_MODE_BROADCAST = 1 };

/* The settings table of main.c fills this.  Durations are seconds. */
struct lrn_settings {
	char *listen;              /* HOST:PORT */
	char *port_file;
	char *ca, *cert, *key;
	char *owners;              /* comma-separated identities */
	int model;                 /* dp_model */
	uint64_t T;
	double rho, eta;           /* 0: not given */
	double lambda, theta_max, clip;
	int mode;                  /* enum lrn_mode */
	double broadcast_interval;
	size_t max_inflight;
	size_t min_owners;         /* 0: N */
	double query_timeout;
	double hello_timeout;
	double idle_timeout;       /* 0: wait for ever */
	size_t features;           /* 0: from the first Hello */
	bool bias;
	bool freq_correction;   /* Remark 4 weights (dp_algo_freq_weight) */
	char *out;
	uint64_t checkpoint_every; /* 0: only on SIGTERM, stop and end */
	bool resume;
	char *metrics_listen;      /* empty or NULL: off */
	char *job;
	size_t max_frame;
	int log_level;             /* enum dp_log_level */
};

struct lrn_owner {
	char id[DP_TLS_ID_MAX + 1];
	size_t idx;
	dp_conn *conn;             /* admitted connection, or NULL (away) */
	bool hello;                /* conn has said Hello */
	double conn_since;         /* monotonic time conn was admitted */
	bool ever_hello;           /* said Hello at least once in this job */
	uint64_t n_rows;           /* n_i (fixed once training started) */
	double epsilon;
	uint64_t answers_cap, answers_given;
	bool exhausted;            /* refused, or no budget left per its Hello */
	bool queued;               /* in the request FIFO */
	bool inflight;             /* a query of this owner is out */
	double *theta;             /* theta_i, p values (NULL until p known) */
	uint64_t iterations;       /* answers used */
	double eps_spent;          /* as last reported by the owner */
	struct dp_metric *m_iter, *m_eps;
};

struct lrn_query {
	bool used;
	size_t owner;
	uint64_t qid;
	double sent;               /* monotonic send time */
	double wait;               /* seconds the request waited in the FIFO */
	double *bar;               /* p values: the point the owner evaluates */
};

enum lrn_phase {
	LRN_RUN,        /* serving: waiting for owners or training */
	LRN_FINISHING,  /* k == T: Done sent, flushing */
	LRN_STOPPING,   /* signal or error: closing down */
};

struct lrn_stats {
	struct dp_metrics *reg;
	struct dp_metric *iterations, *connected, *queue_depth, *inflight;
	struct dp_metric *rtt, *wait, *refusals, *timeouts, *rejected;
	struct dp_metric *T_gauge;
	struct dp_metric_family *owner_iter, *owner_eps;
};

struct lrn {
	struct lrn_settings *s;
	uv_loop_t *loop;
	SSL_CTX *ctx;
	dp_listener *listener;
	struct dp_httpd *httpd;
	struct lrn_stats st;
	char *listen_host;
	uint16_t listen_port;
	uint16_t tls_port, metrics_port;

	uv_timer_t tick;           /* timeouts and stall detection */
	uv_timer_t bcast;          /* broadcast mode */
	uv_signal_t sigterm, sigint;
	bool handles_init;

	/* The job. */
	dp_model model;
	size_t N;
	struct lrn_owner *owners;
	size_t p;                  /* 0 until known */
	uint64_t T;
	bool started;              /* n_i and eta fixed (training may run) */
	bool gate_open;            /* min-owners reached: queries may go out */
	uint64_t n_total;
	double eta, rho;
	double *theta_L;
	uint64_t k_done;
	uint64_t next_qid;         /* the next query id to send */
	uint64_t qid_reserved;     /* ids below this may be used before the
				    * next checkpoint; resume continues here */

	/* Scheduling. */
	size_t *fifo;              /* owner indices, oldest first */
	double *fifo_t;            /* monotonic arrival time of each request */
	size_t fifo_len;
	struct lrn_query *q;       /* max_inflight slots */
	size_t inflight;
	size_t bcast_next;         /* round-robin start for broadcast */
	double stall_since;        /* monotonic; < 0 when not stalled */

	/* Output. */
	FILE *trace;
	char *trace_path, *ckpt_path, *model_path;
	int lock_fd;

	enum lrn_phase phase;
	int exit_code;
	bool finished;             /* k reached T and the outputs are written */
	size_t open_conns;         /* admitted connections not yet closed */
};

/* ---- time (time.c is too small to deserve a file: in sched.c) ---------- */
double lrn_mono(void);     /* monotonic seconds */
double lrn_wall(void);     /* Unix time, seconds */

/* ---- server.c ------------------------------------------------------------ */
/* Start the TLS listener on settings->listen.  Errors as dp_listener_start. */
int lrn_server_start(struct lrn *L);
/* Send Done to every owner that said Hello, then close every connection
 * gracefully.  done: with the final model. */
void lrn_server_close_all(struct lrn *L, bool done);
/* Forget owner o's connection and close it (a reason for the log). */
void lrn_server_drop(struct lrn *L, struct lrn_owner *o, const char *reason);
/* Split and check the owners list of the settings.  0 or DP_EINVAL. */
int lrn_parse_owners(const char *list, char ***names, size_t *count);
/* Parse HOST:PORT ("[v6]:port" too) into a heap host and a port. */
int lrn_parse_hostport(const char *what, const char *s, char **host, uint16_t *port);

/* ---- state.c ------------------------------------------------------------- */
/* Allocate the owner table from the names; theta vectors come with p. */
int lrn_state_init(struct lrn *L, char **names, size_t count);
void lrn_state_free(struct lrn *L);
/* Fix the job's p (from settings, the first Hello or a checkpoint). */
int lrn_state_set_p(struct lrn *L, size_t p);
/* All owners said Hello: fix n_i, n, eta, rho.  0 or DP_EINVAL (detail). */
int lrn_state_start(struct lrn *L);
/* The rho and n_total a Welcome carries now (provisional before start). */
void lrn_state_welcome_params(const struct lrn *L, uint64_t *n_total, double *rho);
/* Apply the answer of query qr: theta_i, theta_L updated, k_done + 1. */
void lrn_state_apply(struct lrn *L, const struct lrn_query *qr, const double *answer);
/* The effective eta for fixed weights (given --eta/--rho, else default). */
/* The clip bound Xi sent to owners: --clip, or dp_defaults_clip(p) when it is
 * 0 (the default); the second form for a p not yet set on L. */
double lrn_state_clip(const struct lrn *L);
double lrn_state_clip_for(const struct lrn *L, size_t p);
double lrn_state_eta(const struct lrn *L, double max_weight);

/* ---- sched.c ------------------------------------------------------------- */
int lrn_sched_init(struct lrn *L);
void lrn_sched_free(struct lrn *L);
/* Start the tick and broadcast timers. */
int lrn_sched_start(struct lrn *L);
void lrn_sched_stop_timers(struct lrn *L);
/* An UpdateRequest from owner o. */
void lrn_sched_request(struct lrn *L, struct lrn_owner *o);
/* An Answer / Refuse for query k from owner o. */
void lrn_sched_answer(struct lrn *L, struct lrn_owner *o, uint64_t k, const double *grad,
		      double eps_spent);
void lrn_sched_refuse(struct lrn *L, struct lrn_owner *o, uint64_t k, const char *reason);
/* Owner o's connection is gone: drop its request and its query. */
void lrn_sched_owner_gone(struct lrn *L, struct lrn_owner *o);
/* Something changed (owner joined, Hello, answer): send what can be sent,
 * open the gate, check for the end of the job. */
void lrn_sched_pump(struct lrn *L);
/* Mark o exhausted; stops the job if every owner is. */
void lrn_sched_exhausted(struct lrn *L, struct lrn_owner *o, const char *why);
/* Stop serving: checkpoint when training started, close everything; the
 * loop then ends and main exits with code. */
void lrn_stop(struct lrn *L, int code, const char *why);

/* ---- checkpoint.c -------------------------------------------------------- */
#define LRN_CKPT_FORMAT  "dpasync-learner-checkpoint"
#define LRN_CKPT_VERSION 1
/* Write L's state to L->ckpt_path atomically; reserves the next block of
 * query ids (final: the job is over or stopping, no block needed).
 * Flushes and fsyncs the trace first.  0 or DP_EIO/DP_ENOMEM. */
int lrn_ckpt_save(struct lrn *L, bool final);
/* Load L->ckpt_path into L (after lrn_state_init), checking it belongs to
 * the configured job.  DP_ENOENT (no file), DP_EFORMAT/DP_ECORRUPT (bad
 * file), DP_EINVAL (another job: the detail names the setting).  On
 * failure the owners' counters may be partly filled: the caller exits. */
int lrn_ckpt_load(struct lrn *L);

/* ---- trace.c ------------------------------------------------------------- */
/* Open trace.csv: new (header) or, on resume, truncated to k_done rows. */
int lrn_trace_open(struct lrn *L, bool resume);
int lrn_trace_row(struct lrn *L, uint64_t k, double wall, const char *owner, double wait,
		  double rtt, double eps);
/* fflush + fsync.  0 or DP_EIO. */
int lrn_trace_sync(struct lrn *L);
void lrn_trace_close(struct lrn *L);

/* ---- stats.c ------------------------------------------------------------- */
int lrn_stats_init(struct lrn *L);
void lrn_stats_free(struct lrn *L);
/* Refresh the gauges (connected, queue depth, in flight). */
void lrn_stats_gauges(struct lrn *L);

#endif
