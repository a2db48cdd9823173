#!/usr/bin/python3
"""The serving cost of the drift reservoir (issue 29): single-row predict
throughput of kmserve with --drift true (each predict's row goes into the
model's reservoir: a lock, a lookup and a draw; docs/api.md, "Drift")
against the same build with --drift false, on bench_serving.py's rbf KRR
model (1000 training rows, 16 features) and load (wrk on loopback,
keep-alive, one row a request, 4 HTTP threads, the access log as
--access-log says).

Three servers run at once on their own ports: reservoir on, off, and a
second one off (the control: its ratio to off is the noise of the
comparison on this machine, an A/A test); each point is --reps rounds in
which the three run back to back (the order rotating), so a round's
ratios compare the same machine state; the table shows median throughputs
and the median of the rounds' ratios, and the server's CPU time per
request (user + system over the run, /proc; steadier than throughput on a
shared machine, whose other load moves both). The reservoir is full (1000 rows)
before timing starts, so the steady state (Algorithm R's draws) is what
is measured, not its filling.

Target: with the reservoir on, single-row throughput at least 97% of off
(under 3% loss) at each connection count; printed as "target ...: met" or
"target ...: MISSED (why)".

Takes about 3 minutes with the defaults. Take the benchmarks' lock:
    flock /tmp/kmserve-bench.lock /usr/bin/python3 bench/bench_drift.py --bin build
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import blas_env  # noqa: F401,E402  (first: before numpy)

from bench_serving import LUA, make_data, median, post, wrk  # noqa: E402
from daemon import free_port, stop, wait_ready  # noqa: E402

TARGET = 0.97


def ticks(pid):
    """The process's CPU time so far (user + system), in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def timed(port, pid, script, conns, duration):
    """wrk's requests/s, and the server's CPU seconds per request."""
    t0 = ticks(pid)
    rps, _, _, n = wrk(port, "/v1/models/krr/predict", script, conns,
                       duration)
    return rps, (ticks(pid) - t0) / os.sysconf("SC_CLK_TCK") / n


def start(binary, tmp, name, drift, access_log):
    port = free_port()
    proc = subprocess.Popen(
        [os.path.join(binary, "kmserve"), "--listen", f"127.0.0.1:{port}",
         "--models-dir", os.path.join(tmp, name), "--access-log", access_log,
         "--drift", drift, "--http-threads", "4"],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(tmp, name + ".log"), "w"))
    wait_ready(port, proc)
    return port, proc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")
    ap.add_argument("--duration", type=int, default=3)
    ap.add_argument("--conns", default="1,8")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--access-log", default="false",
                    help="kmserve's --access-log (false: less noise)")
    args = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("bench_drift: wrk is missing (make deps-bench installs it)")
    conns = [int(c) for c in args.conns.split(",")]
    tmp = tempfile.mkdtemp(prefix="kmbench-drift-")
    data = make_data()
    row = [round(float(v), 6) for v in data["T"][0]]
    script = os.path.join(tmp, "post.lua")
    with open(script, "w") as f:
        f.write(LUA % json.dumps({"X": [row]}))
    fit = {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": data["krr_gamma"]},
           "params": {"alpha": data["krr_alpha"]}, "X": data["krr_X"].tolist(),
           "y": data["krr_y"].tolist()}
    procs = []
    try:
        servers, pids = {}, {}
        for key, drift in (("on", "true"), ("off", "false"),
                           ("control", "false")):
            port, proc = start(args.bin, tmp, key, drift, args.access_log)
            procs.append(proc)
            pids[key] = proc.pid
            st, r = post(port, "/v1/models/krr/fit", fit)
            assert st == 201, r
            # fill the reservoir: 1000 rows (the default size), then 200 more
            st, r = post(port, "/v1/models/krr/predict",
                         {"X": data["T"][:1200].tolist()})
            assert st == 200, r
            servers[key] = port
        # the reservoir is on and full in one, absent in the other
        on = post(servers["on"], "/v1/models/krr/drift", {})[1]
        off = post(servers["off"], "/v1/models/krr/drift", {})[1]
        assert post(servers["control"], "/v1/models/krr/drift", {})[1].get(
            "collect") is False
        assert on.get("rows") == 1000 and on.get("collect") is True, on
        assert off.get("collect") is False, off
        print(f"krr 1000 x 16, one row a request; reservoir on: {on['rows']} "
              f"rows held, {on['seen']} seen", flush=True)
        for key in servers:  # warm-up
            wrk(servers[key], "/v1/models/krr/predict", script, conns[-1], 1)
        rows = []
        for c in conns:
            runs = {"on": [], "off": [], "control": []}
            cpu = {"on": [], "off": [], "control": []}
            ratios, cpu_ratios, noise = [], [], []
            keys = ("on", "off", "control")
            for rep in range(args.reps):
                order = keys[rep % 3:] + keys[:rep % 3]
                got = {}
                for key in order:
                    got[key] = timed(servers[key], pids[key], script, c,
                                     args.duration)
                    runs[key].append(got[key][0])
                    cpu[key].append(got[key][1])
                ratios.append(got["on"][0] / got["off"][0])
                cpu_ratios.append(got["on"][1] / got["off"][1])
                noise.append(got["control"][0] / got["off"][0])
            rows.append((c, median(runs["on"]), median(runs["off"]),
                         median(ratios), median(cpu["on"]), median(cpu["off"]),
                         median(cpu_ratios), median(noise)))
        print()
        print("| connections | reservoir on (req/s) | off (req/s) | on / off (median of rounds) "
              "| control / off | server CPU per request, on | off | on / off |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for c, a, b, r, ca, cb, cr, nz in rows:
            print(f"| {c} | {a:.0f} | {b:.0f} | {r:.3f} | {nz:.3f} | {ca * 1e6:.1f} µs "
                  f"| {cb * 1e6:.1f} µs | {cr:.3f} |")
        print()
        for c, a, b, r, ca, cb, cr, nz in rows:
            verdict = "met" if r >= TARGET else (
                f"MISSED (on/off {r:.3f} < {TARGET}; the control's "
                f"off/off is {nz:.3f} on this machine now)")
            print(f"target reservoir overhead at {c} connections < 3% "
                  f"(on/off >= {TARGET}): {verdict}")
    finally:
        for p in procs:
            stop(p)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
