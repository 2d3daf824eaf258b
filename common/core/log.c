/* SPDX-License-Identifier: Apache-2.0 */
#include "common/core/log.h"
#include "common/core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum dp_log_level min_level = DP_LOG_INFO;
const char *const dp_log_level_names[] = { "debug", "info", "warn", "error", NULL };

void dp_log_set_level(enum dp_log_level level)
{
	DP_REQUIRE(level >= DP_LOG_DEBUG && level <= DP_LOG_ERROR);
	min_level = level;
}

int dp_log_parse_level(const char *s, enum dp_log_level *out)
{
	DP_REQUIRE(s != NULL && out != NULL);
	for (int i = 0; dp_log_level_names[i] != NULL; i++) {
		if (strcmp(s, dp_log_level_names[i]) == 0) {
			*out = (enum dp_log_level)i;
			return 0;
		}
	}
	return dp_error_set(DP_EINVAL, "log level '%s': expected debug, info, warn or error", s);
}

void dp_log(enum dp_log_level level, const char *subsys, const char *fmt, ...)
{
	char line[1024];
	struct timespec ts;
	struct tm tm;
	size_t off;
	va_list ap;

	DP_REQUIRE(level >= DP_LOG_DEBUG && level <= DP_LOG_ERROR && subsys != NULL && fmt != NULL);
	if (level < min_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	off = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	off += (size_t)snprintf(line + off, sizeof(line) - off, ".%03ldZ %s %s: ",
				ts.tv_nsec / 1000000L, dp_log_level_names[level], subsys);
	va_start(ap, fmt);
	if (off < sizeof(line))
		vsnprintf(line + off, sizeof(line) - off, fmt, ap);
	va_end(ap);
	/* One call per line keeps lines whole when several processes share a tty. */
	fprintf(stderr, "%s\n", line);
}

void dp_log_vplain(const char *program, const char *fmt, va_list ap)
{
	DP_REQUIRE(program != NULL && fmt != NULL);
	fprintf(stderr, "%s: ", program);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void dp_log_plain(const char *program, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dp_log_vplain(program, fmt, ap);
	va_end(ap);
}
