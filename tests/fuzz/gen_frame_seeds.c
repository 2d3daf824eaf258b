/* SPDX-License-Identifier: Apache-2.0 */
/* Writes the seed corpus of fuzz_frame (corpus/frame/): one file per
 * message kind of docs/protocol.md, with the values of a small real job
 * (two owners, p = 4), plus a file with a whole exchange and a Hello with
 * its schema summary (docs/protocol.md §5 "Schema summary").  Each file is
 * the chunking seed byte, then frames as they travel on a connection.
 *   gen_frame_seeds DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/net/frame.h"

static double theta[4] = { 0.0316, 0.2533, -0.2613, 0.0385 };

static void put(FILE *f, const Dpasync__Envelope *m)
{
	uint8_t *b = NULL;
	size_t n = 0;

	if (dp_frame_encode(m, DP_FRAME_MAX_LIMIT, &b, &n) != 0)
		abort();
	fwrite(b, 1, n, f);
	free(b);
}

static void one(const char *dir, const char *name, const Dpasync__Envelope *const *m, size_t k,
		unsigned char seed)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL)
		abort();
	fputc(seed, f);
	for (size_t i = 0; i < k; i++)
		put(f, m[i]);
	fclose(f);
}

/* A Hello of owner-2 whose rows a schema made: carat and depth numeric
 * (depth clamped), cut one-hot, and the bias column. */
static void hello_summary(const char *dir, const Dpasync__Hello *base)
{
	static const char *const names[4] = { "carat", "depth", "cut=Ideal", "bias" };
	static const char *const kinds[4] = { "numeric", "numeric", "onehot", "bias" };
	static const char *const digests[4] = { "3f2a9c0d11e4b7a8", "09b1c2d3e4f5a6b7",
						"aa55aa55aa55aa55", "5d41402abc4b2a76" };
	Dpasync__FeatureSummary f[4];
	Dpasync__FeatureSummary *fp[4];
	Dpasync__SchemaSummary sum = DPASYNC__SCHEMA_SUMMARY__INIT;
	Dpasync__Hello h = *base;
	Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
	const Dpasync__Envelope *m[1] = { &e };

	for (int j = 0; j < 4; j++) {
		dpasync__feature_summary__init(&f[j]);
		f[j].name = (char *)names[j];
		f[j].kind = (char *)kinds[j];
		f[j].digest = (char *)digests[j];
		f[j].scale = 1;
		fp[j] = &f[j];
	}
	f[0].center = 0.797;
	f[0].scale = 0.474;
	f[1].center = 61.75;
	f[1].scale = 1.43;
	f[1].clamp = 1;
	f[1].clamp_lo = -4;
	f[1].clamp_hi = 4;
	sum.features = fp;
	sum.n_features = 4;
	sum.target = "price";
	sum.bias = 1;
	h.owner_id = "owner-2";
	h.bias = 1;
	h.schema = "sha256:9b71d224bd62f3785d96d46ad3ea3d73319bfbc2890caadae2dff72519673ca7";
	h.schema_summary = &sum;
	e.version = 1;
	e.msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
	e.hello = &h;
	one(dir, "hello_summary", m, 1, 0x33);
}

/* --serve refit's PeerRelease (docs/protocol.md): a relayed release, and
 * the flags alone. */
static void peer_release(const char *dir)
{
	Dpasync__PeerRelease r = DPASYNC__PEER_RELEASE__INIT;
	Dpasync__PeerRelease f = DPASYNC__PEER_RELEASE__INIT;
	Dpasync__Envelope e = DPASYNC__ENVELOPE__INIT;
	const Dpasync__Envelope *m[1] = { &e };

	r.origin = "agent-3";
	r.rows = 40;
	r.n_value = 4;
	r.value = theta;
	r.kind = 1;
	e.version = 1;
	e.msg_case = DPASYNC__ENVELOPE__MSG_PEER_RELEASE;
	e.peer_release = &r;
	one(dir, "peer_release", m, 1, (unsigned char)(17 * 8));
	f.complete = 1;
	f.seen_complete = 1;
	e.peer_release = &f;
	one(dir, "peer_release_flags", m, 1, 0x5b);
}

