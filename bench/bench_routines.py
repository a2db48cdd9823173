#!/usr/bin/python3
"""This machine's routine speeds: the ceilings the other benchmarks are read against.

    flock /tmp/kmserve-bench.lock /usr/bin/python3 bench/bench_routines.py --bin build

DGEMM, DPOTRF, SGEMM and SPOTRF at n = 6000 (--n), through numpy and scipy,
which load the same OpenBLAS that libkm links (the driver prints which
core type OpenBLAS picked: it chooses its kernels by CPU, and this
project's machine has changed CPU between runs; unless OPENBLAS_CORETYPE
is set, the kernels kmserve runs here: bench/blas_env.py). GFLOP/s are 2n^3 for a
GEMM and n^3/3 for a Cholesky over the median of --reps runs. Also the
memory bandwidth one core sees (a 1 GiB copy) for the BLAS-2 bound
routines (DSYMV, DSYTRD). About 30 s.
"""
import blas_env  # noqa: E402  (first: before numpy)
import argparse
import os
import platform
import subprocess
import sys
import time

import numpy as np
import scipy.linalg as sl


def median_time(f, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return sorted(ts)[len(ts) // 2]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def openblas_core():
    """The core type OpenBLAS chose, as it says with OPENBLAS_VERBOSE=2."""
    env = dict(os.environ, OPENBLAS_VERBOSE="2")
    r = subprocess.run([sys.executable, "-c", "import numpy; numpy.ones(2) @ numpy.ones(2)"],
                       env=env, capture_output=True, text=True, timeout=60)
    for line in (r.stdout + r.stderr).splitlines():
        if line.startswith("Core:"):
            return line.split(":", 1)[1].strip()
    return "not reported"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")  # taken as the other benchmarks do; unused
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    n = a.n
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n))
    S = A @ A.T + n * np.eye(n)
    Af, Sf = A.astype(np.float32), S.astype(np.float32)
    rows = [
        ("DGEMM", 2 * n ** 3, lambda: A @ A),
        ("DPOTRF", n ** 3 / 3, lambda: sl.cholesky(S, lower=True, check_finite=False)),
        ("SGEMM", 2 * n ** 3, lambda: Af @ Af),
        ("SPOTRF", n ** 3 / 3, lambda: sl.cholesky(Sf, lower=True, check_finite=False)),
    ]
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; OpenBLAS core type: {openblas_core()} "
          f"(OPENBLAS_CORETYPE={blas_env.CORE})")
    print(f"n = {n}, median of {a.reps}")
    print("| routine | GFLOP/s |")
    print("| --- | ---: |")
    for name, flops, f in rows:
        t = median_time(f, a.reps)
        print(f"| {name} | {flops / t / 1e9:.1f} |")
    big = np.ones(1 << 27)  # 1 GiB
    t = median_time(lambda: big.copy(), a.reps)
    print(f"| copy (GB/s, read + write) | {2 * big.nbytes / t / 1e9:.1f} |")


if __name__ == "__main__":
    main()
