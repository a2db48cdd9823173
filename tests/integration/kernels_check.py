#!/usr/bin/python3
"""The kernel routes, over HTTP, against numpy: POST /v1/kernels/check's
PSD report (eigenvalues as numpy.linalg.eigvalsh's, to 1e-9 relative of
the largest; the condition number of K + alpha I; the effective dimension
sum max(s, 0) / (max(s, 0) + alpha); the count of eigenvalues below
-n * eps * max|s|) for rbf, polynomial, laplacian, a sum and a sigmoid
that is not PSD, and its seeded subsample beyond 2000 rows (the same
subsample, drawn again here with the server's splitmix64, gives the same
eigenvalues); POST /v1/kernels/gram's K(X, Z) against the kernels'
formulas written out in numpy; hostile bodies (a missing kernel, wrong
shapes, NaN, strings in X, alpha <= 0, K over its cap, a report over the
memory budget) answered 400 or 413 with a message naming the field or
the cap. A krr fit of the non-PSD sigmoid: its 422 carries the smallest
eigenvalue of K + alpha I, as numpy's; a kpca dense fit of it has the
training figures min_eigenvalue (numpy's of the centred Gram) and psd
false, one of rbf neither. Every algorithm of GET /v1 fitted with a
sigmoid that is mildly indefinite on the rows: psd false and
min_eigenvalue as numpy's eigvalsh of the Gram (kpca: centred) to 1e-8
relative, also for other solvers (kpca randomized, krr nystrom), a sum
with a sigmoid part and standardized rows; with rbf none of those
figures; beyond 1000 rows the seeded subsample's min_eigenvalue_at_most
and psd_rows; gpr's and klr's 422 on a failed Cholesky carry the
smallest eigenvalue; gpr nystrom's variance says the shift (kmm_shift)
an indefinite K_mm of its centres needed, and none with rbf.
Usage, from the project root:
    python3 tests/integration/kernels_check.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

EPS = np.finfo(float).eps


def k_rbf(X, Z, g):
    d2 = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return np.exp(-g * d2)


def k_lap(X, Z, g):
    return np.exp(-g * np.abs(X[:, None, :] - Z[None, :, :]).sum(-1))


def k_poly(X, Z, g, c0, deg):
    return (g * X @ Z.T + c0) ** deg


def k_sig(X, Z, g, c0):
    return np.tanh(g * X @ Z.T + c0)


CASES = {
    "rbf": ({"type": "rbf", "gamma": 0.3}, lambda X, Z: k_rbf(X, Z, 0.3)),
    "polynomial": ({"type": "polynomial", "gamma": 0.5, "coef0": 1.0, "degree": 3},
                   lambda X, Z: k_poly(X, Z, 0.5, 1.0, 3)),
    "polynomial_neg": ({"type": "polynomial", "gamma": 0.5, "coef0": -2.0, "degree": 3},
                       lambda X, Z: k_poly(X, Z, 0.5, -2.0, 3)),
    "laplacian": ({"type": "laplacian", "gamma": 0.2}, lambda X, Z: k_lap(X, Z, 0.2)),
    "sigmoid": ({"type": "sigmoid", "gamma": 0.8, "coef0": -1.0},
                lambda X, Z: k_sig(X, Z, 0.8, -1.0)),
    "sum": ({"type": "sum", "kernels": [{"type": "rbf", "gamma": 0.3},
                                        {"type": "linear"}], "weights": [2.0, 0.5]},
            lambda X, Z: 2.0 * k_rbf(X, Z, 0.3) + 0.5 * (X @ Z.T)),
}


def report(K, alpha):
    """numpy's figures of the report for the Gram K."""
    s = np.linalg.eigvalsh((K + K.T) / 2)
    n = len(s)
    thr = n * EPS * np.abs(s).max()
    c = np.clip(s, 0, None)
    sa = np.abs(s + alpha)
    return {"min": s[0], "max": s[-1], "threshold": thr,
            "n_negative": int((s < -thr).sum()),
            "cond": sa.max() / sa.min(), "eff": float((c / (c + alpha)).sum())}


