/* SPDX-License-Identifier: Apache-2.0 */
/* The one exit-status policy of learnerd, ownerd and dpasync
 * (docs/design.md §10 "Exit status").
 *
 * A process that stops on an error exits with the status this module gives
 * for the error's code and for the phase of the step that failed:
 *
 *   DP_EXIT_OK      0  success; also a daemon stopped by SIGTERM or SIGINT
 *   DP_EXIT_FAIL    1  failed, and running again may succeed: the machine
 *                      (memory, I/O, the random generator, a port in use),
 *                      another process (a lock held), a computation, or a
 *                      peer.  systemd restarts a daemon on it.
 *   DP_EXIT_CONFIG  2  a human must fix something local and wrong on its
 *                      face: flags, configuration, missing or malformed
 *                      files and data, an output that would be replaced,
 *                      or a permanent refusal exchanged over a connection
 *                      verified against the CA and the peer's name or pin
 *                      (DP_EREFUSED).  systemd does not restart a daemon
 *                      on it (RestartPreventExitStatus=2).
 *
 * Whatever an unauthenticated peer sends reaches this module as DP_ETLS or
 * DP_EPROTO in DP_EXIT_PHASE_RUN, which is 1 and never 2: a daemon must not
 * pass such a failure on under another code. */
#ifndef DP_EXIT_H
#define DP_EXIT_H

#define DP_EXIT_OK      0
#define DP_EXIT_FAIL    1
#define DP_EXIT_CONFIG  2

/* What the step that failed was doing.  The phase is the step's, not the
 * clock's: ownerd opening a job's ledger file when a Welcome arrives is
 * loading, although the daemon has been running for hours. */
enum dp_exit_phase {
	/* Reading the command line and the configuration file, and checking
	 * settings against each other. */
	DP_EXIT_PHASE_ARGS,
	/* Loading and verifying the local files and data the settings name:
	 * data, schema, certificates and keys, a checkpoint, a ledger, a
	 * public sample, a model, a trace, a schedule. */
	DP_EXIT_PHASE_LOAD,
	/* Running: computing, serving, talking to peers, writing outputs. */
	DP_EXIT_PHASE_RUN,
};

/* The exit status (DP_EXIT_OK, DP_EXIT_FAIL or DP_EXIT_CONFIG) for `err`,
 * 0 or a negative DP_E code, failing in `phase`.  0 gives DP_EXIT_OK; a
 * negative code that is not in DP_ERRNO_MAP (libuv's and the system's
 * other errno values, e.g. -EADDRINUSE, -EACCES) gives DP_EXIT_FAIL.  A
 * positive err or an unknown phase is a bug in the caller (DP_REQUIRE).
 * Pure; safe from any thread. */
int dp_exit_status(int err, enum dp_exit_phase phase);

#endif
