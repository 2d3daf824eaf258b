/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the typed configuration (config.h), shared by its files and
 * by nobody else: config.c (loading: defaults, the file, the flags),
 * config_type.c (the value types) and config_print.c (--help and
 * --check-config).
 *
 * Everything that depends on an entry's type is one row of the type table,
 * as Redis's config.c keeps a `typeInterface` per type: how the field is
 * read and written, how text becomes a value and a value text, what a value
 * owns and how it is freed, and how --help shows it.  The rest of the
 * module asks the row and never switches over the type. */
#ifndef DP_CONFIG_IMPL_H
#define DP_CONFIG_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/net/config.h"

/* A value outside its field: loading parses into these first and writes
 * the fields only when every step has succeeded, so that a failed load
 * leaves the settings alone. */
union dp__config_val {
	char *s;
	double d;
	uint64_t u;
	size_t z;
	bool b;
	int e;
	struct {
		void *v;
		size_t n;
	} l;
};

/* What a value of the type is. */
enum dp__config_kind {
	DP__CONFIG_SCALAR,   /* a number, a bool or an enum: nothing to free */
	DP__CONFIG_TEXT,     /* .s, heap memory; NULL: not set */
	DP__CONFIG_LIST,     /* .l, heap memory; n == 0: not set */
};

struct dp__config_type {
	enum dp__config_kind kind;
	size_t size;         /* a field of one value (scalars, texts): its size */
	size_t item;         /* lists: the size of one item */
	bool range;          /* the entry's min/max apply (to every item of a list) */
	bool flag;           /* a flag without a value: --name, --no-name */
	/* --help placeholder of an entry without its own metavar; when
	 * `metavar_of` is set it says instead (from the entry: an enum's
	 * values). */
	const char *metavar;
	const char *(*metavar_of)(const struct dp_config_entry *e, char *buf, size_t len);
	/* The field, read into *v or written from *v (no copy, no free). */
	void (*get)(const struct dp_config_entry *e, union dp__config_val *v);
	void (*put)(const struct dp_config_entry *e, const union dp__config_val *v);
	/* `text` for entry e into *out, which is zeroed first (heap memory for
	 * texts and lists); `what` starts the error detail.  0, or DP_EINVAL
	 * (bad value, out of range), DP_ENOMEM. */
	int (*parse)(const struct dp_config_entry *e, const char *what, const char *text,
		     union dp__config_val *out);
	/* The field's value as text: *text points at buf, or at the field's
	 * own string (never copied, so a long one is printed whole).  0;
	 * DP_ENOENT for an unset text or an empty list (buf = ""); DP_ERANGE
	 * when buf was too short (it holds what fitted). */
	int (*format)(const struct dp_config_entry *e, char *buf, size_t len, const char **text);
	/* Free what *v owns and empty it; NULL for scalars. */
	void (*free)(union dp__config_val *v);
};

/* The row of e's type; e->type must be a dp_config_type (the table check
 * makes sure before anything else looks). */
const struct dp__config_type *dp__config_type_of(const struct dp_config_entry *e);

/* Check the table of spec (names, aliases, types, flags; see config.h) and
 * count its entries into *count.  0 or DP_EINVAL with a detail. */
int dp__config_check_table(const struct dp_config_spec *spec, size_t *count);

/* Index of the entry called `name` (not an alias), or -1. */
long dp__config_find(const struct dp_config_spec *spec, const char *name);

/* ---- the command line (config_args.c) ---- */

/* A flag seen on the command line, applied after the config file. */
struct dp__config_flag {
	size_t idx;          /* the entry */
	const char *value;   /* NULL for --no-name */
	const char *tok;     /* the argv word, for messages */
};

struct dp__config_opt;   /* a spelling the scan accepts (config_args.c) */

/* What one pass over argv found.  Zero it and set spec; the words point
 * into argv. */
struct dp__config_scan {
	const struct dp_config_spec *spec;
	struct dp__config_opt *opts;
	size_t nopts;
	struct dp__config_flag *flags;
	size_t nflags;
	const char **pos;    /* positional words */
	size_t npos;
	const char *config;  /* -c/--config FILE */
	bool help, version, check;
	int first;           /* the first error, reported after the scan */
};

/* Scan argv (argv[0] skipped) against the n entries of sc->spec: values
 * are collected, not parsed or applied.  Scanning goes on after an error,
 * so that a later --help still wins; the first error is returned (and is
 * in sc->first): DP_EINVAL (unknown or incomplete option, a positional
 * argument where none is accepted), DP_ENOMEM.  Free with
 * dp__config_scan_free, also after a failure. */
int dp__config_scan_args(struct dp__config_scan *sc, size_t n, int argc, char *const argv[]);
void dp__config_scan_free(struct dp__config_scan *sc);

/* ---- shared by the files ---- */

/* The --help placeholder of e: its own metavar, or its type's (an enum's
 * "a|b|c" is written into buf). */
const char *dp__config_metavar(const struct dp_config_entry *e, char *buf, size_t len);

#endif
