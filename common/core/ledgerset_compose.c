/* SPDX-License-Identifier: Apache-2.0 */
/* Both mechanisms over a dataset's lifetime (ledgerset.h, docs/ledger.md
 * §8): the job files' spending summed in the fields of zcdp.h, and the
 * lifetime bound it gives at the owner's lifetime delta (the conversion
 * itself is zcdp.c's, docs/zcdp.md §5). */
#include "common/core/ledgerset_impl.h"
#include "common/core/error.h"
#include "common/core/nano.h"

#include <string.h>

dp_zcdp_totals dp_ledgerset_totals_except(const dp_ledgerset *s, const char *path)
{
	dp_zcdp_totals t = { 0, 0, 0, 0 };

	DP_REQUIRE(s != NULL);
	for (size_t i = 0; i < s->n; i++) {
		if (path != NULL && strcmp(s->jobs[i].path, path) == 0)
			continue;
		dp_zcdp_add(&t, &s->jobs[i].totals);
	}
	return t;
}

uint64_t dp_ledgerset_pure_left(const dp_zcdp_totals *t, uint64_t cap_nano, double delta)
{
	dp_zcdp_totals g = { 0, 0, 0, 0 };
	uint64_t used = 0;

	DP_REQUIRE(t != NULL);
	if (cap_nano == DP_NANO_INF)
		return DP_NANO_INF;
	/* The bound is at most eps_pure + (the Gaussian answers converted
	 * alone), and pure charges add to the first term only: what that sum
	 * leaves is safe to spend whatever the other term does. */
	g.rho_gauss = t->rho_gauss;
	g.slack = t->slack;
	if (dp_zcdp_best_nano(&g, delta, &used) < 0)
		return 0;
	used = dp_nano_add(used, t->eps_pure);
	return used == DP_NANO_INF || used >= cap_nano ? 0 : cap_nano - used;
}
