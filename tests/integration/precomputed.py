#!/usr/bin/python3
"""Precomputed kernels over HTTP ({"type": "precomputed"}: X the n x n
Gram at fit, rows of n kernel values against the training rows at
predict), on an rbf Gram computed here with numpy (gamma 0.4, 80 seeded
rows of 4 features; 30 new rows).

- Against scikit-learn's kernel="precomputed" on the same Gram: svc
  (binary and 3 classes, tol 1e-9) labels equal and decision values (ovo)
  to 1e-6, its support_ equal, intercept_ to 1e-6 and dual_coef_ to 1e-5
  (a dual coefficient is less determined than the decision values: the
  two SMOs stop up to 2e-6 apart on them),
  support_vectors_ of shape 0 x 0 as scikit-learn's; svr (tol 1e-9)
  predictions and intercept_ to 1e-6, dual_coef_ to 1e-5; krr (KernelRidge)
  predictions and dual_coef_ to 1e-9 and X_fit_ the Gram given, exactly;
  kpca (KernelPCA, dense) projections of new rows and of the training
  rows to 1e-8 up to each component's sign, eigenvalues to 1e-8.
- Against kmserve's own rbf fit on the rows (the same kernel computed by
  kmserve): svc, svr, krr, klr, kpca answers equal to 1e-8 (relative,
  floor 1), klr probabilities too; klr's dual coefficients equal.
- Refusals: gpr and kkmeans 400 naming why (k(x, x) of new rows); kpca
  with fit_inverse_transform 400 (rows of numbers); a Gram that is not
  square, not symmetric (one entry off by 1e-6), or of strings 400;
  predict with one value too few or too many per row 400 naming the
  width; a precomputed kernel inside a sum 400; kernel.gamma searched
  400.
- Search: svc over C with cv.test_fold equals scikit-learn's
  GridSearchCV(SVC(kernel="precomputed"), PredefinedSplit) mean test
  accuracies exactly (to 1e-12) and best C; krr over alpha with 4 folds
  equals GridSearchCV(KernelRidge(kernel="precomputed"), KFold(4)) r2 to
  1e-8; krr's closed-form leave-one-out equals numpy's brute force (n
  refits on K[train][:, train]) to 1e-9.
- Coefficients of a nystrom krr on the Gram: centres_ are rows of the
  Gram, centre_indices_ their rows (centres_ == K[centre_indices_]).
- Restart: after the daemon restarts every model answers the same, to
  the bit, and keeps its input (kind precomputed, n_training 80).
Usage, from the project root:
    /usr/bin/python3 tests/integration/precomputed.py --server build/kmserve
Needs numpy and scikit-learn. Ends with "N passed, N failed".
"""
import argparse
import os
import sys

import numpy as np
from sklearn.decomposition import KernelPCA
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV, KFold, PredefinedSplit
from sklearn.svm import SVC, SVR

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

GAMMA = 0.4
PRE = {"type": "precomputed"}
RBF = {"type": "rbf", "gamma": GAMMA}


def close(a, b, tol):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= tol * np.maximum(1, np.abs(b))))


def worst(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b))) if a.shape == b.shape else f"shapes {a.shape} {b.shape}"


def rbf(A, B):
    sq = (A ** 2).sum(1)[:, None] + (B ** 2).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-GAMMA * np.maximum(sq, 0))


def data():
    rng = np.random.default_rng(26)
    X = rng.normal(size=(110, 4))
    K = rbf(X[:80], X[:80])
    K = (K + K.T) / 2
    np.fill_diagonal(K, 1.0)
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=110)
    y2 = np.where(X[:, 0] + X[:, 1] + 0.5 * rng.normal(size=110) > 0, 1, -1)
    y3 = np.digitize(X[:, 0] + 0.3 * rng.normal(size=110), [-0.5, 0.5])
    return dict(X=X[:80], Xt=X[80:], K=K, Kt=rbf(X[80:], X[:80]), y=y[:80],
                y2=y2[:80], y3=y3[:80])


