/* SPDX-License-Identifier: Apache-2.0 */
/* Framing (4-byte big-endian length + Envelope), the incremental decoder
 * and message validation.  Expected encodings are written out by hand from
 * the protobuf wire format, not produced by the code under test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/net/frame.h"

/* ---- hand-made frames ---------------------------------------------------- */

/* Envelope{version=1, update_request={}}:
 *   field 1 varint: 08 01; field 4 length-delimited, empty: 22 00. */
static const uint8_t frame_update[] = { 0, 0, 0, 4, 0x08, 0x01, 0x22, 0x00 };

/* Envelope{version=1, query={k=2, theta=[1.0]}}:
 *   Query = 08 02 | 12 08 <1.0 little-endian: 00 00 00 00 00 00 f0 3f> (12 bytes)
 *   Envelope = 08 01 | 2a 0c <Query>                                  (16 bytes) */
static const uint8_t frame_query[] = {
	0, 0, 0, 16, 0x08, 0x01, 0x2a, 0x0c, 0x08, 0x02, 0x12, 0x08,
	0, 0, 0, 0, 0, 0, 0xf0, 0x3f,
};

static void test_encode_known_bytes(void **state)
{
	Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
	Dpasync__UpdateRequest u = DPASYNC__UPDATE_REQUEST__INIT;
	Dpasync__Query q = DPASYNC__QUERY__INIT;
	double th[1] = { 1.0 };
	uint8_t *buf;
	size_t len;

	e.version = 1;
	e.msg_case = DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST;
	e.update_request = &u;
	assert_int_equal(dp_frame_encode(&e, 0, &buf, &len), 0);
	assert_int_equal(len, sizeof(frame_update));
	assert_memory_equal(buf, frame_update, len);
	free(buf);

	q.k = 2;
	q.n_theta = 1;
	q.theta = th;
	e.msg_case = DPASYNC__ENVELOPE__MSG_QUERY;
	e.query = &q;
	assert_int_equal(dp_frame_encode(&e, 0, &buf, &len), 0);
	assert_int_equal(len, sizeof(frame_query));
	assert_memory_equal(buf, frame_query, len);
	free(buf);

	/* Body of exactly max_len is fine, one byte less is not. */
	assert_int_equal(dp_frame_encode(&e, 16, &buf, &len), 0);
	free(buf);
	buf = (uint8_t *)"untouched";
	assert_int_equal(dp_frame_encode(&e, 15, &buf, &len), DP_ERANGE);
	assert_string_equal((char *)buf, "untouched");
	/* Nothing set at all packs to zero bytes: not a valid frame. */
	{
		Dpasync__Envelope empty = DPASYNC__ENVELOPE__INIT;

		assert_int_equal(dp_frame_encode(&empty, 0, &buf, &len), DP_ERANGE);
	}
}

/* ---- a stream of several frames ------------------------------------------ */

static double grad[3] = { 0.25, -1.5, 3.0 };
static double fin[3] = { 1.0, 2.0, -3.0 };

static uint8_t *build_stream(size_t *len)
{
	Dpasync__Hello h = DPASYNC__HELLO__INIT;
	Dpasync__Answer a = DPASYNC__ANSWER__INIT;
	Dpasync__Done d = DPASYNC__DONE__INIT;
	Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
	uint8_t *s, *b;
	size_t n, off = 0;

	s = malloc(4096);
	assert_non_null(s);
	memcpy(s + off, frame_update, sizeof(frame_update));
	off += sizeof(frame_update);
	memcpy(s + off, frame_query, sizeof(frame_query));
	off += sizeof(frame_query);

	e.version = 1;
	h.version = 1;
	h.owner_id = "owner-1";
	h.n_rows = 10;
	h.n_features = 3;
	h.epsilon = 0.5;
	h.rate = 2.5;
	h.answers_cap = 40;
	e.msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
	e.hello = &h;
	assert_int_equal(dp_frame_encode(&e, 0, &b, &n), 0);
	memcpy(s + off, b, n);
	off += n;
	free(b);

	a.k = 7;
	a.n_gradient = 3;
	a.gradient = grad;
	a.epsilon_spent = 0.1;
	a.epsilon_left = 0.4;
	a.answers_given = 1;
	e.msg_case = DPASYNC__ENVELOPE__MSG_ANSWER;
	e.answer = &a;
	assert_int_equal(dp_frame_encode(&e, 0, &b, &n), 0);
	memcpy(s + off, b, n);
	off += n;
	free(b);

	d.n_final_theta = 3;
	d.final_theta = fin;
	d.t = 9;
	e.msg_case = DPASYNC__ENVELOPE__MSG_DONE;
	e.done = &d;
	assert_int_equal(dp_frame_encode(&e, 0, &b, &n), 0);
	memcpy(s + off, b, n);
	off += n;
	free(b);
	*len = off;
	return s;
}

