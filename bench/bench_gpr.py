#!/usr/bin/python3
"""GPR benchmark: libkm's gpr fit and predict-with-std against
scikit-learn's GaussianProcessRegressor(optimizer=None) fit and
predict(return_std=True), same data, same machine, one run each (issue
15's target: ours at most 0.5x the time).

Each side runs in its own process, so peak RSS is its own. rbf kernel
(sklearn: ConstantKernel(1, "fixed") * RBF(l, "fixed") with gamma =
1/(2 l^2) = 1/d), d = 8, noise (alpha) 0.1, n training rows, 1000
prediction rows. sklearn's fit factors K twice (once for
log_marginal_likelihood_value_, once for the model); ours once, the
likelihood coming from the same factor.
Usage: /usr/bin/python3 bench/bench_gpr.py --bin build [--n 5000]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

SKLEARN_SIDE = r"""
import json, resource, sys, time
import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
d = int(sys.argv[4])
X = np.fromfile(sys.argv[1]).reshape(-1, d)
y = np.fromfile(sys.argv[2])
T = np.fromfile(sys.argv[3]).reshape(-1, d)
gamma, noise = float(sys.argv[5]), float(sys.argv[6])
k = ConstantKernel(1.0, "fixed") * RBF((1 / (2 * gamma)) ** 0.5, "fixed")
t0 = time.perf_counter()
g = GaussianProcessRegressor(k, alpha=noise, optimizer=None).fit(X, y)
fit = time.perf_counter() - t0
t0 = time.perf_counter()
mean, std = g.predict(T, return_std=True)
pred = time.perf_counter() - t0
print(json.dumps({"fit": fit, "predict": pred,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                  "mean_sum": float(mean.sum()), "std_sum": float(std.sum())}))
"""


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def data(n, d, nt):
    """The benchmark's rows (seed 0): X (n x d), y, T (nt x d), written as
    .bin files into a new temporary folder; the folder, the paths and
    the generator (bench_gpr_nystrom.py draws the test targets from it)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 / 2 + 0.1 * rng.standard_normal(n)
    T = rng.standard_normal((nt, d))
    tmp = tempfile.mkdtemp(prefix="kmbench-")
    paths = [os.path.join(tmp, f) for f in ("X.bin", "y.bin", "T.bin")]
    for p, a in zip(paths, (X, y, T)):
        a.astype("<f8").tofile(p)
    return tmp, paths, rng


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")
    ap.add_argument("--n", type=int, default=5000)
    args = ap.parse_args()
    n, d, nt, noise = args.n, 8, 1000, 0.1
    gamma = 1.0 / d
    tmp, paths, _ = data(n, d, nt)
    ours = run_json([os.path.join(args.bin, "bench_gpr"), *paths, str(n), str(d),
                     str(nt), repr(gamma), repr(noise)])
    skl = run_json([sys.executable, "-c", SKLEARN_SIDE, *paths, str(d),
                    repr(gamma), repr(noise)])
    for p in paths:
        os.remove(p)
    os.rmdir(tmp)
    agree = max(abs(ours[k] - skl[k]) / abs(skl[k]) for k in ("mean_sum", "std_sum"))
    tot_o, tot_s = ours["fit"] + ours["predict"], skl["fit"] + skl["predict"]
    print(f"GPR rbf d={d} gamma={gamma} noise={noise} n={n}, mean and std of "
          f"{nt} rows; one run each")
    print(f"{'':>8} {'fit':>8} {'predict':>8} {'total':>8} {'peak MiB':>9}")
    for name, r, tot in (("ours", ours, tot_o), ("sklearn", skl, tot_s)):
        print(f"{name:>8} {r['fit']:>7.3f}s {r['predict']:>7.3f}s {tot:>7.3f}s "
              f"{r['peak_mib']:>9.0f}")
    print(f"{'ratio':>8} {ours['fit'] / skl['fit']:>8.2f} "
          f"{ours['predict'] / skl['predict']:>8.2f} {tot_o / tot_s:>8.2f} "
          f"{ours['peak_mib'] / skl['peak_mib']:>9.2f}")
    print(f"answers agree to {agree:.1e} (relative, sums of the means and stds)")


if __name__ == "__main__":
    main()