def close(a, b, scale, tol):
    return a is not None and abs(a - b) <= tol * abs(scale)


def check_report(got, want, n, what):
    e = got.get("eigenvalues", {})
    top = max(abs(want["min"]), abs(want["max"]))
    check(got.get("n") == n and close(e.get("min"), want["min"], top, 1e-9) and
          close(e.get("max"), want["max"], top, 1e-9),
          f"{what}: n and extreme eigenvalues as numpy's eigvalsh to 1e-9 of the largest",
          (got, want))
    check(e.get("n_negative") == want["n_negative"] and
          close(e.get("negative_threshold"), want["threshold"], want["threshold"], 1e-6) and
          got.get("psd") == (want["n_negative"] == 0),
          f"{what}: negative eigenvalues beyond n*eps*max|s| counted ({want['n_negative']})",
          (e, want))
    check(close(got.get("condition_number"), want["cond"], want["cond"], 1e-6) and
          close(got.get("effective_dimension"), want["eff"], want["eff"], 1e-9),
          f"{what}: condition number of K + alpha I and effective dimension", (got, want))
    s = got.get("symmetry", {})
    check(s.get("symmetric") is True and s.get("max_asymmetry", 1) <= s.get("tolerance", 0),
          f"{what}: symmetric within its tolerance", s)


def splitmix_subsample(n, m, seed):
    """The server's subsample (core/kernels/km_psd.c): a partial
    Fisher-Yates shuffle by km_rng (splitmix64), sorted."""
    mask = (1 << 64) - 1
    state = [seed & mask]

    def nxt():
        state[0] = (state[0] + 0x9E3779B97F4A7C15) & mask
        z = state[0]
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    def below(k):
        return nxt() % k

    idx = list(range(n))
    for i in range(m):
        j = i + below(n - i)
        idx[i], idx[j] = idx[j], idx[i]
    return sorted(idx[:m])


# What a fit of each algorithm needs beyond its defaults here (the
# algorithms themselves are GET /v1's): gpr's default noise (1e-10) would
# fail its Cholesky on an indefinite kernel; kkmeans has no default k.
FIT_PARAMS = {"gpr": {"noise": 1.0}, "kkmeans": {"n_clusters": 2, "n_init": 1},
              "kpca": {"n_components": 2}}
# A sigmoid indefinite on the seeded X of main, mildly (smallest eigenvalue
# about -0.32 of a largest about 28), so that every fit succeeds.
MILD = ({"type": "sigmoid", "gamma": 0.05, "coef0": 0.5}, lambda X, Z: k_sig(X, Z, 0.05, 0.5))
PSD_KEYS = ("psd", "min_eigenvalue", "min_eigenvalue_at_most", "psd_rows")


def fit_training(d, name, algo, target, kernel, X, params=None, extra=None):
    """Fits algo (y from X by its target) and answers (status, training)."""
    body = {"algorithm": algo, "kernel": kernel, "X": X.tolist(),
            "params": dict(FIT_PARAMS.get(algo, {}), **(params or {}))}
    if target == "values":
        body["y"] = X[:, 0].tolist()
    elif target == "classes":
        body["y"] = (X[:, 0] > 0).astype(int).tolist()
    body.update(extra or {})
    r = d.req("POST", f"/v1/models/{name}/fit", body)
    return r, ((r.json() or {}).get("model") or {}).get("training", {})


