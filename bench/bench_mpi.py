#!/usr/bin/python3
"""kmserve-mpi against the single-process fit: rbf krr (d 10, standardize +
center_y) fitted by core's km_fit in one process (bench_mpi) and by
kmserve-mpi under mpirun with 1, 2 and 4 ranks (OPENBLAS_NUM_THREADS=1 per
rank when there are several; the single process and 1 rank use all
cores); wall time of the whole worker run (start, staging read, kernel,
factor, solve, model write) and each rank's peak resident memory (GNU
time's %M). First the block size: PDPOTRF at n = 8000 on 2 ranks with
block 64, 128 and 256. On 2 cores this shows correctness and the division
of memory, not speed-up.

Then kpca (rbf, d 10, 5 components, eigen_solver dense) at --kpca-n
(8000): core's km_fit in one process with the dense solver (LAPACK
dsyevr) and with auto (which takes the block Lanczos solver there), and
kmserve-mpi (ScaLAPACK pdsyevr) on 1, 2 and 4 ranks, with no per-rank
budget (PDSYEVR's optimum workspace) and with one that holds only its
minimum; mpi_check's eigenvalue and projection differences from the
single-process fit beside each.

Usage: /usr/bin/python3 bench/bench_mpi.py --bin build [--n 20000]
           [--kpca-n 8000] [--only krr|kpca]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def mpirun(np):
    cmd = ["mpirun", "--oversubscribe", "-np", str(np), "--mca", "btl", "self,vader",
           "--mca", "btl_vader_single_copy_mechanism", "none"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return cmd


def worker(b, tmp, req, np, block=None, threads=None, extra=()):
    out = os.path.join(tmp, "out.kmm")
    args = ["/usr/bin/time", "-f", "peak_kb %M", os.path.join(b, "kmserve-mpi"),
            "--request", req, "--output", out, "--status", out + ".s", "--error", out + ".e",
            *extra]
    if block:
        args += ["--block", str(block)]
    env = dict(os.environ)
    if threads:
        env["OPENBLAS_NUM_THREADS"] = str(threads)
    t0 = time.time()
    p = subprocess.run(mpirun(np) + args, capture_output=True, text=True, env=env)
    t = time.time() - t0
    if p.returncode:
        sys.exit(p.stdout + p.stderr)
    peaks = [int(x) / 1024 for x in re.findall(r"peak_kb (\d+)", p.stdout + p.stderr)]
    return t, peaks


def single(b, req):
    """core's km_fit of req in one process: seconds, peak MB."""
    p = subprocess.run(["/usr/bin/time", "-f", "peak_kb %M",
                        os.path.join(b, "bench_mpi"), req],
                       capture_output=True, text=True, check=True)
    t = float(re.search(r"seconds ([\d.]+)", p.stdout).group(1))
    return t, int(re.search(r"peak_kb (\d+)", p.stderr).group(1)) / 1024


def kpca_rows(b, tmp, n):
    check_bin = os.path.join(b, "tests", "mpi_check")
    req = os.path.join(tmp, "kpca.req")
    auto = os.path.join(tmp, "kpca-auto.req")
    subprocess.run([check_bin, "write", req, "kpca-dense", str(n), "10", "3"], check=True)
    subprocess.run([check_bin, "write", auto, "kpca", str(n), "10", "3"], check=True)
    t1, peak = single(b, req)
    print(f"n = {n} rbf kpca, 5 components:")
    print(f"  single process, dense (dsyevr):        {t1:7.1f} s   peak {peak:7.0f} MB")
    # mpi_check's "kpca" request adds the inverse map (a Cholesky of n x n)
    ta, peak = single(b, auto)
    print(f"  single process, auto (Lanczos) + inverse map: {ta:7.1f} s   peak {peak:7.0f} MB")
    out = os.path.join(tmp, "out.kmm")
    share = 8 * n * n / 2 ** 20
    for np in (1, 2, 4):
        for budget in (None, "min"):
            extra = []
            if budget:  # A and Z (two shares), X and a few n-vectors, the minimum
                mb = int(2 * share / np + 8 * n * 40 / 2 ** 20 + 64)
                extra = ["--memory-budget-mb", str(mb)]
            t, peaks = worker(b, tmp, req, np, None, None if np == 1 else 1, extra)
            c = subprocess.run([check_bin, "compare", req, out],
                               capture_output=True, text=True)
            diffs = " ".join(c.stdout.split())
            label = f"budget {extra[1]} MB" if extra else "no budget"
            print(f"  kmserve-mpi {np} rank(s), {label:14s}: {t:7.1f} s   per-rank peak "
                  f"{', '.join(f'{x:.0f}' for x in sorted(peaks, reverse=True))} MB"
                  f"   ratio to dense {t / t1:.2f}   ({diffs})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--block-n", type=int, default=8000)
    ap.add_argument("--kpca-n", type=int, default=8000)
    ap.add_argument("--only", choices=("krr", "kpca"))
    a = ap.parse_args()
    b = a.bin
    tmp = tempfile.mkdtemp(prefix="bench-mpi-")
    try:
        if a.only != "kpca":
            krr_rows(b, tmp, a)
        if a.only != "krr":
            kpca_rows(b, tmp, a.kpca_n)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def krr_rows(b, tmp, a):
    req = os.path.join(tmp, "block.req")
    subprocess.run([os.path.join(b, "tests", "mpi_check"), "write", req, "krr",
                    str(a.block_n), "10", "1"], check=True)
    print(f"block size, n = {a.block_n}, 2 ranks:")
    for nb in (64, 128, 256):
        t, _ = worker(b, tmp, req, 2, nb, 1)
        print(f"  block {nb:4d}: {t:7.1f} s")
    req = os.path.join(tmp, "fit.req")
    subprocess.run([os.path.join(b, "tests", "mpi_check"), "write", req, "krr",
                    str(a.n), "10", "2"], check=True)
    t1, peak = single(b, req)
    print(f"n = {a.n} rbf krr:")
    print(f"  single process (km_fit):  {t1:7.1f} s   peak {peak:7.0f} MB")
    for np in (1, 2, 4):
        t, peaks = worker(b, tmp, req, np, None, None if np == 1 else 1)
        print(f"  kmserve-mpi {np} rank(s):    {t:7.1f} s   per-rank peak "
              f"{', '.join(f'{x:.0f}' for x in sorted(peaks, reverse=True))} MB"
              f"   ratio to single {t / t1:.2f}")


if __name__ == "__main__":
    main()
