#!/usr/bin/python3
"""svc and svr updates (warm-started SMO) against full refits, over HTTP,
side by side in one run: adding k = 100 rows to an svc model (binary, and
three classes) and an svr model fitted with params.keep_rows, of n rows
(default 10,000; POST /v1/models/{name}/update), against the fit of all
n + k rows with the same params (POST /v1/models/{name}/fit) on the same
daemon, same data. Target: the update's compute (training.seconds) at
most 0.5x the refit's.

Why 0.5x and not gpr's 0.1x: an SMO update is not a cheaper algorithm,
it is the same solver started near its end. It starts from the kept
gradients (the new rows' computed against the support vectors: k nsv
kernel values) and saves the iterations that move the old rows'
variables from zero to the old optimum, but the iterations left compute
their kernel columns afresh (the model keeps no Gram: 8 n^2 bytes), and
their number grows with how far the new rows move the optimum.

Times are the requests' wall clock (parse, the job, the commit that writes
the model file) and the core's own figure training.seconds, medians of
--repeats updates of the same version (each undone by a rollback, not
timed) and of --refits refits; also SMO's iterations of each (the
figure training.iterations, summed over the pairs) and the largest
difference of decision values (svr: predictions) over 200 test rows,
which the tests bound by 1e-2 (SMO's tol 1e-3 on both sides).

Data: d = 8 standard normal features; svc binary y = [sin(x0) + x1^2/2 +
N(0, 0.3^2) > 0.5], three classes by two such thresholds, svr the same
function + N(0, 0.1^2); rbf gamma 1/d; C 1, tol 1e-3.

Usage: /usr/bin/python3 bench/bench_svm_update.py --bin build [--n 10000]
       [--k 100] [--repeats 3] [--refits 1]
"""
import blas_env  # noqa: F401  (first: the kernels kmserve runs)

import argparse
import os
import shutil
import statistics
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import call, start, stop  # noqa: E402

TARGET = 0.5


def iterations(ans):
    return ans["model"]["training"]["iterations"]


def cases(n, k, d, rng):
    X = rng.standard_normal((n + k, d))
    f = np.sin(X[:, 0]) + X[:, 1] ** 2 / 2
    noisy = f + 0.3 * rng.standard_normal(n + k)
    two = [int(v > 0.5) for v in noisy]
    three = [0 if v < 0.2 else 1 if v < 1.0 else 2 for v in noisy]
    reg = (f + 0.1 * rng.standard_normal(n + k)).tolist()
    Xl = X.tolist()
    return (("svc binary", "svc", Xl, two, "decision_function"),
            ("svc 3 classes", "svc", Xl, three, "decision_function"),
            ("svr", "svr", Xl, reg, None))


def one(port, name, algo, X, y, output, n, T, args, kernel):
    params = {"C": 1, "tol": 1e-3, "keep_rows": True}
    fit = {"algorithm": algo, "kernel": kernel, "params": params}
    call(port, "POST", "/v1/models/u/fit", dict(fit, X=X[:n], y=y[:n]))
    up, up_core, up_it = [], [], 0
    for r in range(args.repeats):
        t, ans = call(port, "POST", "/v1/models/u/update",
                      {"X": X[n:], "y": y[n:]})
        up.append(t)
        up_core.append(ans["model"]["training"]["seconds"])
        up_it = iterations(ans)
        if r + 1 < args.repeats:  # back to the fitted version
            call(port, "POST", "/v1/models/u/rollback",
                 {"version": ans["model"]["version"] - 1})
    body = {"X": T, "output": output} if output else {"X": T}
    _, pu = call(port, "POST", "/v1/models/u/predict", body)
    call(port, "DELETE", "/v1/models/u")
    re, re_core, re_it = [], [], 0
    for _ in range(args.refits):
        t, ans = call(port, "POST", "/v1/models/r/fit", dict(fit, X=X, y=y))
        re.append(t)
        re_core.append(ans["model"]["training"]["seconds"])
        re_it = iterations(ans)
    _, pr = call(port, "POST", "/v1/models/r/predict", body)
    call(port, "DELETE", "/v1/models/r")
    a, b = np.array(pu["predictions"]), np.array(pr["predictions"])
    return (name, statistics.median(up), statistics.median(up_core),
            statistics.median(re), statistics.median(re_core),
            np.sum(up_it), np.sum(re_it), float(np.max(np.abs(a - b))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--refits", type=int, default=1)
    args = ap.parse_args()
    n, k, d = args.n, args.k, 8
    rng = np.random.default_rng(0)
    T = rng.standard_normal((200, d)).tolist()
    kernel = {"type": "rbf", "gamma": 1.0 / d}

    tmp = tempfile.mkdtemp(prefix="kmbench-svm-update-")
    proc, port = start(args.bin, tmp, "--keep-versions", "2",
                       "--access-log", "false")
    rows = []
    try:
        for name, algo, X, y, output in cases(n, k, d, rng):
            rows.append(one(port, name, algo, X, y, output, n, T, args,
                            kernel))
    finally:
        stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"update by k = {k} rows of an n = {n} model (params.keep_rows) "
          f"against the refit of {n + k} rows (d = {d}, rbf, C 1, tol 1e-3); "
          f"wall clock of the request (core's training.seconds); medians of "
          f"{args.repeats} updates and {args.refits} refit(s)")
    print(f"{'model':<14} {'update s':>16} {'refit s':>17} {'ratio':>6} "
          f"{'(core)':>7} {'SMO it. upd/refit':>18} {'max diff':>9}")
    missed = []
    for name, u, uc, r, rc, ui, ri, diff in rows:
        print(f"{name:<14} {u:>7.2f} ({uc:>6.2f}) {r:>7.2f} ({rc:>7.2f}) "
              f"{u / r:>6.3f} {uc / rc:>7.3f} {ui:>9d}/{ri:<8d} {diff:>9.1e}")
        if uc / rc > TARGET:
            missed.append(f"{name} {uc / rc:.3f}x")
    if missed:
        print(f"target the update's compute (training.seconds) <= {TARGET}x "
              "the refit's: MISSED (" + ", ".join(missed) + ": the "
              "iterations left compute their kernel columns afresh)")
    else:
        print(f"target the update's compute (training.seconds) <= {TARGET}x "
              "the refit's: met")


if __name__ == "__main__":
    main()