static void check_stream_msg(int i, const Dpasync__Envelope *m)
{
	assert_int_equal(m->version, 1);
	switch (i) {
	case 0:
		assert_int_equal(m->msg_case, DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST);
		assert_non_null(m->update_request);
		break;
	case 1:
		assert_int_equal(m->msg_case, DPASYNC__ENVELOPE__MSG_QUERY);
		assert_int_equal(m->query->k, 2);
		assert_int_equal(m->query->n_theta, 1);
		assert_true(m->query->theta[0] == 1.0);
		break;
	case 2:
		assert_int_equal(m->msg_case, DPASYNC__ENVELOPE__MSG_HELLO);
		assert_string_equal(m->hello->owner_id, "owner-1");
		assert_int_equal(m->hello->n_rows, 10);
		assert_int_equal(m->hello->n_features, 3);
		assert_true(m->hello->epsilon == 0.5);
		assert_true(m->hello->rate == 2.5);
		assert_int_equal(m->hello->answers_cap, 40);
		break;
	case 3:
		assert_int_equal(m->msg_case, DPASYNC__ENVELOPE__MSG_ANSWER);
		assert_int_equal(m->answer->k, 7);
		assert_int_equal(m->answer->n_gradient, 3);
		assert_memory_equal(m->answer->gradient, grad, sizeof(grad));
		assert_true(m->answer->epsilon_spent == 0.1 && m->answer->epsilon_left == 0.4);
		break;
	case 4:
		assert_int_equal(m->msg_case, DPASYNC__ENVELOPE__MSG_DONE);
		assert_int_equal(m->done->t, 9);
		assert_memory_equal(m->done->final_theta, fin, sizeof(fin));
		break;
	default:
		fail_msg("unexpected message %d", i);
	}
}

/* Feed one chunk entirely; check and count the messages it completes. */
static void feed(dp_frame_decoder *d, const uint8_t *p, size_t n, int *count)
{
	size_t off = 0;

	do {
		Dpasync__Envelope *m = NULL;
		size_t used = 0;

		assert_int_equal(dp_frame_decode(d, p + off, n - off, &used, &m), 0);
		assert_true(used <= n - off);
		/* progress, or the chunk is exhausted */
		assert_true(used > 0 || n - off == 0);
		off += used;
		if (m != NULL) {
			check_stream_msg(*count, m);
			(*count)++;
			dp_frame_msg_free(m);
		}
	} while (off < n);
}

static void test_every_split(void **state)
{
	size_t len;
	uint8_t *s = build_stream(&len);

	/* Every pair of cut points i <= j: chunks [0,i) [i,j) [j,len). */
	for (size_t i = 0; i <= len; i++) {
		for (size_t j = i; j <= len; j++) {
			dp_frame_decoder d;
			int count = 0;

			dp_frame_decoder_init(&d, 0);
			feed(&d, s, i, &count);
			feed(&d, s + i, j - i, &count);
			feed(&d, s + j, len - j, &count);
			assert_int_equal(count, 5);
			assert_int_equal(d.hdr_have, 0);   /* nothing left over */
			dp_frame_decoder_free(&d);
		}
	}
	/* One byte at a time. */
	{
		dp_frame_decoder d;
		int count = 0;

		dp_frame_decoder_init(&d, 0);
		for (size_t i = 0; i < len; i++)
			feed(&d, s + i, 1, &count);
		assert_int_equal(count, 5);
		dp_frame_decoder_free(&d);
	}
	free(s);
}

