/* SPDX-License-Identifier: Apache-2.0 */
/* Typed configuration: a table of entries, a config file, flags.
 *
 * The Redis config.c model (docs/style.md "Config"): a program declares one
 * table of typed entries, each pointing at a field of its settings struct.
 * dp_config_load() then
 *   1. applies every entry's default,
 *   2. reads the INI file named by --config FILE (inih; keys at the top of
 *      the file or in a section named for the program, e.g. [learnerd]),
 *   3. applies the command-line flags (--name VALUE, --name=VALUE; a bool
 *      is --name, --name=VALUE or --no-name), which override the file
 *      whatever their position relative to --config,
 *   4. checks required entries, the positional arguments and the
 *      program's cross-field check.
 * Nothing is written to the settings unless all of that succeeds.
 *
 * The same table serves the daemons and the subcommands of the dpasync
 * tool.  A spec with `command` set is a tool command: no config file (no
 * --config, --check-config or --version; only -h/--help), positional
 * arguments may be accepted, and --help is a "usage: ..." page with the
 * command's own paragraphs around the generated option list.
 *
 * Config file syntax (what inih accepts, restricted):
 *   # comment            ; comment
 *   [learnerd]
 *   listen = 127.0.0.1:7443      ; inline comments start with " ;"
 *   epsilon: 0.5
 * Leading whitespace is ignored (indenting is fine; there are no
 * continuation lines).  A value wrapped in double quotes loses them.  A
 * line may hold at most DP_CONFIG_MAX_LINE characters.  Unknown keys,
 * keys in another section, a key given twice, bad values and syntax
 * errors are all errors: DP_EINVAL with the detail "FILE:LINE: ...".
 *
 * Values:
 *   STRING       char *, any text (may be empty); heap copy owned by this
 *                module until dp_config_free()
 *   PATH         char *, like STRING but never empty.  Only the path is
 *                kept and printed: this module never opens it, so a key
 *                file's contents never pass through here
 *   DOUBLE       double, finite ("1.5", "1e-3")
 *   DOUBLE_INF   double, finite or "inf" (e.g. an unlimited budget)
 *   U64, SIZE    uint64_t / size_t, decimal, no sign
 *   BOOL         bool: true/false, yes/no, on/off, 1/0
 *   ENUM         int, index of the value in the entry's `values` list
 *   DURATION     double seconds: "30", "1.5s", "250ms", "5m", "2h"
 * Lists (comma-separated; the arrays are heap memory owned by this module
 * until dp_config_free(), like strings):
 *   STRINGS      struct dp_config_strings: non-empty items without control
 *                characters; inside an item "\," is a comma, "\=" an equals
 *                sign and "\\" a backslash.  With DP_CONFIG_WHOLE the whole
 *                value is one item, taken as written
 *   DOUBLES      struct dp_config_doubles: finite numbers
 *   DOUBLES_INF  struct dp_config_doubles: finite numbers or "inf"
 *   SIZES        struct dp_config_sizes: non-negative integers
 * An empty list ("") is refused.  Ranges apply to every number of a list.
 * A list set again replaces the earlier one, except that with
 * DP_CONFIG_APPEND a repeated flag adds its items (--data A --data B,C is
 * A, B, C); a config file sets each key once.
 *
 * Everything here runs on the caller's thread at startup and keeps no
 * global state (getopt is not used).  Nothing exits the process: the
 * program decides what to print and how to exit.
 *
 * Files: config.c loads (defaults, file, flags, checks), config_args.c
 * scans argv, config_type.c holds one row of functions per value type
 * (config_impl.h), config_print.c writes --help and the settings. */
#ifndef DP_CONFIG_H
#define DP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Longest config file line accepted (characters, without the newline);
 * Debian's inih is built with 200-byte line buffers. */
#define DP_CONFIG_MAX_LINE 196

enum dp_config_type {
	DP_CONFIG_STRING,
	DP_CONFIG_PATH,
	DP_CONFIG_DOUBLE,
	DP_CONFIG_DOUBLE_INF,
	DP_CONFIG_U64,
	DP_CONFIG_SIZE,
	DP_CONFIG_BOOL,
	DP_CONFIG_ENUM,
	DP_CONFIG_DURATION,
	DP_CONFIG_STRINGS,
	DP_CONFIG_DOUBLES,
	DP_CONFIG_DOUBLES_INF,
	DP_CONFIG_SIZES,
};

/* The fields of the list types: v[0..n), v == NULL when n == 0. */
struct dp_config_strings {
	char **v;
	size_t n;
};

struct dp_config_doubles {
	double *v;
	size_t n;
};

struct dp_config_sizes {
	size_t *v;
	size_t n;
};

/* Entry flags. */
#define DP_CONFIG_REQUIRED  1u   /* must be set by the file or a flag (strings,
				  * paths and lists without a default) */
#define DP_CONFIG_APPEND    2u   /* lists: a repeated flag adds its items */
#define DP_CONFIG_WHOLE     4u   /* STRINGS: each value is one item, not split */

