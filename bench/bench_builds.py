#!/usr/bin/python3
"""Two builds of kmserve's core side by side: the same benchmarks as
bench_krr.py, bench_svm.py and bench_kpca.py (our side only), run by the
build before a change and the build after it, in turn (before, after,
before, after, ...), so the ratio after/before is taken on the same
machine in the same minute. For a refactoring that must not cost speed.

Usage, from the project root (build the old commit in a worktree first):
    git worktree add /tmp/before OLD && make -C /tmp/before all \\
        build/bench_krr build/bench_svm build/bench_kpca
    make all build/bench_krr build/bench_svm build/bench_kpca
    /usr/bin/python3 bench/bench_builds.py --before /tmp/before/build --after build

Prints, per benchmark and figure, the median of each build over --rounds
rounds (each round runs each binary once, itself taking the median of its
own repeats) and the ratio after/before (below 1: the change is faster).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from kmdata import DIR as DATA, data_file  # noqa: E402  ($KM_DATA or data/)


def run_json(cmd):
    # bench_svm reads its CSV by name from $KM_DATA (tests/testdata.h)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=dict(os.environ, KM_DATA=DATA)).stdout
    return json.loads(out.strip().splitlines()[-1])


def cases(tmp):
    """(label, figures, argv after the binary's path, binary name)."""
    rng = np.random.default_rng(0)
    out = []
    d, nt = 20, 1000
    for n in (2000, 5000):
        X = rng.standard_normal((n, d))
        y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)
        T = rng.standard_normal((nt, d))
        paths = [os.path.join(tmp, f"krr{n}_{f}") for f in ("X.bin", "y.bin", "T.bin")]
        for p, a in zip(paths, (X, y, T)):
            a.astype("<f8").tofile(p)
        out.append((f"krr rbf n={n}", ("fit", "predict"), "bench_krr",
                    [*paths, str(n), str(d), str(nt), repr(1.0 / d), "1.0", "3"]))
    out.append(("svc rbf satellite 4435/2000", ("fit_s", "predict_s"), "bench_svm",
                [os.path.basename(data_file("satellite.csv")), "4435", "2000", "10", "0.5", "3"]))
    out.append(("svc rbf letter 15000/5000", ("fit_s", "predict_s"), "bench_svm",
                [os.path.basename(data_file("letter.csv")), "15000", "5000", "10", "1.0", "1"]))
    n, np_, d = 3000, 1000, 20
    X = rng.standard_normal((n, d))
    T = rng.standard_normal((np_, d))
    xp, tp = os.path.join(tmp, "kpca_X.bin"), os.path.join(tmp, "kpca_T.bin")
    X.astype("<f8").tofile(xp)
    T.astype("<f8").tofile(tp)
    for solver in ("iterative", "dense"):
        out.append((f"kpca rbf n={n} k=10 {solver}", ("fit", "project"), "bench_kpca",
                    [xp, str(n), tp, str(np_), str(d), "10", solver, "3"]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="build folder of the old commit")
    ap.add_argument("--after", default="build", help="build folder of the new commit")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kmbench-builds-")
    print(f"before: {args.before}  after: {args.after}  rounds: {args.rounds} "
          "(each a median of its own repeats); times in seconds")
    print(f"{'benchmark':<32} {'figure':<10} {'before':>9} {'after':>9} {'after/before':>12}")
    try:
        for label, figs, binary, argv in cases(tmp):
            got = {"before": [], "after": []}
            for _ in range(args.rounds):
                for side in ("before", "after"):
                    folder = getattr(args, side)
                    got[side].append(run_json([os.path.join(folder, binary), *argv]))
            for fig in figs:
                b = statistics.median(r[fig] for r in got["before"])
                a = statistics.median(r[fig] for r in got["after"])
                print(f"{label:<32} {fig:<10} {b:>9.4f} {a:>9.4f} {a / b:>12.2f}", flush=True)
    finally:
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
