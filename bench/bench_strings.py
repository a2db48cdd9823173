#!/usr/bin/python3
"""String kernels: kmserve against R kernlab, side by side.

    flock /tmp/kmserve-bench.lock /usr/bin/python3 bench/bench_strings.py --bin build

(a) Gram matrix. n (default 5000) random strings of 200 letters over
    "acgt" (numpy's default_rng(1)), the spectrum kernel of length 5,
    unnormalized: kmserve {"type": "spectrum", "length": 5}, kernlab
    stringdot(type = "spectrum", length = 5, normalized = FALSE), which
    kmserve's kernel is defined to equal.
      kmserve  POST /v1/kernels/gram on a fresh daemon: first one request
               of the largest square block the route allows (its cap on
               rows x cols, read from its 413 answer when the whole Gram
               is over it; 1000 x 1000 today), then the whole n x n Gram,
               in one request if it fits the cap, else in square blocks
               K(X_I, X_J), I <= J, the lower blocks filled by symmetry.
               Each figure is the wall clock of its requests, from the
               first byte sent to the last byte of the answer received
               (the JSON answers are parsed after the clock stops).
      kernlab  kernelMatrix(kernel, as.list(strings)) in Rscript (Debian's
               r-cran-kernlab; make deps-bench), the strings read from a
               file before the clock starts; system.time's elapsed
               seconds, for the first block's rows and for all n. kernlab
               takes about 70 us a pair here: 15 minutes at n = 5000, most
               of the script's 20.
    "agree": kernlab's matrix (written by R as doubles) against kmserve's,
    the largest absolute difference: the values are whole numbers, so 0.
(b) svc. data/words.csv (6000 words labelled by language, six classes;
    data/README.md): the first 4000 rows train, the other 2000 test; the
    normalized spectrum kernel of length 3, C = 1, tol 1e-3, as kmserve
    {"type": "normalized", "kernels": [{"type": "spectrum", "length": 3}]}
    and kernlab ksvm(as.list(train), labels, type = "C-svc", kernel =
    stringdot(type = "spectrum", length = 3, normalized = TRUE), C = 1,
    fit = FALSE, shrinking = FALSE).
      kmserve  the wall clock of POST /fit (the daemon's own training
               seconds beside it) and of POST /predict of the test rows
      kernlab  system.time of ksvm and of predict, in Rscript; fit = FALSE
               skips ksvm's own prediction of the training rows (its
               training error), which kmserve does not do and which took
               86 % of ksvm's time here; shrinking = FALSE because
               kernlab's shrinking (its default) can stop short of the
               optimum (tests/fixtures/gen_string_refs.R says more)
    Accuracy on the test rows for both, and how often their predicted
    labels agree.
R runs in the C locale so that it measures strings in bytes, as kmserve
does. Ratios are kmserve's time over kernlab's (below 1: kmserve is
faster). One run of each; the machine is shared, so times vary by tens of
percent from run to run. Until kmserve has the spectrum kernel (GET /v1
lists the kernels) the script says so and stops; --kernlab-only runs
kernlab's side alone.
"""
import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "integration"))
import run  # noqa: E402
from kmdata import data_file  # noqa: E402

GRAM_K, GRAM_LEN, ALPHABET = 5, 200, "acgt"
SVC_K, SVC_C, SVC_TRAIN = 3, 1.0, 4000

R_GRAM = """
suppressMessages(library(kernlab))
args <- commandArgs(trailingOnly = TRUE)
x <- readLines(args[1])
for (n in as.integer(args[-(1:2)])) {
    k <- stringdot(type = "spectrum", length = %d, normalized = FALSE)
    t <- system.time(K <- kernelMatrix(k, as.list(x[seq_len(n)])))
    cat(sprintf("ELAPSED %%d %%.6f\\n", n, t[["elapsed"]]))
    writeBin(as.vector(unclass(K)), file.path(args[2], sprintf("K%%d", n)),
             size = 8)
}
""" % GRAM_K

R_SVC = """
suppressMessages(library(kernlab))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1], colClasses = "character")
tr <- seq_len(as.integer(args[2]))
te <- as.integer(args[2]) + seq_len(as.integer(args[3]))
k <- stringdot(type = "spectrum", length = %d, normalized = TRUE)
t <- system.time(m <- ksvm(as.list(d$text[tr]), factor(d$label[tr]),
                           type = "C-svc", kernel = k, C = %r,
                           fit = FALSE, shrinking = FALSE))
cat(sprintf("FIT %%.6f\\n", t[["elapsed"]]))
cat(sprintf("NSV %%d\\n", nSV(m)))
t <- system.time(p <- predict(m, as.list(d$text[te])))
cat(sprintf("PREDICT %%.6f\\n", t[["elapsed"]]))
cat("LABELS", as.character(p), "\\n")
""" % (SVC_K, SVC_C)