struct dp_config_entry {
	const char *name;          /* key and flag: [a-z0-9][a-z0-9-]*, not "config",
				    * "help", "version", "check-config", nor "no-..." */
	enum dp_config_type type;
	void *field;               /* the setting; C type as listed above */
	const char *def;           /* default as text; NULL: no default (STRING
				    * and PATH become NULL, lists empty, other
				    * types keep the field's current value, e.g.
				    * 0 in a zeroed struct) */
	double min, max;           /* numbers and durations: allowed range
				    * [min, max], applied only when min < max;
				    * use +-INFINITY for one-sided ranges */
	bool min_exclusive;        /* the range is (min, max] */
	const char *const *values; /* ENUM: NULL-terminated allowed names */
	unsigned flags;            /* DP_CONFIG_REQUIRED, _APPEND, _WHOLE */
	const char *alias;         /* another spelling of the flag, e.g. "T" for
				    * "t": [A-Za-z0-9][A-Za-z0-9-]*, unique like
				    * names.  Flags only; a config file knows the
				    * name.  NULL: none */
	bool *given;               /* NULL, or set by every load to whether the
				    * file or a flag gave the entry a value
				    * (false: it holds its default) */
	const char *group;         /* --help heading; NULL: "Options" */
	const char *metavar;       /* --help placeholder; NULL: from the type */
	const char *help;          /* --help text; may hold '\n' for more lines */
};

/* Type-checked field pointers for the table: a mismatch between the type
 * and the field is a compile-time warning.  Use inside the entry braces:
 *   { .name = "epsilon", DP_CFG_DOUBLE(&S.epsilon), .def = "1", ... } */
#define DP__CFG_PTR(T, p)      ((void *)(1 ? (p) : (T *)0))
#define DP_CFG_STRING(p)       .type = DP_CONFIG_STRING, .field = DP__CFG_PTR(char *, p)
#define DP_CFG_PATH(p)         .type = DP_CONFIG_PATH, .field = DP__CFG_PTR(char *, p)
#define DP_CFG_DOUBLE(p)       .type = DP_CONFIG_DOUBLE, .field = DP__CFG_PTR(double, p)
#define DP_CFG_DOUBLE_INF(p)   .type = DP_CONFIG_DOUBLE_INF, .field = DP__CFG_PTR(double, p)
#define DP_CFG_U64(p)          .type = DP_CONFIG_U64, .field = DP__CFG_PTR(uint64_t, p)
#define DP_CFG_SIZE(p)         .type = DP_CONFIG_SIZE, .field = DP__CFG_PTR(size_t, p)
#define DP_CFG_BOOL(p)         .type = DP_CONFIG_BOOL, .field = DP__CFG_PTR(bool, p)
#define DP_CFG_ENUM(p, vals)   .type = DP_CONFIG_ENUM, .field = DP__CFG_PTR(int, p), .values = (vals)
#define DP_CFG_DURATION(p)     .type = DP_CONFIG_DURATION, .field = DP__CFG_PTR(double, p)
#define DP_CFG_STRINGS(p)      .type = DP_CONFIG_STRINGS, \
			       .field = DP__CFG_PTR(struct dp_config_strings, p)
#define DP_CFG_DOUBLES(p)      .type = DP_CONFIG_DOUBLES, \
			       .field = DP__CFG_PTR(struct dp_config_doubles, p)
#define DP_CFG_DOUBLES_INF(p)  .type = DP_CONFIG_DOUBLES_INF, \
			       .field = DP__CFG_PTR(struct dp_config_doubles, p)
#define DP_CFG_SIZES(p)        .type = DP_CONFIG_SIZES, \
			       .field = DP__CFG_PTR(struct dp_config_sizes, p)

/* The entry that ends a table. */
#define DP_CONFIG_END { .name = NULL }

struct dp_config_spec {
	const char *program;       /* "learnerd": file section and --help name;
				    * "dpasync sim" for a command */
	const char *summary;       /* daemon: one line for --help; command: the
				    * paragraphs between the usage line and the
				    * options.  May be NULL */
	const struct dp_config_entry *entries; /* ends with DP_CONFIG_END */
	/* Cross-field checks, run after everything else has been applied to
	 * the settings.  Return 0, or a DP_E... code after dp_error_set()
	 * with a one-line detail; the settings are then restored.  May be
	 * NULL. */
	int (*validate)(void *arg);
	void *validate_arg;

	/* A tool command rather than a daemon (see the top of this file). */
	bool command;
	/* Command --help: the synopsis after "usage: PROGRAM ", one line per
	 * form ('\n' between forms); NULL: "[options]", then every required
	 * option, then args_metavar.  `epilog` (may be NULL) follows the
	 * options. */
	const char *synopsis;
	const char *epilog;
	/* Positional arguments (commands only): the words that are not
	 * options, in order, as copies in *args (freed by dp_config_free);
	 * anything after "--" is one.  NULL: none accepted ("unexpected
	 * argument").  Between args_min and args_max of them (max 0: no
	 * limit); args_metavar ("FILE...") names them in --help and in
	 * errors. */
	struct dp_config_strings *args;
	const char *args_metavar;
	size_t args_min, args_max;
};