static void test_max_size(void **state)
{
	dp_frame_decoder d;
	Dpasync__Envelope *m = NULL;
	size_t used = 99;
	/* Declares 17 bytes; the decoder allows 16. */
	static const uint8_t big[] = { 0, 0, 0, 17, 0x08, 0x01 };
	static const uint8_t zero[] = { 0, 0, 0, 0 };
	static const uint8_t huge[] = { 0xff, 0xff, 0xff, 0xff };

	dp_frame_decoder_init(&d, 16);
	/* frame_query's body is exactly 16 bytes: accepted. */
	assert_int_equal(dp_frame_decode(&d, frame_query, sizeof(frame_query), &used, &m), 0);
	assert_int_equal(used, sizeof(frame_query));
	assert_non_null(m);
	dp_frame_msg_free(m);
	m = NULL;
	used = 99;
	/* The header alone is enough to refuse; outputs untouched. */
	assert_int_equal(dp_frame_decode(&d, big, 4, &used, &m), DP_EPROTO);
	assert_int_equal(used, 99);
	assert_null(m);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "exceeds the maximum 16"));
	/* Sticky: the stream is dead even if valid bytes follow. */
	assert_int_equal(dp_frame_decode(&d, frame_update, sizeof(frame_update), &used, &m),
			 DP_EPROTO);
	dp_frame_decoder_free(&d);

	dp_frame_decoder_init(&d, 0);
	assert_int_equal(dp_frame_decode(&d, zero, sizeof(zero), &used, &m), DP_EPROTO);
	dp_frame_decoder_free(&d);

	dp_frame_decoder_init(&d, 0);
	assert_int_equal(dp_frame_decode(&d, huge, sizeof(huge), &used, &m), DP_EPROTO);
	dp_frame_decoder_free(&d);

	/* A limit above the hard cap is lowered to it. */
	dp_frame_decoder_init(&d, 0xffffffffu);
	assert_int_equal(d.max_len, DP_FRAME_MAX_LIMIT);
	dp_frame_decoder_free(&d);
}

static void test_memory_follows_bytes(void **state)
{
	dp_frame_decoder d;
	Dpasync__Envelope *m = NULL;
	size_t used;
	/* Announces 8 MiB, sends 10 bytes of it. */
	uint8_t part[14] = { 0x00, 0x80, 0x00, 0x00, 0x08, 0x01 };

	dp_frame_decoder_init(&d, 0);
	assert_int_equal(dp_frame_decode(&d, part, sizeof(part), &used, &m), 0);
	assert_int_equal(used, sizeof(part));
	assert_null(m);
	assert_true(d.body_cap <= 4096);
	dp_frame_decoder_free(&d);

	/* Past the first 4096 bytes the buffer doubles, but never beyond the
	 * frame's length (5000 here, not 8192). */
	{
		static uint8_t body[4 + 5000] = { 0x00, 0x00, 0x13, 0x88 };

		dp_frame_decoder_init(&d, 0);
		assert_int_equal(dp_frame_decode(&d, body, 10, &used, &m), 0);
		assert_int_equal(dp_frame_decode(&d, body + 10, 4500, &used, &m), 0);
		assert_null(m);
		assert_int_equal(d.body_cap, 5000);
		dp_frame_decoder_free(&d);
	}
}

