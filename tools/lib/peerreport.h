/* SPDX-License-Identifier: Apache-2.0 */
/* `dpasync report` for a peer-mode run (docs/peer-agents.md §4): a
 * directory holding one directory per agent, named after the agent, with
 * the agent's trace.csv either in it or in its ledger directory inside it
 * (ownerd --peer keeps trace.csv and model.json in its ledger directory by
 * default), summarised as Markdown from the agents' wall-clock traces. */
#ifndef DP_TOOLS_PEERREPORT_H
#define DP_TOOLS_PEERREPORT_H

#include <stdbool.h>
#include <stdio.h>

/* Does dir hold at least one agent directory with a peer trace (a
 * trace.csv whose header starts with "wakeup,", in it or in a directory
 * inside it)? */
bool dp_peerreport_detect(const char *dir);

/* The page for dir into m: per agent its wake-ups, first and last wake-up,
 * median gap between wake-ups, epsilon spent and left (the trace's last
 * row) and neighbours connected at its last wake-up; then the run's span
 * and wake-ups per second.  0, or DP_ENOENT / DP_EFORMAT / DP_ENOMEM with
 * a detail naming the file. */
int dp_peerreport_write(const char *dir, FILE *m);

#endif
