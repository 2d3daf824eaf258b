/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for learner/sched.c: the scheduler's decisions, driven as learnerd's
 * server.c drives them (tests/unit/lrnjob.h) without a socket.
 *
 * Expected values come from docs/learnerd.md and docs/design.md, worked
 * out by hand next to each check: the plan's caps K_i = ceil(T pi_i (1 +
 * margin)) with an owner's own cap kept (docs/learnerd.md §3), the id
 * reservation next + 1024 + 2C + 64N (§5), staleness (§4), the sync step
 * theta[k+1] = theta[k] - (rho/(T^2 k)) (2 lambda theta[k] + sum w_i a_i)
 * (docs/design.md §5), the exact stop and drop messages. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/core/log.h"
#include "learner/job.h"
#include "tests/unit/tmpdir.h"
#include "tests/unit/lrnjob.h"

static const uint64_t rows2[] = { 10, 30 };
static const uint64_t rows3[] = { 10, 30, 60 };
static const double g1[] = { 1.0, 2.0 }, g2[] = { -1.0, 0.5 }, g3[] = { 0.5, 0.5 };

/* Field f (0-based) of trace row r (1-based, after the header) of path, as
 * a number. */
static double trace_field(const char *path, int r, int f)
{
	char *text = lrnjob_slurp(path), *p = text;
	double v;

	for (int i = 0; i < r; i++) {
		p = strchr(p, '\n');
		assert_non_null(p);
		p++;
	}
	for (int i = 0; i < f; i++) {
		p = strchr(p, ',');
		assert_non_null(p);
		p++;
	}
	v = strtod(p, NULL);
	free(text);
	return v;
}

static size_t lines(const char *path)
{
	char *text = lrnjob_slurp(path);
	size_t n = 0;

	for (char *p = text; *p; p++)
		n += *p == '\n';
	free(text);
	return n;
}

/* The plan waits for every owner's first Hello; then every connected owner
 * gets its Welcome, the gate opens and the job is checkpointed at k = 0. */
static void test_plan_welcome_gate(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_decision d;

	(void)state;
	lrnjob_init(&J, &s, 2, 2, "plan");
	lrnjob_connect(&J, 0, 0.0);
	lrnjob_connect(&J, 1, 0.0);
	lrnjob_hello(&J, 0, 10, 1.0, 0, 0, &d);
	assert_int_equal(d.act, LRN_ACT_PUMP);
	/* Not planned yet: no cap known, nothing to welcome. */
	assert_int_equal(lrn_state_cap(&J, &J.owners[0]), 0);
	assert_int_equal(lrnjob_pump(&J, 0.0, NULL, NULL), LRN_ACT_NONE);
	assert_false(J.started);
	assert_false(J.owners[0].welcomed);

	lrnjob_hello(&J, 1, 30, 1.0, 0, 0, &d);
	lrn_sched_next(&J, 1.0, &d);
	assert_true(J.started);
	assert_int_equal(d.act, LRN_ACT_WELCOME);
	assert_ptr_equal(d.o, &J.owners[0]);
	lrnjob_welcomed(&J, &J.owners[0]);
	lrn_sched_next(&J, 1.0, &d);
	assert_int_equal(d.act, LRN_ACT_WELCOME);
	assert_ptr_equal(d.o, &J.owners[1]);
	lrnjob_welcomed(&J, &J.owners[1]);
	lrn_sched_next(&J, 1.0, &d);
	assert_int_equal(d.act, LRN_ACT_NONE);
	assert_true(J.gate_open);
	/* n = 10 + 30; equal rates: K_i = ceil(10 * 0.5 * 1.1) = 6. */
	assert_int_equal(J.T, 10);
	assert_int_equal(J.n_total, 40);
	assert_int_equal(J.owners[0].planned_cap, 6);
	assert_int_equal(J.owners[1].planned_cap, 6);
	assert_int_equal(lrn_state_cap(&J, &J.owners[1]), 6);
	/* Checkpointed at k = 0, ids 1 .. 1 + 1024 + 2*0 + 64*2 reserved. */
	assert_int_equal(J.qid_reserved, 1 + 1024 + 128);
	assert_int_equal(access(J.ckpt_path, F_OK), 0);
	lrnjob_free(&J);
}

/* Request mode: first in, first out, one query out at a time; an owner's
 * own cap from its Hello is planned with and kept; an owner that has given
 * its last answer is exhausted and its requests ignored; the job is done
 * at k = T. */