def fit(d, name, algorithm, kernel, X, y=None, **params):
    body = {"algorithm": algorithm, "kernel": kernel, "X": np.asarray(X).tolist(),
            "params": params}
    if y is not None:
        body["y"] = np.asarray(y).tolist()
    return d.req("POST", f"/v1/models/{name}/fit", body)


def predict(d, name, X, output=None, route="predict"):
    body = {"X": np.asarray(X).tolist()}
    if output:
        body["output"] = output
    r = d.req("POST", f"/v1/models/{name}/{route}", body)
    key = "projections" if route == "project" else "predictions"
    return np.array((r.json() or {}).get(key, []), float)


def coefs(d, name):
    return (d.req("GET", f"/v1/models/{name}/coefficients").json() or {}).get("coefficients", {})


def values(c, name):
    return np.array(c.get(name, {}).get("values", []), float)


def fit_pair(d, name, algorithm, D, y, **params):
    """The precomputed fit (name) and the rbf fit on the rows (name-rbf)."""
    a = fit(d, name, algorithm, PRE, D["K"], y, **params)
    b = fit(d, name + "-rbf", algorithm, RBF, D["X"], y, **params)
    ok = check(a.status == 201 and b.status == 201, f"{name}: precomputed and rbf fits", (a, b))
    if ok:
        meta = a.json()["model"]
        check(meta.get("input") == {"kind": "precomputed", "n_training": 80} and
              meta["n_samples"] == 80, f"{name}: input kind precomputed, n_training 80", meta)
    return ok


def same_as_rbf(d, name, D, outputs, route="predict"):
    for out in outputs:
        a = predict(d, name, D["Kt"], out, route)
        b = predict(d, name + "-rbf", D["Xt"], out, route)
        check(a.size and close(a, b, 1e-8),
              f"{name}: {out or route} equal kmserve's rbf fit on the rows to 1e-8", worst(a, b))


# ---------------------------------------------------------------- scikit-learn

def scenario_svc(d, D):
    for name, y in (("svc2", D["y2"]), ("svc3", D["y3"])):
        if not fit_pair(d, name, "svc", D, y, C=2, tol=1e-9):
            continue
        ref = SVC(kernel="precomputed", C=2, tol=1e-9, decision_function_shape="ovo").fit(D["K"], y)
        got = predict(d, name, D["Kt"])
        check(got.tolist() == ref.predict(D["Kt"]).tolist(), f"{name}: labels equal scikit-learn's")
        dec = predict(d, name, D["Kt"], "decision_function")
        want = ref.decision_function(D["Kt"])
        check(close(dec, want, 1e-6), f"{name}: decision values equal scikit-learn's (ovo) to 1e-6",
              worst(dec, want))
        c = coefs(d, name)
        check(values(c, "support_").tolist() == ref.support_.tolist() and
              close(values(c, "dual_coef_"), ref.dual_coef_, 1e-5) and
              close(values(c, "intercept_"), ref.intercept_, 1e-6) and
              values(c, "n_support_").tolist() == ref.n_support_.tolist(),
              f"{name}: support_, n_support_ equal scikit-learn's; dual_coef_ to 1e-5, "
              "intercept_ to 1e-6", (worst(values(c, "dual_coef_"), ref.dual_coef_),
                                     worst(values(c, "intercept_"), ref.intercept_)))
        check(c.get("support_vectors_", {}).get("shape") == list(ref.support_vectors_.shape) == [0, 0]
              and c["support_vectors_"]["values"] == [],
              f"{name}: support_vectors_ of shape [0, 0], as scikit-learn's", c.get("support_vectors_"))
        same_as_rbf(d, name, D, ("decision_function", None))


