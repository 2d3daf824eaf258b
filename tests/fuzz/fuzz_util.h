/* SPDX-License-Identifier: Apache-2.0 */
/* What the fuzz targets share: quiet logs, no fsync, and a scratch
 * directory for decoders that read a file by path. */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Once per process: logs off, fsync a no-op (the scratch files live on
 * tmpfs and a crash of the target is what we look for, not durability),
 * and the scratch directory created (removed at exit).  Idempotent. */
void fuzz_util_init(void);

/* "SCRATCH/name": a path in the scratch directory (static storage per
 * name; at most 8 distinct names). */
const char *fuzz_util_path(const char *name);

/* Replace the file at `path` with `size` bytes of `data`.  Aborts on
 * failure: the harness, not the decoder, is broken then. */
void fuzz_util_write(const char *path, const uint8_t *data, size_t size);

/* The whole content of `path` (malloc'ed, NUL-terminated, *size without
 * the NUL).  Aborts on failure. */
char *fuzz_util_read(const char *path, size_t *size);

/* abort() with a line on stderr when `cond` is false: an invariant of the
 * decoder under test does not hold. */
#define FUZZ_CHECK(cond)                                                          \
	do {                                                                      \
		if (!(cond))                                                      \
			fuzz_util_fail(#cond, __FILE__, __LINE__);                \
	} while (0)
void fuzz_util_fail(const char *cond, const char *file, int line) __attribute__((noreturn));

#endif
