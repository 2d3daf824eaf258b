/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd internals: the learner of the async algorithm (docs/design.md §4, §7;
 * docs/learnerd.md; the protocol flow of docs/protocol.md).
 *
 * One libuv loop, one process, one job.  The roles are split by file, and
 * calls go one way, down this list (a file calls only files below it):
 *
 *   main.c        lifecycle: settings, startup, signals, the one way the
 *                 job ends (lrn_end: done, signal or failure), exit code
 *   server.c      network: TLS listener, admission, message dispatch,
 *                 sending Welcome/Query/Done, the timers that act on
 *                 connections; it carries out sched.c's decisions
 *   progress.c    the progress line every few seconds and the final summary
 *   fdlimit.c     open files: RLIMIT_NOFILE raised to what the job needs
 *   memtrim.c     heap pages back to the system after connection bursts
 *   liblearner    the job without sockets (learner/job.h): sched.c (the
 *                 decisions: it never touches a connection, it returns a
 *                 struct lrn_decision), state.c, checkpoint.c, trace.c,
 *                 stats.c, clock.c
 *
 * Events come back up without calls: sched.c answers with a decision that
 * server.c executes, and server.c reaches main.c only through the on_end
 * callback main.c registers in struct lrn (signals, fatal errors, the idle
 * timeout, every owner exhausted and k == T all end the job through it).
 * Everything runs on the loop thread; nothing here is thread-safe. */
#ifndef LRN_H
#define LRN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "common/core/exit.h"   /* exit codes: docs/design.md §10 "Exit status" */
#include "common/net/addr.h"
#include "common/net/conn.h"
#include "common/net/httpd.h"
#include "learner/job.h"

enum lrn_phase {
	LRN_RUN,        /* serving: waiting for owners or training */
	LRN_FINISHING,  /* k == T: Done sent, flushing */
	LRN_STOPPING,   /* signal or error: closing down */
};

/* How the job ends (main.c's on_end). */
enum lrn_end {
	LRN_END_DONE,    /* k == T: model, final checkpoint, Done, exit 0 */
	LRN_END_SIGNAL,  /* SIGTERM/SIGINT: partial model, checkpoint, close,
			  * exit 0 */
	LRN_END_FAIL,    /* the job cannot go on (reason, why): partial model,
			  * checkpoint, close, exit 1 */
	LRN_END_CONFIG,  /* as FAIL, but a setting of learnerd is wrong
			  * (--public for other rows): exit 2 */
};

/* Open files at start (fdlimit.c, docs/learnerd.md "Descriptors"). */
struct lrn_fdlimit {
	uint64_t need;             /* descriptors the configured job can use */
	uint64_t least;            /* one per owner and the rest: below, refuse */
	uint64_t before, soft, hard;   /* RLIMIT_NOFILE (UINT64_MAX: unlimited) */
};

/* Connection bursts since the last heap trim (memtrim.c). */
struct lrn_memtrim {
	uint64_t events;           /* connections opened or closed since */
	double last_event, last_trim;   /* monotonic */
	uint64_t trims;
};

struct lrn {
	struct lrn_settings *s;    /* the job's settings too (job.s) */
	struct lrn_job job;        /* what the decisions are about (job.h) */
	uv_loop_t *loop;
	SSL_CTX *ctx;
	dp_listener *listener;
	struct dp_httpd *httpd;
	char listen_host[DP_ADDR_HOST_MAX + 1];
	uint16_t listen_port;
	uint16_t tls_port, metrics_port;
	dp_conn **conn;            /* server.c: owner i's admitted connection,
				    * or NULL (job.N entries; its data is the
				    * job's owner record) */

	/* main.c sets this before the server starts: the one way the job
	 * ends.  A no-op once the phase has left LRN_RUN. */
	void (*on_end)(struct lrn *L, enum lrn_end how, const char *reason, const char *why);

