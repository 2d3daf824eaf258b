#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Bounded staleness benchmark (docs/bench-daemons.md, "Bounded staleness").

The networked job of the paper's size class: N owners x 250,000 rows x 10
features (--bias: p = 11), T = 1000, ownerd clocks at --rate 1000, real
learnerd + ownerd processes on loopback, every ledger on disk (fdatasync
before each answer).  learnerd runs in strict mode (--max-inflight 1, the
paper's reference) and with --max-inflight 2, 3, 4 (learnerd caps it at N),
interleaved, --runs times each.  For every job:

  wall        learnerd's own "summary end=done ... secs=" line: from its
              first Query to the last update (startup, data loading and
              handshakes excluded)
  compute     the owners' own compute for those answers: the sum over
              every ownerd of dpasync_owner_gradient_seconds_sum (/metrics,
              the worker's time in dp_query_answer per answer), scraped
              after the job
  rtt         median Query-to-Answer round trip (trace.csv rtt_s)
  staleness   mean of trace.csv's staleness column
  psi         dpasync eval of learnerd's model.json on the owners' data

and, in the same run, the simulator on the same files and the same plan
inputs (`dpasync sim --T T --max-inflight M --repeats R`): its psi range
over R seeds at the same max-inflight, and its wall time per iteration
with loading excluded (summary.json "seconds").  That run models a queue
that is never empty; after the jobs, the timed simulator (`--answer-time`
= the jobs' median round trip at that max-inflight) models the owners'
clocks as ownerd runs them, and predicts the jobs' staleness, psi range
and wall time (docs/bench-daemons.md §7.5).

Targets (issue 11): strict wall <= 1.1 x compute; sim per iteration no
slower than one owner answer (its median round trip, and its compute);
--max-inflight 3 at least 1.6x faster than strict, psi within the
simulator's range at that staleness (the timed simulator's, which has
the jobs' staleness).

Usage (meson passes the executables):
  bench_staleness.py --learnerd L --ownerd O --dpasync D
                     [--owners 3] [--inflight 1,2,3,4] [--rows 250000] [--T 1000]
                     [--rate 1000] [--runs 3] [--sim-repeats 20] [--big 8:1,2,4,8]
                     [--diag-shm] [--ledger-dir DIR] [--json FILE] [--keep]
Exit 0 unless a program failed.
"""
import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_learnerd as bl  # noqa: E402  (process handling: start, reap, kill_all)

log = bl.log


def wait_port(path, key, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(key + "="):
                        return int(line[len(key) + 1:])
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    return None


def scrape(port, name):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    raise RuntimeError("metric %s not found" % name)


class Bench:
    def __init__(self, a):
        self.a = a
        self.certs = os.path.join(a.work, "certs")
        self.data = os.path.join(a.work, "data")

    def files(self, n):
        return [os.path.join(self.data, "owner-%d.csv" % i) for i in range(1, n + 1)]

    def setup(self, nmax):
        a = self.a
        subprocess.run([a.dpasync, "gen", "--rows", ",".join([str(a.rows)] * nmax),
                        "--features", str(a.features), "--seed", "1", "--out", self.data],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([a.dpasync, "certs", "--out", self.certs, "--owners", str(nmax)],
                       check=True, stdout=subprocess.DEVNULL)

    def sim(self, n, m, threads=1, repeats=None, answer_time=None):
        """dpasync sim at max-inflight m: psi per seed and seconds per iteration
        (one thread: the time of one iteration, comparable with one answer);
        with answer_time (seconds), the timed pipeline and its simulated
        job length."""
        a = self.a
        out = os.path.join(a.work, "sim-n%d-m%d" % (n, m))
        timed = ["--answer-time", repr(answer_time)] if answer_time else []
        subprocess.run([a.dpasync, "sim", "--target", "y", "--T", str(a.T), "--bias",
                        "--rate", "%g" % a.rate,
                        "--max-inflight", str(m), "--threads", str(threads),
                        "--repeats", str(repeats or a.sim_repeats),
                        "--psi-every", str(a.T), "--seed", "1", "--out", out] + timed
                       + self.files(n),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        shutil.rmtree(out, ignore_errors=True)
        return {"owners": n, "max_inflight": m, "threads": threads, "psi": s["psi"], "eta": s["eta"],
                "clip": s["clip_l1"], "staleness_mean": s["staleness_mean"],
                "per_iteration_s": s["seconds"]["per_iteration"],
                "load_s": s["seconds"]["load"], "timed": s.get("timed")}

    def job(self, n, m, tag, shm=False):
        a = self.a
        c = self.certs
        jdir = os.path.join(a.work, tag)
        ldir = os.path.join(a.shm_root if shm else a.ledger_root, tag)
        os.makedirs(jdir)
        os.makedirs(ldir)
        names = ",".join("owner-%d" % i for i in range(1, n + 1))
        ports = os.path.join(jdir, "learner.ports")
        lout = os.path.join(jdir, "learner")
        with open(os.path.join(jdir, "learnerd.out"), "w") as lo, \
             open(os.path.join(jdir, "learnerd.log"), "w") as le:
            lp = bl.start([a.learnerd, "--listen", "127.0.0.1:0", "--port-file", ports,
                           "--ca", c + "/ca.crt", "--cert", c + "/learner.crt",
                           "--key", c + "/learner.key", "--owners", names, "--T", str(a.T),
                           "--bias", "--max-inflight", str(m), "--out", lout], lo, le)
        port = wait_port(ports, "tls", lp, 15)
        if port is None:
            raise RuntimeError("%s: learnerd did not start (see %s/learnerd.log)" % (tag, jdir))
        owners = []
        for i in range(1, n + 1):
            od = os.path.join(ldir, "owner-%d" % i)
            os.makedirs(od)
            with open(os.path.join(jdir, "ownerd-%d.log" % i), "w") as oe:
                owners.append(bl.start(
                    [a.ownerd, "--learner", "127.0.0.1:%d" % port,
                     "--ca", c + "/ca.crt", "--cert", "%s/owner-%d.crt" % (c, i),
                     "--key", "%s/owner-%d.key" % (c, i), "--data", self.files(n)[i - 1],
                     "--bias", "--rate", "%g" % a.rate, "--lifetime-epsilon", "inf",
                     "--ledger", os.path.join(od, "ledger"),
                     "--metrics-listen", "127.0.0.1:0",
                     "--port-file", os.path.join(jdir, "owner-%d.ports" % i)],
                    subprocess.DEVNULL, oe))
        mports = []
        for i, p in enumerate(owners, 1):
            mp = wait_port(os.path.join(jdir, "owner-%d.ports" % i), "metrics", p)
            if mp is None:
                raise RuntimeError("%s: ownerd %d did not start (see %s/ownerd-%d.log)"
                                   % (tag, i, jdir, i))
            mports.append(mp)
        if bl.reap(lp, 600) is None:
            raise RuntimeError("%s: learnerd did not finish within 600 s" % tag)
        if lp.returncode != 0:
            raise RuntimeError("%s: learnerd exited %d (see %s/learnerd.log)"
                               % (tag, lp.returncode, jdir))
        # The owners stay up for the next job: their compute is read now.
        compute = sum(scrape(mp, "dpasync_owner_gradient_seconds_sum") for mp in mports)
        answers = sum(scrape(mp, "dpasync_owner_gradient_seconds_count") for mp in mports)
        bl.kill_all()
        with open(os.path.join(jdir, "learnerd.log")) as f:
            m_sum = re.findall(r"summary end=done k=(\d+)\S* secs=([0-9.]+)", f.read())
        if not m_sum:
            raise RuntimeError("%s: no summary line in learnerd.log" % tag)
        wall = float(m_sum[-1][1])
        with open(os.path.join(lout, "trace.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        if len(rows) != a.T:
            raise RuntimeError("%s: trace has %d rows, T=%d" % (tag, len(rows), a.T))
        ev = subprocess.run([a.dpasync, "eval", os.path.join(lout, "model.json")] + self.files(n),
                            check=True, capture_output=True, text=True)
        psi = json.loads(ev.stdout)["psi"]
        res = {"owners": n, "max_inflight": m, "ledgers": "tmpfs" if shm else "disk", "T": a.T, "wall_s": wall, "it_per_s": a.T / wall,
               "compute_s": compute, "answers": answers,
               "compute_per_answer_ms": 1e3 * compute / max(1, answers),
               "wall_over_compute": wall / compute,
               "rtt_median_ms": 1e3 * statistics.median(float(r["rtt_s"]) for r in rows),
               "staleness_mean": statistics.mean(float(r["staleness"]) for r in rows),
               "psi": psi, "loadavg": os.getloadavg()}
        if not a.keep:
            shutil.rmtree(jdir, ignore_errors=True)
            shutil.rmtree(ldir, ignore_errors=True)
        return res

    def run(self):
        a = self.a
        groups = [(a.owners, a.inflight)] + ([a.big] if a.big else [])
        self.setup(max(n for n, _ in groups))
        results = {"jobs": [], "sims": []}
        for n, ms in groups:
            ms = sorted(set(min(m, n) for m in ms))
            log("== %d owners x %d rows x %d features, T=%d, rate %g, max-inflight %s"
                % (n, a.rows, a.features, a.T, a.rate, ms))
            for m in ms:
                s = self.sim(n, m)
                results["sims"].append(s)
                if m == 1 and n == a.owners:
                    # a sweep's throughput: the repeats on every CPU
                    s2 = self.sim(n, m, threads=0, repeats=4)
                    results["sims_threads"] = s2
                    log("  sim  M=1 --threads 0 (every CPU), 4 repeats: %.3f ms/iteration"
                        % (1e3 * s2["per_iteration_s"]))
                log("  sim  M=%d  psi %s  staleness %.2f  %.3f ms/iteration (load %.1f s)"
                    % (m, " ".join("%.3g" % v for v in s["psi"]), s["staleness_mean"],
                       1e3 * s["per_iteration_s"], s["load_s"]))
            for rnd in range(1, a.runs + 1):
                for m in ms + ([0] if a.diag_shm and n == a.owners else []):
                    # m = 0: strict with the ledgers on tmpfs (diagnostic)
                    r = self.job(n, max(m, 1), "r%d-n%d-m%d" % (rnd, n, m), shm=m == 0)
                    r["round"] = rnd
                    results["jobs"].append(r)
                    log("  job  M=%d%s round %d: wall %.3f s  %.0f it/s  compute %.3f s "
                        "(%.3f ms/answer)  wall/compute %.3f  rtt %.3f ms  staleness %.2f  "
                        "psi %.3g  load %.1f"
                        % (r["max_inflight"], " tmpfs" if m == 0 else "", rnd, r["wall_s"], r["it_per_s"], r["compute_s"],
                           r["compute_per_answer_ms"], r["wall_over_compute"],
                           r["rtt_median_ms"], r["staleness_mean"], r["psi"], r["loadavg"][0]))
            for m in ms:
                # the timed simulator, given the round trip these jobs measured
                rtt = statistics.median(j["rtt_median_ms"] for j in results["jobs"]
                                        if j["owners"] == n and j["max_inflight"] == m
                                        and j["ledgers"] == "disk")
                s = self.sim(n, m, answer_time=rtt / 1e3)
                results.setdefault("sims_timed", []).append(s)
                log("  timed sim  M=%d  answer time %.3f ms: psi %s  staleness %.2f  "
                    "simulated job %.3f s" % (m, rtt, " ".join("%.3g" % v for v in s["psi"]),
                                              s["staleness_mean"],
                                              s["timed"]["seconds_mean"]))
        return results


def summarise(res):
    lines = ["| owners | max-inflight | wall s (median) | it/s | speed-up vs strict "
             "| compute s | wall/compute | rtt ms | staleness | psi (runs) "
             "| sim psi over seeds: min–max (mean) | sim ms/it |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|"]
    out = []
    for n in sorted(set(j["owners"] for j in res["jobs"])):
        keys = sorted(set((j["ledgers"] != "disk", j["max_inflight"]) for j in res["jobs"]
                          if j["owners"] == n))
        for shm, m in keys:
            led = "tmpfs" if shm else "disk"
            js = [j for j in res["jobs"] if j["owners"] == n and j["max_inflight"] == m
                  and j["ledgers"] == led]
            sim = [s for s in res["sims"] if s["owners"] == n and s["max_inflight"] == m][0]
            psim = sim["psi"]
            wall = statistics.median(j["wall_s"] for j in js)
            # per-round speed-up: against the strict job of the same round
            sp = []
            for j in js:
                b = [x for x in res["jobs"] if x["owners"] == n and x["max_inflight"] == 1
                     and x["round"] == j["round"] and x["ledgers"] == "disk"]
                if b:
                    sp.append(b[0]["wall_s"] / j["wall_s"])
            cell = {"owners": n, "max_inflight": m, "ledgers": led, "wall_s": wall, "it_per_s": js[0]["T"] / wall,
                    "speedup_median": statistics.median(sp) if sp else None,
                    "compute_s": statistics.median(j["compute_s"] for j in js),
                    "wall_over_compute": statistics.median(j["wall_over_compute"] for j in js),
                    "rtt_median_ms": statistics.median(j["rtt_median_ms"] for j in js),
                    "compute_per_answer_ms": statistics.median(j["compute_per_answer_ms"]
                                                               for j in js),
                    "staleness_mean": statistics.median(j["staleness_mean"] for j in js),
                    "psi": [j["psi"] for j in js], "sim_psi": psim,
                    "psi_mean": statistics.mean(j["psi"] for j in js),
                    "sim_psi_mean": statistics.mean(psim),
                    "sim_staleness": sim["staleness_mean"],
                    "sim_ms_per_it": 1e3 * sim["per_iteration_s"]}
            cell["psi_in_sim_range"] = all(min(sim["psi"]) <= v <= max(sim["psi"])
                                           for v in cell["psi"])
            ts = [s for s in res.get("sims_timed", []) if s["owners"] == n
                  and s["max_inflight"] == m]
            if ts and not shm:
                t = ts[0]
                cell["timed"] = {"answer_time_ms": 1e3 * t["timed"]["answer_time"],
                                 "staleness": t["staleness_mean"], "psi": t["psi"],
                                 "seconds_mean": t["timed"]["seconds_mean"]}
                cell["psi_in_timed_range"] = all(min(t["psi"]) <= v <= max(t["psi"])
                                                 for v in cell["psi"])
            out.append(cell)
            lines.append("| %d | %d%s | %.3f | %.0f | %s | %.3f | %.3f | %.2f | %.2f | %s | %.3g–%.3g (%.3g) | %.2f |"
                         % (n, m, " (ledgers on tmpfs)" if shm else "", wall, cell["it_per_s"],
                            "%.2f×" % cell["speedup_median"] if cell["speedup_median"] else "—",
                            cell["compute_s"], cell["wall_over_compute"], cell["rtt_median_ms"],
                            cell["staleness_mean"], ", ".join("%.3g" % v for v in cell["psi"]),
                            min(psim), max(psim), cell["sim_psi_mean"], cell["sim_ms_per_it"]))
    timed = [c for c in out if "timed" in c]
    if timed:
        lines += ["", "The timed simulator (`--answer-time` = the jobs' median round trip) "
                  "against the jobs:", "",
                  "| owners | max-inflight | answer time ms | staleness: jobs, sim "
                  "| psi: jobs | sim psi over seeds: min–max (mean) | wall s: jobs, sim |",
                  "|---:|---:|---:|---|---|---|---|"]
        for c in timed:
            t = c["timed"]
            lines.append("| %d | %d | %.3f | %.2f, %.2f | %s | %.3g–%.3g (%.3g) | %.3f, %.3f |"
                         % (c["owners"], c["max_inflight"], t["answer_time_ms"],
                            c["staleness_mean"], t["staleness"],
                            ", ".join("%.3g" % v for v in c["psi"]), min(t["psi"]),
                            max(t["psi"]), statistics.mean(t["psi"]), c["wall_s"],
                            t["seconds_mean"]))
    return lines, out


def targets(cells):
    lines = []
    s = [c for c in cells if c["owners"] == min(x["owners"] for x in cells)
         and c["ledgers"] == "disk"]
    strict = [c for c in s if c["max_inflight"] == 1][0]
    r = strict["wall_over_compute"]
    lines.append("target strict wall/compute <= 1.1: %.3f %s" % (r, "MET" if r <= 1.1 else "MISSED"))
    lines.append("target sim per iteration <= one owner answer: sim %.3f ms, owner compute %.3f ms, "
                 "owner round trip %.3f ms: %s (round trip), %s (compute)"
                 % (strict["sim_ms_per_it"], strict["compute_per_answer_ms"],
                    strict["rtt_median_ms"],
                    "MET" if strict["sim_ms_per_it"] <= strict["rtt_median_ms"] else "MISSED",
                    "MET" if strict["sim_ms_per_it"] <= strict["compute_per_answer_ms"]
                    else "MISSED"))
    m3 = [c for c in s if c["max_inflight"] == 3]
    if m3:
        c = m3[0]
        lines.append("target --max-inflight 3 speed-up >= 1.6: %.2f %s; psi %s in the sim's range "
                     "%.3g-%.3g (queue never empty): %s"
                     % (c["speedup_median"], "MET" if c["speedup_median"] >= 1.6 else "MISSED",
                        ", ".join("%.3g" % v for v in c["psi"]), min(c["sim_psi"]),
                        max(c["sim_psi"]), "MET" if c["psi_in_sim_range"] else "MISSED"))
        if "timed" in c:
            t = c["timed"]
            lines.append("target psi at --max-inflight 3 in the timed sim's range %.3g-%.3g "
                         "(staleness %.2f, jobs %.2f): %s"
                         % (min(t["psi"]), max(t["psi"]), t["staleness"], c["staleness_mean"],
                            "MET" if c["psi_in_timed_range"] else "MISSED"))
    return lines


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--learnerd", required=True)
    ap.add_argument("--ownerd", required=True)
    ap.add_argument("--dpasync", required=True)
    ap.add_argument("--owners", type=int, default=3)
    ap.add_argument("--inflight", default="1,2,3,4")
    ap.add_argument("--big", default="",
                    help="a second group OWNERS:M,M,... (e.g. 8:1,2,4,8); empty: none")
    ap.add_argument("--rows", type=int, default=250000)
    ap.add_argument("--features", type=int, default=10)
    ap.add_argument("--T", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sim-repeats", type=int, default=20)
    ap.add_argument("--ledger-dir", default=None,
                    help="where the ledgers go (default: a directory under the build or /var/tmp)")
    ap.add_argument("--diag-shm", action="store_true",
                    help="also strict jobs with the ledgers on tmpfs (diagnostic: no fsync cost)")
    ap.add_argument("--shm-dir", default="/dev/shm")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args(argv)
    a.inflight = [int(x) for x in a.inflight.split(",")]
    if a.big:
        n, ms = a.big.split(":")
        a.big = (int(n), [int(x) for x in ms.split(",")])
    return a


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    a.work = tempfile.mkdtemp(prefix="dp-bench-stale-", dir="/var/tmp")
    bl.TMPDIRS.append(a.work)
    a.ledger_root = a.ledger_dir or os.path.join(a.work, "ledgers")
    os.makedirs(a.ledger_root, exist_ok=True)
    a.shm_root = tempfile.mkdtemp(prefix="dp-bench-stale-", dir=a.shm_dir)
    bl.TMPDIRS.append(a.shm_root)
    bl.trap_signals()
    log("bench_staleness: %s, %d cores, load %.2f %.2f %.2f, ledgers on %s (%s)"
        % (bl.cpu_model(), os.cpu_count(), *os.getloadavg(), a.ledger_root,
           bl.fs_type(a.ledger_root)))
    rc = 0
    try:
        res = Bench(a).run()
        lines, cells = summarise(res)
        log("")
        for line in lines + [""] + targets(cells):
            log(line)
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"results": res, "cells": cells}, f, indent=1)
    except (RuntimeError, subprocess.CalledProcessError, subprocess.TimeoutExpired,
            OSError, ValueError, KeyError) as e:
        log("bench_staleness: FAILED: %s" % e)
        rc = 1
    except bl.Interrupted as e:
        log("bench_staleness: interrupted (%s)" % e)
        rc = 130
    finally:
        bl.finish(a.keep, a.work)
    return rc


if __name__ == "__main__":
    sys.exit(main())
