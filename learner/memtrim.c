/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: heap pages back to the system after connection bursts
 * (docs/scale.md §2).
 *
 * A TLS handshake allocates tens of kilobytes that live only until it
 * ends (OpenSSL's handshake buffers, certificate checks, key exchange),
 * while the few kilobytes an admitted connection keeps are allocated in
 * between.  After thousands of owners connect at once, glibc's heap is
 * mostly free chunks pinned between live ones, and the resident size stays
 * at the storm's peak: about twice what the connections hold.
 * malloc_trim(0) hands the free pages inside the heap back (madvise), so
 * the resident size follows what is in use.  It runs on the server's tick,
 * once the connections have been quiet for a second (or every 10 s during
 * a long burst), never per connection: it walks the whole heap.
 *
 * Large short-lived buffers (a checkpoint's JSON with every owner's
 * theta_i is megabytes at 10,000 owners) would otherwise raise glibc's
 * dynamic mmap threshold and then come from the heap, leaving it grown
 * between checkpoints; a fixed threshold keeps them in mmap, returned to
 * the system when freed. */
#include <malloc.h>

#include "common/core/error.h"
#include "common/core/log.h"

#include "learner/lrn.h"

#define TRIM_QUIET_S 1.0   /* no connection opened or closed for this long */
#define TRIM_MAX_S   10.0  /* or this long since the last trim */
#define MMAP_THRESHOLD (256 * 1024)   /* glibc's starting value, kept fixed */

void lrn_memtrim_init(void)
{
	(void)mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
}

void lrn_memtrim_note(struct lrn *L, double now)
{
	DP_REQUIRE(L != NULL);
	L->trim.events++;
	L->trim.last_event = now;
}

void lrn_memtrim_tick(struct lrn *L, double now)
{
	struct lrn_memtrim *m;

	DP_REQUIRE(L != NULL);
	m = &L->trim;
	if (m->events == 0)
		return;
	if (now - m->last_event < TRIM_QUIET_S && now - m->last_trim < TRIM_MAX_S)
		return;
	m->events = 0;
	m->last_trim = now;
	m->trims++;
	if (malloc_trim(0))
		DP_DEBUG("learner", "heap trimmed after connection changes (trim %llu)",
			 (unsigned long long)m->trims);
}
