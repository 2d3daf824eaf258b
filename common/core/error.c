#include "common/core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char dp__err_buf[512];
static _Thread_local int dp__err_code;

const char *dp_strerror(int err)
{
	switch (err) {
	case DP_OK: return "success";
	case DP_EFORMAT: return "malformed input";
	case DP_EBUDGET: return "privacy budget exhausted";
	case DP_ECORRUPT: return "corrupt file";
	case DP_EPROTO: return "protocol violation";
	case DP_ETLS: return "TLS failure";
	case DP_ENUMERIC: return "non-finite value";
	case DP_ERNG: return "random generator failure";
	case DP_ESTATE: return "operation not allowed in this state";
	default:
		if (err < 0 && err > DP__EBASE)
			return strerror(-err);
		return "unknown error";
	}
}

int dp_error_set(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dp__err_buf, sizeof(dp__err_buf), fmt, ap);
	va_end(ap);
	dp__err_code = err;
	return err;
}

const char *dp_error_detail(int err)
{
	if (dp__err_code == err && err != 0 && dp__err_buf[0] != '\0')
		return dp__err_buf;
	return dp_strerror(err);
}

void dp_error_clear(void)
{
	dp__err_buf[0] = '\0';
	dp__err_code = 0;
}
