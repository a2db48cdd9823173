#!/usr/bin/python3
"""Kernel logistic regression (algorithm "klr") over HTTP, checked in numpy.

Fits with the rbf kernel: binary on breast_cancer (rows 0-199 fit, 200-299
asked; gamma 0.1, lambda 0.01), multinomial and ovr on digits (rows 0-299
fit, 300-399 asked; gamma 0.05, lambda 0.01), tol 1e-10. For each, the
model file on disk is read (header, then the klr payload at its end: kind,
X, the n x q dual coefficients a, the q intercepts b) and, written here
from the definition in numpy,
  - the objective sum_i loss_i + (lambda/2) sum_c a_c^T K a_c at (a, b)
    equals metadata's training.objective to 1e-10 relative;
  - its gradient (K (r_c + lambda a_c) per function, sum_i r_ic per
    intercept; r the loss's gradient in f) has 2-norm at most 1e-8, as
    training.gradient_norm says;
  - decision_function equals K(T, X) a + b to 1e-9 relative (binary: one
    value per row, positive for the second label); probability rows sum
    to 1, equal the sigmoid / softmax / normalised sigmoids of the
    decision values to 1e-12, and their argmax is the label answered.
The score endpoint's accuracy and log_loss equal those computed here from
the answers. Answers are the same after a restart (loaded from the file).
Refused: one class (422), lambda 0, tol 0, max_iter 0, multi_class
"softmax", fit_intercept "yes" (400 naming the field).

The nystrom solver (params.solver "nystrom"), on the data and centres of
tests/fixtures/gen_klr_refs.py's nys_bin and nys_multi cases (breast_cancer
rows 0-299 fit, 300-399 asked, 60 centres, seed 3; digits rows 0-399 fit,
400-499 asked, 100 centres, seed 5; rbf gamma 1/d): the probabilities
equal scikit-learn's Nystroem + LogisticRegression on the same centres
(klr_nys_*_proba.txt) to 1e-6; the model file's training rows are the
rows core's seeded draw picks (redone in Python: gen_nystrom_refs.
core_draw) and decision_function is K(T, Z) c + b from its coefficients
(1e-9 relative); metadata names the solver and the centres. Refused:
n_centres with solver exact (400), n_centres above the rows (422), solver
"falkon" (400).
Usage, from the project root:
    /usr/bin/python3 tests/integration/klr.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import run  # noqa: E402
from gen_nystrom_refs import core_draw  # noqa: E402


def read_model(path):
    """(n_features, n_samples, n_outputs, kind, X, A, b) of a klr file."""
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:4] == b"KMSM"
    algo, nf, ns, no = struct.unpack("<IQQQ", raw[8:36])
    assert algo == 6, algo
    size = 4 + 8 + 8 * ns * nf + 8 + 8 * ns * no + 8 + 8 * no
    p = len(raw) - 4 - size
    kind = struct.unpack("<I", raw[p:p + 4])[0]
    p += 4
    out = []
    for count in (ns * nf, ns * no, no):
        (c,) = struct.unpack("<Q", raw[p:p + 8])
        assert c == count, (c, count)
        out.append(np.frombuffer(raw[p + 8:p + 8 + 8 * c], dtype="<f8"))
        p += 8 + 8 * c
    X, A, b = out
    return kind, X.reshape(ns, nf), A.reshape(ns, no), b


def rbf(X, Z, gamma):
    d2 = (X * X).sum(1)[:, None] + (Z * Z).sum(1)[None, :] - 2 * X @ Z.T
    return np.exp(-gamma * np.maximum(d2, 0))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def objective_gradient(kind, K, A, b, y, lam, intercept):
    """The objective and its gradient's 2-norm from the definition."""
    F = K @ A + b
    if kind == 0:                     # binary: y = +1 for class 1
        t = (y == 1).astype(float)[:, None]
        loss = np.logaddexp(0, -np.where(t > 0, 1, -1) * F).sum()
        R = sigmoid(F) - t
    elif kind == 2:                   # ovr
        T = (y[:, None] == np.arange(A.shape[1])).astype(float)
        loss = np.logaddexp(0, -np.where(T > 0, 1, -1) * F).sum()
        R = sigmoid(F) - T
    else:                             # multinomial
        T = (y[:, None] == np.arange(A.shape[1])).astype(float)
        mx = F.max(1, keepdims=True)
        lse = mx[:, 0] + np.log(np.exp(F - mx).sum(1))
        loss = (lse - F[np.arange(len(y)), y]).sum()
        R = np.exp(F - lse[:, None]) - T
    obj = loss + 0.5 * lam * np.einsum("ic,ic->", A, K @ A)
    g = [(K @ (R + lam * A)).ravel()]
    if intercept:
        g.append(R.sum(0))
    return obj, np.linalg.norm(np.concatenate(g))


def probabilities(kind, F):
    if kind == 0:
        p1 = sigmoid(F[:, 0])
        return np.stack([1 - p1, p1], 1)
    if kind == 2:
        P = sigmoid(F)
    else:
        P = np.exp(F - F.max(1, keepdims=True))
    return P / P.sum(1, keepdims=True)