def scenario_svr(d, D):
    if not fit_pair(d, "svr", "svr", D, D["y"], C=2, epsilon=0.1, tol=1e-9):
        return
    ref = SVR(kernel="precomputed", C=2, epsilon=0.1, tol=1e-9).fit(D["K"], D["y"])
    got, want = predict(d, "svr", D["Kt"]), ref.predict(D["Kt"])
    check(close(got, want, 1e-6), "svr: predictions equal scikit-learn's to 1e-6", worst(got, want))
    c = coefs(d, "svr")
    check(values(c, "support_").tolist() == ref.support_.tolist() and
          close(values(c, "dual_coef_"), ref.dual_coef_, 1e-5) and
          close(values(c, "intercept_"), ref.intercept_, 1e-6) and
          c["support_vectors_"]["shape"] == [0, 0],
          "svr: support_ equal scikit-learn's, dual_coef_ to 1e-5 and intercept_ to 1e-6, "
          "no support vectors", (worst(values(c, "dual_coef_"), ref.dual_coef_),
                                 worst(values(c, "intercept_"), ref.intercept_)))
    same_as_rbf(d, "svr", D, (None,))


def scenario_krr(d, D):
    if not fit_pair(d, "krr", "krr", D, D["y"], alpha=0.3):
        return
    ref = KernelRidge(kernel="precomputed", alpha=0.3).fit(D["K"], D["y"])
    got, want = predict(d, "krr", D["Kt"]), ref.predict(D["Kt"])
    check(close(got, want, 1e-9), "krr: predictions equal KernelRidge's to 1e-9", worst(got, want))
    c = coefs(d, "krr")
    check(close(values(c, "dual_coef_")[:, 0], ref.dual_coef_, 1e-9),
          "krr: dual_coef_ equals KernelRidge's to 1e-9")
    check(c.get("X_fit_", {}).get("shape") == list(ref.X_fit_.shape) == [80, 80] and
          values(c, "X_fit_").tolist() == D["K"].tolist(),
          "krr: X_fit_ is the Gram given (KernelRidge's X_fit_), exactly, without the index column",
          c.get("X_fit_", {}).get("shape"))
    same_as_rbf(d, "krr", D, (None,))


def scenario_kpca(d, D):
    if not fit_pair(d, "kpca", "kpca", D, None, n_components=3):
        return
    ref = KernelPCA(kernel="precomputed", n_components=3, eigen_solver="dense").fit(D["K"])
    for what, K, want in (("new rows", D["Kt"], ref.transform(D["Kt"])),
                          ("training rows", D["K"][:10], ref.transform(D["K"][:10]))):
        got = predict(d, "kpca", K, route="project")
        sign = np.sign((got * want).sum(0)) if got.shape == want.shape else 1
        check(close(got * sign, want, 1e-8),
              f"kpca: projections of {what} equal KernelPCA's to 1e-8 (up to sign)",
              worst(got * sign, want))
    c = coefs(d, "kpca")
    check(close(values(c, "eigenvalues_"), ref.eigenvalues_, 1e-8) and
          values(c, "X_fit_").tolist() == D["K"].tolist(),
          "kpca: eigenvalues_ equal KernelPCA's to 1e-8; X_fit_ the Gram given")
    a = np.abs(predict(d, "kpca", D["Kt"], route="project"))
    b = np.abs(predict(d, "kpca-rbf", D["Xt"], route="project"))
    check(close(a, b, 1e-8), "kpca: projections equal kmserve's rbf fit on the rows to 1e-8 "
          "(up to sign)", worst(a, b))


def scenario_klr(d, D):
    if not fit_pair(d, "klr", "klr", D, D["y3"], **{"lambda": 0.1}):
        return
    same_as_rbf(d, "klr", D, (None, "probability", "decision_function"))
    a, b = coefs(d, "klr"), coefs(d, "klr-rbf")
    check(close(values(a, "dual_coef_"), values(b, "dual_coef_"), 1e-8) and
          close(values(a, "intercept_"), values(b, "intercept_"), 1e-8) and
          values(a, "X_fit_").tolist() == D["K"].tolist(),
          "klr: dual_coef_ and intercept_ equal the rbf fit's to 1e-8; X_fit_ the Gram given")


