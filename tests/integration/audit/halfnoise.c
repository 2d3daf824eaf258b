/* SPDX-License-Identifier: Apache-2.0 */
/* The negative control of the privacy audit (docs/privacy-audit.md): linked
 * into the test-only ownerd variant `ownerd-audit-halfnoise` with
 * -Wl,--wrap=dp_query_answer, so that ownerd's answer path reaches this
 * function instead of the real one.  It calls the real dp_query_answer with
 * twice the per-answer budget, i.e. half the Laplace scale, while the
 * ledger still charges (and the Answer still reports) the original share:
 * a broken owner the audit must flag.  Nothing outside tests/integration/audit/ links
 * it; the production ownerd contains neither this symbol nor the wrap
 * (checked by tests/integration/audit/privacy_audit.py). */
#include "common/core/query.h"

int __real_dp_query_answer(dp_model m, const dp_dataset *ds, const double *theta,
			   double clip, double eps_q, dp_bitsource *src, double *grad,
			   dp_query_info *info);
int __wrap_dp_query_answer(dp_model m, const dp_dataset *ds, const double *theta,
			   double clip, double eps_q, dp_bitsource *src, double *grad,
			   dp_query_info *info);

int __wrap_dp_query_answer(dp_model m, const dp_dataset *ds, const double *theta,
			   double clip, double eps_q, dp_bitsource *src, double *grad,
			   dp_query_info *info)
{
	return __real_dp_query_answer(m, ds, theta, clip, 2.0 * eps_q, src, grad, info);
}