static void test_garbage_body(void **state)
{
	dp_frame_decoder d;
	Dpasync__Envelope *m = NULL;
	size_t used;
	/* 0xff is a tag with wire type 7, which does not exist. */
	static const uint8_t bad[] = { 0, 0, 0, 3, 0xff, 0xff, 0xff };

	dp_frame_decoder_init(&d, 0);
	assert_int_equal(dp_frame_decode(&d, bad, sizeof(bad), &used, &m), DP_EPROTO);
	assert_null(m);
	dp_frame_decoder_free(&d);
	/* Same bytes delivered in two pieces (copying path). */
	dp_frame_decoder_init(&d, 0);
	assert_int_equal(dp_frame_decode(&d, bad, 5, &used, &m), 0);
	assert_int_equal(dp_frame_decode(&d, bad + 5, 2, &used, &m), DP_EPROTO);
	dp_frame_decoder_free(&d);
}

/* ---- validation ---------------------------------------------------------- */

static void test_validate_query(void **state)
{
	Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
	Dpasync__Query q = DPASYNC__QUERY__INIT;
	double th[4] = { 0.5, -1, 2, 0 };
	dp_frame_limits lim = { .p = 4 };

	e.version = 1;
	e.msg_case = DPASYNC__ENVELOPE__MSG_QUERY;
	e.query = &q;
	q.k = 1;
	q.n_theta = 4;
	q.theta = th;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	assert_int_equal(dp_frame_validate(&e, NULL), 0);    /* p unknown */

	th[1] = NAN;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "theta[1]"));
	th[1] = INFINITY;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	th[1] = -INFINITY;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	th[1] = -1;

	lim.p = 3;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "dimension 4, expected 3"));
	lim.p = 0;
	lim.max_p = 3;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	lim.max_p = 0;
	q.n_theta = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	q.n_theta = 4;
	q.k = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	q.k = 5;

	e.version = 2;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "version 2"));
	e.version = 1;

	e.msg_case = DPASYNC__ENVELOPE__MSG__NOT_SET;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "no message"));
	/* Case set but submessage missing. */
	e.msg_case = DPASYNC__ENVELOPE__MSG_QUERY;
	e.query = NULL;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_int_equal(dp_frame_validate(NULL, &lim), DP_EPROTO);
}

