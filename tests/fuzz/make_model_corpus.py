#!/usr/bin/python3
"""Writes the seed corpus of fuzz_model_file: small valid model files of
every algorithm (krr, svc, svc with probability, svr, kpca, kpca with the
inverse map, gpr, gpr with normalize_y and the optimizer, kkmeans) and
every kernel type, without their last four bytes (the checksum, which the
fuzz target appends). The files are made by a real
daemon, so they are what a fit writes (format version 2; krr's rff
solver, the "rff" entries of FITS with the rbf and both laplacian
kernels, version 3; svc's nystrom solver, "svcnys", version 4; kpca's
nystrom eigen-solver, "kpcanys", version 5; gpr's nystrom solver with
and without the variance, "gprnys" and "gprnysmean", version 6). Fits with each
preprocessing (the "pre" entries of FITS) give seeds of the preprocessing
section; one of them is also written with a search record added
(krrsearch_rbf: the daemon does not write one yet, so it is spliced in
here, as core/km_model.c lays it out).

Usage (from the project root, after make):
    /usr/bin/python3 tests/fuzz/make_model_corpus.py --server build/kmserve
"""
import argparse
import os
import shutil
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import run  # noqa: E402

KERNELS = {
    "linear": {"type": "linear"},
    "poly": {"type": "polynomial", "gamma": 0.5, "degree": 2, "coef0": 1},
    "rbf": {"type": "rbf", "gamma": 0.5},
    "laplacian": {"type": "laplacian", "gamma": 0.5},
    "sigmoid": {"type": "sigmoid", "gamma": 0.1, "coef0": 0},
    "sum": {"type": "sum", "kernels": [{"type": "rbf", "gamma": 0.5},
                                       {"type": "linear"}],
            "weights": [1, 0.5]},
    "product": {"type": "product", "kernels": [{"type": "rbf"},
                                               {"type": "polynomial",
                                                "degree": 2}]},
    "laplacian_l2": {"type": "laplacian_l2", "gamma": 0.5},
    "exponential": {"type": "exponential", "gamma": 0.1},
    "normalized": {"type": "normalized", "kernels": [{"type": "polynomial",
                                                      "degree": 2}]},
}
X = [[0, 0], [0, 1], [3, 3], [3, 4], [-3, 3], [-3, 4]]
FITS = {
    "krr": {"algorithm": "krr", "X": X, "y": [0, 1, 1, 0, 2, 2]},
    "krr2": {"algorithm": "krr", "X": X[:4],
             "y": [[0, 1], [1, 0], [1, 1], [0, 0]]},
    "svc": {"algorithm": "svc", "X": X, "y": ["a", "a", "b", "b", "c", "c"]},
    "svcprob": {"algorithm": "svc", "params": {"probability": True},
                "X": X + X, "y": [0, 0, 1, 1, 1, 1] * 2},
    "svr": {"algorithm": "svr", "X": X, "y": [0, 1, 2, 3, 4, 5]},
    "kpca": {"algorithm": "kpca", "params": {"n_components": 2}, "X": X},
    "kpcainv": {"algorithm": "kpca", "X": X,
                "params": {"n_components": 2, "fit_inverse_transform": True}},
    "krrpre": {"algorithm": "krr", "X": X, "y": [0, 1, 1, 0, 2, 2],
               "preprocess": {"scale": "standardize", "center_y": True}},
    "krr2pre": {"algorithm": "krr", "X": X[:4],
                "y": [[0, 1], [1, 0], [1, 1], [0, 0]],
                "preprocess": {"scale": "minmax", "center_y": True}},
    "svcpre": {"algorithm": "svc", "X": X, "y": ["a", "a", "b", "b", "c", "c"],
               "preprocess": {"scale": "minmax"}},
    "svrpre": {"algorithm": "svr", "X": X, "y": [0, 1, 2, 3, 4, 5],
               "preprocess": {"scale": "standardize", "center_y": True}},
    "krrrff": {"algorithm": "krr", "X": X, "y": [0, 1, 1, 0, 2, 2],
               "params": {"solver": "rff", "n_components": 8, "seed": 1}},
    "krr2rffpre": {"algorithm": "krr", "X": X[:4],
                   "y": [[0, 1], [1, 0], [1, 1], [0, 0]],
                   "params": {"solver": "rff", "n_components": 5},
                   "preprocess": {"scale": "standardize", "center_y": True}},
    "svcnys": {"algorithm": "svc", "X": X, "y": ["a", "a", "b", "b", "c", "c"],
               "params": {"solver": "nystrom", "n_centres": 4, "seed": 1}},
    "kpcainvpre": {"algorithm": "kpca", "X": X,
                   "params": {"n_components": 2, "fit_inverse_transform": True},
                   "preprocess": {"scale": "standardize"}},
    "gpr": {"algorithm": "gpr", "X": X, "y": [0, 1, 2, 3, 4, 5],
            "params": {"noise": 0.1}},
    "gprpre": {"algorithm": "gpr", "X": X, "y": [0, 1, 2, 3, 4, 5],
               "params": {"normalize_y": True, "optimizer": "lbfgs"},
               "preprocess": {"scale": "standardize", "center_y": True}},
    "kkmeans": {"algorithm": "kkmeans", "X": X,
                "params": {"n_clusters": 3, "n_init": 2}},
    "kkmeanspre": {"algorithm": "kkmeans", "X": X,
                   "params": {"n_clusters": 2, "n_init": 1},
                   "preprocess": {"scale": "minmax"}},
    "klr": {"algorithm": "klr", "X": X, "y": ["a", "a", "b", "b", "a", "b"]},
    "klrmulti": {"algorithm": "klr", "X": X, "y": [0, 0, 1, 1, 2, 2],
                 "params": {"lambda": 0.1}},
    "klrovr": {"algorithm": "klr", "X": X, "y": [0, 0, 1, 1, 2, 2],
               "params": {"multi_class": "ovr", "fit_intercept": False}},
    "kpcanys": {"algorithm": "kpca", "X": X,
                "params": {"n_components": 2, "eigen_solver": "nystrom",
                           "n_centres": 4, "seed": 1},
                "preprocess": {"scale": "standardize"}},
    "gprnys": {"algorithm": "gpr", "X": X, "y": [0, 1, 2, 3, 4, 5],
               "params": {"solver": "nystrom", "n_centres": 4, "seed": 1,
                          "variance": True, "normalize_y": True}},
    "gprnysmean": {"algorithm": "gpr", "X": X, "y": [0, 1, 2, 3, 4, 5],
                   "params": {"solver": "nystrom", "n_centres": 3}},
}


