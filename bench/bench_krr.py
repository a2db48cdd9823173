#!/usr/bin/python3
"""KRR benchmark: libkm against scikit-learn's KernelRidge, same data, same
machine, same run; then the HTTP fit at n = 5000 against the in-process fit.

Each side runs in its own process, so peak RSS is its own. rbf kernel,
d = 20, gamma = 1/d, alpha = 1, 1000 prediction rows; medians of --reps.
Usage: /usr/bin/python3 bench/bench_krr.py --bin build [--sizes 2000,5000,10000]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

from daemon import free_port, stop, wait_ready

SKLEARN_SIDE = r"""
import json, resource, sys, time
import numpy as np
from sklearn.kernel_ridge import KernelRidge
X = np.fromfile(sys.argv[1]).reshape(-1, int(sys.argv[4]))
y = np.fromfile(sys.argv[2])
T = np.fromfile(sys.argv[3]).reshape(-1, int(sys.argv[4]))
gamma, alpha, reps = float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
fit, pred = [], []
for _ in range(reps):
    t0 = time.perf_counter()
    m = KernelRidge(alpha=alpha, kernel="rbf", gamma=gamma).fit(X, y)
    fit.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    p = m.predict(T)
    pred.append(time.perf_counter() - t0)
    del m
print(json.dumps({"fit": float(np.median(fit)), "predict": float(np.median(pred)),
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                  "checksum": float(p.sum())}))
"""


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def http_fit(binary, X, y, gamma):
    """Wall time of POST /fit (JSON encode excluded) against a real daemon."""
    tmp = tempfile.mkdtemp(prefix="kmbench-")
    port = free_port()
    proc = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--models-dir",
                             os.path.join(tmp, "m"), "--access-log", "false",
                             "--max-body-mb", "512"], stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, proc)
        body = json.dumps({"algorithm": "krr", "kernel": {"type": "rbf", "gamma": gamma},
                           "params": {"alpha": 1.0}, "X": X.tolist(),
                           "y": y.tolist()}).encode()
        times, core = [], []
        for _ in range(3):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/models/b/fit",
                                         data=body, headers={"Content-Type": "application/json"})
            t0 = time.perf_counter()
            with urllib.request.urlopen(req, timeout=600) as r:
                meta = json.loads(r.read())
            times.append(time.perf_counter() - t0)
            core.append(meta["model"]["training"]["seconds"])
        return float(np.median(times)), float(np.median(core)), len(body)
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")
    ap.add_argument("--sizes", default="2000,5000,10000")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    d, nt = 20, 1000
    gamma = 1.0 / d
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp(prefix="kmbench-")
    print(f"KRR rbf d={d} gamma={gamma} alpha=1 predict {nt} rows; medians of {args.reps}")
    print(f"{'n':>6} {'fit ours':>9} {'fit skl':>9} {'ratio':>6} {'pred ours':>10} "
          f"{'pred skl':>9} {'ratio':>6} {'MiB ours':>9} {'MiB skl':>8} {'ratio':>6} {'agree':>8}")
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        X = rng.standard_normal((n, d))
        y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)
        T = rng.standard_normal((nt, d))
        paths = [os.path.join(tmp, f) for f in ("X.bin", "y.bin", "T.bin")]
        for p, a in zip(paths, (X, y, T)):
            a.astype("<f8").tofile(p)
        ours = run_json([os.path.join(args.bin, "bench_krr"), *paths, str(n), str(d),
                         str(nt), repr(gamma), "1.0", str(args.reps)])
        skl = run_json([sys.executable, "-c", SKLEARN_SIDE, *paths, str(d), repr(gamma),
                        "1.0", str(args.reps)])
        agree = abs(ours["checksum"] - skl["checksum"]) / max(abs(skl["checksum"]), 1e-12)
        row = (n, ours["fit"], skl["fit"], ours["fit"] / skl["fit"], ours["predict"],
               skl["predict"], ours["predict"] / skl["predict"], ours["peak_mib"],
               skl["peak_mib"], ours["peak_mib"] / skl["peak_mib"], agree)
        rows.append(row)
        print(f"{row[0]:>6} {row[1]:>8.3f}s {row[2]:>8.3f}s {row[3]:>6.2f} {row[4]:>9.4f}s "
              f"{row[5]:>8.4f}s {row[6]:>6.2f} {row[7]:>9.0f} {row[8]:>8.0f} {row[9]:>6.2f} "
              f"{row[10]:>8.1e}", flush=True)
    n = 5000
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0])
    wall, core, size = http_fit(os.path.join(args.bin, "kmserve"), X, y, gamma)
    print(f"HTTP fit n={n}: {wall:.3f}s end to end for a {size / 1e6:.1f} MB body, "
          f"{core:.3f}s of it in the solver: transport + JSON {wall - core:.3f}s "
          f"({(wall - core) / wall * 100:.0f}%)")


if __name__ == "__main__":
    main()