def fits_psd_figures(d, X, rng):
    """Every algorithm's fit of a kernel that is not PSD on its rows says
    so: training psd false and min_eigenvalue as numpy's eigvalsh of the
    Gram (kpca: of the centred Gram) to 1e-8 relative; an rbf fit adds
    none of those figures. Beyond 1000 rows: the PSD report's seeded
    subsample (seed 0) of 1000 rows, its smallest eigenvalue as
    min_eigenvalue_at_most (at least the whole Gram's: Cauchy's
    interlacing). A preprocessed fit: the Gram of the scaled rows. gpr's
    and klr's 422 on a failed Cholesky carry the smallest eigenvalue."""
    caps = d.req("GET", "/v1").json()["capabilities"]["algorithms"]
    kern, f = MILD
    n = len(X)
    K = f(X, X)
    H = np.eye(n) - 1.0 / n
    s, sc = np.linalg.eigvalsh(K), np.linalg.eigvalsh(H @ K @ H)
    check(s[0] < -1e-3 * s[-1], "the mild sigmoid is indefinite on X", s[0])

    for a in caps:
        algo, target = a["name"], a["target"]
        r, t = fit_training(d, f"psd-{algo}", algo, target, kern, X)
        w = sc[0] if algo == "kpca" else s[0]  # kpca's matrix is the centred Gram
        check(r.status == 201 and t.get("psd") is False and
              abs(t.get("min_eigenvalue", 0) - w) <= 1e-8 * abs(w) and
              "psd_rows" not in t and "min_eigenvalue_at_most" not in t,
              f"{algo} on a mild sigmoid: psd false, min_eigenvalue {w:.10g} as numpy's", (r, t))
        r, t = fit_training(d, f"rbf-{algo}", algo, target, CASES["rbf"][0], X)
        check(r.status == 201 and not any(k in t for k in PSD_KEYS),
              f"{algo} on rbf: no PSD figures (unchanged)", (r, t))
    # other solvers, the generic figures: kpca randomized (centred), krr
    # nystrom; a sum with a sigmoid part
    for name, algo, params, w in (
            ("kp-rand", "kpca", {"eigen_solver": "randomized"}, sc[0]),
            ("krr-nys", "krr", {"solver": "nystrom", "n_centres": 20}, s[0])):
        r, t = fit_training(d, name, algo, "none" if algo == "kpca" else "values",
                            kern, X, params)
        check(r.status == 201 and t.get("psd") is False and
              abs(t.get("min_eigenvalue", 0) - w) <= 1e-8 * abs(w),
              f"{name}: psd false, min_eigenvalue {w:.10g}", (r, t))
    summ = {"type": "sum", "kernels": [{"type": "rbf", "gamma": 0.3}, kern],
            "weights": [0.1, 1.0]}
    w = np.linalg.eigvalsh(0.1 * k_rbf(X, X, 0.3) + K)[0]
    r, t = fit_training(d, "sum-svc", "svc", "classes", summ, X)
    check(w < -0.1 and r.status == 201 and t.get("psd") is False and
          abs(t.get("min_eigenvalue", 0) - w) <= 1e-8 * abs(w),
          f"svc on 0.1 rbf + sigmoid: psd false, min_eigenvalue {w:.10g}", (r, t))
    # gpr nystrom's variance factors K_mm: with an indefinite K_mm, the
    # shift of its diagonal that made it factor is said (kmm_shift), one
    # of the ladder 1e-13 m mean(diag) 1000^t (t = 0 .. 4) above
    # -min eigenvalue; none with rbf
    for kname, kk, kf in (("sigmoid", kern, f), ("rbf",) + CASES["rbf"]):
        r, t = fit_training(d, f"gnys-{kname}", "gpr", "values", kk, X,
                            {"solver": "nystrom", "n_centres": 20, "variance": True})
        Z = np.array(((d.req("GET", f"/v1/models/gnys-{kname}/coefficients").json() or {})
                      .get("coefficients", {}).get("centres_", {}).get("values", [[0.0] * 3])))
        Kz = kf(Z, Z)
        wz = np.linalg.eigvalsh(Kz)[0]
        ladder = [1e-13 * len(Z) * np.trace(Kz) / len(Z) * 1000.0 ** i for i in range(5)]
        want = next((v for v in ladder if v > -wz * 1.01), None) if wz < 0 else None
        got = t.get("kmm_shift")
        check(r.status == 201 and len(Z) == 20 and
              (got is None if want is None else abs(got - want) <= 1e-12 * want),
              f"gpr nystrom variance, {kname}: kmm_shift {want} (K_mm's smallest "
              f"eigenvalue {wz:.3g})", (r, t))
    # preprocessed: the Gram of the rows the algorithm saw
    Xs = (X - X.mean(0)) / X.std(0)
    w = np.linalg.eigvalsh(f(Xs, Xs))[0]
    r, t = fit_training(d, "pre-svc", "svc", "classes", kern, X,
                        extra={"preprocess": {"scale": "standardize"}})
    check(r.status == 201 and t.get("psd") is False and
          abs(t.get("min_eigenvalue", 0) - w) <= 1e-8 * abs(w),
          f"svc standardized: min_eigenvalue {w:.10g} of the scaled rows' Gram", (r, t))
    # beyond 1000 rows: the seeded subsample
    B = rng.normal(size=(1100, 3))
    S = B[splitmix_subsample(1100, 1000, 0)]
    ws, wb = np.linalg.eigvalsh(f(S, S))[0], np.linalg.eigvalsh(f(B, B))[0]
    r, t = fit_training(d, "big-kkm", "kkmeans", "none", kern, B)
    check(r.status == 201 and t.get("psd") is False and t.get("psd_rows") == 1000 and
          "min_eigenvalue" not in t and
          abs(t.get("min_eigenvalue_at_most", 0) - ws) <= 1e-8 * abs(ws) and ws >= wb,
          f"kkmeans on 1100 rows: psd false on the subsample of 1000, at most {ws:.6g}", (r, t))
    # a failed Cholesky's 422 names the smallest eigenvalue
    kern, f = CASES["sigmoid"]
    w = np.linalg.eigvalsh(f(X, X))[0]
    for algo, params, want, words in (("gpr", {"noise": 0.01}, w + 0.01, "its"),
                                      ("klr", {}, w, "K's")):
        target = "values" if algo == "gpr" else "classes"
        r, _ = fit_training(d, f"fail-{algo}", algo, target, kern, X, params)
        m = err(r).rsplit(f"{words} smallest eigenvalue is ", 1)
        check(r.status == 422 and len(m) == 2 and
              abs(float(m[1].rstrip(")")) - want) <= 1e-5 * abs(want),
              f"{algo} on a sigmoid: 422 with the smallest eigenvalue ({want:.6g})", r)