def search_section(b):
    """Offset of the search record's u32 flag in a version-2 file b."""
    u32 = lambda p: struct.unpack_from("<I", b, p)[0]  # noqa: E731
    u64 = lambda p: struct.unpack_from("<Q", b, p)[0]  # noqa: E731

    def kernel(p):
        parts, weights = u32(p + 24), u32(p + 28)
        p += 32
        for _ in range(parts):
            p = kernel(p)
        return p + 8 + 8 * u64(p) if weights else p

    def info(p):
        n = u64(p)
        p += 8
        for _ in range(n):
            p += 4 + u32(p) + 8
            p += 8 + 8 * u64(p)
        return p

    p = info(info(kernel(36 + 4 + u32(36) + 16)))
    n = u64(p)
    p += 12
    for _ in range(n):
        p += 4 + u32(p)
    scale, center = u32(p), u32(p + 4)
    p += 8
    for _ in range(2 if scale else 0):
        p += 8 + 8 * u64(p)
    if center:
        p += 8 + 8 * u64(p)
    return p


def with_search(b):
    """b (without its checksum) with a search record of 3 points over
    alpha and kernel.gamma, 5-fold, scoring 0, best point 1."""
    at = search_section(b)
    assert struct.unpack_from("<I", b, at)[0] == 0
    names = [b"alpha", b"kernel.gamma"]
    rec = struct.pack("<IIIQQ", 1, 0, 0, 5, len(names))
    for name in names:
        rec += struct.pack("<I", len(name)) + name
    values = [0.1, 0.5, 1.0, 0.5, 10.0, 0.25]
    rec += struct.pack("<Q", 3) + struct.pack("<Q6d", 6, *values)
    for arr in ([0.5, 0.75, -0.25], [0.1, 0.0, 0.2], [0.01, 0.02, 0.03]):
        rec += struct.pack("<Q3d", 3, *arr)
    rec += struct.pack("<Q", 1)
    return b[:at] + rec + b[at + 4:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(ROOT, "build", "kmserve"))
    ap.add_argument("--out", default=os.path.join(HERE, "corpus",
                                                  "fuzz_model_file"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kmserve-corpus-")
    models = os.path.join(tmp, "models")
    os.makedirs(models)
    os.makedirs(args.out, exist_ok=True)
    d = run.Daemon(os.path.abspath(args.server), models)
    made = 0
    try:
        d.start()
        for kname, kernel in KERNELS.items():
            for fname, fit in FITS.items():
                # every kernel with krr, svc and svr; the other variants
                # with rbf (and kpca and kkmeans also with linear and
                # polynomial)
                if "rff" in fname:  # the shift-invariant kernels only
                    if kname not in ("rbf", "laplacian", "laplacian_l2"):
                        continue
                elif (kname != "rbf" and fname not in ("krr", "svc", "svr") and
                        not (fname in ("kpca", "kkmeans") and
                             kname in ("linear", "poly"))):
                    continue
                name = f"{fname}_{kname}"
                r = d.req("POST", f"/v1/models/{name}/fit",
                          dict(fit, kernel=kernel))
                if r.status != 201:
                    print(f"{name}: {r}", file=sys.stderr)
                    continue
                with open(os.path.join(models, name + ".kmm"), "rb") as f:
                    data = f.read()
                with open(os.path.join(args.out, name), "wb") as f:
                    f.write(data[:-4])
                made += 1
                if name == "krrpre_rbf":
                    with open(os.path.join(args.out, "krrsearch_rbf"), "wb") as f:
                        f.write(with_search(data[:-4]))
                    made += 1
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{made} files in {args.out}")
    return 0 if made else 1


if __name__ == "__main__":
    sys.exit(main())
