#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Rejoin benchmark (docs/scale.md "Rejoin after a learner restart"): how
long every owner takes to come back after learnerd is killed and resumed.

N real ownerd processes (default 1,000; 10 rows x 3 features each, --bias
so p = 4, durable ledgers on the disk, --once, --rate 2) join a learnerd
with its default flood guard, all from 127.0.0.1 (as behind one NAT).
Once training runs, every ownerd is stopped (SIGSTOP), learnerd is killed
with -9 and restarted with --resume on the same port, and the owners are
continued together: each sees its connection gone and reconnects within
its first backoff step (0-0.2 s, docs/ownerd.md "Reconnection"), so the
restarted learnerd meets a storm of N handshakes from one address.

Measured for each learnerd, in the same run and on the same certificates
and data:
  defaults    the learnerd given, with its default flood guard
  baseline    the same learnerd with the guard out of the way, as in
              issue 22's finding: --max-pending 10000
              --max-pending-per-addr 0 (and --baseline-learnerd L0, e.g. a
              build of the code before a change, with its defaults, if given)
and for each:
  first join  owners started -> dpasync_learner_owners_connected = N
  rejoin      owners continued -> owners_connected = N again (or how many
              were back at --rejoin-limit)
  evicted, refused  the restarted learnerd's counters at that moment
and the job runs to its end (T = 2 N) with every ownerd exiting 0.  The
result is the ratio defaults / baseline of the rejoin and first-join
times (1.0: the guard costs nothing).  The two runs alternate
(--rounds, default 1: baseline then defaults), so that a change of the
machine's load shows as a spread.  A figure, not a test: nothing is
asserted beyond the processes' success.

Memory: an ownerd takes about 11.5 MB, so 1,000 need about 12 GiB.

Every process runs in its own session with PR_SET_PDEATHSIG and is killed
at the end, on failure and on SIGINT/SIGTERM (benchproc.py).

Usage (meson passes the executables):
  bench_rejoin.py --learnerd L --ownerd O --dpasync D
                  [--baseline-learnerd L0] [--owners 1000] [--rate 2]
                  [--rounds 1] [--rejoin-limit 300] [--out DIR] [--keep]
                  [--json FILE] [--quick]
