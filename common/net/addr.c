/* SPDX-License-Identifier: Apache-2.0 */
#include "common/net/addr.h"
#include "common/core/error.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

int dp_addr_split(const char *what, const char *s, unsigned flags, char *host, size_t hsize,
		  uint16_t *port)
{
	const char *colon, *h = s;
	unsigned long v = 0;
	size_t hl;

	DP_REQUIRE(what != NULL && host != NULL && port != NULL && hsize > DP_ADDR_HOST_MAX);
	if (s == NULL || *s == '\0')
		return dp_error_set(DP_EINVAL, "%s: expected HOST:PORT", what);
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (rb == NULL || rb[1] != ':')
			return dp_error_set(DP_EINVAL, "%s '%s': expected [ADDR]:PORT", what, s);
		h = s + 1;
		hl = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			return dp_error_set(DP_EINVAL, "%s '%s': expected HOST:PORT", what, s);
		hl = (size_t)(colon - s);
		if (memchr(s, ':', hl) != NULL)
			return dp_error_set(DP_EINVAL, "%s '%s': write an IPv6 address as [ADDR]:PORT",
					    what, s);
	}
	if (hl == 0 || hl > DP_ADDR_HOST_MAX)
		return dp_error_set(DP_EINVAL, "%s '%s': bad host", what, s);
	if (colon[1] == '\0' || strlen(colon + 1) > 5)
		return dp_error_set(DP_EINVAL, "%s '%s': bad port", what, s);
	for (const char *c = colon + 1; *c; c++) {
		if (*c < '0' || *c > '9')
			return dp_error_set(DP_EINVAL, "%s '%s': bad port", what, s);
		v = v * 10 + (unsigned long)(*c - '0');
	}
	if (v > 65535 || (v == 0 && !(flags & DP_ADDR_PORT_ZERO)))
		return dp_error_set(DP_EINVAL, "%s '%s': port must be %s..65535", what, s,
				    flags & DP_ADDR_PORT_ZERO ? "0" : "1");
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (uint16_t)v;
	return 0;
}

int dp_addr_parse_literal(const char *what, const char *s, unsigned flags,
			  struct sockaddr_storage *out)
{
	struct sockaddr_storage ss;
	char host[DP_ADDR_HOST_MAX + 1];
	uint16_t port;
	int rc;

	rc = dp_addr_split(what, s, flags, host, sizeof(host), &port);
	if (rc != 0)
		return rc;
	memset(&ss, 0, sizeof(ss));
	if (s[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			goto bad;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		/* inet_pton takes the dotted quad only: no "1", no "0x7f.1". */
		if (inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host,
			      &s4->sin_addr) != 1)
			goto bad;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
	}
	*out = ss;
	return 0;
bad:
	return dp_error_set(DP_EINVAL, "%s '%s': expected IPV4:PORT, [IPV6]:PORT or "
			    "localhost:PORT", what, s);
}

void dp_addr_format(const struct sockaddr *sa, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "";

	DP_REQUIRE(buf != NULL && size > 0);
	buf[0] = '\0';
	if (sa == NULL)
		return;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(buf, size, "%s:%u", ip, ntohs(s4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, size, "[%s]:%u", ip, ntohs(s6->sin6_port));
	}
}
