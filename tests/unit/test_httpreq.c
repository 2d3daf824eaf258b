/* SPDX-License-Identifier: Apache-2.0 */
/* The request-head parser of the metrics server (common/net/httpreq.h):
 * scanning as bytes arrive, and parsing a complete head.  test_httpd runs
 * the same rules through a real server. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "common/net/httpreq.h"

static char buf[DP_HTTPD_MAX_HEADER + 1];

/* Scan `text` as reads of `step` bytes (0: one read); returns the result
 * and sets *end for DONE. */
static int scan(const char *text, size_t len, size_t step, size_t *end)
{
	struct dp_httpreq_scan st = { 0 };
	size_t used = 0;
	int rc = DP_HTTPREQ_MORE;

	while (used < len && rc == DP_HTTPREQ_MORE) {
		size_t n = step && len - used > step ? step : len - used;

		memcpy(buf + used, text + used, n);
		used += n;
		rc = dp_httpreq_scan(&st, buf, used - n, used, end);
	}
	return rc;
}

static void test_scan(void **state)
{
	static const char ok[] = "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\nbody\0tail";
	size_t end = 0, len = sizeof(ok) - 1;

	/* Every cut gives the same end of head; the body (and its NUL) is
	 * never looked at. */
	for (size_t step = 0; step < 8; step++) {
		assert_int_equal(scan(ok, len, step, &end), DP_HTTPREQ_DONE);
		assert_int_equal(end, strlen(ok) - 4);
	}
	assert_int_equal(scan("GET / HTTP/1.1\r\nHo", 18, 0, &end), DP_HTTPREQ_MORE);
	assert_int_equal(scan("GET / HTTP/1.1\r\nH\0st: a\r\n\r\n", 27, 0, &end), 400);
	assert_int_equal(scan("POST / HTTP/1.1\r\n", 17, 3, &end), 405);  /* from the line */
	assert_int_equal(scan("GET / HTTP/2.0\n", 15, 0, &end), 505);
	assert_int_equal(scan("GET /\r\r\n", 8, 0, &end), 400);
}

static void test_limits(void **state)
{
	static char big[DP_HTTPD_MAX_HEADER + 100];
	size_t end = 0, n;

	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /", 5);
	assert_int_equal(scan(big, DP_HTTPD_MAX_HEADER, 1000, &end), 414);
	n = (size_t)snprintf(big, sizeof(big), "GET / HTTP/1.1\r\n");
	for (unsigned i = 0; i < DP_HTTPD_MAX_HEADERS + 1; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "X-%u: y\r\n", i);
	assert_int_equal(scan(big, n, 0, &end), 431);
}

static void test_parse(void **state)
{
	struct dp_httpreq_head h;
	char head[128];
	size_t end;

	snprintf(head, sizeof(head), "HEAD /status?a=b HTTP/1.1\r\nhOsT: x\r\n\r\n");
	end = strlen(head);
	assert_int_equal(dp_httpreq_parse(head, end, &h), 0);
	assert_string_equal(h.method, "HEAD");
	assert_string_equal(h.path, "/status");
	assert_string_equal(h.query, "a=b");
	snprintf(head, sizeof(head), "GET / HTTP/1.0\n\n");
	assert_int_equal(dp_httpreq_parse(head, strlen(head), &h), 0);
	assert_string_equal(h.query, "");
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\n\r\n");  /* 1.1 needs Host */
	assert_int_equal(dp_httpreq_parse(head, strlen(head), &h), 400);
	snprintf(head, sizeof(head), "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n");
	assert_int_equal(dp_httpreq_parse(head, strlen(head), &h), 400);
	snprintf(head, sizeof(head), "GET / HTTP/1.0\r\nBad Name: a\r\n\r\n");
	assert_int_equal(dp_httpreq_parse(head, strlen(head), &h), 400);
	snprintf(head, sizeof(head), "GET x HTTP/1.0\r\n\r\n");
	assert_int_equal(dp_httpreq_parse(head, strlen(head), &h), 400);
	snprintf(head, sizeof(head), "GET / HTTP/1.0\r\nNo-newline: a");  /* not from a scan */
	assert_int_equal(dp_httpreq_parse(head, strlen(head), &h), 400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
