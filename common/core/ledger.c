/* SPDX-License-Identifier: Apache-2.0 */
/* The owner's durable privacy-budget ledger: the log, its rules, charging
 * and recovery.  See ledger.h and docs/ledger.md for the format and the
 * guarantees; the bytes of headers and records are ledger_codec.c. */
#include "common/core/ledger.h"
#include "common/core/ledger_impl.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/log.h"
#include "common/core/mem.h"
#include "common/core/nano.h"
#include "common/core/zcdp.h"

#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Records are read in chunks of this many at open. */
#define READ_CHUNK_RECS 1024

struct dp_ledger {
	int fd;
	unsigned flags;
	bool failed;
	char *path;
	uint64_t cap_nano;       /* enforced this session */
	uint64_t cap_answers;
	uint32_t hdr_crc;
	char identity[DP__LEDGER_ID_LEN];
	unsigned unit;           /* DP_LEDGER_UNIT_EPS or _RHO (ledger.h) */
	double delta;            /* nano-rho: the header's delta (0 otherwise) */
	uint64_t slack_nano;     /* nano-rho: the header's slack per answer */
	uint64_t rho_pure;       /* nano-epsilon: sum of charge^2/2 in nano-rho */
	uint64_t total;          /* nano, or DP_NANO_INF */
	uint64_t count;          /* answers that may have left: the last record's count */
	uint64_t seq;            /* records */
	uint32_t last_flags;     /* the last record's flags */
	uint64_t *ks;            /* k of record i at ks[i] (a reservation alone: the
				    k before it); non-decreasing, each k's
				    first index is its answer */
	/* Reserve-ahead (dp_ledger_charge_ahead): a share held for the next
	 * answer.  Only one this process wrote counts: one found at open may
	 * have been used by an answer whose record was lost. */
	uint64_t resv_nano;      /* 0: none held */
	bool resv_durable;       /* the record holding it was synced */
	bool unsynced;           /* the last record was written, not yet synced */
	bool pending;            /* an answer under it left; its record is due */
	uint64_t pending_k;
	size_t ks_cap;
	size_t torn;
};

/* ---- amounts (nano.h) ---- */

/* An amount the ledger is given (`what`: "epsilon cap" or "charge") in
 * nano-epsilon: > 0 and not NaN; infinite only with DP_LEDGER_ALLOW_INF in
 * `flags` (then DP_NANO_INF). */
static int amount_to_nano(const char *what, double eps, bool round_up, unsigned flags,
			  uint64_t *out)
{
	if (isnan(eps) || !(eps > 0.0))
		return dp_error_set(DP_EINVAL, "ledger: %s %g must be > 0", what, eps);
	if (isinf(eps)) {
		if (!(flags & DP_LEDGER_ALLOW_INF))
			return dp_error_set(DP_EINVAL, "ledger: infinite %s needs the "
					    "allow-infinite (testing) flag", what);
		*out = DP_NANO_INF;
		return 0;
	}
	return round_up ? dp_nano_ceil(eps, out) : dp_nano_floor(eps, out);
}

/* Count record charge c towards the ledger's totals. */
static void add_charge(dp_ledger *l, uint64_t c)
{
	if (l->unit == DP_LEDGER_UNIT_EPS && c != 0)
		l->rho_pure = dp_nano_add(l->rho_pure, dp_zcdp_charge_pure(c).rho_pure);
}

/* ---- I/O helpers ---- */