"""
import argparse
import datetime
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchproc import (TMPDIRS, log, trap_signals, start, start_ownerd, reap,  # noqa: E402
                       kill_all, run_guarded)


def metric(port, name):
    try:
        body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                      timeout=5).read().decode()
    except OSError:
        return None
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def wait_ports(lp, pf, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end and lp.poll() is None:
        try:
            ports = dict(line.strip().split("=") for line in open(pf) if "=" in line)
            if "tls" in ports and "metrics" in ports:
                return int(ports["tls"]), int(ports["metrics"])
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    raise RuntimeError("learnerd did not start (see %s)" % os.path.dirname(pf))


def wait_connected(lp, mport, n, limit):
    """Seconds until owners_connected reaches n, or (None, last count)."""
    t0 = time.monotonic()
    got = 0
    while time.monotonic() - t0 < limit:
        if lp.poll() is not None:
            raise RuntimeError("learnerd exited %s while owners joined" % lp.returncode)
        v = metric(mport, "dpasync_learner_owners_connected")
        if v is not None:
            got = int(v)
            if got >= n:
                return time.monotonic() - t0, got
        time.sleep(0.1)
    return None, got


# The baseline: the flood guard out of the way (issue 22's finding ran the
# same job with these and it finished in about a minute).
UNGUARDED = ["--max-pending", "10000", "--max-pending-per-addr", "0"]


class Bench:
    def __init__(self, a):
        self.a = a
        self.results = []
        self.certs = os.path.join(a.work, "certs")
        self.data = os.path.join(a.work, "data")

    def setup(self):
        a = self.a
        t = time.monotonic()
        subprocess.run([a.dpasync, "certs", "--out", self.certs, "--owners", str(a.owners)],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([a.dpasync, "gen", "--rows", ",".join(["10"] * a.owners),
                        "--features", "3", "--seed", "1", "--out", self.data],
                       check=True, stdout=subprocess.DEVNULL)
        log("certificates and data for %d owners: %.1f s" % (a.owners, time.monotonic() - t))

    def learner(self, learnerd, flags, jdir, port, resume):
        a = self.a
        c = self.certs
        pf = os.path.join(jdir, "learner.ports")
        if os.path.exists(pf):
            os.unlink(pf)
        argv = [learnerd, "--listen", "127.0.0.1:%d" % port, "--port-file", pf,
                "--ca", c + "/ca.crt", "--cert", c + "/learner.crt", "--key", c + "/learner.key",
                "--owners", ",".join("owner-%d" % i for i in range(1, a.owners + 1)),
                "--T", str(2 * a.owners), "--bias", "--out", os.path.join(jdir, "learner"),
                "--metrics-listen", "127.0.0.1:0", "--checkpoint-every", "100",
                "--log-level", "warn"] + flags + (["--resume"] if resume else [])
        le = open(os.path.join(jdir, "learnerd.log"), "a")
        lp = start(argv, subprocess.DEVNULL, le)
        le.close()
        tls, mport = wait_ports(lp, pf)
        return lp, tls, mport

    def ownerd(self, jdir, port, i):
        od = os.path.join(jdir, "owner-%d" % i)
        return start_ownerd(self.a.ownerd, port, self.certs, self.data, i, self.a.rate, od,
                            os.path.join(od, "ownerd.log"))

    def job(self, tag, learnerd, flags):
        a = self.a
        n = a.owners
        jdir = os.path.join(a.work, "%s-%d" % (tag, len(self.results)))
        os.makedirs(jdir)
        res = {"learner": tag, "learnerd": learnerd, "flags": flags, "owners": n}
        lp, port, mport = self.learner(learnerd, flags, jdir, 0, False)
        t0 = time.monotonic()
        owners = [self.ownerd(jdir, port, i) for i in range(1, n + 1)]
        res["start_owners_s"] = time.monotonic() - t0
        first, got = wait_connected(lp, mport, n, a.rejoin_limit)
        if first is None:
            raise RuntimeError("%s: only %d of %d owners joined within %.0f s"
                               % (tag, got, n, a.rejoin_limit))
        res["first_join_s"] = first + res["start_owners_s"]
        res["first_evicted"] = metric(mport, "dpasync_learner_connections_evicted_total")
        trace = os.path.join(jdir, "learner", "trace.csv")
        end = time.monotonic() + 120
        while time.monotonic() < end:
            try:
                with open(trace) as f:
                    if sum(1 for _ in f) > n // 2:
                        break
            except FileNotFoundError:
                pass
            time.sleep(0.1)
        for p in owners:
            p.send_signal(signal.SIGSTOP)
        lp.send_signal(signal.SIGKILL)
        reap(lp, 30)
        lp, _, mport = self.learner(learnerd, flags, jdir, port, True)
        t0 = time.monotonic()
        for p in owners:
            p.send_signal(signal.SIGCONT)
        rejoin, got = wait_connected(lp, mport, n, a.rejoin_limit)
        res["rejoin_s"] = rejoin
        res["rejoined"] = got
        res["rejoin_evicted"] = metric(mport, "dpasync_learner_connections_evicted_total")
        res["rejoin_refused"] = metric(mport, "dpasync_learner_connections_refused_total")
        if rejoin is None:
            log("  %-10s not all back: %d of %d after %.0f s" % (tag, got, n, a.rejoin_limit))
            res["job_done"] = False
            kill_all()
            return res
        lru = reap(lp, 600)
        res["job_done"] = lru is not None and lp.returncode == 0
        bad = [i for i, p in enumerate(owners, 1) if reap(p, 30) is None or p.returncode != 0]
        res["owners_failed"] = len(bad)
        kill_all()
        return res

    def run(self):
        a = self.a
        self.setup()
        variants = [("baseline", a.learnerd, UNGUARDED), ("defaults", a.learnerd, [])]
        if a.baseline_learnerd:
            variants.insert(1, ("old", a.baseline_learnerd, []))
        for _ in range(a.rounds):
            for tag, binary, flags in variants:
                log("%s (%s %s), load average %.1f %.1f %.1f"
                    % ((tag, binary, " ".join(flags)) + os.getloadavg()))
                r = self.job(tag, binary, flags)
                r["loadavg"] = os.getloadavg()
                log("  %-9s first join %.1f s (evicted %s); rejoin %s (evicted %s, refused %s); "
                    "job %s, owners failed %s"
                    % (tag, r["first_join_s"], r["first_evicted"],
                       "%.1f s" % r["rejoin_s"] if r["rejoin_s"] is not None
                       else "> %.0f s (%d back)" % (a.rejoin_limit, r["rejoined"]),
                       r["rejoin_evicted"], r["rejoin_refused"],
                       "done" if r["job_done"] else "not done", r.get("owners_failed", "-")))
                self.results.append(r)
        return self.results


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return None
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def ratios(results, limit):
    """Median time of each variant (a rejoin that did not finish counts as
    the limit, so the ratio is then a lower bound) and each against the
    baseline's."""
    out = {}
    for key in ("first_join_s", "rejoin_s"):
        med = {}
        for tag in ("baseline", "old", "defaults"):
            xs = [r[key] if r[key] is not None else limit
                  for r in results if r["learner"] == tag]
            if xs:
                med[tag] = median(xs)
        out[key] = {"median": med,
                    "ratio": {t: med[t] / med["baseline"] for t in med
                              if t != "baseline" and med["baseline"] > 0}}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--learnerd", required=True)
    ap.add_argument("--ownerd", required=True)
    ap.add_argument("--dpasync", required=True)
    ap.add_argument("--baseline-learnerd", help="a second learnerd measured the same way")
    ap.add_argument("--owners", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=1,
                    help="baseline/defaults pairs, run alternately")
    ap.add_argument("--rejoin-limit", type=float, default=300.0,
                    help="give up waiting for the owners after this many seconds")
    ap.add_argument("--out", "--work", dest="work")
    ap.add_argument("--json", default="bench-rejoin.json")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smoke run: 50 owners")
    a = ap.parse_args()
    if a.quick:
        a.owners = 50
    if a.owners < 1 or a.rounds < 1:
        ap.error("--owners and --rounds must be at least 1")
    for name in ("learnerd", "ownerd", "dpasync", "baseline_learnerd"):
        p = getattr(a, name)
        if p and not os.access(p, os.X_OK):
            ap.error("--%s %s is not executable" % (name.replace("_", "-"), p))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    trap_signals()
    if a.work is None:
        a.work = tempfile.mkdtemp(prefix="bench-rejoin-", dir=os.getcwd())
        TMPDIRS.append(a.work)
    else:
        os.makedirs(a.work, exist_ok=True)
    a.work = os.path.abspath(a.work)
    log("# bench-rejoin %s  %s  %d CPUs; %d ownerd"
        % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           platform.platform(), os.cpu_count() or 0, a.owners))

    def body():
        bench = Bench(a)
        try:
            results = bench.run()
        finally:
            if a.json and bench.results:
                with open(a.json, "w") as f:
                    json.dump({"settings": vars(a), "runs": bench.results,
                               "ratios": ratios(bench.results, a.rejoin_limit)}, f, indent=1)
        rt = ratios(results, a.rejoin_limit)
        for key, what in (("first_join_s", "first join"), ("rejoin_s", "rejoin")):
            med = rt[key]["median"]
            log("%-10s median %s; ratio to baseline %s" % (
                what, ", ".join("%s %.2f s" % kv for kv in med.items()),
                ", ".join("%s %.2f" % kv for kv in rt[key]["ratio"].items())))
        return 1 if any(not r["job_done"] for r in results if r["learner"] == "defaults") else 0

    return run_guarded("bench_rejoin", body, a.keep, a.work)


if __name__ == "__main__":
    sys.exit(main())
