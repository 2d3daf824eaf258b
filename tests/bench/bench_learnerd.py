#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Daemon throughput benchmark (docs/bench-daemons.md).

Iterations per second of learnerd in strict mode (request mode,
max-inflight 1) on loopback with real ownerd processes (3 and 100 owners,
50 rows x 10 features each, --bias so p = 11), against a raw TLS 1.3
request-response ping-pong over the same connection code (tls_pingpong,
two processes) measured in the same run.  Variants of each learnerd job:

  disk         the product: every ownerd ledger on a disk directory, with
               ownerd's default reserve-ahead (the share of each answer
               synced after the previous one left, docs/ledger.md §9),
               learnerd defaults (checkpoint every 100 iterations).  The
               headline.
  disk-sync    as disk with ownerd --no-reserve-ahead: an fdatasync before
               each answer leaves (the protocol before reserve-ahead).
  disk-nockpt  diagnostic: as disk, learnerd --checkpoint-every 0 (its
               periodic checkpoint -- three fsyncs -- off; it still
               checkpoints when a block of query ids runs out).
  shm          diagnostic: the ledgers on tmpfs (/dev/shm), where fdatasync
               is nearly free -- how much of the gap the ledger's
               durability explains.  Not a deployment.
  shm-nockpt   diagnostic: ledgers on tmpfs and --checkpoint-every 0.
  stub         diagnostic: bench_owner_stub (one process holding N owner
               connections; answers at once and asks again at once: no
               clock, no data, no noise, no ledger) -- learnerd's capacity.
  stub-nockpt  diagnostic: stub and --checkpoint-every 0.

Throughput of a job = (rows - 1) / (last - first time_unix of trace.csv),
i.e. startup (certificates, handshakes, waiting for every Hello) is
excluded.  Each (owners, variant) runs --runs times (median reported); a
ping-pong runs right before every job, and ratio = learnerd it/s / that
ping-pong's round trips/s (median over the runs).  A job whose measured window is
shorter than --min-seconds is rerun with a larger T.

Every process is started in its own session (process group) and killed
at the end, on failure and on SIGINT/SIGTERM.

Usage (meson passes the executables):
  bench_learnerd.py --learnerd L --ownerd O --dpasync D --pingpong P --stub S
                    [--owners 3,100] [--variants disk,shm,...] [--runs 3]
                    [--seconds 6] [--min-seconds 5] [--rate 1000]
                    [--out DIR] [--ledger-dir DIR] [--shm-dir /dev/shm]
                    [--json FILE] [--keep] [--quick] [--strict]
