#!/usr/bin/python3
"""Writes the seed corpus of fuzz_model_file: small valid model files of
every algorithm and file form, each with and without preprocessing, and
every kernel type, without their last four bytes (the checksum, which the
fuzz target appends). The files are made by a real daemon, so they are
what a fit or an import writes:
  krr       exact (one and two outputs), nystrom, rff (with the rbf and
            both laplacian kernels; file format 3)
  svc       exact (with and without probability), nystrom (format 4),
            screened (an exact model's file)
  svr       exact
  kpca      exact (with and without the inverse map), nystrom (format 5)
  gpr       exact (with normalize_y and the optimizer), nystrom with and
            without the variance (format 6), and both with keep_factor's
            sums (format 11)
  updated   gpr exact and krr keep_factor, fitted and then updated: a
            factor of two row blocks (format 12)
  kkmeans
  klr       binary, multinomial of 3 and of 4 classes, one-vs-rest of 4,
            nystrom of 4 (a classifier of k > 2 classes answers k
            decision values a row, not svc's k(k-1)/2)
  libsvm    imported LIBSVM files: svc of 3 classes whose label order is
            not ascending (kept as the vote order: format 3), binary svc
            with probability, epsilon_svr
The "pre" entries are fitted with preprocessing (scale standardize, and
center_y for the regressions; a few minmax); an import has none, so its
"pre" entries are the imported file with a preprocessing section spliced
in (as core/model/km_model.c lays it out). One file is also written with a
search record added (krrsearch_rbf: the daemon does not write one yet, so
it is spliced in here).

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


# Fitted on X's first 4 rows, then updated by its last 2.
UPDATED = {
    "gprupd_rbf": {"algorithm": "gpr", "y": [0, 1, 2, 3, 4, 5],
                   "params": {"noise": 0.1}},
    "krrkeepupd_rbf": {"algorithm": "krr", "y": [0, 1, 2, 3, 4, 5],
                       "params": {"keep_factor": True}},
}


def widen(rows):
    """rows with 14 more features of small values: 16 features, so that
    the fuzz target's batch of three preprocessing blocks (2^17 / 16 rows
    a block) stays quick."""
    return [r + [((i + 1) * (j + 2) % 7) / 8 for j in range(14)]
            for i, r in enumerate(rows)]


X2 = [[0, 0], [0, 1], [3, 3], [3, 4], [-3, 3], [-3, 4]]
X = widen(X2)
# four classes (klr's k decision values; the screened svc)
X4 = widen(X2 + [[0, -3], [1, -3]])
Y4 = [0, 0, 1, 1, 2, 2, 3, 3]
STD = {"scale": "standardize"}
STD_Y = {"scale": "standardize", "center_y": True}
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
    "gprnyskeep": {"algorithm": "gpr", "X": X, "y": [0, 1, 2, 3, 4, 5],
                   "params": {"solver": "nystrom", "n_centres": 4, "seed": 1,
                              "variance": True, "normalize_y": True,
                              "keep_factor": True}},
    "gprnyskeepmean": {"algorithm": "gpr", "X": X, "y": [0, 1, 2, 3, 4, 5],
                       "params": {"solver": "nystrom", "n_centres": 3,
                                  "keep_factor": True}},
    # each form with and without preprocessing
    "krrnys": {"algorithm": "krr", "X": X, "y": [0, 1, 1, 0, 2, 2],
               "params": {"solver": "nystrom", "n_centres": 4, "seed": 1}},
    "krrnyspre": {"algorithm": "krr", "X": X, "y": [0, 1, 1, 0, 2, 2],
                  "params": {"solver": "nystrom", "n_centres": 4, "seed": 1},
                  "preprocess": STD_Y},
    "krrrffpre": {"algorithm": "krr", "X": X, "y": [0, 1, 1, 0, 2, 2],
                  "params": {"solver": "rff", "n_components": 8, "seed": 1},
                  "preprocess": STD_Y},
    "svcstd": {"algorithm": "svc", "X": X, "y": ["a", "a", "b", "b", "c", "c"],
               "preprocess": STD},
    "svcprobpre": {"algorithm": "svc", "params": {"probability": True},
                   "X": X + X, "y": [0, 0, 1, 1, 1, 1] * 2, "preprocess": STD},
    "svcnyspre": {"algorithm": "svc", "X": X,
                  "y": ["a", "a", "b", "b", "c", "c"],
                  "params": {"solver": "nystrom", "n_centres": 4, "seed": 1},
                  "preprocess": STD},
    "svcscr": {"algorithm": "svc", "X": X4, "y": Y4,
               "params": {"solver": "screened", "n_centres": 4, "seed": 1}},
    "svcscrpre": {"algorithm": "svc", "X": X4, "y": Y4,
                  "params": {"solver": "screened", "n_centres": 4, "seed": 1},
                  "preprocess": STD},
    "kpcapre": {"algorithm": "kpca", "params": {"n_components": 2}, "X": X,
                "preprocess": STD},
    "kpcanysraw": {"algorithm": "kpca", "X": X,
                   "params": {"n_components": 2, "eigen_solver": "nystrom",
                              "n_centres": 4, "seed": 1}},
    "gprnyspre": {"algorithm": "gpr", "X": X, "y": [0, 1, 2, 3, 4, 5],
                  "params": {"solver": "nystrom", "n_centres": 4, "seed": 1,
                             "variance": True},
                  "preprocess": STD_Y},
    "kkmeansstd": {"algorithm": "kkmeans", "X": X,
                   "params": {"n_clusters": 3, "n_init": 1},
                   "preprocess": STD},
    "klrpre": {"algorithm": "klr", "X": X, "y": ["a", "a", "b", "b", "a", "b"],
               "preprocess": STD},
    "klrmultipre": {"algorithm": "klr", "X": X, "y": [0, 0, 1, 1, 2, 2],
                    "params": {"lambda": 0.1}, "preprocess": STD},
    "klr4": {"algorithm": "klr", "X": X4, "y": Y4},
    "klr4pre": {"algorithm": "klr", "X": X4, "y": Y4, "preprocess": STD},
    "klr4ovr": {"algorithm": "klr", "X": X4, "y": Y4,
                "params": {"multi_class": "ovr"}},
    "klr4ovrpre": {"algorithm": "klr", "X": X4, "y": Y4,
                   "params": {"multi_class": "ovr"}, "preprocess": STD},
    "klr4nys": {"algorithm": "klr", "X": X4, "y": Y4,
                "params": {"solver": "nystrom", "n_centres": 6, "seed": 1}},
    "klr4nyspre": {"algorithm": "klr", "X": X4, "y": Y4,
                   "params": {"solver": "nystrom", "n_centres": 6, "seed": 1},
                   "preprocess": STD},
}

# LIBSVM model files (svm-train's layout; 16 features, the largest index)
# imported as they are, and with a preprocessing section spliced in
# (with_pre: standardize, and center_y for the svr).
LIBSVM = {
    # labels not ascending: LIBSVM's order is kept as the vote order
    "libsvm3": ("rbf", "svm_type c_svc\nkernel_type rbf\ngamma 0.5\n"
                "nr_class 3\ntotal_sv 4\nrho 0.1 -0.2 0.3\nlabel 2 1 3\n"
                "nr_sv 2 1 1\nSV\n1 0.5 1:1 2:0.5\n0.5 0 1:0.25\n"
                "-1 1 2:2\n-0.5 -1 1:-3 2:3 16:0.5\n"),
    "libsvmprob": ("linear", "svm_type c_svc\nkernel_type linear\n"
                   "nr_class 2\ntotal_sv 2\nrho 0.5\nlabel 1 -1\n"
                   "probA -1.5\nprobB 0.2\nnr_sv 1 1\nSV\n"
                   "1 1:1 2:0.5\n-1 1:-1 2:0.25 16:1\n"),
    "libsvmsvr": ("sigmoid", "svm_type epsilon_svr\nkernel_type sigmoid\n"
                  "gamma 0.1\ncoef0 0\nnr_class 2\ntotal_sv 2\nrho 0.1\n"
                  "SV\n0.5 1:1 2:2\n-0.5 1:-1 2:3 16:0.25\n"),
}


def pre_section(b):
    """Offset of the preprocessing section in a file b of version >= 2."""
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
    return p


def search_section(b):
    """Offset of the search record's u32 flag in a version-2 file b."""
    u32 = lambda p: struct.unpack_from("<I", b, p)[0]  # noqa: E731
    u64 = lambda p: struct.unpack_from("<Q", b, p)[0]  # noqa: E731
    p = pre_section(b)
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


