#!/usr/bin/python3
"""A model's coefficients over HTTP (GET /v1/models/{name}/coefficients
and /v1/models/{name}/versions/{version}/coefficients), against
scikit-learn's attributes on the parity data sets of the other runners.

- krr (breast cancer scaled to [-1, 1], 400 rows, rbf gamma 0.1, alpha
  0.5, as run.py's parity; and krr_syn's two outputs): dual_coef_ equals
  KernelRidge's to 1e-6 relative (floor 1e-3), X_fit_ the rows sent.
- svc (breast cancer, C 1, gamma 0.1; satellite's first 500 rows, three
  or more classes, C 10, gamma 0.5) and svr (breast cancer's feature 0,
  C 1, epsilon 0.05), all at tol 1e-6 on both sides: support_ and
  n_support_ equal SVC's and SVR's, dual_coef_ and intercept_ to 1e-4
  absolute (two SMO solvers stopping at tol 1e-6 on the same problem).
- kpca (digits' first 600 rows scaled, rbf gamma 0.02, 8 components,
  dense, as gen_kpca_refs.py): eigenvalues_ to 1e-6 relative,
  eigenvectors_ to 1e-6 up to each column's sign.
- gpr (gen_gpr_refs.py's cases a and b, b with normalize_y): alpha_
  equals GaussianProcessRegressor's with the fixed kernel
  ConstantKernel(s) * RBF(l) and alpha noise, to 1e-6 relative.
- klr (binary and multinomial, as klr.py's): dual_coef_ and intercept_
  equal the model file's arrays bit for bit.
- kkmeans: labels_ are the clusters predict gives the training rows.
- nystrom (krr, svc, kpca, gpr, klr) and rff (krr): their centres (or
  random_weights_ and random_offset_) and coefficients in that space.
- LIBSVM imports (svm-train's files: three and four classes in a label
  order that is not ascending, two classes either way round, with and
  without -b 1, and epsilon-SVR): every array equals the file's support
  vectors, coefficients, rho and probA/probB rearranged by the
  definition into scikit-learn's layout (libsvm_expected), exactly, and
  no other array is answered; decision values from the arrays equal
  LIBSVM's svm_predict's; probA_/probB_ give predict's probabilities.
- preprocessed fits (svc standardize, krr minmax with center_y, krr
  center_y alone): input_space "scaled" and preprocess (x_shift,
  x_scale, y_mean) as numpy computes them; the arrays equal SVC's and
  KernelRidge's fitted on the rows scaled so; a model without
  preprocessing answers neither member.
- string models (spectrum k = 3; strings with UTF-8 beyond ASCII,
  quotes, a backslash, a tab, the empty string): krr's X_fit_ is dtype
  "string", shape [n], the training strings exactly, and predict equals
  the reference kernel's (tests/strings_ref.py) K(T, X_fit_) dual_coef_
  to 1e-9; svc's support_vectors_ are the strings at support_ and its
  decision values from them equal predict's; pages of strings put
  together are the whole answer, and a page counts a string as its
  row's doubles (max_length 65536: 1 + 10923 a row), so its maximum
  limit is 1,000,000 over that.
For every model, the answers recomputed in numpy from the coefficients
alone (X_fit_, centres or frequencies and coefficients; the kernel in
the metadata) equal the daemon's predict (values, decision_function,
mean, projections, labels) to 1e-9 relative (floor 1e-3).

Paging: pages of ?limit=37 put together equal the whole answer; total_rows,
rows and next_offset; offset and limit that are not whole numbers in
range, and an unknown parameter, are 400 naming it; a wide model's
maximum limit is lower (1,000,000 values a page). Versions (with
--keep-versions 2): a pinned version answers its own coefficients, the
current one the same as the unpinned route, a pruned or missing version is
404, a version that is not a number 400. A model of every algorithm /v1
lists answers 200 with arrays; a missing model 404; POST 405; with
tokens, no token 401 and a read token 200.

Needs numpy, scikit-learn, svm-train and python3-libsvm. Usage, from the
project root:
    /usr/bin/python3 tests/integration/coefficients.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import random
import shutil
import sys
import tempfile

import numpy as np
from sklearn.decomposition import KernelPCA
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.kernel_ridge import KernelRidge
from sklearn.svm import SVC, SVR

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import run  # noqa: E402
import strings_ref as ref  # noqa: E402
import klr as klr_runner  # noqa: E402  (read_model: klr's model file)
import interchange as ich  # noqa: E402  (LIBSVM's files: make, train, parse)
import svmutil  # noqa: E402  (python3-libsvm: LIBSVM's own decision values)

check = run.check
PRED_TOL = 1e-9   # recomputed answers against predict
REL_TOL = 1e-6    # scikit-learn's closed forms and eigen-solvers
SMO_TOL = 1e-4    # two SMO solvers, each to tol 1e-6
fitted = set()    # the algorithms fitted here


def rel(a, b, floor=1e-3):
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        return np.inf
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), floor))) if a.size else 0.0


def rbf(X, Z, gamma):
    X, Z = np.asarray(X, float), np.asarray(Z, float)
    d2 = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(2)
    return np.exp(-gamma * d2)


def fit(d, name, body):
    r = d.req("POST", f"/v1/models/{name}/fit", body)
    check(r.status == 201, f"{name}: fit 201", r)
    fitted.add(body["algorithm"])
    return (r.json() or {}).get("model", {})


def coefs(d, name, version=None, query=""):
    """The whole answer (pages put together), as numpy arrays by name."""
    base = (f"/v1/models/{name}/versions/{version}/coefficients" if version
            else f"/v1/models/{name}/coefficients")
    r = d.req("GET", base + query)
    check(r.status == 200, f"{name}: coefficients 200", r)
    a = r.json() or {}
    out = {k: np.array(v["values"], dtype=object if v["dtype"] == "string" else float)
           for k, v in a.get("coefficients", {}).items()}
    for k, v in a.get("coefficients", {}).items():
        check(list(out[k].shape) == v["shape"] or
              (len(v["shape"]) == 1 and out[k].shape == (v["shape"][0],)),
              f"{name}: {k} has its stated shape {v['shape']}", out[k].shape)
    return a, out


def predict(d, name, X, output=None, route="predict"):
    body = {"X": np.asarray(X).tolist()}
    if output:
        body["output"] = output
    r = d.req("POST", f"/v1/models/{name}/{route}", body)
    check(r.status == 200, f"{name}: {route} {output or ''}", r)
    key = "projections" if route == "project" else "predictions"
    return np.array((r.json() or {}).get(key, []))


def same_answer(name, got, want, what):
    e = rel(got, want)
    check(e <= PRED_TOL, f"{name}: {what} recomputed from the coefficients "
          f"equals predict (max rel {e:.2g})", e)


# ------------------------------------------------------------- cases

def krr_cases(d, bc):
    X, y, T = bc["X"][:400], bc["yf"][:400], bc["X"][400:]
    fit(d, "krr", {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.1},
                   "params": {"alpha": 0.5}, "X": X, "y": y})
    a, c = coefs(d, "krr")
    ref = KernelRidge(alpha=0.5, kernel="rbf", gamma=0.1).fit(X, y).dual_coef_
    e = rel(c["dual_coef_"].ravel(), ref)
    check(a.get("total_rows") == 400 and c["dual_coef_"].shape == (400, 1) and
          e <= REL_TOL, f"krr: dual_coef_ equals KernelRidge's (max rel {e:.2g})", e)
    check(np.array_equal(c["X_fit_"], np.array(X)), "krr: X_fit_ the rows sent")
    same_answer("krr", rbf(T, c["X_fit_"], 0.1) @ c["dual_coef_"][:, 0],
                predict(d, "krr", T), "values")
    # two outputs
    Xs = run.fixture_rows("krr_syn_X.txt", 5)
    Ys = run.fixture_rows("krr_syn_Y.txt", 2)
    Ts = run.fixture_rows("krr_syn_T.txt", 5)
    fit(d, "krr2", {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.3},
                    "params": {"alpha": 0.1}, "X": Xs, "y": Ys})
    _, c = coefs(d, "krr2")
    ref = KernelRidge(alpha=0.1, kernel="rbf", gamma=0.3).fit(Xs, Ys).dual_coef_
    e = rel(c["dual_coef_"], ref)
    check(e <= REL_TOL, f"krr two outputs: dual_coef_ (n x 2) equals "
          f"KernelRidge's (max rel {e:.2g})", e)
    same_answer("krr2", rbf(Ts, c["X_fit_"], 0.3) @ c["dual_coef_"],
                predict(d, "krr2", Ts), "values")
    # nystrom and rff
    fit(d, "krr-nys", {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.1},
                       "params": {"alpha": 0.5, "solver": "nystrom",
                                  "n_centres": 80, "seed": 3}, "X": X, "y": y})
    a, c = coefs(d, "krr-nys")
    check(a.get("total_rows") == 80 and c.get("centres_", np.zeros(0)).shape == (80, 30),
          "krr nystrom: 80 centres_", a.get("total_rows"))
    same_answer("krr-nys", rbf(T, c["centres_"], 0.1) @ c["dual_coef_"][:, 0],
                predict(d, "krr-nys", T), "values")
    fit(d, "krr-rff", {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.1},
                       "params": {"alpha": 0.1, "solver": "rff",
                                  "n_components": 300, "seed": 7},
                       "X": X, "y": y})
    a, c = coefs(d, "krr-rff")
    W, b = c.get("random_weights_"), c.get("random_offset_")
    check(W is not None and W.shape == (30, 300) and b.shape == (300,) and
          c["coef_"].shape == (300, 1) and a.get("total_rows") == 300,
          "krr rff: random_weights_ (d x D), random_offset_, coef_ (D x 1)")
    if W is not None:
        Z = np.sqrt(2.0 / 300) * np.cos(np.array(T) @ W + b)
        same_answer("krr-rff", Z @ c["coef_"][:, 0], predict(d, "krr-rff", T),
                    "values")


def svm_pairs_decision(c, Kt, k):
    """scikit-learn's one-vs-one decision values from its attributes."""
    ns = c["n_support_"].astype(int)
    start = np.concatenate([[0], np.cumsum(ns)])
    D = c["dual_coef_"]
    out = []
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
            out.append(Kt[:, si] @ D[j - 1, si] + Kt[:, sj] @ D[i, sj] +
                       c["intercept_"][p])
            p += 1
    return np.stack(out, 1)


