/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the HTTP request parser of the metrics server
 * (common/net/httpreq.h, used by httpd.c).
 *
 * The first input byte seeds how the rest is cut into reads, as the
 * server's buffer receives them; the rest is what a client sends.  Checks:
 *   - scanning in pieces gives the same result as scanning all at once;
 *   - a complete head parses either to an error status or to a request
 *     whose method is GET or HEAD, whose path starts with '/' and holds no
 *     '?', space or control byte, and whose request line is exactly
 *     "METHOD PATH[?QUERY] HTTP/1.x";
 *   - every status is one httpd.h lists.
 * Aborts on any inconsistency; the sanitizers catch memory errors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/net/httpreq.h"
#include "tests/fuzz/fuzz_util.h"

/* Scan data as the server would, in reads of chunk() bytes (0: one read
 * of everything that fits).  Returns the scan result. */
static int scan(char *buf, const uint8_t *data, size_t size, uint32_t seed, size_t *head_end)
{
	struct dp_httpreq_scan st = { 0 };
	size_t used = 0, off = 0;
	int rc = DP_HTTPREQ_MORE;

	while (off < size && rc == DP_HTTPREQ_MORE) {
		size_t room = DP_HTTPD_MAX_HEADER - used, n = size - off;

		FUZZ_CHECK(room > 0);
		if (seed != 0) {
			seed = seed * 1103515245u + 12345u;
			if (n > 1 + (seed >> 16) % 200)
				n = 1 + (seed >> 16) % 200;
		}
		if (n > room)
			n = room;
		memcpy(buf + used, data + off, n);
		off += n;
		used += n;
		rc = dp_httpreq_scan(&st, buf, used - n, used, head_end);
	}
	FUZZ_CHECK(rc == DP_HTTPREQ_MORE || rc == DP_HTTPREQ_DONE || rc == 400 || rc == 405 ||
		   rc == 414 || rc == 431 || rc == 505);
	if (rc == DP_HTTPREQ_DONE)
		FUZZ_CHECK(*head_end >= 4 && *head_end <= used && buf[*head_end - 1] == '\n');
	return rc;
}

static void check_request(const char *head, const struct dp_httpreq_head *h, size_t head_end)
{
	size_t ml = strlen(h->method), pl = strlen(h->path), ql = strlen(h->query);
	const char *v;

	FUZZ_CHECK(strcmp(h->method, "GET") == 0 || strcmp(h->method, "HEAD") == 0);
	FUZZ_CHECK(h->path[0] == '/' && strchr(h->path, '?') == NULL);
	for (const char *p = h->path; *p; p++)
		FUZZ_CHECK((unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f);
	for (const char *p = h->query; *p; p++)
		FUZZ_CHECK((unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f);
	/* The request line, from the original bytes. */
	FUZZ_CHECK(ml + 1 + pl + 9 < head_end);
	FUZZ_CHECK(memcmp(head, h->method, ml) == 0 && head[ml] == ' ');
	FUZZ_CHECK(memcmp(head + ml + 1, h->path, pl) == 0);
	v = head + ml + 1 + pl;
	if (*v == '?') {
		FUZZ_CHECK(memcmp(v + 1, h->query, ql) == 0);
		v += 1 + ql;
	} else {
		FUZZ_CHECK(ql == 0);
	}
	FUZZ_CHECK(memcmp(v, " HTTP/1.", 8) == 0 && (v[8] == '0' || v[8] == '1'));
	FUZZ_CHECK(v[9] == '\n' || (v[9] == '\r' && v[10] == '\n'));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char a[DP_HTTPD_MAX_HEADER + 1], b[DP_HTTPD_MAX_HEADER + 1];
	static char orig[DP_HTTPD_MAX_HEADER + 1];
	struct dp_httpreq_head h;
	size_t end_a = 0, end_b = 0;
	int ra, rb, st;

	if (size < 1)
		return 0;
	ra = scan(a, data + 1, size - 1, 0, &end_a);
	rb = scan(b, data + 1, size - 1, data[0] * 2654435761u + 1, &end_b);
	FUZZ_CHECK(ra == rb && (ra != DP_HTTPREQ_DONE || end_a == end_b));
	if (ra != DP_HTTPREQ_DONE)
		return 0;
	memcpy(orig, a, end_a);
	st = dp_httpreq_parse(a, end_a, &h);
	FUZZ_CHECK(st == 0 || st == 400 || st == 405 || st == 505);
	if (st == 0)
		check_request(orig, &h, end_a);
	return 0;
}
