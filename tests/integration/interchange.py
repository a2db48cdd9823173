#!/usr/bin/python3
"""Models in and out over HTTP: LIBSVM model files and kmserve's own (kmm).

LIBSVM import: for c_svc (binary with labels -1/+1 and 5/2, three classes
first seen in the order 3, 1, 2) and epsilon_svr, with each of the linear,
polynomial, rbf and sigmoid kernels, svm-train (LIBSVM's own tool, run
here on seeded data written in its sparse format) writes a model; the
import's predicted labels equal svm-predict's output exactly, its decision
values equal LIBSVM's own (python3-libsvm's svm_predict) to 1e-12 relative
(floor 1), mapped to kmserve's ascending class order with the sign of each
swapped pair flipped, and equal decision values computed from the file's
text with numpy from the definition to the same tolerance; svr's
predictions equal svm-predict's %.17g values to 1e-12. Binary probabilities
(-b 1) and those of classes first seen in ascending order equal LIBSVM's to
1e-9 (coupling of 3+ classes iterates in class order, so another order
agrees only to its stopping tolerance: not compared).

LIBSVM export: models fitted here (svc of 2 and 3 integer classes, with
and without probability, and svr, each kernel) exported as LIBSVM text
predict identically in svm-predict on held-out rows: labels equal, svr
values to 1e-12 relative; LIBSVM's decision values equal kmserve's to
1e-12; the exported file imports back to predictions equal to the bit.
Models LIBSVM cannot hold (krr, laplacian kernel, preprocessing, string
labels) are 409 naming why.

Precomputed kernels (LIBSVM's -t 4, rows "0:i 1:K(xi,x1) ... L:K(xi,xL)"),
on an rbf Gram computed here with numpy, for c_svc of 2 (with -b 1) and 3
classes (first seen 3, 1, 2) and epsilon_svr: svm-train's model imported
with n_training=L predicts svm-predict's labels exactly (svr: its values
to 1e-12), LIBSVM's decision values (python3-libsvm) and numpy's from
the file's "0:i" lines to 1e-12, binary probabilities to 1e-9; support_ is
the file's rows minus 1. kmserve's own precomputed fit exported as LIBSVM
text has SV lines "0:i" (i = support_ + 1) and svm-predict's labels (svr:
values to 1e-12) and LIBSVM's decision values (to 1e-12) on the test rows
equal kmserve's; it imports back to predictions equal to the bit. Fitted
with tol 1e-9 (svm-train -e 1e-9) kmserve's and svm-train's decision
values agree to 1e-6 (the same optimum). The import's errors: n_training
missing, below the largest row, given with another kernel, n_features
with precomputed, SV lines other than "coefficients 0:i".

kmm: a model fitted on daemon A, downloaded, uploaded to daemon B (both on
loopback) predicts equal to the bit; the download is the file A keeps on
disk, byte for byte; B keeps it across a restart. A corrupted upload (one
flipped byte, truncated, wrong magic) is 400 and B's model keeps serving
unchanged.

Hostile uploads: each fault of a list (counts that disagree, indices out
of order or 0, non-finite and hex numbers, unknown or repeated fields,
unsupported types and kernels, gamma 0, binary bytes, ...) is 400 naming
the line and field, and creates nothing; wrong media types 415; unknown
query parameters 400; a body over --max-body-mb 413; a sparse file whose
dense form exceeds the memory budget 413.

Usage, from the project root:
    /usr/bin/python3 tests/integration/interchange.py --server build/kmserve
Needs libsvm-tools (svm-train, svm-predict), python3-libsvm and numpy.
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

import svmutil  # noqa: E402  (python3-libsvm: LIBSVM's own decision values)

KERNELS = {0: "linear", 1: "polynomial", 2: "rbf", 3: "sigmoid"}
# svm-train's kernel options: gamma, coef0, degree where they apply.
KOPTS = {0: [], 1: ["-g", "0.3", "-r", "0.5", "-d", "3"],
         2: ["-g", "0.4"], 3: ["-g", "0.05", "-r", "-0.2"]}
TOL = 1e-12


def close(a, b, tol=TOL):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= tol * np.maximum(1, np.abs(b))))


# ---------------------------------------------------------------- data

def make_rows(rng, n, d, labels):
    """n rows of d features, class c's centre at c along the first axes,
    values with 6 significant digits, about a fifth of them 0 (left out
    of the sparse text)."""
    rows, ys = [], []
    for i in range(n):
        y = labels[i % len(labels)]
        x = [0.0 if rng.random() < 0.2 else
             float(f"{rng.gauss(0.3 * y * (j % 2 == 0), 1):.6g}") for j in range(d)]
        rows.append(x)
        ys.append(y)
    return rows, ys


def write_sparse(path, X, y):
    with open(path, "w") as f:
        for row, t in zip(X, y):
            feats = " ".join(f"{j + 1}:{v!r}" for j, v in enumerate(row) if v != 0)
            f.write(f"{t!r} {feats}\n" if isinstance(t, float) else f"{t} {feats}\n")


def libsvm_rows(X):
    return [{j + 1: v for j, v in enumerate(r) if v != 0} for r in X]


# ---------------------------------------------------------------- LIBSVM text, from the definition

def parse_model(text):
    """The model file as numpy arrays (LIBSVM's order)."""
    head, sv = {}, []
    lines = text.splitlines()
    i = 0
    while lines[i] != "SV":
        k, *v = lines[i].split()
        head[k] = v
        i += 1
    k = int(head["nr_class"][0])
    ncoef = k - 1
    for line in lines[i + 1:]:
        if line.strip():
            t = line.split()
            sv.append(([float(c) for c in t[:ncoef]],
                       {int(p.split(":")[0]): float(p.split(":")[1]) for p in t[ncoef:]}))
    return head, sv


def numpy_decisions(text, X):
    """Decision values of every pair, LIBSVM's pair order, from the file."""
    head, sv = parse_model(text)
    d = len(X[0])
    S = np.zeros((len(sv), d))
    for s, (_, feats) in enumerate(sv):
        for j, v in feats.items():
            S[s, j - 1] = v
    C = np.array([c for c, _ in sv]).reshape(len(sv), -1)
    Xa = np.array(X, float)
    kt = head["kernel_type"][0]
    g = float(head.get("gamma", ["0"])[0])
    r = float(head.get("coef0", ["0"])[0])
    dot = Xa @ S.T
    if kt == "linear":
        K = dot
    elif kt == "polynomial":
        K = (g * dot + r) ** int(head["degree"][0])
    elif kt == "rbf":
        K = np.exp(-g * ((Xa ** 2).sum(1)[:, None] + (S ** 2).sum(1)[None, :] - 2 * dot))
    else:
        K = np.tanh(g * dot + r)
    return file_decisions(head, K, C)


def file_decisions(head, K, C):
    """Every pair's decision values (LIBSVM's order) from a model file's
    header, the kernel values K (rows x SVs) and its coefficients C."""
    rho = [float(v) for v in head["rho"]]
    if head["svm_type"][0] == "epsilon_svr":
        return (K @ C[:, 0] - rho[0])[:, None]
    k = int(head["nr_class"][0])
    nsv = [int(v) for v in head["nr_sv"]]
    start = np.concatenate([[0], np.cumsum(nsv)])
    out = []
    for i in range(k):
        for j in range(i + 1, k):
            si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
            out.append(K[:, si] @ C[si, j - 1] + K[:, sj] @ C[sj, i] - rho[len(out)])
    return np.array(out).T


def to_kmserve(dec, labels):
    """LIBSVM pair values (rows x pairs, label order `labels`) in
    kmserve's pairs of the sorted labels, each positive for its first
    (smaller) class."""
    k, order = len(labels), sorted(labels)
    pair = {}
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            pair[(i, j)] = p
            p += 1
    cols = []
    for a in range(k):
        for b in range(a + 1, k):
            i, j = labels.index(order[a]), labels.index(order[b])
            cols.append(dec[:, pair[(i, j)]] if i < j else -dec[:, pair[(j, i)]])
    return np.array(cols).T


def api_decisions(d, name, X):
    """The API's decision values as kmserve's pair values (rows x pairs):
    a binary answer is one value per row with scikit-learn's sign."""
    v = np.array(d.req("POST", f"/v1/models/{name}/predict",
                       {"X": X, "output": "decision_function"}).json()["predictions"])
    return -v[:, None] if v.ndim == 1 else v


def svm_train(tmp, data, model, opts):
    subprocess.run(["svm-train", "-q"] + opts + [data, model], check=True, timeout=120)
    with open(model) as f:
        return f.read()


def svm_predict(tmp, data, model, opts=()):
    out = os.path.join(tmp, "predict.out")
    subprocess.run(["svm-predict", "-q"] + list(opts) + [data, model, out], check=True,
                   timeout=120)
    with open(out) as f:
        return f.read().split("\n")


def import_text(d, name, text, query="?format=libsvm", ctype="text/plain"):
    return d.req("POST", f"/v1/models/{name}/import{query}", text.encode(),
                 headers=[("Content-Type", ctype)])


# ---------------------------------------------------------------- LIBSVM import

def scenario_import(d, tmp):
    rng = random.Random(16)
    cases = [("svc2", [1, -1], "c_svc"), ("svc52", [5, 2], "c_svc"),
             ("svc3", [3, 1, 2], "c_svc"), ("svc3a", [1, 2, 3], "c_svc"),
             ("svr", None, "epsilon_svr")]
    for case, labels, kind in cases:
        X, y = make_rows(rng, 90, 5, labels or [0])
        if labels is None:
            y = [round(sum(r[:3]) + rng.gauss(0, 0.1), 6) for r in X]
        Xt, _ = make_rows(rng, 40, 5, labels or [0])
        train, test = os.path.join(tmp, f"{case}.train"), os.path.join(tmp, f"{case}.test")
        write_sparse(train, X, y)
        write_sparse(test, Xt, [labels[0] if labels else 0.0] * len(Xt))
        for t, kname in KERNELS.items():
            prob = kind == "c_svc" and case != "svc3" and t in (0, 2)
            opts = ["-s", "0" if kind == "c_svc" else "3", "-t", str(t), "-c", "2"] + KOPTS[t]
            if prob:
                opts += ["-b", "1"]
            mfile = os.path.join(tmp, f"{case}-{t}.model")
            text = svm_train(tmp, train, mfile, opts)
            name = f"{case}-{kname}"
            r = import_text(d, name, text)
            tag = f"import {case} {kname}"
            if not check(r.status == 201, f"{tag}: 201", r):
                continue
            meta = r.json()["model"]
            check(meta["algorithm"] == ("svc" if labels else "svr") and
                  meta["kernel"]["type"] == kname and
                  meta["training"].get("imported_from") == "libsvm" and
                  meta["n_features"] == 5 and
                  (labels is None or meta["classes"] == sorted(labels)),
                  f"{tag}: metadata (algorithm, kernel, imported_from, classes)", meta)
            lib = svmutil.svm_load_model(mfile)
            _, _, ldec = svmutil.svm_predict([0] * len(Xt), libsvm_rows(Xt), lib, "-q")
            ldec = np.array(ldec)
            ndec = numpy_decisions(text, Xt)
            lines = svm_predict(tmp, test, mfile)
            if labels is None:
                want = [float(v) for v in lines if v]
                got = d.req("POST", f"/v1/models/{name}/predict", {"X": Xt}).json()["predictions"]
                check(close(got, want), f"{tag}: predictions equal svm-predict's to 1e-12",
                      (got[:3], want[:3]))
                check(close(got, ldec[:, 0]) and close(got, ndec[:, 0]),
                      f"{tag}: equal LIBSVM's and numpy's decision values to 1e-12",
                      (got[:3], list(ldec[:3, 0]), list(ndec[:3, 0])))
                continue
            lorder = lib.get_labels()
            want = [int(float(v)) for v in lines if v]
            got = d.req("POST", f"/v1/models/{name}/predict", {"X": Xt}).json()["predictions"]
            check(got == want, f"{tag}: labels equal svm-predict's", (got[:10], want[:10]))
            if lorder != sorted(lorder):
                # LIBSVM breaks tied votes by its label order, kept as the
                # model's vote order; an export writes that order back.
                r = d.req("GET", f"/v1/models/{name}/export?format=libsvm")
                back = os.path.join(tmp, "back.model")
                with open(back, "wb") as f:
                    f.write(r.raw)
                again = [int(float(v)) for v in svm_predict(tmp, test, back) if v]
                line = "\nlabel " + " ".join(map(str, lorder)) + "\n"
                check(r.status == 200 and line in r.body and again == want,
                      f"{tag}: exported, LIBSVM's label order and labels come back", r)
            kd = api_decisions(d, name, Xt)
            check(close(kd, to_kmserve(ldec, lorder)),
                  f"{tag}: decision values equal LIBSVM's to 1e-12 (label order {lorder})",
                  (kd[:2].tolist(), to_kmserve(ldec, lorder)[:2].tolist()))
            check(close(kd, to_kmserve(ndec, lorder)),
                  f"{tag}: decision values equal numpy's from the file to 1e-12")
            if prob:
                _, _, lp = svmutil.svm_predict([0] * len(Xt), libsvm_rows(Xt), lib, "-q -b 1")
                lp = np.array(lp)[:, [lorder.index(c) for c in sorted(lorder)]]
                kp = np.array(d.req("POST", f"/v1/models/{name}/predict",
                                    {"X": Xt, "output": "probability"}).json()["predictions"])
                check(close(kp, lp, 1e-9), f"{tag}: probabilities equal LIBSVM's to 1e-9",
                      (kp[:2].tolist(), lp[:2].tolist()))


# ---------------------------------------------------------------- LIBSVM export

def fit(d, name, algorithm, kernel, X, y, **params):
    return d.req("POST", f"/v1/models/{name}/fit",
                 {"algorithm": algorithm, "kernel": kernel, "X": X, "y": y,
                  "params": params})


def scenario_export(d, tmp):
    rng = random.Random(61)
    kernels = {"linear": {"type": "linear"},
               "polynomial": {"type": "polynomial", "gamma": 0.3, "coef0": 1, "degree": 2},
               "rbf": {"type": "rbf", "gamma": 0.5},
               "sigmoid": {"type": "sigmoid", "gamma": 0.05, "coef0": -0.1}}
    for case, labels in (("e2", [4, 7]), ("e3", [2, 0, 1]), ("er", None)):
        X, y = make_rows(rng, 80, 4, labels or [0])
        if labels is None:
            y = [sum(r[:2]) + rng.gauss(0, 0.1) for r in X]
        Xt, _ = make_rows(rng, 30, 4, labels or [0])
        test = os.path.join(tmp, f"{case}.test")
        write_sparse(test, Xt, [labels[0] if labels else 0.0] * len(Xt))
        for kname, kern in kernels.items():
            name = f"{case}-{kname}"
            params = {"C": 3}
            if labels and kname in ("linear", "rbf"):
                params["probability"] = True
            r = fit(d, name, "svc" if labels else "svr", kern, X, y, **params)
            tag = f"export {case} {kname}"
            if not check(r.status == 201, f"{tag}: fit", r):
                continue
            r = d.req("GET", f"/v1/models/{name}/export?format=libsvm")
            if not check(r.status == 200 and r.headers.get("content-type", "").startswith("text/plain"),
                         f"{tag}: 200 text/plain", r):
                continue
            mfile = os.path.join(tmp, f"{name}.model")
            with open(mfile, "wb") as f:
                f.write(r.raw)
            lines = [v for v in svm_predict(tmp, test, mfile) if v]
            got = d.req("POST", f"/v1/models/{name}/predict", {"X": Xt}).json()["predictions"]
            if labels:
                check([int(float(v)) for v in lines] == got,
                      f"{tag}: svm-predict's labels equal kmserve's", (lines[:8], got[:8]))
            else:
                check(close([float(v) for v in lines], got),
                      f"{tag}: svm-predict's values equal kmserve's to 1e-12", (lines[:3], got[:3]))
            lib = svmutil.svm_load_model(mfile)
            _, _, ldec = svmutil.svm_predict([0] * len(Xt), libsvm_rows(Xt), lib, "-q")
            if labels:
                check(lib.get_labels() == sorted(labels) and
                      close(api_decisions(d, name, Xt), np.array(ldec)),
                      f"{tag}: LIBSVM's decision values equal kmserve's to 1e-12")
            if "probability" in params:
                _, _, lp = svmutil.svm_predict([0] * len(Xt), libsvm_rows(Xt), lib, "-q -b 1")
                kp = d.req("POST", f"/v1/models/{name}/predict",
                           {"X": Xt, "output": "probability"}).json()["predictions"]
                check(close(kp, lp, 1e-9), f"{tag}: LIBSVM's probabilities equal kmserve's to 1e-9")
            r = import_text(d, name + "-back", r.body)
            back = d.req("POST", f"/v1/models/{name}-back/predict", {"X": Xt}).json()
            check(r.status == 201 and back and back["predictions"] == got,
                  f"{tag}: the file imports back to the same predictions, bit for bit", r)
    # What LIBSVM cannot hold.
    X, y = make_rows(rng, 30, 3, [0, 1])
    fit(d, "k-krr", "krr", {"type": "rbf"}, X, [float(v) for v in y])
    fit(d, "k-lap", "svc", {"type": "laplacian"}, X, y)
    fit(d, "k-str", "svc", {"type": "rbf"}, X, ["a" if v else "b" for v in y])
    fit(d, "k-frac", "svc", {"type": "rbf"}, X, [0.5 if v else 1 for v in y])
    d.req("POST", "/v1/models/k-pre/fit", {"algorithm": "svc", "kernel": {"type": "rbf"},
                                           "X": X, "y": y, "preprocess": {"scale": "standardize"}})
    for name, text in (("k-krr", "this model is krr"), ("k-lap", "no laplacian kernel"),
                       ("k-str", "label \\\"a\\\" is not one"),
                       ("k-frac", "label \\\"0.5\\\" is not one"),
                       ("k-pre", "preprocess.scale")):
        r = d.req("GET", f"/v1/models/{name}/export?format=libsvm")
        check(r.status == 409 and text in r.body, f"export {name}: 409 ({text})", r)
    for q, text in (("", "format is missing"), ("?format=xml", "format must be libsvm or kmm"),
                    ("?format=kmm&n_features=3", "'n_features' is not known")):
        r = d.req("GET", f"/v1/models/k-krr/export{q}")
        check(r.status == 400 and text in r.body, f"export{q}: 400 ({text})", r)
    r = d.req("GET", "/v1/models/none/export?format=kmm")
    check(r.status == 404, "export of no model: 404", r)


# ---------------------------------------------------------------- hostile LIBSVM files

GOOD = """svm_type c_svc
kernel_type rbf
gamma 0.5
nr_class 3
total_sv 4
rho 0.1 -0.2 0.3
label 3 1 2
nr_sv 2 1 1
SV
1 0.5 1:0.5 3:-1
-1 0.25 2:1
0.5 -0.5 1:1 2:2
-0.5 -0.25 3:0.125
"""


def mutate(old, new):
    assert old in GOOD, old
    return GOOD.replace(old, new, 1)


HOSTILE = [
    ("empty body", "", "no line 'SV'"),
    ("no SV line", GOOD.split("SV\n")[0], "no line 'SV'"),
    ("nr_class against label", mutate("label 3 1 2", "label 3 1"), "line 7, label: 2 values; 3 expected"),
    ("nr_class against rho", mutate("rho 0.1 -0.2 0.3", "rho 0.1 -0.2 0.3 0.4"), "line 6, rho: more than 3 values"),
    ("nr_sv against total_sv", mutate("nr_sv 2 1 1", "nr_sv 2 1 2"), "line 8, nr_sv: adds up to 5; total_sv is 4"),
    ("fewer SV lines than total_sv", GOOD.rsplit("-0.5 -0.25", 1)[0], "3 SV lines; total_sv is 4"),
    ("more SV lines", GOOD + "1 1 1:1\n", "line 14, SV: more SV lines than total_sv"),
    ("coefficient count", mutate("-1 0.25 2:1", "-1 2:1"), "line 11, SV 2: 2 coefficients expected"),
    ("index 0", mutate("2:1", "0:1"), "line 11, SV 2: index '0' is not an integer from 1"),
    ("descending indices", mutate("1:1 2:2", "2:2 1:1"), "line 12, SV 3: index 1 after 2"),
    ("repeated index", mutate("1:1 2:2", "2:1 2:2"), "line 12, SV 3: index 2 after 2"),
    ("index too large", mutate("2:1", "16777217:1"), "index '16777217' is not an integer from 1 to 16777216"),
    ("nan value", mutate("3:0.125", "3:nan"), "line 13, SV 4: the value of index 3"),
    ("inf coefficient", mutate("-0.5 -0.25", "-inf -0.25"), "line 13, SV 4: coefficient 1 '-inf'"),
    ("hex number", mutate("gamma 0.5", "gamma 0x1p-1"), "line 3, gamma: value 1 '0x1p-1'"),
    ("overflowing number", mutate("rho 0.1", "rho 1e999"), "line 6, rho: value 1 '1e999'"),
    ("gamma 0", mutate("gamma 0.5", "gamma 0"), "line 3, gamma: 0 is not > 0"),
    ("degree too large", mutate("kernel_type rbf\ngamma 0.5", "kernel_type polynomial\ndegree 65\ngamma 0.5\ncoef0 1"),
     "line 3, degree: value 1 '65' is not an integer from 0 to 64"),
    ("degree on rbf", mutate("gamma 0.5", "gamma 0.5\ndegree 3"), "line 4, degree: not expected with kernel_type rbf"),
    ("unknown field", mutate("gamma 0.5", "gamma 0.5\ncolour blue"), "line 4, line: unknown field 'colour'"),
    ("repeated field", mutate("gamma 0.5", "gamma 0.5\ngamma 0.5"), "line 4, gamma: given twice"),
    ("nu_svc", mutate("c_svc", "nu_svc"), "svm_type: 'nu_svc' is not supported"),
    ("unknown kernel", mutate("kernel_type rbf", "kernel_type laplacian"),
     "kernel_type: 'laplacian' is not supported; kmserve imports linear, polynomial, rbf, sigmoid and precomputed"),
    ("duplicate label", mutate("label 3 1 2", "label 3 1 3"), "line 7, label: 3 appears twice"),
    ("label not an integer", mutate("label 3 1 2", "label 3 1 2.5"), "label: value 3 '2.5'"),
    ("probA without probB", mutate("nr_sv", "probA 1 2 3\nnr_sv"), "probB: missing"),
    ("nr_class too large", mutate("nr_class 3", "nr_class 257"), "nr_class: value 1 '257' is not an integer from 2 to 256"),
    ("negative total_sv", mutate("total_sv 4", "total_sv -4"), "total_sv: value 1 '-4'"),
    ("NUL byte", mutate("gamma 0.5", "gamma 0.5\x00"), "line 3, line: byte 10 is 0x00"),
    ("non-ASCII byte", mutate("gamma 0.5", "gamma 0.5\u00e9"), "line 3, line: byte 10 is 0xc3"),
    ("empty header line", mutate("gamma 0.5\n", "gamma 0.5\n\n"), "line 4, line: empty line in the header"),
    ("svr with labels", mutate("c_svc", "epsilon_svr"), "nr_class: value 1 '3' is not an integer from 2 to 2"),
    ("text after SV", mutate("SV\n", "SV 1\n"), "line 9, SV: nothing may follow"),
    ("missing nr_sv", mutate("nr_sv 2 1 1\n", ""), "nr_sv: missing"),
    ("empty line among SVs", mutate("-1 0.25 2:1\n", "\n-1 0.25 2:1\n"), "line 11, SV 2: 2 coefficients expected"),
    ("not index:value", mutate("2:1", "2"), "line 11, SV 2: '2' is not index:value"),
]


def scenario_hostile(d, tmp):
    r = import_text(d, "good", GOOD)
    check(r.status == 201, "the base file of the hostile cases imports", r)
    for what, text, expect in HOSTILE:
        r = import_text(d, "hostile", text)
        check(r.status == 400 and expect in r.body, f"hostile LIBSVM ({what}): 400 '{expect}'", r)
    check(d.req("GET", "/v1/models/hostile").status == 404, "hostile LIBSVM: nothing created")
    r = import_text(d, "good", GOOD, "?format=libsvm&n_features=4")
    check(r.status == 201 and r.json()["model"]["n_features"] == 4 and
          r.json()["model"]["version"] == 2, "n_features=4 sets the feature count; version 2", r)
    for q, text in (("?n_features=0", "n_features must be an integer from 1"),
                    ("?n_features=2", "n_features: 2 is below the largest feature index in the file, 3"),
                    ("?n_features=16777217", "n_features must be an integer from 1 to 16777216"),
                    ("?verbose=1", "'verbose' is not known"),
                    ("?format=csv", "format must be libsvm or kmm")):
        r = import_text(d, "good", GOOD, q)
        check(r.status == 400 and text in r.body, f"import{q}: 400 ({text})", r)
    for q, ctype, text in (("?format=libsvm", "application/json", "Content-Type must be text/plain"),
                           ("?format=kmm", "text/plain", "format=kmm needs Content-Type application/octet-stream"),
                           ("?format=libsvm", "application/octet-stream", "format=libsvm needs Content-Type text/plain")):
        r = import_text(d, "good", GOOD, q, ctype)
        check(r.status == 415 and text in r.body, f"import{q} as {ctype}: 415", r)
    r = import_text(d, "bad.name!", GOOD)
    check(r.status == 400, "import under a bad name: 400", r)
    # A sparse file whose dense form is enormous: refused before building it.
    big = mutate("-0.5 -0.25 3:0.125", "-0.5 -0.25 3:0.125 16777216:1")
    big = big.replace("total_sv 4", "total_sv 4005").replace("nr_sv 2 1 1", "nr_sv 2 1 4002")
    big += "".join(f"0.5 0.5 {16777216 - i}:1\n" for i in range(4000, 1, -1))
    big += "0.5 0.5 1:1\n0.5 0.5 2:1\n"
    r = import_text(d, "huge", big)
    check(r.status == 413 and "the import needs an estimated" in r.body,
          "a file of 4005 SVs x 2^24 features (1 TiB dense): 413 before it is built", r)


# ---------------------------------------------------------------- precomputed (-t 4)

def gram_rows(K, labels, train):
    """LIBSVM's precomputed rows: "label 0:i 1:K(x,x1) ... L:K(x,xL)", i
    the row's number from 1 for training rows, 0 (any value) for tests."""
    return "".join(f"{t} 0:{i + 1 if train else 0} " +
                   " ".join(f"{j + 1}:{v!r}" for j, v in enumerate(row)) + "\n"
                   for i, (row, t) in enumerate(zip(K.tolist(), labels)))


def pre_dicts(K):
    """The rows as python3-libsvm takes precomputed ones: {0: id, j: K}."""
    return [dict([(0, 0)] + [(j + 1, v) for j, v in enumerate(row)]) for row in K.tolist()]


def pre_decisions(text, Kt):
    """Decision values of every pair (LIBSVM's order) from the file's
    coefficients and 0:i lines: sum_s coef_s K(x, x_i(s)) - rho."""
    head, sv = parse_model(text)
    assert all(list(feats) == [0] for _, feats in sv), "SV lines of 0:i only"
    idx = [int(feats[0]) for _, feats in sv]
    C = np.array([c for c, _ in sv]).reshape(len(sv), -1)
    return file_decisions(head, Kt[:, np.array(idx) - 1], C)


def pre_case(rng, labels):
    n = 70
    X = np.array([[rng.gauss(0.4 * (labels[i % len(labels)] if labels else 0), 1)
                   for _ in range(4)] for i in range(n + 25)])
    if labels:
        y = [labels[i % len(labels)] for i in range(n)]
    else:
        y = [round(float(r[0] + 0.5 * r[1]) + rng.gauss(0, 0.1), 6) for r in X[:n]]
    sq = (X ** 2).sum(1)
    G = np.exp(-0.3 * (sq[:, None] + sq[None, :] - 2 * X @ X.T))
    return G[:n, :n], G[n:, :n], y


def compare_pre(d, tmp, tag, name, text, mfile, Kt, labels, test):
    """kmserve's model name against LIBSVM's file text (mfile) on Kt."""
    lib = svmutil.svm_load_model(mfile)
    _, _, ldec = svmutil.svm_predict([0] * len(Kt), pre_dicts(Kt), lib, "-q")
    ldec, ndec = np.array(ldec), pre_decisions(text, Kt)
    lines = [v for v in svm_predict(tmp, test, mfile) if v]
    got = d.req("POST", f"/v1/models/{name}/predict", {"X": Kt.tolist()}).json()["predictions"]
    if not labels:
        check(close(got, [float(v) for v in lines]) and close(got, ldec[:, 0]) and
              close(got, ndec[:, 0]), f"{tag}: values equal svm-predict's, LIBSVM's and "
              "numpy's from the file to 1e-12", (got[:3], lines[:3], ndec[:3, 0].tolist()))
        return got
    lorder = lib.get_labels()
    check(got == [int(float(v)) for v in lines], f"{tag}: labels equal svm-predict's",
          (got[:10], lines[:10]))
    kd = api_decisions(d, name, Kt.tolist())
    check(close(kd, to_kmserve(ldec, lorder)) and close(kd, to_kmserve(ndec, lorder)),
          f"{tag}: decision values equal LIBSVM's and numpy's from the file to 1e-12",
          (kd[:2].tolist(), to_kmserve(ldec, lorder)[:2].tolist()))
    if "probA" in text and len(labels) == 2:
        _, _, lp = svmutil.svm_predict([0] * len(Kt), pre_dicts(Kt), lib, "-q -b 1")
        lp = np.array(lp)[:, [lorder.index(c) for c in sorted(lorder)]]
        kp = d.req("POST", f"/v1/models/{name}/predict",
                   {"X": Kt.tolist(), "output": "probability"}).json()["predictions"]
        check(close(kp, lp, 1e-9), f"{tag}: probabilities equal LIBSVM's to 1e-9")
    return got


def scenario_precomputed(d, tmp):
    rng = random.Random(44)
    for case, labels in (("p2", [1, -1]), ("p3", [3, 1, 2]), ("pr", None)):
        K, Kt, y = pre_case(rng, labels)
        n = len(K)
        train, test = os.path.join(tmp, f"{case}.train"), os.path.join(tmp, f"{case}.test")
        with open(train, "w") as f:
            f.write(gram_rows(K, y, True))
        with open(test, "w") as f:
            f.write(gram_rows(Kt, [labels[0] if labels else 0.0] * len(Kt), False))
        svr = labels is None
        opts = ["-s", "3" if svr else "0", "-t", "4", "-c", "2"] + (["-b", "1"] if case == "p2" else [])
        mfile = os.path.join(tmp, f"{case}.model")
        text = svm_train(tmp, train, mfile, opts)
        # LIBSVM's model in kmserve
        tag = f"precomputed import {case}"
        r = import_text(d, f"{case}-in", text, f"?format=libsvm&n_training={n}")
        if not check(r.status == 201, f"{tag}: 201 with n_training={n}", r):
            continue
        meta = r.json()["model"]
        check(meta["kernel"] == {"type": "precomputed"} and meta["n_samples"] == n and
              meta.get("input") == {"kind": "precomputed", "n_training": n},
              f"{tag}: metadata (precomputed kernel, n_samples and input.n_training {n})", meta)
        compare_pre(d, tmp, tag, f"{case}-in", text, mfile, Kt, labels, test)
        co = d.req("GET", f"/v1/models/{case}-in/coefficients").json()["coefficients"]
        rows = sorted(int(line.split()[-1][2:]) - 1 for line in text.split("SV\n")[1].splitlines())
        check(sorted(co["support_"]["values"]) == rows and
              co["support_vectors_"]["shape"] == [0, 0],
              f"{tag}: support_ are the file's 0:i minus 1; no support vectors (scikit-learn's)")
        r = d.req("POST", f"/v1/models/{case}-in/predict", {"X": Kt[:, 1:].tolist()})
        check(r.status == 400 and f"one kernel value per training row: {n}" in r.body,
              f"{tag}: rows of {n - 1} values: 400", r)
        # kmserve's model in LIBSVM
        tag = f"precomputed export {case}"
        params = {"C": 2, **({"epsilon": 0.1} if svr else {})}
        if case == "p2":
            params["probability"] = True
        r = fit(d, f"{case}-fit", "svr" if svr else "svc", {"type": "precomputed"},
                K.tolist(), y, **params)
        if not check(r.status == 201, f"{tag}: fit", r):
            continue
        r = d.req("GET", f"/v1/models/{case}-fit/export?format=libsvm")
        out = os.path.join(tmp, f"{case}-fit.model")
        with open(out, "wb") as f:
            f.write(r.raw)
        sup = d.req("GET", f"/v1/models/{case}-fit/coefficients").json()["coefficients"]["support_"]
        lines = r.body.split("SV\n")[1].splitlines()
        check(r.status == 200 and "kernel_type precomputed\n" in r.body and "gamma" not in r.body
              and [int(v.split()[-1][2:]) for v in lines] == [i + 1 for i in sup["values"]],
              f"{tag}: kernel_type precomputed, SV lines 0:i with i = support_ + 1", r.body[:300])
        got = compare_pre(d, tmp, tag, f"{case}-fit", r.body, out, Kt, labels, test)
        r = import_text(d, f"{case}-back", r.body, f"?format=libsvm&n_training={n}")
        back = d.req("POST", f"/v1/models/{case}-back/predict", {"X": Kt.tolist()}).json()
        check(r.status == 201 and back and back["predictions"] == got,
              f"{tag}: imports back to the same predictions, bit for bit", r)
        # the same problem solved by both, tightly
        tight = os.path.join(tmp, f"{case}-tight.model")
        ttext = svm_train(tmp, train, tight, opts[:6] + ["-e", "1e-9"])
        params.pop("probability", None)
        fit(d, f"{case}-tight", "svr" if svr else "svc", {"type": "precomputed"},
            K.tolist(), y, **params, tol=1e-9)
        theirs = pre_decisions(ttext, Kt)
        if svr:
            ours = np.array(d.req("POST", f"/v1/models/{case}-tight/predict",
                                  {"X": Kt.tolist()}).json()["predictions"])[:, None]
        else:
            ours = api_decisions(d, f"{case}-tight", Kt.tolist())
            theirs = to_kmserve(theirs, [int(v) for v in parse_model(ttext)[0]["label"]])
        check(close(ours, theirs, 1e-6),
              f"precomputed {case}: kmserve's fit and svm-train's (tol 1e-9) agree to 1e-6",
              float(np.max(np.abs(ours - theirs))))


PRE_GOOD = """svm_type c_svc
kernel_type precomputed
nr_class 2
total_sv 3
rho 0.1
label 1 -1
nr_sv 2 1
SV
1 0:1 
0.5 0:3 
-1.5 0:2 
"""

PRE_HOSTILE = [
    ("no n_training", PRE_GOOD, "", "n_training: missing",),
    ("n_training below a row", PRE_GOOD, "&n_training=2",
     "line 10, SV 2: 0:3 is not a training row number from 1 to 2 (n_training)"),
    ("n_features", PRE_GOOD, "&n_features=4", "n_features: does not apply to kernel_type precomputed"),
    ("n_training of rbf", GOOD, "&n_training=4", "n_training: applies to kernel_type precomputed only"),
    ("both widths", PRE_GOOD, "&n_training=4&n_features=4", "n_features and n_training exclude each other"),
    ("gamma", PRE_GOOD.replace("nr_class", "gamma 0.5\nnr_class"), "&n_training=4",
     "line 3, gamma: not expected with kernel_type precomputed"),
    ("a feature after 0:i", PRE_GOOD.replace("0.5 0:3", "0.5 0:3 1:0.5"), "&n_training=4",
     "line 10, SV 2: '1:0.5' after 0:3"),
    ("row 0", PRE_GOOD.replace("0:3", "0:0"), "&n_training=4",
     "line 10, SV 2: 0:0 is not a training row number from 1 to 4"),
    ("a fraction", PRE_GOOD.replace("0:3", "0:2.5"), "&n_training=4", "0:2.5 is not a training row number"),
    ("no 0:i", PRE_GOOD.replace("0.5 0:3", "0.5 1:3"), "&n_training=4",
     "line 10, SV 2: a precomputed model's SV line ends with 0:i"),
    ("no pair", PRE_GOOD.replace("0.5 0:3", "0.5"), "&n_training=4",
     "line 10, SV 2: a precomputed model's SV line ends with 0:i, i the support vector's "
     "training row numbered from 1; found nothing"),
    ("n_training 0", PRE_GOOD, "&n_training=0", "n_training must be an integer from 1 to 16777215"),
]


def scenario_precomputed_hostile(d, tmp):
    r = import_text(d, "pgood", PRE_GOOD, "?format=libsvm&n_training=4")
    check(r.status == 201 and r.json()["model"]["n_features"] == 5,
          "the precomputed base file imports (n_training=4: rows of 4 values)", r)
    # LIBSVM's value sum_s coef_s K(x, x_i(s)) - rho is positive for its
    # first label, 1, the second sorted one: the API's binary sign.
    Kt = np.array([[0.5, 0.25, 1, 0], [0, 0, 0, 1], [0.1, 0.9, 0.3, 0.2]])
    want = Kt[:, [0, 2, 1]] @ np.array([1, 0.5, -1.5]) - 0.1
    got = d.req("POST", "/v1/models/pgood/predict",
                {"X": Kt.tolist(), "output": "decision_function"}).json()["predictions"]
    check(close(got, want), "the base file's decision values equal its lines' sum by hand",
          (got, want.tolist()))
    for what, text, q, expect in PRE_HOSTILE:
        r = import_text(d, "phostile", text, "?format=libsvm" + q)
        check(r.status == 400 and expect in r.body, f"hostile precomputed LIBSVM ({what}): 400 '{expect}'", r)
    check(d.req("GET", "/v1/models/phostile").status == 404, "hostile precomputed LIBSVM: nothing created")


def scenario_body_limit(server):
    with run.temp_daemon(server, "kmserve-transfer-limit-", "--max-body-mb", "0.001") as d:
        r = import_text(d, "big", GOOD + "".join("1 1 1:1\n" for _ in range(200)))
        check(r.status == 413, "an import over --max-body-mb: 413", r)


# ---------------------------------------------------------------- kmm between servers

def scenario_kmm(server, d_a):
    rng = random.Random(7)
    X, y = make_rows(rng, 60, 4, [1, 2, 3])
    fit(d_a, "moved", "svc", {"type": "rbf", "gamma": 0.3}, X, y, C=2, probability=True)
    d_a.req("POST", "/v1/models/moved-krr/fit", {"algorithm": "krr", "kernel": {"type": "rbf"},
                                                 "X": X, "y": [float(v) for v in y],
                                                 "preprocess": {"scale": "minmax"}})
    Xt, _ = make_rows(rng, 25, 4, [1])
    with run.temp_daemon(server, "kmserve-transfer-b-") as d_b:
        for name, outputs in (("moved", ("label", "decision_function", "probability")),
                              ("moved-krr", (None,))):
            r = d_a.req("GET", f"/v1/models/{name}/export?format=kmm")
            blob = r.raw
            with open(os.path.join(d_a.models, f"{name}.kmm"), "rb") as f:
                on_disk = f.read()
            check(r.status == 200 and r.headers.get("content-type") == "application/octet-stream"
                  and blob == on_disk, f"kmm {name}: the download is A's file, byte for byte", r)
            r = d_b.req("POST", f"/v1/models/{name}/import?format=kmm", blob,
                        headers=[("Content-Type", "application/octet-stream")])
            check(r.status == 201 and r.json()["model"]["version"] == 1,
                  f"kmm {name}: upload to B: 201, version 1", r)
            for out in outputs:
                body = {"X": Xt} if out is None else {"X": Xt, "output": out}
                a = d_a.req("POST", f"/v1/models/{name}/predict", body).json()["predictions"]
                b = d_b.req("POST", f"/v1/models/{name}/predict", body).json()["predictions"]
                check(a == b, f"kmm {name}: B's {out or 'predictions'} equal A's to the bit")
        ma = d_a.req("GET", "/v1/models/moved").json()
        mb = d_b.req("GET", "/v1/models/moved").json()
        same = {k: v for k, v in ma.items() if k not in ("created_at", "version")}
        check(same == {k: v for k, v in mb.items() if k not in ("created_at", "version")},
              "kmm: B's metadata equals A's but for version and created_at")
        good = d_b.req("POST", "/v1/models/moved/predict", {"X": Xt}).json()["predictions"]
        blob = d_a.req("GET", "/v1/models/moved/export?format=kmm").raw
        flipped = bytearray(blob)
        flipped[len(blob) // 2] ^= 0x10
        refit = bytearray(blob[:-4])
        refit[len(refit) // 2] ^= 0x10
        crc_ok = bytes(refit) + zlib.crc32(bytes(refit)).to_bytes(4, "little")
        for what, body, text in (("one flipped byte", bytes(flipped), "checksum mismatch"),
                                 ("truncated", blob[:len(blob) - 9], "the uploaded model file: "),
                                 ("wrong magic", b"KMSX" + blob[4:], "bad magic"),
                                 ("empty", b"", "bad magic"),
                                 ("a flipped byte under a valid checksum", crc_ok,
                                  "the uploaded model file: model file")):
            r = d_b.req("POST", "/v1/models/moved/import?format=kmm", body,
                        headers=[("Content-Type", "application/octet-stream")])
            after = d_b.req("POST", "/v1/models/moved/predict", {"X": Xt}).json()["predictions"]
            ok = r.status == 400 and text in r.body
            if what.startswith("a flipped byte under"):  # may land on a free number: then it loads
                ok = r.status == 400 or r.status == 201
            check(ok and (r.status == 201 or after == good),
                  f"kmm upload ({what}): 400, the old version keeps serving", r)
        r = d_b.req("POST", "/v1/models/moved/import", blob,
                    headers=[("Content-Type", "application/octet-stream")])
        check(r.status == 201 and r.json()["model"]["version"] >= 2,
              "kmm: uploading again (format from the Content-Type) is the next version", r)
        d_b.stop()
        d_b.start()
        check(d_b.req("POST", "/v1/models/moved/predict", {"X": Xt}).json()["predictions"] == good,
              "kmm: B serves the upload after a restart (stored as a fit)")
        r = d_b.req("POST", "/v1/models/libsvm-as-kmm/import?format=kmm", GOOD.encode(),
                    headers=[("Content-Type", "application/octet-stream")])
        check(r.status == 400 and "not a kmserve model" in r.body,
              "a LIBSVM file sent as kmm: 400", r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kmserve-transfer-files-")

    def body(d):
        scenario_import(d, tmp)
        scenario_export(d, tmp)
        scenario_hostile(d, tmp)
        scenario_precomputed(d, tmp)
        scenario_precomputed_hostile(d, tmp)
        scenario_kmm(args.server, d)
        scenario_body_limit(args.server)

    try:
        return run.with_daemon(args.server, "kmserve-transfer-", body)
    finally:
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    sys.exit(main())
