#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Scale benchmark (docs/scale.md): one learnerd with thousands of owners.

Jobs (each with a fresh learner directory; strict request mode):

  stub N    learnerd + bench_owner_stub holding N owner connections (one
            process; answers at once, no data, noise or ledger).  Reports
            learnerd's memory per connection = (RSS with N owners admitted
            - RSS with 0) / N, peak RSS (VmHWM), the handshake storm time,
            it/s and learnerd's CPU.
  mixed R+S R real ownerd processes (a few rows each, p small, durable
            ledgers in a temporary directory) + a stub holding S more
            connections, to the end of the job.  R is cut to what fits in
            the machine's memory after measuring the first ownerds' RSS
            (--mem-share of MemAvailable), and the cut is reported.

Handshake storm = first connect (the owners' start) to the first query:
the learner sends its first query once every configured owner is admitted
and has said Hello (min-owners = N), so that is the time to admit them all.
it/s = (rows - 1) / (last - first time_unix of trace.csv).  CPU = user +
system time of learnerd (getrusage of the child), split at the first
query into storm and training.

learnerd runs with room for the storm: --max-pending N
--max-pending-per-addr 0 (every owner connects from 127.0.0.1; the flood
guard's defaults would evict), --handshake-timeout 600, --hello-timeout
600, --query-timeout 120, --log-level warn, --checkpoint-every 100 (its
default; --checkpoint-every changes it); otherwise defaults.

Every process runs in its own session with PR_SET_PDEATHSIG and is killed
at the end, on failure, on SIGINT/SIGTERM.

Usage (meson passes the executables):
  bench_scale.py --learnerd L --ownerd O --dpasync D --stub S
                 [--stub-owners 1000,10000] [--real 1000] [--total 10000]
                 [--T-per-owner 2] [--rate 2] [--mem-share 0.6]
                 [--out DIR] [--json FILE] [--keep] [--quick]
"""
import argparse
import csv
import datetime
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CLK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchproc import (PROCS, TMPDIRS, log, Interrupted, on_signal, trap_signals,  # noqa: E402,F401
                       start, start_ownerd, reap, kill_all, finish)


def status_kb(pid, keys=("VmRSS", "VmHWM")):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in keys:
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK
    except (OSError, IndexError, ValueError):
        return None


def n_fds(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None


def mem_available_kb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def trace_rows(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except FileNotFoundError:
        return []


def first_trace_row(path):
    try:
        with open(path) as f:
            f.readline()
            return f.readline().count(",") >= 7
    except FileNotFoundError:
        return False


class Bench:
    def __init__(self, a):
        self.a = a
        self.certs = a.certs or os.path.join(a.work, "certs")
        self.data = os.path.join(a.work, "data")

    def setup(self):
        a = self.a
        n = max(max(a.stub_owners, default=0), a.total)
        t = time.monotonic()
        if a.certs and os.path.exists(os.path.join(a.certs, "owner-%d.crt" % n)):
            log("certificates: reusing %s" % a.certs)
        else:
            subprocess.run([a.dpasync, "certs", "--out", self.certs, "--owners", str(n)],
                           check=True, stdout=subprocess.DEVNULL)
            log("certificates for %d owners: %.1f s" % (n, time.monotonic() - t))
        if a.real > 0:
            subprocess.run([a.dpasync, "gen", "--rows", ",".join([str(a.rows)] * a.real),
                            "--features", str(a.features), "--seed", "1", "--out", self.data],
                           check=True, stdout=subprocess.DEVNULL)

    def learner(self, jdir, n, T):
        a = self.a
        c = self.certs
        names = os.path.join(jdir, "owners.txt")
        ports = os.path.join(jdir, "learner.ports")
        argv = [a.learnerd, "--listen", "127.0.0.1:0", "--port-file", ports,
                "--ca", c + "/ca.crt", "--cert", c + "/learner.crt", "--key", c + "/learner.key",
                "--owners", ",".join("owner-%d" % i for i in range(1, n + 1)),
                "--T", str(T), "--bias", "--out", os.path.join(jdir, "learner"),
                "--max-pending", str(min(n, 100000)), "--max-pending-per-addr", "0",
                "--handshake-timeout", "600", "--hello-timeout", "600",
                "--query-timeout", "120", "--log-level", "warn",
                "--checkpoint-every", str(a.checkpoint_every)]
        with open(names, "w") as f:
            f.write(" ".join(argv) + "\n")
        le = open(os.path.join(jdir, "learnerd.log"), "w")
        lp = start(argv, subprocess.DEVNULL, le)
        deadline = time.monotonic() + 60
        port = None
        while port is None and time.monotonic() < deadline and lp.poll() is None:
            try:
                with open(ports) as f:
                    for line in f:
                        if line.startswith("tls="):
                            port = int(line[4:])
            except FileNotFoundError:
                pass
            time.sleep(0.02)
        if port is None:
            raise RuntimeError("learnerd did not start (see %s/learnerd.log)" % jdir)
        time.sleep(0.5)
        return lp, port

    def stub(self, jdir, port, first, n, p):
        a = self.a
        c = self.certs
        se = open(os.path.join(jdir, "stub-%d.log" % first), "w")
        return start([a.stub, "--learner", "127.0.0.1:%d" % port, "--ca", c + "/ca.crt",
                      "--certs", c, "--owners", str(n), "--first", str(first), "--p", str(p),
                      "--rows", str(a.rows), "--rate", "%g" % a.rate], subprocess.DEVNULL, se)

    def ownerd(self, jdir, ldir, port, i):
        return start_ownerd(self.a.ownerd, port, self.certs, self.data, i, self.a.rate,
                            os.path.join(ldir, "owner-%d" % i),
                            os.path.join(jdir, "ownerd-%d.log" % i))

    def watch(self, lp, jdir, t0, owners, timeout):
        """Sample learnerd until it exits: RSS (steady = median while
        training), VmHWM, descriptors, CPU at the first query."""
        trace = os.path.join(jdir, "learner", "trace.csv")
        res = {"rss_train_kb": [], "fds_max": 0, "rss_storm_max_kb": 0, "rss_train_max_kb": 0}
        storm_end = None
        deadline = time.monotonic() + timeout
        while True:
            ru = reap(lp, 0.2)
            if ru is not None:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("learnerd did not finish within %d s" % timeout)
            st = status_kb(lp.pid)
            fds = n_fds(lp.pid)
            if fds:
                res["fds_max"] = max(res["fds_max"], fds)
            if "VmHWM" in st:
                res["hwm_kb"] = st["VmHWM"]
            if storm_end is None and first_trace_row(trace):
                storm_end = time.monotonic()
                res["cpu_storm_s"] = cpu_s(lp.pid)
                res["rss_admitted_kb"] = st.get("VmRSS")
                res["fds_admitted"] = fds
            elif storm_end is not None and "VmRSS" in st:
                res["rss_train_kb"].append(st["VmRSS"])
            if "VmRSS" in st:
                k = "rss_storm_max_kb" if storm_end is None else "rss_train_max_kb"
                res[k] = max(res[k], st["VmRSS"])
            for p in owners:
                if p.poll() is not None and p.returncode != 0:
                    raise RuntimeError("an owner process exited %d before the end (see %s)"
                                       % (p.returncode, jdir))
        if lp.returncode != 0:
            raise RuntimeError("learnerd exited %d (see %s/learnerd.log)" % (lp.returncode, jdir))
        res["cpu_s"] = ru.ru_utime + ru.ru_stime
        res["maxrss_kb"] = ru.ru_maxrss
        return res

    def finish(self, res, jdir, T, owners, t0_wall):
        bad = []
        for p in owners:
            if reap(p, 60) is None or p.returncode != 0:
                bad.append(p.args[-1] if p.returncode is None else p.returncode)
        if bad:
            raise RuntimeError("%d owner process(es) did not exit 0 after Done (see %s)"
                               % (len(bad), jdir))
        rows = trace_rows(os.path.join(jdir, "learner", "trace.csv"))
        if len(rows) != T:
            raise RuntimeError("trace has %d rows, T=%d" % (len(rows), T))
        t = [float(r["time_unix"]) for r in rows]
        # The first row is the first answer: every owner was admitted and
        # had said Hello a round trip before.
        res["storm_s"] = t[0] - t0_wall
        res["T"] = T
        res["window_s"] = t[-1] - t[0]
        res["it_per_s"] = (len(t) - 1) / res["window_s"] if res["window_s"] > 0 else None
        res["cpu_train_s"] = res["cpu_s"] - (res.get("cpu_storm_s") or 0)
        res["cpu_us_per_it"] = 1e6 * res["cpu_train_s"] / T
        rt = res.pop("rss_train_kb")
        res["rss_train_kb"] = statistics.median(rt) if rt else res.get("rss_admitted_kb")

    def stub_job(self, n):
        a = self.a
        tag = "stub-%d" % n
        jdir = os.path.join(a.work, tag)
        os.makedirs(jdir)
        T = max(a.T_per_owner * n, a.stub_T)
        lp, port = self.learner(jdir, n, T)
        st0 = status_kb(lp.pid)
        fds0 = n_fds(lp.pid)
        t0, t0_wall = time.monotonic(), time.time()
        sp = self.stub(jdir, port, 1, n, a.features + 1)
        res = self.watch(lp, jdir, t0, [sp], a.timeout)
        self.finish(res, jdir, T, [sp], t0_wall)
        res.update({"job": tag, "owners": n, "real": 0, "stubs": n, "rss0_kb": st0["VmRSS"],
                    "fds0": fds0})
        self.per_conn(res, n)
        self.report(res)
        if not a.keep:
            shutil.rmtree(jdir, ignore_errors=True)
        return res

    def mixed_job(self):
        a = self.a
        n = a.total
        real = a.real
        tag = "mixed-%d" % n
        jdir = os.path.join(a.work, tag)
        os.makedirs(jdir)
        ldir = tempfile.mkdtemp(prefix="bench-scale-ledgers-", dir=a.ledger_root)
        TMPDIRS.append(ldir)
        T = max(a.T_per_owner * n, 1000)
        lp, port = self.learner(jdir, n, T)
        st0 = status_kb(lp.pid)
        fds0 = n_fds(lp.pid)
        owners = []
        t0, t0_wall = time.monotonic(), time.time()
        # The first ownerds alone, to measure one's RSS and cut the count
        # to what the machine's memory holds.
        probe = min(real, 20)
        for i in range(1, probe + 1):
            owners.append(self.ownerd(jdir, ldir, port, i))
        time.sleep(3.0)
        rss = sorted(status_kb(p.pid).get("VmRSS", 0) for p in owners)
        one = rss[len(rss) // 2]
        avail = mem_available_kb()
        fit = int(a.mem_share * avail / max(one, 1)) + probe
        if fit < real:
            log("  ownerd RSS %d kB x %d > %.0f%% of MemAvailable %d kB: %d real owners"
                % (one, real, 100 * a.mem_share, avail, fit))
            real = fit
        log("  ownerd RSS (median of the first %d): %d kB; %d real owners need %.1f GiB "
            "(MemAvailable %.1f GiB)" % (probe, one, real, one * real / 2**20, avail / 2**20))
        for i in range(probe + 1, real + 1):
            owners.append(self.ownerd(jdir, ldir, port, i))
        if n > real:
            owners.append(self.stub(jdir, port, real + 1, n - real, a.features + 1))
        res = self.watch(lp, jdir, t0, owners, a.timeout)
        self.finish(res, jdir, T, owners, t0_wall)
        res.update({"job": tag, "owners": n, "real": real, "stubs": n - real,
                    "ownerd_rss_kb": one, "rss0_kb": st0["VmRSS"], "fds0": fds0,
                    "ledger_dir": a.ledger_root})
        self.per_conn(res, n)
        self.report(res)
        if not a.keep:
            shutil.rmtree(jdir, ignore_errors=True)
            shutil.rmtree(ldir, ignore_errors=True)
        return res

    @staticmethod
    def per_conn(res, n):
        for k in ("rss_admitted_kb", "rss_train_kb", "hwm_kb", "rss_storm_max_kb",
                  "rss_train_max_kb"):
            if res.get(k) is not None:
                res[k.replace("_kb", "_per_conn_b")] = 1024.0 * (res[k] - res["rss0_kb"]) / n

    @staticmethod
    def report(r):
        log("  %-12s %5d real + %5d stub: storm %.1f s, %.0f it/s (T=%d, %.1f s), learnerd CPU "
            "%.1f s (storm %.1f s, %.0f us/it training); RSS 0: %.1f MiB, admitted %.1f MiB, "
            "training %.1f MiB, peak %.1f MiB; per connection %.0f B admitted, %.0f B training, "
            "%.0f B peak (sampled max: %.0f B in the storm, %.0f B after it); descriptors %s at "
            "0, %s admitted, %s max"
            % (r["job"], r["real"], r["stubs"], r.get("storm_s", float("nan")),
               r["it_per_s"] or 0, r["T"], r["window_s"], r["cpu_s"],
               r.get("cpu_storm_s") or 0, r["cpu_us_per_it"], r["rss0_kb"] / 1024,
               (r.get("rss_admitted_kb") or 0) / 1024, (r.get("rss_train_kb") or 0) / 1024,
               r.get("hwm_kb", 0) / 1024, r.get("rss_admitted_per_conn_b", 0),
               r.get("rss_train_per_conn_b", 0), r.get("hwm_per_conn_b", 0),
               r.get("rss_storm_max_per_conn_b", 0), r.get("rss_train_max_per_conn_b", 0),
               r["fds0"],
               r.get("fds_admitted"), r["fds_max"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--learnerd", required=True)
    ap.add_argument("--ownerd", required=True)
    ap.add_argument("--dpasync", required=True)
    ap.add_argument("--stub", required=True)
    ap.add_argument("--stub-owners", default="1000,10000",
                    help="stub-only jobs, comma-separated owner counts ('' for none)")
    ap.add_argument("--real", type=int, default=1000, help="real ownerd processes in the "
                    "mixed job (0: no mixed job)")
    ap.add_argument("--total", type=int, default=10000, help="owners of the mixed job")
    ap.add_argument("--T-per-owner", type=int, default=2, help="T = this x owners")
    ap.add_argument("--stub-T", type=int, default=20000, help="at least this T in the "
                    "stub-only jobs (a training window of several seconds)")
    ap.add_argument("--rate", type=float, default=2.0, help="ownerd --rate (and the stubs' "
                    "Hello rate, so the plan shares the iterations evenly)")
    ap.add_argument("--rows", type=int, default=10, help="rows per owner")
    ap.add_argument("--features", type=int, default=3, help="features (p = this + 1)")
    ap.add_argument("--mem-share", type=float, default=0.6,
                    help="share of MemAvailable the real owners may take")
    ap.add_argument("--timeout", type=int, default=1800, help="per job, seconds")
    ap.add_argument("--checkpoint-every", type=int, default=100,
                    help="learnerd --checkpoint-every (its default 100; 0: only at the end)")
    ap.add_argument("--out", dest="work")
    ap.add_argument("--ledger-dir", help="directory for the ownerd ledgers (default: "
                    "inside --out, on its file system)")
    ap.add_argument("--certs", help="certificate directory to reuse or fill (default: "
                    "inside --out)")
    ap.add_argument("--json", default="bench-scale.json")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: stub 200, mixed 20 real + 180 stub")
    a = ap.parse_args()
    a.stub_owners = [int(x) for x in a.stub_owners.split(",") if x]
    if a.quick:
        a.stub_owners, a.real, a.total = [200], 20, 200
    if a.real > a.total:
        ap.error("--real exceeds --total")
    trap_signals()
    if a.work is None:
        a.work = tempfile.mkdtemp(prefix="bench-scale-", dir=os.getcwd())
        TMPDIRS.append(a.work)
    else:
        os.makedirs(a.work, exist_ok=True)
    a.work = os.path.abspath(a.work)
    a.ledger_root = os.path.abspath(a.ledger_dir or a.work)
    os.makedirs(a.ledger_root, exist_ok=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    log("# bench-scale %s  %s  %d CPUs  RLIMIT_NOFILE %d/%d  MemAvailable %.1f GiB"
        % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           platform.platform(), os.cpu_count() or 0, soft, hard, mem_available_kb() / 2**20))
    rc = 0
    results = {"jobs": []}
    try:
        b = Bench(a)
        b.setup()
        for n in a.stub_owners:
            results["jobs"].append(b.stub_job(n))
        if a.real > 0:
            results["jobs"].append(b.mixed_job())
        results["settings"] = vars(a)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
    except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
        log("bench_scale: FAILED: %s" % e)
        rc = 1
    except Interrupted as e:
        log("bench_scale: interrupted (%s)" % e)
        rc = 130
    finally:
        finish(a.keep, a.work)
    return rc


if __name__ == "__main__":
    sys.exit(main())
