/* SPDX-License-Identifier: Apache-2.0 */
/* Levelled logging to stderr: one line per event,
 *   2026-11-21T19:40:00.123Z info ledger: charged k=12 spent=0.05
 * The journal picks stderr up under systemd. Fields are key=value in the
 * message by convention. */
#ifndef DP_LOG_H
#define DP_LOG_H

#include <stdarg.h>

enum dp_log_level { DP_LOG_DEBUG, DP_LOG_INFO, DP_LOG_WARN, DP_LOG_ERROR };

/* The level names in enum order, NULL-terminated: what a log line prints,
 * what dp_log_parse_level reads, and the values of the daemons'
 * `log-level` setting (a config table's ENUM values), written once. */
extern const char *const dp_log_level_names[];

/* Messages below `level` are dropped. Default DP_LOG_INFO.  A level outside
 * the enum is a caller bug (DP_REQUIRE), here and in dp_log. */
void dp_log_set_level(enum dp_log_level level);
/* Parse "debug|info|warn|error"; 0, or DP_EINVAL with a detail and *out
 * untouched. */
int dp_log_parse_level(const char *s, enum dp_log_level *out);

void dp_log(enum dp_log_level level, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One line "PROGRAM: message" on stderr, with no time or level: how a
 * program says why it cannot start or why a command failed, where scripts
 * and tests read it (the log format would bury it).  Not filtered by the
 * level.  dp_log_vplain takes the arguments as a va_list. */
void dp_log_plain(const char *program, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dp_log_vplain(const char *program, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

#define DP_DEBUG(sub, ...) dp_log(DP_LOG_DEBUG, sub, __VA_ARGS__)
#define DP_INFO(sub, ...)  dp_log(DP_LOG_INFO, sub, __VA_ARGS__)
#define DP_WARN(sub, ...)  dp_log(DP_LOG_WARN, sub, __VA_ARGS__)
#define DP_ERROR(sub, ...) dp_log(DP_LOG_ERROR, sub, __VA_ARGS__)

#endif