def with_pre(b, center_y):
    """b (without its checksum, no preprocessing) with scale standardize
    (shift and scale per feature) and, with center_y, a y mean per
    output."""
    nf, no = (struct.unpack_from("<Q", b, at)[0] for at in (12, 28))
    at = pre_section(b)
    assert struct.unpack_from("<II", b, at) == (0, 0)
    sec = struct.pack("<II", 1, 1 if center_y else 0)
    sec += struct.pack(f"<Q{nf}d", nf, *[0.5 * (j + 1) for j in range(nf)])
    sec += struct.pack(f"<Q{nf}d", nf, *[1.5 + j for j in range(nf)])
    if center_y:
        sec += struct.pack(f"<Q{no}d", no, *[0.25] * no)
    return b[:at] + sec + b[at + 8:]


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

    def seed(name):
        """name's model file, without its checksum, as a seed."""
        with open(os.path.join(models, name + ".kmm"), "rb") as f:
            data = f.read()[:-4]
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data)
        return data
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
                data = seed(name)
                made += 1
                if name == "krrpre_rbf":
                    with open(os.path.join(args.out, "krrsearch_rbf"), "wb") as f:
                        f.write(with_search(data))
                    made += 1
        # updated models: a factor of two row blocks, listed with their
        # rows (file format 12)
        for name, fit in UPDATED.items():
            r = d.req("POST", f"/v1/models/{name}/fit",
                      dict(fit, kernel=KERNELS["rbf"], X=X[:4], y=fit["y"][:4]))
            u = d.req("POST", f"/v1/models/{name}/update",
                      {"X": X[4:], "y": fit["y"][4:]})
            if r.status != 201 or u.status != 201:
                print(f"{name}: {r} {u}", file=sys.stderr)
                continue
            seed(name)
            made += 1
        for lname, (kname, text) in LIBSVM.items():
            name = f"{lname}_{kname}"
            r = d.req("POST", f"/v1/models/{name}/import", text.encode(),
                      headers=[("Content-Type", "text/plain")])
            if r.status != 201:
                print(f"{name}: {r}", file=sys.stderr)
                continue
            data = seed(name)
            pre = with_pre(data, center_y=lname == "libsvmsvr")
            with open(os.path.join(args.out, f"{lname}pre_{kname}"), "wb") as f:
                f.write(pre)
            made += 2
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{made} files in {args.out}")
    return 0 if made else 1


if __name__ == "__main__":
    sys.exit(main())
