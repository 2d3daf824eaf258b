/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: open files (docs/learnerd.md "Descriptors").
 *
 * Every owner connection is a descriptor, and so is every pending stranger
 * and every /metrics client.  Many systems start a daemon with a soft
 * RLIMIT_NOFILE of 1024 and a much higher hard limit; the soft one is
 * raised here, at start, to what the configured job needs, so that owner
 * 1,000 is not refused with EMFILE in the middle of a job. */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "common/net/nofile.h"

#include "learner/lrn.h"

void lrn_fdlimit_need(const struct lrn *L, uint64_t *need, uint64_t *least)
{
	bool metrics;

	DP_REQUIRE(L != NULL && need != NULL && least != NULL);
	metrics = L->s->metrics_listen && *L->s->metrics_listen;
	/* The formula the startup kit's LimitNOFILE= uses too. */
	*need = dp_nofile_need(L->s->max_pending, L->job.N, metrics);
	*least = dp_nofile_least(L->job.N);
}

int lrn_fdlimit_raise(struct lrn *L)
{
	struct lrn_fdlimit *f = &L->fd;
	struct rlimit rl;
	uint64_t target;

	memset(f, 0, sizeof(*f));
	lrn_fdlimit_need(L, &f->need, &f->least);
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return dp_error_set(-errno, "open files: getrlimit: %s", strerror(errno));
	f->before = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	f->hard = rl.rlim_max == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_max;
	f->soft = f->before;
	if (f->before >= f->need)
		return 0;
	if (f->hard < f->least)
		return dp_error_set(DP_EINVAL, "open files: the hard limit (RLIMIT_NOFILE) is %llu, "
				    "but %zu owners need at least %llu descriptors (%llu to "
				    "run with max-pending %zu%s); raise it (LimitNOFILE=, "
				    "ulimit -Hn) or configure fewer owners",
				    (unsigned long long)f->hard, L->job.N,
				    (unsigned long long)f->least, (unsigned long long)f->need,
				    L->s->max_pending,
				    L->s->metrics_listen && *L->s->metrics_listen ?
				    " and metrics" : "");
	target = f->need < f->hard ? f->need : f->hard;
	rl.rlim_cur = (rlim_t)target;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return dp_error_set(-errno, "open files: cannot raise the soft limit from %llu to "
				    "%llu: %s", (unsigned long long)f->before,
				    (unsigned long long)target, strerror(errno));
	f->soft = target;
	return 0;
}

void lrn_fdlimit_log(const struct lrn *L)
{
	const struct lrn_fdlimit *f = &L->fd;

	if (f->soft >= f->need && f->soft == f->before)
		DP_DEBUG("learner", "open files: soft limit %llu covers the %llu needed",
			 (unsigned long long)f->soft, (unsigned long long)f->need);
	else if (f->soft >= f->need)
		DP_INFO("learner", "open files: raised the soft limit from %llu to %llu "
			"(hard %llu) for N=%zu owners", (unsigned long long)f->before,
			(unsigned long long)f->soft, (unsigned long long)f->hard, L->job.N);
	else
		DP_WARN("learner", "open files: need %llu descriptors for N=%zu owners, "
			"max-pending %zu and metrics, but the hard limit is %llu (soft %llu, was "
			"%llu); every owner fits, but a flood of strangers or of /metrics "
			"clients can make accepts fail (EMFILE) until some close; raise "
			"LimitNOFILE= to %llu", (unsigned long long)f->need, L->job.N,
			L->s->max_pending, (unsigned long long)f->hard,
			(unsigned long long)f->soft, (unsigned long long)f->before,
			(unsigned long long)f->need);
}