	uv_timer_t tick;           /* server.c: timeouts and stall detection */
	uv_timer_t bcast;          /* server.c: broadcast mode */
	bool timers_init;
	uv_signal_t sigterm, sigint;   /* main.c */
	bool signals_init;
	uv_timer_t progress;       /* progress.c (unreferenced) */
	bool progress_init;
	double prog_t;             /* monotonic time of the last progress line */
	uint64_t prog_k;           /* k_done then */

	/* Output besides the job's record (job.trace, job.ckpt_path, ...). */
	char *model_path;
	int lock_fd;

	enum lrn_phase phase;      /* main.c's */
	int exit_code;
	bool finished;             /* k reached T and the outputs are written */
	size_t open_conns;         /* admitted connections not yet closed */

	struct lrn_fdlimit fd;     /* fdlimit.c, at start */
	struct lrn_memtrim trim;   /* memtrim.c */
};

/* ---- server.c: the network ---------------------------------------------- */
/* ---- owners.c: the admitted identities ---------------------------------- */
/* The owners of the settings, from owners (A,B,...) or owners-file (one
 * per line; exactly one of the two), each a valid identity, none twice.
 * *names (heap strings in a heap array, the caller frees both) and *count
 * on success.  Errors: DP_EINVAL (one line naming the item or the file's
 * line), DP_ENOENT / DP_EIO (the file), DP_ENOMEM. */
int lrn_owners_load(const struct lrn_settings *set, char ***names, size_t *count);

/* ---- server.c: the network ---------------------------------------------- */
/* Start the TLS listener on listen_host:listen_port and the timers.
 * Errors as dp_conn_listen.  L->on_end must be set. */
int lrn_server_start(struct lrn *L);
/* Serve what can be served now (once after startup: a resumed job that had
 * already finished ends here). */
void lrn_server_pump(struct lrn *L);
/* Release what lrn_server_start allocated, once the loop has closed. */
void lrn_server_free(struct lrn *L);
/* The job ends (main.c, phase no longer LRN_RUN): stop listening; done:
 * send Done with the final model to every owner that said Hello; close
 * every connection gracefully; the timers close with the last one. */
void lrn_server_close(struct lrn *L, bool done);

/* ---- progress.c ---------------------------------------------------------- */
/* Start the progress timer (every settings' progress_every seconds; 0:
 * none).  0, or a negative libuv code (detail set). */
int lrn_progress_start(struct lrn *L);
/* One info line: end NULL, the progress line ("progress k=K/T it_s=
 * it_s_avg= eta_s= owners= eps_spent="); else the summary ("summary end=
 * k= secs= it_s_avg= owners= eps_spent="), end naming how the job ended.
 * Rates count from the first query of this process. */
void lrn_progress_line(struct lrn *L, const char *end);
/* The job ends: stop the timer and write the summary line. */
void lrn_progress_end(struct lrn *L, const char *end);

/* ---- fdlimit.c: open files ------------------------------------------------ */
/* What the configured job needs (*need) and the least it can run with. */
void lrn_fdlimit_need(const struct lrn *L, uint64_t *need, uint64_t *least);
/* Raise the soft RLIMIT_NOFILE to L->fd.need, or as far as the hard limit
 * goes; fills L->fd.  0, or (detail set) DP_EINVAL when the hard limit is
 * below L->fd.least, a negative errno when getrlimit/setrlimit fail.
 * Logs nothing: lrn_fdlimit_log() does, once logging has started. */
int lrn_fdlimit_raise(struct lrn *L);
/* One line: debug when nothing changed, info when raised, warn when the
 * hard limit left it short of what the job needs. */
void lrn_fdlimit_log(const struct lrn *L);

/* ---- memtrim.c: heap pages back after connection bursts ------------------- */
/* At start: large buffers always from mmap (glibc's threshold fixed). */
void lrn_memtrim_init(void);
/* A connection was admitted or closed at monotonic time now. */
void lrn_memtrim_note(struct lrn *L, double now);
/* From the server's tick: malloc_trim once the connections have been quiet
 * for a second, or every 10 s during a burst. */
void lrn_memtrim_tick(struct lrn *L, double now);

#endif