static void test_validate_others(void **state)
{
	Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
	Dpasync__Hello h = DPASYNC__HELLO__INIT;
	Dpasync__Welcome w = DPASYNC__WELCOME__INIT;
	Dpasync__Answer a = DPASYNC__ANSWER__INIT;
	Dpasync__Refuse rf = DPASYNC__REFUSE__INIT;
	Dpasync__Done d = DPASYNC__DONE__INIT;
	dp_frame_limits lim = { .p = 3, .max_str = 16 };
	char longname[40];

	e.version = 1;
	e.msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
	e.hello = &h;
	h.version = 1;
	h.owner_id = "owner-1";
	h.n_rows = 5;
	h.n_features = 3;
	h.epsilon = INFINITY;             /* allowed: no noise */
	h.rate = 0.25;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	/* The rate is a share of the sum of rates: finite and >= 0, 0 meaning
	 * "not said" (an owner from before the field; counted as 1). */
	h.rate = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	h.rate = -1;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "hello.rate"));
	h.rate = INFINITY;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.rate = NAN;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.rate = 1e6;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	h.epsilon = NAN;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.epsilon = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.epsilon = -INFINITY;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.epsilon = 1;
	h.owner_id = "own\ner";
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "non-printable"));
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	h.owner_id = longname;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.owner_id = "";
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.owner_id = "o";
	h.n_features = 4;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.n_features = 3;
	h.version = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.version = 1;
	h.n_rows = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.n_rows = 5;
	/* The deltas (docs/protocol.md §5 "Mechanisms"): in [0, 1), 0 (also
	 * absent) being pure epsilon-DP only; rho_left >= 0, inf allowed. */
	h.delta = 1e-6;
	h.lifetime_delta = 1e-5;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	h.delta = 1;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "hello.delta"));
	h.delta = -1e-9;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.delta = NAN;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.delta = 0;
	h.lifetime_delta = INFINITY;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	h.lifetime_delta = 0;
	{
		Dpasync__HelloLimits hl = DPASYNC__HELLO_LIMITS__INIT;

		hl.theta_max = 1;
		hl.rho_left = INFINITY;
		h.limits = &hl;
		assert_int_equal(dp_frame_validate(&e, &lim), 0);
		hl.rho_left = -1;
		assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
		assert_non_null(strstr(dp_error_detail(DP_EPROTO), "limits.rho_left"));
		h.limits = NULL;
	}

	e.msg_case = DPASYNC__ENVELOPE__MSG_WELCOME;
	e.welcome = &w;
	w.job = "job";
	w.model = "linear";
	w.t = 10;
	w.n = 2;
	w.n_total = 100;
	w.rho = 1;
	w.lambda = 0.01;
	w.theta_max = 5;
	w.clip_l1 = 1;
	w.mode = DPASYNC__MODE__MODE_REQUEST;
	w.p = 3;
	w.k_done = 10;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	/* answers_cap: 0 (none planned) or any K_i, also above T (one owner
	 * with a margin); the owner's ledger is what bounds its answers. */
	w.answers_cap = 12;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	w.answers_cap = UINT64_MAX;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	w.answers_cap = 0;
	w.k_done = 11;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	w.k_done = 0;
	w.mode = 7;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	w.mode = DPASYNC__MODE__MODE_BROADCAST;
	w.lambda = -1;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	w.lambda = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	w.rho = INFINITY;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	w.rho = 1;
	w.clip_l1 = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	w.clip_l1 = 1;
	/* The mechanism: Laplace (0, also absent) without clip_l2, Gaussian
	 * with a positive one, nothing else. */
	w.clip_l2 = 1;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	w.mechanism = DPASYNC__MECHANISM__MECHANISM_GAUSSIAN;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	w.clip_l2 = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "clip_l2"));
	w.clip_l2 = INFINITY;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	w.clip_l2 = 1;
	w.mechanism = 2;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	w.mechanism = DPASYNC__MECHANISM__MECHANISM_LAPLACE;
	w.clip_l2 = 0;
	w.p = 2;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	w.p = 3;
	w.t = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	w.t = 10;

	e.msg_case = DPASYNC__ENVELOPE__MSG_ANSWER;
	e.answer = &a;
	a.k = 3;
	a.n_gradient = 3;
	a.gradient = grad;
	a.epsilon_spent = 0.2;
	a.epsilon_left = INFINITY;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	a.n_gradient = 2;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	a.n_gradient = 3;
	a.epsilon_spent = -0.1;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	a.epsilon_spent = NAN;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	a.epsilon_spent = 0;
	a.k = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);

	e.msg_case = DPASYNC__ENVELOPE__MSG_REFUSE;
	e.refuse = &rf;
	rf.reason = "";
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	rf.reason = "budget \x01";
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);

	e.msg_case = DPASYNC__ENVELOPE__MSG_DONE;
	e.done = &d;
	d.t = 10;
	d.n_final_theta = 3;
	d.final_theta = fin;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	d.t = 0;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
}

/* Two oneof members on the wire: protobuf keeps the last one, so the
 * unpacked message has exactly one case set. */
/* Peer mode's PeerModel (docs/protocol.md §4): an agent id and a model of
 * dimension p, finite. */
static void test_validate_peer_model(void **state)
{
	Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
	Dpasync__PeerModel pm = DPASYNC__PEER_MODEL__INIT;
	double th[3] = { 0.25, -1, 3 };
	dp_frame_limits lim = { .p = 3 };

	(void)state;
	e.version = 1;
	e.msg_case = DPASYNC__ENVELOPE__MSG_PEER_MODEL;
	e.peer_model = &pm;
	pm.agent_id = "agent-1";
	pm.step = 0;   /* the warm start */
	pm.n_theta = 3;
	pm.theta = th;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	assert_string_equal(dp_frame_kind(&e), "peer_model");
	pm.agent_id = "";
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "peer_model.agent_id"));
	pm.agent_id = "agent\x01";
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	pm.agent_id = "agent-1";
	lim.p = 4;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	lim.p = 3;
	th[2] = NAN;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "peer_model.theta"));
	th[2] = 3;
	e.peer_model = NULL;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
}

