/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for owner/settle.c: the reserve-ahead settle's fdatasync on
 * libuv's thread pool (docs/ledger.md §9 "Off the loop").
 *
 * The pool has one thread (UV_THREADPOOL_SIZE=1, set before the pool
 * starts) and the test can hold it with a work item that waits on a
 * semaphore, so that what happens between the settle and its sync is the
 * test's choice: the loop going on, the next answer, the file renamed, a
 * new job bound.  The record of owntest.h shows each sync of the ledger
 * (S) and the test's sends (X). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/log.h"

#include "owner/own.h"

#include "tmpdir.h"
#include "owntest.h"

struct fx {
	struct budget_fx bf;
	uv_loop_t loop;
	uv_work_t hold;
	sem_t gate;
	int fails;
};

static void on_fail(void *arg)
{
	struct fx *f = arg;

	f->fails++;
}

static void held(uv_work_t *w)
{
	struct fx *f = w->data;

	while (sem_wait(&f->gate) != 0)
		;
}

static void released(uv_work_t *w, int status)
{
	(void)w;
	(void)status;
}

static void fx_setup(struct fx *f, const char *name, bool ahead)
{
	memset(f, 0, sizeof(*f));
	budget_fx_init(&f->bf, name, 1.0, INFINITY);
	f->bf.cfg.reserve_ahead = ahead;
	budget_fx_bind(&f->bf, "J", 4);
	assert_int_equal(uv_loop_init(&f->loop), 0);
	assert_int_equal(sem_init(&f->gate, 0, 0), 0);
}

/* Occupy the pool's one thread until release(). */
static void hold(struct fx *f)
{
	f->hold.data = f;
	assert_int_equal(uv_queue_work(&f->loop, &f->hold, held, released), 0);
}

static void release(struct fx *f)
{
	assert_int_equal(sem_post(&f->gate), 0);
}

static void fx_teardown(struct fx *f)
{
	assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	sem_destroy(&f->gate);
	own_budget_close(&f->bf.b);
}

/* begin + commit of request k, which must succeed. */
static void answer(struct fx *f, uint64_t k)
{
	struct own_budget_ticket t;
	struct own_budget_status st;

	assert_int_equal(own_budget_begin(&f->bf.b, k, &t), 0);
	assert_int_equal(own_budget_commit(&f->bf.b, &t, &st), 0);
}

/* The settle writes the reservation and returns with the sync still to
 * come; the worker's sync, once reported, makes the reservation durable,
 * so the next answer leaves covered with no sync of its own. */
static void test_off_the_loop(void **state)
{
	struct fx f;
	size_t m;

	fx_setup(&f, "offloop", true);
	answer(&f, 1);
	hold(&f);
	m = mark();
	assert_int_equal(own_settle(&f.loop, &f.bf.b, on_fail, &f), 0);
	assert_string_equal(events_since(m), "");
	assert_int_equal(file_size(dp_ledger_path(f.bf.b.ledger)), LEDGER_SIZE(2));
	release(&f);
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	assert_string_equal(events_since(m), "S");
	assert_int_equal(synced_size(), LEDGER_SIZE(2));
	m = mark();
	answer(&f, 2);
	note('X');
	assert_string_equal(events_since(m), "X");
	assert_int_equal(f.fails, 0);
	fx_teardown(&f);
	(void)state;
}

/* The next answer comes before the worker has synced: it syncs the
 * reservation itself before it may leave, and the late report changes
 * nothing. */
static void test_answer_first(void **state)
{
	struct fx f;
	size_t m;

	fx_setup(&f, "first", true);
	answer(&f, 1);
	hold(&f);
	assert_int_equal(own_settle(&f.loop, &f.bf.b, on_fail, &f), 0);
	m = mark();
	answer(&f, 2);
	note('X');
	assert_string_equal(events_since(m), "SX");
	release(&f);
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	assert_string_equal(events_since(m), "SXS");
	/* the covered answer's own settle */
	assert_int_equal(own_settle(&f.loop, &f.bf.b, on_fail, &f), 0);
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	assert_string_equal(events_since(m), "SXSS");
	assert_int_equal(synced_size(), LEDGER_SIZE(3));
	assert_int_equal(f.fails, 0);
	assert_true(own_budget_left(&f.bf.b));
	fx_teardown(&f);
	(void)state;
}

/* The worker's sync fails, or the file cannot be opened by its path any
 * more: the ledger has failed, main is told, nothing is answered again. */
static void test_sync_fails(void **state)
{
	struct own_budget_ticket t;
	struct fx f;
	char moved[320];

	fx_setup(&f, "syncfail", true);
	answer(&f, 1);
	fail_syncs(EIO);
	assert_int_equal(own_settle(&f.loop, &f.bf.b, on_fail, &f), 0);
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	fail_syncs(0);
	assert_int_equal(f.fails, 1);
	assert_int_equal(own_budget_begin(&f.bf.b, 2, &t), DP_EIO);
	/* and a settle of a failed ledger is refused at once */
	assert_int_equal(own_settle(&f.loop, &f.bf.b, on_fail, &f), DP_EIO);
	fx_teardown(&f);

	fx_setup(&f, "gone", true);
	answer(&f, 1);
	hold(&f);
	assert_int_equal(own_settle(&f.loop, &f.bf.b, on_fail, &f), 0);
	snprintf(moved, sizeof(moved), "%s.moved", dp_ledger_path(f.bf.b.ledger));
	assert_int_equal(rename(dp_ledger_path(f.bf.b.ledger), moved), 0);
	release(&f);
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(f.fails, 1);
	assert_int_equal(own_budget_begin(&f.bf.b, 2, &t), DP_EIO);
	assert_int_equal(rename(moved, dp_ledger_path(f.bf.b.ledger)), 0);
	fx_teardown(&f);
	(void)state;
}

/* A new job is bound before the worker syncs the old one's reservation:
 * the report is only logged, the new job answers. */
static void test_job_changed(void **state)
{
	struct fx f;

	fx_setup(&f, "changed", true);
	answer(&f, 1);
	hold(&f);
	assert_int_equal(own_settle(&f.loop, &f.bf.b, on_fail, &f), 0);
	assert_int_equal(own_budget_bind(&f.bf.b, "K", 4), 0);
	release(&f);
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(f.fails, 0);
	answer(&f, 1);
	fx_teardown(&f);
	(void)state;
}

/* Without --reserve-ahead there is nothing to sync: no work is queued. */
static void test_nothing(void **state)
{
	struct fx f;
	size_t m;

	fx_setup(&f, "nothing", false);
	answer(&f, 1);
	m = mark();
	assert_int_equal(own_settle(&f.loop, &f.bf.b, on_fail, &f), 0);
	assert_false(uv_loop_alive(&f.loop));
	assert_string_equal(events_since(m), "");
	fx_teardown(&f);
	(void)state;
}

static int setup(void **state)
{
	(void)state;
	return owntest_setup("test_settle");
}

static int teardown(void **state)
{
	(void)state;
	return owntest_teardown();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_the_loop),
		cmocka_unit_test(test_answer_first),
		cmocka_unit_test(test_sync_fails),
		cmocka_unit_test(test_job_changed),
		cmocka_unit_test(test_nothing),
	};

	/* Read by libuv when its pool starts, at the first queued work. */
	setenv("UV_THREADPOOL_SIZE", "1", 1);
	return cmocka_run_group_tests(tests, setup, teardown);
}