static void test_request_caps_done(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_job J;
	struct lrn_decision d;
	uint64_t k;

	(void)state;
	lrnjob_init(&J, &s, 2, 2, "req");
	lrnjob_connect(&J, 0, 0.0);
	lrnjob_connect(&J, 1, 0.0);
	lrnjob_hello(&J, 0, 10, 1.0, 0, 0, &d);
	lrnjob_hello(&J, 1, 30, 1.0, 2, 0, &d);   /* its own cap: 2 answers */
	assert_int_equal(lrnjob_pump(&J, 0.0, NULL, NULL), LRN_ACT_NONE);
	/* K_2 = 2 (its own); owner 1 takes what is left: ceil((10 - min(2, 5)) * 1.1) = 9. */
	assert_int_equal(J.owners[1].planned_cap, 2);
	assert_int_equal(J.owners[0].planned_cap, 9);

	lrn_sched_request(&J, &J.owners[0], 1.0, &d);
	assert_int_equal(d.act, LRN_ACT_PUMP);
	lrn_sched_request(&J, &J.owners[0], 1.5, &d);   /* already queued */
	assert_int_equal(d.act, LRN_ACT_NONE);
	lrn_sched_request(&J, &J.owners[1], 2.0, &d);
	assert_int_equal(lrnjob_pump(&J, 3.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 1);   /* max-inflight 1 */
	assert_int_equal(sent.owner[0], 0);
	assert_int_equal(sent.qid[0], 1);
	assert_true(lrnjob_query(&J, 0)->wait == 2.0);   /* queued at 1, sent at 3 */
	lrn_sched_request(&J, &J.owners[0], 3.5, &d);   /* its query is out */
	assert_int_equal(d.act, LRN_ACT_NONE);
	/* An answer to a query that is not out changes nothing. */
	lrn_sched_answer(&J, &J.owners[0], 99, g1, 0.0, 3.7, &d);
	assert_int_equal(d.act, LRN_ACT_NONE);
	assert_int_equal(J.k_done, 0);

	lrnjob_answer(&J, 0, g1, 4.0, &d);
	assert_int_equal(d.act, LRN_ACT_PUMP);
	assert_int_equal(J.k_done, 1);
	/* trace row 1: k 1, owner-1, waited 2 s, round trip 1 s, staleness 0. */
	assert_true(trace_field(J.trace_path, 1, 0) == 1);
	assert_true(trace_field(J.trace_path, 1, 3) == 2.0);
	assert_true(trace_field(J.trace_path, 1, 4) == 1.0);
	assert_true(trace_field(J.trace_path, 1, 6) == 0);
	assert_int_equal(lrnjob_pump(&J, 4.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.owner[0], 1);
	lrnjob_answer(&J, 1, g2, 4.5, &d);
	assert_int_equal(d.act, LRN_ACT_PUMP);
	assert_false(J.owners[1].exhausted);
	lrn_sched_request(&J, &J.owners[1], 5.0, &d);
	assert_int_equal(lrnjob_pump(&J, 5.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 1);
	lrnjob_answer(&J, 1, g2, 5.5, &d);
	/* Its second and last answer: exhausted now, not at its next request. */
	assert_int_equal(d.act, LRN_ACT_PUMP);
	assert_true(J.owners[1].exhausted);
	lrn_sched_request(&J, &J.owners[1], 6.0, &d);
	assert_int_equal(d.act, LRN_ACT_NONE);
	assert_int_equal(J.fifo_len, 0);

	for (k = J.k_done; k < 10; k++) {
		lrn_sched_request(&J, &J.owners[0], 7.0, &d);
		assert_int_equal(d.act, LRN_ACT_PUMP);
		assert_int_equal(lrnjob_pump(&J, 7.0, &sent, NULL), LRN_ACT_NONE);
		assert_int_equal(sent.n, 1);
		lrnjob_answer(&J, 0, g1, 7.5, &d);
		assert_int_equal(d.act, LRN_ACT_PUMP);
	}
	assert_int_equal(J.k_done, 10);
	assert_int_equal(J.owners[0].iterations, 8);
	assert_int_equal(lrnjob_pump(&J, 8.0, NULL, &d), LRN_ACT_DONE);
	assert_int_equal(lines(J.trace_path), 1 + 10);
	lrnjob_free(&J);
}

/* Every owner exhausted before k = T: the job cannot finish (STOP).  A
 * Hello that says nothing is left exhausts its owner; one with answers
 * left again (the owner's ledger is the authority) makes it usable.  The
 * caps reach T (1 + 9 answers left: a job they could not serve would not
 * start, test_unreachable); owner-2's Answer then reports its cap reached
 * (answers it gave to queries a crash lost). */
static void test_exhausted(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_job J;
	struct lrn_decision d;

	(void)state;
	lrnjob_init(&J, &s, 2, 2, "exh");
	lrnjob_connect(&J, 0, 0.0);
	lrnjob_connect(&J, 1, 0.0);
	lrnjob_hello(&J, 0, 10, 1.0, 3, 3, &d);   /* cap 3, all 3 given */
	assert_int_equal(d.act, LRN_ACT_PUMP);
	assert_true(J.owners[0].exhausted);
	lrnjob_leave(&J, 0);
	lrnjob_connect(&J, 0, 1.0);
	lrnjob_hello(&J, 0, 10, 1.0, 3, 2, &d);   /* its ledger: one left */
	assert_false(J.owners[0].exhausted);
	lrnjob_hello(&J, 1, 30, 1.0, 9, 0, &d);
	assert_int_equal(lrnjob_pump(&J, 1.0, NULL, NULL), LRN_ACT_NONE);

	lrn_sched_request(&J, &J.owners[0], 2.0, &d);
	lrn_sched_request(&J, &J.owners[1], 2.0, &d);
	assert_int_equal(lrnjob_pump(&J, 2.0, &sent, NULL), LRN_ACT_NONE);
	lrnjob_answer(&J, 0, g1, 2.5, &d);
	assert_int_equal(d.act, LRN_ACT_PUMP);
	assert_true(J.owners[0].exhausted);
	assert_int_equal(lrnjob_pump(&J, 3.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.owner[0], 1);
	J.owners[1].answers_given = 8;   /* its Answer will say 9 of 9 */
	lrnjob_answer(&J, 1, g2, 3.5, &d);
	assert_int_equal(d.act, LRN_ACT_STOP);
	assert_string_equal(d.why, "every owner has exhausted its budget at k=2 of T=10: the job "
			    "cannot finish");
	lrnjob_free(&J);
}

/* A refusal exhausts its owner (the query is gone); a Goodbye
 * BUDGET_SPENT too, and when that was the last owner with answers the job
 * stops. */
static void test_refuse_spent(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_job J;
	struct lrn_decision d;

	(void)state;
	lrnjob_init(&J, &s, 2, 2, "ref");
	lrnjob_start(&J, rows2, 0.0);
	lrn_sched_request(&J, &J.owners[0], 1.0, &d);
	assert_int_equal(lrnjob_pump(&J, 1.0, &sent, NULL), LRN_ACT_NONE);
	lrn_sched_refuse(&J, &J.owners[0], sent.qid[0], "budget exhausted", &d);
	assert_int_equal(d.act, LRN_ACT_PUMP);
	assert_true(J.owners[0].exhausted);
	assert_int_equal(J.inflight, 0);
	assert_null(lrnjob_query(&J, 0));
	lrnjob_leave(&J, 1);
	lrn_sched_spent(&J, &J.owners[1], &d);
	assert_int_equal(d.act, LRN_ACT_STOP);
	assert_non_null(strstr(d.why, "every owner has exhausted its budget at k=0 of T=10"));
	lrnjob_free(&J);
}

/* max-inflight > 1: queries overlap, each answer is applied at the point
 * its query was built on; staleness counts the updates of theta_L in
 * between (docs/learnerd.md §4). */
static void test_staleness(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_job J;
	struct lrn_decision d;
	struct lrn_query *qr;

	(void)state;
	s.max_inflight = 2;
	lrnjob_init(&J, &s, 3, 2, "stale");
	lrnjob_start(&J, rows3, 0.0);
	for (size_t i = 0; i < 3; i++)
		lrn_sched_request(&J, &J.owners[i], 1.0, &d);
	assert_int_equal(lrnjob_pump(&J, 1.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 2);   /* two slots */
	assert_int_equal(sent.owner[0], 0);
	assert_int_equal(sent.owner[1], 1);
	assert_int_equal(J.fifo_len, 1);
	lrnjob_answer(&J, 1, g2, 2.0, &d);     /* k 1 on the point of k 0 */
	assert_int_equal(lrnjob_pump(&J, 2.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 1);
	assert_int_equal(sent.owner[0], 2);
	/* Its point: (theta_L after k 1 + theta_3 = 0) / 2. */
	qr = lrnjob_query(&J, 2);
	assert_true(qr->bar[0] == J.theta_L[0] / 2 && qr->bar[1] == J.theta_L[1] / 2);
	assert_int_equal(qr->built_k, 1);
	lrnjob_answer(&J, 0, g1, 3.0, &d);     /* k 2 on the point of k 0: 1 stale */
	lrnjob_answer(&J, 2, g3, 4.0, &d);     /* k 3 on the point of k 1: 1 stale */
	assert_int_equal(J.k_done, 3);
	assert_true(trace_field(J.trace_path, 1, 6) == 0);
	assert_true(trace_field(J.trace_path, 2, 6) == 1);
	assert_true(trace_field(J.trace_path, 3, 6) == 1);
	lrnjob_free(&J);
}

/* min-owners: no query before that many owners are connected (exhausted
 * owners count wherever they are); the plan itself needs every owner's
 * first Hello. */
static void test_min_owners(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_job J;
	struct lrn_decision d;

	(void)state;
	s.min_owners = 2;
	lrnjob_init(&J, &s, 3, 2, "gate");
	for (size_t i = 0; i < 3; i++) {
		lrnjob_connect(&J, i, 0.0);
		lrnjob_hello(&J, i, rows3[i], 1.0, 0, 0, &d);
	}
	lrnjob_leave(&J, 1);
	lrnjob_leave(&J, 2);
	assert_int_equal(lrnjob_pump(&J, 1.0, NULL, NULL), LRN_ACT_NONE);
	assert_true(J.started);
	assert_false(J.gate_open);   /* 1 of 2 */
	lrn_sched_request(&J, &J.owners[0], 1.0, &d);
	assert_int_equal(lrnjob_pump(&J, 1.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 0);
	/* Owner 3 left with its budget spent: it counts, and the gate opens. */
	lrn_sched_spent(&J, &J.owners[2], &d);
	assert_int_equal(d.act, LRN_ACT_PUMP);
	assert_int_equal(lrnjob_pump(&J, 2.0, &sent, NULL), LRN_ACT_NONE);
	assert_true(J.gate_open);
	assert_int_equal(sent.n, 1);
	assert_int_equal(sent.owner[0], 0);
	assert_true(lrnjob_query(&J, 0)->wait == 1.0);
	lrnjob_free(&J);
}

/* The counters over owner flags (lrn_state_count: n_hello, n_ever_hello,
 * n_to_welcome, n_exhausted, n_exhausted_away), which the plan's start,
 * the gate, the Welcome search and the exhaustion check read instead of
 * scanning the owners
 * (docs/scale.md §5.1), equal a count over the owners after every event of
 * a long random sequence: connections, Hellos (some with no answers left,
 * some with answers left again), departures, spent lifetimes, requests and
 * the pump's Welcomes and queries.  The sequence is fixed (an LCG with a
 * fixed seed), so a failure replays. */
static void assert_counts(const struct lrn_job *J)
{
	size_t hello = 0, ever = 0, welcome = 0, exh = 0, away = 0, queued = 0;

	for (size_t i = 0; i < J->N; i++) {
		const struct lrn_owner *o = &J->owners[i];

		hello += o->hello;
		ever += o->ever_hello;
		welcome += o->connected && o->hello && !o->welcomed;
		exh += o->exhausted;
		away += o->exhausted && !o->hello;
	}
	assert_int_equal(J->n_hello, hello);
	assert_int_equal(J->n_ever_hello, ever);
	assert_int_equal(J->n_to_welcome, welcome);
	assert_int_equal(J->n_exhausted, exh);
	assert_int_equal(J->n_exhausted_away, away);
	for (size_t i = 0; i < J->N; i++)
		queued += J->owners[i].queued;
	assert_int_equal(J->fifo_len, queued);
}

static void test_counters(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_decision d;
	struct lrn_job J;
	uint64_t x = 20261129;
	size_t events[6] = { 0 };

	(void)state;
	s.T = 100000;
	lrnjob_init(&J, &s, 4, 2, "counters");
	for (int step = 0; step < 4000; step++) {
		struct lrn_owner *o;
		size_t i, e;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		i = (size_t)(x >> 33) % 4;
		e = (size_t)(x >> 40) % 6;
		o = &J.owners[i];
		switch (e) {
		case 0:
			if (o->connected)
				continue;
			lrnjob_connect(&J, i, step);
			break;
		case 1:   /* a Hello: answers left, none left, or left again */
			if (!o->connected || o->hello)
				continue;
			lrnjob_hello(&J, i, rows3[i % 3], 1.0, 5, (x >> 50) % 2 ? 0 : 5, &d);
			break;
		case 2:
			if (!o->connected)
				continue;
			lrnjob_leave(&J, i);
			break;
		case 3:
			lrn_sched_spent(&J, o, &d);
			break;
		case 4:
			if (o->welcomed)
				lrn_sched_request(&J, o, step, &d);
			break;
		default:   /* NONE, or STOP while every owner is exhausted */
			lrnjob_pump(&J, step, NULL, NULL);
			break;
		}
		events[e]++;
		assert_counts(&J);
	}
	/* Every kind of event happened, many times. */
	for (size_t e = 0; e < 6; e++)
		assert_true(events[e] > 100);
	lrnjob_free(&J);
}

/* The request FIFO, a ring of 2N entries where a withdrawn request stays as
 * a stale entry (docs/scale.md §5.1): 60 requests withdrawn (their owner
 * left and came back) fill the ring of 8 many times over, so it is
 * compacted again and again; then three requests, the middle one
 * withdrawn, are served oldest first with their own waiting times, the
 * withdrawn one never, and an owner that asked before, left and asked
 * again waits from its new request. */
static void test_fifo_ring(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_decision d;
	struct lrn_job J;

	(void)state;
	s.T = 100;
	lrnjob_init(&J, &s, 4, 2, "ring");
	for (size_t i = 0; i < 4; i++) {
		lrnjob_connect(&J, i, 0.0);
		lrnjob_hello(&J, i, 10, 1.0, 0, 0, &d);
	}
	assert_int_equal(lrnjob_pump(&J, 0.0, NULL, NULL), LRN_ACT_NONE);
	assert_int_equal(J.fifo_cap, 8);
	for (int r = 0; r < 60; r++) {
		size_t i = (size_t)r % 3 + 1;

		lrn_sched_request(&J, &J.owners[i], r, &d);
		assert_int_equal(d.act, LRN_ACT_PUMP);
		assert_int_equal(J.fifo_len, 1);
		lrnjob_leave(&J, i);
		assert_int_equal(J.fifo_len, 0);
		lrnjob_connect(&J, i, r);
		lrnjob_hello(&J, i, 10, 1.0, 0, 0, &d);
		assert_int_equal(lrnjob_pump(&J, r, &sent, NULL), LRN_ACT_NONE);
		assert_int_equal(sent.n, 0);
		assert_true(J.fifo_count <= J.fifo_cap);
	}
	/* Owner 4 asks at 99, leaves and comes back: its stale entry at the
	 * front must not serve its new request with the old time. */
	lrn_sched_request(&J, &J.owners[3], 99.0, &d);
	lrnjob_leave(&J, 3);
	lrnjob_connect(&J, 3, 99.5);
	lrnjob_hello(&J, 3, 10, 1.0, 0, 0, &d);
	assert_int_equal(lrnjob_pump(&J, 99.5, NULL, NULL), LRN_ACT_NONE);
	lrn_sched_request(&J, &J.owners[2], 100.0, &d);
	lrn_sched_request(&J, &J.owners[0], 101.0, &d);
	lrn_sched_request(&J, &J.owners[3], 102.0, &d);
	assert_int_equal(J.fifo_len, 3);
	lrnjob_leave(&J, 0);
	assert_int_equal(J.fifo_len, 2);
	assert_int_equal(lrnjob_pump(&J, 103.0, &sent, NULL), LRN_ACT_NONE);
	assert_true(sent.n == 1 && sent.owner[0] == 2);
	assert_true(lrnjob_query(&J, 2)->wait == 3.0);
	lrnjob_answer(&J, 2, g1, 104.0, &d);
	assert_int_equal(lrnjob_pump(&J, 104.0, &sent, NULL), LRN_ACT_NONE);
	assert_true(sent.n == 1 && sent.owner[0] == 3);
	assert_true(lrnjob_query(&J, 3)->wait == 2.0);
	lrnjob_answer(&J, 3, g1, 105.0, &d);
	assert_int_equal(lrnjob_pump(&J, 105.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 0);
	assert_int_equal(J.fifo_len, 0);
	lrnjob_free(&J);
}

/* A resumed job continues at the checkpoint's reserved query id and never
 * plans again; a block of ids used up forces a checkpoint that reserves
 * the next one before a query leaves (docs/learnerd.md §5). */
static void test_resume_reservation(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_job J, R;
	struct lrn_decision d;
	uint64_t reserved;

	(void)state;
	s.checkpoint_every = 5;
	lrnjob_init(&J, &s, 2, 2, "res");
	lrnjob_start(&J, rows2, 0.0);
	/* ids 1 .. 1 + 1024 + 2*5 + 64*2 reserved at the start. */
	assert_int_equal(J.qid_reserved, 1 + 1024 + 10 + 128);
	J.next_qid = J.qid_reserved;   /* as if the block were used up */
	lrn_sched_request(&J, &J.owners[0], 1.0, &d);
	assert_int_equal(lrnjob_pump(&J, 1.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.qid[0], 1163);
	assert_int_equal(J.qid_reserved, 1163 + 1024 + 10 + 128);
	lrnjob_answer(&J, 0, g1, 2.0, &d);
	reserved = J.qid_reserved;
	lrn_trace_close(&J);

	/* The same job in a new learner, from its checkpoint. */
	assert_int_equal(lrn_state_init(&R, &s, lrnjob_names, 2), 0);
	lrnjob_paths(&R, "res");
	assert_int_equal(lrn_checkpoint_load(&R), 0);
	assert_int_equal(lrn_trace_open(&R, true), 0);
	assert_int_equal(lrn_stats_init(&R), 0);
	assert_int_equal(lrn_sched_init(&R), 0);
	assert_true(R.started);
	assert_int_equal(R.k_done, 0);   /* the last checkpoint was before k 1 */
	assert_int_equal(R.next_qid, reserved);
	assert_int_equal(R.owners[0].planned_cap, J.owners[0].planned_cap);
	for (size_t i = 0; i < 2; i++) {
		lrnjob_connect(&R, i, 10.0);
		lrnjob_hello(&R, i, rows2[i], 1.0, 0, 1 - i, &d);
	}
	lrn_sched_request(&R, &R.owners[1], 10.0, &d);
	assert_int_equal(lrnjob_pump(&R, 11.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 1);
	assert_int_equal(sent.qid[0], reserved);
	assert_true(R.first_query == 11.0);
	lrnjob_free(&R);
	lrnjob_free(&J);
}

/* Claims with limits: another job's counters (a new job for the owner),
 * epsilon 1, what its lifetime leaves, theta-max 1e6. */
static struct lrn_claims left_claims(const struct lrn_job *J, uint64_t n_rows, double lifetime)
{
	struct lrn_claims c = lrnjob_claims(J, n_rows, 1.0, 0, 0);

	c.same_job = false;
	c.has_limits = true;
	c.epsilon_left = 0.5;   /* its last job's: not this one's */
	c.lifetime_left = lifetime;
	c.theta_max = 1e6;
	return c;
}

/* An owner with nothing left (docs/protocol.md §5 "Budget left and
 * bounds"): its Hello exhausts it with one line, and the job being a new
 * one for it, it is sent away with Goodbye BUDGET_SPENT (it exits 2); the
 * plan leaves it out and the others finish without a refusal.  Back with
 * nothing left it is sent away again; back with budget it is told the job
 * was planned without it (JOB_OVER). */
static void test_no_budget(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_job J;
	struct lrn_decision d;
	struct lrn_claims c;

	(void)state;
	lrnjob_init(&J, &s, 3, 2, "nob");
	for (size_t i = 0; i < 3; i++)
		lrnjob_connect(&J, i, 0.0);
	c = left_claims(&J, 60, 1e-9);   /* 1 nano-epsilon: a spent lifetime's residue */
	lrnjob_hello_claims(&J, 2, &c, &d);
	assert_int_equal(d.act, LRN_ACT_DROP);
	assert_ptr_equal(d.o, &J.owners[2]);
	assert_int_equal(d.goodbye, DPASYNC__GOODBYE_CODE__GOODBYE_BUDGET_SPENT);
	assert_string_equal(d.why, "owner owner-3 has no budget left for job test-job: its "
			    "lifetime budget left is 1e-09, below 0.001: no job can be answered "
			    "until its lifetime-epsilon is raised");
	assert_true(J.owners[2].exhausted);
	lrnjob_leave(&J, 2);
	c = left_claims(&J, 10, 0.1);   /* bank-c: 0.1 left, planned with it */
	lrnjob_hello_claims(&J, 0, &c, &d);
	assert_int_equal(d.act, LRN_ACT_PUMP);
	lrnjob_hello(&J, 1, 30, 1.0, 0, 0, &d);
	assert_int_equal(lrnjob_pump(&J, 1.0, NULL, NULL), LRN_ACT_NONE);
	assert_true(J.started && J.gate_open);   /* min-owners counts owner-3 as present */
	assert_true(J.owners[2].left_out && !J.owners[0].left_out);
	assert_int_equal(J.n_planned, 2);
	assert_int_equal(J.n_total, 40);
	assert_true(J.owners[0].eps_left == 0.1);
	assert_int_equal(J.owners[0].planned_cap, 6);   /* ceil(10 / 2 * 1.1) */
	for (uint64_t k = 0; k < 10; k++) {
		size_t i = k % 2;

		lrn_sched_request(&J, &J.owners[i], 2.0 + (double)k, &d);
		assert_int_equal(lrnjob_pump(&J, 2.0 + (double)k, &sent, NULL), LRN_ACT_NONE);
		assert_int_equal(sent.n, 1);
		assert_int_equal(sent.owner[0], i);
		lrnjob_answer(&J, i, g1, 2.5 + (double)k, &d);
	}
	assert_int_equal(lrnjob_pump(&J, 20.0, NULL, NULL), LRN_ACT_DONE);
	assert_true(dp_metrics_value(J.st.refusals) == 0);

	lrnjob_connect(&J, 2, 21.0);
	c = left_claims(&J, 60, 0);
	lrnjob_hello_claims(&J, 2, &c, &d);
	assert_int_equal(d.act, LRN_ACT_DROP);
	assert_int_equal(d.goodbye, DPASYNC__GOODBYE_CODE__GOODBYE_BUDGET_SPENT);
	lrnjob_leave(&J, 2);
	lrnjob_connect(&J, 2, 22.0);
	c = left_claims(&J, 60, 2);
	lrnjob_hello_claims(&J, 2, &c, &d);
	assert_int_equal(d.act, LRN_ACT_DROP);
	assert_int_equal(d.goodbye, DPASYNC__GOODBYE_CODE__GOODBYE_JOB_OVER);
	assert_string_equal(d.why, "job test-job was planned without owner owner-3 (it had no "
			    "budget left when the job started)");
	lrnjob_free(&J);
}

/* Nothing left for this very job (its own ledger is spent, e.g. a
 * restarted owner): exhausted, but it stays to the job's Done. */
static void test_no_budget_same_job(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_decision d;
	struct lrn_claims c;

	(void)state;
	lrnjob_init(&J, &s, 2, 2, "nbs");
	lrnjob_start(&J, rows2, 0.0);
	lrnjob_leave(&J, 0);
	lrnjob_connect(&J, 0, 1.0);
	c = left_claims(&J, 10, 0.0004);
	c.same_job = true;
	c.epsilon_left = 0.0004;
	c.answers_cap = 6;
	c.answers_given = 3;
	lrnjob_hello_claims(&J, 0, &c, &d);
	assert_int_equal(d.act, LRN_ACT_PUMP);
	assert_true(J.owners[0].exhausted && !J.owners[0].left_out);
	assert_int_equal(lrnjob_pump(&J, 1.0, NULL, NULL), LRN_ACT_NONE);
	assert_true(J.owners[0].welcomed);   /* stays, to be sent Done */
	lrn_sched_request(&J, &J.owners[0], 2.0, &d);
	assert_int_equal(d.act, LRN_ACT_NONE);   /* never asked */
	lrnjob_free(&J);
}

/* No query outside the bound an owner stated: sync1 has no box, and a
 * query past an owner's theta-max stops the job instead of being sent. */
static void test_theta_bound(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_decision d;

	(void)state;
	s.mode = LRN_MODE_SYNC1;
	s.eta = 0;
	s.rho = 1;
	lrnjob_init(&J, &s, 2, 2, "tb");
	lrnjob_start(&J, rows2, 0.0);
	assert_int_equal(lrnjob_pump(&J, 1.0, NULL, NULL), LRN_ACT_NONE);
	J.owners[1].theta_bound = 20;   /* above the job's theta-max 10 */
	lrnjob_answer(&J, 0, g1, 1.5, &d);
	lrnjob_answer(&J, 1, g2, 1.5, &d);
	J.theta_L[1] = -25;   /* where sync1's unboxed step could go */
	assert_int_equal(lrnjob_pump(&J, 2.0, NULL, &d), LRN_ACT_STOP);
	assert_string_equal(d.why, "theta[1] = -25 of the next query to owner owner-2 is outside "
			    "its bound theta-max 20: it would refuse it");
	lrnjob_free(&J);
}

/* A started job without a fingerprint (a version-1 checkpoint) learns it
 * from a majority of its owners, never from the first Hello: owner-3,
 * misconfigured, says Hello first and waits; owner-1 and owner-2 agree,
 * are welcomed, and owner-3 is refused (SCHEMA_MISMATCH). */
static void test_learn_schema(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_decision d;
	const uint64_t rows[] = { 10, 30, 60 };

	(void)state;
	lrnjob_init(&J, &s, 3, 2, "ls");
	lrnjob_start(&J, rows, 0.0);
	for (size_t i = 0; i < 3; i++)
		lrnjob_leave(&J, i);
	J.schema_fp[0] = '\0';
	lrnjob_connect(&J, 2, 1.0);
	snprintf(J.owners[2].schema, sizeof(J.owners[2].schema), "sha256:bad");
	lrnjob_hello(&J, 2, 60, 1.0, 0, 0, &d);
	assert_int_equal(lrnjob_pump(&J, 1.0, NULL, NULL), LRN_ACT_NONE);
	assert_false(J.owners[2].welcomed);   /* waits: one owner is no majority */
	assert_string_equal(J.schema_fp, "");
	lrnjob_connect(&J, 0, 2.0);
	snprintf(J.owners[0].schema, sizeof(J.owners[0].schema), "sha256:good");
	lrnjob_hello(&J, 0, 10, 1.0, 0, 0, &d);
	assert_int_equal(lrnjob_pump(&J, 2.0, NULL, NULL), LRN_ACT_NONE);
	assert_false(J.owners[0].welcomed || J.owners[2].welcomed);   /* 1 against 1 */
	lrnjob_connect(&J, 1, 3.0);
	snprintf(J.owners[1].schema, sizeof(J.owners[1].schema), "sha256:good");
	lrnjob_hello(&J, 1, 30, 1.0, 0, 0, &d);
	lrn_sched_next(&J, 3.0, &d);
	assert_string_equal(J.schema_fp, "sha256:good");
	assert_string_equal(J.schema_from, "owner-1");
	assert_int_equal(d.act, LRN_ACT_WELCOME);
	assert_ptr_equal(d.o, &J.owners[0]);
	lrnjob_welcomed(&J, d.o);
	lrn_sched_next(&J, 3.0, &d);
	assert_int_equal(d.act, LRN_ACT_WELCOME);
	assert_ptr_equal(d.o, &J.owners[1]);
	lrnjob_welcomed(&J, d.o);
	lrn_sched_next(&J, 3.0, &d);
	assert_int_equal(d.act, LRN_ACT_DROP);
	assert_ptr_equal(d.o, &J.owners[2]);
	assert_int_equal(d.goodbye, DPASYNC__GOODBYE_CODE__GOODBYE_SCHEMA_MISMATCH);
	assert_non_null(strstr(d.why, "schema mismatch: owner owner-3 has schema sha256:bad... but "
			       "the job's (from owner owner-1) is sha256:good..."));
	lrnjob_free(&J);
}

/* A resumed job that had reached k == T is done at once. */
static void test_resume_done(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_decision d;

	(void)state;
	s.T = 2;
	lrnjob_init(&J, &s, 2, 2, "fin");
	lrnjob_start(&J, rows2, 0.0);
	for (int k = 0; k < 2; k++) {
		lrn_sched_request(&J, &J.owners[0], 1.0, &d);
		assert_int_equal(lrnjob_pump(&J, 1.0, NULL, NULL), LRN_ACT_NONE);
		lrnjob_answer(&J, 0, g1, 1.5, &d);
	}
	assert_int_equal(lrnjob_pump(&J, 2.0, NULL, NULL), LRN_ACT_DONE);
	assert_int_equal(lrn_checkpoint_save(&J, true), 0);
	lrnjob_free(&J);
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	lrnjob_paths(&J, "fin");
	assert_int_equal(lrn_checkpoint_load(&J), 0);
	assert_int_equal(lrn_stats_init(&J), 0);
	assert_int_equal(lrn_sched_init(&J), 0);
	assert_int_equal(lrnjob_pump(&J, 0.0, NULL, &d), LRN_ACT_DONE);
	lrnjob_free(&J);
}

/* Broadcast: each round asks the idle owners in turn up to max-inflight;
 * the next round starts after the last owner asked; requests are ignored. */
static void test_broadcast(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_job J;
	struct lrn_decision d;

	(void)state;
	s.mode = LRN_MODE_BROADCAST;
	s.max_inflight = 2;
	lrnjob_init(&J, &s, 3, 2, "bc");
	assert_false(lrn_sched_round(&J));   /* nothing to serve yet */
	lrnjob_start(&J, rows3, 0.0);
	lrn_sched_request(&J, &J.owners[0], 1.0, &d);
	assert_int_equal(d.act, LRN_ACT_NONE);
	assert_true(lrn_sched_round(&J));
	assert_int_equal(lrnjob_pump(&J, 1.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 2);
	assert_int_equal(sent.owner[0], 0);
	assert_int_equal(sent.owner[1], 1);
	assert_true(lrnjob_query(&J, 0)->wait == 0.0);
	assert_false(J.round);
	assert_int_equal(J.bcast_next, 2);
	lrnjob_answer(&J, 0, g1, 1.5, &d);
	/* Owner 2 still has its query out: room for one, owner 3. */
	assert_true(lrn_sched_round(&J));
	assert_int_equal(lrnjob_pump(&J, 2.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 1);
	assert_int_equal(sent.owner[0], 2);
	lrnjob_answer(&J, 1, g2, 2.5, &d);
	lrnjob_answer(&J, 2, g3, 2.5, &d);
	assert_true(lrn_sched_round(&J));
	assert_int_equal(lrnjob_pump(&J, 3.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 2);
	assert_int_equal(sent.owner[0], 0);
	assert_int_equal(sent.owner[1], 1);
	lrnjob_free(&J);
}

/* theta <- theta - (step / k) (2 lambda theta + agg), docs/design.md §5. */
static void sync1_step(double *theta, double step, double k, const double *agg)
{
	for (int q = 0; q < 2; q++)
		theta[q] -= step / k * (2 * 0.01 * theta[q] + agg[q]);
}

/* Sync rounds: every owner is asked at theta[k], the round closes with the
 * last answer (the step taken, rounds.csv written) and the next one
 * starts; T - 1 rounds make theta[T] and end the job. */
static void test_sync_rounds(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_job J;
	struct lrn_decision d;
	double theta[2] = { 0, 0 }, agg[2];

	(void)state;
	s.mode = LRN_MODE_SYNC1;
	s.eta = 0;
	s.rho = 1;
	s.T = 4;
	lrnjob_init(&J, &s, 2, 2, "sync");
	lrnjob_start(&J, rows2, 10.0);   /* its pump starts round 1 at 10 */
	assert_true(J.step == 1.0 / 16);   /* rho / T^2 */
	for (uint64_t r = 1; r <= 3; r++) {
		if (r > 1) {
			assert_int_equal(lrnjob_pump(&J, 10.0 * (double)r, &sent, NULL),
					 LRN_ACT_NONE);
			assert_int_equal(sent.n, 2);
		}
		assert_int_equal(J.sync_round, r);
		assert_int_equal(J.inflight, 2);
		assert_true(lrnjob_query(&J, 1)->bar[0] == theta[0]);
		lrnjob_answer(&J, 1, g2, 10.0 * (double)r + 1, &d);
		assert_int_equal(d.act, LRN_ACT_PUMP);
		assert_int_equal(J.k_done, r - 1);   /* open until the last answer */
		lrnjob_answer(&J, 0, g1, 10.0 * (double)r + 3, &d);
		assert_int_equal(d.act, LRN_ACT_PUMP);
		assert_int_equal(J.k_done, r);
		/* w = 10/40, 30/40 */
		agg[0] = 0.25 * g1[0] + 0.75 * g2[0];
		agg[1] = 0.25 * g1[1] + 0.75 * g2[1];
		sync1_step(theta, 1.0 / 16, (double)r, agg);
		assert_true(fabs(J.theta_L[0] - theta[0]) <= 1e-15);
		assert_true(fabs(J.theta_L[1] - theta[1]) <= 1e-15);
	}
	assert_int_equal(J.answers, 6);
	assert_int_equal(lrnjob_pump(&J, 50.0, NULL, NULL), LRN_ACT_DONE);
	lrn_trace_close(&J);
	/* rounds.csv: round 2 took 3 s (sent at 20, last answer at 23), used
	 * 2 answers, trace rows 3..4, slowest owner-1 (3 s). */
	assert_int_equal(lines(J.rounds_path), 1 + 3);
	assert_true(trace_field(J.rounds_path, 2, 0) == 2);
	assert_true(trace_field(J.rounds_path, 2, 2) == 3.0);
	assert_true(trace_field(J.rounds_path, 2, 3) == 2);
	assert_true(trace_field(J.rounds_path, 2, 4) == 3);
	assert_true(trace_field(J.rounds_path, 2, 5) == 4);
	assert_true(trace_field(J.rounds_path, 2, 7) == 3.0);
	lrnjob_free(&J);
}

/* A quorum closes a round at its first Q answers, reweighted by their
 * rows; a late answer to a closed round is its owner's answer in the
 * current round, stale (trace column staleness), and the owner is not
 * asked again in it; an overdue round stops the job naming who is
 * missing. */
static void test_sync_quorum_timeout(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_job J;
	struct lrn_decision d;
	double theta[2] = { 0, 0 }, agg[2];

	(void)state;
	s.mode = LRN_MODE_SYNC1;
	s.eta = 0;
	s.rho = 1;
	s.T = 5;
	s.round_quorum = 2;
	s.round_timeout = 5;
	lrnjob_init(&J, &s, 3, 2, "quorum");
	lrnjob_start(&J, rows3, 1.0);   /* round 1 asks all three at 1 */
	assert_int_equal(J.inflight, 3);
	lrnjob_answer(&J, 2, g3, 1.5, &d);
	lrnjob_answer(&J, 0, g1, 2.0, &d);
	assert_int_equal(J.k_done, 1);
	/* rows 10 and 60 answered: w = 10/70, 60/70. */
	agg[0] = 10.0 / 70 * g1[0] + 60.0 / 70 * g3[0];
	agg[1] = 10.0 / 70 * g1[1] + 60.0 / 70 * g3[1];
	sync1_step(theta, 1.0 / 25, 1, agg);
	assert_true(fabs(J.theta_L[0] - theta[0]) <= 1e-15);
	assert_true(fabs(J.theta_L[1] - theta[1]) <= 1e-15);
	assert_int_equal(lrnjob_pump(&J, 3.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 2);   /* owner 2's round-1 query is still out */
	lrnjob_answer(&J, 1, g2, 3.5, &d);   /* for round 1: round 2's, stale by 1 */
	assert_int_equal(d.act, LRN_ACT_PUMP);
	assert_int_equal(J.answers, 3);
	assert_int_equal(J.round_got, 1);
	assert_true(J.owners[1].round_has);
	assert_true(trace_field(J.trace_path, 3, 6) == 1);   /* row k = 3, staleness */
	assert_true(trace_field(J.trace_path, 2, 6) == 0);
	assert_int_equal(lrnjob_pump(&J, 4.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 0);   /* owner 2 is not asked again */
	lrn_sched_expired(&J, 7.9, &d);   /* round 2 started at 3 */
	assert_int_equal(d.act, LRN_ACT_NONE);
	lrnjob_leave(&J, 2);
	lrn_sched_expired(&J, 8.0, &d);
	assert_int_equal(d.act, LRN_ACT_STOP);
	assert_string_equal(d.why, "round 2 of 4 not complete after 5.0s (round-timeout): 1 of 3 "
			    "owners answered, 2 needed; missing: owner-1 owner-3(away)");
	lrnjob_free(&J);
}

/* A sync job of 3 rounds (T = 4) whose owner-2 restarts in round 2 and,
 * back, reports one answer more than it gave (the share its ledger had
 * reserved ahead, forfeited: docs/ledger.md §9 "Sync jobs").  slack 1:
 * K_i = T - 1 + 1 = 4, owner-2 is asked in round 3 and the job is done;
 * slack 0: K_i = 3, owner-2 has given its last answer in round 2 and
 * round 3 asks owner-1 alone (the job cannot finish). */
static void sync_restart(uint64_t slack)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_claims c;
	struct lrn_job J;
	struct lrn_decision d;

	s.mode = LRN_MODE_SYNC1;
	s.eta = 0;
	s.rho = 1;
	s.T = 4;
	s.restart_slack = slack;
	lrnjob_init(&J, &s, 2, 2, "syncrestart");
	lrnjob_start(&J, rows2, 1.0);
	assert_int_equal(J.owners[0].planned_cap, 3 + slack);
	assert_int_equal(J.owners[1].planned_cap, 3 + slack);
	lrnjob_answer(&J, 0, g1, 1.5, &d);
	lrnjob_answer(&J, 1, g2, 1.5, &d);
	assert_int_equal(J.k_done, 1);
	assert_int_equal(lrnjob_pump(&J, 2.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 2);
	lrnjob_answer(&J, 0, g1, 2.5, &d);
	lrnjob_leave(&J, 1);                   /* stopped: its reservation is lost */
	lrnjob_connect(&J, 1, 3.0);
	c = lrnjob_claims(&J, rows2[1], 1.0, 3 + slack, 2);
	c.own_cap = 0;                         /* the cap of its job ledger, K_i */
	lrnjob_hello_claims(&J, 1, &c, &d);
	assert_int_equal(lrnjob_pump(&J, 3.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, 1);           /* asked again in round 2 */
	assert_int_equal(sent.owner[0], 1);
	lrnjob_answer(&J, 1, g2, 3.5, &d);
	assert_int_equal(J.k_done, 2);
	assert_int_equal(lrnjob_pump(&J, 4.0, &sent, NULL), LRN_ACT_NONE);
	assert_int_equal(sent.n, slack > 0 ? 2 : 1);
	assert_int_equal(J.owners[1].exhausted, slack == 0);
	if (slack > 0) {
		lrnjob_answer(&J, 0, g1, 4.5, &d);
		lrnjob_answer(&J, 1, g2, 4.5, &d);
		assert_int_equal(J.k_done, 3);
		assert_int_equal(lrnjob_pump(&J, 5.0, NULL, NULL), LRN_ACT_DONE);
		assert_int_equal(J.owners[1].answers_given, 4);   /* its K_i */
	}
	lrnjob_free(&J);
}

static void test_sync_restart(void **state)
{
	(void)state;
	sync_restart(1);
	sync_restart(0);
}

/* Strict sync needs every owner in every round: a refusal stops it. */
static void test_sync_refuse(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_decision d;

	(void)state;
	s.mode = LRN_MODE_SYNC2;
	s.eta = 0;
	s.c = 0.5;
	lrnjob_init(&J, &s, 2, 2, "syncref");
	lrnjob_start(&J, rows2, 0.0);   /* round 1 asked */
	lrn_sched_refuse(&J, &J.owners[1], lrnjob_query(&J, 1)->qid, "budget exhausted", &d);
	assert_int_equal(d.act, LRN_ACT_STOP);
	assert_string_equal(d.why, "owner owner-2 refused round 1 (budget exhausted): a sync round "
			    "needs every owner");
	lrnjob_free(&J);
}

/* A query unanswered for query-timeout, and an admitted connection
 * without a Hello for hello-timeout, are dropped with the reason; an owner
 * away is not reported again. */
static void test_expiry(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrnjob_sent sent;
	struct lrn_job J;
	struct lrn_decision d;

	(void)state;
	lrnjob_init(&J, &s, 2, 2, "exp");
	lrnjob_start(&J, rows2, 0.0);
	lrn_sched_request(&J, &J.owners[0], 100.0, &d);
	assert_int_equal(lrnjob_pump(&J, 100.0, &sent, NULL), LRN_ACT_NONE);
	lrn_sched_expired(&J, 109.99, &d);
	assert_int_equal(d.act, LRN_ACT_NONE);
	lrn_sched_expired(&J, 110.0, &d);
	assert_int_equal(d.act, LRN_ACT_DROP);
	assert_ptr_equal(d.o, &J.owners[0]);
	assert_int_equal(d.goodbye, 0);
	assert_string_equal(d.why, "query k=1 not answered within 10s");
	lrnjob_leave(&J, 0);
	assert_int_equal(J.inflight, 0);
	lrn_sched_expired(&J, 200.0, &d);
	assert_int_equal(d.act, LRN_ACT_NONE);

	lrnjob_connect(&J, 0, 300.0);   /* back, and silent */
	lrn_sched_expired(&J, 309.99, &d);
	assert_int_equal(d.act, LRN_ACT_NONE);
	lrn_sched_expired(&J, 310.0, &d);
	assert_int_equal(d.act, LRN_ACT_DROP);
	assert_ptr_equal(d.o, &J.owners[0]);
	assert_string_equal(d.why, "no Hello within hello-timeout");
	lrnjob_free(&J);
}

/* idle-timeout: no owner could be queried for that long stops the job,
 * naming those that never said Hello; a usable owner resets the clock. */
static void test_idle(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_decision d;

	(void)state;
	s.idle_timeout = 5;
	lrnjob_init(&J, &s, 3, 2, "idle");
	lrnjob_connect(&J, 0, 0.0);
	lrnjob_hello(&J, 0, 10, 1.0, 0, 0, &d);
	lrnjob_connect(&J, 1, 0.0);
	assert_int_equal(lrnjob_pump(&J, 0.0, NULL, NULL), LRN_ACT_NONE);
	assert_int_equal(lrnjob_pump(&J, 4.99, NULL, NULL), LRN_ACT_NONE);
	assert_int_equal(lrnjob_pump(&J, 5.0, NULL, &d), LRN_ACT_STOP);
	assert_string_equal(d.why, "no owner could be queried for 5.0s (idle-timeout) at k=0 of "
			    "T=10: 1 connected, 1 away, 0 exhausted; never said Hello: owner-2 "
			    "owner-3");
	lrnjob_free(&J);

	lrnjob_init(&J, &s, 2, 2, "idle2");
	lrnjob_start(&J, rows2, 10.0);
	assert_true(J.stall_since < 0);   /* usable owners: not stalled */
	lrnjob_leave(&J, 0);
	lrnjob_leave(&J, 1);
	assert_int_equal(lrnjob_pump(&J, 11.0, NULL, NULL), LRN_ACT_NONE);
	assert_true(J.stall_since == 11.0);
	lrnjob_connect(&J, 1, 12.0);
	lrnjob_hello(&J, 1, 30, 1.0, 0, 0, &d);
	assert_int_equal(lrnjob_pump(&J, 12.0, NULL, NULL), LRN_ACT_NONE);   /* Welcome */
	assert_true(J.stall_since < 0);
	lrnjob_leave(&J, 1);
	assert_int_equal(lrnjob_pump(&J, 13.0, NULL, NULL), LRN_ACT_NONE);
	assert_int_equal(lrnjob_pump(&J, 18.0, NULL, &d), LRN_ACT_STOP);
	assert_string_equal(d.why, "no owner could be queried for 5.0s (idle-timeout) at k=0 of "
			    "T=10: 0 connected, 2 away, 0 exhausted");
	lrnjob_free(&J);
}

/* p not configured: fixed at the n_features most Hellos said; an owner
 * that differs is dropped with Goodbye BAD_DATA and waited for again.
 * Schema fingerprints are agreed on the same way (SCHEMA_MISMATCH). */
static void test_agree(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_decision d;
	const uint32_t pf[3] = { 3, 4, 3 };

	(void)state;
	lrnjob_init(&J, &s, 3, 0, "agree");
	for (size_t i = 0; i < 3; i++) {
		lrnjob_connect(&J, i, 0.0);
		lrnjob_hello(&J, i, rows3[i], 1.0, 0, 0, &d);
		J.owners[i].n_features = pf[i];
		snprintf(J.owners[i].schema, sizeof(J.owners[i].schema), "%s",
			 i == 0 ? "sha256:bb" : "sha256:aa");
	}
	lrn_sched_next(&J, 1.0, &d);
	assert_int_equal(d.act, LRN_ACT_DROP);
	assert_ptr_equal(d.o, &J.owners[1]);
	assert_int_equal(d.goodbye, DPASYNC__GOODBYE_CODE__GOODBYE_BAD_DATA);
	assert_non_null(strstr(d.why, "Hello n_features 4 differs from p = 3 said by 2 of the 3 "
			       "owners"));
	assert_false(J.owners[1].ever_hello);
	lrnjob_leave(&J, 1);
	assert_int_equal(lrnjob_pump(&J, 1.0, NULL, NULL), LRN_ACT_NONE);
	assert_int_equal(J.p, 0);   /* waits for owner 2 again */
	lrnjob_connect(&J, 1, 2.0);
	lrnjob_hello(&J, 1, 30, 1.0, 0, 0, &d);
	J.owners[1].n_features = 3;
	snprintf(J.owners[1].schema, sizeof(J.owners[1].schema), "sha256:aa");
	lrn_sched_next(&J, 2.0, &d);
	assert_int_equal(J.p, 3);
	/* Schemas: aa twice, bb once: owner 1 is the odd one. */
	assert_int_equal(d.act, LRN_ACT_DROP);
	assert_ptr_equal(d.o, &J.owners[0]);
	assert_int_equal(d.goodbye, DPASYNC__GOODBYE_CODE__GOODBYE_SCHEMA_MISMATCH);
	assert_non_null(strstr(d.why, "schema mismatch: owner owner-1 has schema sha256:bb"));
	lrnjob_leave(&J, 0);
	lrnjob_connect(&J, 0, 3.0);
	lrnjob_hello(&J, 0, 10, 1.0, 0, 0, &d);
	snprintf(J.owners[0].schema, sizeof(J.owners[0].schema), "sha256:aa");
	assert_int_equal(lrnjob_pump(&J, 3.0, NULL, NULL), LRN_ACT_NONE);
	assert_true(J.started);
	assert_string_equal(J.schema_fp, "sha256:aa");
	assert_string_equal(J.schema_from, "owner-1");   /* the first of the most */
	lrnjob_free(&J);
}

/* Owners' Hellos carry what their fingerprint is of (docs/protocol.md §5
 * "Schema summary"): a refused owner is told what differs in words, by the
 * summary of the owners it disagrees with, before the job starts and after
 * (then by the job's, which the learner keeps once agreed on). */
static void set_summary(struct lrn_owner *o, const char *fp, const char *target, double scale)
{
	Dpasync__FeatureSummary f = DPASYNC__FEATURE_SUMMARY__INIT;
	Dpasync__FeatureSummary *fs[1] = { &f };
	Dpasync__SchemaSummary sum = DPASYNC__SCHEMA_SUMMARY__INIT;

	f.name = "carat";
	f.kind = "numeric";
	f.scale = scale;
	f.digest = "0123456789abcdef";
	sum.features = fs;
	sum.n_features = 1;
	sum.target = (char *)target;
	snprintf(o->schema, sizeof(o->schema), "%s", fp);
	assert_int_equal(lrn_state_keep_summary(o, &sum), 0);
}

static void test_agree_in_words(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_decision d;

	(void)state;
	lrnjob_init(&J, &s, 3, 1, "words");
	for (size_t i = 0; i < 3; i++) {
		lrnjob_connect(&J, i, 0.0);
		lrnjob_hello(&J, i, rows3[i], 1.0, 0, 0, &d);
		J.owners[i].n_features = 1;
		set_summary(&J.owners[i], i == 0 ? "sha256:bb" : "sha256:aa", i == 0 ? "y" : "price",
			    2.1);
	}
	lrn_sched_next(&J, 1.0, &d);
	assert_int_equal(d.act, LRN_ACT_DROP);
	assert_ptr_equal(d.o, &J.owners[0]);
	assert_int_equal(d.goodbye, DPASYNC__GOODBYE_CODE__GOODBYE_SCHEMA_MISMATCH);
	assert_non_null(strstr(d.why, "; it differs in target 'y' vs 'price'"));
	lrnjob_leave(&J, 0);
	lrnjob_connect(&J, 0, 2.0);
	lrnjob_hello(&J, 0, 10, 1.0, 0, 0, &d);
	set_summary(&J.owners[0], "sha256:aa", "price", 2.1);
	assert_int_equal(lrnjob_pump(&J, 2.0, NULL, NULL), LRN_ACT_NONE);
	assert_true(J.started);
	/* Agreed: the job keeps one summary, the owners none. */
	assert_non_null(J.schema_sum);
	for (size_t i = 0; i < 3; i++)
		assert_null(J.owners[i].schema_sum);
	/* What model.json will name: the job's target and features. */
	{
		Dpasync__SchemaSummary *sum = lrn_state_job_summary(&J);
		char **names = NULL, *target = NULL;

		assert_non_null(sum);
		lrn_state_summary_names(&J, sum, &names, &target);
		assert_non_null(names);
		assert_string_equal(names[0], "carat");
		assert_string_equal(target, "price");
		free(names);
		/* A name a Hello may have changed is not written. */
		sum->features[0]->name[2] = '?';
		lrn_state_summary_names(&J, sum, &names, &target);
		assert_null(names);
		assert_null(target);
		dpasync__schema_summary__free_unpacked(sum, NULL);
	}
	/* Owner 3 comes back with its data scaled otherwise. */
	lrnjob_leave(&J, 2);
	lrnjob_connect(&J, 2, 3.0);
	lrnjob_hello(&J, 2, 60, 1.0, 0, 0, &d);
	set_summary(&J.owners[2], "sha256:cc", "price", 1.7);
	lrn_sched_next(&J, 3.0, &d);
	assert_int_equal(d.act, LRN_ACT_DROP);
	assert_ptr_equal(d.o, &J.owners[2]);
	assert_non_null(strstr(d.why, "; it differs in feature 1 'carat': scale 1.7 vs 2.1"));
	lrnjob_free(&J);
}

/* checkpoint-every C: a checkpoint after every C iterations; a failed
 * trace or checkpoint write stops the job with the reason. */
static void test_checkpoint_every_and_failures(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_decision d;
	char *text;

	(void)state;
	s.checkpoint_every = 2;
	lrnjob_init(&J, &s, 2, 2, "every");
	lrnjob_start(&J, rows2, 0.0);
	for (int k = 0; k < 3; k++) {
		lrn_sched_request(&J, &J.owners[0], 1.0, &d);
		assert_int_equal(lrnjob_pump(&J, 1.0, NULL, NULL), LRN_ACT_NONE);
		lrnjob_answer(&J, 0, g1, 1.5, &d);
		assert_int_equal(d.act, LRN_ACT_PUMP);
	}
	text = lrnjob_slurp(J.ckpt_path);
	assert_non_null(strstr(text, "\"k_done\":2"));
	free(text);

	/* A checkpoint that cannot be written: the next due one stops it. */
	free(J.ckpt_path);
	J.ckpt_path = strdup(path_of("no-such-dir/checkpoint.json"));
	lrn_sched_request(&J, &J.owners[0], 2.0, &d);
	assert_int_equal(lrnjob_pump(&J, 2.0, NULL, NULL), LRN_ACT_NONE);
	lrnjob_answer(&J, 0, g1, 2.5, &d);
	assert_int_equal(d.act, LRN_ACT_STOP);
	assert_non_null(strstr(d.why, "checkpoint: "));
	lrnjob_free(&J);

	/* A trace row that cannot be written. */
	lrnjob_init(&J, &s, 2, 2, "tracefail");
	lrnjob_start(&J, rows2, 0.0);
	fclose(J.trace);
	J.trace = fopen("/dev/full", "w");
	assert_non_null(J.trace);
	lrn_sched_request(&J, &J.owners[0], 1.0, &d);
	assert_int_equal(lrnjob_pump(&J, 1.0, NULL, NULL), LRN_ACT_NONE);
	lrnjob_answer(&J, 0, g1, 1.5, &d);
	assert_int_equal(d.act, LRN_ACT_STOP);
	assert_non_null(strstr(d.why, "trace: "));
	assert_true(J.io_failed);
	/* Fail-stop: no query may reserve ids past the last good checkpoint. */
	J.next_qid = J.qid_reserved;
	lrn_sched_request(&J, &J.owners[1], 2.0, &d);
	assert_int_equal(lrnjob_pump(&J, 2.0, NULL, &d), LRN_ACT_STOP);
	assert_non_null(strstr(d.why, "checkpoint failed: "));
	lrnjob_free(&J);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_welcome_gate),
		cmocka_unit_test(test_request_caps_done),
		cmocka_unit_test(test_exhausted),
		cmocka_unit_test(test_no_budget),
		cmocka_unit_test(test_no_budget_same_job),
		cmocka_unit_test(test_theta_bound),
		cmocka_unit_test(test_learn_schema),
		cmocka_unit_test(test_refuse_spent),
		cmocka_unit_test(test_staleness),
		cmocka_unit_test(test_min_owners),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_fifo_ring),
		cmocka_unit_test(test_resume_reservation),
		cmocka_unit_test(test_resume_done),
		cmocka_unit_test(test_broadcast),
		cmocka_unit_test(test_sync_rounds),
		cmocka_unit_test(test_sync_quorum_timeout),
		cmocka_unit_test(test_sync_refuse),
		cmocka_unit_test(test_sync_restart),
		cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_agree),
		cmocka_unit_test(test_agree_in_words),
		cmocka_unit_test(test_checkpoint_every_and_failures),
	};
	int rc;

	dp_log_set_level(DP_LOG_ERROR);
	tmpdir_setup("dp_test_sched");
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	tmpdir_teardown();
	return rc;
}
