/* SPDX-License-Identifier: Apache-2.0 */
#include "common/core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char err_buf[512];
static _Thread_local int err_code;

const char *dp_strerror(int err)
{
	const char *text = NULL;

	switch (err) {
	case DP_OK:
		return "success";
#define DP__ERR_TEXT(name, value, txt) case DP_##name: text = (txt); break;
	DP_ERRNO_MAP(DP__ERR_TEXT)
#undef DP__ERR_TEXT
	default:
		break;
	}
	if (text != NULL)
		return text;
	if (err < 0 && err > DP__EBASE)
		return strerror(-err);
	return "unknown error";
}

int dp_error_set(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err_buf, sizeof(err_buf), fmt, ap);
	va_end(ap);
	err_code = err;
	return err;
}

const char *dp_error_detail(int err)
{
	if (err_code == err && err != 0 && err_buf[0] != '\0')
		return err_buf;
	return dp_strerror(err);
}

void dp_error_clear(void)
{
	err_buf[0] = '\0';
	err_code = 0;
}

void dp__require_failed(const char *cond, const char *file, int line, const char *func)
{
	fprintf(stderr, "dpasync: invariant broken in %s (%s:%d): %s\n", func, file, line, cond);
	fflush(stderr);
	abort();
}
