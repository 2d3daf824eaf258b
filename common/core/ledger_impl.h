/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the ledger (ledger.h), shared by its two files and by
 * nobody else: ledger_codec.c turns headers and records into the bytes of
 * docs/ledger.md §3 and back; ledger.c keeps the log (its rules, charging,
 * recovery at open). */
#ifndef DP_LEDGER_IMPL_H
#define DP_LEDGER_IMPL_H

#include <stdint.h>

#include "common/core/ledger.h"

/* The identity field of the header, its NUL included. */
#define DP__LEDGER_ID_LEN     128

/* Record flags (docs/ledger.md §9, reserve-ahead). */
#define DP__LEDGER_RESERVES   1u   /* the charge includes one share for the next answer */
#define DP__LEDGER_COVERED    2u   /* this answer was released under the previous record's share */
#define DP__LEDGER_NOANSWER   4u   /* a reservation alone (with RESERVES; k = 0) */
#define DP__LEDGER_FLAGS_ALL  (DP__LEDGER_RESERVES | DP__LEDGER_COVERED | DP__LEDGER_NOANSWER)

/* How much a record with these flags adds to the count (answers that may
 * have left): the table of docs/ledger.md §9, in one place for writing and
 * for verifying. */
uint64_t dp__ledger_count_growth(uint32_t flags);

/* What a header says (docs/ledger.md §3).  A nano-epsilon (Laplace)
 * ledger is written at file version 1 with slack_nano 0 and delta 0, as
 * before units existed; a nano-rho (Gaussian) one at version 2, which an
 * older build refuses as an unsupported version rather than misreads. */
struct dp__ledger_hdr {
	uint64_t cap_nano;      /* in the unit's nano (DP_NANO_INF: infinite) */
	uint64_t cap_answers;
	unsigned unit;          /* DP_LEDGER_UNIT_EPS or DP_LEDGER_UNIT_RHO */
	uint64_t slack_nano;    /* nano-rho only: the sampler's slack per answer, nano-epsilon */
	double delta;           /* nano-rho only: the job's delta, in (0, 1) */
	char identity[DP__LEDGER_ID_LEN];
};

/* A header (DP_LEDGER_HEADER_SIZE bytes at h) saying hd (its identity at
 * most DP_LEDGER_IDENTITY_MAX bytes), stamped with the wall clock. */
void dp__ledger_encode_header(unsigned char *h, const struct dp__ledger_hdr *hd);

/* Check the header bytes (magic, CRC, version 1 or 2, sizes, flags,
 * non-zero caps, terminated identity, the unit fields of version 2, zero
 * reserved bytes); fill hd and the header's CRC.  `path` names the file
 * in the detail.  0 or DP_ECORRUPT. */
int dp__ledger_decode_header(const char *path, const unsigned char *h, struct dp__ledger_hdr *hd,
			     uint32_t *crc);

/* A record (DP_LEDGER_RECORD_SIZE bytes at r) of entry e, bound to the
 * header whose CRC is hdr_crc. */
void dp__ledger_encode_record(unsigned char *r, uint32_t hdr_crc, const dp_ledger_entry *e);

/* Decode one record: DP__LEDGER_REC_OK and e filled; _DAMAGED for a bad
 * magic or CRC (what a torn write leaves); _FOREIGN for an intact record
 * that does not belong to this ledger (another header, unknown flags),
 * which a torn write cannot produce. */
enum { DP__LEDGER_REC_OK, DP__LEDGER_REC_DAMAGED, DP__LEDGER_REC_FOREIGN };
int dp__ledger_decode_record(const unsigned char *r, uint32_t hdr_crc, dp_ledger_entry *e);

#endif
