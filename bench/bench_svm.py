#!/usr/bin/python3
"""SVM benchmark: kmserve's core (bench_svm) against LIBSVM's svm-train /
svm-predict and scikit-learn's SVC, in one run, on the same splits.

    flock /tmp/kmserve-bench.lock /usr/bin/python3 bench/bench_svm.py --bin build

Every set is scaled to [-1, 1] by the min/max of its training rows (as
tests/testdata.h); labels are indices into the sorted distinct labels.
All three use an rbf kernel, the same C and gamma, tol 1e-3, shrinking,
a 200 MB kernel cache. Times are medians of --repeats runs: training
(for LIBSVM: the svm-train process, which includes reading its text
file), prediction of the test rows (svm-predict likewise), accuracy on
the test rows. Ratios are ours / theirs: below 1 is faster.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.svm import SVC

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from kmdata import DIR as DATA, data_file  # noqa: E402  ($KM_DATA or data/)

# name, file, first rows train, last rows test, C, gamma, repeats
SETS = [
    ("letter", "letter.csv", 15000, 5000, 10.0, 1.0, 3),
    ("satellite", "satellite.csv", 4435, 2000, 10.0, 0.5, 3),
    ("shuttle", "shuttle.csv", 43500, 14500, 10.0, 1.0, 1),
]


def load(name, n_train):
    raw = np.genfromtxt(data_file(name), delimiter=",", skip_header=1,
                        dtype=str, comments=None)
    X = raw[:, :-1].astype(float)
    lo, hi = X[:n_train].min(0), X[:n_train].max(0)
    ok = hi > lo
    Xs = np.zeros_like(X)
    Xs[:, ok] = 2.0 * (X[:, ok] - lo[ok]) / (hi[ok] - lo[ok]) - 1.0
    classes = sorted(set(raw[:n_train, -1]))
    index = {c: i for i, c in enumerate(classes)}
    return Xs, np.array([index[v] for v in raw[:, -1]])


def write_libsvm(path, X, y):
    with open(path, "w") as f:
        for xi, yi in zip(X, y):
            feats = " ".join(f"{j + 1}:{v:.17g}" for j, v in enumerate(xi) if v != 0)
            f.write(f"{yi} {feats}\n")


def timed(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def run_set(binary, tmp, name, file, n_train, n_test, C, gamma, repeats):
    X, y = load(file, n_train)
    Xtr, ytr, Xte, yte = X[:n_train], y[:n_train], X[-n_test:], y[-n_test:]
    rows = []

    env = dict(os.environ, KM_DATA=DATA)
    out = subprocess.run([os.path.join(binary, "bench_svm"), file, str(n_train),
                          str(n_test), repr(C), repr(gamma), str(repeats)],
                         check=True, capture_output=True, text=True, env=env)
    ours = json.loads(out.stdout)
    rows.append(("kmserve core", ours["fit_s"], ours["predict_s"],
                 ours["accuracy"], ours["n_sv"]))

    tr, te = os.path.join(tmp, "train"), os.path.join(tmp, "test")
    model, pred = os.path.join(tmp, "model"), os.path.join(tmp, "pred")
    write_libsvm(tr, Xtr, ytr)
    write_libsvm(te, Xte, yte)
    fit_s, _ = timed(lambda: subprocess.run(
        ["svm-train", "-s", "0", "-t", "2", "-c", repr(C), "-g", repr(gamma),
         "-e", "0.001", "-h", "1", "-m", "200", "-q", tr, model], check=True), repeats)
    pred_s, _ = timed(lambda: subprocess.run(
        ["svm-predict", "-q", te, model, pred], check=True, capture_output=True), repeats)
    lib_pred = np.loadtxt(pred)
    with open(model) as f:
        nsv = next(int(l.split()[1]) for l in f if l.startswith("total_sv"))
    rows.append(("LIBSVM 3.24", fit_s, pred_s, 100.0 * np.mean(lib_pred == yte), nsv))

    clf = SVC(C=C, gamma=gamma, tol=1e-3, cache_size=200, shrinking=True)
    fit_s, _ = timed(lambda: clf.fit(Xtr, ytr), repeats)
    pred_s, sk_pred = timed(lambda: clf.predict(Xte), repeats)
    rows.append(("scikit-learn SVC", fit_s, pred_s, 100.0 * np.mean(sk_pred == yte),
                 int(clf.n_support_.sum())))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build")
    ap.add_argument("--only", help="comma-separated set names")
    args = ap.parse_args()
    sets = [s for s in SETS if not args.only or s[0] in args.only.split(",")]
    print("| set (train/test, C, gamma) | implementation | train s | predict s "
          "| accuracy % | SVs | train ratio | predict ratio |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for name, file, n_train, n_test, C, gamma, reps in sets:
            rows = run_set(args.bin, tmp, name, file, n_train, n_test, C, gamma, reps)
            ours = rows[0]
            label = f"{name} ({n_train}/{n_test}, C={C:g}, gamma={gamma:g})"
            for impl, fit_s, pred_s, acc, nsv in rows:
                ratio = ("" if impl == ours[0] else
                         f"{ours[1] / fit_s:.2f}")
                pratio = ("" if impl == ours[0] else
                          f"{ours[2] / pred_s:.2f}")
                print(f"| {label} | {impl} | {fit_s:.3f} | {pred_s:.3f} | "
                      f"{acc:.2f} | {nsv} | {ratio} | {pratio} |", flush=True)
                label = ""
    print(f"\n(repeats: median of {', '.join(f'{s[0]} {s[6]}' for s in sets)}; "
          "ratios are kmserve core / that row)", file=sys.stderr)


if __name__ == "__main__":
    main()
