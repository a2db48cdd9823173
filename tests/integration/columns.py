#!/usr/bin/python3
"""Kernels on chosen columns over HTTP ("columns" on a leaf): the
lectures' tensor-product and direct-sum kernels over blocks of mixed
data, against numpy's explicit Gram matrices.

The data: 70 seeded rows (50 fitted, 20 predicted) of 8 columns, three
numeric (0, 1, 2), a category of four levels one-hot (3, 4, 5, 6), and
one more numeric (7).
- krr, each prediction and dual_coef_ equal to numpy's
  np.linalg.solve(K + alpha I, y) and K(T, X) coef to 1e-9 relative, K
  built block by block in numpy from the definitions:
  - rbf(gamma 0.5) on 0, 1, 2, 7 times linear on 3..6 (a product);
  - the same rbf plus 0.5 times the linear (a weighted sum);
  - rbf on 2, 0 (no gamma: 1/2, one over the columns it reads) times a
    normalized polynomial on 0, 1, 2 (degree 2, coef0 1) plus laplacian
    on 7 (sums and products nested);
  - an rbf leaf on columns 1, 7 alone.
  The metadata shows each kernel with its columns (and gamma resolved);
  POST /v1/kernels/gram of the product equals numpy's K(T, X) to 1e-12.
- svc with the product: decision values equal scikit-learn's
  SVC(kernel="precomputed") on numpy's Gram to 1e-6 (tol 1e-9).
- krr's rff solver on an rbf leaf of columns 0, 1: its random_weights_
  are 0 on the other columns (the frequencies are over those columns
  only), and predict equals numpy's from random_weights_, random_offset_
  and coef_ to 1e-9.
- Errors: a column at or past X's width 400 naming it and the width
  (fit and gram route); a column listed twice, negative, a fraction, an
  empty list 400; columns on a sum, on a string kernel (spectrum) and on
  a precomputed kernel 400.
- A restart keeps the columns: metadata equal, predictions equal to the
  bit.
Usage, from the project root:
    /usr/bin/python3 tests/integration/columns.py --server build/kmserve
Needs numpy and scikit-learn. Ends with "N passed, N failed".
"""
import argparse
import os
import sys

import numpy as np
from sklearn.svm import SVC

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

ALPHA = 0.3
NUM, ONEHOT = [0, 1, 2, 7], [3, 4, 5, 6]


def close(a, b, tol):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= tol * np.maximum(1, np.abs(b))))


def worst(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b))) if a.shape == b.shape else f"shapes {a.shape} {b.shape}"


def data():
    rng = np.random.default_rng(2026)
    n = 70
    num = rng.normal(size=(n, 4))
    level = rng.integers(0, 4, size=n)
    onehot = np.eye(4)[level]
    X = np.hstack([num[:, :3], onehot, num[:, 3:]])
    y = np.sin(X[:, 0]) + level * 0.5 + 0.3 * X[:, 7] + 0.05 * rng.normal(size=n)
    return X[:50], X[50:], y[:50], (y[:50] > np.median(y[:50])).astype(int)


# ---------------------------------------------------------------- numpy's kernels

def sqdist(A, B):
    return np.maximum((A ** 2).sum(1)[:, None] + (B ** 2).sum(1)[None, :] - 2 * A @ B.T, 0)


def k_rbf(A, B, cols, gamma):
    return np.exp(-gamma * sqdist(A[:, cols], B[:, cols]))


def k_linear(A, B, cols):
    return A[:, cols] @ B[:, cols].T


def k_poly(A, B, cols, gamma, coef0, degree):
    return (gamma * A[:, cols] @ B[:, cols].T + coef0) ** degree


def k_laplacian(A, B, cols, gamma):
    return np.exp(-gamma * np.abs(A[:, cols][:, None, :] - B[:, cols][None, :, :]).sum(2))


def k_normalized_poly(A, B, cols):
    f = lambda P, Q: k_poly(P, Q, cols, 0.5, 1.0, 2)  # noqa: E731
    da = np.array([f(a[None], a[None])[0, 0] for a in A])
    db = np.array([f(b[None], b[None])[0, 0] for b in B])
    return f(A, B) / np.sqrt(np.outer(da, db))