def svc_cases(d, bc, sat):
    X, y, T = bc["X"][:400], bc["yi"][:400], bc["X"][400:]
    fit(d, "svc", {"algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.1},
                   "params": {"C": 1.0, "tol": 1e-6}, "X": X, "y": y})
    _, c = coefs(d, "svc")
    ref = SVC(C=1.0, gamma=0.1, tol=1e-6).fit(X, y)
    check(np.array_equal(c["support_"], ref.support_) and
          np.array_equal(c["n_support_"], ref.n_support_),
          "svc binary: support_ and n_support_ equal SVC's",
          (c["n_support_"], ref.n_support_))
    if c["dual_coef_"].shape == ref.dual_coef_.shape:
        e = np.max(np.abs(c["dual_coef_"] - ref.dual_coef_))
        ei = np.max(np.abs(c["intercept_"] - ref.intercept_))
        check(e <= SMO_TOL and ei <= SMO_TOL,
              f"svc binary: dual_coef_ and intercept_ equal SVC's (sign "
              f"included; off by {e:.2g}, {ei:.2g})", (e, ei))
    dec = rbf(T, c["support_vectors_"], 0.1) @ c["dual_coef_"][0] + c["intercept_"][0]
    same_answer("svc", dec, predict(d, "svc", T, "decision_function"),
                "decision_function")
    # several classes, string labels
    Xs, ys, Ts = sat["X"][:500], sat["y"][:500], sat["X"][500:]
    fit(d, "svc-multi", {"algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.5},
                         "params": {"C": 10, "tol": 1e-6}, "X": Xs, "y": ys})
    _, c = coefs(d, "svc-multi")
    ref = SVC(C=10, gamma=0.5, tol=1e-6, decision_function_shape="ovo").fit(Xs, ys)
    k = len(ref.classes_)
    check(np.array_equal(c["support_"], ref.support_) and
          np.array_equal(c["n_support_"], ref.n_support_),
          f"svc {k} classes: support_ and n_support_ equal SVC's",
          (c["n_support_"], ref.n_support_))
    if c["dual_coef_"].shape == ref.dual_coef_.shape:
        e = np.max(np.abs(c["dual_coef_"] - ref.dual_coef_))
        ei = np.max(np.abs(c["intercept_"] - ref.intercept_))
        check(e <= SMO_TOL and ei <= SMO_TOL,
              f"svc {k} classes: dual_coef_ ((k-1) x n_SV) and intercept_ "
              f"equal SVC's (off by {e:.2g}, {ei:.2g})", (e, ei))
    Kt = rbf(Ts, c["support_vectors_"], 0.5)
    same_answer("svc-multi", svm_pairs_decision(c, Kt, k),
                predict(d, "svc-multi", Ts, "decision_function"),
                "one-vs-one decision_function")
    # svr
    Xr = [r[1:] for r in bc["X"][:400]]
    yr = [r[0] for r in bc["X"][:400]]
    Tr = [r[1:] for r in bc["X"][400:]]
    fit(d, "svr", {"algorithm": "svr", "kernel": {"type": "rbf", "gamma": 0.1},
                   "params": {"C": 1, "epsilon": 0.05, "tol": 1e-6},
                   "X": Xr, "y": yr})
    _, c = coefs(d, "svr")
    ref = SVR(C=1, epsilon=0.05, gamma=0.1, tol=1e-6).fit(Xr, yr)
    check(np.array_equal(c["support_"], ref.support_), "svr: support_ equals SVR's",
          (len(c["support_"]), len(ref.support_)))
    if c["dual_coef_"].shape == ref.dual_coef_.shape:
        e = np.max(np.abs(c["dual_coef_"] - ref.dual_coef_))
        ei = np.max(np.abs(c["intercept_"] - ref.intercept_))
        check(e <= SMO_TOL and ei <= SMO_TOL,
              f"svr: dual_coef_ and intercept_ equal SVR's (off by {e:.2g}, "
              f"{ei:.2g})", (e, ei))
    same_answer("svr", rbf(Tr, c["support_vectors_"], 0.1) @ c["dual_coef_"][0] +
                c["intercept_"][0], predict(d, "svr", Tr), "values")
    # nystrom svc
    fit(d, "svc-nys", {"algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.5},
                       "params": {"C": 10, "solver": "nystrom", "n_centres": 100,
                                  "seed": 5}, "X": Xs, "y": ys})
    a, c = coefs(d, "svc-nys")
    check(a.get("total_rows") == 100 and c["coef_"].shape == (100, k * (k - 1) // 2),
          "svc nystrom: 100 centres_, coef_ of one column per pair", a.get("total_rows"))
    same_answer("svc-nys", rbf(Ts, c["centres_"], 0.5) @ c["coef_"] + c["intercept_"],
                predict(d, "svc-nys", Ts, "decision_function"), "decision_function")


def kpca_cases(d, digits):
    X, T = digits[:600], digits[600:800]
    fit(d, "kpca", {"algorithm": "kpca", "kernel": {"type": "rbf", "gamma": 0.02},
                    "params": {"n_components": 8, "eigen_solver": "dense"}, "X": X})
    _, c = coefs(d, "kpca")
    ref = KernelPCA(n_components=8, kernel="rbf", gamma=0.02,
                    eigen_solver="dense").fit(np.array(X))
    e = rel(c["eigenvalues_"], ref.eigenvalues_)
    check(e <= REL_TOL, f"kpca: eigenvalues_ equal KernelPCA's (max rel {e:.2g})", e)
    V, R = c["eigenvectors_"], ref.eigenvectors_
    if V.shape == R.shape:
        sign = np.sign((V * R).sum(0))
        e = np.max(np.abs(V * sign - R))
        check(e <= REL_TOL, f"kpca: eigenvectors_ equal KernelPCA's up to "
              f"sign (off by {e:.2g})", e)
    # sklearn's transform from the attributes: the centred kernel
    K = rbf(X, X, 0.02)
    Kt = rbf(T, c["X_fit_"], 0.02)
    Kc = (Kt - K.mean(0)[None, :] - Kt.mean(1)[:, None] + K.mean())
    same_answer("kpca", Kc @ (V / np.sqrt(c["eigenvalues_"])),
                predict(d, "kpca", T, route="project"), "projections")
    fit(d, "kpca-nys", {"algorithm": "kpca", "kernel": {"type": "rbf", "gamma": 0.02},
                        "params": {"n_components": 4, "eigen_solver": "nystrom",
                                   "n_centres": 60, "seed": 11}, "X": X})
    a, c = coefs(d, "kpca-nys")
    check(a.get("total_rows") == 60 and c["coef_"].shape == (60, 4),
          "kpca nystrom: 60 centres_, coef_ 60 x 4, kernel_mean_", a.get("total_rows"))
    P = rbf(T, c["centres_"], 0.02) @ c["coef_"] - c["kernel_mean_"] @ c["coef_"]
    same_answer("kpca-nys", P, predict(d, "kpca-nys", T, route="project"),
                "projections")


def gpr_cases(d):
    X = run.fixture_rows("gpr_X.txt", 3)
    T = run.fixture_rows("gpr_T.txt", 3)
    y = run.read_fixture("gpr_y.txt")
    for case, (s, ls, noise, norm) in {"a": (2.0, 1.3, 0.05, False),
                                       "b": (0.7, 0.8, 0.01, True)}.items():
        name, g = f"gpr-{case}", 1.0 / (2.0 * ls * ls)
        fit(d, name, {"algorithm": "gpr", "kernel": {"type": "rbf", "gamma": g},
                      "params": {"noise": noise, "signal_variance": s,
                                 "normalize_y": norm}, "X": X, "y": y})
        _, c = coefs(d, name)
        ref = GaussianProcessRegressor(ConstantKernel(s, "fixed") * RBF(ls, "fixed"),
                                       alpha=noise, optimizer=None,
                                       normalize_y=norm).fit(X, y)
        e = rel(c["alpha_"], ref.alpha_)
        check(e <= REL_TOL, f"{name}: alpha_ equals GaussianProcessRegressor's "
              f"(max rel {e:.2g})", e)
        mean = (c["y_train_std_"][0] * c["signal_"][0] *
                rbf(T, c["X_train_"], g) @ c["alpha_"] + c["y_train_mean_"][0])
        same_answer(name, mean, predict(d, name, T), "mean")
    Xn = run.fixture_rows("gprn_X.txt", 3)
    Tn = run.fixture_rows("gprn_T.txt", 3)
    yn = run.read_fixture("gprn_y.txt")
    fit(d, "gpr-nys", {"algorithm": "gpr", "kernel": {"type": "rbf", "gamma": 0.5},
                       "params": {"noise": 0.05, "signal_variance": 1.5,
                                  "solver": "nystrom", "n_centres": 50, "seed": 7},
                       "X": Xn, "y": yn})
    a, c = coefs(d, "gpr-nys")
    check(a.get("total_rows") == 50 and "centres_" in c, "gpr nystrom: 50 centres_",
          a.get("total_rows"))
    mean = (c["y_train_std_"][0] * c["signal_"][0] *
            rbf(Tn, c["centres_"], 0.5) @ c["alpha_"] + c["y_train_mean_"][0])
    same_answer("gpr-nys", mean, predict(d, "gpr-nys", Tn), "mean")


def klr_cases(d, bc):
    X, y, T = bc["X"][:200], bc["yi"][:200], bc["X"][200:300]
    for name, body_extra, kind in (("klr-bin", {}, 0),
                                   ("klr-nys", {"solver": "nystrom",
                                                "n_centres": 60, "seed": 3}, 0)):
        params = {"lambda": 0.01, "tol": 1e-10}
        params.update(body_extra)
        fit(d, name, {"algorithm": "klr", "kernel": {"type": "rbf", "gamma": 0.1},
                      "params": params, "X": X, "y": y})
        _, c = coefs(d, name)
        _, Xm, A, b = klr_runner.read_model(os.path.join(d.models, f"{name}.kmm"))
        rows = c.get("centres_" if body_extra else "X_fit_")
        check(np.array_equal(c["dual_coef_"], A) and np.array_equal(c["intercept_"], b)
              and np.array_equal(rows, Xm),
              f"{name}: dual_coef_, intercept_ and rows are the model file's")
        F = rbf(T, rows, 0.1) @ c["dual_coef_"] + c["intercept_"]
        same_answer(name, F[:, 0], predict(d, name, T, "decision_function"),
                    "decision_function")


def kkmeans_cases(d):
    X = run.fixture_rows("kkm_X.txt", 2)
    T = run.fixture_rows("kkm_T.txt", 2)
    fit(d, "kkm", {"algorithm": "kkmeans", "kernel": {"type": "rbf", "gamma": 1.0},
                   "params": {"n_clusters": 3, "seed": 1}, "X": X})
    _, c = coefs(d, "kkm")
    lab = c["labels_"].astype(int)
    check(np.array_equal(lab, predict(d, "kkm", X)),
          "kkmeans: labels_ are predict's clusters of the training rows")
    Kt = rbf(T, c["X_fit_"], 1.0)
    k = len(c["cluster_sq_norms_"])
    W = np.zeros((len(lab), k))
    W[np.arange(len(lab)), lab] = 1
    W /= W.sum(0)
    dist = 1.0 - 2 * Kt @ W + c["cluster_sq_norms_"]
    check(np.array_equal(dist.argmin(1), predict(d, "kkm", T)),
          "kkmeans: labels recomputed from labels_ and cluster_sq_norms_ "
          "equal predict's")


# ------------------------------------------------------------- the route

# ------------------------------------------------- LIBSVM import, preprocessing

def libsvm_expected(text):
    """The arrays of scikit-learn's layout an imported LIBSVM model file
    must answer, from the file by the definition: classes in ascending
    label order, each class's SV lines in file order (support_ their line
    numbers); a SV's coefficient for LIBSVM's pair of its class i and o
    (whose value is positive for the first of the two in LIBSVM's order)
    moves to the column of o's rank among the others, negated when the
    two classes come the other way round in ascending order;
    intercept_ -rho (+rho for a swapped pair); probB negated for a swapped
    pair, probA kept; two classes: dual_coef_ and intercept_ negated
    (scikit-learn's sign)."""
    head, sv = ich.parse_model(text)
    d = max((max(f) for _, f in sv if f), default=1)
    S = np.zeros((len(sv), d))
    for s_, (_, feats) in enumerate(sv):
        for j, v in feats.items():
            S[s_, j - 1] = v
    C = np.array([c for c, _ in sv]).reshape(len(sv), -1)
    rho = np.array([float(v) for v in head["rho"]])
    if head["svm_type"][0] == "epsilon_svr":
        return {"support_": np.arange(len(sv)), "support_vectors_": S,
                "dual_coef_": C.T, "intercept_": -rho}
    labels = [int(v) for v in head["label"]]
    k = len(labels)
    rank = [sorted(labels).index(v) for v in labels]
    nsv = [int(v) for v in head["nr_sv"]]
    start = np.concatenate([[0], np.cumsum(nsv)]).astype(int)
    lpair = {}
    for i in range(k):
        for j in range(i + 1, k):
            lpair[(i, j)] = len(lpair)
    order = [labels.index(c) for c in sorted(labels)]  # LIBSVM class of each rank
    rows = [s_ for i in order for s_ in range(start[i], start[i + 1])]
    D = np.zeros((k - 1, len(sv)))
    for r, s_ in enumerate(rows):
        i = next(c for c in range(k) if start[c] <= s_ < start[c + 1])
        for j in range(k - 1):
            o = j if j < i else j + 1
            a, b = rank[i], rank[o]
            D[b if b < a else b - 1, r] = -C[s_, j] if (i < o) != (a < b) else C[s_, j]
    out = {"support_": np.array(rows), "support_vectors_": S[rows],
           "n_support_": np.array([nsv[i] for i in order])}
    b_, pa, pb = [], [], []
    for a in range(k):
        for b in range(a + 1, k):
            i, j = order[a], order[b]
            q = lpair[(min(i, j), max(i, j))]
            swapped = i > j
            b_.append(rho[q] if swapped else -rho[q])
            if "probA" in head:
                pa.append(float(head["probA"][q]))
                pb.append(-float(head["probB"][q]) if swapped else float(head["probB"][q]))
    sign = -1.0 if k == 2 else 1.0
    out["dual_coef_"], out["intercept_"] = sign * D, sign * np.array(b_)
    if pa:
        out["probA_"], out["probB_"] = np.array(pa), np.array(pb)
    return out


def import_cases(d):
    """Models imported from svm-train's files answer the file's support
    vectors, coefficients, intercepts and Platt parameters in
    scikit-learn's layout (libsvm_expected), exactly; the decision values
    recomputed from the answer equal LIBSVM's own (python3-libsvm's
    svm_predict) to 1e-9, and a binary model's probabilities from
    probA_ and probB_ equal predict's."""
    rng = random.Random(26)
    tmp = tempfile.mkdtemp(prefix="kmserve-coefimp-")
    cases = (("imp3", [3, 1, 2], ["-b", "1"]), ("imp52", [5, 2], ["-b", "1"]),
             ("imp2", [-1, 1], []), ("imp4", [2, 9, 4, 7], []), ("impr", None, []))
    for case, labels, extra in cases:
        X, y = ich.make_rows(rng, 90, 5, labels or [0])
        if labels is None:
            y = [round(sum(r[:3]) + rng.gauss(0, 0.1), 6) for r in X]
        T, _ = ich.make_rows(rng, 30, 5, labels or [0])
        train = os.path.join(tmp, f"{case}.train")
        ich.write_sparse(train, X, y)
        mfile = os.path.join(tmp, f"{case}.model")
        opts = ["-s", "0" if labels else "3", "-t", "2", "-g", "0.4", "-c", "2"] + extra
        text = ich.svm_train(tmp, train, mfile, opts)
        r = ich.import_text(d, case, text, query="?format=libsvm&n_features=5")
        check(r.status == 201, f"{case}: LIBSVM import 201", r)
        a, c = coefs(d, case)
        want = libsvm_expected(text)
        for name, w in want.items():
            g = c.get(name)
            check(g is not None and g.shape == w.shape and np.array_equal(g, w),
                  f"{case}: {name} is the file's, in scikit-learn's layout", (name, g, w))
        check(set(c) == set(want), f"{case}: no other arrays", sorted(c))
        lib = svmutil.svm_load_model(mfile)
        _, _, ldec = svmutil.svm_predict([0] * len(T), ich.libsvm_rows(T), lib, "-q")
        # svm-train writes the gamma it used (0.4 as a float: 0.40000000596...)
        Kt = rbf(T, c["support_vectors_"], float(ich.parse_model(text)[0]["gamma"][0]))
        if labels is None:
            got = Kt @ c["dual_coef_"][0] + c["intercept_"][0]
            e = rel(got, np.array(ldec)[:, 0])
        elif len(labels) == 2:
            got = Kt @ c["dual_coef_"][0] + c["intercept_"][0]
            e = rel(-got[:, None], ich.to_kmserve(np.array(ldec), lib.get_labels()))
        else:
            got = svm_pairs_decision(c, Kt, len(labels))
            e = rel(got, ich.to_kmserve(np.array(ldec), lib.get_labels()))
        check(e <= PRED_TOL, f"{case}: decision values from the coefficients equal "
              f"LIBSVM's (max rel {e:.2g})", e)
        if labels and len(labels) == 2 and "probA_" in c:
            f = -got  # LIBSVM's pair value, positive for the first class
            p0 = 1 / (1 + np.exp(c["probA_"][0] * f + c["probB_"][0]))
            kp = predict(d, case, T, "probability")
            same_answer(case, p0, kp[:, 0], "P(first class) by probA_, probB_")
    shutil.rmtree(tmp, ignore_errors=True)


def preprocess_cases(d):
    """A preprocessed model's arrays are of the scaled problem: the answer
    says input_space "scaled" and carries preprocess (x_shift, x_scale as
    numpy's mean and population std, or minmax's centre and half range;
    y_mean), and its arrays equal scikit-learn's fitted on the rows scaled
    so (SVC: support_, n_support_; dual_coef_ and intercept_ to the SMO
    tolerance; KernelRidge on y - mean(y): dual_coef_ to 1e-6); predict
    on raw rows equals the coefficients applied to the scaled rows, plus
    y_mean. A model without preprocessing has neither member."""
    Xr, yr = run.load_csv("breast_cancer.csv")
    X, T = np.array(Xr[:400]), np.array(Xr[400:])
    yc = [int(float(v)) for v in yr[:400]]
    fit(d, "pre-svc", {"algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.05},
                       "params": {"C": 1.0, "tol": 1e-6}, "X": X.tolist(), "y": yc,
                       "preprocess": {"scale": "standardize"}})
    a, c = coefs(d, "pre-svc")
    pre = a.get("preprocess") or {}
    mu, sd = X.mean(0), X.std(0)
    check(a.get("input_space") == "scaled" and pre.get("scale") == "standardize" and
          rel(pre.get("x_shift", []), mu, 1e-300) <= 1e-12 and
          rel(pre.get("x_scale", []), sd, 1e-300) <= 1e-12,
          "svc standardize: input_space scaled, x_shift and x_scale numpy's mean and std", a)
    Xs = (X - np.array(pre.get("x_shift", mu))) / np.array(pre.get("x_scale", sd))
    ref = SVC(C=1.0, gamma=0.05, tol=1e-6).fit(Xs, yc)
    check(np.array_equal(c["support_"], ref.support_) and
          np.array_equal(c["n_support_"], ref.n_support_) and
          np.array_equal(c["support_vectors_"], Xs[c["support_"].astype(int)]),
          "svc standardize: support_ as SVC's on the scaled rows, support_vectors_ "
          "the scaled rows", (c["n_support_"], ref.n_support_))
    if c["dual_coef_"].shape == ref.dual_coef_.shape:
        e = np.max(np.abs(c["dual_coef_"] - ref.dual_coef_))
        ei = np.max(np.abs(c["intercept_"] - ref.intercept_))
        check(e <= SMO_TOL and ei <= SMO_TOL, f"svc standardize: dual_coef_ and "
              f"intercept_ equal SVC's on the scaled rows (off by {e:.2g}, {ei:.2g})")
    Ts = (T - np.array(pre.get("x_shift", mu))) / np.array(pre.get("x_scale", sd))
    same_answer("pre-svc", rbf(Ts, c["support_vectors_"], 0.05) @ c["dual_coef_"][0] +
                c["intercept_"][0], predict(d, "pre-svc", T, "decision_function"),
                "decision_function on the scaled rows")
    # krr: minmax to [-1, 1] and center_y
    y = X[:, 0] / 10
    Xk, Tk = X[:, 1:], T[:, 1:]
    fit(d, "pre-krr", {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.1},
                       "params": {"alpha": 0.5}, "X": Xk.tolist(), "y": y.tolist(),
                       "preprocess": {"scale": "minmax", "center_y": True}})
    a, c = coefs(d, "pre-krr")
    pre = a.get("preprocess") or {}
    lo, hi = Xk.min(0), Xk.max(0)
    check(a.get("input_space") == "scaled" and pre.get("scale") == "minmax" and
          pre.get("center_y") is True and
          rel(pre.get("x_shift", []), lo + (hi - lo) / 2) <= 1e-12 and
          rel(pre.get("x_scale", []), (hi - lo) / 2) <= 1e-12 and
          rel(pre.get("y_mean", []), [y.mean()]) <= 1e-12,
          "krr minmax, center_y: x_shift, x_scale the centre and half range, y_mean", a)
    sh, sc = np.array(pre.get("x_shift", lo)), np.array(pre.get("x_scale", hi - lo))
    Xs, Ts = (Xk - sh) / sc, (Tk - sh) / sc
    ref = KernelRidge(alpha=0.5, kernel="rbf", gamma=0.1).fit(Xs, y - y.mean()).dual_coef_
    e = rel(c["dual_coef_"].ravel(), ref)
    check(e <= REL_TOL and np.array_equal(c["X_fit_"], Xs),
          f"krr minmax: X_fit_ the scaled rows, dual_coef_ KernelRidge's on them and "
          f"y - mean(y) (max rel {e:.2g})", e)
    same_answer("pre-krr", rbf(Ts, c["X_fit_"], 0.1) @ c["dual_coef_"][:, 0] +
                pre.get("y_mean", [0])[0], predict(d, "pre-krr", Tk), "values + y_mean")
    # center_y alone: preprocess said, the rows as sent
    fit(d, "pre-cy", {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.1},
                      "params": {"alpha": 0.5}, "X": Xs.tolist(), "y": y.tolist(),
                      "preprocess": {"center_y": True}})
    a, _ = coefs(d, "pre-cy")
    check("input_space" not in a and (a.get("preprocess") or {}).get("center_y") is True and
          (a.get("preprocess") or {}).get("scale") == "none",
          "krr center_y only: preprocess with y_mean, no input_space", a)
    a, _ = coefs(d, "krr")
    check("input_space" not in a and "preprocess" not in a,
          "a model without preprocessing: neither member (answers unchanged)", a)


