/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: time.  Monotonic seconds for round trips, waits and timeouts;
 * Unix time for trace.csv and the checkpoint. */
#include <time.h>

#include <uv.h>

#include "learner/job.h"

double lrn_clock_mono(void)
{
	return (double)uv_hrtime() * 1e-9;
}

double lrn_clock_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