Exit 0 unless a program failed (with --strict also 1 when a disk ratio is
below 0.5).
"""
import argparse
import csv
import datetime
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


# variant -> (owners: "ownerd" or "stub", ledger place, extra learnerd flags,
#             first guess of T for about 6 s; later rounds use what was measured,
#             extra ownerd flags)
VARIANTS = {
    "disk": ("ownerd", "disk", [], 8000, []),
    "disk-sync": ("ownerd", "disk", [], 4000, ["--no-reserve-ahead"]),
    "disk-nockpt": ("ownerd", "disk", ["--checkpoint-every", "0"], 8000, []),
    "shm": ("ownerd", "shm", [], 10000, []),
    "shm-nockpt": ("ownerd", "shm", ["--checkpoint-every", "0"], 12000, []),
    "stub": ("stub", None, [], 40000, []),
    "stub-nockpt": ("stub", None, ["--checkpoint-every", "0"], 100000, []),
}


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchproc import (PROCS, TMPDIRS, log, Interrupted, on_signal, trap_signals,  # noqa: E402,F401
                       start, reap, kill_all, finish, _die_with_parent)


def rate_for(a, n):
    return a.rates.get(n, a.rates[None])


def fs_type(path):
    try:
        return subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def fsync_probe(directory, n=300):
    """Latency of what the ledger does per answer: append 64 bytes, then
    fdatasync (microseconds: median, mean, p90)."""
    path = os.path.join(directory, ".fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    rec = b"\x5a" * 64
    d = []
    try:
        for _ in range(n):
            t = time.perf_counter()
            os.write(fd, rec)
            os.fdatasync(fd)
            d.append(time.perf_counter() - t)
    finally:
        os.close(fd)
        os.unlink(path)
    d.sort()
    return {"median_us": 1e6 * d[len(d) // 2], "mean_us": 1e6 * sum(d) / len(d),
            "p90_us": 1e6 * d[int(0.9 * len(d))]}


def read_trace(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows


def analyse(rows):
    t = [float(r["time_unix"]) for r in rows]
    wait = [float(r["wait_s"]) for r in rows]
    rtt = [float(r["rtt_s"]) for r in rows]
    window = t[-1] - t[0]
    # A request served from an empty queue (the learner was idle when it
    # arrived) has wait_s 0 at the trace's microsecond resolution.
    starved = sum(1 for w in wait[1:] if w < 1e-6) / max(1, len(wait) - 1)
    return {"iterations": len(rows), "window_s": window,
            "it_per_s": (len(rows) - 1) / window if window > 0 else float("nan"),
            "starved_frac": starved, "rtt_median_us": 1e6 * statistics.median(rtt),
            "wait_median_us": 1e6 * statistics.median(wait)}


class Bench:
    def __init__(self, a):
        self.a = a
        self.maxn = max(a.owners)
        self.certs = os.path.join(a.work, "certs")
        self.data = os.path.join(a.work, "data")
        # T that gives about --seconds of work, learned from the runs.
        self.T = {}

    def setup(self):
        a = self.a
        rows = ",".join(["50"] * self.maxn)
        subprocess.run([a.dpasync, "gen", "--rows", rows, "--features", "10", "--seed", "1",
                        "--out", self.data], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([a.dpasync, "certs", "--out", self.certs, "--owners", str(self.maxn)],
                       check=True, stdout=subprocess.DEVNULL)

    def pingpong(self, tag):
        a = self.a
        c = self.certs
        out = subprocess.run(
            [a.pingpong, "--ca", c + "/ca.crt", "--server-cert", c + "/learner.crt",
             "--server-key", c + "/learner.key", "--client-cert", c + "/owner-1.crt",
             "--client-key", c + "/owner-1.key", "--p", "11",
             "--seconds", str(a.pingpong_seconds)],
            capture_output=True, text=True, timeout=a.pingpong_seconds + 90,
            start_new_session=True, preexec_fn=_die_with_parent)
        if out.returncode != 0:
            raise RuntimeError("tls_pingpong failed: " + out.stderr.strip())
        r = json.loads(out.stdout)
        log("  %-22s %9.0f round trips/s  (query %d B, answer %d B, request %d B)"
            % (tag + " pingpong", r["rt_per_s"], r["query_bytes"], r["answer_bytes"],
               r["request_bytes"]))
        return r

    def job(self, n, variant, T, tag):
        """One learnerd job; returns the analysis dict or raises."""
        a = self.a
        c = self.certs
        kind, place, lflags, _, oflags = VARIANTS[variant]
        jdir = os.path.join(a.work, tag)
        os.makedirs(jdir)
        ldir = None
        if place is not None:
            ldir = os.path.join(a.shm_root if place == "shm" else a.ledger_root, tag)
            os.makedirs(ldir)
        names = ",".join("owner-%d" % i for i in range(1, n + 1))
        ports = os.path.join(jdir, "learner.ports")
        t_start = time.monotonic()
        with open(os.path.join(jdir, "learnerd.out"), "w") as lo, \
             open(os.path.join(jdir, "learnerd.log"), "w") as le:
            lp = start([a.learnerd, "--listen", "127.0.0.1:0", "--port-file", ports,
                        "--ca", c + "/ca.crt", "--cert", c + "/learner.crt",
                        "--key", c + "/learner.key", "--owners", names, "--T", str(T),
                        "--bias", "--out", os.path.join(jdir, "learner")] + lflags, lo, le)
        port = None
        deadline = time.monotonic() + 15
        while port is None and time.monotonic() < deadline:
            if lp.poll() is not None:
                break
            try:
                with open(ports) as f:
                    for line in f:
                        if line.startswith("tls="):
                            port = int(line[4:])
            except FileNotFoundError:
                pass
            time.sleep(0.02)
        if port is None:
            raise RuntimeError("%s: learnerd did not start (see %s/learnerd.log)" % (tag, jdir))
        owners = []
        if kind == "stub":
            with open(os.path.join(jdir, "stub.log"), "w") as se:
                owners.append(start([a.stub, "--learner", "127.0.0.1:%d" % port,
                                     "--ca", c + "/ca.crt", "--certs", c, "--owners", str(n),
                                     "--p", "11", "--rows", "50"], subprocess.DEVNULL, se))
        else:
            for i in range(1, n + 1):
                od = os.path.join(ldir, "owner-%d" % i)
                os.makedirs(od)
                with open(os.path.join(jdir, "ownerd-%d.log" % i), "w") as oe:
                    owners.append(start(
                        [a.ownerd, "--learner", "127.0.0.1:%d" % port,
                         "--ca", c + "/ca.crt", "--cert", "%s/owner-%d.crt" % (c, i),
                         "--key", "%s/owner-%d.key" % (c, i),
                         "--data", "%s/owner-%d.csv" % (self.data, i), "--bias",
                         "--rate", "%g" % rate_for(a, n),
                         "--ledger", os.path.join(od, "ledger"),
                         "--model-out", os.path.join(od, "model.json"), "--once"] + oflags,
                        subprocess.DEVNULL, oe))
        limit = 60 + 20 * a.seconds
        lru = reap(lp, limit)
        if lru is None:
            raise RuntimeError("%s: learnerd did not finish within %d s" % (tag, limit))
        if lp.returncode != 0:
            raise RuntimeError("%s: learnerd exited %d (see %s/learnerd.log)"
                               % (tag, lp.returncode, jdir))
        ocpu = 0.0
        bad = []
        for i, p in enumerate(owners, 1):
            ru = reap(p, 15)
            if ru is None or p.returncode != 0:
                bad.append(i)
            if ru is not None:
                ocpu += ru.ru_utime + ru.ru_stime
        wall = time.monotonic() - t_start
        kill_all()
        if bad:
            raise RuntimeError("%s: owner process(es) %s did not exit 0 after Done"
                               % (tag, bad[:10]))
        res = analyse(read_trace(os.path.join(jdir, "learner", "trace.csv")))
        if res["iterations"] != T:
            raise RuntimeError("%s: trace has %d rows, T=%d" % (tag, res["iterations"], T))
        res.update({"owners": n, "variant": variant, "T": T, "job_wall_s": wall,
                    "rate": rate_for(a, n) if kind == "ownerd" else None,
                    "learnerd_cpu_s": lru.ru_utime + lru.ru_stime, "owners_cpu_s": ocpu,
                    "ledger_fs": "-" if ldir is None else fs_type(ldir)})
        res["learnerd_cpu_us_per_it"] = 1e6 * res["learnerd_cpu_s"] / T
        res["owners_cpu_us_per_it"] = 1e6 * ocpu / T
        if not a.keep:
            shutil.rmtree(jdir, ignore_errors=True)
            if ldir:
                shutil.rmtree(ldir, ignore_errors=True)
        return res

    def measured_job(self, n, variant, rnd):
        a = self.a
        key = (n, variant)
        T = self.T.get(key, VARIANTS[variant][3])
        T = max(T, 2 * n)
        for attempt in range(4):
            tag = "r%d-n%d-%s-%d" % (rnd, n, variant, attempt)
            r = self.job(n, variant, T, tag)
            want = int(math.ceil(r["it_per_s"] * a.seconds / 100.0)) * 100
            self.T[key] = max(want, 2 * n, 100)
            if r["window_s"] >= a.min_seconds:
                break
            log("  %-22s window %.2f s < %.1f s: again with T=%d"
                % ("%d owners %s" % (n, variant), r["window_s"], a.min_seconds, self.T[key]))
            T = self.T[key]
        log("  %-22s %9.1f it/s  ratio %.3f  window %.1f s  T=%d  starved %.1f%%  "
            "learnerd %.1f us CPU/it  owners %.1f us CPU/it  ledger fs %s"
            % ("%d owners %s" % (n, variant), r["it_per_s"], r["it_per_s"] / self.pp_now,
               r["window_s"], r["T"], 100 * r["starved_frac"], r["learnerd_cpu_us_per_it"],
               r["owners_cpu_us_per_it"], r["ledger_fs"]))
        return r

    def run(self):
        a = self.a
        self.setup()
        results = {"pingpong": [], "jobs": []}
        results["fsync_probe"] = {
            "disk": dict(fsync_probe(a.ledger_root), fs=fs_type(a.ledger_root)),
            "shm": dict(fsync_probe(a.shm_root), fs=fs_type(a.shm_root)),
        }
        for k, v in results["fsync_probe"].items():
            log("fsync probe %-4s (%s): 64-byte append + fdatasync median %.1f us, mean %.1f us, "
                "p90 %.1f us" % (k, v["fs"], v["median_us"], v["mean_us"], v["p90_us"]))
        for rnd in range(1, a.runs + 1):
            log("round %d/%d  (load average %.2f %.2f %.2f)" % ((rnd, a.runs) + os.getloadavg()))
            for n in a.owners:
                for v in a.variants:
                    # The baseline right before each job: the machine is
                    # shared and its load drifts.
                    pp = self.pingpong("r%d" % rnd)
                    pp["round"] = rnd
                    results["pingpong"].append(pp)
                    self.pp_now = pp["rt_per_s"]
                    r = self.measured_job(n, v, rnd)
                    r["round"] = rnd
                    r["pingpong_rt_per_s"] = pp["rt_per_s"]
                    r["ratio"] = r["it_per_s"] / pp["rt_per_s"]
                    r["loadavg"] = os.getloadavg()
                    results["jobs"].append(r)
        return results


def summarise(results, a):
    pp = statistics.median(p["rt_per_s"] for p in results["pingpong"])
    lines = []
    lines.append("ping-pong (2 processes, TLS 1.3, Query/Answer/UpdateRequest of p=11): "
                 "median %.0f round trips/s over %d runs (min %.0f, max %.0f)"
                 % (pp, len(results["pingpong"]),
                    min(p["rt_per_s"] for p in results["pingpong"]),
                    max(p["rt_per_s"] for p in results["pingpong"])))
    lines.append("")
    lines.append("| owners | variant | it/s (median) | runs | ratio (median of per-round) "
                 "| starved | learnerd CPU µs/it | owners CPU µs/it |")
    lines.append("|---:|---|---:|---|---:|---:|---:|---:|")
    summary = {"pingpong_rt_per_s_median": pp, "cells": []}
    for n in a.owners:
        for v in a.variants:
            js = [j for j in results["jobs"] if j["owners"] == n and j["variant"] == v]
            if not js:
                continue
            ips = statistics.median(j["it_per_s"] for j in js)
            ratio = statistics.median(j["ratio"] for j in js)
            cell = {"owners": n, "variant": v, "it_per_s_median": ips, "ratio_median": ratio,
                    "runs": [round(j["it_per_s"], 1) for j in js],
                    "starved_frac_median": statistics.median(j["starved_frac"] for j in js),
                    "learnerd_cpu_us_per_it": statistics.median(
                        j["learnerd_cpu_us_per_it"] for j in js),
                    "owners_cpu_us_per_it": statistics.median(
                        j["owners_cpu_us_per_it"] for j in js)}
            summary["cells"].append(cell)
            lines.append("| %d | %s | %.0f | %s | %.3f | %.1f%% | %.1f | %.1f |"
                         % (n, v, ips, ", ".join("%.0f" % x for x in cell["runs"]), ratio,
                            100 * cell["starved_frac_median"], cell["learnerd_cpu_us_per_it"],
                            cell["owners_cpu_us_per_it"]))
    # What each diagnostic recovers: per-iteration time of the headline
    # (disk) minus that of the diagnostic, as a share of the headline's
    # time above one ping-pong round trip (the gap).
    lines.append("")
    tp = 1e6 / pp
    for n in a.owners:
        c = {x["variant"]: x for x in summary["cells"] if x["owners"] == n}
        if "disk" not in c:
            continue
        td = 1e6 / c["disk"]["it_per_s_median"]
        parts = []
        for v in VARIANTS:
            if v == "disk" or v not in c:
                continue
            tv = 1e6 / c[v]["it_per_s_median"]
            share = (td - tv) / (td - tp) if td > tp else float("nan")
            summary.setdefault("gap_share", {}).setdefault(str(n), {})[v] = share
            parts.append("%s %.0f µs (%.0f%% of the gap)" % (v, tv, 100 * share))
        lines.append("%d owners: %.0f µs per iteration (disk) vs %.0f µs per ping-pong round "
                     "trip; %s" % (n, td, tp, "; ".join(parts)))
    return summary, "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--learnerd", required=True)
    ap.add_argument("--ownerd", required=True)
    ap.add_argument("--dpasync", required=True)
    ap.add_argument("--pingpong", required=True)
    ap.add_argument("--stub", help="bench_owner_stub (needed for the stub variant)")
    ap.add_argument("--owners", default="3,100")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma-separated, of: " + ", ".join(VARIANTS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6.0, help="target window per job")
    ap.add_argument("--min-seconds", type=float, default=5.0, help="shortest window kept")
    ap.add_argument("--pingpong-seconds", type=float, default=2.0)
    ap.add_argument("--rate", default="1000",
                    help="ownerd --rate: R for every job, or a list like 1000,3:5000 "
                    "(N:R for the jobs with N owners)")
    # --out as in the other tools; --work is the older spelling.
    ap.add_argument("--out", "--work", dest="work", help="work directory (default: a new "
                    "one in the current directory, removed at the end unless --keep)")
    ap.add_argument("--ledger-dir", help="disk directory for the disk variant's ledgers "
                    "(default: inside --out)")
    ap.add_argument("--shm-dir", default="/dev/shm")
    ap.add_argument("--json", default="bench-daemons.json",
                    help="write all results here (default: bench-daemons.json in the current "
                    "directory; \"\" for none)")
    ap.add_argument("--keep", action="store_true", help="keep logs, traces and ledgers")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: 1 run, 3 owners, 1 s windows")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 when a disk-variant ratio is below 0.5")
    a = ap.parse_args()
    a.owners = [int(x) for x in a.owners.split(",") if x]
    try:
        a.rates = {}
        for item in a.rate.split(","):
            n, _, r = item.rpartition(":")
            a.rates[int(n) if n else None] = float(r)
        if None not in a.rates:
            a.rates[None] = 1000.0
    except ValueError:
        ap.error("--rate: expected R or N:R items, got %r" % a.rate)
    a.variants = [x for x in a.variants.split(",") if x]
    if a.quick:
        a.runs, a.owners, a.seconds, a.min_seconds, a.pingpong_seconds = 1, [3], 1.5, 1.0, 1.0
    for v in a.variants:
        if v not in VARIANTS:
            ap.error("unknown variant %r" % v)
    if any(VARIANTS[v][0] == "stub" for v in a.variants) and not a.stub:
        ap.error("the stub variant needs --stub")
    for name in ("learnerd", "ownerd", "dpasync", "pingpong", "stub"):
        p = getattr(a, name)
        if p and not os.access(p, os.X_OK):
            ap.error("--%s %s is not executable" % (name, p))

    trap_signals()
    if a.work is None:
        a.work = tempfile.mkdtemp(prefix="bench-daemons-", dir=os.getcwd())
        TMPDIRS.append(a.work)
    else:
        os.makedirs(a.work, exist_ok=True)
    a.work = os.path.abspath(a.work)
    a.ledger_root = os.path.abspath(a.ledger_dir or os.path.join(a.work, "ledgers"))
    os.makedirs(a.ledger_root, exist_ok=True)
    a.shm_root = tempfile.mkdtemp(prefix="bench-daemons-", dir=a.shm_dir)
    TMPDIRS.append(a.shm_root)

    log("# bench-daemons %s  %s  %d CPUs  %s" % (
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        platform.platform(), os.cpu_count() or 0, cpu_model()))
    log("# owners %s, variants %s, %d runs, ~%.0f s per job, ownerd --rate %s; disk ledgers "
        "in %s (%s)" % (a.owners, a.variants, a.runs, a.seconds,
                        ", ".join("%d owners %g" % (n, rate_for(a, n)) for n in a.owners),
                        a.ledger_root,
                        fs_type(a.ledger_root)))
    rc = 0
    try:
        b = Bench(a)
        results = b.run()
        summary, text = summarise(results, a)
        results["summary"] = summary
        results["settings"] = {k: v for k, v in vars(a).items() if k != "rates"}
        log("")
        log(text)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
        if a.strict and any(c["ratio_median"] < 0.5 for c in summary["cells"]
                            if c["variant"] == "disk"):
            log("a disk-variant ratio is below the 0.5 goal")
            rc = 1
    except (RuntimeError, subprocess.CalledProcessError, subprocess.TimeoutExpired,
            OSError) as e:
        log("bench_learnerd: FAILED: %s" % e)
        rc = 1
    except Interrupted as e:
        log("bench_learnerd: interrupted (%s)" % e)
        rc = 130
    finally:
        finish(a.keep, a.work, a.shm_root)
    return rc


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


if __name__ == "__main__":
    sys.exit(main())
