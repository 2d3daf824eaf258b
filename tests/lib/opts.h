/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line options of the test programs (tests/integration, tests/bench):
 * each declares its flags as a dp_config table (common/net/config.h,
 * docs/style.md "Config"), as the dpasync subcommands do, and loads them
 * here.  Test only, never installed. */
#ifndef TST_OPTS_H
#define TST_OPTS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/net/addr.h"
#include "common/net/config.h"

/* Load argv into the fields of spec's table with dp_config_load.  spec
 * must be a command (spec->command true: flags only, no config file,
 * --help built in); its validate callback is the place for what the table
 * cannot say (a HOST:PORT split, flags that must agree).
 * Returns true when the program should run: every field then holds its
 * value (strings and lists until dp_config_free(spec)).  Returns false
 * when it should exit at once with *status:
 *   0  --help was asked for and printed on stdout;
 *   2  anything else, with one line "PROGRAM: DETAIL" on stderr: an
 *      unknown flag, a bad value, a missing required flag, a failed
 *      validate (or, rarely, no memory or a help that could not be
 *      written).
 * Fields are untouched when it returns false. */
bool tst_opts_load(const struct dp_config_spec *spec, int argc, char **argv, int *status);

/* The flags of a program that plays owners owner-FIRST ..
 * owner-(FIRST+N-1) in one process against one learner (soak_owners,
 * bench_owner_stub):
 *   --learner HOST:PORT --ca F --certs DIR --owners N
 *   [--first 1] [--p 11] [--rows 50]
 * with the certificates DIR/owner-i.crt and .key (tst_peer_owner_ctx). */
struct tst_opts_owners {
	char *learner, *ca, *certs;     /* dp_config strings */
	char host[DP_ADDR_HOST_MAX + 1]; /* --learner, split by tst_opts_owners_check */
	uint16_t port;
	size_t n, first, p;             /* owners, the first one's number, features */
	uint64_t rows;                  /* rows said in each Hello */
};

/* The table entries of those flags, writing to *o (static storage), to
 * put in a program's dp_config table. */
#define TST_OPTS_OWNERS(o)                                                                    \
	{ .name = "learner", DP_CFG_STRING(&(o)->learner), .flags = DP_CONFIG_REQUIRED,       \
	  .metavar = "HOST:PORT", .help = "the learner's address" },                          \
	{ .name = "ca", DP_CFG_PATH(&(o)->ca), .flags = DP_CONFIG_REQUIRED,                   \
	  .help = "CA certificate" },                                                         \
	{ .name = "certs", DP_CFG_PATH(&(o)->certs), .flags = DP_CONFIG_REQUIRED,             \
	  .metavar = "DIR", .help = "DIR/owner-i.crt and .key" },                             \
	{ .name = "owners", DP_CFG_SIZE(&(o)->n), .help = "owners N (required)" },            \
	{ .name = "first", DP_CFG_SIZE(&(o)->first), .def = "1", .min = 1, .max = INFINITY,   \
	  .help = "the identities are owner-F .. owner-(F+N-1)" },                            \
	{ .name = "p", DP_CFG_SIZE(&(o)->p), .def = "11", .min = 1, .max = INFINITY,          \
	  .help = "features" },                                                               \
	{ .name = "rows", DP_CFG_U64(&(o)->rows), .def = "50", .min = 1, .max = INFINITY,     \
	  .help = "rows said in each Hello" }

/* A dp_config validate callback (spec.validate, with spec.validate_arg
 * the struct tst_opts_owners): --owners was given, and --learner splits
 * into its host and port.  Returns 0, or DP_EINVAL with a detail. */
int tst_opts_owners_check(void *owners);

#endif