def rscript(text, *args):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.R")
        with open(path, "w") as f:
            f.write(text)
        env = dict(os.environ, LC_ALL="C")
        return subprocess.run(["Rscript", path, *args], check=True, env=env,
                              capture_output=True, text=True).stdout


def random_strings(n):
    rng = np.random.default_rng(1)
    letters = np.array(list(ALPHABET))
    return ["".join(r) for r in letters[rng.integers(0, len(ALPHABET),
                                                     (n, GRAM_LEN))]]


def spectrum(k, normalized=False):
    leaf = {"type": "spectrum", "length": k}
    return {"type": "normalized", "kernels": [leaf]} if normalized else leaf


# ---------------------------------------------------------------- kmserve

def has_spectrum(d):
    return "spectrum" in d.req("GET", "/v1").json().get("kernels", [])


def gram_request(d, X, Z=None):
    body = {"kernel": spectrum(GRAM_K), "X": X}
    if Z is not None:
        body["Z"] = Z
    t0 = time.perf_counter()
    r = d.req("POST", "/v1/kernels/gram", body, timeout=3600)
    secs = time.perf_counter() - t0
    if r.status == 413:
        m = re.search(r"the cap is (\d+)", r.json()["error"]["message"])
        if m:
            return secs, int(m.group(1))
    if r.status != 200:
        raise RuntimeError(f"gram: {r.status} {r.body[:300]!r}")
    return secs, np.array(r.json()["K"], dtype=float)


def ours_gram(d, strings):
    """(block rows, its seconds, its K), (seconds of the whole Gram, K,
    requests)."""
    n = len(strings)
    secs, out = gram_request(d, strings)
    if not isinstance(out, int):
        return (n, secs, out), (secs, out, 1)
    b = min(n, math.isqrt(out))
    first_secs, first = gram_request(d, strings[:b])
    K = np.empty((n, n))
    total, requests = 0.0, 0
    for i in range(0, n, b):
        for j in range(i, n, b):
            X, Z = strings[i:i + b], strings[j:j + b]
            secs, blk = gram_request(d, X, None if i == j else Z)
            total += secs
            requests += 1
            K[i:i + len(X), j:j + len(Z)] = blk
            K[j:j + len(Z), i:i + len(X)] = blk.T
    return (b, first_secs, first), (total, K, requests)


def ours_svc(d, Xtr, ytr, Xte):
    body = {"algorithm": "svc", "kernel": spectrum(SVC_K, True),
            "params": {"C": SVC_C}, "X": Xtr, "y": ytr}
    t0 = time.perf_counter()
    r = d.req("POST", "/v1/models/words/fit", body, timeout=3600)
    fit = time.perf_counter() - t0
    if r.status not in (200, 201):
        raise RuntimeError(f"fit: {r.status} {r.body[:300]!r}")
    meta = r.json()["model"]
    t0 = time.perf_counter()
    p = d.req("POST", "/v1/models/words/predict", {"X": Xte}, timeout=3600)
    predict = time.perf_counter() - t0
    if p.status != 200:
        raise RuntimeError(f"predict: {p.status} {p.body[:300]!r}")
    n_sv = sum(meta["training"].get("n_support", [])) or None
    return fit, meta["training"]["seconds"], predict, \
        p.json()["predictions"], n_sv


# ---------------------------------------------------------------- kernlab

