#!/usr/bin/python3
"""gpr's nystrom solver (the SoR mean by Falkon, the DTC variance) against
exact gpr on the same data, same machine, one run each: fit and predict
time, peak memory, the test RMSE of each mean (against the noisy test
targets), and how far the nystrom answers are from the exact ones (the
mean absolute difference of the means, and of the standard deviations).

Each side runs in its own process (build/bench_gpr, libkm in process:
km_gpr_fit, then km_gpr_predict and km_gpr_variance), so peak RSS is its
own. Data as bench_gpr.py's: d = 8 standard normal features, y =
sin(x0) + x1^2 / 2 + N(0, 0.1^2), rbf gamma 1/d, noise 0.1,
signal_variance 1; 1000 test rows.
Usage: /usr/bin/python3 bench/bench_gpr_nystrom.py --bin build [--n 20000] [--m 0]
(--m 0: the solver's default number of centres)
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpr import data, run_json  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--m", type=int, default=0)
    args = ap.parse_args()
    n, d, nt, noise = args.n, 8, 1000, 0.1
    gamma = 1.0 / d
    tmp, paths, rng = data(n, d, nt)
    T = np.fromfile(paths[2]).reshape(nt, d)
    yt = np.sin(T[:, 0]) + T[:, 1] ** 2 / 2 + 0.1 * rng.standard_normal(nt)
    common = [*paths, str(n), str(d), str(nt), repr(gamma), repr(noise)]
    res, answers = {}, {}
    for name, m in (("exact", "exact"), ("nystrom", str(args.m))):
        out = os.path.join(tmp, f"{name}.bin")
        res[name] = run_json([os.path.join(args.bin, "bench_gpr"), *common,
                              m, out])
        answers[name] = np.fromfile(out).reshape(2, nt)
        os.remove(out)
    for p in paths:
        os.remove(p)
    os.rmdir(tmp)
    print(f"gpr rbf d={d} gamma={gamma} noise={noise} n={n}, mean and std of "
          f"{nt} rows; one run each")
    print(f"{'':>8} {'fit':>8} {'predict':>8} {'peak MiB':>9} {'RMSE':>8}")
    for name in ("exact", "nystrom"):
        r = res[name]
        rmse = np.sqrt(np.mean((answers[name][0] - yt) ** 2))
        print(f"{name:>8} {r['fit']:>7.3f}s {r['predict']:>7.3f}s "
              f"{r['peak_mib']:>9.0f} {rmse:>8.4f}")
    e, ny = res["exact"], res["nystrom"]
    print(f"{'ratio':>8} {ny['fit'] / e['fit']:>8.3f} "
          f"{ny['predict'] / e['predict']:>8.2f} "
          f"{ny['peak_mib'] / e['peak_mib']:>9.3f}")
    dm = np.abs(answers["nystrom"][0] - answers["exact"][0])
    ds = np.abs(answers["nystrom"][1] - answers["exact"][1])
    print(f"nystrom against exact: mean |difference| of the means "
          f"{dm.mean():.2e} (max {dm.max():.2e}), of the stds {ds.mean():.2e} "
          f"(max {ds.max():.2e}; the exact stds average "
          f"{answers['exact'][1].mean():.3f})")


if __name__ == "__main__":
    main()