/* Read exactly n bytes at off; -1 with errno, or errno 0 on a short file. */
static int pread_all(int fd, unsigned char *p, size_t n, off_t off)
{
	while (n > 0) {
		ssize_t r = pread(fd, p, n, off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			errno = 0;
			return -1;
		}
		p += r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

/* Create `path` holding just the header (file.h: complete and durable
 * before it appears under its name, mode 0600); 0 also when `path`
 * appeared meanwhile (the caller opens and verifies it). */
static int create_file(const char *path, const struct dp__ledger_hdr *hd)
{
	unsigned char h[DP_LEDGER_HEADER_SIZE];
	int rc;

	dp__ledger_encode_header(h, hd);
	rc = dp_file_create_atomic(path, h, sizeof(h), 0600);
	return rc == DP_EEXIST ? 0 : rc;
}

/* ---- records ---- */

static int ks_reserve(dp_ledger *l, size_t n)
{
	if (dp_mem_reserve(&l->ks, &l->ks_cap, n, sizeof(*l->ks), 256) != 0)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	return 0;
}

/* The record at index i (0-based) that follows the state in l: check it
 * continues the log exactly. */
static int check_next(const dp_ledger *l, uint64_t hdr_cap, uint64_t hdr_capk,
			  uint64_t i, const dp_ledger_entry *e)
{
	const char *p = l->path;
	unsigned long long at = (unsigned long long)(i + 1);

	bool alone = e->flags & DP__LEDGER_NOANSWER;
	uint64_t grow = dp__ledger_count_growth(e->flags);
	uint64_t last_k = l->seq > 0 ? l->ks[l->seq - 1] : 0;

	if (e->seq != l->seq + 1)
		return dp_error_set(DP_ECORRUPT, "ledger %s: record %llu: seq %llu, expected %llu",
				    p, at, (unsigned long long)e->seq,
				    (unsigned long long)(l->seq + 1));
	/* An answer under a reservation needs one right before it; the count
	 * grows by the answers the record may release: its own unless
	 * covered, and the one it reserves (docs/ledger.md §9). */
	if (alone && (e->flags != (DP__LEDGER_NOANSWER | DP__LEDGER_RESERVES) || e->k != 0))
		return dp_error_set(DP_ECORRUPT, "ledger %s: record %llu: a reservation with "
				    "flags %u and k %llu", p, at, e->flags,
				    (unsigned long long)e->k);
	if ((e->flags & DP__LEDGER_COVERED) && !(l->seq > 0 && (l->last_flags & DP__LEDGER_RESERVES)))
		return dp_error_set(DP_ECORRUPT, "ledger %s: record %llu: covered by a reservation "
				    "that the previous record does not hold", p, at);
	if (e->count != l->count + grow)
		return dp_error_set(DP_ECORRUPT, "ledger %s: record %llu: count %llu, expected "
				    "%llu", p, at, (unsigned long long)e->count,
				    (unsigned long long)(l->count + grow));
	if (!alone && l->seq > 0 && e->k <= last_k)
		return dp_error_set(DP_ECORRUPT, "ledger %s: record %llu: k %llu not above "
				    "previous k %llu", p, at, (unsigned long long)e->k,
				    (unsigned long long)last_k);
	if ((e->charge_nano == 0) != (grow == 0))
		return dp_error_set(DP_ECORRUPT, "ledger %s: record %llu: %s charge", p, at,
				    e->charge_nano == 0 ? "zero" : "unexpected");
	if (e->total_nano != dp_nano_add(l->total, e->charge_nano))
		return dp_error_set(DP_ECORRUPT, "ledger %s: record %llu: total %llu != previous "
				    "%llu + charge %llu", p, at, (unsigned long long)e->total_nano,
				    (unsigned long long)l->total,
				    (unsigned long long)e->charge_nano);
	if (e->count > hdr_capk || (hdr_cap != DP_NANO_INF && e->total_nano > hdr_cap))
		return dp_error_set(DP_ECORRUPT, "ledger %s: record %llu: beyond the header caps",
				    p, at);
	return 0;
}

/* The last k answered, a pending one included. */
static uint64_t last_answered(const dp_ledger *l)
{
	if (l->pending)
		return l->pending_k;
	return l->seq > 0 ? l->ks[l->seq - 1] : 0;
}

/* Read and verify all records; drop (or, read-only, report) a torn tail. */
static int load_records(dp_ledger *l, off_t size, uint64_t hdr_cap, uint64_t hdr_capk)
{
	const size_t R = DP_LEDGER_RECORD_SIZE;
	uint64_t body = (uint64_t)size - DP_LEDGER_HEADER_SIZE;
	uint64_t nfull = body / R, rem = body % R, i = 0;
	unsigned char *buf;
	int rc = 0;

	buf = malloc(READ_CHUNK_RECS * R);
	if (!buf)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	if (nfull > SIZE_MAX / sizeof(uint64_t)) {
		rc = dp_error_set(DP_ENOMEM, "ledger %s: too many records", l->path);
		goto out;
	}
	rc = ks_reserve(l, (size_t)nfull + 1);
	if (rc < 0)
		goto out;
	while (i < nfull) {
		uint64_t n = nfull - i < READ_CHUNK_RECS ? nfull - i : READ_CHUNK_RECS;
		off_t off = (off_t)(DP_LEDGER_HEADER_SIZE + i * R);

		if (pread_all(l->fd, buf, (size_t)(n * R), off) != 0) {
			int saved = errno;

			rc = dp_error_set(DP_EIO, "ledger %s: read: %s", l->path,
					  saved ? strerror(saved) : "file shrank while reading");
			goto out;
		}
		for (uint64_t j = 0; j < n; j++, i++) {
			dp_ledger_entry e;
			int d = dp__ledger_decode_record(buf + j * R, l->hdr_crc, &e);

			/* Only the very last record may be torn, and only if
			 * nothing follows it. */
			if (d == DP__LEDGER_REC_DAMAGED && i + 1 == nfull && rem == 0) {
				rem = R;
				nfull--;
				break;
			}
			if (d != DP__LEDGER_REC_OK) {
				rc = dp_error_set(DP_ECORRUPT, "ledger %s: record %llu of %llu "
						  "(offset %llu): %s", l->path,
						  (unsigned long long)(i + 1),
						  (unsigned long long)nfull,
						  (unsigned long long)(DP_LEDGER_HEADER_SIZE + i * R),
						  d == DP__LEDGER_REC_DAMAGED ? "bad magic or checksum" :
						  "intact but from another ledger or format");
				goto out;
			}
			rc = check_next(l, hdr_cap, hdr_capk, i, &e);
			if (rc < 0)
				goto out;
			l->ks[l->seq] = (e.flags & DP__LEDGER_NOANSWER) ? last_answered(l) : e.k;
			l->seq = e.seq;
			l->count = e.count;
			l->last_flags = e.flags;
			l->total = e.total_nano;
			add_charge(l, e.charge_nano);
		}
	}
	l->torn = (size_t)rem;
	if (rem == 0)
		goto out;
	if (!(l->flags & DP_LEDGER_QUIET))
		DP_WARN("ledger", "torn final record path=%s bytes=%llu offset=%llu%s", l->path,
			(unsigned long long)rem,
			(unsigned long long)(DP_LEDGER_HEADER_SIZE + nfull * R),
			(l->flags & DP_LEDGER_READONLY) ? " (read-only: kept)" : " dropped");
	if (l->flags & DP_LEDGER_READONLY)
		goto out;
	if (ftruncate(l->fd, (off_t)(DP_LEDGER_HEADER_SIZE + nfull * R)) != 0) {
		int saved = errno;

		rc = dp_error_set(DP_EIO, "ledger %s: truncate torn record: %s", l->path,
				  strerror(saved));
	}
out:
	free(buf);
	return rc;
}

/* What the caller opens a ledger with (want) against its header (hd). */
struct want {
	unsigned unit;
	double cap;          /* in the unit */
	double delta, slack; /* nano-rho only */
	uint64_t cap_answers;
	const char *identity;
};

static const char *unit_name(unsigned unit)
{
	return unit == DP_LEDGER_UNIT_RHO ? "rho (Gaussian)" : "epsilon (Laplace)";
}

/* The unit, delta and slack must be the header's: they are the job's
 * mechanism, fixed when its ledger was made. */
static int check_unit(const dp_ledger *l, const struct dp__ledger_hdr *hd,
		      const struct want *w, uint64_t slack)
{
	if (hd->unit != w->unit)
		return dp_error_set(DP_EINVAL, "ledger %s: is in %s, not %s: a job keeps the "
				    "mechanism its ledger was made with", l->path,
				    unit_name(hd->unit), unit_name(w->unit));
	if (hd->unit == DP_LEDGER_UNIT_RHO && (hd->delta != w->delta || hd->slack_nano != slack))
		return dp_error_set(DP_EINVAL, "ledger %s: delta or slack differ from the file "
				    "(file: delta %.17g, slack %llu nano-epsilon; given: delta %.17g, "
				    "slack %llu)", l->path, hd->delta,
				    (unsigned long long)hd->slack_nano, w->delta,
				    (unsigned long long)slack);
	return 0;
}

static int check_caps(const dp_ledger *l, unsigned unit, uint64_t hdr_cap, uint64_t hdr_capk,
		      uint64_t cap, uint64_t capk, const char *identity)
{
	bool lower = l->flags & DP_LEDGER_ALLOW_LOWER;
	const char *u = unit == DP_LEDGER_UNIT_RHO ? "rho" : "epsilon";

	if (strcmp(identity, l->identity) != 0)
		return dp_error_set(DP_EINVAL, "ledger %s: belongs to identity '%s', not '%s'",
				    l->path, l->identity, identity);
	if (hdr_cap == DP_NANO_INF && !(l->flags & DP_LEDGER_ALLOW_INF))
		return dp_error_set(DP_EINVAL, "ledger %s: has an infinite %s cap (testing "
				    "ledger); refusing without the allow-infinite flag", l->path, u);
	if ((cap != hdr_cap && !(lower && cap < hdr_cap)) ||
	    (capk != hdr_capk && !(lower && capk < hdr_capk)))
		return dp_error_set(DP_EINVAL, "ledger %s: caps differ from the file (file: "
				    "%s %.9f, %llu answers; given: %s %.9f, %llu "
				    "answers)%s", l->path, u, dp_nano_to_eps(hdr_cap),
				    (unsigned long long)hdr_capk, u, dp_nano_to_eps(cap),
				    (unsigned long long)capk,
				    lower ? "; caps can only be lowered" :
				    "; use a new ledger file for new caps");
	return 0;
}

static int open_ledger(const char *path, const struct want *w, unsigned flags, dp_ledger **out)
{
	const unsigned known = DP_LEDGER_ALLOW_INF | DP_LEDGER_ALLOW_LOWER |
			       DP_LEDGER_NO_CREATE | DP_LEDGER_READONLY | DP_LEDGER_QUIET;
	bool ro = flags & DP_LEDGER_READONLY;
	unsigned char h[DP_LEDGER_HEADER_SIZE];
	uint64_t cap = 0, cap_answers = w->cap_answers, slack = 0;
	const char *identity = w->identity;
	struct dp__ledger_hdr hd;
	dp_ledger *l;
	struct stat st;
	int rc, saved;

	DP_REQUIRE(path != NULL && out != NULL);
	if (*path == '\0' || (flags & ~known))
		return dp_error_set(DP_EINVAL, "ledger: open: bad arguments");
	if (!identity)
		identity = "";
	if (!ro) {
		if (strlen(identity) > DP_LEDGER_IDENTITY_MAX)
			return dp_error_set(DP_EINVAL, "ledger: identity longer than %d bytes",
					    DP_LEDGER_IDENTITY_MAX);
		if (cap_answers == 0)
			return dp_error_set(DP_EINVAL, "ledger: answer cap must be >= 1");
		rc = amount_to_nano("cap", w->cap, false, flags, &cap);
		if (rc < 0)
			return rc;
		if (cap == 0)
			return dp_error_set(DP_EINVAL, "ledger: cap %g is below one nano-unit", w->cap);
		if (w->unit == DP_LEDGER_UNIT_RHO &&
		    (!(w->delta > 0.0 && w->delta < 1.0) || isnan(w->slack) || w->slack < 0.0 ||
		     dp_nano_ceil(w->slack, &slack) < 0))
			return dp_error_set(DP_EINVAL, "ledger: a Gaussian ledger needs a delta in "
					    "(0, 1) and a finite slack >= 0 (delta %g, slack %g)",
					    w->delta, w->slack);
	}

	l = calloc(1, sizeof(*l));
	if (!l)
		return dp_error_set(DP_ENOMEM, "ledger: out of memory");
	l->fd = -1;
	l->flags = flags;
	l->path = strdup(path);
	if (!l->path) {
		rc = dp_error_set(DP_ENOMEM, "ledger: out of memory");
		goto fail;
	}

	for (int attempt = 0;; attempt++) {
		l->fd = open(path, (ro ? O_RDONLY : O_RDWR | O_APPEND) | O_CLOEXEC);
		if (l->fd >= 0)
			break;
		saved = errno;
		if (saved != ENOENT) {
			rc = dp_error_set(DP_EIO, "ledger %s: open: %s", path, strerror(saved));
			goto fail;
		}
		if (ro || (flags & DP_LEDGER_NO_CREATE) || attempt > 0) {
			rc = dp_error_set(DP_ENOENT, "ledger %s: no such file", path);
			goto fail;
		}
		memset(&hd, 0, sizeof(hd));
		hd.cap_nano = cap;
		hd.cap_answers = cap_answers;
		hd.unit = w->unit;
		hd.slack_nano = slack;
		hd.delta = w->unit == DP_LEDGER_UNIT_RHO ? w->delta : 0.0;
		snprintf(hd.identity, sizeof(hd.identity), "%s", identity);
		rc = create_file(path, &hd);
		if (rc < 0)
			goto fail;
		DP_INFO("ledger", "created path=%s %s=%.9f answers=%llu identity='%s'", path,
			w->unit == DP_LEDGER_UNIT_RHO ? "rho" : "epsilon", dp_nano_to_eps(cap),
			(unsigned long long)cap_answers, identity);
	}
	/* One process per ledger: two daemons on one budget would double it. */
	if (!ro && flock(l->fd, LOCK_EX | LOCK_NB) != 0) {
		saved = errno;
		if (saved == EWOULDBLOCK)
			rc = dp_error_set(DP_ESTATE, "ledger %s: in use by another process", path);
		else
			rc = dp_error_set(DP_EIO, "ledger %s: flock: %s", path, strerror(saved));
		goto fail;
	}
	if (fstat(l->fd, &st) != 0) {
		saved = errno;
		rc = dp_error_set(DP_EIO, "ledger %s: stat: %s", path, strerror(saved));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = dp_error_set(DP_ECORRUPT, "ledger %s: not a regular file", path);
		goto fail;
	}
	if (st.st_size < DP_LEDGER_HEADER_SIZE) {
		rc = dp_error_set(DP_ECORRUPT, "ledger %s: %lld bytes, shorter than the %d-byte "
				  "header (damaged or not a ledger)", path,
				  (long long)st.st_size, DP_LEDGER_HEADER_SIZE);
		goto fail;
	}
	if (pread_all(l->fd, h, sizeof(h), 0) != 0) {
		saved = errno;
		rc = dp_error_set(DP_EIO, "ledger %s: read header: %s", path,
				  saved ? strerror(saved) : "short read");
		goto fail;
	}
	rc = dp__ledger_decode_header(path, h, &hd, &l->hdr_crc);
	if (rc < 0)
		goto fail;
	memcpy(l->identity, hd.identity, sizeof(l->identity));
	if (ro) {
		cap = hd.cap_nano;
		cap_answers = hd.cap_answers;
		identity = l->identity;
	} else {
		rc = check_unit(l, &hd, w, slack);
		if (rc == 0)
			rc = check_caps(l, hd.unit, hd.cap_nano, hd.cap_answers, cap, cap_answers,
					       identity);
		if (rc < 0)
			goto fail;
	}
	l->unit = hd.unit;
	l->delta = hd.delta;
	l->slack_nano = hd.slack_nano;
	l->cap_nano = cap;
	l->cap_answers = cap_answers;
	rc = load_records(l, st.st_size, hd.cap_nano, hd.cap_answers);
	if (rc < 0)
		goto fail;
	/* Make what we verified durable before building on it: a record written
	 * by a process killed before its fdatasync is still only in the page
	 * cache, and so is a truncation. */
	if (!ro && dp_file_sync(l->fd, 0) != 0) {
		saved = errno;
		rc = dp_error_set(DP_EIO, "ledger %s: fsync: %s", path, strerror(saved));
		goto fail;
	}
	if (!(flags & DP_LEDGER_QUIET))
		DP_INFO("ledger", "opened path=%s answers=%llu/%llu spent=%.9f cap=%.9f", path,
			(unsigned long long)l->count, (unsigned long long)l->cap_answers,
			dp_nano_to_eps(l->total), dp_nano_to_eps(l->cap_nano));
	*out = l;
	return 0;
fail:
	dp_ledger_close(l);
	return rc;
}

int dp_ledger_open(const char *path, double cap_eps, uint64_t cap_answers,
		   const char *identity, unsigned flags, dp_ledger **out)
{
	struct want w = { DP_LEDGER_UNIT_EPS, cap_eps, 0.0, 0.0, cap_answers, identity };

	return open_ledger(path, &w, flags, out);
}

int dp_ledger_open_gauss(const char *path, double cap_rho, double delta, double slack_eps,
			 uint64_t cap_answers, const char *identity, unsigned flags,
			 dp_ledger **out)
{
	struct want w = { DP_LEDGER_UNIT_RHO, cap_rho, delta, slack_eps, cap_answers, identity };

	return open_ledger(path, &w, flags, out);
}

void dp_ledger_close(dp_ledger *l)
{
	if (!l)
		return;
	/* The record of an answer that left under a reservation: that share
	 * is durable already, so this is bookkeeping, not the guarantee. */
	if (l->fd >= 0 && l->pending && !l->failed)
		(void)dp_ledger_settle(l, 0);
	if (l->fd >= 0)
		close(l->fd);  /* also drops the flock */
	free(l->ks);
	free(l->path);
	free(l);
}

/* Everything a charge checks before writing.  A held reservation of at
 * least the charge covers the answer (*covered): its share is already in
 * the count and the total. */
static int precheck(const dp_ledger *l, uint64_t k, double charge_eps, uint64_t *charge,
		    bool *covered)
{
	uint64_t c, last = last_answered(l);
	int rc;

	if (l->failed)
		return dp_error_set(DP_EIO, "ledger %s: failed after an I/O error; not answering",
				    l->path);
	if (l->flags & DP_LEDGER_READONLY)
		return dp_error_set(DP_ESTATE, "ledger %s: opened read-only", l->path);
	rc = amount_to_nano("charge", charge_eps, true, l->flags, &c);
	if (rc < 0)
		return rc;
	if ((l->seq > 0 || l->pending) && k <= last) {
		if ((l->pending && k == l->pending_k) || dp_ledger_lookup(l, k, NULL) == 0)
			return dp_error_set(DP_ESTATE, "ledger %s: request k=%llu was already "
					    "answered; refusing to answer it again", l->path,
					    (unsigned long long)k);
		return dp_error_set(DP_ESTATE, "ledger %s: request k=%llu is not above the last "
				    "answered k=%llu", l->path, (unsigned long long)k,
				    (unsigned long long)last);
	}
	*charge = c;
	*covered = l->resv_nano != 0 && c <= l->resv_nano;
	if (*covered)
		return 0;
	if (l->count >= l->cap_answers)
		return dp_error_set(DP_EBUDGET, "ledger %s: answer cap %llu reached", l->path,
				    (unsigned long long)l->cap_answers);
	if (l->cap_nano != DP_NANO_INF &&
	    (c == DP_NANO_INF || l->total > l->cap_nano || c > l->cap_nano - l->total))
		return dp_error_set(DP_EBUDGET, "ledger %s: charge %llu nano-eps exceeds the %llu "
				    "left of %llu", l->path, (unsigned long long)c,
				    (unsigned long long)dp_ledger_left_nano(l),
				    (unsigned long long)l->cap_nano);
	return 0;
}

int dp_ledger_check(const dp_ledger *l, uint64_t k, double charge_eps)
{
	uint64_t c;
	bool covered;

	DP_REQUIRE(l != NULL);
	return precheck(l, k, charge_eps, &c, &covered);
}

/* Does one more share of c fit? */
static bool fits(const dp_ledger *l, uint64_t c)
{
	if (l->count >= l->cap_answers)
		return false;
	if (l->cap_nano == DP_NANO_INF)
		return true;
	return c != DP_NANO_INF && l->total <= l->cap_nano && c <= l->cap_nano - l->total;
}

/* fdatasync the ledger; a failure is final (never retried: after a failed
 * fsync the kernel may have dropped the dirty pages and a second call
 * would report success). */
/* What an fdatasync that began after the last record was written means,
 * here or on another thread (dp_ledger_synced): err 0, everything written
 * is durable, the reservation included; else the ledger has failed.  The
 * record is named in the error as tag and number ("k=" 12, or "" and a
 * sequence number). */
static int sync_outcome(dp_ledger *l, int err, const char *tag, uint64_t rec)
{
	if (err != 0) {
		l->failed = true;
		l->resv_nano = 0;
		return dp_error_set(DP_EIO, "ledger %s: fdatasync of record %s%llu failed (%s); "
				    "ledger stopped", l->path, tag, (unsigned long long)rec,
				    strerror(err));
	}
	if (l->resv_nano != 0)
		l->resv_durable = true;
	l->unsynced = false;
	return 0;
}

static int sync_now(dp_ledger *l, uint64_t k)
{
	int err = dp_file_sync(l->fd, 1) != 0 ? errno : 0;

	return sync_outcome(l, err, "k=", k);
}

/* Append one record with these flags, for answer k (0 for a reservation
 * alone), charging `charge`.  Not synced.  The in-memory state counts the
 * record as soon as write() was tried (conservative). */
static int append(dp_ledger *l, uint32_t flags, uint64_t k, uint64_t charge, uint64_t share,
		  dp_ledger_entry *out)
{
	unsigned char rec[DP_LEDGER_RECORD_SIZE];
	dp_ledger_entry e;
	struct timespec ts;
	ssize_t w;
	int rc, saved;
	bool alone = flags & DP__LEDGER_NOANSWER;

	/* Only the final record may be torn (§4): the one before must be
	 * durable before another follows it.  Owed only after a settle whose
	 * sync has not reported yet (dp_ledger_settle_write). */
	if (l->unsynced) {
		rc = sync_now(l, k);
		if (rc < 0)
			return rc;
	}
	/* Allocate first so nothing can fail between a durable write and the
	 * in-memory update. */
	rc = ks_reserve(l, (size_t)l->seq + 1);
	if (rc < 0)
		return rc;
	clock_gettime(CLOCK_REALTIME, &ts);
	e.flags = flags;
	e.seq = l->seq + 1;
	e.k = alone ? 0 : k;
	e.charge_nano = charge;
	e.total_nano = dp_nano_add(l->total, charge);
	e.count = l->count + dp__ledger_count_growth(flags);
	e.time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	dp__ledger_encode_record(rec, l->hdr_crc, &e);

	/* One write() of the whole record; a short write is not continued
	 * (the tail is torn and is dropped at the next open). */
	do
		w = write(l->fd, rec, sizeof(rec));
	while (w < 0 && errno == EINTR);
	saved = errno;
	/* From here the record may be in the file: count it whatever happens
	 * (conservative: the ledger may over-count, never under-count). */
	l->ks[l->seq] = alone ? last_answered(l) : k;
	l->seq = e.seq;
	l->count = e.count;
	l->last_flags = e.flags;
	l->total = e.total_nano;
	add_charge(l, charge);
	l->resv_nano = (flags & DP__LEDGER_RESERVES) ? share : 0;
	l->resv_durable = false;
	l->unsynced = true;
	if (w != (ssize_t)sizeof(rec)) {
		l->failed = true;
		l->resv_nano = 0;
		return dp_error_set(DP_EIO, "ledger %s: write of record k=%llu failed (%s); "
				    "ledger stopped", l->path, (unsigned long long)k,
				    w < 0 ? strerror(saved) : "short write");
	}
	DP_DEBUG("ledger", "record k=%llu flags=%u charge=%llu total=%llu answers=%llu",
		 (unsigned long long)k, flags, (unsigned long long)charge,
		 (unsigned long long)e.total_nano, (unsigned long long)e.count);
	if (out)
		*out = e;
	return 0;
}

/* Write the record of the answer that left under a reservation. */
static int flush_pending(dp_ledger *l, uint64_t share, dp_ledger_entry *out)
{
	uint32_t flags = DP__LEDGER_COVERED;
	uint64_t k = l->pending_k;

	l->pending = false;
	l->pending_k = 0;
	if (share != 0 && fits(l, share))
		flags |= DP__LEDGER_RESERVES;
	return append(l, flags, k, (flags & DP__LEDGER_RESERVES) ? share : 0, share, out);
}

int dp_ledger_charge(dp_ledger *l, uint64_t k, double charge_eps, dp_ledger_entry *out)
{
	dp_ledger_entry e;
	uint64_t c;
	bool covered;
	int rc;

	DP_REQUIRE(l != NULL);
	rc = precheck(l, k, charge_eps, &c, &covered);
	if (rc == 0 && l->pending) {
		rc = dp_ledger_settle(l, 0);
		if (rc == 0)
			rc = precheck(l, k, charge_eps, &c, &covered);
	}
	if (rc < 0)
		return rc;
	if (covered) {
		/* Used here as a plain charge: record it as covered, now. */
		l->pending = true;
		l->pending_k = k;
		rc = flush_pending(l, 0, &e);
	} else {
		rc = append(l, 0, k, c, 0, &e);
	}
	if (rc < 0)
		return rc;
	rc = sync_now(l, k);
	if (rc == 0 && out)
		*out = e;
	return rc;
}

int dp_ledger_charge_ahead(dp_ledger *l, uint64_t k, double charge_eps, bool *covered)
{
	uint64_t c;
	int rc;

	DP_REQUIRE(l != NULL && covered != NULL);
	*covered = false;
	rc = precheck(l, k, charge_eps, &c, covered);
	if (rc < 0)
		return rc;
	if (l->pending) {
		/* The caller did not settle the last answer: do it now, with
		 * this share reserved, then check again. */
		rc = dp_ledger_settle(l, charge_eps);
		if (rc == 0)
			rc = precheck(l, k, charge_eps, &c, covered);
		if (rc < 0)
			return rc;
	}
	if (*covered) {
		/* The share is in a record already; make sure it is durable. */
		if (!l->resv_durable) {
			rc = sync_now(l, k);
			if (rc < 0)
				return rc;
		}
		l->resv_nano = 0;
		l->resv_durable = false;
		l->pending = true;
		l->pending_k = k;
		return 0;
	}
	rc = append(l, 0, k, c, 0, NULL);
	if (rc < 0)
		return rc;
	return sync_now(l, k);
}

int dp_ledger_settle_write(dp_ledger *l, double reserve_eps, uint64_t *seq)
{
	uint64_t share = 0;
	int rc;

	DP_REQUIRE(l != NULL && seq != NULL);
	*seq = 0;
	if (l->failed)
		return dp_error_set(DP_EIO, "ledger %s: failed after an I/O error", l->path);
	if (reserve_eps > 0) {
		rc = amount_to_nano("reservation", reserve_eps, true, l->flags, &share);
		if (rc < 0)
			return rc;
	}
	if (l->pending)
		rc = flush_pending(l, share, NULL);
	else if (share == 0 || l->resv_nano != 0 || !fits(l, share))
		return 0;
	else
		rc = append(l, DP__LEDGER_NOANSWER | DP__LEDGER_RESERVES, 0, share, share, NULL);
	if (rc == 0)
		*seq = l->seq;
	return rc;
}

int dp_ledger_settle(dp_ledger *l, double reserve_eps)
{
	uint64_t seq;
	int rc;

	rc = dp_ledger_settle_write(l, reserve_eps, &seq);
	if (rc < 0 || seq == 0)
		return rc;
	return sync_now(l, l->ks[seq - 1]);
}

const char *dp_ledger_path(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->path;
}

int dp_ledger_synced(dp_ledger *l, uint64_t seq, int err)
{
	DP_REQUIRE(l != NULL && seq >= 1 && seq <= l->seq);
	if (l->failed)
		return dp_error_set(DP_EIO, "ledger %s: failed after an I/O error", l->path);
	/* Only a sync that began after the reservation's record was written
	 * makes it durable: a later record may hold a newer one. */
	if (err == 0 && seq != l->seq)
		return 0;
	return sync_outcome(l, err, "", seq);
}

uint64_t dp_ledger_reserved_nano(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->resv_nano;
}

int dp_ledger_lookup(const dp_ledger *l, uint64_t k, dp_ledger_entry *out)
{
	unsigned char rec[DP_LEDGER_RECORD_SIZE];
	dp_ledger_entry e;
	size_t lo = 0, hi;

	DP_REQUIRE(l != NULL);
	if (l->failed)
		return dp_error_set(DP_EIO, "ledger %s: failed after an I/O error", l->path);
	hi = (size_t)l->seq;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->ks[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == l->seq || l->ks[lo] != k)
		return DP_ENOENT;
	if (!out)
		return 0;
	if (pread_all(l->fd, rec, sizeof(rec),
			  (off_t)(DP_LEDGER_HEADER_SIZE + (uint64_t)lo * DP_LEDGER_RECORD_SIZE)) != 0) {
		int saved = errno;

		return dp_error_set(DP_EIO, "ledger %s: read record %zu: %s", l->path, lo + 1,
				    saved ? strerror(saved) : "short read");
	}
	if (dp__ledger_decode_record(rec, l->hdr_crc, &e) != DP__LEDGER_REC_OK || e.k != k || e.seq != lo + 1 ||
	    (e.flags & DP__LEDGER_NOANSWER))
		return dp_error_set(DP_ECORRUPT, "ledger %s: record %zu changed on disk", l->path,
				    lo + 1);
	*out = e;
	return 0;
}

uint64_t dp_ledger_spent_nano(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->total;
}

double dp_ledger_spent(const dp_ledger *l)
{
	return dp_nano_to_eps(dp_ledger_spent_nano(l));
}

uint64_t dp_ledger_left_nano(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	if (l->failed)
		return 0;
	if (l->cap_nano == DP_NANO_INF)
		return DP_NANO_INF;
	return l->total >= l->cap_nano ? 0 : l->cap_nano - l->total;
}

double dp_ledger_left(const dp_ledger *l)
{
	return dp_nano_to_eps(dp_ledger_left_nano(l));
}

uint64_t dp_ledger_cap_nano(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->cap_nano;
}

double dp_ledger_cap(const dp_ledger *l)
{
	return dp_nano_to_eps(dp_ledger_cap_nano(l));
}

uint64_t dp_ledger_answers(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->count;
}

uint64_t dp_ledger_answers_cap(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->cap_answers;
}

int dp_ledger_last_k(const dp_ledger *l, uint64_t *k)
{
	DP_REQUIRE(l != NULL && k != NULL);
	if (l->seq == 0)
		return DP_ENOENT;
	*k = l->ks[l->seq - 1];
	return 0;
}

const char *dp_ledger_identity(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->identity;
}

size_t dp_ledger_torn_bytes(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->torn;
}

int dp_ledger_failed(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->failed ? 1 : 0;
}

unsigned dp_ledger_unit(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->unit;
}

double dp_ledger_delta(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->delta;
}

uint64_t dp_ledger_slack_nano(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->slack_nano;
}

uint64_t dp_ledger_rho_pure_nano(const dp_ledger *l)
{
	DP_REQUIRE(l != NULL);
	return l->rho_pure;
}

void dp_ledger_totals(const dp_ledger *l, dp_zcdp_totals *t)
{
	DP_REQUIRE(l != NULL && t != NULL);
	memset(t, 0, sizeof(*t));
	if (l->unit == DP_LEDGER_UNIT_EPS) {
		t->eps_pure = l->total;
		t->rho_pure = l->rho_pure;
		return;
	}
	t->rho_gauss = l->total;
	if (l->count != 0 && l->slack_nano > DP_NANO_MAX / l->count)
		t->slack = DP_NANO_INF;
	else
		t->slack = l->slack_nano * l->count;
}
