/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP/1.x request heads for httpd.c (httpreq.h). */
#include "common/net/httpreq.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

static bool is_tchar(char ch)
{
	return isalnum((unsigned char)ch) || (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch));
}

/* Check the request line [s, e) (CR already dropped).  Returns 0 when it
 * can be served, else the status to answer with.  *method_len and *target
 * describe the parts on success. */
static int check_request_line(const char *s, const char *e, size_t *method_len,
			      const char **target, size_t *target_len, int *minor)
{
	const char *sp1, *sp2, *v;
	size_t ml;

	sp1 = memchr(s, ' ', (size_t)(e - s));
	if (sp1 == NULL)
		return 400;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(e - sp1 - 1));
	if (sp2 == NULL)
		return 400;
	ml = (size_t)(sp1 - s);
	if (ml == 0 || ml > 20)
		return 400;
	for (const char *p = s; p < sp1; p++)
		if (!is_tchar(*p))
			return 400;
	if (sp2 == sp1 + 1)
		return 400;
	for (const char *p = sp1 + 1; p < sp2; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return 400;
	v = sp2 + 1;
	if (e - v != 8 || memcmp(v, "HTTP/", 5) != 0 || !isdigit((unsigned char)v[5]) ||
	    v[6] != '.' || !isdigit((unsigned char)v[7]))
		return 400;
	if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
		return 505;
	if (!((ml == 3 && memcmp(s, "GET", 3) == 0) || (ml == 4 && memcmp(s, "HEAD", 4) == 0)))
		return 405;
	if (sp1[1] != '/')
		return 400;
	*method_len = ml;
	*target = sp1 + 1;
	*target_len = (size_t)(sp2 - sp1 - 1);
	*minor = v[7] - '0';
	return 0;
}

/* Check one header line [s, e).  Returns 1 for a Host header, 0 for
 * another valid one, -1 when malformed. */
static int check_header(const char *s, const char *e)
{
	const char *colon = memchr(s, ':', (size_t)(e - s));

	if (colon == NULL || colon == s)
		return -1;
	for (const char *p = s; p < colon; p++)
		if (!is_tchar(*p))
			return -1;  /* also whitespace before ':' and obs-fold */
	for (const char *p = colon + 1; p < e; p++) {
		unsigned char ch = (unsigned char)*p;

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return -1;
	}
	return (colon - s == 4 && strncasecmp(s, "host", 4) == 0) ? 1 : 0;
}

/* Line [start, nl) without its CR; a CR anywhere else is malformed. */
static const char *line_end(const char *start, const char *nl)
{
	if (nl > start && nl[-1] == '\r')
		nl--;
	return memchr(start, '\r', (size_t)(nl - start)) ? NULL : nl;
}

int dp_httpreq_scan(struct dp_httpreq_scan *st, const char *buf, size_t from, size_t used,
		    size_t *head_end)
{
	/* Byte by byte, stopping at the end of the head: what follows it (a
	 * body, a pipelined request) is never looked at, so the outcome does
	 * not depend on how the bytes were cut into reads. */
	for (size_t i = from; i < used; i++) {
		if (buf[i] == '\0')
			return 400;
		if (buf[i] != '\n')
			continue;
		if (!st->line_ok) {
			const char *end = line_end(buf, buf + i), *t;
			size_t ml, tl;
			int minor, status;

			status = end ? check_request_line(buf, end, &ml, &t, &tl, &minor) : 400;
			if (status != 0)
				return status;
			st->line_ok = true;
		} else if (i == st->line_start ||
			   (i == st->line_start + 1 && buf[st->line_start] == '\r')) {
			*head_end = i + 1;
			return DP_HTTPREQ_DONE;
		}
		st->line_start = i + 1;
		st->n_lines++;
		if (st->n_lines > DP_HTTPD_MAX_HEADERS + 1)
			return 431;
	}
	if (used >= DP_HTTPD_MAX_HEADER)
		return st->line_ok ? 431 : 414;
	return DP_HTTPREQ_MORE;
}

int dp_httpreq_parse(char *buf, size_t head_end, struct dp_httpreq_head *out)
{
	const char *target, *end, *s = buf;
	char *nl, *path, *q;
	size_t ml, tl, n_host = 0;
	int minor, status;

	buf[head_end] = '\0';
	nl = memchr(s, '\n', head_end);
	end = nl ? line_end(s, nl) : NULL;
	status = end ? check_request_line(s, end, &ml, &target, &tl, &minor) : 400;
	if (status != 0)
		return status;
	for (const char *ls = nl + 1; ls < buf + head_end;) {
		char *lnl = memchr(ls, '\n', (size_t)(buf + head_end - ls));
		const char *le = lnl ? line_end(ls, lnl) : NULL;
		int h;

		if (le == NULL)
			return 400;
		if (le == ls)
			break;  /* the blank line */
		h = check_header(ls, le);
		if (h < 0)
			return 400;
		n_host += (size_t)h;
		ls = lnl + 1;
	}
	if (n_host > 1 || (minor == 1 && n_host == 0))
		return 400;
	/* The target is split in place: the head buffer is the caller's. */
	memcpy(out->method, s, ml);
	out->method[ml] = '\0';
	path = (char *)target;
	path[tl] = '\0';
	q = strchr(path, '?');
	if (q) {
		*q = '\0';
		q++;
	}
	out->path = path;
	out->query = q ? q : "";
	return 0;
}
