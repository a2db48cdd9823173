#!/usr/bin/python3
"""kpca over HTTP when eigenvalues cluster (issue 24, defect 6), against
numpy.linalg.eigh on the centred Gram matrix built here from the
definition.

rbf with gamma 0.5 on standard normal rows of 100 or more features has
k(x, z) ~ exp(-100) off the diagonal: the centred Gram matrix is I - 1/n
to rounding, n - 1 eigenvalues equal to 1. A fit of 1000 x 100 rows with
50 components (and 2000 x 200 with 100) answered 500 "dsyevr failed
(info 0, 32 of 50 found)" with the dense, auto and iterative solvers.
Each fit must now answer 201 with the top eigenvalues of numpy's
eigh to 1e-10 of the largest, and since any basis of a cluster's space is
right, the projections P of the training rows are checked by what does
not depend on the basis: P^T P = diag(eigenvalues) and Kc P = P
diag(eigenvalues) (to 1e-9), each column's entry of largest magnitude
positive. Three tight groups among the rows give three distinct top
eigenvalues before the cluster: those components, for the training rows
and for new rows, equal numpy's (up to sign) to 1e-8. Three distinct rows
repeated 100 times have two positive eigenvalues: 3 components is 422
naming params.n_components, 2 are fine.
Usage, from the project root:
    /usr/bin/python3 tests/integration/kpca_clusters.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

GAMMA = 0.5


def kernel(A, B):
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-GAMMA * np.maximum(sq, 0))


class Reference:
    """Kc of X, numpy's eigh of it (ascending), and the projection of new
    rows onto its unit eigenvectors, as scikit-learn's KernelPCA defines it."""

    def __init__(self, X):
        self.X = X
        K = kernel(X, X)
        self.mean = K.mean(0)
        self.grand = self.mean.mean()
        self.Kc = K - self.mean[None, :] - self.mean[:, None] + self.grand
        self.w, self.V = np.linalg.eigh(self.Kc)

    def top(self, k):
        return self.w[::-1][:k]

    def project(self, T, j):
        Kt = kernel(T, self.X)
        Kt = Kt - Kt.mean(1)[:, None] - self.mean[None, :] + self.grand
        lam, v = self.w[-1 - j], self.V[:, -1 - j]
        return Kt @ v / np.sqrt(lam)


def fit(d, name, X, k, solver, **extra):
    params = {"n_components": k, "eigen_solver": solver}
    params.update(extra)
    return d.req("POST", f"/v1/models/{name}/fit",
                 {"algorithm": "kpca", "kernel": {"type": "rbf", "gamma": GAMMA},
                  "params": params, "X": X.tolist()})


def project(d, name, X):
    r = d.req("POST", f"/v1/models/{name}/project", {"X": X.tolist()})
    return np.array((r.json() or {}).get("projections", []), dtype=float)


