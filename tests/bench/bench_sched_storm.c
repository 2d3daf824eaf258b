/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler's cost of a storm of N owners, without sockets
 * (docs/scale.md §5.1 "Per-event scans"): liblearner driven as learnerd's
 * server.c drives it.  Four phases, each timed (CLOCK_MONOTONIC):
 *
 *   start    the job's state, metrics and scheduler for N owners (what
 *            learnerd does before it listens);
 *   hello    N owners connect and say Hello, one pass of the pump after
 *            each (the plan is made at the last one);
 *   welcome  the pump until it has nothing to do: N Welcomes, then the
 *            first query;
 *   iterate  every owner has asked for an update (request mode: the FIFO
 *            holds N); ITERATIONS queries, answers and new requests, the
 *            one answering going to the back of the queue (no periodic
 *            checkpoint; the trace row of each is written);
 *   exhaust  every owner leaves with its lifetime spent, one by one (the
 *            check that every owner is exhausted runs at each).
 *
 * Each phase's time per owner is flat in N when its per-event work is
 * O(1), and grows with N when a pass scans the owners.  Built with
 * -DBENCH_OLD_LEARNER, the same driver links against learner/ from before
 * lrn_state_count (the counters then kept by hand, as that server.c did):
 * the baseline of docs/scale.md §5.1.
 *
 *   bench_sched_storm [N ...]          (default: 10000 30000 100000)
 *
 * Output: one line per N and phase, "N phase seconds ns_per_owner" (for
 * iterate: ns per iteration). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "learner/job.h"

#define ITERATIONS 5000

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Owner o's flags change between the two calls (server.c's way). */
static void count(struct lrn_job *J, struct lrn_owner *o, int sign)
{
#ifndef BENCH_OLD_LEARNER
	lrn_state_count(J, o, sign);
#else   /* -DBENCH_OLD_LEARNER: learner/ before lrn_state_count (c599d31),
	 * whose server.c kept these two counters by hand */
	if (sign < 0) {
		J->n_hello -= o->hello;
		J->n_to_welcome -= o->connected && o->hello && !o->welcomed;
	} else {
		J->n_hello += o->hello;
		J->n_to_welcome += o->connected && o->hello && !o->welcomed;
	}
#endif
}

/* The pump, as server.c's carry_out runs it; returns the last act. */
static enum lrn_act pump(struct lrn_job *J, double t)
{
	struct lrn_decision d;

	for (;;) {
		lrn_sched_next(J, t, &d);
		switch (d.act) {
		case LRN_ACT_WELCOME:
			count(J, d.o, -1);
			d.o->welcomed = true;
			count(J, d.o, 1);
			break;
		case LRN_ACT_QUERY:
			lrn_sched_sent(J, d.qr, t);
			return d.act;
		case LRN_ACT_PUMP:
			break;
		default:
			return d.act;
		}
	}
}