def case(d, name, X, y, T, yt, gamma, lam, multi, kind_want):
    params = {"lambda": lam, "tol": 1e-10, "max_iter": 2000}
    if multi:
        params["multi_class"] = multi
    body = {"algorithm": "klr", "kernel": {"type": "rbf", "gamma": gamma},
            "params": params, "X": X, "y": y}
    r = d.req("POST", f"/v1/models/{name}/fit", body)
    meta = (r.json() or {}).get("model", {})
    tr = meta.get("training", {})
    run.check(r.status == 201 and meta.get("algorithm") == "klr" and
              tr.get("gradient_norm", 1) <= 1e-8 and
              meta.get("params", {}).get("multi_class") == (multi or "multinomial"),
              f"{name}: fit 201, training.gradient_norm <= 1e-8", meta)
    if r.status != 201:
        return None
    kind, Xm, A, b = read_model(os.path.join(d.models, f"{name}.kmm"))
    run.check(kind == kind_want, f"{name}: payload kind {kind_want}", kind)
    ya = np.array([int(v) for v in y])
    K = rbf(Xm, Xm, gamma)
    obj, gn = objective_gradient(kind, K, A, b, ya, lam, True)
    run.check(abs(obj - tr.get("objective", 0)) <= 1e-10 * max(1, abs(obj)),
              f"{name}: the objective in numpy equals training.objective",
              (obj, tr.get("objective")))
    run.check(gn <= 1e-8, f"{name}: the gradient in numpy has norm <= 1e-8 "
              f"({gn:.3g})", gn)

    F = rbf(np.array(T), Xm, gamma) @ A + b
    r = d.req("POST", f"/v1/models/{name}/predict",
              {"X": T, "output": "decision_function"})
    dec = np.array((r.json() or {}).get("predictions", []), dtype=float)
    dec2 = dec.reshape(len(T), -1) if dec.size else dec
    ok = dec.size == F.size and np.max(np.abs(dec2 - F) / np.maximum(np.abs(F), 1e-3)) <= 1e-9
    run.check(r.status == 200 and ok and (dec.ndim == 1) == (kind == 0),
              f"{name}: decision_function is K(T, X) a + b", r)
    r = d.req("POST", f"/v1/models/{name}/predict", {"X": T, "output": "probability"})
    P = np.array((r.json() or {}).get("predictions", []), dtype=float)
    r2 = d.req("POST", f"/v1/models/{name}/predict", {"X": T})
    labels = (r2.json() or {}).get("predictions", [])
    ok = (P.shape == (len(T), len(set(y))) and
          np.all(np.abs(P.sum(1) - 1) <= 1e-12) and
          np.max(np.abs(P - probabilities(kind, dec2))) <= 1e-12 and
          [int(v) for v in labels] == [int(v) for v in P.argmax(1)])
    run.check(r.status == 200 and r2.status == 200 and ok,
              f"{name}: probabilities sum to 1, follow the decision values, "
              "argmax is the label", (P[:2], labels[:5]))

    r = d.req("POST", f"/v1/models/{name}/score", {"X": T, "y": yt})
    sc = (r.json() or {}).get("scoring", {})
    yt_a = np.array([int(v) for v in yt])
    acc = float(np.mean(P.argmax(1) == yt_a))
    Pc = np.clip(P, np.finfo(float).eps, 1 - np.finfo(float).eps)
    Pc /= Pc.sum(1, keepdims=True)
    ll = float(-np.mean(np.log(Pc[np.arange(len(yt_a)), yt_a])))
    run.check(r.status == 200 and sc.get("accuracy") == acc and
              abs(sc.get("log_loss", 0) - ll) <= 1e-12 * max(1, ll),
              f"{name}: score's accuracy and log_loss ({acc:.3f}, {ll:.4f})",
              sc)
    return labels, P.tolist()