int main(int argc, char **argv)
{
	Dpasync__Envelope e[8];
	Dpasync__Hello hello = DPASYNC__HELLO__INIT;
	Dpasync__Welcome welcome = DPASYNC__WELCOME__INIT;
	Dpasync__UpdateRequest req = DPASYNC__UPDATE_REQUEST__INIT;
	Dpasync__Query query = DPASYNC__QUERY__INIT;
	Dpasync__Answer answer = DPASYNC__ANSWER__INIT;
	Dpasync__Refuse refuse = DPASYNC__REFUSE__INIT;
	Dpasync__Done done = DPASYNC__DONE__INIT;
	Dpasync__PeerModel pm = DPASYNC__PEER_MODEL__INIT;
	const Dpasync__Envelope *all[8];
	const char *names[8] = { "hello", "welcome", "update_request", "query", "answer",
				 "refuse", "done", "peer_model" };

	if (argc != 2)
		return 2;
	for (int i = 0; i < 8; i++) {
		dpasync__envelope__init(&e[i]);
		e[i].version = 1;
		all[i] = &e[i];
	}
	hello.version = 1;
	hello.owner_id = "owner-1";
	hello.n_rows = 100;
	hello.n_features = 4;
	hello.epsilon = 1;
	hello.answers_given = 3;
	hello.rate = 200;
	e[0].msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
	e[0].hello = &hello;
	welcome.job = "fuzz-job";
	welcome.model = "linear";
	welcome.t = 60;
	welcome.n = 2;
	welcome.n_total = 200;
	welcome.rho = 1.85;
	welcome.lambda = 0.01;
	welcome.theta_max = 10;
	welcome.clip_l1 = 3.04;
	welcome.mode = DPASYNC__MODE__MODE_REQUEST;
	welcome.p = 4;
	welcome.answers_cap = 33;
	e[1].msg_case = DPASYNC__ENVELOPE__MSG_WELCOME;
	e[1].welcome = &welcome;
	e[2].msg_case = DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST;
	e[2].update_request = &req;
	query.k = 7;
	query.n_theta = 4;
	query.theta = theta;
	e[3].msg_case = DPASYNC__ENVELOPE__MSG_QUERY;
	e[3].query = &query;
	answer.k = 7;
	answer.n_gradient = 4;
	answer.gradient = theta;
	answer.epsilon_spent = 0.0303;
	answer.epsilon_left = 0.9697;
	answer.answers_given = 1;
	e[4].msg_case = DPASYNC__ENVELOPE__MSG_ANSWER;
	e[4].answer = &answer;
	refuse.k = 8;
	refuse.reason = "budget exhausted";
	e[5].msg_case = DPASYNC__ENVELOPE__MSG_REFUSE;
	e[5].refuse = &refuse;
	done.n_final_theta = 4;
	done.final_theta = theta;
	done.t = 60;
	e[6].msg_case = DPASYNC__ENVELOPE__MSG_DONE;
	e[6].done = &done;
	/* peer mode (docs/peer-agents.md); not part of the learner exchange */
	pm.agent_id = "agent-2";
	pm.step = 12;
	pm.n_theta = 4;
	pm.theta = theta;
	pm.final = 1;
	pm.wakeups = 5;
	pm.seen_final = 1;
	e[7].msg_case = DPASYNC__ENVELOPE__MSG_PEER_MODEL;
	e[7].peer_model = &pm;
	for (int i = 0; i < 8; i++)
		one(argv[1], names[i], &all[i], 1, (unsigned char)(17 * i));
	one(argv[1], "exchange", all, 7, 0x5a);
	hello_summary(argv[1], &hello);
	peer_release(argv[1]);
	return 0;
}
