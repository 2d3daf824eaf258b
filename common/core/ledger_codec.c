/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger file's bytes (docs/ledger.md §3): the 256-byte header and the
 * 64-byte records, little-endian on every host, each with its CRC-32.
 * What the records mean (the log's rules, charging, recovery) is
 * ledger.c; the two share ledger_impl.h. */
#include "common/core/ledger.h"
#include "common/core/ledger_impl.h"
#include "common/core/error.h"

#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define HDR_MAGIC      "DPLEDGER"
#define HDR_VERSION    1u   /* nano-epsilon (Laplace) files, as before units */
#define HDR_VERSION_U  2u   /* files with a unit: nano-rho (Gaussian) */
#define HDR_OFF_VER    8
#define HDR_OFF_HSIZE  12
#define HDR_OFF_RSIZE  16
#define HDR_OFF_FLAGS  20
#define HDR_OFF_CAP    24
#define HDR_OFF_CAPK   32
#define HDR_OFF_TIME   40
#define HDR_OFF_ID     48
#define HDR_OFF_UNIT   176  /* version 2: the unit, then 4 bytes zero */
#define HDR_OFF_SLACK  184  /* version 2: slack per answer, nano-epsilon */
#define HDR_OFF_DELTA  192  /* version 2: delta, the IEEE-754 bits of the double */
#define HDR_OFF_CRC    (DP_LEDGER_HEADER_SIZE - 4)

#define REC_MAGIC      0x524c5044u  /* "DPLR" little-endian */
#define REC_OFF_FLAGS  4
#define REC_OFF_SEQ    8
#define REC_OFF_K      16
#define REC_OFF_CHARGE 24
#define REC_OFF_TOTAL  32
#define REC_OFF_COUNT  40
#define REC_OFF_TIME   48
#define REC_OFF_HCRC   56
#define REC_OFF_CRC    60

/* docs/ledger.md §9. */
uint64_t dp__ledger_count_growth(uint32_t flags)
{
	if (flags & DP__LEDGER_NOANSWER)
		return 1;
	return (uint64_t)!(flags & DP__LEDGER_COVERED) + !!(flags & DP__LEDGER_RESERVES);
}


/* ---- little-endian encoding (the file is the same on every host) ---- */

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t crc_of(const unsigned char *p, size_t n)
{
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n);
}

/* ---- header ---- */

static uint64_t bits_of(double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	return v;
}

