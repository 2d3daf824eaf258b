/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the privacy ledger's file format (ledger.h):
 * opening and replaying a ledger from its bytes.
 *
 * The input is the ledger file.  When it opens read-only (verified, a torn
 * tail reported), then:
 *   - the counters hold together: answers <= answer cap, spent <= cap,
 *     the last answer looks up with seq == answers and total == spent;
 *   - it opens read-write with the caps and identity of its header (the
 *     cap may come back one nano-epsilon lower through the double, hence
 *     ALLOW_LOWER), and a nano-rho (Gaussian) file with its delta and
 *     slack, with the same counters; the torn tail is cut, so a second
 *     read-only open finds none;
 *   - a charge that dp_ledger_check accepts succeeds, and the ledger
 *     then reopens with one more answer.
 * Aborts on any inconsistency; the sanitizers catch memory errors. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/ledger.h"
#include "tests/fuzz/fuzz_util.h"

struct counts {
	uint64_t answers, spent, last_k;
	int has_last;
};

static struct counts counts_of(const dp_ledger *l)
{
	struct counts c = { dp_ledger_answers(l), dp_ledger_spent_nano(l), 0, 0 };
	dp_ledger_entry e;

	c.has_last = dp_ledger_last_k(l, &c.last_k) == 0;
	FUZZ_CHECK(c.has_last == (c.answers > 0));
	FUZZ_CHECK(c.answers <= dp_ledger_answers_cap(l));
	if (c.has_last) {
		FUZZ_CHECK(dp_ledger_lookup(l, c.last_k, &e) == 0);
		/* The last answer's record is the last record, or a reservation
		 * alone follows it (flags 5, docs/ledger.md §9: one more answer
		 * that may have left, one more share), as a crash before the
		 * covered answer's record leaves it. */
		FUZZ_CHECK(e.k == c.last_k && e.seq <= c.answers && e.total_nano <= c.spent);
		FUZZ_CHECK((e.count == c.answers && e.total_nano == c.spent) ||
			   (e.count + 1 == c.answers && e.total_nano < c.spent));
		if (c.last_k > 0)
			FUZZ_CHECK(dp_ledger_lookup(l, c.last_k - 1, NULL) != DP_EIO);
	}
	if (c.last_k < UINT64_MAX)
		FUZZ_CHECK(dp_ledger_lookup(l, c.last_k + 1, NULL) == DP_ENOENT);
	return c;
}

static void check_same(struct counts a, struct counts b)
{
	FUZZ_CHECK(a.answers == b.answers && a.spent == b.spent && a.last_k == b.last_k &&
		   a.has_last == b.has_last);
}

/* A double that rounds up to exactly n nano (n / 1e9 may land one ulp
 * above it). */
static double up_to_nano(uint64_t n)
{
	double d = (double)n / 1e9;
	uint64_t got = 0;

	for (int i = 0; i < 4 && dp_nano_ceil(d, &got) == 0 && got > n; i++)
		d = nextafter(d, 0.0);
	return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const unsigned rw_flags = DP_LEDGER_ALLOW_INF | DP_LEDGER_ALLOW_LOWER | DP_LEDGER_NO_CREATE;
	const char *path = fuzz_util_path("ledger");
	dp_ledger *ro = NULL, *rw = NULL;
	struct counts c, c2;
	double cap, delta;
	uint64_t capk, cap_floor, k, slack;
	unsigned unit;
	char identity[DP_LEDGER_IDENTITY_MAX + 1];
	size_t torn;
	int rc;

	fuzz_util_write(path, data, size);
	if (dp_ledger_open(path, 0, 0, NULL, DP_LEDGER_READONLY, &ro) != 0)
		return 0;
	c = counts_of(ro);
	if (dp_ledger_cap_nano(ro) != DP_NANO_INF)
		FUZZ_CHECK(c.spent <= dp_ledger_cap_nano(ro));
	FUZZ_CHECK(dp_ledger_check(ro, c.last_k + 1, 1e-9) == DP_ESTATE);  /* read-only */
	cap = dp_ledger_cap(ro);
	capk = dp_ledger_answers_cap(ro);
	torn = dp_ledger_torn_bytes(ro);
	unit = dp_ledger_unit(ro);
	delta = dp_ledger_delta(ro);
	slack = dp_ledger_slack_nano(ro);
	FUZZ_CHECK(unit == DP_LEDGER_UNIT_EPS || (delta > 0 && delta < 1 && slack <= DP_NANO_MAX));
	FUZZ_CHECK(strlen(dp_ledger_identity(ro)) <= DP_LEDGER_IDENTITY_MAX);
	strcpy(identity, dp_ledger_identity(ro));
	dp_ledger_close(ro);

	rc = unit == DP_LEDGER_UNIT_RHO ?
		dp_ledger_open_gauss(path, cap, delta, up_to_nano(slack), capk, identity, rw_flags,
				     &rw) :
		dp_ledger_open(path, cap, capk, identity, rw_flags, &rw);
	if (rc != 0) {
		uint64_t back = 0;

		/* Only a cap that rounds below one nano-epsilon may fail, or a
		 * slack too large for a double to give back exactly. */
		FUZZ_CHECK(rc == DP_EINVAL &&
			   ((dp_nano_floor(cap, &cap_floor) == 0 && cap_floor == 0) ||
			    (unit == DP_LEDGER_UNIT_RHO &&
			     (dp_nano_ceil(up_to_nano(slack), &back) != 0 || back != slack))));
		return 0;
	}
	check_same(c, counts_of(rw));
	FUZZ_CHECK(dp_ledger_torn_bytes(rw) == torn);
	k = c.last_k + 1;
	if (c.last_k < UINT64_MAX && dp_ledger_check(rw, k, 1e-9) == 0) {
		dp_ledger_entry e;

		FUZZ_CHECK(dp_ledger_charge(rw, k, 1e-9, &e) == 0);
		FUZZ_CHECK(e.k == k && e.seq == c.answers + 1);
		FUZZ_CHECK(dp_ledger_lookup(rw, k, NULL) == 0);
		FUZZ_CHECK(dp_ledger_charge(rw, k, 1e-9, NULL) == DP_ESTATE);  /* a repeat */
		c.answers++;
		c.last_k = k;
		c.has_last = 1;
		c.spent = e.total_nano;
	}
	dp_ledger_close(rw);

	FUZZ_CHECK(dp_ledger_open(path, 0, 0, NULL, DP_LEDGER_READONLY, &ro) == 0);
	c2 = counts_of(ro);
	check_same(c, c2);
	FUZZ_CHECK(dp_ledger_torn_bytes(ro) == 0);
	dp_ledger_close(ro);
	return 0;
}