static void test_two_oneof_members(void **state)
{
	/* 08 01 | 22 00 (update_request) | 2a 02 08 05 (query{k=5}) */
	static const uint8_t body[] = { 0x08, 0x01, 0x22, 0x00, 0x2a, 0x02, 0x08, 0x05 };
	Dpasync__Envelope *m = NULL;

	assert_int_equal(dp_frame_unpack(body, sizeof(body), &m), 0);
	assert_int_equal(m->msg_case, DPASYNC__ENVELOPE__MSG_QUERY);
	assert_int_equal(m->query->k, 5);
	/* theta missing: invalid. */
	assert_int_equal(dp_frame_validate(m, NULL), DP_EPROTO);
	dp_frame_msg_free(m);
	dp_frame_msg_free(NULL);
}

static void test_unknown_fields(void **state)
{
	/* Field 15 (varint 1) is unknown to version 1: skipped. */
	static const uint8_t fwd[] = { 0x08, 0x01, 0x22, 0x00, 0x78, 0x01 };
	/* Field number 0, as an over-long varint tag (80 00) with value ff 25:
	 * invalid in protobuf, although protobuf-c would keep it. */
	static const uint8_t zero_a[] = { 0x80, 0x00, 0xff, 0x25 };
	/* The same inside the Query submessage: 2a 05 | 08 01 80 00 01. */
	static const uint8_t zero_b[] = { 0x08, 0x01, 0x2a, 0x05, 0x08, 0x01, 0x80, 0x00, 0x01 };
	Dpasync__Envelope *m = NULL;

	assert_int_equal(dp_frame_unpack(fwd, sizeof(fwd), &m), 0);
	assert_int_equal(m->msg_case, DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST);
	assert_int_equal(dp_frame_validate(m, NULL), 0);
	dp_frame_msg_free(m);
	m = NULL;
	assert_int_equal(dp_frame_unpack(zero_a, sizeof(zero_a), &m), DP_EPROTO);
	assert_int_equal(dp_frame_unpack(zero_b, sizeof(zero_b), &m), DP_EPROTO);
	assert_null(m);
}

/* The fields issue 8 added, pinned to their numbers: Hello.rate = 8
 * (double) and Welcome.answers_cap = 13 (varint). */
static void test_new_field_numbers(void **state)
{
	/* 08 01 | 12 09 (hello) 41 <1.5 little-endian> */
	static const uint8_t hello[] = { 0x08, 0x01, 0x12, 0x09, 0x41, 0x00, 0x00, 0x00,
					 0x00, 0x00, 0x00, 0xf8, 0x3f };
	/* 08 01 | 1a 03 (welcome) 68 ac 02 (answers_cap = 300) */
	static const uint8_t welcome[] = { 0x08, 0x01, 0x1a, 0x03, 0x68, 0xac, 0x02 };
	Dpasync__Envelope *m = NULL;

	(void)state;
	assert_int_equal(dp_frame_unpack(hello, sizeof(hello), &m), 0);
	assert_int_equal(m->msg_case, DPASYNC__ENVELOPE__MSG_HELLO);
	assert_true(m->hello->rate == 1.5);
	dp_frame_msg_free(m);
	m = NULL;
	assert_int_equal(dp_frame_unpack(welcome, sizeof(welcome), &m), 0);
	assert_int_equal(m->msg_case, DPASYNC__ENVELOPE__MSG_WELCOME);
	assert_int_equal(m->welcome->answers_cap, 300);
	dp_frame_msg_free(m);
}

/* The fields issue 10 added, pinned to their numbers: Goodbye = Envelope
 * field 9 {code 1, text 2}, Hello.schema = 9 and Hello.job = 10 (strings),
 * Welcome.bias = 14 (varint); a Goodbye's text is checked like any string. */
