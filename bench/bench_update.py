#!/usr/bin/python3
"""Model updates against full refits, over HTTP, side by side in one run:
adding k = 100 rows to an exact gpr model, to a krr model fitted with
params.keep_factor, to a krr nystrom model fitted with it and to a gpr
nystrom model fitted with it and params.variance (their default 1000
centres), all of n = 10,000 rows (POST /v1/models/{name}/update),
against the fit of all n + k rows (POST /v1/models/{name}/fit) on the same
daemon, same data. Target: the update at most 0.1x the refit's time.

Times are the requests' wall clock (parse, the job, the commit that writes
the model file: what a client waits for), medians of --repeats updates of
the same version (each undone by a rollback, not timed) and of one refit
(each costs minutes at this size; --refits for more), and the core's own
figure training.seconds of each (the update's: the block factor, the
solves, the new model). The refit's predictions are compared with the
update's (the largest relative difference over 200 test rows: the
equality the tests check at 1e-9, here at full size; for nystrom the
refit draws other centres, so the difference is that of two Nystrom
approximations, not the update's error, which the tests check against
the same centres).

Data: d = 8 standard normal features, y = sin(x0) + x1^2 / 2 + N(0, 0.1^2),
rbf gamma 1/d; gpr noise 0.1, krr alpha 0.1. The daemon runs with
--keep-versions 2 and its defaults otherwise; each model is deleted before
the next large one is fitted, so at most two n x n factors are held
(about 1.6 GB).

Usage: /usr/bin/python3 bench/bench_update.py --bin build [--n 10000]
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


def same_centres(port, X, y, T, gamma, alpha, got):
    """The largest relative difference of got and the predictions on T of
    the nystrom normal equations (K_nm^T K_nm + alpha K_mm) C = K_nm^T y
    over all rows X, y with the model's centres, solved by numpy."""
    _, c = call(port, "GET", "/v1/models/u/coefficients?limit=100000")
    Z = np.array(c["coefficients"]["centres_"]["values"])

    def gram(A, B):
        d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
        return np.exp(-gamma * np.maximum(d2, 0))
    Knm = gram(X, Z)
    C = np.linalg.solve(Knm.T @ Knm + alpha * gram(Z, Z), Knm.T @ y)
    want = gram(np.array(T), Z) @ C
    a = np.array(got)
    return float(np.max(np.abs(a - want) / np.maximum(np.abs(want), 1.0)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--refits", type=int, default=1)
    args = ap.parse_args()
    n, k, d, nt = args.n, args.k, 8, 200
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n + k, d))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 / 2 + 0.1 * rng.standard_normal(n + k)
    T = rng.standard_normal((nt, d)).tolist()
    Xl, yl = X.tolist(), y.tolist()
    kernel = {"type": "rbf", "gamma": 1.0 / d}
    algos = (("gpr exact", "gpr", {"noise": 0.1}),
             ("krr keep_factor", "krr", {"alpha": 0.1, "keep_factor": True}),
             ("krr nystrom", "krr", {"alpha": 0.1, "keep_factor": True,
                                     "solver": "nystrom"}),
             ("gpr nystrom", "gpr", {"noise": 0.1, "keep_factor": True,
                                     "solver": "nystrom", "variance": True}))

    tmp = tempfile.mkdtemp(prefix="kmbench-update-")
    proc, port = start(args.bin, tmp, "--keep-versions", "2",
                       "--access-log", "false")
    rows = []
    try:
        for name, algo, params in algos:
            fit = {"algorithm": algo, "kernel": kernel, "params": params}
            call(port, "POST", "/v1/models/u/fit", dict(fit, X=Xl[:n], y=yl[:n]))
            up, up_core = [], []
            for r in range(args.repeats):
                t, ans = call(port, "POST", "/v1/models/u/update",
                              {"X": Xl[n:], "y": yl[n:]})
                up.append(t)
                up_core.append(ans["model"]["training"]["seconds"])
                if r + 1 < args.repeats:  # back to the fitted version
                    call(port, "POST", "/v1/models/u/rollback",
                         {"version": ans["model"]["version"] - 1})
            _, pu = call(port, "POST", "/v1/models/u/predict", {"X": T})
            same = None
            if params.get("solver") == "nystrom":
                # gpr's mean is krr's with alpha = noise / signal_variance
                alpha = params.get("alpha", params.get("noise"))
                same = same_centres(port, X, y, T, kernel["gamma"], alpha,
                                    pu["predictions"])
                iters = ans["model"]["training"]
                same = (same, iters.get("iterations"), iters.get("residual"))
            call(port, "DELETE", "/v1/models/u")
            re, re_core = [], []
            for _ in range(args.refits):
                t, ans = call(port, "POST", "/v1/models/r/fit",
                              dict(fit, X=Xl, y=yl))
                re.append(t)
                re_core.append(ans["model"]["training"]["seconds"])
            _, pr = call(port, "POST", "/v1/models/r/predict", {"X": T})
            call(port, "DELETE", "/v1/models/r")
            a, b = np.array(pu["predictions"]), np.array(pr["predictions"])
            diff = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1.0)))
            rows.append((name, statistics.median(up), statistics.median(up_core),
                         statistics.median(re), statistics.median(re_core), diff,
                         same))
    finally:
        stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"update by k = {k} rows of an n = {n} model against the refit of "
          f"{n + k} rows (d = {d}, rbf); wall clock of the request (core's "
          f"training.seconds); medians of {args.repeats} updates and "
          f"{args.refits} refit(s)")
    print(f"{'model':<16} {'update s':>16} {'refit s':>18} {'ratio':>7} "
          f"{'(core)':>7} {'max rel diff':>13}")
    missed = {"request": [], "core": []}
    for name, u, uc, r, rc, diff, same in rows:
        print(f"{name:<16} {u:>7.2f} ({uc:>6.2f}) {r:>8.2f} ({rc:>7.2f}) "
              f"{u / r:>7.3f} {uc / rc:>7.3f} {diff:>13.1e}")
        for what, ratio in (("request", u / r), ("core", uc / rc)):
            if ratio > 0.1:
                missed[what].append(f"{name} {ratio:.3f}x")
    for name, u, uc, r, rc, diff, same in rows:
        if same:
            print(f"{name}: the refit drew other centres (max rel diff above: "
                  f"two Nystrom approximations); the update against the "
                  f"normal equations of all {n + k} rows with its own centres "
                  f"solved by numpy: max rel diff {same[0]:.1e} (the "
                  f"update's CG: {same[1]} iterations, residual "
                  f"{same[2]:.1e})")
    why = {"request": "both requests also parse X and write the n x n "
                      "factor to the model file, fsync'd, which the update "
                      "does not make cheaper",
           "core": "the exact update copies the old factor into the new "
                   "model and makes three passes over it, memory-bound"}
    if any("nystrom" in r[0] and r[2] / r[4] > 0.1 for r in rows):
        why["core"] += ("; the nystrom update refactors the m x m "
                        "preconditioner (O(m^3)) as the fit does")
    for what, label in (("core", "the update's compute (training.seconds)"),
                        ("request", "the request's wall clock")):
        if missed[what]:
            print(f"target {label} <= 0.1x the refit's: MISSED ("
                  + ", ".join(missed[what]) + f": {why[what]})")
        else:
            print(f"target {label} <= 0.1x the refit's: met")


if __name__ == "__main__":
    main()
