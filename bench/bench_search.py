#!/usr/bin/python3
"""Hyperparameter search: kmserve's fit with "search" (over HTTP, as a user
calls it) against scikit-learn's GridSearchCV and LIBSVM's grid procedure,
same data, same machine, same run.

1. KRR, rbf, synthetic n = 5000, d = 20 (gamma = 1/d): kmserve's closed-form
   leave-one-out over 20 alphas, against one plain kmserve fit of the same
   data (the issue's target: at most 1.5x), and kmserve's and scikit-learn's
   GridSearchCV(KernelRidge, the 20 alphas, cv=5, n_jobs=1) 5-fold searches
   (target: at most 0.05x), each with the alpha it chose and its score.
2. SVC on satellite (every feature scaled to [-1, 1] as svm-scale does), a
   5 x 5 grid of C and gamma, 5 folds: kmserve against GridSearchCV(SVC)
   (StratifiedKFold(5)) and against `svm-train -v 5` per point (LIBSVM's
   grid.py procedure, run in sequence); target at most 0.25x the faster,
   with the chosen point and its cross-validation accuracy. Every side
   gets a 700 MB kernel cache (LIBSVM caches floats, kmserve doubles).
3. In process (build/bench_search, libkm without HTTP): svc on satellite
   with the points of one gamma sharing one Gram of all rows against the
   same fits one by one.
4. KRR leave-one-out over 20 alphas (issue 28), in process, rbf, n = 5000,
   d = 20: build/bench_search times one km_fit and the LOO search
   interleaved (medians of --reps), the phases (dsytrd, dorgtr, dpotrf,
   dsyevd) and an eigendecomposition closed form written in the bench (the
   method before issue 28) whose LOO scores ours must match to 1e-8
   relative; scikit-learn's equivalent, RidgeCV(gcv_mode="eigen",
   fit_intercept=False) with its Gram step given the same precomputed rbf
   kernel (its exact LOO: scipy's eigh of K, dsyevr), in the same run.
   Targets: LOO at most 6x one fit, exact to 1e-8.
Each side runs in its own process; times are wall clock of the whole
search (kmserve: POST to answer). Medians of --reps for the plain fit.
Both sides run the OpenBLAS kernels kmserve runs (bench/blas_env.py).
Takes about 15 minutes in all; --only loo about 3.
Usage: /usr/bin/python3 bench/bench_search.py --bin build [--only krr|svc|loo]
"""
import blas_env  # noqa: E402  (first: before numpy)
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

from daemon import free_port, stop, wait_ready

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from kmdata import data_file  # noqa: E402

ALPHAS = [float(a) for a in np.logspace(-4, 2, 20)]
LOO_TARGET = 6.0  # issue 28: LOO over 20 alphas at most this many fits
LOO_EXACT = 1e-8  # and its scores within this of the exact closed form
C_GRID = [0.5, 2.0, 8.0, 32.0, 128.0]
G_GRID = [2.0 ** -7, 2.0 ** -5, 2.0 ** -3, 2.0 ** -1, 2.0]
CACHE_MB = 700  # kernel cache of every side (svm-train -m, cache_size, cache_mb)

SKLEARN_KRR = r"""
import json, sys, time
import numpy as np
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV, KFold
X = np.fromfile(sys.argv[1]).reshape(-1, int(sys.argv[3])); y = np.fromfile(sys.argv[2])
alphas = json.loads(sys.argv[4]); gamma = float(sys.argv[5])
t0 = time.perf_counter()
gs = GridSearchCV(KernelRidge(kernel="rbf", gamma=gamma), {"alpha": alphas},
                  cv=KFold(5), scoring="r2", n_jobs=1).fit(X, y)
print(json.dumps({"seconds": time.perf_counter() - t0, "alpha": gs.best_params_["alpha"],
                  "score": gs.best_score_}))
"""

SKLEARN_SVC = r"""
import json, sys, time
import numpy as np
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.svm import SVC
X = np.fromfile(sys.argv[1]).reshape(-1, int(sys.argv[3]))
y = np.array(json.loads(open(sys.argv[2]).read()))
grid = json.loads(sys.argv[4]); CACHE_MB = float(sys.argv[5])
t0 = time.perf_counter()
gs = GridSearchCV(SVC(kernel="rbf", cache_size=CACHE_MB), grid, cv=StratifiedKFold(5), scoring="accuracy",
                  n_jobs=1).fit(X, y)
print(json.dumps({"seconds": time.perf_counter() - t0, "C": gs.best_params_["C"],
                  "gamma": gs.best_params_["gamma"], "score": gs.best_score_}))
"""