RBF_NUM = {"type": "rbf", "gamma": 0.5, "columns": NUM}
LIN_OH = {"type": "linear", "columns": ONEHOT}
CASES = {
    "product": ({"type": "product", "kernels": [RBF_NUM, LIN_OH]},
                lambda A, B: k_rbf(A, B, NUM, 0.5) * k_linear(A, B, ONEHOT)),
    "sum": ({"type": "sum", "kernels": [RBF_NUM, LIN_OH], "weights": [1, 0.5]},
            lambda A, B: k_rbf(A, B, NUM, 0.5) + 0.5 * k_linear(A, B, ONEHOT)),
    "nested": ({"type": "sum", "kernels": [
        {"type": "product", "kernels": [
            {"type": "rbf", "columns": [2, 0]},
            {"type": "normalized", "kernels": [
                {"type": "polynomial", "gamma": 0.5, "coef0": 1, "degree": 2,
                 "columns": [0, 1, 2]}]}]},
        {"type": "laplacian", "gamma": 0.7, "columns": [7]}]},
        lambda A, B: k_rbf(A, B, [0, 2], 0.5) * k_normalized_poly(A, B, [0, 1, 2]) +
        k_laplacian(A, B, [7], 0.7)),
    "leaf": ({"type": "rbf", "gamma": 0.8, "columns": [1, 7]},
             lambda A, B: k_rbf(A, B, [1, 7], 0.8)),
}


def resolved(kernel):
    """The kernel as the metadata shows it: every default gamma resolved
    to one over the columns its leaf reads, a sum's weights written."""
    k = dict(kernel)
    if "kernels" in k:
        k["kernels"] = [resolved(p) for p in k["kernels"]]
    if k["type"] == "sum" and "weights" not in k:
        k["weights"] = [1] * len(k["kernels"])
    if k["type"] in ("rbf", "laplacian", "polynomial") and "gamma" not in k:
        k["gamma"] = 1 / len(k["columns"])
    return k


def scenario_krr(d, X, T, y):
    for case, (kernel, f) in CASES.items():
        r = d.req("POST", f"/v1/models/c-{case}/fit", {
            "algorithm": "krr", "kernel": kernel, "params": {"alpha": ALPHA},
            "X": X.tolist(), "y": y.tolist()})
        if not check(r.status == 201, f"{case}: fit", r):
            continue
        meta = r.json()["model"]["kernel"]
        check(meta == resolved(kernel), f"{case}: metadata shows the columns", meta)
        coef = np.linalg.solve(f(X, X) + ALPHA * np.eye(len(X)), y)
        got = np.array(d.req("POST", f"/v1/models/c-{case}/predict",
                             {"X": T.tolist()}).json()["predictions"])
        want = f(T, X) @ coef
        check(close(got, want, 1e-9), f"{case}: predictions equal numpy's solve with the "
              "explicit Gram to 1e-9", worst(got, want))
        dual = d.req("GET", f"/v1/models/c-{case}/coefficients").json()["coefficients"]
        dual = np.array(dual["dual_coef_"]["values"])[:, 0]
        check(close(dual, coef, 1e-9), f"{case}: dual_coef_ equals numpy's to 1e-9",
              worst(dual, coef))
    kernel, f = CASES["product"]
    r = d.req("POST", "/v1/kernels/gram", {"kernel": kernel, "X": T.tolist(), "Z": X.tolist()})
    K = np.array((r.json() or {}).get("K", []))
    check(r.status == 200 and close(K, f(T, X), 1e-12),
          "gram route: the product's K(T, X) equals numpy's to 1e-12", worst(K, f(T, X)))


def scenario_svc(d, X, T, labels):
    kernel, f = CASES["product"]
    r = d.req("POST", "/v1/models/c-svc/fit", {
        "algorithm": "svc", "kernel": kernel, "params": {"C": 2, "tol": 1e-9},
        "X": X.tolist(), "y": labels.tolist()})
    if not check(r.status == 201, "svc with the product: fit", r):
        return
    ref = SVC(kernel="precomputed", C=2, tol=1e-9).fit(f(X, X), labels)
    got = np.array(d.req("POST", "/v1/models/c-svc/predict",
                         {"X": T.tolist(), "output": "decision_function"}).json()["predictions"])
    want = ref.decision_function(f(T, X))
    check(close(got, want, 1e-6), "svc with the product: decision values equal "
          "scikit-learn's on numpy's Gram to 1e-6", worst(got, want))


