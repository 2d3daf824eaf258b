/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd: the settle's fdatasync on a worker thread (docs/ledger.md §9,
 * "Off the loop").
 *
 * After an answer is out, the budget writes its record and the next share
 * (own_budget_settle); this file syncs that record on libuv's thread pool,
 * so the loop is free at once to send the next UpdateRequest, serve
 * /metrics and read the next Query.  Nothing waits for it: an answer that
 * needs the share before the sync has reported is synced by the ledger
 * itself first (dp_ledger_charge_ahead).  The worker opens the file by its
 * path for a descriptor of its own: the ledger may be closed meanwhile
 * (a new job), and a duplicate of the ledger's descriptor would keep its
 * lock held after that. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/log.h"

#include "owner/own.h"

struct settle_req {
	uv_work_t req;
	struct own_budget *budget;
	struct own_budget_sync sync;
	own_settle_fail_fn on_fail;
	void *arg;
	int err;                /* errno of the open or the sync, 0 */
};

static void sync_file(uv_work_t *w)
{
	struct settle_req *s = w->data;
	int fd;

	do
		fd = open(s->sync.path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		s->err = errno;
		return;
	}
	if (dp_file_sync(fd, 1) != 0)
		s->err = errno ? errno : EIO;
	close(fd);
}

static void synced(uv_work_t *w, int status)
{
	struct settle_req *s = w->data;

	if (status == UV_ECANCELED)
		free(s->sync.path);   /* never ran: the share stays not durable */
	else if (own_budget_synced(s->budget, &s->sync, s->err) < 0)
		s->on_fail(s->arg);
	free(s);
}

int own_settle(uv_loop_t *loop, struct own_budget *b, own_settle_fail_fn on_fail, void *arg)
{
	struct own_budget_sync sync;
	struct settle_req *s;
	int r;

	DP_REQUIRE(loop != NULL && b != NULL && on_fail != NULL);
	r = own_budget_settle(b, &sync);
	if (r < 0 || sync.path == NULL)
		return r;
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		/* Not synced now: the next commit syncs the share first. */
		DP_WARN("ledger", "no memory to sync the reservation off the loop");
		free(sync.path);
		return 0;
	}
	s->req.data = s;
	s->budget = b;
	s->sync = sync;
	s->on_fail = on_fail;
	s->arg = arg;
	r = uv_queue_work(loop, &s->req, sync_file, synced);
	if (r < 0) {
		/* No worker: the same sync, here. */
		sync_file(&s->req);
		r = own_budget_synced(b, &s->sync, s->err) < 0 ? DP_EIO : 0;
		free(s);
	}
	return r;
}