SKLEARN_LOO = r"""
import json, sys, time
import numpy as np
from sklearn.linear_model import RidgeCV
from sklearn.linear_model import _ridge
n, d = int(sys.argv[3]), int(sys.argv[4])
X = np.fromfile(sys.argv[1]).reshape(n, d); y = np.fromfile(sys.argv[2])
alphas = json.loads(sys.argv[5]); gamma = 1.0 / d
sq = (X * X).sum(1)
K = np.exp(-gamma * np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0))
# RidgeCV's eigen mode on features F forms K = F F^T, then eigh(K): given
# the precomputed kernel, the Gram step returns it, the rest is its own.
_ridge._RidgeGCV._compute_gram = lambda self, F, sqrt_sw: (F, np.zeros(F.shape[1]))
t0 = time.perf_counter()
r = RidgeCV(alphas=alphas, fit_intercept=False, gcv_mode="eigen",
            store_cv_values=True).fit(K, y)
t = time.perf_counter() - t0
print(json.dumps({"seconds": t, "alpha": r.alpha_,
                  "mse": r.cv_values_.mean(axis=0).tolist()}))
"""


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


class Server:
    def __init__(self, binary):
        self.tmp = tempfile.mkdtemp(prefix="kmbench-search-")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--listen", f"127.0.0.1:{self.port}", "--models-dir",
             os.path.join(self.tmp, "m"), "--access-log", "false", "--max-body-mb", "512",
             "--memory-budget-mb", "16384"], stderr=subprocess.DEVNULL)
        wait_ready(self.port, self.proc)

    def fit(self, name, body):
        data = json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/models/{name}/fit",
                                     data=data, headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req, timeout=3600) as r:
            meta = json.loads(r.read())["model"]
        return time.perf_counter() - t0, meta

    def close(self):
        stop(self.proc)


def krr(server, reps):
    rng = np.random.default_rng(0)
    n, d = 5000, 20
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(n)
    gamma = 1.0 / d
    base = {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": gamma},
            "X": X.tolist(), "y": y.tolist()}
    plain = [server.fit("plain", dict(base, params={"alpha": 1.0}))[0] for _ in range(reps)]
    t_plain = float(np.median(plain))
    t_loo, m_loo = server.fit("loo", dict(base, search={
        "params": {"alpha": ALPHAS}, "cv": "loo", "scoring": "r2"}))
    t_k5, m_k5 = server.fit("k5", dict(base, search={
        "params": {"alpha": ALPHAS}, "cv": 5, "scoring": "r2"}))
    tmp = tempfile.mkdtemp(prefix="kmbench-search-")
    X.tofile(os.path.join(tmp, "X")), y.tofile(os.path.join(tmp, "y"))
    sk = run_json([sys.executable, "-c", SKLEARN_KRR, os.path.join(tmp, "X"),
                   os.path.join(tmp, "y"), str(d), json.dumps(ALPHAS), str(gamma)])
    s_loo, s_k5 = m_loo["search"], m_k5["search"]
    print("KRR rbf n=5000 d=20, 20 alphas")
    print(f"  {'what':44s} {'seconds':>9s} {'alpha':>10s} {'score (r2)':>11s}")
    print(f"  {'kmserve plain fit (median of %d)' % reps:44s} {t_plain:9.2f}")
    print(f"  {'kmserve LOO, closed form':44s} {t_loo:9.2f} "
          f"{s_loo['best_params']['alpha']:10.3g} {s_loo['best_score']:11.5f}")
    print(f"  {'kmserve 5-fold':44s} {t_k5:9.2f} "
          f"{s_k5['best_params']['alpha']:10.3g} {s_k5['best_score']:11.5f}")
    print(f"  {'sklearn GridSearchCV(KernelRidge, cv=5)':44s} {sk['seconds']:9.2f} "
          f"{sk['alpha']:10.3g} {sk['score']:11.5f}")
    print(f"  ratio LOO / plain fit:            {t_loo / t_plain:6.2f}x  (target <= 1.5x)")
    print(f"  ratio LOO / sklearn 5-fold:       {t_loo / sk['seconds']:6.3f}x  (target <= 0.05x)")
    print(f"  ratio kmserve 5-fold / sklearn:   {t_k5 / sk['seconds']:6.3f}x")


