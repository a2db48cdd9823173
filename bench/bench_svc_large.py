#!/usr/bin/python3
"""SVC past the n^2 wall: kmserve's svc with the screened solver (exact SMO
per class pair on working sets that a nystrom screen picks, grown until
every row meets the optimality conditions) and with the nystrom solver
(m centres, Nystrom features, LIBLINEAR's dual coordinate descent per
class pair) against LIBSVM's exact SVC (scikit-learn's SVC, which is
LIBSVM) on Fashion-MNIST, same data, same kernel, same C.

Data: the Debian package dataset-fashion-mnist (60,000 x 784 training
rows, 10,000 test rows, 10 classes), pixels / 255, nothing else. Kernel
rbf with gamma = 0.02, C = 10 on every side (see bench/RESULTS.md for
where these come from). LIBSVM runs in its own process (cache_size 2000
MB, single-threaded as LIBSVM is), its fit timed around SVC.fit (wall and
the process's user + system CPU seconds); kmserve runs as a daemon (one
per fit), its fit timed around the POST /fit (wall, JSON parsing of the
60,000-row body included; CPU: the daemon's user + system seconds over
the request) and by the model's training.seconds (the fit alone, which
the time ratio uses).

The default runs two of ours. First svc screened (--screened, the
screen's centres; default 1000) with LIBSVM's own C, gamma and tol
(10^-3): it solves LIBSVM's problem, so nothing of it is tuned; its
kernel budget is --cache-mb (default 4000: 2000 per worker, so that the
largest working set's Gram fits). Then svc nystrom with the
configuration chosen on the training set only (bench/RESULTS.md says
how): uniform centres, m = 5000, precision float32, tol 0.1 (LIBLINEAR's
default for its dual solver), C = 10 and gamma = 0.02 (LIBSVM's; --our-C
and --our-gamma change the nystrom rows alone). So the one command
    /usr/bin/python3 bench/bench_svc_large.py --bin build
fits LIBSVM and then ours and prints accuracy, the difference and the
time ratio (for screened, "feat s" is the screen's seconds and "epochs"
the most rounds of a pair). --validate is the tuning mode: the first 50,000 training rows
against the last 10,000 (never the test set), ours only. The 1-minute
load average is sampled every 30 s and printed per side. Also, when asked (--krr), kmserve's krr
with the nystrom solver one-vs-all on one-hot targets (argmax; alpha
--krr-alpha, cg_tol 1e-4, at most 50 iterations), the issue's other
large-n classifier.

The LIBSVM fit takes minutes: --libsvm-cache FILE (default
BIN/bench_svc_large_libsvm.json, in the build folder) keeps its result, so that a later run reuses it (--skip-libsvm-run) rather than
fitting again.

Each --ms entry is m or RULE:m, RULE the params.centres of that row
(uniform or rpcholesky; --centres is the rule of entries without one).

Usage: /usr/bin/python3 bench/bench_svc_large.py --bin build
         [--screened 1000] [--cache-mb 4000] [--ms uniform:5000] [--centres uniform] [--precision float32]
         [--tol 0.1] [--our-C 10] [--our-gamma 0.02] [--validate]
         [--krr-ms 4000] [--libsvm-cache F]
         [--libsvm-timeout 4500] [--skip-libsvm-run] [--only-libsvm]
         [--n 60000] [--exact]
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_nystrom import peak_mib  # noqa: E402
from daemon import free_port, stop, wait_ready  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist/"
GAMMA, C = 0.02, 10.0
PRECISION = "float32"


def load(kind):
    with gzip.open(os.path.join(DATA, f"{kind}-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    with gzip.open(os.path.join(DATA, f"{kind}-images-idx3-ubyte.gz")) as f:
        X = np.frombuffer(f.read(), np.uint8, offset=16).reshape(len(y), 784)
    return X / 255.0, y


LIBSVM_SIDE = r"""
import json, resource, sys, time
import numpy as np
from sklearn.svm import SVC
X = np.load(sys.argv[1]); y = np.load(sys.argv[2])
T = np.load(sys.argv[3]); t = np.load(sys.argv[4])
gamma, C = float(sys.argv[5]), float(sys.argv[6])
t0 = time.perf_counter()
c0 = resource.getrusage(resource.RUSAGE_SELF)
clf = SVC(C=C, gamma=gamma, kernel="rbf", cache_size=2000).fit(X, y)
fit = time.perf_counter() - t0
c1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
t0 = time.perf_counter()
acc = float((clf.predict(T) == t).mean())
pred = time.perf_counter() - t0
print(json.dumps({"fit": fit, "cpu": cpu, "predict": pred, "accuracy": acc,
                  "n_support": int(clf.n_support_.sum()),
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))
"""


def run_libsvm(tmp, timeout):
    t0 = time.perf_counter()
    try:
        out = subprocess.run([sys.executable, "-c", LIBSVM_SIDE,
                              *(os.path.join(tmp, s + ".npy") for s in "XyTt"),
                              str(GAMMA), str(C)], capture_output=True, text=True,
                             timeout=timeout, check=True).stdout
    except subprocess.TimeoutExpired:
        return {"timeout": True, "elapsed": time.perf_counter() - t0}
    return json.loads(out.strip().splitlines()[-1])


def post(url, body, timeout=7200, header_len=None):
    """POSTs body (JSON; with header_len, that many bytes of JSON then
    binary tensors) and returns the JSON answer."""
    headers = {"Content-Type": "application/json"}
    if header_len is not None:
        headers = {"Content-Type": "application/octet-stream",
                   "Inference-Header-Content-Length": str(header_len)}
    req = urllib.request.Request(url, data=body, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def cpu_seconds(pid):
    """user + system CPU seconds of process pid so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


class LoadSampler:
    """The machine's 1-minute load average, sampled every PERIOD seconds in
    a thread; phase(name) ends the current phase (returning "min to max
    (n samples)") and starts the next."""
    PERIOD = 30

    def __init__(self):
        self.samples, self.lock = [load_average()], threading.Lock()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            time.sleep(self.PERIOD)
            with self.lock:
                self.samples.append(load_average())

    def phase(self, _next):
        with self.lock:
            v, self.samples = self.samples + [load_average()], [load_average()]
        return f"{min(v):.1f} to {max(v):.1f} ({len(v)} samples)"


def fit_body(head, X, y, kind):
    """A fit body of head's members with X and y: their JSON ("json"), or
    binary FP64 tensors after the JSON ("binary"); and the JSON's length
    for the header (None for JSON)."""
    if kind == "json":
        return json.dumps(dict(head, X=X.tolist(), y=y.tolist())).encode(), None
    xb = np.ascontiguousarray(X, "<f8").tobytes()
    yb = np.ascontiguousarray(y, "<f8").tobytes()
    text = json.dumps(dict(head, X={"datatype": "FP64", "shape": list(X.shape),
                                    "binary_data_size": len(xb)},
                           y={"datatype": "FP64", "shape": [len(y)],
                              "binary_data_size": len(yb)})).encode()
    return text + xb + yb, len(text)


def ours(binary, body, T, header_len=None):
    tmp = tempfile.mkdtemp(prefix="kmbench-svcl-")
    port = free_port()
    proc = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--models-dir",
                             os.path.join(tmp, "m"), "--access-log", "false",
                             "--max-body-mb", "2048", "--fit-timeout", "7200"],
                            stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, proc)
        url = f"http://127.0.0.1:{port}/v1/models/b"
        t0, c0 = time.perf_counter(), cpu_seconds(proc.pid)
        meta = post(url + "/fit", body, header_len=header_len)["model"]
        fit = time.perf_counter() - t0
        meta["cpu"] = cpu_seconds(proc.pid) - c0
        peak = peak_mib(proc.pid)
        out = []
        t0 = time.perf_counter()
        for i in range(0, len(T), 2000):
            r = post(url + "/predict", json.dumps({"X": T[i:i + 2000].tolist()}).encode())
            out += r["predictions"]
        pred = time.perf_counter() - t0
        return fit, peak, pred, np.array(out), meta
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")
    ap.add_argument("--screened", default="1000",
                    help="svc screened rows: the screen's centres per row (empty: none)")
    ap.add_argument("--bodies", default="json,binary",
                    help="the screened fits' bodies: json, binary (X and y as binary "
                         "tensors after the JSON), or both, one fit each")
    ap.add_argument("--cache-mb", type=float, default=4000,
                    help="svc screened's params.cache_mb")
    ap.add_argument("--ms", default="uniform:5000",
                    help="m or RULE:m per row, e.g. uniform:2000,rpcholesky:3000")
    ap.add_argument("--centres", default="uniform",
                    help="params.centres of the --ms entries without a rule")
    ap.add_argument("--krr-ms", default="")
    ap.add_argument("--tol", type=float, default=0.1,
                    help="svc nystrom's tol (LIBLINEAR's default for this solver, 0.1)")
    ap.add_argument("--krr-alpha", type=float, default=1.0)
    ap.add_argument("--libsvm-cache", default=None)
    ap.add_argument("--libsvm-timeout", type=float, default=4500)
    ap.add_argument("--skip-libsvm-run", action="store_true")
    ap.add_argument("--only-libsvm", action="store_true")
    ap.add_argument("--n", type=int, default=60000,
                    help="the first N training rows only (where exact is the better choice)")
    ap.add_argument("--exact", action="store_true",
                    help="also kmserve's exact svc (SMO), same C and gamma")
    ap.add_argument("--precision", default=PRECISION,
                    help="svc nystrom's params.precision (float64 or float32)")
    ap.add_argument("--our-C", type=float, default=C,
                    help="svc nystrom's C (LIBSVM keeps C = 10)")
    ap.add_argument("--our-gamma", type=float, default=GAMMA,
                    help="svc nystrom's gamma (LIBSVM keeps 0.02)")
    ap.add_argument("--validate", action="store_true",
                    help="tuning: train on the first 50,000 training rows, score on the "
                         "last 10,000 (never the test set); LIBSVM is not run")
    args = ap.parse_args()
    if args.libsvm_cache is None:
        args.libsvm_cache = os.path.join(args.bin, "bench_svc_large_libsvm.json")
    X, y = load("train")
    if args.validate:
        X, y, T, t = X[:50000], y[:50000], X[50000:], y[50000:]
        args.skip_libsvm_run = True
    else:
        T, t = load("t10k")
    X, y = X[:args.n], y[:args.n]
    print(f"Fashion-MNIST: {X.shape[0]} x {X.shape[1]} training rows, {T.shape[0]} "
          f"{'validation (training rows 50,000 on)' if args.validate else 'test'} rows; "
          f"pixels / 255; rbf gamma = {GAMMA}, C = {C} (LIBSVM); svc nystrom gamma = "
          f"{args.our_gamma}, C = {args.our_C}, tol = {args.tol}, precision "
          f"{args.precision}", flush=True)
    loads = LoadSampler()
    tmp = tempfile.mkdtemp(prefix="kmbench-svcl-")
    for name, a in (("X", X), ("y", y), ("T", T), ("t", t)):
        np.save(os.path.join(tmp, name + ".npy"), a)
    if args.validate:
        ref = {}
    elif args.skip_libsvm_run:
        with open(args.libsvm_cache) as f:
            ref = json.load(f)
    else:
        print(f"LIBSVM (scikit-learn SVC) fit, timeout {args.libsvm_timeout:.0f} s ...",
              flush=True)
        loads.phase("LIBSVM")
        ref = run_libsvm(tmp, args.libsvm_timeout)
        ref["load"] = loads.phase("kmserve")
        with open(args.libsvm_cache, "w") as f:
            json.dump(ref, f)
    if not ref:
        pass
    elif ref.get("timeout"):
        print(f"  LIBSVM did not finish within {ref['elapsed']:.0f} s", flush=True)
    else:
        print(f"  LIBSVM SVC: fit {ref['fit']:.1f} s ({ref.get('cpu', float('nan')):.1f} "
              f"CPU-seconds), predict {ref['predict']:.1f} s, "
              f"accuracy {ref['accuracy']:.4f}, {ref['n_support']} support vectors, "
              f"peak {ref['peak_mib']:.0f} MiB", flush=True)
    if args.only_libsvm:
        return
    binary = os.path.join(args.bin, "kmserve")
    kernel = {"type": "rbf", "gamma": GAMMA}
    Xl, yl = X.tolist(), y.tolist()
    print(f"  {'what':34s} {'m':>6s} {'fit s':>8s} {'core s':>8s} {'cpu s':>7s} "
          f"{'feat s':>7s} {'peak MiB':>9s} {'pred s':>7s} {'accuracy':>9s} "
          f"{'vs LIBSVM':>10s} {'time ratio':>10s} {'cpu ratio':>9s} {'epochs':>7s}",
          flush=True)

    def line(what, m, fit, core, cpu, peak, pred, acc, ep="", feat=float("nan")):
        dacc = (acc - ref["accuracy"]) * 100 if "accuracy" in ref else float("nan")
        ratio = core / ref["fit"] if "fit" in ref else float("nan")
        cratio = cpu / ref["cpu"] if "cpu" in ref else float("nan")
        print(f"  {what:34s} {m:6d} {fit:8.1f} {core:8.1f} {cpu:7.1f} {feat:7.1f} "
              f"{peak:9.0f} {pred:7.1f} {acc:9.4f} {dacc:+9.2f}p {ratio:10.3f} "
              f"{cratio:9.3f} {ep!s:>7s}", flush=True)

    for m, kind in [(int(v), k) for v in args.screened.split(",") if v
                    for k in args.bodies.split(",") if k]:
        body, hl = fit_body({"algorithm": "svc", "kernel": kernel,
                             "params": {"C": C, "solver": "screened", "n_centres": m,
                                        "cache_mb": args.cache_mb}}, X, y, kind)
        fit, peak, pred, lab, meta = ours(binary, body, T, hl)
        del body
        tr = meta["training"]
        line(f"kmserve svc screened, {kind} body", m, fit, tr["seconds"], meta["cpu"],
             peak, pred, float((lab == t).mean()), tr["rounds"], tr["screen_seconds"])
        if "fit" in ref:
            print(f"    the whole request: {fit:.1f} s = {fit / ref['fit']:.3f}x LIBSVM's "
                  f"fit; outside the fit {fit - tr['seconds']:.1f} s", flush=True)
        print(f"    {sum(tr['n_support'])} support vectors; working rows "
              f"{tr['working_rows']} of the pairs' {(len(set(yl)) - 1) * len(Xl)}, {tr['rows_added']} "
              f"added by the checks; {tr['iterations']} SMO iterations", flush=True)
    ours_kernel = {"type": "rbf", "gamma": args.our_gamma}
    for entry in [v for v in args.ms.split(",") if v]:
        rule, _, m = entry.rpartition(":")
        rule, m = rule or args.centres, int(m)
        body = json.dumps({"algorithm": "svc", "kernel": ours_kernel, "X": Xl, "y": yl,
                           "params": {"C": args.our_C, "solver": "nystrom",
                                      "n_centres": m, "centres": rule, "tol": args.tol,
                                      "precision": args.precision}}).encode()
        fit, peak, pred, lab, meta = ours(binary, body, T)
        tr = meta["training"]
        line(f"kmserve svc nystrom {rule} {args.precision}", meta["n_samples"], fit,
             tr["seconds"], meta["cpu"], peak, pred, float((lab == t).mean()),
             tr.get("epochs", ""), tr["feature_seconds"])
    if args.exact:
        body = json.dumps({"algorithm": "svc", "kernel": kernel, "X": Xl, "y": yl,
                           "params": {"C": C, "cache_mb": 2000}}).encode()
        fit, peak, pred, lab, meta = ours(binary, body, T)
        line("kmserve svc exact (SMO)", len(Xl), fit, meta["training"]["seconds"],
             meta["cpu"], peak, pred, float((lab == t).mean()))
    onehot = np.eye(10)[y].tolist()
    for m in [int(v) for v in args.krr_ms.split(",") if v]:
        body = json.dumps({"algorithm": "krr", "kernel": kernel, "X": Xl, "y": onehot,
                           "params": {"alpha": args.krr_alpha, "solver": "nystrom",
                                      "n_centres": m, "cg_tol": 1e-4,
                                      "cg_max_iter": 50}}).encode()
        fit, peak, pred, val, meta = ours(binary, body, T)
        tr = meta["training"]
        line("kmserve krr nystrom 1-v-all", m, fit, tr["seconds"], meta["cpu"], peak, pred,
             float((val.argmax(axis=1) == t).mean()), tr.get("iterations", ""))
    print(f"  machine load (1-minute average, sampled every {LoadSampler.PERIOD} s): "
          + "; ".join(f"{k} {v}" for k, v in
                      ([("LIBSVM", ref["load"])] if "load" in ref else [])
                      + [("kmserve", loads.phase(None))]), flush=True)


if __name__ == "__main__":
    main()
