/* ownerd: the data owner's daemon (docs/design.md §7,
 * docs/ownerd.md).
 *
 * One libuv loop, one thread.  Roles, one file each:
 *   main.c    settings (config table, flags), startup checks, signals,
 *             metrics/health endpoint, shutdown and exit code
 *   client.c  the connection to the learner: Hello/Welcome, message
 *             dispatch, Done, reconnection with backoff
 *   answer.c  Query handling: validate, ledger check, noisy answer,
 *             ledger charge, Answer/Refuse
 *   clock.c   the Poisson clock that sends UpdateRequest
 * Everything here shares one struct own_daemon. */
#ifndef OWN_H
#define OWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>
#include <openssl/ssl.h>

#include "common/net/conn.h"
#include "common/core/dataset.h"
#include "common/core/ledger.h"
#include "common/net/metrics.h"
#include "common/core/model.h"
#include "common/core/rng.h"
#include "common/net/tls.h"

/* Exit codes (docs/ownerd.md). */
#define OWN_EXIT_OK      0
#define OWN_EXIT_FAIL    1   /* runtime / system failure (ledger I/O, RNG, ...) */
#define OWN_EXIT_CONFIG  2   /* bad configuration or input */

/* Reconnection backoff: full jitter over [0, min(MAX, BASE * 2^attempt)]. */
#define OWN_BACKOFF_BASE_S  0.1
#define OWN_BACKOFF_MAX_S   10.0
/* A learner that completed the TLS handshake but sends no Welcome within
 * this time is deemed stuck: the connection is closed and retried. */
#define OWN_WELCOME_TIMEOUT_MS 30000u

/* Settings filled by common/net/config.h (main.c holds the table). */
struct own_settings {
	char *learner;          /* HOST:PORT */
	char *server_name;      /* expected name in the learner's certificate */
	char *ca, *cert, *key;
	char *data;             /* CSV */
	char *target;           /* NULL: "y", or the schema's target */
	bool bias;
	char *schema;
	double epsilon;         /* total budget; +inf only with allow_no_noise */
	uint64_t answers_cap;   /* K_i; 0 = T from Welcome */
	double rate;            /* Poisson clock ticks per second */
	char *ledger;
	char *model_out;        /* NULL: model.json next to the ledger */
	char *metrics_listen;   /* "" or NULL: off */
	char *port_file;
	bool allow_no_noise;
	int log_level;          /* enum dp_log_level */
	size_t max_frame;
};

struct own_metrics {
	struct dp_metrics *reg;
	struct dp_metric *answers;     /* dpasync_owner_answers_total */
	struct dp_metric *refusals;    /* dpasync_owner_refusals_total */
	struct dp_metric *eps_spent;   /* dpasync_owner_epsilon_spent */
	struct dp_metric *eps_left;    /* dpasync_owner_epsilon_left */
	struct dp_metric *grad_secs;   /* dpasync_owner_gradient_seconds */
	struct dp_metric *connected;   /* dpasync_owner_connected */
	struct dp_metric *reconnects;  /* dpasync_owner_reconnects_total */
};

/* What the learner's Welcome told us (the job this owner takes part in). */
struct own_job {
	bool have;              /* a Welcome was accepted at least once */
	char name[DP_FRAME_MAX_STR + 1];
	dp_model model;
	uint64_t T;
	uint32_t N;
	uint64_t n_total;
	double rho, lambda, theta_max, clip;
	bool broadcast;         /* mode: broadcast (no UpdateRequest) */
	uint64_t k_done;
};

struct own_daemon {
	uv_loop_t *loop;
	struct own_settings set;

	char id[DP_TLS_ID_MAX + 1]; /* our identity: CN of --cert */
	char host[256];             /* from --learner */
	uint16_t port;
	char *model_out;            /* resolved path (owned) */

	dp_dataset ds;
	size_t p;
	SSL_CTX *ctx;
	dp_csprng *rng;
	dp_bitsource bits;

	/* The ledger: open from startup when the file exists, else from the
	 * first Welcome (its caps need T).  K and eps_q are fixed once it is
	 * open. */
	dp_ledger *ledger;
	uint64_t cap_answers;       /* K_i in force (0 while unknown) */
	double eps_q;               /* per-answer share, calibrates the noise */
	struct own_job job;

	/* Connection to the learner. */
	dp_conn *conn;
	bool welcomed;              /* Welcome accepted on this connection */
	bool request_pending;       /* UpdateRequest sent, no Query yet */
	unsigned attempt;           /* backoff exponent */
	uint64_t connects;          /* connection attempts made */
	uv_timer_t retry_timer;
	uv_timer_t welcome_timer;
	uv_timer_t clock_timer;
	uv_signal_t sigterm, sigint;
	struct dp_httpd *httpd;
	struct own_metrics m;

	double *grad;               /* scratch for one answer, p doubles */
	bool stopping;
	int exit_code;
};

/* ---- main.c ---- */
/* Begin a clean shutdown with this exit code (the first code wins): stop
 * the clock and timers, close the connection and the metrics server; the
 * loop then runs out and main() returns the code. */
void own_stop(struct own_daemon *d, int code);
/* Refresh the budget gauges from the ledger. */
void own_metrics_budget(struct own_daemon *d);

/* ---- client.c ---- */
/* Start a connection attempt now (no-op while one exists or stopping). */
void own_client_start(struct own_daemon *d);
/* Close the current connection with a logged reason; the daemon
 * reconnects after a backoff. */
void own_client_drop(struct own_daemon *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Send one message on the current connection; logs a failure. */
int own_client_send(struct own_daemon *d, const Dpasync__Envelope *m);
/* Identity string bound into the ledger header for this owner and job. */
void own_ledger_identity(const struct own_daemon *d, const char *job, char *out, size_t size);

/* ---- answer.c ---- */
/* Handle one validated Query (ownership of q stays with the caller). */
void own_answer_query(struct own_daemon *d, const Dpasync__Query *q);
/* 1 if one more answer of eps_q fits the ledger's caps, else 0. */
int own_budget_left(const struct own_daemon *d);
/* The ledger failed (DP_EIO): tell the learner, stop for good, exit 1. */
void own_ledger_failed(struct own_daemon *d, uint64_t k, int err);

/* ---- clock.c ---- */
/* Arm the Poisson clock (first gap drawn now).  0 or a DP_E... code. */
int own_clock_start(struct own_daemon *d);
void own_clock_stop(struct own_daemon *d);
/* Restart the clock, which sleeps while a request is outstanding (the
 * Poisson clock is memoryless, so the next request time has the same law);
 * a no-op while it runs or the daemon stops. */
void own_clock_resume(struct own_daemon *d);

#endif