def loo(bindir, reps):
    """Issue 28: krr LOO over 20 alphas at n = 5000 against one fit, in
    process, and scikit-learn's RidgeCV on the same kernel."""
    n, d, na = 5000, 20, 20
    alphas = [10.0 ** (-4.0 + 5.0 * i / (na - 1)) for i in range(na)]  # bench_search.c's
    tmp = tempfile.mkdtemp(prefix="kmbench-loo-")
    ours = run_json([os.path.join(bindir, "bench_search"), str(n), str(d), str(na),
                     str(reps), "0", tmp])
    sk = run_json([sys.executable, "-c", SKLEARN_LOO, os.path.join(tmp, "X.bin"),
                   os.path.join(tmp, "y.bin"), str(n), str(d), json.dumps(alphas)])
    fit, t = ours["fit_s"], ours["loo_search_s"]
    ratio = t / fit
    print(f"KRR leave-one-out over {na} alphas (issue 28), rbf n={n} d={d}, in process, "
          f"OPENBLAS_CORETYPE={blas_env.CORE}")
    print(f"  {'what':52s} {'seconds':>9s} {'x fit':>7s}")
    rows = [("kmserve one km_fit (median of %d)" % reps, fit),
            ("kmserve LOO search, %d alphas (median of %d)" % (na, reps), t),
            ("  phase: dsytrd (reduction to tridiagonal)", ours["dsytrd_s"]),
            ("  phase: dorgtr (Q formed)", ours["dorgtr_s"]),
            ("  fit's dpotrf, same Gram", ours["dpotrf_s"]),
            ("eigendecomposition closed form (before; dsyevd)", ours["eigen_loo_s"]),
            ("  of which dsyevd", ours["dsyevd_s"]),
            ("sklearn RidgeCV(gcv_mode='eigen'), precomputed K", sk["seconds"])]
    for what, sec in rows:
        print(f"  {what:52s} {sec:9.2f} {sec / fit:7.2f}")
    mine, ref = np.array(ours["loo_mse"]), np.array(sk["mse"])
    sk_diff = float(np.max(np.abs(mine - ref) / np.abs(ref)))
    print(f"  ratio LOO / one fit: {ratio:.2f}x; LOO / sklearn RidgeCV: "
          f"{t / sk['seconds']:.3f}x; best alpha ours {ours['best_alpha']:g}, "
          f"sklearn {sk['alpha']:g}")
    print(f"  largest relative difference of the LOO MSEs from the eigen closed form: "
          f"{ours['max_rel_diff']:.3g}; from sklearn RidgeCV's: {sk_diff:.3g}")
    if ratio <= LOO_TARGET:
        print(f"  target LOO over {na} alphas <= {LOO_TARGET:g}x one fit: met ({ratio:.2f}x)")
    else:
        red = ours["dsytrd_s"] / fit
        print(f"  target LOO over {na} alphas <= {LOO_TARGET:g}x one fit: MISSED ({ratio:.2f}x: "
              f"the reduction to tridiagonal, dsytrd, alone takes {red:.2f}x one fit "
              f"(half its flops are memory-bound DSYMV) and forming Q, dorgtr, "
              f"{ours['dorgtr_s'] / fit:.2f}x; the per-alpha work is O(n^2))")
    ok = ours["max_rel_diff"] <= LOO_EXACT
    print(f"  target exact to {LOO_EXACT:g} (LOO MSE vs the eigen closed form): "
          + ("met" if ok else f"MISSED ({ours['max_rel_diff']:.3g})"))
    return ours, sk


