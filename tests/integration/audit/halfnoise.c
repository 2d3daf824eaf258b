/* SPDX-License-Identifier: Apache-2.0 */
/* The negative control of the privacy audit (docs/privacy-audit.md §4 and
 * §8): linked into test-only variants of ownerd and of the Gaussian audit's
 * driver with -Wl,--wrap=dp_query_answer,--wrap=dp_query_answer_mech, so
 * that their answer paths reach these functions instead of the real ones.
 * They answer with half the noise while the ledger still charges (and the
 * Answer still reports) the original share: a broken owner the audit must
 * flag.  Laplace: twice the per-answer eps, i.e. half the scale.  Gaussian:
 * four times the per-answer rho, i.e. half the sigma (sigma is
 * delta2 / sqrt(2 rho), docs/zcdp.md §1).  Nothing outside
 * tests/integration/audit/ links this file; the production ownerd contains
 * neither these symbols nor the wraps (checked by the audit scripts). */
#include "common/core/query.h"

int __real_dp_query_answer(dp_model m, const dp_dataset *ds, const double *theta,
			   double clip, double eps_q, dp_bitsource *src, double *grad,
			   dp_query_info *info);
int __wrap_dp_query_answer(dp_model m, const dp_dataset *ds, const double *theta,
			   double clip, double eps_q, dp_bitsource *src, double *grad,
			   dp_query_info *info);
int __real_dp_query_answer_mech(dp_model m, const dp_dataset *ds, const double *theta,
				double clip, dp_mech mech, double share, dp_bitsource *src,
				double *grad, dp_query_info *info);
int __wrap_dp_query_answer_mech(dp_model m, const dp_dataset *ds, const double *theta,
				double clip, dp_mech mech, double share, dp_bitsource *src,
				double *grad, dp_query_info *info);

int __wrap_dp_query_answer(dp_model m, const dp_dataset *ds, const double *theta,
			   double clip, double eps_q, dp_bitsource *src, double *grad,
			   dp_query_info *info)
{
	return __real_dp_query_answer(m, ds, theta, clip, 2.0 * eps_q, src, grad, info);
}

int __wrap_dp_query_answer_mech(dp_model m, const dp_dataset *ds, const double *theta,
				double clip, dp_mech mech, double share, dp_bitsource *src,
				double *grad, dp_query_info *info)
{
	double half = mech == DP_MECH_GAUSSIAN ? 4.0 * share : 2.0 * share;

	return __real_dp_query_answer_mech(m, ds, theta, clip, mech, half, src, grad, info);
}