/* What the command line asked for. */
enum dp_config_action {
	DP_CONFIG_RUN,      /* settings loaded and valid: start */
	DP_CONFIG_HELP,     /* -h/--help: print dp_config_print_help, exit 0 */
	DP_CONFIG_VERSION,  /* -V/--version: print the version, exit 0 */
	DP_CONFIG_CHECK,    /* -n/--check-config: settings loaded and valid;
			     * print them (dp_config_print) and exit 0 */
};

/* The whole startup sequence described at the top, from argv (argv[0] is
 * the program and is skipped; argv is not modified).  Built-in options:
 * -c/--config FILE, -n/--check-config, -h/--help, -V/--version (a command
 * has only -h/--help).  Long options must be spelled out (no
 * abbreviations); a flag given twice takes the last value (a list with
 * DP_CONFIG_APPEND: both); options and positional arguments may be mixed.
 *
 * --help and --version win over everything: *action is set to them and
 * nothing is loaded or validated (so they work with a broken config).
 * Otherwise, on success every entry's field holds its value (old strings
 * and lists freed), *spec->args the positional arguments, and *action is
 * RUN or CHECK.
 *
 * Errors (settings untouched, *action untouched, one-line detail):
 *   DP_EINVAL   bad flag or value, unknown option, missing required entry,
 *               too few or too many positional arguments, a config file
 *               error ("FILE:LINE: ..."), a bad table;
 *   DP_ENOENT   the --config file does not exist;
 *   DP_EIO      it cannot be read;
 *   DP_ENOMEM;
 *   or whatever spec->validate returned. */
int dp_config_load(const struct dp_config_spec *spec, int argc, char *const argv[],
		   enum dp_config_action *action);

/* The steps of dp_config_load, for callers that need another order (and
 * for tests).  Each applies to the fields directly, all-or-nothing: on
 * failure no field changed.  Required entries and spec->validate are not
 * checked here (see dp_config_check). */

/* Set every entry to its default (and every `given` to false).  Errors:
 * DP_EINVAL (a default that does not parse: a bug in the table),
 * DP_ENOMEM. */
int dp_config_set_defaults(const struct dp_config_spec *spec);

/* Apply the keys of one config file (their `given` become true).  Errors
 * as for dp_config_load. */
int dp_config_load_file(const struct dp_config_spec *spec, const char *path);

/* Set the entry `name` from text (a list is replaced; its `given` becomes
 * true); `origin` names the source in error details (e.g. "option
 * --epsilon"; NULL: "key 'NAME'").  Errors: DP_EINVAL (unknown name, bad
 * value), DP_ENOMEM. */
int dp_config_set(const struct dp_config_spec *spec, const char *name, const char *value,
		  const char *origin);

/* Check that required entries are set, then run spec->validate.
 * Returns 0 or the first error (DP_EINVAL for a missing entry). */
int dp_config_check(const struct dp_config_spec *spec);

/* Free the strings and lists held by the fields (and *spec->args): strings
 * become NULL, lists empty.  Other fields keep their values.  Safe to call
 * more than once. */
void dp_config_free(const struct dp_config_spec *spec);

/* Usage text.  Daemon: built-in options, then every entry grouped by its
 * `group` (in table order), with metavar, help, default and range.
 * Command: "usage: PROGRAM SYNOPSIS", the summary, the grouped entries
 * and -h/--help, then the epilog.  Returns 0, DP_EINVAL (a bad table) or
 * DP_EIO if writing fails. */
int dp_config_print_help(const struct dp_config_spec *spec, FILE *out);

/* The effective settings as a config file this module reads back
 * ("[program]" then "key = value" in table order; an unset string or an
 * empty list is a "# key is not set" comment).  Limits of the read-back:
 * a line longer than DP_CONFIG_MAX_LINE is printed whole and refused when
 * read (escapes, number formatting and " = " can lengthen a value that
 * fitted in the file it came from), and a DP_CONFIG_WHOLE list of several
 * items (from repeated flags) reads back as one item.  Paths are printed, never
 * their contents.  Returns 0 or DP_EIO. */
int dp_config_print(const struct dp_config_spec *spec, FILE *out);

/* Split `text` the way a STRINGS entry splits its value (comma-separated,
 * "\," "\=" "\\" escapes, no empty item) into *out, for values a program
 * takes apart further (prep's --levels 'COL=A,B').  `what` starts error
 * details.  Errors (*out untouched): DP_EINVAL ("WHAT: empty list", "WHAT:
 * empty item in 'TEXT'", control characters), DP_ENOMEM. */
int dp_config_split(const char *what, const char *text, struct dp_config_strings *out);

/* Free a list's items and array; it becomes empty.  Safe on an empty
 * list. */
void dp_config_strings_free(struct dp_config_strings *l);

/* Text of one entry's current value ("inf", "true", enum name, seconds
 * as a number, the string itself, a list joined by commas with STRINGS
 * items escaped as above) into buf (always NUL-terminated).  Returns 0,
 * DP_ENOENT (unknown name, or an unset string or empty list: buf = ""),
 * or DP_ERANGE (truncated). */
int dp_config_format(const struct dp_config_spec *spec, const char *name, char *buf,
		     size_t len);

#endif
