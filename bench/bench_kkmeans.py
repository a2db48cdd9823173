#!/usr/bin/python3
"""Kernel k-means: kmserve's kkmeans against R kernlab's kkmeans, side by
side.

    flock /tmp/kmserve-bench.lock /usr/bin/python3 bench/bench_kkmeans.py --bin build

Data: n x 10 rows (default n = 5000) from 8 gaussian blobs that overlap
(centres uniform in [-3, 3]^10, unit variance; seed 1), the rbf kernel
exp(-gamma |x - z|^2) with gamma 0.05 (kernlab's rbfdot sigma is the same
number), k = 8 clusters.

  kmserve   a fresh daemon per fit; the wall clock of POST /fit (its JSON
            body parsed, the n x n Gram matrix, the runs), with n_init 1
            (kernlab does one run) and with the default n_init 10; the
            figure training.seconds is printed beside it.
  kernlab   kkmeans(x, centers = 8, kernel = "rbfdot", kpar =
            list(sigma = 0.05)) in Rscript (Debian's r-cran-kernlab; make
            deps-bench), the data read from a CSV before the clock starts;
            system.time's elapsed seconds of the fit; its own random
            centres (set.seed(1)).
Both sides' quality is measured the same way here, in numpy: the kernel
k-means objective (the sum of squared feature-space distances of the rows
to their cluster's mean, from K) of each side's assignment, and the
adjusted Rand index against the blobs (sklearn). The ratio printed is
kmserve's time over kernlab's. One run of each; the machine is shared, so
times vary by tens of percent from run to run.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.metrics import adjusted_rand_score

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "integration"))
import run  # noqa: E402

D, K, GAMMA = 10, 8, 0.05

R_SCRIPT = """
suppressMessages(library(kernlab))
args <- commandArgs(trailingOnly = TRUE)
x <- as.matrix(read.csv(args[1], header = FALSE))
set.seed(1)
t <- system.time(m <- kkmeans(x, centers = %d, kernel = "rbfdot",
                              kpar = list(sigma = %r)))
cat(sprintf("ELAPSED %%.6f\\n", t[["elapsed"]]))
cat("LABELS", as.integer(m) - 1L, "\\n")
""" % (K, GAMMA)


def data(n):
    rng = np.random.default_rng(1)
    centres = rng.uniform(-3, 3, size=(K, D))
    y = rng.integers(0, K, n)
    return centres[y] + rng.standard_normal((n, D)), y


def objective(X, labels):
    """sum_i |phi(x_i) - mu_{c(i)}|^2 from the rbf Gram matrix."""
    sq = (X * X).sum(axis=1)
    G = np.exp(-GAMMA * np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0))
    total = float(np.trace(G))
    for c in np.unique(labels):
        idx = np.where(labels == c)[0]
        total -= float(G[np.ix_(idx, idx)].sum()) / len(idx)
    return total


def ours(server, X, n_init):
    tmp = tempfile.mkdtemp(prefix="kmserve-bench-kkm-")
    models = os.path.join(tmp, "models")
    os.makedirs(models)
    d = run.Daemon(os.path.abspath(server), models, "--max-body-mb", "64")
    try:
        d.start()
        body = {"algorithm": "kkmeans", "kernel": {"type": "rbf", "gamma": GAMMA},
                "params": {"n_clusters": K, "n_init": n_init, "seed": 1},
                "X": X.tolist()}
        t0 = time.perf_counter()
        r = d.req("POST", "/v1/models/b/fit", body, timeout=3600)
        wall = time.perf_counter() - t0
        meta = r.json()["model"]
        p = d.req("POST", "/v1/models/b/predict", {"X": X.tolist()}, timeout=600)
        labels = np.array(p.json()["predictions"])
    finally:
        d.stop()
        subprocess.run(["rm", "-rf", tmp], check=False)
    return wall, meta["training"]["seconds"], labels


def kernlab(X):
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "x.csv")
        np.savetxt(csv, X, delimiter=",", fmt="%.17g")
        script = os.path.join(tmp, "k.R")
        with open(script, "w") as f:
            f.write(R_SCRIPT)
        out = subprocess.run(["Rscript", script, csv], check=True,
                             capture_output=True, text=True).stdout
    secs = labels = None
    for line in out.splitlines():
        if line.startswith("ELAPSED"):
            secs = float(line.split()[1])
        elif line.startswith("LABELS"):
            labels = np.array([int(v) for v in line.split()[1:]])
    return secs, labels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build", help="the build folder "
                    "(make bench passes it): its kmserve is run")
    ap.add_argument("--n", type=int, default=5000)
    args = ap.parse_args()
    X, truth = data(args.n)
    print(f"n = {args.n}, d = {D}, k = {K}, rbf gamma = {GAMMA}")
    rows = []
    for n_init in (1, 10):
        wall, secs, labels = ours(os.path.join(args.bin, "kmserve"), X,
                                  n_init)
        rows.append((f"kmserve kkmeans, n_init {n_init}", wall, secs, labels))
    secs, labels = kernlab(X)
    rows.append(("kernlab kkmeans", secs, secs, labels))
    ref = rows[-1][1]
    print("| what | fit s | ratio to kernlab | objective | ARI |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for what, wall, inner, labels in rows:
        extra = f" ({inner:.2f} in the fit)" if inner != wall else ""
        print(f"| {what} | {wall:.2f}{extra} | {wall / ref:.3f} | "
              f"{objective(X, labels):.2f} | "
              f"{adjusted_rand_score(truth, labels):.4f} |")
    print(json.dumps({r[0]: r[1] for r in rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