static int run(size_t N, const char *dir)
{
	struct lrn_settings s = {
		.model = DP_MODEL_LINEAR, .T = 2 * N, .eta = 0.05, .lambda = 0.01, .theta_max = 10,
		.clip = 1, .answers_margin = 0.1, .mode = LRN_MODE_REQUEST, .max_inflight = 1,
		.broadcast_interval = 0.1, .round_timeout = 60, .query_timeout = 10,
		.hello_timeout = 10, .idle_timeout = 0, .max_frame = 16u << 20, .job = "bench",
	};
	char **names = calloc(N, sizeof(*names)), path[600];
	struct lrn_decision d;
	static const double grad[2] = { 0.5, -0.25 };
	struct lrn_job J;
	double ts, t0, t1, t2, t3, t4;
	size_t its = 0;

	if (names == NULL)
		return -1;
	for (size_t i = 0; i < N; i++)
		if (asprintf(&names[i], "owner-%zu", i + 1) < 0)
			return -1;
	ts = now_s();
	if (lrn_state_init(&J, &s, names, N) != 0 || lrn_state_set_p(&J, 2) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/trace.csv", dir);
	J.trace_path = strdup(path);
	snprintf(path, sizeof(path), "%s/checkpoint.json", dir);
	J.ckpt_path = strdup(path);
	snprintf(path, sizeof(path), "%s/rounds.csv", dir);
	J.rounds_path = strdup(path);
	if (lrn_trace_open(&J, false) != 0 || lrn_stats_init(&J) != 0 || lrn_sched_init(&J) != 0)
		return -1;

	t0 = now_s();
	for (size_t i = 0; i < N; i++) {
		struct lrn_owner *o = &J.owners[i];
		struct lrn_claims c = { .n_rows = 100, .n_features = 2, .epsilon = 1.0,
					.rate = 1.0, .same_job = true };

		count(&J, o, -1);
		o->connected = true;
		o->hello = false;
		o->welcomed = false;
		count(&J, o, 1);
		lrn_state_take_hello(&J, o, &c);
		/* What server.c's on_hello keeps from a current ownerd's
		 * Hello: its schema fingerprint (all agree). */
		snprintf(o->schema, sizeof(o->schema), "sha256:bench");
		count(&J, o, -1);
		o->hello = true;
		o->ever_hello = true;
		count(&J, o, 1);
		lrn_sched_hello(&J, o, &d);
		lrn_sched_next(&J, 1.0, &d);   /* the pass after it */
		if (d.act == LRN_ACT_WELCOME) {
			count(&J, d.o, -1);
			d.o->welcomed = true;
			count(&J, d.o, 1);
		}
	}
	t1 = now_s();
	if (pump(&J, 2.0) != LRN_ACT_NONE || !J.gate_open)
		fprintf(stderr, "N=%zu: the gate did not open\n", N);
	t2 = now_s();
	/* The first query is out (the pump's last act): its owner answers
	 * after the others have all asked. */
	for (size_t i = 0; i < N; i++)
		if (!J.owners[i].inflight)
			lrn_sched_request(&J, &J.owners[i], 3.0, &d);
	while (its < ITERATIONS) {
		struct lrn_query *qr = NULL;
		struct lrn_owner *o;
		uint64_t qid;

		for (size_t k = 0; k < J.s->max_inflight && qr == NULL; k++)
			if (J.q[k].used)
				qr = &J.q[k];
		if (qr == NULL && pump(&J, 4.0) != LRN_ACT_QUERY)
			break;
		for (size_t k = 0; k < J.s->max_inflight && qr == NULL; k++)
			if (J.q[k].used)
				qr = &J.q[k];
		o = &J.owners[qr->owner];
		qid = qr->qid;
		lrn_sched_answer(&J, o, qid, grad, 0.001, 4.0, &d);
		lrn_sched_request(&J, o, 4.0, &d);
		its++;
	}
	t3 = now_s();
	for (size_t i = 0; i < N; i++) {
		struct lrn_owner *o = &J.owners[i];

		count(&J, o, -1);
		o->connected = false;
		o->hello = false;
		o->welcomed = false;
		count(&J, o, 1);
		lrn_sched_owner_gone(&J, o);
		lrn_sched_spent(&J, o, &d);
	}
	t4 = now_s();
	printf("%zu start %.3f %.0f\n", N, t0 - ts, (t0 - ts) / (double)N * 1e9);
	printf("%zu hello %.3f %.0f\n", N, t1 - t0, (t1 - t0) / (double)N * 1e9);
	printf("%zu welcome %.3f %.0f\n", N, t2 - t1, (t2 - t1) / (double)N * 1e9);
	printf("%zu iterate %.3f %.0f (%zu iterations)\n", N, t3 - t2,
	       its ? (t3 - t2) / (double)its * 1e9 : 0.0, its);
	printf("%zu exhaust %.3f %.0f\n", N, t4 - t3, (t4 - t3) / (double)N * 1e9);
	fflush(stdout);
	lrn_trace_close(&J);
	lrn_sched_free(&J);
	lrn_stats_free(&J);
	free(J.trace_path);
	free(J.ckpt_path);
	free(J.rounds_path);
	lrn_state_free(&J);
	for (size_t i = 0; i < N; i++)
		free(names[i]);
	free(names);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const def[] = { "10000", "30000", "100000" };
	static const char *const files[] = { "trace.csv", "checkpoint.json", "rounds.csv" };
	const char *const *ns = argc > 1 ? (const char *const *)argv + 1 : def;
	size_t n = argc > 1 ? (size_t)argc - 1 : 3;
	char dir[] = "/tmp/bench_sched_storm.XXXXXX", p[600];
	int rc = 0;

	dp_log_set_level(DP_LOG_ERROR);
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	printf("N phase seconds ns_per_owner\n");
	for (size_t k = 0; k < n && rc == 0; k++) {
		char *end;
		unsigned long N = strtoul(ns[k], &end, 10);

		if (*end != '\0' || N < 2) {
			fprintf(stderr, "bench_sched_storm: N must be a whole number >= 2, got '%s'\n",
				ns[k]);
			rc = 2;
			break;
		}
		if (run((size_t)N, dir) != 0) {
			fprintf(stderr, "bench_sched_storm: N=%lu: %s\n", N,
				dp_error_detail(DP_ENOMEM));
			rc = 1;
		}
	}
	for (size_t f = 0; f < 3; f++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[f]);
		unlink(p);
	}
	rmdir(dir);
	return rc;
}
