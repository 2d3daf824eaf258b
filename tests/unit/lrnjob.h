/* SPDX-License-Identifier: Apache-2.0 */
/* A learner job (learner/job.h) for the unit tests of liblearner, driven
 * as learnerd's server.c drives it: owners connect, say Hello, get their
 * Welcome and are sent their queries, and the job's files go in the test's
 * temporary directory.  Include after cmocka and tmpdir.h, once per test. */
#ifndef DP_TEST_LRNJOB_H
#define DP_TEST_LRNJOB_H

#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "learner/job.h"

static char *lrnjob_names[] = { "owner-1", "owner-2", "owner-3", "owner-4" };

/* learnerd's defaults where a test does not care; T and the step given, so
 * that the plan is the formula's (docs/planner.md), not the search's. */
static inline struct lrn_settings lrnjob_settings(void)
{
	return (struct lrn_settings){
		.model = DP_MODEL_LINEAR, .T = 10, .eta = 0.05, .lambda = 0.01, .theta_max = 10,
		.clip = 1, .answers_margin = 0.1, .mode = LRN_MODE_REQUEST, .max_inflight = 1,
		.broadcast_interval = 0.1, .round_timeout = 60, .query_timeout = 10,
		.hello_timeout = 10, .idle_timeout = 0, .max_frame = 16u << 20, .job = "test-job",
	};
}

static inline char *lrnjob_path(const char *tag, const char *name)
{
	char buf[128];
	char *p;

	snprintf(buf, sizeof(buf), "%s-%s", tag, name);
	p = strdup(path_of(buf));
	assert_non_null(p);
	return p;
}

/* Point J's files at tmpdir/TAG-trace.csv, -checkpoint.json, -rounds.csv. */
static inline void lrnjob_paths(struct lrn_job *J, const char *tag)
{
	J->trace_path = lrnjob_path(tag, "trace.csv");
	J->ckpt_path = lrnjob_path(tag, "checkpoint.json");
	J->rounds_path = lrnjob_path(tag, "rounds.csv");
}

/* A new job of N owners on s (p fixed when > 0), as learnerd starts one:
 * the trace open, the metrics and the scheduler set up. */
static inline void lrnjob_init(struct lrn_job *J, struct lrn_settings *s, size_t N, size_t p,
			       const char *tag)
{
	assert_true(N <= sizeof(lrnjob_names) / sizeof(lrnjob_names[0]));
	assert_int_equal(lrn_state_init(J, s, lrnjob_names, N), 0);
	if (p > 0)
		assert_int_equal(lrn_state_set_p(J, p), 0);
	lrnjob_paths(J, tag);
	assert_int_equal(lrn_trace_open(J, false), 0);
	assert_int_equal(lrn_stats_init(J), 0);
	assert_int_equal(lrn_sched_init(J), 0);
}

static inline void lrnjob_free(struct lrn_job *J)
{
	lrn_trace_close(J);
	lrn_sched_free(J);
	lrn_stats_free(J);
	free(J->trace_path);
	free(J->ckpt_path);
	free(J->rounds_path);
	lrn_state_free(J);
}

/* Owner i's connection is admitted at monotonic time now. */
static inline void lrnjob_connect(struct lrn_job *J, size_t i, double now)
{
	struct lrn_owner *o = &J->owners[i];

	lrn_state_count(J, o, -1);
	o->connected = true;
	o->hello = false;
	o->welcomed = false;
	lrn_state_count(J, o, 1);
	o->conn_since = now;
}

/* Owner o is sent its Welcome (what server.c's send_welcome marks). */
static inline void lrnjob_welcomed(struct lrn_job *J, struct lrn_owner *o)
{
	lrn_state_count(J, o, -1);
	o->welcomed = true;
	lrn_state_count(J, o, 1);
}

/* A Hello's claims: epsilon 1, no limits (an owner that predates them),
 * counters of this job; for a Gaussian job delta 1e-6, allowing it. */
static inline struct lrn_claims lrnjob_claims(const struct lrn_job *J, uint64_t n_rows,
					      double rate, uint64_t cap, uint64_t given)
{
	bool gauss = J->s->mechanism == DP_MECH_GAUSSIAN;   /* an owner that allows it */

	return (struct lrn_claims){ .n_rows = n_rows, .n_features = (uint32_t)J->p,
				    .epsilon = 1.0, .rate = rate, .own_cap = cap,
				    .answers_cap = cap, .answers_given = given,
				    .same_job = true, .delta = gauss ? 1e-6 : 0,
				    .lifetime_delta = gauss ? 1e-6 : 0, .gaussian = gauss };
}

/* Its Hello with claims c (what server.c's on_hello takes), then
 * lrn_sched_hello. */