def kernlab_gram(strings, sizes):
    """{n: (seconds, K)} for the first n strings, each n of sizes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.txt")
        with open(path, "w") as f:
            f.write("\n".join(strings) + "\n")
        out = rscript(R_GRAM, path, tmp, *map(str, sizes))
        res = {}
        for line in out.splitlines():
            if line.startswith("ELAPSED"):
                _, n, secs = line.split()
                n = int(n)
                K = np.fromfile(os.path.join(tmp, f"K{n}"), dtype="<f8")
                res[n] = (float(secs), K.reshape((n, n), order="F"))
    return res


def kernlab_svc(n_train, n_test):
    out = rscript(R_SVC, data_file("words.csv"), str(n_train), str(n_test))
    got = {}
    for line in out.splitlines():
        key, _, rest = line.partition(" ")
        got[key] = rest.split() if key == "LABELS" else float(rest)
    return got["FIT"], got["PREDICT"], got["LABELS"], int(got["NSV"])


# ---------------------------------------------------------------- report

def read_words():
    with open(data_file("words.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return [r["text"] for r in rows], [r["label"] for r in rows]


def fmt_ratio(a, b):
    return f"{a / b:.3f}" if a is not None and b else ""


def part_gram(d, n):
    strings = random_strings(n)
    print(f"(a) Gram: n = {n} strings of {GRAM_LEN} letters over "
          f"\"{ALPHABET}\", spectrum length {GRAM_K}, unnormalized")
    ours = None
    if d:
        ours = ours_gram(d, strings)
        b = ours[0][0]
    else:
        b = min(n, 1000)
    theirs = kernlab_gram(strings, sorted({b, n}))
    rows = []
    for rows_n in sorted({b, n}):
        secs_k, Kk = theirs[rows_n]
        if ours:
            if rows_n == b:
                secs_o, Ko, what = ours[0][1], ours[0][2], "one request"
            else:
                secs_o, Ko, req = ours[1]
                what = f"{req} requests"
            diff = float(np.max(np.abs(Ko - Kk)))
            rows.append((f"kmserve /v1/kernels/gram ({what})", rows_n,
                         secs_o, secs_k, f"{diff:g}"))
        rows.append(("kernlab kernelMatrix", rows_n, secs_k, secs_k, ""))
    print("| what | n | seconds | ratio to kernlab | agree (max abs diff) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for what, rows_n, secs, ref, agree in rows:
        print(f"| {what} | {rows_n} | {secs:.3f} | {fmt_ratio(secs, ref)} | "
              f"{agree} |")
    return {f"{what} n={rows_n}": secs for what, rows_n, secs, _, _ in rows}


def part_svc(d, n_train, n_test):
    X, y = read_words()
    n_test = n_test or len(X) - n_train
    end = n_train + n_test
    Xtr, ytr, Xte, yte = X[:n_train], y[:n_train], X[n_train:end], \
        y[n_train:end]
    print(f"\n(b) svc: words.csv, {len(Xtr)} train / {len(Xte)} test, "
          f"{len(set(y))} classes; normalized spectrum length {SVC_K}, "
          f"C = {SVC_C:g}")
    k_fit, k_pred, k_labels, k_nsv = kernlab_svc(n_train, n_test)
    acc_k = float(np.mean(np.array(k_labels) == np.array(yte)))
    rows = []
    if d:
        fit, inner, pred, labels, nsv = ours_svc(d, Xtr, ytr, Xte)
        acc = float(np.mean(np.array(labels) == np.array(yte)))
        agree = float(np.mean(np.array(labels) == np.array(k_labels)))
        rows.append((f"kmserve (HTTP; {inner:.3f} s in the fit)", fit, pred,
                     acc, nsv))
    rows.append(("kernlab ksvm", k_fit, k_pred, acc_k, k_nsv))
    print("| side | fit s | predict s | accuracy % | SVs | fit ratio | "
          "predict ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for what, fit, pred, acc, nsv in rows:
        print(f"| {what} | {fit:.3f} | {pred:.3f} | {100 * acc:.2f} | "
              f"{nsv if nsv is not None else ''} | {fmt_ratio(fit, k_fit)} | "
              f"{fmt_ratio(pred, k_pred)} |")
    if d:
        print(f"predicted labels agree on {100 * agree:.2f} % of the test "
              "rows")
    return {f"svc {r[0].split(' (')[0]} {part}": v for r in rows
            for part, v in (("fit", r[1]), ("predict", r[2]))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build", help="the build folder "
                    "(make bench passes it): its kmserve is run")
    ap.add_argument("--n", type=int, default=5000,
                    help="strings in the Gram part")
    ap.add_argument("--train", type=int, default=SVC_TRAIN,
                    help="training rows of words.csv (its first rows)")
    ap.add_argument("--test", type=int, default=0,
                    help="test rows, those after the training rows "
                    "(default: all of them)")
    ap.add_argument("--kernlab-only", action="store_true",
                    help="kernlab's side alone, no daemon")
    args = ap.parse_args()
    d = tmp = None
    if not args.kernlab_only:
        tmp = tempfile.mkdtemp(prefix="kmserve-bench-strings-")
        os.makedirs(os.path.join(tmp, "models"))
        d = run.Daemon(os.path.abspath(os.path.join(args.bin, "kmserve")),
                       os.path.join(tmp, "models"), "--max-body-mb", "64")
        d.start()
    try:
        if d and not has_spectrum(d):
            print("skipped: this kmserve has no spectrum kernel (GET /v1 "
                  "kernels); --kernlab-only runs kernlab's side alone")
            return 0
        times = part_gram(d, args.n)
        times.update(part_svc(d, args.train, args.test))
        print(json.dumps(times))
    finally:
        if d:
            d.stop()
            subprocess.run(["rm", "-rf", tmp], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
