# SPDX-License-Identifier: Apache-2.0
"""Process handling shared by the daemon benchmarks (bench_learnerd.py,
bench_scale.py, bench_staleness.py, bench_rejoin.py): every process started in a session of
its own, killed with this script (PR_SET_PDEATHSIG) and at the end, with
its rusage read when it is reaped."""
import os
import resource
import shutil
import signal
import subprocess
import time

PROCS = []          # every Popen started, for cleanup
TMPDIRS = []        # directories to remove at the end (unless kept)


def log(msg):
    print(msg, flush=True)


class Interrupted(Exception):
    pass


def on_signal(signum, frame):
    raise Interrupted("signal %d" % signum)


def trap_signals():
    """SIGTERM and SIGINT raise Interrupted, so that finish() runs."""
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def _die_with_parent():
    # In the child before exec: SIGKILL when this script dies, even by
    # SIGKILL (a meson timeout kills our process group, and the daemons
    # are in sessions of their own).
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start(argv, stdout, stderr, env=None):
    p = subprocess.Popen(argv, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                         start_new_session=True, preexec_fn=_die_with_parent, env=env)
    PROCS.append(p)
    return p


def start_ownerd(ownerd, port, certs, data, i, rate, odir, log_path):
    """Start a real ownerd as owner-i of the scale and rejoin benchmarks
    (docs/scale.md): DATA/owner-i.csv with --bias, --rate RATE, --once, its
    ledger and model in ODIR (made here), its stderr to log_path."""
    os.makedirs(odir)
    oe = open(log_path, "w")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    p = start([ownerd, "--learner", "127.0.0.1:%d" % port, "--ca", certs + "/ca.crt",
               "--cert", "%s/owner-%d.crt" % (certs, i), "--key", "%s/owner-%d.key" % (certs, i),
               "--data", "%s/owner-%d.csv" % (data, i), "--bias",
               "--rate", "%g" % rate, "--ledger", os.path.join(odir, "ledger"),
               "--model-out", os.path.join(odir, "model.json"), "--once",
               "--log-level", "warn"], subprocess.DEVNULL, oe, env=env)
    oe.close()
    return p


def reap(p, timeout):
    """Wait for p at most timeout seconds; returns its rusage or None on
    timeout.  Sets p.returncode."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        except ChildProcessError:
            # reaped elsewhere (Popen.poll); no rusage then
            return None if p.returncode is None else resource.struct_rusage((0.0,) * 16)
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            return ru
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.005)


def kill_all():
    """SIGTERM every live process group we started, then SIGKILL."""
    live = [p for p in PROCS if p.returncode is None]
    for p in live:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 3.0
    for p in live:
        if reap(p, max(0.0, deadline - time.monotonic())) is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            reap(p, 5.0)
    PROCS[:] = [p for p in PROCS if p.returncode is None]


def finish(keep, *kept):
    """At the end, whatever happened: kill what is still running, then
    remove TMPDIRS, or with keep say where the kept files are."""
    kill_all()
    if not keep:
        for d in TMPDIRS:
            shutil.rmtree(d, ignore_errors=True)
    else:
        log("kept: %s" % " ".join(str(k) for k in kept))


def run_guarded(name, body, keep, *kept):
    """The end of a benchmark's main: body() returns its exit status; a
    failure (a program that failed or could not start) is one line and
    1, SIGINT or SIGTERM one line and 130; whatever happened, finish()."""
    try:
        return body()
    except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
        log("%s: FAILED: %s" % (name, e))
        return 1
    except Interrupted as e:
        log("%s: interrupted (%s)" % (name, e))
        return 130
    finally:
        finish(keep, *kept)