def scenario_rff(d, X, T, y):
    r = d.req("POST", "/v1/models/c-rff/fit", {
        "algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.5, "columns": [0, 1]},
        "params": {"alpha": ALPHA, "solver": "rff", "n_components": 64, "seed": 3},
        "X": X.tolist(), "y": y.tolist()})
    if not check(r.status == 201, "rff on columns 0, 1: fit", r):
        return
    c = d.req("GET", "/v1/models/c-rff/coefficients").json()["coefficients"]
    W = np.array(c["random_weights_"]["values"])  # d x D
    b = np.array(c["random_offset_"]["values"])
    w = np.array(c["coef_"]["values"])
    check(W.shape == (8, 64) and not W[2:].any() and W[:2].all(),
          "rff on columns 0, 1: random_weights_ are 0 on the other columns", W[:, :2].tolist())
    want = np.sqrt(2 / 64) * np.cos(T @ W + b) @ w[:, 0]
    got = np.array(d.req("POST", "/v1/models/c-rff/predict",
                         {"X": T.tolist()}).json()["predictions"])
    check(close(got, want, 1e-9), "rff on columns 0, 1: predict equals numpy's from the "
          "random features to 1e-9", worst(got, want))


def scenario_errors(d, X, y):
    bad = [
        ({"type": "rbf", "columns": [0, 8]}, "kernel.columns lists column 8, but X has 8 columns"),
        ({"type": "product", "kernels": [{"type": "rbf", "columns": [9]}, LIN_OH]},
         "kernel.columns lists column 9, but X has 8 columns"),
        ({"type": "rbf", "columns": [1, 1]}, "kernel.columns[1]: column 1 is listed twice"),
        ({"type": "rbf", "columns": [-1]}, "kernel.columns[0] must be a whole number from 0 to 4095"),
        ({"type": "rbf", "columns": [0.5]}, "kernel.columns[0] must be a whole number"),
        ({"type": "rbf", "columns": []}, "kernel.columns must be an array of 1 to 4096"),
        ({"type": "sum", "columns": [0], "kernels": [RBF_NUM]},
         "kernel.columns does not apply to a sum kernel"),
        ({"type": "precomputed", "columns": [0]},
         "kernel.columns does not apply to a precomputed kernel"),
    ]
    for kernel, text in bad:
        r = d.req("POST", "/v1/models/c-bad/fit", {"algorithm": "krr", "kernel": kernel,
                                                   "X": X.tolist(), "y": y.tolist()})
        check(r.status == 400 and text in r.body, f"400: {text}", r)
    r = d.req("POST", "/v1/models/c-bad/fit", {
        "algorithm": "krr", "kernel": {"type": "spectrum", "length": 2, "columns": [0]},
        "X": ["acgt", "ggca"], "y": [1.0, 2.0]})
    check(r.status == 400 and "kernel.columns does not apply to a spectrum kernel" in r.body,
          "columns on a string kernel: 400", r)
    r = d.req("POST", "/v1/kernels/gram", {"kernel": {"type": "rbf", "columns": [3]},
                                           "X": [[1, 2, 3]]})
    check(r.status == 400 and "kernel.columns lists column 3, but X has 3 columns" in r.body,
          "gram route: a column past X's width 400", r)
    r = d.req("POST", "/v1/models/c-product/predict", {"X": X[:2, :7].tolist()})
    check(r.status == 400, "predict with 7 columns for a model of 8: 400", r)
    check(d.req("GET", "/v1/models/c-bad").status == 404, "refused fits create nothing")


def scenario_restart(d, T):
    names = [f"c-{c}" for c in CASES] + ["c-svc", "c-rff"]
    before = {n: (d.req("GET", f"/v1/models/{n}").json()["kernel"],
                  d.req("POST", f"/v1/models/{n}/predict", {"X": T.tolist()}).json()["predictions"])
              for n in names}
    d.stop()
    d.start()
    for n in names:
        after = (d.req("GET", f"/v1/models/{n}").json()["kernel"],
                 d.req("POST", f"/v1/models/{n}/predict", {"X": T.tolist()}).json()["predictions"])
        check(after == before[n], f"restart: {n} keeps its columns and answers the same to the bit",
              (after[0], before[n][0]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    X, T, y, labels = data()

    def body(d):
        for s, a in ((scenario_krr, (X, T, y)), (scenario_svc, (X, T, labels)),
                     (scenario_rff, (X, T, y)), (scenario_errors, (X, y)),
                     (scenario_restart, (T,))):
            try:
                s(d, *a)
            except Exception as e:  # a crash of a scenario is a failure; the rest run
                check(False, f"{s.__name__}: runner", repr(e))

    return run.with_daemon(args.server, "kmserve-columns-", body)


if __name__ == "__main__":
    sys.exit(main())
