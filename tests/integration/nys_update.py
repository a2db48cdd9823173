#!/usr/bin/python3
"""Updates of krr nystrom models (params.keep_factor with solver nystrom)
over HTTP, against a direct solve written here.

A model fitted with keep_factor keeps its centres and the normal
equations' sums; an update appends rows and re-solves by CG warm-started
at the old coefficients. The reference: the centres read back from
GET /coefficients (centres_), the normal equations
(K_nm^T K_nm + alpha K_mm) C = K_nm^T y over all the rows so far solved
here by Gaussian elimination, and k(T, centres) C; the updated model
predicts it to 1e-6 relative (cg_tol 1e-10), after each of two updates
(one output, then two outputs), its centres unchanged, n_samples the
number of centres, updatable true, training.rows_added and updates as
sent, iterations and a residual at most cg_tol. A nystrom model without
keep_factor is 409 naming keep_factor and nystrom; keep_factor with the
rff solver is 400 naming the field. After a restart the updated model
(format version 10 on disk) answers bit for bit and is updated again.

gpr nystrom models fitted with keep_factor (with normalize_y and the
variance, and with neither) likewise, against numpy on the centres read
back: y' = (y - mean) / std over all the rows so far (with normalize_y),
G = K_nm^T K_nm, r = K_nm^T y', alpha = noise / s, the mean std k(T, Z)
(G + alpha K_mm)^-1 r + mean to 1e-6 relative (cg_tol 1e-10), output std
sqrt(s std^2 (k(x, x) - k_x^T K_mm^-1 k_x + alpha k_x^T (G + alpha
K_mm)^-1 k_x)) and training.log_marginal_likelihood of the DTC
approximation to 1e-9 relative; each update the next version, updatable
true. Without keep_factor: 409 naming keep_factor. Their files are of
format version 11 and answer bit for bit after the restart.

The krr part uses the standard library only; the gpr part numpy. Usage, from the project root:
    /usr/bin/python3 tests/integration/nys_update.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

TOL = 1e-6
DIM = 3
GAMMA = 0.5
ALPHA = 0.05


def data(n, outputs, seed):
    rng = random.Random(seed)
    X = [[rng.uniform(-2, 2) for _ in range(DIM)] for _ in range(n)]
    y = [[math.sin(sum(r)) * (j + 1) + rng.gauss(0, 0.1)
          for j in range(outputs)] for r in X]
    return X, [v[0] for v in y] if outputs == 1 else y


def rbf(a, b):
    return math.exp(-GAMMA * sum((x - z) ** 2 for x, z in zip(a, b)))


def solve(A, B):
    """A C = B by Gaussian elimination with partial pivoting (A m x m, B m
    x q lists)."""
    m, q = len(A), len(B[0])
    M = [A[i][:] + B[i][:] for i in range(m)]
    for c in range(m):
        p = max(range(c, m), key=lambda r: abs(M[r][c]))
        M[c], M[p] = M[p], M[c]
        for r in range(c + 1, m):
            f = M[r][c] / M[c][c]
            for j in range(c, m + q):
                M[r][j] -= f * M[c][j]
    C = [[0.0] * q for _ in range(m)]
    for r in range(m - 1, -1, -1):
        for j in range(q):
            s = M[r][m + j] - sum(M[r][k] * C[k][j] for k in range(r + 1, m))
            C[r][j] = s / M[r][r]
    return C


def reference(Z, X, y, T):
    """Predictions on T of the normal equations' solution for centres Z
    over the rows X, y."""
    Y = [v if isinstance(v, list) else [v] for v in y]
    m, q = len(Z), len(Y[0])
    A = [[ALPHA * rbf(Z[a], Z[b]) for b in range(m)] for a in range(m)]
    B = [[0.0] * q for _ in range(m)]
    for x, t in zip(X, Y):
        k = [rbf(x, z) for z in Z]
        for a in range(m):
            ka = k[a]
            row = A[a]
            for b in range(m):
                row[b] += ka * k[b]
            for j in range(q):
                B[a][j] += ka * t[j]
    C = solve(A, B)
    out = []
    for x in T:
        k = [rbf(x, z) for z in Z]
        v = [sum(k[a] * C[a][j] for a in range(m)) for j in range(q)]
        out.append(v if q > 1 else v[0])
    return out


def close(got, want):
    flat = lambda v: [x for r in v for x in (r if isinstance(r, list) else [r])]
    if not isinstance(got, list):
        return False
    a, b = flat(got), flat(want)
    return len(a) == len(b) and all(abs(x - z) <= TOL * max(1.0, abs(z))
                                    for x, z in zip(a, b))


def meta(r):
    return (r.json() or {}).get("model", {})


def centres(d, name):
    r = d.req("GET", f"/v1/models/{name}/coefficients")
    c = ((r.json() or {}).get("coefficients") or {}).get("centres_") or {}
    return c.get("values")


def predict(d, name, T):
    r = d.req("POST", f"/v1/models/{name}/predict", {"X": T})
    return (r.json() or {}).get("predictions")


def params(**extra):
    p = {"alpha": ALPHA, "solver": "nystrom", "n_centres": 12,
         "cg_tol": 1e-10, "cg_max_iter": 1000, "keep_factor": True}
    p.update(extra)
    return p


def scenario(d, name, outputs, seed, T, answers):
    X, y = data(110, outputs, seed)
    r = d.req("POST", f"/v1/models/{name}/fit",
              {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": GAMMA},
               "params": params(), "X": X[:60], "y": y[:60]})
    m = meta(r)
    run.check(r.status == 201 and m.get("updatable") is True and
              m.get("params", {}).get("keep_factor") is True and
              m.get("n_samples") == 12,
              f"nystrom keep_factor ({outputs} output(s)): fit 201, "
              "keep_factor and updatable in the metadata", r)
    Z = centres(d, name)
    run.check(isinstance(Z, list) and len(Z) == 12,
              "the fit's 12 centres read back", Z)
    n, count = 60, 0
    for k in (1, 49):
        r = d.req("POST", f"/v1/models/{name}/update",
                  {"X": X[n:n + k], "y": y[n:n + k]})
        n += k
        count += 1
        m = meta(r)
        tr = m.get("training", {})
        got = predict(d, name, T)
        run.check(r.status == 201 and m.get("n_samples") == 12 and
                  m.get("updatable") is True and
                  tr.get("rows_added") == k and tr.get("updates") == count and
                  isinstance(tr.get("iterations"), int) and
                  0 <= tr.get("residual", 1) <= 1e-10 and
                  centres(d, name) == Z,
                  f"update by {k} row(s): 201, the same centres, figures", r)
        run.check(close(got, reference(Z, X[:n], y[:n], T)),
                  f"update by {k} row(s) ({n} rows, {outputs} output(s)): "
                  "predictions as the normal equations of all rows with the "
                  "centres, solved here, to 1e-6", got)
        answers[name] = got


def refusals(d):
    X, y = data(40, 1, 30)
    r = d.req("POST", "/v1/models/plain/fit",
              {"algorithm": "krr", "kernel": {"type": "rbf"},
               "params": params(keep_factor=False), "X": X, "y": y})
    run.check(r.status == 201 and meta(r).get("updatable") is False and
              meta(r).get("params", {}).get("keep_factor") is False,
              "nystrom without keep_factor: updatable false", r)
    r = d.req("POST", "/v1/models/plain/update", {"X": X[:2], "y": y[:2]})
    run.check(r.status == 409 and "keep_factor" in r.body and
              "nystrom" in r.body,
              "update of a nystrom model without keep_factor: 409 naming "
              "keep_factor and nystrom", r)
    r = d.req("POST", "/v1/models/rff/fit",
              {"algorithm": "krr", "kernel": {"type": "rbf"},
               "params": {"solver": "rff", "keep_factor": True},
               "X": X, "y": y})
    run.check(r.status == 400 and "params.keep_factor" in r.body,
              "keep_factor with the rff solver: 400 naming it", r)


GPR_NOISE = 0.05
GPR_SIGNAL = 2.0
GPR_TOL = 1e-9


def gpr_reference(Z, X, y, T, normalize):
    """Mean, std on T and the DTC log marginal likelihood of the rows X, y
    for the centres Z (numpy)."""
    import numpy as np
    Z, X, y, T = (np.asarray(v, dtype=float) for v in (Z, X, y, T))

    def k(A, B):
        d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2)
        return np.exp(-GAMMA * d2)

    mu, sd = (y.mean(), y.std()) if normalize else (0.0, 1.0)
    yn = (y - mu) / sd
    alpha, n, m = GPR_NOISE / GPR_SIGNAL, len(y), len(Z)
    Knm, Kmm = k(X, Z), k(Z, Z)
    S = Knm.T @ Knm + alpha * Kmm
    r = Knm.T @ yn
    c = np.linalg.solve(S, r)
    Kt = k(T, Z)
    mean = sd * (Kt @ c) + mu
    q1 = np.einsum("ij,ji->i", Kt, np.linalg.solve(Kmm, Kt.T))
    q2 = np.einsum("ij,ji->i", Kt, np.linalg.solve(S, Kt.T))
    var = GPR_SIGNAL * sd * sd * (1.0 - q1 + alpha * q2)
    lml = (-(yn @ yn - r @ c) / (2 * GPR_SIGNAL * alpha)
           - (n * math.log(GPR_SIGNAL) + (n - m) * math.log(alpha)
              + np.linalg.slogdet(S)[1] - np.linalg.slogdet(Kmm)[1]) / 2
           - n * math.log(2 * math.pi) / 2)
    return list(mean), [math.sqrt(max(v, 0.0)) for v in var], lml


def near(got, want, tol, relative):
    if not isinstance(got, list) or len(got) != len(want):
        return False
    return all(isinstance(a, (int, float)) and
               abs(a - b) <= tol * (abs(b) if relative else max(1.0, abs(b)))
               for a, b in zip(got, want))


def gpr_scenario(d, name, normalize, variance, seed, T, answers):
    X, y = data(110, 1, seed)
    y = [3 + 1.5 * v + 0.02 * i for i, v in enumerate(y)]  # drifting
    p = {"noise": GPR_NOISE, "signal_variance": GPR_SIGNAL,
         "normalize_y": normalize, "solver": "nystrom", "n_centres": 12,
         "cg_tol": 1e-10, "cg_max_iter": 1000, "variance": variance,
         "keep_factor": True}
    what = f"gpr nystrom normalize_y {normalize}, variance {variance}"
    r = d.req("POST", f"/v1/models/{name}/fit",
              {"algorithm": "gpr", "kernel": {"type": "rbf", "gamma": GAMMA},
               "params": p, "X": X[:60], "y": y[:60]})
    m = meta(r)
    run.check(r.status == 201 and m.get("updatable") is True and
              m.get("params", {}).get("keep_factor") is True and
              m.get("n_samples") == 12,
              f"{what}: fit 201, keep_factor and updatable in the metadata",
              r)
    Z = centres(d, name)
    run.check(isinstance(Z, list) and len(Z) == 12,
              f"{what}: the fit's 12 centres read back", Z)
    n, version = 60, m.get("version")
    for k in (1, 49):
        r = d.req("POST", f"/v1/models/{name}/update",
                  {"X": X[n:n + k], "y": y[n:n + k]})
        n += k
        m = meta(r)
        tr = m.get("training", {})
        run.check(r.status == 201 and isinstance(version, int) and
                  m.get("version") == version + 1 and
                  m.get("n_samples") == 12 and m.get("updatable") is True and
                  tr.get("rows_added") == k and
                  0 <= tr.get("residual", 1) <= 1e-10 and
                  centres(d, name) == Z,
                  f"{what}: update by {k} row(s): 201, version "
                  f"{(version or 0) + 1}, the same centres", r)
        version = m.get("version")
        mean, std, lml = gpr_reference(Z, X[:n], y[:n], T, normalize)
        got = predict(d, name, T)
        run.check(near(got, mean, TOL, False),
                  f"{what}, {n} rows: mean as numpy's on the centres, to "
                  "1e-6", (got, mean))
        answers[name] = got
        if not variance:
            r = d.req("POST", f"/v1/models/{name}/predict",
                      {"X": T, "output": "std"})
            run.check(r.status >= 400 and
                      "log_marginal_likelihood" not in tr,
                      f"{what}: no std, no likelihood", r)
            continue
        r = d.req("POST", f"/v1/models/{name}/predict",
                  {"X": T, "output": "std"})
        got = (r.json() or {}).get("predictions")
        run.check(near(got, std, GPR_TOL, True),
                  f"{what}, {n} rows: output std as numpy's DTC std, to "
                  "1e-9 relative", (got, std))
        answers[name + "/std"] = got
        run.check(near([tr.get("log_marginal_likelihood")], [lml], GPR_TOL,
                       True),
                  f"{what}, {n} rows: log marginal likelihood as numpy's, "
                  "to 1e-9 relative", (tr.get("log_marginal_likelihood"),
                                        lml))


def gpr_refusal(d):
    X, y = data(40, 1, 31)
    r = d.req("POST", "/v1/models/gplain/fit",
              {"algorithm": "gpr", "kernel": {"type": "rbf"},
               "params": {"solver": "nystrom", "n_centres": 10,
                          "variance": True}, "X": X, "y": y})
    run.check(r.status == 201 and meta(r).get("updatable") is False and
              meta(r).get("params", {}).get("keep_factor") is False,
              "gpr nystrom without keep_factor: updatable false", r)
    r = d.req("POST", "/v1/models/gplain/update", {"X": X[:2], "y": y[:2]})
    run.check(r.status == 409 and "keep_factor" in r.body and
              "nystrom gpr models fitted with params.keep_factor" in r.body,
              "update of a gpr nystrom model without keep_factor: 409 "
              "naming keep_factor and what can be updated", r)
    r = d.req("POST", "/v1/models/gexact/fit",
              {"algorithm": "gpr", "kernel": {"type": "rbf"},
               "params": {"solver": "exact", "keep_factor": True},
               "X": X, "y": y})
    run.check(r.status == 400 and "params.keep_factor" in r.body,
              "gpr keep_factor with the exact solver: 400 naming it", r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build",
                                                     "kmserve"))
    args = ap.parse_args()
    T, _ = data(15, 1, 99)

    def body(d):
        answers = {}
        scenario(d, "n1", 1, 10, T, answers)
        scenario(d, "n2", 2, 20, T, answers)
        refusals(d)
        gpr_scenario(d, "g1", True, True, 40, T, answers)
        gpr_scenario(d, "g2", False, False, 50, T, answers)
        gpr_refusal(d)
        versions = set()
        for root, _, files in os.walk(d.models):
            for f in files:
                with open(os.path.join(root, f), "rb") as fh:
                    head = fh.read(8)
                if head[:4] == b"KMSM":
                    versions.add(int.from_bytes(head[4:8], "little"))
        run.check(10 in versions and 11 in versions,
                  "the updatable nystrom models' files are of format "
                  "versions 10 (krr) and 11 (gpr)", sorted(versions))
        d.stop()
        d.start()
        for key, want in answers.items():
            name, _, out = key.partition("/")
            r = d.req("POST", f"/v1/models/{name}/predict",
                      {"X": T, **({"output": out} if out else {})})
            got = (r.json() or {}).get("predictions")
            run.check(got == want, f"after a restart: {key} bit for bit",
                      got)
        X, y = data(3, 1, 60)
        r = d.req("POST", "/v1/models/n1/update", {"X": X, "y": y})
        run.check(r.status == 201 and meta(r).get("training", {})
                  .get("updates") == 3,
                  "after a restart: the model loaded from its file is "
                  "updated again", r)
        X, y = data(3, 1, 61)
        r = d.req("POST", "/v1/models/g1/update", {"X": X, "y": y})
        run.check(r.status == 201 and meta(r).get("training", {})
                  .get("updates") == 3,
                  "after a restart: the gpr model loaded from its file is "
                  "updated again", r)

    return run.with_daemon(args.server, "kmserve-nys-update-", body)


if __name__ == "__main__":
    sys.exit(main())
