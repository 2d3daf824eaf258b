/* SPDX-License-Identifier: Apache-2.0 */
/* Writes the seed corpus of fuzz_frame (corpus/frame/): one file per
 * message kind of docs/protocol.md, with the values of a small real job
 * (two owners, p = 4), plus a file with a whole exchange.  Each file is
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
	return 0;
}
