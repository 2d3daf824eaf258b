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

/* A header (DP_LEDGER_HEADER_SIZE bytes at h) for these caps and identity
 * (at most DP_LEDGER_IDENTITY_MAX bytes), stamped with the wall clock. */
void dp__ledger_encode_header(unsigned char *h, uint64_t cap_nano, uint64_t cap_answers,
			      const char *identity);

/* Check the header bytes (magic, CRC, version, sizes, flags, non-zero caps,
 * terminated identity, zero reserved bytes); fill the caps, identity
 * (DP__LEDGER_ID_LEN bytes) and the header's CRC.  `path` names the file
 * in the detail.  0 or DP_ECORRUPT. */
int dp__ledger_decode_header(const char *path, const unsigned char *h, uint64_t *cap_nano,
			     uint64_t *cap_answers, char *identity, uint32_t *crc);

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