static double double_of(uint64_t v)
{
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

void dp__ledger_encode_header(unsigned char *h, const struct dp__ledger_hdr *hd)
{
	bool rho = hd->unit == DP_LEDGER_UNIT_RHO;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	memset(h, 0, DP_LEDGER_HEADER_SIZE);
	memcpy(h, HDR_MAGIC, 8);
	put32(h + HDR_OFF_VER, rho ? HDR_VERSION_U : HDR_VERSION);
	put32(h + HDR_OFF_HSIZE, DP_LEDGER_HEADER_SIZE);
	put32(h + HDR_OFF_RSIZE, DP_LEDGER_RECORD_SIZE);
	put32(h + HDR_OFF_FLAGS, 0);
	put64(h + HDR_OFF_CAP, hd->cap_nano);
	put64(h + HDR_OFF_CAPK, hd->cap_answers);
	put64(h + HDR_OFF_TIME, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
	memcpy(h + HDR_OFF_ID, hd->identity, strlen(hd->identity));
	if (rho) {
		put32(h + HDR_OFF_UNIT, DP_LEDGER_UNIT_RHO);
		put64(h + HDR_OFF_SLACK, hd->slack_nano);
		put64(h + HDR_OFF_DELTA, bits_of(hd->delta));
	}
	put32(h + HDR_OFF_CRC, crc_of(h, HDR_OFF_CRC));
}

/* The unit fields of a version-2 header: the unit nano-rho (version 1
 * is nano-epsilon), a finite slack and a delta in (0, 1). */
static int decode_unit(const char *path, const unsigned char *h, struct dp__ledger_hdr *hd)
{
	hd->unit = get32(h + HDR_OFF_UNIT);
	hd->slack_nano = get64(h + HDR_OFF_SLACK);
	hd->delta = double_of(get64(h + HDR_OFF_DELTA));
	if (hd->unit != DP_LEDGER_UNIT_RHO || get32(h + HDR_OFF_UNIT + 4) != 0)
		return dp_error_set(DP_ECORRUPT, "ledger %s: header unit %u invalid", path, hd->unit);
	if (hd->slack_nano > DP_NANO_MAX || !(hd->delta > 0.0 && hd->delta < 1.0))
		return dp_error_set(DP_ECORRUPT, "ledger %s: header slack or delta invalid", path);
	return 0;
}

int dp__ledger_decode_header(const char *path, const unsigned char *h, struct dp__ledger_hdr *hd,
			     uint32_t *crc)
{
	uint32_t ver, stored;
	size_t idlen, end = HDR_OFF_CRC;
	int rc;

	if (memcmp(h, HDR_MAGIC, 8) != 0)
		return dp_error_set(DP_ECORRUPT, "ledger %s: not a dpasync ledger (bad magic)", path);
	stored = get32(h + HDR_OFF_CRC);
	if (crc_of(h, HDR_OFF_CRC) != stored)
		return dp_error_set(DP_ECORRUPT, "ledger %s: header checksum mismatch", path);
	ver = get32(h + HDR_OFF_VER);
	if (ver != HDR_VERSION && ver != HDR_VERSION_U)
		return dp_error_set(DP_ECORRUPT, "ledger %s: unsupported format version %u "
				    "(this build reads %u and %u)", path, ver, HDR_VERSION,
				    HDR_VERSION_U);
	if (get32(h + HDR_OFF_HSIZE) != DP_LEDGER_HEADER_SIZE ||
	    get32(h + HDR_OFF_RSIZE) != DP_LEDGER_RECORD_SIZE ||
	    get32(h + HDR_OFF_FLAGS) != 0)
		return dp_error_set(DP_ECORRUPT, "ledger %s: header sizes or flags invalid", path);
	hd->cap_nano = get64(h + HDR_OFF_CAP);
	hd->cap_answers = get64(h + HDR_OFF_CAPK);
	if (hd->cap_nano == 0 || hd->cap_answers == 0)
		return dp_error_set(DP_ECORRUPT, "ledger %s: header caps are zero", path);
	idlen = strnlen((const char *)h + HDR_OFF_ID, DP__LEDGER_ID_LEN);
	if (idlen == DP__LEDGER_ID_LEN)
		return dp_error_set(DP_ECORRUPT, "ledger %s: header identity not terminated", path);
	hd->unit = DP_LEDGER_UNIT_EPS;
	hd->slack_nano = 0;
	hd->delta = 0.0;
	if (ver == HDR_VERSION_U) {
		rc = decode_unit(path, h, hd);
		if (rc < 0)
			return rc;
		end = HDR_OFF_UNIT;
	}
	for (size_t i = HDR_OFF_ID + idlen; i < HDR_OFF_CRC; i++) {
		if (h[i] != 0 && (i < end || i >= HDR_OFF_DELTA + 8))
			return dp_error_set(DP_ECORRUPT, "ledger %s: header reserved bytes not zero",
					    path);
	}
	memcpy(hd->identity, h + HDR_OFF_ID, idlen + 1);
	*crc = stored;
	return 0;
}

/* ---- records ---- */

void dp__ledger_encode_record(unsigned char *r, uint32_t hdr_crc, const dp_ledger_entry *e)
{
	memset(r, 0, DP_LEDGER_RECORD_SIZE);
	put32(r, REC_MAGIC);
	put32(r + REC_OFF_FLAGS, e->flags);
	put64(r + REC_OFF_SEQ, e->seq);
	put64(r + REC_OFF_K, e->k);
	put64(r + REC_OFF_CHARGE, e->charge_nano);
	put64(r + REC_OFF_TOTAL, e->total_nano);
	put64(r + REC_OFF_COUNT, e->count);
	put64(r + REC_OFF_TIME, e->time_ns);
	put32(r + REC_OFF_HCRC, hdr_crc);
	put32(r + REC_OFF_CRC, crc_of(r, REC_OFF_CRC));
}

int dp__ledger_decode_record(const unsigned char *r, uint32_t hdr_crc, dp_ledger_entry *e)
{
	if (get32(r) != REC_MAGIC || get32(r + REC_OFF_CRC) != crc_of(r, REC_OFF_CRC))
		return DP__LEDGER_REC_DAMAGED;
	if ((get32(r + REC_OFF_FLAGS) & ~DP__LEDGER_FLAGS_ALL) != 0 || get32(r + REC_OFF_HCRC) != hdr_crc)
		return DP__LEDGER_REC_FOREIGN;
	e->flags = get32(r + REC_OFF_FLAGS);
	e->seq = get64(r + REC_OFF_SEQ);
	e->k = get64(r + REC_OFF_K);
	e->charge_nano = get64(r + REC_OFF_CHARGE);
	e->total_nano = get64(r + REC_OFF_TOTAL);
	e->count = get64(r + REC_OFF_COUNT);
	e->time_ns = get64(r + REC_OFF_TIME);
	return DP__LEDGER_REC_OK;
}