def err(r):
    return ((r.json() or {}).get("error") or {}).get("message", "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    rng = np.random.default_rng(26)
    X = rng.normal(size=(60, 3))
    Z = rng.normal(size=(7, 3))

    def body(d):
        for case, (kernel, f) in CASES.items():
            alpha = 0.1
            r = d.req("POST", "/v1/kernels/check",
                      {"kernel": kernel, "X": X.tolist(), "alpha": alpha})
            check(r.status == 200, f"{case}: check 200", r)
            got = r.json() or {}
            want = report(f(X, X), alpha)
            check_report(got, want, len(X), case)
            check(got.get("n_given") == len(X) and got.get("subsampled") is False,
                  f"{case}: no subsample under the cap", got)
            r = d.req("POST", "/v1/kernels/gram",
                      {"kernel": kernel, "X": X.tolist(), "Z": Z.tolist()})
            K = np.array((r.json() or {}).get("K", []))
            W = f(X, Z)
            check(r.status == 200 and K.shape == W.shape and
                  np.abs(K - W).max() <= 1e-12 * max(1, np.abs(W).max()),
                  f"{case}: gram K(X, Z) equals numpy's formula", r)
            r = d.req("POST", "/v1/kernels/gram", {"kernel": kernel, "X": Z.tolist()})
            K = np.array((r.json() or {}).get("K", []))
            W = f(Z, Z)
            check(r.status == 200 and K.shape == W.shape and
                  np.abs(K - W).max() <= 1e-12 * max(1, np.abs(W).max()),
                  f"{case}: gram without Z is K(X, X)", r)
        # the sigmoid case is indeed not PSD: the report says so
        r = d.req("POST", "/v1/kernels/check",
                  {"kernel": CASES["sigmoid"][0], "X": X.tolist()})
        got = r.json() or {}
        check(got.get("psd") is False and got["eigenvalues"]["n_negative"] > 0 and
              got.get("alpha") == 1, "sigmoid: not PSD, alpha defaults to 1", got)
        # a krr fit of that kernel fails its Cholesky: the 422 carries the
        # smallest eigenvalue of K + alpha I
        y = X[:, 0].tolist()
        r = d.req("POST", "/v1/models/sig/fit", {
            "algorithm": "krr", "kernel": CASES["sigmoid"][0], "params": {"alpha": 0.01},
            "X": X.tolist(), "y": y})
        want = np.linalg.eigvalsh(CASES["sigmoid"][1](X, X))[0] + 0.01
        m = err(r).rsplit("smallest eigenvalue is ", 1)
        check(r.status == 422 and len(m) == 2 and
              abs(float(m[1].rstrip(")")) - want) <= 1e-5 * abs(want),
              f"krr exact on a sigmoid: 422 with the smallest eigenvalue ({want:.6g})", r)
        # kpca dense computes every eigenvalue of the centred Gram: on the
        # sigmoid its training figures say min_eigenvalue and psd false; on
        # rbf, nothing is added
        H = np.eye(len(X)) - 1.0 / len(X)
        for case, flagged in (("sigmoid", True), ("rbf", False)):
            kern, f = CASES[case]
            r = d.req("POST", f"/v1/models/kp-{case}/fit", {
                "algorithm": "kpca", "kernel": kern,
                "params": {"n_components": 2, "eigen_solver": "dense"}, "X": X.tolist()})
            t = ((r.json() or {}).get("model") or {}).get("training", {})
            s = np.linalg.eigvalsh(H @ f(X, X) @ H)
            if flagged:
                check(r.status == 201 and t.get("psd") is False and
                      abs(t.get("min_eigenvalue", 0) - s[0]) <= 1e-9 * abs(s).max(),
                      f"kpca dense on {case}: psd false, min_eigenvalue {s[0]:.6g}", t)
            else:
                check(r.status == 201 and "psd" not in t and "min_eigenvalue" not in t,
                      f"kpca dense on {case}: no PSD figures (unchanged)", t)
        fits_psd_figures(d, X, rng)

        # default gamma: 1 / n_features, shown resolved
        r = d.req("POST", "/v1/kernels/gram", {"kernel": {"type": "rbf"}, "X": Z.tolist()})
        K = np.array((r.json() or {}).get("K", []))
        check(r.status == 200 and np.abs(K - k_rbf(Z, Z, 1 / 3)).max() <= 1e-12 and
              abs(r.json()["kernel"].get("gamma", 0) - 1 / 3) < 1e-15,
              "gram: the default gamma is 1/n_features, shown in the answer", r)

        # the subsample: 2500 rows, 2000 used, drawn by the seed
        B = rng.normal(size=(2500, 2))
        kern, f = CASES["rbf"]
        r = d.req("POST", "/v1/kernels/check",
                  {"kernel": kern, "X": B.tolist(), "alpha": 0.5, "seed": 11})
        got = r.json() or {}
        check(r.status == 200 and got.get("n") == 2000 and got.get("n_given") == 2500 and
              got.get("subsampled") is True and got.get("seed") == 11 and
              got.get("max_rows") == 2000, "2500 rows: a subsample of 2000, seed 11", got)
        S = B[splitmix_subsample(2500, 2000, 11)]
        if r.status == 200:
            check_report(got, report(f(S, S), 0.5), 2000, "subsample")
        r2 = d.req("POST", "/v1/kernels/check",
                   {"kernel": kern, "X": B.tolist(), "alpha": 0.5, "seed": 11})
        check(r2.body == r.body, "the same seed: the same answer", r2)

        # hostile bodies
        for b, code, text, what in (
                ({"X": X.tolist()}, 400, "kernel is required", "missing kernel"),
                ({"kernel": {"type": "nope"}, "X": X.tolist()}, 400, "kernel.type",
                 "unknown kernel type"),
                ({"kernel": {"type": "rbf"}}, 400, "X is required", "missing X"),
                ({"kernel": {"type": "rbf"}, "X": [[1, 2], [3]]}, 400, "X[1]",
                 "ragged X"),
                ({"kernel": {"type": "rbf"}, "X": [1, 2]}, 400, "X[0]", "X not rows"),
                ({"kernel": {"type": "rbf"}, "X": []}, 400, "X", "empty X"),
                ({"kernel": {"type": "rbf"}, "X": [[1.0], [None]]}, 400, "X[1][0]",
                 "null in X"),
                ({"kernel": {"type": "rbf"}, "X": ["acgt", "ttga"]}, 400, "X[0] is a string",
                 "strings in X"),
                ({"kernel": {"type": "rbf"}, "X": [[1.0, "a"]]}, 400, "X[0][1] must be a number",
                 "a string in a row"),
                ({"kernel": {"type": "rbf"}, "X": [[1.0]], "alpha": 0}, 400, "alpha",
                 "alpha 0"),
                ({"kernel": {"type": "rbf"}, "X": [[1.0]], "alpha": -1}, 400, "alpha",
                 "alpha < 0"),
                ({"kernel": {"type": "rbf"}, "X": [[1.0]], "seed": -1}, 400, "seed",
                 "negative seed"),
                ({"kernel": {"type": "rbf"}, "X": [[1.0]], "bogus": 1}, 400, "bogus",
                 "unknown member")):
            r = d.req("POST", "/v1/kernels/check", b)
            check(r.status == code and text in err(r), f"check, {what}: {code} naming it", r)
        r = d.req("POST", "/v1/kernels/check",
                  '{"kernel": {"type": "rbf"}, "X": [[1.0], [NaN]]}',
                  headers=[("Content-Type", "application/json")])
        check(r.status == 400, "check, NaN in X: 400", r)
        r = d.req("POST", "/v1/kernels/gram",
                  {"kernel": {"type": "rbf"}, "X": [[1.0, 2.0]], "Z": [[1.0]]})
        check(r.status == 400 and "Z[0] has 1 columns; X has 2" in err(r),
              "gram, Z of other width: 400", r)
        r = d.req("POST", "/v1/kernels/gram",
                  {"kernel": {"type": "rbf"}, "X": [[1.0]], "Z": ["a"]})
        check(r.status == 400 and "Z[0] is a string" in err(r), "gram, strings in Z: 400", r)
        r = d.req("POST", "/v1/kernels/gram",
                  {"kernel": {"type": "rbf"}, "X": [[float(i)] for i in range(1001)]})
        check(r.status == 413 and "1001 x 1001" in err(r) and "1000000" in err(r),
              "gram over its cap of rows x cols: 413 with the cap", r)
        r = d.req("POST", "/v1/kernels/check",
                  {"kernel": {"type": "polynomial", "gamma": 100, "degree": 60},
                   "X": [[1e3], [2e3]]})
        check(r.status == 422 and "not finite" in err(r), "check, overflowing K: 422", r)
        r = d.req("GET", "/v1/kernels/check")
        check(r.status == 405, "GET of check: 405", r)

        # over the memory budget: a report that cannot be held is 413
        with run.temp_daemon(args.server, "kmserve-kcheck-",
                             "--memory-budget-mb", "1") as small:
            r = small.req("POST", "/v1/kernels/check",
                          {"kernel": {"type": "rbf"}, "X": B.tolist()})
            check(r.status == 413 and "budget" in err(r),
                  "check over the memory budget: 413", r)
            r = small.req("POST", "/v1/kernels/check",
                          {"kernel": {"type": "rbf"}, "X": X[:5].tolist()})
            check(r.status == 200, "a small check under the same budget: 200", r)

    return run.with_daemon(args.server, "kmserve-kcheck-", body)


if __name__ == "__main__":
    sys.exit(main())