static void test_goodbye_and_job_fields(void **state)
{
	/* 08 01 | 4a 05 (goodbye) 08 01 12 01 'x' */
	static const uint8_t bye[] = { 0x08, 0x01, 0x4a, 0x05, 0x08, 0x01, 0x12, 0x01, 'x' };
	/* the same with text "\x01" */
	static const uint8_t bad[] = { 0x08, 0x01, 0x4a, 0x05, 0x08, 0x02, 0x12, 0x01, 0x01 };
	/* 08 01 | 12 06 (hello) 4a 01 'A' 52 01 'B' */
	static const uint8_t hello[] = { 0x08, 0x01, 0x12, 0x06, 0x4a, 0x01, 'A', 0x52, 0x01, 'B' };
	/* 08 01 | 1a 02 (welcome) 70 02 (bias = 2) */
	static const uint8_t welcome[] = { 0x08, 0x01, 0x1a, 0x02, 0x70, 0x02 };
	Dpasync__Envelope *m = NULL;

	(void)state;
	assert_int_equal(dp_frame_unpack(bye, sizeof(bye), &m), 0);
	assert_int_equal(m->msg_case, DPASYNC__ENVELOPE__MSG_GOODBYE);
	assert_int_equal(m->goodbye->code, DPASYNC__GOODBYE_CODE__GOODBYE_UNKNOWN_IDENTITY);
	assert_string_equal(m->goodbye->text, "x");
	assert_string_equal(dp_frame_kind(m), "goodbye");
	assert_int_equal(dp_frame_validate(m, NULL), 0);
	dp_frame_msg_free(m);
	m = NULL;
	assert_int_equal(dp_frame_unpack(bad, sizeof(bad), &m), 0);
	assert_int_equal(dp_frame_validate(m, NULL), DP_EPROTO);
	dp_frame_msg_free(m);
	m = NULL;
	assert_int_equal(dp_frame_unpack(hello, sizeof(hello), &m), 0);
	assert_string_equal(m->hello->schema, "A");
	assert_string_equal(m->hello->job, "B");
	dp_frame_msg_free(m);
	m = NULL;
	assert_int_equal(dp_frame_unpack(welcome, sizeof(welcome), &m), 0);
	assert_int_equal(m->welcome->bias, 2);
	dp_frame_msg_free(m);
}

/* Hello.limits = field 13, a message {epsilon_left 1, lifetime_left 2,
 * theta_max 3} (docs/protocol.md §5 "Budget left and bounds"): absent
 * from an older owner (NULL, never "0 left"), and each value checked when
 * present: left >= 0 or +inf, theta_max > 0 or +inf, never NaN; Goodbye
 * code 7 is BAD_CLAIM. */
