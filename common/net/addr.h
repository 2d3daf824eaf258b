/* SPDX-License-Identifier: Apache-2.0 */
/* Network addresses as users write them and as logs show them: the one
 * HOST:PORT parser (--learner, --listen, --metrics-listen) and the one
 * formatter of socket addresses ("1.2.3.4:5", "[::1]:5").  No resolution
 * happens here: a host name is resolved by whoever connects or binds. */
#ifndef DP_ADDR_H
#define DP_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Longest host part accepted (a DNS name is at most 253 bytes). */
#define DP_ADDR_HOST_MAX 255
/* Room for any dp_addr_format() result. */
#define DP_ADDR_TEXT_MAX 64

/* Flags for dp_addr_split(). */
#define DP_ADDR_PORT_ZERO 1u   /* port 0 allowed (a listener picks one) */

/* Split "HOST:PORT" or "[IPV6]:PORT" into host (without brackets; at most
 * DP_ADDR_HOST_MAX bytes, hsize must be larger) and port (1..65535, or
 * 0..65535 with DP_ADDR_PORT_ZERO).  An unbracketed host with a ':' is
 * refused (write IPv6 literals in brackets).  `what` names the setting in
 * the detail ("--learner 'x': expected HOST:PORT").  Errors: DP_EINVAL;
 * outputs untouched on failure. */
int dp_addr_split(const char *what, const char *s, unsigned flags, char *host, size_t hsize,
		  uint16_t *port);

/* "HOST:PORT" with a literal host (IPv4 dotted quad, "[IPV6]", or
 * "localhost" for 127.0.0.1) into a socket address, for listeners that
 * must not depend on name resolution.  Errors: DP_EINVAL with a detail;
 * *out untouched on failure. */
int dp_addr_parse_literal(const char *what, const char *s, unsigned flags,
			  struct sockaddr_storage *out);

/* "1.2.3.4:5" or "[::1]:5"; "" for another family.  Always NUL-terminated;
 * size >= DP_ADDR_TEXT_MAX always suffices. */
void dp_addr_format(const struct sockaddr *sa, char *buf, size_t size);

#endif
