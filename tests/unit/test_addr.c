/* SPDX-License-Identifier: Apache-2.0 */
/* Addresses: the HOST:PORT splitter, the literal parser for listeners, and
 * the socket address formatter. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "common/core/error.h"
#include "common/net/addr.h"

static void expect_split(const char *s, unsigned flags, const char *host, uint16_t port)
{
	char h[DP_ADDR_HOST_MAX + 1] = "";
	uint16_t p = 0;
	int r = dp_addr_split("--x", s, flags, h, sizeof(h), &p);

	if (r != 0)
		fail_msg("'%s': %s", s, dp_error_detail(r));
	assert_string_equal(h, host);
	assert_int_equal(p, port);
}

static void expect_split_error(const char *s, unsigned flags, const char *detail)
{
	char h[DP_ADDR_HOST_MAX + 1] = "untouched";
	uint16_t p = 4242;
	int r = dp_addr_split("--x", s, flags, h, sizeof(h), &p);

	if (r != DP_EINVAL)
		fail_msg("'%s': accepted (host '%s' port %u)", s ? s : "(null)", h, p);
	assert_string_equal(h, "untouched");
	assert_int_equal(p, 4242);
	if (detail != NULL)
		assert_string_equal(dp_error_detail(r), detail);
}

static void test_split(void **state)
{
	char host300[300], s[320];

	expect_split("learner:7443", 0, "learner", 7443);
	expect_split("127.0.0.1:1", 0, "127.0.0.1", 1);
	expect_split("a.b-c.example:65535", 0, "a.b-c.example", 65535);
	expect_split("[::1]:80", 0, "::1", 80);
	expect_split("[fe80::1:2]:8080", 0, "fe80::1:2", 8080);
	expect_split("[::ffff:127.0.0.1]:9", 0, "::ffff:127.0.0.1", 9);
	expect_split("h:007", 0, "h", 7);            /* leading zeros are digits */

	/* Port 0 only with the flag (a listener picks a port). */
	expect_split_error("h:0", 0, "--x 'h:0': port must be 1..65535");
	expect_split("h:0", DP_ADDR_PORT_ZERO, "h", 0);
	expect_split("[::]:0", DP_ADDR_PORT_ZERO, "::", 0);
	expect_split_error("h:65536", DP_ADDR_PORT_ZERO, "--x 'h:65536': port must be 0..65535");
	expect_split_error("h:99999", 0, NULL);
	expect_split_error("h:123456", DP_ADDR_PORT_ZERO, "--x 'h:123456': bad port");

	expect_split_error(NULL, 0, "--x: expected HOST:PORT");
	expect_split_error("", 0, "--x: expected HOST:PORT");
	expect_split_error("learner", 0, "--x 'learner': expected HOST:PORT");
	expect_split_error(":80", 0, "--x ':80': bad host");
	expect_split_error("h:", 0, "--x 'h:': bad port");
	expect_split_error("h:+1", 0, NULL);
	expect_split_error("h:-1", 0, NULL);
	expect_split_error("h:8o", 0, NULL);
	expect_split_error("h:80 ", 0, NULL);
	expect_split_error("::1:80", 0, "--x '::1:80': write an IPv6 address as [ADDR]:PORT");
	expect_split_error("[::1]80", 0, "--x '[::1]80': expected [ADDR]:PORT");
	expect_split_error("[::1", 0, NULL);
	expect_split_error("[::1]:", 0, NULL);
	expect_split_error("[]:80", 0, "--x '[]:80': bad host");

	/* The host part is at most DP_ADDR_HOST_MAX bytes. */
	memset(host300, 'a', sizeof(host300));
	host300[DP_ADDR_HOST_MAX] = '\0';
	snprintf(s, sizeof(s), "%s:1", host300);
	expect_split(s, 0, host300, 1);
	host300[DP_ADDR_HOST_MAX] = 'a';
	host300[DP_ADDR_HOST_MAX + 1] = '\0';
	snprintf(s, sizeof(s), "%s:1", host300);
	expect_split_error(s, 0, NULL);
}

