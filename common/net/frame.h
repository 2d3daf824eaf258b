/* SPDX-License-Identifier: Apache-2.0 */
/* Framing and validation of the wire messages (docs/design.md §8, docs/protocol.md).
 *
 * A frame is a 4-byte big-endian length L (1 <= L <= max) followed by L
 * bytes: one packed dpasync.Envelope (proto/dpasync.proto).  The decoder is
 * incremental: feed it whatever the transport delivered (any split, several
 * frames at once) and take complete messages out one at a time.
 *
 * Ownership: messages produced here were unpacked by protobuf-c with the
 * default allocator; free them with dp_frame_msg_free().  Messages the
 * caller builds itself (on the stack, DPASYNC__..._INIT) are never passed to
 * dp_frame_msg_free. */
#ifndef DP_FRAME_H
#define DP_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "proto/dpasync.pb-c.h"

#define DP_PROTO_VERSION      1u
#define DP_FRAME_HDR          4u
/* Default and hard upper bound for the body length of one frame. */
#define DP_FRAME_MAX_DEFAULT  (16u << 20)
#define DP_FRAME_MAX_LIMIT    (1u << 30)

/* ---- Decoder -------------------------------------------------------------- */

typedef struct dp_frame_decoder {
	uint32_t max_len;    /* largest body accepted */
	uint8_t hdr[DP_FRAME_HDR];
	size_t hdr_have;     /* header bytes seen of the current frame */
	uint32_t body_len;   /* valid when hdr_have == DP_FRAME_HDR */
	uint8_t *body;       /* partial body, grows with the bytes received */
	size_t body_cap;
	size_t body_have;
	int failed;          /* sticky: after an error the decoder refuses input */
} dp_frame_decoder;

/* Initialise a decoder accepting bodies of at most max_len bytes
 * (0 -> DP_FRAME_MAX_DEFAULT; values above DP_FRAME_MAX_LIMIT are lowered to
 * it).  Embedded in the caller; release with dp_frame_decoder_free. */
void dp_frame_decoder_init(dp_frame_decoder *d, uint32_t max_len);

/* Release the partial-frame buffer.  The decoder may be re-initialised. */
void dp_frame_decoder_free(dp_frame_decoder *d);

/* Consume bytes from buf[0..len) until one frame completes or the input
 * runs out.  *used receives the number of bytes consumed (always set on
 * success); *msg receives the unpacked Envelope (caller owns it, free with
 * dp_frame_msg_free) or NULL when more bytes are needed.  Call again with
 * buf + *used while *used < len.
 *
 * The decoder does not look inside the message beyond unpacking it: call
 * dp_frame_validate before using it.  Memory held for a partial frame grows
 * with the bytes actually received, never with the announced length alone.
 *
 * Errors (the decoder stays failed; the connection must be closed):
 *   DP_EPROTO  length 0 or above max_len, or the body is not a valid
 *              Envelope (detail says which);
 *   DP_ENOMEM  out of memory.
 * On error *used and *msg are untouched. */
int dp_frame_decode(dp_frame_decoder *d, const uint8_t *buf, size_t len,
		    size_t *used, Dpasync__Envelope **msg);

/* ---- Encoder / helpers ---------------------------------------------------- */

/* Pack m into a new malloc'ed buffer holding the 4-byte header and the
 * body; *out and *out_len receive it (caller frees with free()).
 * Errors: DP_ERANGE if the packed body is empty (an Envelope with nothing
 * set still has no bytes: set version) or longer than max_len
 * (0 -> DP_FRAME_MAX_DEFAULT); DP_ENOMEM. */
int dp_frame_encode(const Dpasync__Envelope *m, uint32_t max_len,
		    uint8_t **out, size_t *out_len);

/* Unpack one body (without header) into an Envelope (caller frees with
 * dp_frame_msg_free).  Fields unknown to this version are skipped (kept by
 * protobuf-c, never used); a field number 0 is malformed.
 * DP_EPROTO if it is not a valid Envelope (protobuf-c also reports memory
 * exhaustion this way). */
int dp_frame_unpack(const uint8_t *body, size_t len, Dpasync__Envelope **msg);

/* Free a message produced by dp_frame_decode/dp_frame_unpack (NULL is a
 * no-op).  Equivalent to dpasync__envelope__free_unpacked(m, NULL). */
void dp_frame_msg_free(Dpasync__Envelope *m);

/* Name of the oneof case ("hello", "query", ..., "none"); never NULL. */
const char *dp_frame_kind(const Dpasync__Envelope *m);

/* ---- Validation ----------------------------------------------------------- */

#define DP_FRAME_MAX_STR 256u
#define DP_FRAME_MAX_P   (1u << 20)

/* A Goodbye{code, text} in env (docs/protocol.md "Goodbye"), text copied
 * into buf (at most DP_FRAME_MAX_STR bytes: the validation limit) with every
 * byte outside printable ASCII made a space, since the peer logs it.  env,
 * g and buf must outlive the send. */
void dp_frame_goodbye(Dpasync__Envelope *env, Dpasync__Goodbye *g, int code, const char *text,
		      char buf[DP_FRAME_MAX_STR + 1]);

typedef struct dp_frame_limits {
	size_t p;        /* expected vector length (theta, gradient, final_theta,
			  * Hello.n_features, Welcome.p); 0 = not known yet */
	size_t max_p;    /* upper bound on any vector length when p == 0;
			  * 0 -> DP_FRAME_MAX_P */
	size_t max_str;  /* longest string in bytes; 0 -> DP_FRAME_MAX_STR */
} dp_frame_limits;

/* Check an Envelope before use (lim NULL = all defaults, p unknown):
 *  - Envelope.version == DP_PROTO_VERSION, exactly one oneof case set and
 *    its submessage present;
 *  - vectors have length p (or 1..max_p when p == 0) and finite entries;
 *  - doubles finite, with the documented exceptions: Hello.epsilon,
 *    Answer.epsilon_spent and Answer.epsilon_left may be +inf (an owner
 *    with an infinite budget adds no noise), never NaN or negative;
 *  - strings at most max_str bytes of printable ASCII (0x20..0x7e);
 *    Hello.owner_id, Welcome.job and Welcome.model non-empty;
 *  - counts and parameters in range: Hello.version == 1, n_rows >= 1,
 *    1 <= n_features, rate >= 0 (finite; 0 = not said); Welcome T, N, n_total, p >= 1,
 *    k_done <= T, rho > 0, lambda >= 0, theta_max > 0, clip_l1 > 0, mode a
 *    known value, answers_cap any value (0: none planned; the owner's
 *    ledger is what bounds its answers); Query/Answer k >= 1; Done.T >= 1.
 * The k an Answer answers, and its monotonicity, are the caller's to check.
 * Returns 0 or DP_EPROTO with a detail naming the field. */
int dp_frame_validate(const Dpasync__Envelope *m, const dp_frame_limits *lim);

#endif