static void test_hello_limits(void **state)
{
	/* 08 01 | 12 23 (hello) 08 01 12 07 'owner-1' 18 05 20 03 29 <1.0>
	 * 6a 09 (limits) 09 <0.0> */
	static const uint8_t with0[] = {
		0x08, 0x01, 0x12, 0x23, 0x08, 0x01, 0x12, 0x07, 'o', 'w', 'n', 'e', 'r', '-', '1',
		0x18, 0x05, 0x20, 0x03, 0x29, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f,
		0x6a, 0x09, 0x09, 0, 0, 0, 0, 0, 0, 0, 0 };
	/* the same Hello without field 13 */
	static const uint8_t without[] = {
		0x08, 0x01, 0x12, 0x18, 0x08, 0x01, 0x12, 0x07, 'o', 'w', 'n', 'e', 'r', '-', '1',
		0x18, 0x05, 0x20, 0x03, 0x29, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f };
	Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT, *m = NULL;
	Dpasync__Hello h = DPASYNC__HELLO__INIT;
	Dpasync__HelloLimits lm = DPASYNC__HELLO_LIMITS__INIT;
	dp_frame_limits lim = { .p = 3 };

	(void)state;
	assert_int_equal(dp_frame_unpack(with0, sizeof(with0), &m), 0);
	assert_non_null(m->hello->limits);
	assert_true(m->hello->limits->epsilon_left == 0.0);   /* said: nothing left */
	assert_int_equal(dp_frame_validate(m, &lim), DP_EPROTO);   /* theta_max 0 */
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "hello.limits.theta_max"));
	dp_frame_msg_free(m);
	m = NULL;
	assert_int_equal(dp_frame_unpack(without, sizeof(without), &m), 0);
	assert_null(m->hello->limits);
	assert_int_equal(dp_frame_validate(m, &lim), 0);
	dp_frame_msg_free(m);

	e.version = 1;
	e.msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
	e.hello = &h;
	h.version = 1;
	h.owner_id = "owner-1";
	h.n_rows = 5;
	h.n_features = 3;
	h.epsilon = 1;
	h.limits = &lm;
	lm.epsilon_left = 0;
	lm.lifetime_left = 0;
	lm.theta_max = 1e6;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	lm.epsilon_left = lm.lifetime_left = lm.theta_max = INFINITY;
	assert_int_equal(dp_frame_validate(&e, &lim), 0);
	lm.epsilon_left = -1e-9;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "hello.limits.epsilon_left"));
	lm.epsilon_left = NAN;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	lm.epsilon_left = 0.1;
	lm.lifetime_left = NAN;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_non_null(strstr(dp_error_detail(DP_EPROTO), "hello.limits.lifetime_left"));
	lm.lifetime_left = -INFINITY;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	lm.lifetime_left = 0.1;
	lm.theta_max = -INFINITY;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	lm.theta_max = NAN;
	assert_int_equal(dp_frame_validate(&e, &lim), DP_EPROTO);
	assert_int_equal(DPASYNC__GOODBYE_CODE__GOODBYE_BAD_CLAIM, 7);
}

static void test_goodbye_builder(void **state)
{
	/* Control bytes and bytes above 0x7e become spaces; a text longer than
	 * the validation limit is cut to DP_FRAME_MAX_STR bytes; the result
	 * passes dp_frame_validate. */
	Dpasync__Envelope env;
	Dpasync__Goodbye g;
	char buf[DP_FRAME_MAX_STR + 1], long_text[DP_FRAME_MAX_STR + 50];

	(void)state;
	dp_frame_goodbye(&env, &g, DPASYNC__GOODBYE_CODE__GOODBYE_BAD_DATA, "p\n=\t5\x80!", buf);
	assert_int_equal(env.msg_case, DPASYNC__ENVELOPE__MSG_GOODBYE);
	assert_ptr_equal(env.goodbye, &g);
	assert_int_equal(g.code, DPASYNC__GOODBYE_CODE__GOODBYE_BAD_DATA);
	assert_string_equal(g.text, "p = 5 !");
	assert_int_equal(dp_frame_validate(&env, NULL), 0);
	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	dp_frame_goodbye(&env, &g, DPASYNC__GOODBYE_CODE__GOODBYE_RESTARTING, long_text, buf);
	assert_int_equal(strlen(g.text), DP_FRAME_MAX_STR);
	assert_int_equal(dp_frame_validate(&env, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_known_bytes),
		cmocka_unit_test(test_every_split),
		cmocka_unit_test(test_max_size),
		cmocka_unit_test(test_memory_follows_bytes),
		cmocka_unit_test(test_garbage_body),
		cmocka_unit_test(test_validate_query),
		cmocka_unit_test(test_validate_others),
		cmocka_unit_test(test_validate_peer_model),
		cmocka_unit_test(test_two_oneof_members),
		cmocka_unit_test(test_unknown_fields),
		cmocka_unit_test(test_new_field_numbers),
		cmocka_unit_test(test_goodbye_and_job_fields),
		cmocka_unit_test(test_hello_limits),
		cmocka_unit_test(test_goodbye_builder),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