# ---------------------------------------------------------------- refusals

def scenario_refusals(d, D):
    K = D["K"].tolist()
    for algo, params, why in (
            ("gpr", {}, "gpr does not take a precomputed kernel (inputs: precomputed): its answers "
             "need k(x, x) of new rows"),
            ("kkmeans", {"n_clusters": 2}, "kkmeans does not take a precomputed kernel "
             "(inputs: precomputed): its answers need k(x, x) of new rows"),
            ("kpca", {"n_components": 2, "fit_inverse_transform": True},
             "what it learns of X beyond the kernel needs rows of numbers")):
        r = fit(d, "refused", algo, PRE, K, D["y"] if algo == "gpr" else None, **params)
        check(r.status == 400 and why in r.body, f"{algo} {params or ''}: 400 naming why", r)
    bad = D["K"].copy()
    bad[3, 5] += 1e-6
    for what, X, text in (
            ("not square", D["K"][:, :79], "X has 80 rows of 79 values; a precomputed kernel's X is "
             "the square n x n Gram matrix"),
            ("not symmetric", bad, "X, a precomputed Gram matrix, is not symmetric: "
             "max |X[i][j] - X[j][i]| = 1e-06"),
            ("strings", ["a"] * 80, "X[0] is a string, but a precomputed kernel takes "
             "kernel values"),
            ("a string in a row", [["a"] * 80] * 80, "X[0][0] must be a number, not a string")):
        r = fit(d, "refused", "krr", PRE, X, D["y"])
        check(r.status == 400 and text in r.body, f"a Gram {what}: 400", r)
    r = fit(d, "refused", "krr", {"type": "sum", "kernels": [PRE, RBF]}, D["X"], D["y"])
    check(r.status == 400 and "a precomputed kernel is the whole kernel" in r.body,
          "a precomputed kernel in a sum: 400", r)
    for cols in (79, 81):
        Z = np.hstack([D["Kt"], D["Kt"][:, :1]])[:, :cols]
        r = d.req("POST", "/v1/models/krr/predict", {"X": Z.tolist()})
        check(r.status == 400 and f"X[0] has {cols} values; a precomputed model takes one kernel "
              "value per training row: 80" in r.body, f"predict with {cols} values a row: 400", r)
    r = d.req("POST", "/v1/models/refused/fit", {
        "algorithm": "krr", "kernel": PRE, "X": K, "y": D["y"].tolist(),
        "search": {"params": {"kernel.gamma": [0.1, 1]}, "cv": 3}})
    check(r.status == 400 and "a precomputed kernel takes no gamma" in r.body,
          "search over kernel.gamma of a precomputed kernel: 400", r)
    check(d.req("GET", "/v1/models/refused").status == 404, "refused fits create nothing")


# ---------------------------------------------------------------- search

def search_fit(d, name, algorithm, X, y, params, cv, **extra):
    r = d.req("POST", f"/v1/models/{name}/fit", {
        "algorithm": algorithm, "kernel": PRE, "X": np.asarray(X).tolist(),
        "y": np.asarray(y).tolist(), "params": extra, "search": {"params": params, "cv": cv}})
    return r.json()["model"]["search"] if r.status == 201 else check(False, f"{name}: fit", r)