def check_fit(d, ref, k, solver, what, distinct=0, T=None):
    """Fits, then checks the eigenvalues and the training projections as the
    docstring says; the first `distinct` components also against numpy's
    vectors, on the training rows and on T."""
    name = f"c-{solver}-{len(ref.X)}-{k}"
    r = fit(d, name, ref.X, k, solver)
    tag = f"{what}, {k} components, eigen_solver {solver}"
    if not run.check(r.status == 201, f"{tag}: 201", r):
        return
    tr = (r.json() or {}).get("model", {}).get("training", {})
    run.tally.note(f"{tag}: training.solver {tr.get('solver')}, fallback "
                   f"{tr.get('fallback')}, iterations {tr.get('iterations')}")
    lam = np.array(tr.get("eigenvalues", []), dtype=float)
    top = ref.top(k)
    big = top[0]
    err = np.abs(lam - top).max() / big if len(lam) == k else 1
    run.check(err <= 1e-10, f"{tag}: eigenvalues are numpy's to 1e-10 ({err:.2g})",
              (lam[:3], top[:3]))
    P = project(d, name, ref.X)
    if not run.check(P.shape == (len(ref.X), k), f"{tag}: projections of the "
                     "training rows", P.shape):
        return
    gram = np.abs(P.T @ P - np.diag(lam)).max() / big
    res = (np.linalg.norm(ref.Kc @ P - P * lam, axis=0) /
           np.linalg.norm(P, axis=0)).max() / big
    signs = all(P[np.abs(P[:, j]).argmax(), j] > 0 for j in range(k))
    run.check(gram <= 1e-9 and res <= 1e-9 and signs,
              f"{tag}: P^T P = diag(eigenvalues) ({gram:.2g}), Kc P = P "
              f"diag(eigenvalues) ({res:.2g}), signs by the largest entry",
              (gram, res, signs))
    if distinct:
        PT = project(d, name, T)
        worst = 0.0
        for j in range(distinct):
            for got, want in ((P[:, j], ref.V[:, -1 - j] * np.sqrt(top[j])),
                              (PT[:, j], ref.project(T, j))):
                s = 1.0 if got @ want >= 0 else -1.0
                worst = max(worst, np.abs(s * got - want).max() / np.abs(want).max())
        run.check(worst <= 1e-8, f"{tag}: the {distinct} distinct components "
                  f"equal numpy's up to sign, training and new rows ({worst:.2g})",
                  worst)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    rng = np.random.default_rng(24)

    def body(d):
        # The first trigger; k 20 where auto and iterative run
        # block Lanczos on the cluster.
        ref = Reference(rng.standard_normal((1000, 100)))
        run.check(abs(ref.w[1] - 1) < 1e-12 and abs(ref.w[-1] - 1) < 1e-12,
                  "set-up: 999 eigenvalues equal to 1", ref.w[[0, 1, -1]])
        for solver in ("dense", "auto", "iterative", "randomized"):
            check_fit(d, ref, 50, solver, "1000 x 100 gaussian")
        for solver in ("auto", "iterative"):
            check_fit(d, ref, 20, solver, "1000 x 100 gaussian")
        # The second trigger.
        ref = Reference(rng.standard_normal((2000, 200)))
        check_fit(d, ref, 100, "auto", "2000 x 200 gaussian")
        # Three tight groups of 10 (spreads 0.05, 0.1, 0.15) before the
        # cluster; new rows near the groups.
        X = rng.standard_normal((400, 100))
        for g, spread in enumerate((0.05, 0.1, 0.15)):
            X[10 * g + 1:10 * g + 10] = X[10 * g] + spread * X[100 + 10 * g:109 + 10 * g]
        T = np.repeat(X[[0, 10, 20]], 4, axis=0) + 0.1 * rng.standard_normal((12, 100))
        ref = Reference(X)
        run.check(ref.w[-3] - ref.w[-4] > 0.5, "set-up: three distinct top "
                  "eigenvalues", ref.w[-4:])
        for solver in ("dense", "iterative", "randomized"):
            check_fit(d, ref, 16, solver, "groups", distinct=3, T=T)
        # Fewer positive eigenvalues than asked: 422, naming the field.
        base = rng.standard_normal((3, 100))
        X = np.tile(base, (100, 1))
        for solver in ("dense", "auto", "iterative", "randomized"):
            r = fit(d, "dup", X, 3, solver)
            msg = (r.json() or {}).get("error", {}).get("message", "")
            run.check(r.status == 422 and "params.n_components (3)" in msg
                      and "only 2 positive" in msg,
                      f"three rows repeated, 3 components, {solver}: 422 naming "
                      "params.n_components", r)
        run.check(d.req("GET", "/v1/models/dup").status == 404,
                  "nothing created by the refused fits")
        check_fit(d, Reference(X), 2, "dense", "three rows repeated")

    return run.with_daemon(args.server, "kmserve-kpcacl-", body)


if __name__ == "__main__":
    sys.exit(main())
