#!/usr/bin/python3
"""KRR past the n^2 wall: kmserve's nystrom and rff solvers against
scikit-learn's Nystroem(n_components=m) + Ridge, same data, same machine,
same run; and the error as m (or D) grows.

Synthetic regression, d = 20: x ~ N(0, I), target sin(x0) + 0.5 x1 x2 +
0.3 x3 + 0.1 noise; rbf with gamma = 1/(2d); alpha = 1 for kmserve, the
same problem as Ridge(alpha=1) on the Nystroem features. Test RMSE is
against the noise-free target on 10,000 held-out rows. kmserve runs as a
daemon (one fresh daemon per fit, so its peak RSS is that fit's): times
are the wall clock of the POST /fit (JSON parsing included), peak memory
the daemon's VmHWM. scikit-learn runs in its own process (peak RSS).
Usage: /usr/bin/python3 bench/bench_nystrom.py --bin build [--n 100000] [--ms 500,1000,2000,4000]

--full runs the issue's full sizes instead: our nystrom fit with m =
--full-m (10,000) against scikit-learn's Nystroem(n_components=m) + Ridge
at n = 100,000, back to back, then ours alone at --big-n (1,000,000). A
10^6 x 20 JSON body is about 400 MB, so here our side is the core
library (bench/bench_nystrom.c, run in its own process): the fit is
timed from the data in memory, as scikit-learn's is, with the fit's
threads as the server gives them (one per core); JSON parsing is not
included on either side. Peak memory is each process's peak RSS
(including its copy of the data); scikit-learn runs at its lowest memory
(SKLEARN_FULL says how). --cg-tols (at --n) and --big-cg-tols (at --big-n)
fit ours at each tolerance given (equal RMSE is what matters); the ratio
printed is that of the first at --n.
Usage: /usr/bin/python3 bench/bench_nystrom.py --bin build --full [--full-m 10000]
       [--big-n 1000000] [--cg-tols 1e-7,1e-4] [--big-cg-tols 1e-7]
       [--sklearn-timeout 3600] [--sklearn-max-gib 14]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

from daemon import free_port, stop, wait_ready

# scikit-learn's side: the data, then a pipeline (a body below) timed
# from the data in memory, then its predictions of T and peak RSS.
SKLEARN_HEAD = r"""
import json, resource, sys, time
import numpy as np
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import Ridge
d = int(sys.argv[4]); m = int(sys.argv[5]); gamma = float(sys.argv[6])
X = np.fromfile(sys.argv[1]).reshape(-1, d); y = np.fromfile(sys.argv[2])
T = np.fromfile(sys.argv[3]).reshape(-1, d)
t0 = time.perf_counter()
ny = Nystroem(kernel="rbf", gamma=gamma, n_components=m, random_state=0).fit(X)
"""
SKLEARN_TAIL = r"""
fit = time.perf_counter() - t0
p = model.predict(ny.transform(T))
print(json.dumps({"fit": fit, "pred": p.tolist(),
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))
"""
SKLEARN_SIDE = SKLEARN_HEAD + r"""
model = Ridge(alpha=1.0, fit_intercept=False).fit(ny.transform(X), y)
""" + SKLEARN_TAIL


def data(n, nt, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + nt, d))
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.3 * X[:, 3]
    y = f[:n] + 0.1 * rng.standard_normal(n)
    return X[:n], y, X[n:], f[n:]


def peak_mib(pid):
    with open(f"/proc/{pid}/status") as s:
        for line in s:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def ours(binary, body, T):
    tmp = tempfile.mkdtemp(prefix="kmbench-nys-")
    port = free_port()
    proc = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--models-dir",
                             os.path.join(tmp, "m"), "--access-log", "false",
                             "--max-body-mb", "1024"], stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, proc)
        url = f"http://127.0.0.1:{port}/v1/models/b"
        req = urllib.request.Request(url + "/fit", data=body,
                                     headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req, timeout=3600) as r:
            meta = json.loads(r.read())["model"]
        fit = time.perf_counter() - t0
        peak = peak_mib(proc.pid)
        pred = []
        for i in range(0, len(T), 5000):
            q = urllib.request.Request(url + "/predict",
                                       data=json.dumps({"X": T[i:i + 5000].tolist()}).encode(),
                                       headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(q, timeout=600) as r:
                pred += json.loads(r.read())["predictions"]
        return fit, peak, np.array(pred), meta
    finally:
        stop(proc)


def rmse(p, f):
    return float(np.sqrt(np.mean((p - f) ** 2)))


# The full-size reference at its lowest memory: Nystroem's transform in
# chunks of 10,000 rows into one preallocated n x m array (one call on all
# of X holds about twice n x m: the kernel block and its product with the
# normalisation, and inside euclidean_distances a second temporary), and
# Ridge without its copy of X. The same arithmetic as the plain pipeline.
# Its address space is capped (--sklearn-max-gib) so that on a shared
# machine it fails with MemoryError rather than waking the OOM killer.
SKLEARN_FULL = SKLEARN_HEAD + r"""
F = np.empty((len(X), m))
for i in range(0, len(X), 10000):
    F[i:i + 10000] = ny.transform(X[i:i + 10000])
model = Ridge(alpha=1.0, fit_intercept=False, copy_X=False).fit(F, y)
del F
""" + SKLEARN_TAIL


def cap_memory(gib):
    """A preexec_fn: the child's address space at most gib GiB."""
    def f():
        lim = int(gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    return f


def available_mib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def ours_core(binary, tmp, n, d, nt, gamma, m, cg_tol, cg_max_iter=100):
    """Our nystrom fit through the core library (bench_nystrom.c)."""
    pred = os.path.join(tmp, "pred")
    out = subprocess.run([binary, *(os.path.join(tmp, s) for s in "XyT"), str(n), str(d),
                          str(nt), str(gamma), "1", "nystrom", str(m), str(cg_tol),
                          str(cg_max_iter), pred],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r, np.fromfile(pred)


def full(args):
    d, nt, m = 20, 10000, args.full_m
    gamma = 1.0 / (2 * d)
    binary = os.path.join(args.bin, "bench_nystrom")
    tols = [float(v) for v in args.cg_tols.split(",") if v]
    big_tols = [float(v) for v in args.big_cg_tols.split(",") if v]
    print(f"KRR rbf, synthetic d = {d}, alpha = 1, m = {m}, test RMSE on {nt} rows "
          f"against the noise-free target; load average at start "
          f"{os.getloadavg()[0]:.1f}")
    print(f"  {'what':30s} {'n':>8s} {'cg_tol':>7s} {'fit s':>8s} {'peak MiB':>9s} "
          f"{'RMSE':>8s} {'iters':>6s}")
    for n in [args.n] + ([args.big_n] if args.big_n else []):
        X, y, T, fT = data(n, nt, d)
        tmp = tempfile.mkdtemp(prefix="kmbench-nys-")
        for name, a in (("X", X), ("y", y), ("T", T)):
            a.tofile(os.path.join(tmp, name))
        del X, y
        mine = None
        for tol in tols if n == args.n else big_tols:
            r, p = ours_core(binary, tmp, n, d, nt, gamma, m, tol)
            mine = mine or r
            print(f"  {'kmserve nystrom (core)':30s} {n:8d} {tol:7.0e} {r['fit']:8.1f} "
                  f"{r['peak_mib']:9.0f} {rmse(p, fT):8.4f} {r['iterations']:6.0f}",
                  flush=True)
        if n == args.n and args.sklearn_timeout > 0:
            print(f"  (scikit-learn starts with {available_mib():.0f} MiB available, "
                  f"load average {os.getloadavg()[0]:.1f}; capped at "
                  f"{args.sklearn_max_gib} GiB of address space)", flush=True)
            try:
                out = subprocess.run([sys.executable, "-c", SKLEARN_FULL,
                                      *(os.path.join(tmp, s) for s in "XyT"),
                                      str(d), str(m), str(gamma)], check=True,
                                     capture_output=True, text=True,
                                     timeout=args.sklearn_timeout,
                                     preexec_fn=cap_memory(args.sklearn_max_gib)).stdout
            except subprocess.TimeoutExpired:
                print(f"  scikit-learn did not finish within {args.sklearn_timeout} s")
                continue
            except subprocess.CalledProcessError as e:
                print(f"  scikit-learn failed: {e.stderr.strip().splitlines()[-1:]}")
                continue
            s = json.loads(out.strip().splitlines()[-1])
            print(f"  {'sklearn Nystroem + Ridge':30s} {n:8d} {'':7s} {s['fit']:8.1f} "
                  f"{s['peak_mib']:9.0f} {rmse(np.array(s['pred']), fT):8.4f}")
            print(f"  ours / sklearn (first row): time {mine['fit'] / s['fit']:.3f}x, "
                  f"peak memory {mine['peak_mib'] / s['peak_mib']:.3f}x", flush=True)
        for name in "XyT":
            os.remove(os.path.join(tmp, name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--ms", default="500,1000,2000,4000")
    ap.add_argument("--sklearn-ms", default="1000,2000,4000")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--full-m", type=int, default=10000)
    ap.add_argument("--big-n", type=int, default=1000000)
    ap.add_argument("--cg-tols", default="1e-7")
    ap.add_argument("--big-cg-tols", default="1e-7")
    ap.add_argument("--sklearn-timeout", type=float, default=3600)
    ap.add_argument("--sklearn-max-gib", type=float, default=14)
    args = ap.parse_args()
    if args.full:
        return full(args)
    d, nt = 20, 10000
    gamma = 1.0 / (2 * d)
    X, y, T, fT = data(args.n, nt, d)
    tmp = tempfile.mkdtemp(prefix="kmbench-nys-")
    for name, a in (("X", X), ("y", y), ("T", T)):
        a.tofile(os.path.join(tmp, name))
    base = {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": gamma},
            "X": X.tolist(), "y": y.tolist()}
    binary = os.path.join(args.bin, "kmserve")
    print(f"KRR rbf, synthetic n = {args.n}, d = {d}, alpha = 1, test RMSE on {nt} rows "
          f"against the noise-free target")
    print(f"  {'what':34s} {'m/D':>6s} {'fit s':>8s} {'peak MiB':>9s} {'RMSE':>8s} "
          f"{'iters':>6s}")
    for m in [int(v) for v in args.ms.split(",")]:
        for solver, key in (("nystrom", "n_centres"), ("rff", "n_components")):
            body = json.dumps(dict(base, params={"alpha": 1.0, "solver": solver,
                                                 key: m})).encode()
            fit, peak, p, meta = ours(binary, body, T)
            it = meta["training"].get("iterations", "")
            print(f"  {'kmserve ' + solver:34s} {m:6d} {fit:8.2f} {peak:9.0f} "
                  f"{rmse(p, fT):8.4f} {it!s:>6s}", flush=True)
    for m in [int(v) for v in args.sklearn_ms.split(",") if v]:
        out = subprocess.run([sys.executable, "-c", SKLEARN_SIDE, *(os.path.join(tmp, s)
                                                                  for s in "XyT"),
                              str(d), str(m), str(gamma)],
                             check=True, capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"  {'sklearn Nystroem + Ridge':34s} {m:6d} {r['fit']:8.2f} "
              f"{r['peak_mib']:9.0f} {rmse(np.array(r['pred']), fT):8.4f}", flush=True)


if __name__ == "__main__":
    main()
