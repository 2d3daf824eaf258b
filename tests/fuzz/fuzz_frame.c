/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the frame decoder and message validation.
 *
 * The first input byte seeds how the rest is cut into chunks (so partial
 * reads are explored too); the rest is the byte stream of a connection.
 * Every message that comes out is validated with two sets of limits and
 * must survive a pack/unpack round trip unchanged.  Aborts on any
 * inconsistency; the sanitizers catch memory errors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/net/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_roundtrip(const Dpasync__Envelope *m)
{
	uint8_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	Dpasync__Envelope *m2 = NULL;

	if (dp_frame_encode(m, DP_FRAME_MAX_LIMIT, &a, &na) != 0)
		return;         /* e.g. nothing set: packs to 0 bytes */
	if (dp_frame_unpack(a + DP_FRAME_HDR, na - DP_FRAME_HDR, &m2) != 0)
		abort();        /* our own encoding must decode */
	if (dp_frame_encode(m2, DP_FRAME_MAX_LIMIT, &b, &nb) != 0)
		abort();
	if (na != nb || memcmp(a, b, na) != 0)
		abort();        /* pack is canonical after one unpack */
	if ((dp_frame_validate(m, NULL) == 0) != (dp_frame_validate(m2, NULL) == 0))
		abort();
	dp_frame_msg_free(m2);
	free(a);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dp_frame_decoder d;
	uint32_t seed;
	size_t off = 1;

	if (size < 1)
		return 0;
	seed = data[0] * 2654435761u + 1;
	dp_frame_decoder_init(&d, 1u << 16);
	while (off < size) {
		size_t chunk, used = 0;
		Dpasync__Envelope *m = NULL;
		dp_frame_limits l3 = { .p = 3, .max_str = 16 };

		seed = seed * 1103515245u + 12345u;
		chunk = 1 + (seed >> 16) % 64;
		if (chunk > size - off)
			chunk = size - off;
		if (dp_frame_decode(&d, data + off, chunk, &used, &m) != 0)
			break;
		if (used == 0 || used > chunk)
			abort();
		off += used;
		if (m != NULL) {
			(void)dp_frame_validate(m, NULL);
			(void)dp_frame_validate(m, &l3);
			(void)dp_frame_kind(m);
			check_roundtrip(m);
			dp_frame_msg_free(m);
		}
	}
	dp_frame_decoder_free(&d);
	return 0;
}