STRINGS = ["acgtacgtaa", "caf\u00e9 cr\u00e8me", 'say "hi"', "back\\slash\ttab", "",
           "ggcattacgg", "acgtt", "\u00e9\u00e9\u00e9 acg", "tttttttt", "cagtcagt"]


def string_cases(d):
    spec = {"type": "spectrum", "length": 3}
    T = ["acgtac", "caf\u00e9", "gcatt"]
    y = [float(i % 3) for i in range(len(STRINGS))]
    fit(d, "str-krr", {"algorithm": "krr", "kernel": spec, "X": STRINGS, "y": y,
                       "params": {"alpha": 0.5}})
    a, _ = coefs(d, "str-krr")
    xf = a.get("coefficients", {}).get("X_fit_", {})
    check(xf.get("dtype") == "string" and xf.get("shape") == [len(STRINGS)] and
          xf.get("values") == STRINGS, "str-krr: X_fit_ is the training strings (dtype string)", xf)
    dual = np.array(a["coefficients"]["dual_coef_"]["values"], float)
    want = np.array(ref.gram(spec, T, xf.get("values", STRINGS))) @ dual
    same_answer("str-krr", want[:, 0], predict(d, "str-krr", T), "predictions")
    labels = [i % 2 for i in range(len(STRINGS))]
    fit(d, "str-svc", {"algorithm": "svc", "kernel": spec, "X": STRINGS, "y": labels})
    a, c = coefs(d, "str-svc")
    sv = a["coefficients"]["support_vectors_"]
    check(sv["dtype"] == "string" and
          sv["values"] == [STRINGS[i] for i in c["support_"].astype(int)],
          "str-svc: support_vectors_ are the strings at support_", sv)
    dec = np.array(ref.gram(spec, T, sv["values"])) @ c["dual_coef_"][0] + c["intercept_"][0]
    same_answer("str-svc", dec, predict(d, "str-svc", T, "decision_function"), "decision values")
    pages, off = [], 0
    while off is not None:
        p = d.req("GET", f"/v1/models/str-krr/coefficients?offset={off}&limit=3").json()
        pages += p["coefficients"]["X_fit_"]["values"]
        off = p.get("next_offset")
    check(pages == STRINGS, "str-krr: pages of 3 strings put together are the whole answer", pages)
    fit(d, "str-wide", {"algorithm": "krr", "kernel": spec, "X": STRINGS, "y": y,
                        "max_length": 65536})
    most = 1000000 // (1 + 10923 + 1)
    r = d.req("GET", "/v1/models/str-wide/coefficients?limit=100000")
    check(r.status == 400 and f"1 to {most}" in r.body,
          f"str-wide: a string of max_length 65536 counts its 10924 doubles: at most {most} "
          "rows a page", r)