static void test_parse_literal(void **state)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	static const char *const bad[] = {
		"127.0.0.1", "127.0.0.1:", ":80", "::1:80", "1.2.3:80", "1.2.3.4.5:80",
		"host:80", "127.0.0.1:65536", "127.0.0.1:+1", "127.0.0.1:-1", "127.0.0.1:8o",
		"[::1]80", "[::1]:", "[::1", "[]:80", "[1.2.3.4]:80", "127.0.0.1:123456",
		" 127.0.0.1:80", "127.0.0.1:80 ", "", "0x7f.1:80", "1:80", "[localhost]:80",
	};

	assert_int_equal(dp_addr_parse_literal("l", "127.0.0.1:9464", 0, &ss), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(s4->sin_port), 9464);
	assert_int_equal(ntohl(s4->sin_addr.s_addr), 0x7f000001);
	assert_int_equal(dp_addr_parse_literal("l", "0.0.0.0:0", DP_ADDR_PORT_ZERO, &ss), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(s4->sin_port), 0);
	assert_int_equal(ntohl(s4->sin_addr.s_addr), 0);
	assert_int_equal(dp_addr_parse_literal("l", "localhost:65535", 0, &ss), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohl(s4->sin_addr.s_addr), 0x7f000001);
	assert_int_equal(ntohs(s4->sin_port), 65535);
	assert_int_equal(dp_addr_parse_literal("l", "[::1]:80", 0, &ss), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(ntohs(s6->sin6_port), 80);
	assert_true(IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr));
	assert_int_equal(dp_addr_parse_literal("l", "[fe80::1:2]:8080", 0, &ss), 0);
	assert_int_equal(ntohs(s6->sin6_port), 8080);
	assert_int_equal(dp_addr_parse_literal("l", "[::]:0", DP_ADDR_PORT_ZERO, &ss), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_true(IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr));

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ss.ss_family = 12345;
		if (dp_addr_parse_literal("l", bad[i], DP_ADDR_PORT_ZERO, &ss) != DP_EINVAL)
			print_error("accepted '%s'\n", bad[i]);
		assert_int_equal(dp_addr_parse_literal("l", bad[i], DP_ADDR_PORT_ZERO, &ss), DP_EINVAL);
		assert_int_equal(ss.ss_family, 12345);  /* untouched */
	}
	/* Port 0 needs the flag here too. */
	assert_int_equal(dp_addr_parse_literal("l", "127.0.0.1:0", 0, &ss), DP_EINVAL);
	assert_int_equal(ss.ss_family, 12345);
	assert_int_equal(dp_addr_parse_literal("l", NULL, 0, &ss), DP_EINVAL);

	/* The detail names the setting and the forms accepted. */
	assert_int_equal(dp_addr_parse_literal("--metrics-listen", "host:80", 0, &ss), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL), "--metrics-listen 'host:80': expected "
			    "IPV4:PORT, [IPV6]:PORT or localhost:PORT");
	assert_int_equal(dp_addr_parse_literal("--metrics-listen", "", 0, &ss), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL), "--metrics-listen: expected HOST:PORT");
}

static void test_format(void **state)
{
	struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons(7443) };
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(1),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_storage ss;
	char buf[DP_ADDR_TEXT_MAX], small[8];

	inet_pton(AF_INET, "192.168.1.20", &s4.sin_addr);
	dp_addr_format((struct sockaddr *)&s4, buf, sizeof(buf));
	assert_string_equal(buf, "192.168.1.20:7443");
	dp_addr_format((struct sockaddr *)&s6, buf, sizeof(buf));
	assert_string_equal(buf, "[::1]:1");

	/* The longest texts fit in DP_ADDR_TEXT_MAX. */
	inet_pton(AF_INET6, "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", &s6.sin6_addr);
	s6.sin6_port = htons(65535);
	dp_addr_format((struct sockaddr *)&s6, buf, sizeof(buf));
	assert_string_equal(buf, "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535");
	inet_pton(AF_INET6, "::ffff:255.255.255.255", &s6.sin6_addr);
	dp_addr_format((struct sockaddr *)&s6, buf, sizeof(buf));
	assert_string_equal(buf, "[::ffff:255.255.255.255]:65535");
	inet_pton(AF_INET6, "1111:2222:3333:4444:5555:6666:7777:8888", &s6.sin6_addr);
	dp_addr_format((struct sockaddr *)&s6, buf, sizeof(buf));
	assert_string_equal(buf, "[1111:2222:3333:4444:5555:6666:7777:8888]:65535");

	/* Round trip with the parser. */
	assert_int_equal(dp_addr_parse_literal("l", buf, 0, &ss), 0);
	dp_addr_format((struct sockaddr *)&ss, buf, sizeof(buf));
	assert_string_equal(buf, "[1111:2222:3333:4444:5555:6666:7777:8888]:65535");

	/* Truncated, always terminated. */
	dp_addr_format((struct sockaddr *)&s4, small, sizeof(small));
	assert_string_equal(small, "192.168");

	/* Another family, or no address: "". */
	memset(&ss, 0, sizeof(ss));
	ss.ss_family = AF_UNIX;
	strcpy(buf, "x");
	dp_addr_format((struct sockaddr *)&ss, buf, sizeof(buf));
	assert_string_equal(buf, "");
	strcpy(buf, "x");
	dp_addr_format(NULL, buf, sizeof(buf));
	assert_string_equal(buf, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_parse_literal),
		cmocka_unit_test(test_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
