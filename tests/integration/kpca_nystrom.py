#!/usr/bin/python3
"""kpca's nystrom eigen-solver over HTTP (params.eigen_solver "nystrom").

A fit with seed 11 and 60 centres on the fixture set of
tests/fixtures/gen_kpca_nystrom_refs.py projects its training rows and new
rows as scikit-learn's Nystroem + PCA do on the centres core's seeded draw
picks (the draw written again in Python from its definition), to 1e-8
relative with the same signs, and its eigenvalues equal theirs to 1e-8;
metadata shows the solver by name and the params given, n_samples is the
number of centres, and the model file is format version 5. Refusals: 400
naming the field for n_centres or seed with another eigen-solver,
fit_inverse_transform with nystrom, n_centres 0; 422 for n_centres above
the rows or not above n_components. Admission: under a 1 MiB memory
budget the dense fit of 1000 rows is refused (413) and its nystrom fit of
50 centres admitted (201).
Usage, from the project root:
    /usr/bin/python3 tests/integration/kpca_nystrom.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

D, K = 4, 5
KERNEL = {"type": "rbf", "gamma": 1.0}
PARAMS = {"n_components": K, "fit_inverse_transform": False, "alpha": 1.0,
          "eigen_solver": "nystrom", "n_centres": 60, "seed": 11}


def rows(name, w=D):
    return run.fixture_rows(name, w)


def fit(d, name, params, X):
    return d.req("POST", f"/v1/models/{name}/fit",
                 {"algorithm": "kpca", "kernel": KERNEL, "params": params, "X": X})


def flat(r):
    return [v for row in (r.json() or {}).get("projections", []) for v in row]


def admission(server, X):
    with run.temp_daemon(server, "kmserve-kpcany-budget-",
                         "--memory-budget-mb", "1") as d:
        Xb = (X * 2)[:1000]
        r = fit(d, "dense", {"n_components": 2, "eigen_solver": "dense"}, Xb)
        run.check(r.status == 413, "1 MiB budget: the dense fit of 1000 rows is 413", r)
        r = fit(d, "nys", {"n_components": 2, "eigen_solver": "nystrom",
                           "n_centres": 50}, Xb)
        meta = (r.json() or {}).get("model", {})
        run.check(r.status == 201 and meta.get("n_samples") == 50,
                  "1 MiB budget: its nystrom fit of 50 centres is admitted", r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    X, T = rows("kpcany_X.txt"), rows("kpcany_T.txt")

    def body(d):
        r = fit(d, "nys", PARAMS, X)
        meta = (r.json() or {}).get("model", {})
        run.check(r.status == 201, "kpca nystrom fit: 201", r)
        run.check(meta.get("params") == PARAMS,
                  "metadata params: the eigen-solver by name and the params given",
                  meta.get("params"))
        tr = meta.get("training", {})
        want = run.read_fixture("kpcany_eigenvalues.txt")
        got = tr.get("eigenvalues", [])
        run.check(len(got) == K and run.max_rel(got, want) <= 1e-8,
                  "eigenvalues equal Nystroem + PCA's to 1e-8", (got, want))
        run.check(meta.get("n_samples") == 60 and tr.get("iterations") == 3,
                  "n_samples is the number of centres; three passes over X", meta)
        for name, rows_, what in (("kpcany_embedding.txt", X, "training rows"),
                                  ("kpcany_proj.txt", T, "new rows")):
            r = d.req("POST", "/v1/models/nys/project", {"X": rows_})
            got, want = flat(r), run.read_fixture(name)
            floor = 1e-3 * max(abs(v) for v in want)
            err = run.max_rel(got, want, floor) if len(got) == len(want) else 1
            run.check(err <= 1e-8, f"projections of the {what} equal Nystroem + "
                      f"PCA's to 1e-8, signs included ({err:.2g})", (got[:3], want[:3]))
        with open(os.path.join(d.models, "nys.kmm"), "rb") as f:
            head = f.read()
        run.check(head[:4] == b"KMSM" and run.kmm_formats(head) == (8, 5),
                  "the model file is format version 8 (a drift reference) with "
                  "version 5's payload", head[:8])
        r = d.req("POST", "/v1/models/nys/project", {"X": [[0.0] * K], "inverse": True})
        run.check(r.status == 409, "no inverse map: project with inverse is 409", r)

        for params, status, text, what in (
                ({"n_components": 2, "n_centres": 10}, 400,
                 'params.n_centres applies only with params.eigen_solver \\"nystrom\\"',
                 "n_centres with the default eigen-solver"),
                ({"n_components": 2, "eigen_solver": "dense", "seed": 3}, 400,
                 "params.seed", "seed with dense"),
                ({"n_components": 2, "eigen_solver": "nystrom",
                  "fit_inverse_transform": True}, 400,
                 "params.fit_inverse_transform", "fit_inverse_transform with nystrom"),
                ({"n_components": 2, "eigen_solver": "nystrom", "n_centres": 0}, 400,
                 "params.n_centres", "n_centres 0"),
                ({"n_components": 2, "eigen_solver": "nystrom", "n_centres": 501}, 422,
                 "params.n_centres", "n_centres above the rows"),
                ({"n_components": 5, "eigen_solver": "nystrom", "n_centres": 5}, 422,
                 "params.n_components", "n_components not below n_centres")):
            r = fit(d, "bad", params, X)
            run.check(r.status == status and text in r.body,
                      f"{what}: {status} naming the field", r)
        run.check(d.req("GET", "/v1/models/bad").status == 404,
                  "nothing created by the refused fits")
        admission(args.server, X)

    return run.with_daemon(args.server, "kmserve-kpcany-", body)


if __name__ == "__main__":
    sys.exit(main())
