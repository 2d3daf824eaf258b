/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd: the mechanisms this owner allows and its delta (docs/ownerd.md
 * "Mechanisms and delta", docs/protocol.md §5 "Mechanisms"): the checks of
 * --delta and --lifetime-delta, what the Hello says, and the Welcome's
 * mechanism checked again before anything is spent (the learner already
 * refuses an owner that does not allow its job's mechanism). */
#include <math.h>
#include <stdio.h>

#include "common/core/error.h"
#include "common/core/zcdp.h"

#include "owner/own.h"

int own_mechanism_validate(const struct own_settings *s)
{
	DP_REQUIRE(s != NULL);
	if (!(s->delta >= 0 && s->delta < 1))
		return dp_error_set(DP_EINVAL, "--delta %g is outside [0, 1)", s->delta);
	/* Peer mode's advanced composition is only meaningful for a small
	 * delta (docs/peer-agents.md §2). */
	if (s->peer && s->delta > 0.5)
		return dp_error_set(DP_EINVAL, "--delta %g: peer mode takes at most 0.5", s->delta);
	/* An owner answers with the mechanism the learner's job asks for
	 * (learnerd --mechanism, allowed by --delta > 0); only an agent
	 * chooses its own (docs/peer-agents.md "Privacy"). */
	if (s->mechanism_given && !s->peer)
		return dp_error_set(DP_EINVAL, "--mechanism is for --peer only: an owner answers "
				    "the mechanism of the learner's job (learnerd --mechanism; "
				    "--delta > 0 allows gaussian)");
	/* The words of `dpasync sim --mode p2p`, which refuses the same. */
	if (s->mechanism == DP_MECH_GAUSSIAN && !(s->delta > 0))
		return dp_error_set(DP_EINVAL, "--mechanism gaussian needs --delta > 0 (delta 0 is "
				    "pure epsilon-DP, which only laplace gives)");
	if (s->lifetime_delta == -1)
		return 0;
	if (!(s->lifetime_delta >= 0 && s->lifetime_delta < 1))
		return dp_error_set(DP_EINVAL, "--lifetime-delta %g is outside [0, 1) (-1: not "
				    "given)", s->lifetime_delta);
	if (s->lifetime_delta < s->delta)
		return dp_error_set(DP_EINVAL, "--lifetime-delta %g is below --delta %g (a job "
				    "could never use its delta)", s->lifetime_delta, s->delta);
	return 0;
}

double own_mechanism_lifetime_delta(const struct own_settings *s)
{
	DP_REQUIRE(s != NULL);
	return s->lifetime_delta == -1 ? s->delta : s->lifetime_delta;
}

bool own_mechanism_delta_large(const struct own_settings *s, uint64_t n_rows)
{
	DP_REQUIRE(s != NULL);
	return n_rows > 0 && s->delta * (double)n_rows >= 1;
}

bool own_mechanism_gaussian(const struct own_settings *s, double lifetime_delta)
{
	DP_REQUIRE(s != NULL);
	return s->delta > 0 && lifetime_delta > 0;
}

double own_mechanism_rho_left(const struct own_settings *s, double lifetime_delta,
			      double eps_left)
{
	double rho = 0;

	DP_REQUIRE(s != NULL);
	if (!own_mechanism_gaussian(s, lifetime_delta) || !(eps_left > 0))
		return 0;
	if (isinf(eps_left))
		return INFINITY;
	if (dp_zcdp_rho_for(eps_left, 0, s->delta, &rho) < 0)
		return 0;
	return rho;
}

int own_mechanism_check_welcome(const struct own_settings *s, double lifetime_delta,
				const Dpasync__Welcome *w, char *why, size_t size)
{
	DP_REQUIRE(s != NULL && w != NULL && why != NULL && size > 0);
	if (w->mechanism != DPASYNC__MECHANISM__MECHANISM_GAUSSIAN)
		return 0;
	if (!(s->delta > 0)) {
		snprintf(why, size, "job %s asks for Gaussian answers but this owner's delta is 0 "
			 "(pure epsilon-DP only): set ownerd's --delta (e.g. 1e-6, below 1/n_i) to "
			 "allow them, or run the job with learnerd --mechanism laplace", w->job);
		return DP_EREFUSED;
	}
	if (!(lifetime_delta > 0)) {
		snprintf(why, size, "job %s asks for Gaussian answers but this owner's lifetime "
			 "delta is 0 (its ledger directory's record): pure epsilon-DP only over its "
			 "lifetime", w->job);
		return DP_EREFUSED;
	}
	return 0;
}