def nystrom_case(d, name, X, y, T, m, seed, lam, tag):
    gamma = 1.0 / len(X[0])
    body = {"algorithm": "klr", "kernel": {"type": "rbf", "gamma": gamma},
            "params": {"lambda": lam, "tol": 1e-10, "solver": "nystrom",
                       "n_centres": m, "seed": seed},
            "X": X, "y": y}
    r = d.req("POST", f"/v1/models/{name}/fit", body)
    meta = (r.json() or {}).get("model", {})
    pa, tr = meta.get("params", {}), meta.get("training", {})
    run.check(r.status == 201 and pa.get("solver") == "nystrom" and
              pa.get("n_centres") == m and pa.get("seed") == seed and
              pa.get("centres") == "uniform" and
              tr.get("solver") == "nystrom" and meta.get("n_samples") == m and
              tr.get("gradient_norm", 1) <= 1e-10 and
              tr.get("cg_iterations", 0) >= 1 and
              tr.get("factorizations", 0) >= 1,
              f"{name}: nystrom fit 201, its params and figures", meta)
    if r.status != 201:
        return None
    kind, Z, C, b = read_model(os.path.join(d.models, f"{name}.kmm"))
    want = np.array(X)[core_draw(seed, len(X), m)]
    run.check(Z.shape == want.shape and np.array_equal(Z, want),
              f"{name}: the model's rows are core's seeded centres", Z.shape)
    F = rbf(np.array(T), Z, gamma) @ C + b
    r = d.req("POST", f"/v1/models/{name}/predict",
              {"X": T, "output": "decision_function"})
    dec = np.array((r.json() or {}).get("predictions", []), dtype=float)
    dec = dec.reshape(len(T), -1) if dec.size else dec
    run.check(dec.size == F.size and
              np.max(np.abs(dec - F) / np.maximum(np.abs(F), 1e-3)) <= 1e-9,
              f"{name}: decision_function is K(T, Z) c + b", r)
    r = d.req("POST", f"/v1/models/{name}/predict",
              {"X": T, "output": "probability"})
    P = np.array((r.json() or {}).get("predictions", []), dtype=float)
    ref = np.array(run.read_fixture(f"klr_{tag}_proba.txt"))
    err = np.max(np.abs(P.ravel() - ref)) if P.size == ref.size else np.inf
    run.check(r.status == 200 and err <= 1e-6,
              f"{name}: probabilities equal Nystroem + LogisticRegression's "
              f"(off by {err:.2g})", err)
    return [], P.tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    Xb, yb = run.load_csv("breast_cancer.csv", 300)
    Xb = run.scale_minmax(Xb, 200)
    Xd, yd = run.load_csv("digits.csv", 400)
    Xd = run.scale_minmax(Xd, 300)

    def body(d):
        answers = {}
        answers["klr-bin"] = case(d, "klr-bin", Xb[:200], yb[:200], Xb[200:],
                                  yb[200:], 0.1, 0.01, None, 0)
        answers["klr-multi"] = case(d, "klr-multi", Xd[:300], yd[:300],
                                    Xd[300:], yd[300:], 0.05, 0.01, None, 1)
        answers["klr-ovr"] = case(d, "klr-ovr", Xd[:300], yd[:300], Xd[300:],
                                  yd[300:], 0.05, 0.01, "ovr", 2)
        Xn, yn = run.load_csv("breast_cancer.csv", 400)
        Xn = run.scale_minmax(Xn, 300)
        Xe, ye = run.load_csv("digits.csv", 500)
        Xe = run.scale_minmax(Xe, 400)
        answers["klr-nys-bin"] = nystrom_case(d, "klr-nys-bin", Xn[:300],
                                              yn[:300], Xn[300:], 60, 3, 0.05,
                                              "nys_bin")
        answers["klr-nys-multi"] = nystrom_case(d, "klr-nys-multi", Xe[:400],
                                                ye[:400], Xe[400:], 100, 5,
                                                0.5, "nys_multi")
        asked = {"klr-bin": Xb[200:], "klr-nys-bin": Xn[300:],
                 "klr-nys-multi": Xe[400:]}
        d.stop()
        d.start()
        for name, want in answers.items():
            r = d.req("POST", f"/v1/models/{name}/predict", {"X": asked.get(name, Xd[300:]), "output": "probability"})
            got = (r.json() or {}).get("predictions")
            run.check(want is not None and got == want[1],
                      f"{name}: the same probabilities after a restart", got and got[:1])

        rbf_k = {"type": "rbf"}
        X4 = [[0.0], [1.0], [2.0], [3.0]]
        for params, y, status, text, what in (
                ({}, [1, 1, 1, 1], 422, "y has 1 distinct class; klr needs at least 2",
                 "one class"),
                ({"lambda": 0}, [0, 1, 0, 1], 400, "params.lambda", "lambda 0"),
                ({"tol": 0}, [0, 1, 0, 1], 400, "params.tol", "tol 0"),
                ({"max_iter": 0}, [0, 1, 0, 1], 400, "params.max_iter", "max_iter 0"),
                ({"multi_class": "softmax"}, [0, 1, 2, 1], 400,
                 "params.multi_class", "multi_class softmax"),
                ({"fit_intercept": "yes"}, [0, 1, 0, 1], 400,
                 "params.fit_intercept", "fit_intercept not a boolean"),
                ({"n_centres": 2}, [0, 1, 0, 1], 400,
                 "params.n_centres applies only with params.solver",
                 "n_centres with solver exact"),
                ({"solver": "nystrom", "n_centres": 5}, [0, 1, 0, 1], 422,
                 "params.n_centres is 5 but X has 4 rows",
                 "n_centres above the rows"),
                ({"solver": "falkon"}, [0, 1, 0, 1], 400, "params.solver",
                 "solver falkon")):
            r = d.req("POST", "/v1/models/bad/fit",
                      {"algorithm": "klr", "kernel": rbf_k, "params": params,
                       "X": X4, "y": y})
            run.check(r.status == status and text in r.body,
                      f"{what}: {status} naming it", r)
        run.check(d.req("GET", "/v1/models/bad").status == 404,
                  "nothing created by the refused fits")

    return run.with_daemon(args.server, "kmserve-klr-", body)


if __name__ == "__main__":
    sys.exit(main())