def scenario_search(d, D):
    K, y2, y = D["K"], D["y2"], D["y"]
    folds = [i % 3 for i in range(80)]
    s = search_fit(d, "svc-search", "svc", K, y2, {"C": [0.1, 1, 10]}, {"test_fold": folds}, tol=1e-9)
    ref = GridSearchCV(SVC(kernel="precomputed", tol=1e-9), {"C": [0.1, 1, 10]},
                       cv=PredefinedSplit(folds), scoring="accuracy").fit(K, y2)
    if s:
        got = [p["mean_score"] for p in s["results"]]
        check(close(got, ref.cv_results_["mean_test_score"], 1e-12) and
              s["best_params"] == {"C": ref.best_params_["C"]},
              "svc search over C (test_fold) equals GridSearchCV's mean accuracies and best C",
              (got, ref.cv_results_["mean_test_score"].tolist()))
    s = search_fit(d, "krr-search", "krr", K, y, {"alpha": [0.01, 0.1, 1]}, 4)
    ref = GridSearchCV(KernelRidge(kernel="precomputed"), {"alpha": [0.01, 0.1, 1]},
                       cv=KFold(4), scoring="r2").fit(K, y)
    if s:
        got = [p["mean_score"] for p in s["results"]]
        check(close(got, ref.cv_results_["mean_test_score"], 1e-8) and
              s["best_params"] == ref.best_params_,
              "krr search over alpha (4 folds) equals GridSearchCV's r2 to 1e-8",
              (got, ref.cv_results_["mean_test_score"].tolist()))
    s = search_fit(d, "krr-loo", "krr", K, y, {"alpha": [0.05, 0.5]}, "loo")
    if s:
        for p in s["results"]:
            a, pred = p["params"]["alpha"], np.empty(80)
            for i in range(80):
                tr = np.arange(80) != i
                coef = np.linalg.solve(K[np.ix_(tr, tr)] + a * np.eye(79), y[tr])
                pred[i] = K[i, tr] @ coef
            r2 = 1 - ((y - pred) ** 2).sum() / ((y - y.mean()) ** 2).sum()
            check(close(p["mean_score"], r2, 1e-9),
                  f"krr leave-one-out (alpha {a}) equals numpy's 80 refits to 1e-9",
                  (p["mean_score"], r2))


def scenario_nystrom(d, D):
    r = fit(d, "krr-nys", "krr", PRE, D["K"], D["y"], solver="nystrom", n_centres=12)
    if not check(r.status == 201, "nystrom krr on the Gram: fit", r):
        return
    c = coefs(d, "krr-nys")
    idx = values(c, "centre_indices_").astype(int)
    check(c.get("centre_indices_", {}).get("dtype") == "int64" and len(set(idx.tolist())) == 12 and
          values(c, "centres_").tolist() == D["K"][idx].tolist(),
          "nystrom krr: centres_ are rows of the Gram, centre_indices_ which rows", idx.tolist())


# ---------------------------------------------------------------- restart

def scenario_restart(d, D):
    routes = {"svc2": ("predict", "decision_function"), "svc3": ("predict", None),
              "svr": ("predict", None), "krr": ("predict", None), "klr": ("predict", "probability"),
              "kpca": ("project", None), "svc-search": ("predict", None), "krr-nys": ("predict", None)}
    before = {n: predict(d, n, D["Kt"], out, route) for n, (route, out) in routes.items()}
    meta = {n: d.req("GET", f"/v1/models/{n}").json() for n in routes}
    d.stop()
    d.start()
    for n, (route, out) in routes.items():
        after = predict(d, n, D["Kt"], out, route)
        m = d.req("GET", f"/v1/models/{n}").json()
        check(after.size and after.tolist() == before[n].tolist() and
              m.get("input") == meta[n].get("input") == {"kind": "precomputed", "n_training": 80},
              f"restart: {n} answers the same to the bit, input kept", m.get("input"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    D = data()

    def body(d):
        for s in (scenario_svc, scenario_svr, scenario_krr, scenario_kpca, scenario_klr,
                  scenario_refusals, scenario_search, scenario_nystrom, scenario_restart):
            try:
                s(d, D)
            except Exception as e:  # a crash of a scenario is a failure; the rest run
                check(False, f"{s.__name__}: runner", repr(e))

    return run.with_daemon(args.server, "kmserve-precomputed-", body)


if __name__ == "__main__":
    sys.exit(main())