def libsvm_grid(X, labels, tmp):
    """svm-train -v 5 per point, as LIBSVM's grid.py runs it; the classes
    as integers in the file (svm-train needs numbers)."""
    classes = sorted(set(labels))
    path = os.path.join(tmp, "sat.libsvm")
    with open(path, "w") as f:
        for row, lab in zip(X, labels):
            f.write(str(classes.index(lab) + 1) + " " +
                    " ".join(f"{j + 1}:{v:.17g}" for j, v in enumerate(row) if v != 0) + "\n")
    best = (-1, None, None)
    t0 = time.perf_counter()
    for c in C_GRID:
        for g in G_GRID:
            out = subprocess.run(["svm-train", "-q", "-v", "5", "-c", repr(c), "-g", repr(g),
                                  "-m", str(CACHE_MB), path], check=True, capture_output=True, text=True).stdout
            acc = float(out.strip().split("=")[-1].strip().rstrip("%")) / 100
            if acc > best[0]:
                best = (acc, c, g)
    return time.perf_counter() - t0, best


def svc(server):
    with open(data_file("satellite.csv")) as f:
        rows = list(csv.reader(f))[1:]
    X = np.array([[float(v) for v in r[:-1]] for r in rows])
    labels = [r[-1] for r in rows]
    lo, hi = X.min(axis=0), X.max(axis=0)
    X = 2 * (X - lo) / np.where(hi > lo, hi - lo, 1) - 1
    t_ours, meta = server.fit("sat", {
        "algorithm": "svc", "kernel": {"type": "rbf"}, "X": X.tolist(), "y": labels,
        "params": {"cache_mb": CACHE_MB},
        "search": {"params": {"C": C_GRID, "kernel.gamma": G_GRID}, "cv": 5,
                   "scoring": "accuracy"}})
    s = meta["search"]
    tmp = tempfile.mkdtemp(prefix="kmbench-search-")
    X.tofile(os.path.join(tmp, "X"))
    with open(os.path.join(tmp, "y"), "w") as f:
        json.dump(labels, f)
    sk = run_json([sys.executable, "-c", SKLEARN_SVC, os.path.join(tmp, "X"),
                   os.path.join(tmp, "y"), str(X.shape[1]),
                   json.dumps({"C": C_GRID, "gamma": G_GRID}), str(CACHE_MB)])
    t_lib, (acc, c, g) = libsvm_grid(X, labels, tmp)
    print("SVC rbf on satellite (6435 x 36, scaled to [-1, 1]), 5 x 5 grid of C and gamma, "
          "5 folds")
    print(f"  {'what':34s} {'seconds':>9s} {'C':>6s} {'gamma':>9s} {'accuracy':>9s}")
    bp = s["best_params"]
    print(f"  {'kmserve (stratified 5-fold)':34s} {t_ours:9.2f} {bp['C']:6g} "
          f"{bp['kernel.gamma']:9.4g} {s['best_score']:9.4f}")
    print(f"  {'sklearn GridSearchCV(SVC)':34s} {sk['seconds']:9.2f} {sk['C']:6g} "
          f"{sk['gamma']:9.4g} {sk['score']:9.4f}")
    print(f"  {'LIBSVM svm-train -v 5 per point':34s} {t_lib:9.2f} {c:6g} {g:9.4g} {acc:9.4f}")
    faster = min(sk["seconds"], t_lib)
    print(f"  ratio kmserve / faster reference: {t_ours / faster:6.3f}x  (target <= 0.25x)")


def in_process(bindir):
    exe = os.path.join(bindir, "bench_search")
    sv = run_json([exe, "--svc", "satellite.csv", "6435", str(CACHE_MB)])
    print(f"in process: svc on satellite, 5 x 5 grid, 5 folds, shared Gram, "
          f"{sv['threads']} thread(s), against fits one by one on one")
    print(f"  search {sv['search_s']:.2f} s; one by one {sv['fits_one_by_one_s']:.2f} s "
          f"(ratio {sv['ratio']:.2f}); largest difference of a mean accuracy "
          f"{sv['max_mean_accuracy_diff']:g}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", choices=["krr", "svc", "loo"])
    args = ap.parse_args()
    if args.only == "loo":
        loo(args.bin, args.reps)
        return
    server = Server(os.path.join(args.bin, "kmserve"))
    try:
        if args.only in (None, "krr"):
            krr(server, args.reps)
        if args.only in (None, "svc"):
            svc(server)
    finally:
        server.close()
    if args.only is None:
        in_process(args.bin)
        loo(args.bin, args.reps)


if __name__ == "__main__":
    main()
