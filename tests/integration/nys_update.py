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

Standard library only. Usage, from the project root:
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
        versions = set()
        for root, _, files in os.walk(d.models):
            for f in files:
                with open(os.path.join(root, f), "rb") as fh:
                    head = fh.read(8)
                if head[:4] == b"KMSM":
                    versions.add(int.from_bytes(head[4:8], "little"))
        run.check(10 in versions, "the updatable nystrom models' files are "
                  "of format version 10", sorted(versions))
        d.stop()
        d.start()
        for name, want in answers.items():
            got = predict(d, name, T)
            run.check(got == want, f"after a restart: {name} bit for bit",
                      got)
        X, y = data(3, 1, 60)
        r = d.req("POST", "/v1/models/n1/update", {"X": X, "y": y})
        run.check(r.status == 201 and meta(r).get("training", {})
                  .get("updates") == 3,
                  "after a restart: the model loaded from its file is "
                  "updated again", r)

    return run.with_daemon(args.server, "kmserve-nys-update-", body)


if __name__ == "__main__":
    sys.exit(main())
