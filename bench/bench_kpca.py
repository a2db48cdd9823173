#!/usr/bin/python3
"""Kernel PCA: libkm against scikit-learn's KernelPCA, side by side.

    flock /tmp/kmserve-bench.lock /usr/bin/python3 bench/bench_kpca.py --bin build

For each n in --sizes: n x 20 training rows and 1000 rows to project, drawn
once (seed 1) from a Gaussian with feature scales 0.85^j (a spectrum that
decays, as real data's do), written as raw doubles that both sides read.
The kernel is rbf with the default gamma (1/20), n_components = 10.

Each side runs in its own process, so its peak RSS is its own:
  ours      build/bench_kpca (the solver libkm picks: auto)
  arpack    KernelPCA(eigen_solver="arpack", random_state=0)
  dense     KernelPCA(eigen_solver="dense")
Times are medians of --repeats fits (dense at the largest n: --dense-repeats)
and of the projection of the 1000 rows. The driver also checks that our
eigenvalues and projections agree with scikit-learn's (same sign
convention) and prints the largest relative difference.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

D, K, N_PROJECT = 20, 10, 1000


def child(args):
    """One scikit-learn side: fit and project, print one JSON line."""
    from sklearn.decomposition import KernelPCA

    X = np.fromfile(args.x, dtype=np.float64).reshape(-1, D)
    T = np.fromfile(args.t, dtype=np.float64).reshape(-1, D)
    fits, projs = [], []
    for _ in range(args.repeats):
        m = KernelPCA(n_components=K, kernel="rbf", eigen_solver=args.child,
                      random_state=0)
        t0 = time.perf_counter()
        m.fit(X)
        t1 = time.perf_counter()
        P = m.transform(T)
        projs.append(time.perf_counter() - t1)
        fits.append(t1 - t0)
    if args.out:
        P.astype(np.float64).tofile(args.out)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"fit": float(np.median(fits)), "project": float(np.median(projs)),
                      "peak_mib": peak, "eigenvalues": m.eigenvalues_.tolist()}))


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")
    ap.add_argument("--sizes", default="3000,8000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dense-repeats", type=int, default=1,
                    help="repeats of the dense reference at the largest n")
    ap.add_argument("--child", choices=["arpack", "dense"])
    ap.add_argument("--x")
    ap.add_argument("--t")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.child:
        return child(args)

    sizes = [int(s) for s in args.sizes.split(",")]
    rng = np.random.default_rng(1)
    scales = 0.85 ** np.arange(D)
    me = os.path.abspath(__file__)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        T = rng.standard_normal((N_PROJECT, D)) * scales
        tpath = os.path.join(tmp, "T.bin")
        T.tofile(tpath)
        for n in sizes:
            X = rng.standard_normal((n, D)) * scales
            xpath = os.path.join(tmp, f"X{n}.bin")
            X.tofile(xpath)
            res = {}
            ours_out = os.path.join(tmp, "ours.bin")
            res["ours"] = run([os.path.join(args.bin, "bench_kpca"), xpath, str(n), tpath,
                               str(N_PROJECT), str(D), str(K), "auto", str(args.repeats),
                               ours_out])
            for solver in ("arpack", "dense"):
                reps = args.dense_repeats if solver == "dense" and n == max(sizes) \
                    else args.repeats
                out = os.path.join(tmp, f"{solver}.bin")
                res[solver] = run([sys.executable, me, "--child", solver, "--x", xpath,
                                   "--t", tpath, "--repeats", str(reps), "--out", out])
                res[solver]["P"] = np.fromfile(out).reshape(N_PROJECT, K)
            P = np.fromfile(ours_out).reshape(N_PROJECT, K)
            ref = res["dense"]
            lam_err = np.max(np.abs(np.array(res["ours"]["eigenvalues"]) -
                                    np.array(ref["eigenvalues"])) / np.array(ref["eigenvalues"]))
            proj_err = np.max(np.abs(P - ref["P"])) / np.max(np.abs(ref["P"]))
            arpack_err = np.max(np.abs(res["arpack"]["P"] - ref["P"])) / np.max(np.abs(ref["P"]))
            rows.append((n, res, lam_err, proj_err, arpack_err))
            print(f"n={n}: done ({res['ours']['solver']}, {res['ours']['iterations']} "
                  f"block products)", file=sys.stderr)

    print("| n | side | fit s | project s | peak MiB | fit ratio (ours/side) "
          "| project ratio | memory ratio |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, res, lam_err, proj_err, arpack_err in rows:
        o = res["ours"]
        print(f"| {n} | ours ({o['solver']}, {o['iterations']} products) | {o['fit']:.3f} "
              f"| {o['project']:.3f} | {o['peak_mib']:.0f} | | | |")
        for side in ("arpack", "dense"):
            r = res[side]
            print(f"| {n} | sklearn {side} | {r['fit']:.3f} | {r['project']:.3f} "
                  f"| {r['peak_mib']:.0f} | {o['fit'] / r['fit']:.3f} "
                  f"| {o['project'] / r['project']:.3f} "
                  f"| {o['peak_mib'] / r['peak_mib']:.3f} |")
    print()
    for n, res, lam_err, proj_err, arpack_err in rows:
        nn = n * n * 8 / 2**20
        print(f"n={n}: one n x n matrix is {nn:.0f} MiB; ours peak {res['ours']['peak_mib']:.0f} "
              f"MiB; max rel. difference to sklearn dense: eigenvalues {lam_err:.1e}, "
              f"projections {proj_err:.1e} (sklearn arpack: {arpack_err:.1e})")


if __name__ == "__main__":
    main()