def paging(d):
    full = d.req("GET", "/v1/models/svc-multi/coefficients").json()
    total = full["total_rows"]
    check(full["offset"] == 0 and full["limit"] == 1000 and
          full["rows"] == min(total, 1000) and "next_offset" not in full,
          "paging: default offset 0, limit 1000, every row", full.get("rows"))
    got, off = None, 0
    while off is not None:
        p = d.req("GET", f"/v1/models/svc-multi/coefficients?offset={off}&limit=37").json()
        check(p["total_rows"] == total and p["rows"] == min(37, total - off),
              f"paging: page at {off} has its rows", p["rows"])
        if got is None:
            got = p["coefficients"]
        else:
            for k, v in p["coefficients"].items():
                ax = v["paged_axis"]
                if ax == 0:
                    got[k]["values"] += v["values"]
                elif ax == 1:
                    for i, row in enumerate(v["values"]):
                        got[k]["values"][i] += row
        off = p.get("next_offset")
    check(got == full["coefficients"], "paging: pages of 37 put together are "
          "the whole answer")
    for q, param, status in (("offset=abc", "offset", 400), ("offset=-1", "offset", 400),
                             (f"offset={total + 1}", "offset", 400),
                             ("limit=0", "limit", 400), ("limit=1.5", "limit", 400),
                             ("limit=100001", "limit", 400), ("limit=", "limit", 400),
                             ("page=2", "page", 400)):
        r = d.req("GET", f"/v1/models/svc-multi/coefficients?{q}")
        msg = ((r.json() or {}).get("error") or {}).get("message", "")
        check(r.status == status and param in msg,
              f"paging: ?{q} is {status} naming {param}", r)
    # a wide model's page holds at most 1,000,000 values: a lower maximum
    a = d.req("GET", "/v1/models/kpca/coefficients?limit=1").json()
    per = sum(v["shape"][1 - v["paged_axis"]] if len(v["shape"]) == 2 else 1
              for v in a["coefficients"].values() if v["paged_axis"] is not None)
    most = min(1000000 // per, 100000)
    r = d.req("GET", "/v1/models/kpca/coefficients?limit=100000")
    msg = ((r.json() or {}).get("error") or {}).get("message", "")
    check(per == 64 + 8 and r.status == 400 and f"1 to {most}" in msg,
          f"paging: a page of kpca's {per} values a row takes at most {most} "
          "rows; more is 400 saying so", r)
    r = d.req("GET", f"/v1/models/kpca/coefficients?limit={most}")
    check(r.status == 200 and r.json()["limit"] == most,
          f"paging: limit {most} is taken", r)
    r = d.req("GET", f"/v1/models/svc-multi/coefficients?offset={total}")
    check(r.status == 200 and r.json()["rows"] == 0,
          "paging: offset total_rows is an empty page", r)


def versions(server):
    X = [[0.0, 0.0], [1.0, 0.5], [0.3, 2.0], [2.0, 1.0], [1.5, 1.5]]
    y = [0.0, 1.0, 2.0, 1.5, 0.5]
    with run.temp_daemon(server, "kmserve-coefv-", "--keep-versions", "2") as d:
        answers = {}
        for v, alpha in ((1, 0.1), (2, 1.0), (3, 10.0)):
            d.req("POST", "/v1/models/m/fit", {
                "algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.5},
                "params": {"alpha": alpha}, "X": X, "y": y})
            answers[v] = d.req("GET", "/v1/models/m/coefficients").json()
        r = d.req("GET", "/v1/models/m/versions/2/coefficients")
        check(r.status == 200 and r.json() == answers[2] and
              r.json()["model"]["version"] == 2 and answers[2] != answers[3],
              "versions: version 2 answers its own coefficients", r)
        r = d.req("GET", "/v1/models/m/versions/3/coefficients")
        check(r.status == 200 and r.json() == answers[3],
              "versions: the current version as the unpinned route", r)
        for v, status in (("1", 404), ("9", 404), ("x", 400)):
            r = d.req("GET", f"/v1/models/m/versions/{v}/coefficients")
            check(r.status == status, f"versions: version {v} is {status}"
                  + (" (pruned)" if v == "1" else ""), r)


def scope(server):
    """With tokens, the route needs a read token."""
    base = tempfile.mkdtemp(prefix="kmserve-coeft-")
    tokens = os.path.join(base, "tokens")
    admin, read = "admin-" + "a" * 20, "read-" + "r" * 20
    with open(tokens, "w") as f:
        f.write(f"{admin} admin\n{read} read\n")
    with run.temp_daemon(server, "kmserve-coeft-", "--token-file", tokens) as d:
        d.req("POST", "/v1/models/t/fit", run.fit_body([[0.0], [1.0]], [0.0, 1.0]),
              headers=[("Authorization", f"Bearer {admin}")])
        r = d.req("GET", "/v1/models/t/coefficients")
        check(r.status == 401, "tokens: coefficients without a token is 401", r)
        r = d.req("GET", "/v1/models/t/coefficients",
                  headers=[("Authorization", f"Bearer {read}")])
        check(r.status == 200, "tokens: a read token reads coefficients", r)
    shutil.rmtree(base, ignore_errors=True)


def every_algorithm(d):
    algos = {a["name"] if isinstance(a, dict) else a
             for a in (d.req("GET", "/v1").json() or {}).get("algorithms", [])}
    check(algos and algos <= fitted, "every algorithm /v1 lists was fitted "
          "here", (sorted(algos), sorted(fitted)))
    r = d.req("GET", "/v1/models/none/coefficients")
    check(r.status == 404 and "none" in r.body, "a missing model is 404", r)
    r = d.req("POST", "/v1/models/krr/coefficients", {})
    check(r.status == 405 and "GET" in r.headers.get("allow", ""),
          "POST is 405 with Allow: GET", r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    X, y = run.load_csv("breast_cancer.csv")
    bc = {"X": run.scale_minmax(X, 400), "yf": [float(v) for v in y],
          "yi": [int(float(v)) for v in y]}
    Xs, ys = run.load_csv("satellite.csv", 600)
    sat = {"X": run.scale_minmax(Xs, 600), "y": ys}
    Xd, _ = run.load_csv("digits.csv")
    digits = run.scale_minmax(Xd, 600)

    def body(d):
        krr_cases(d, bc)
        svc_cases(d, bc, sat)
        kpca_cases(d, digits)
        gpr_cases(d)
        klr_cases(d, bc)
        kkmeans_cases(d)
        import_cases(d)
        preprocess_cases(d)
        string_cases(d)
        paging(d)
        every_algorithm(d)
        versions(args.server)
        scope(args.server)

    return run.with_daemon(args.server, "kmserve-coef-", body)


if __name__ == "__main__":
    sys.exit(main())