static inline void lrnjob_hello_claims(struct lrn_job *J, size_t i, const struct lrn_claims *c,
				       struct lrn_decision *d)
{
	struct lrn_owner *o = &J->owners[i];

	lrn_state_take_hello(J, o, c);
	lrn_state_count(J, o, -1);
	o->hello = true;
	o->ever_hello = true;
	lrn_state_count(J, o, 1);
	lrn_sched_hello(J, o, d);
}

/* Its Hello (the counters server.c's on_hello sets), then lrn_sched_hello. */
static inline void lrnjob_hello(struct lrn_job *J, size_t i, uint64_t n_rows, double rate,
				uint64_t cap, uint64_t given, struct lrn_decision *d)
{
	struct lrn_claims c = lrnjob_claims(J, n_rows, rate, cap, given);

	lrnjob_hello_claims(J, i, &c, d);
}

/* Owner i's connection is gone (server.c's forget_conn, then the
 * scheduler forgets its request and its query). */
static inline void lrnjob_leave(struct lrn_job *J, size_t i)
{
	struct lrn_owner *o = &J->owners[i];

	lrn_state_count(J, o, -1);
	o->connected = false;
	o->hello = false;
	o->welcomed = false;
	lrn_state_count(J, o, 1);
	lrn_sched_owner_gone(J, o);
}

/* What the pump did: the queries sent (owner indices, in order). */
struct lrnjob_sent {
	size_t n;
	size_t owner[64];
	uint64_t qid[64];
};

/* Carry out lrn_sched_next at now until it has nothing left, as server.c's
 * pump does: a Welcome marks its owner, a query is sent at now, a drop
 * closes the connection.  Returns the act that ended it (NONE, DONE or
 * STOP, the decision in *last). */
static inline enum lrn_act lrnjob_pump(struct lrn_job *J, double now, struct lrnjob_sent *sent,
				       struct lrn_decision *last)
{
	struct lrn_decision d;

	if (sent != NULL)
		sent->n = 0;
	for (int guard = 0; guard < 1000; guard++) {
		lrn_sched_next(J, now, &d);
		switch (d.act) {
		case LRN_ACT_WELCOME:
			assert_true(d.o->connected && d.o->hello && !d.o->welcomed);
			lrnjob_welcomed(J, d.o);
			break;
		case LRN_ACT_QUERY:
			assert_true(d.o->connected && d.o->welcomed && d.qr->owner == d.o->idx);
			if (sent != NULL) {
				assert_true(sent->n < 64);
				sent->owner[sent->n] = d.o->idx;
				sent->qid[sent->n] = d.qr->qid;
				sent->n++;
			}
			lrn_sched_sent(J, d.qr, now);
			break;
		case LRN_ACT_DROP:
			lrnjob_leave(J, d.o->idx);
			break;
		case LRN_ACT_PUMP:
			break;
		case LRN_ACT_NONE:
		case LRN_ACT_DONE:
		case LRN_ACT_STOP:
			if (last != NULL)
				*last = d;
			return d.act;
		}
	}
	fail_msg("the pump did not settle");
	return LRN_ACT_NONE;
}

/* The slot of owner i's query in flight (NULL: none). */
static inline struct lrn_query *lrnjob_query(struct lrn_job *J, size_t i)
{
	size_t n = LRN_SYNC(J) ? J->N : (J->s->max_inflight < J->N ? J->s->max_inflight : J->N);

	for (size_t k = 0; k < n; k++)
		if (J->q[k].used && J->q[k].owner == i)
			return &J->q[k];
	return NULL;
}

/* Owner i answers its query in flight with grad at now, having given one
 * more answer (its Answer's answers_given). */
static inline void lrnjob_answer(struct lrn_job *J, size_t i, const double *grad, double now,
				 struct lrn_decision *d)
{
	struct lrn_query *qr = lrnjob_query(J, i);

	assert_non_null(qr);
	J->owners[i].answers_given++;
	lrn_sched_answer(J, &J->owners[i], qr->qid, grad, 0.01 * (double)J->owners[i].answers_given,
			 now, d);
}

/* N owners connect and say Hello with n_rows[i] rows (rates 1, no own
 * caps), and the pump plans the job and welcomes them. */
static inline void lrnjob_start(struct lrn_job *J, const uint64_t *n_rows, double now)
{
	struct lrn_decision d;

	for (size_t i = 0; i < J->N; i++) {
		lrnjob_connect(J, i, now);
		lrnjob_hello(J, i, n_rows[i], 1.0, 0, 0, &d);
		assert_int_equal(d.act, LRN_ACT_PUMP);
	}
	assert_int_equal(lrnjob_pump(J, now, NULL, NULL), LRN_ACT_NONE);
	assert_true(J->started);
}

/* The whole file at path (NUL-terminated; the caller frees it). */
static inline char *lrnjob_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

#endif
