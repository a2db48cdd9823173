#!/usr/bin/python3
"""krr's nystrom solver over HTTP (params.solver "nystrom").

A fit with seed 7 and 80 centres on the fixture set of
tests/fixtures/gen_nystrom_refs.py predicts what scikit-learn's
Nystroem + Ridge predict on the centres core's seeded draw picks
(nys_seed_pred.txt, the draw written again in Python from its definition),
to 1e-8 relative; metadata shows the solver by name, the params given and
the conjugate gradients' figures (iterations within the cap, the residual
reached), and n_samples is the number of centres; an exact fit's metadata
shows alpha alone, as before the solver existed. Bad params answer 400
naming the field (n_centres 0, an unknown solver, cg_tol <= 0,
cg_max_iter 0, a nystrom-only param with the exact solver, gcv with
nystrom), n_centres above the rows 422. Admission: under a 1 MiB memory
budget the exact fit of 1000 rows is refused (413) and its nystrom fit of
50 centres admitted (201).
Usage, from the project root:
    /usr/bin/python3 tests/integration/nystrom.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

D = 5
KERNEL = {"type": "rbf", "gamma": 0.2}
PARAMS = {"alpha": 0.01, "solver": "nystrom", "n_centres": 80, "seed": 7,
          "cg_tol": 1e-12, "cg_max_iter": 200}


def rows(name):
    return run.fixture_rows(name, D)


def fit(d, name, params, X, y, **extra):
    body = {"algorithm": "krr", "kernel": KERNEL, "params": params, "X": X, "y": y}
    body.update(extra)
    return d.req("POST", f"/v1/models/{name}/fit", body)


def admission(server, X, y):
    with run.temp_daemon(server, "kmserve-nystrom-budget-",
                         "--memory-budget-mb", "1") as d:
        Xb = (X * 2)[:1000]
        yb = (y * 2)[:1000]
        r = fit(d, "exact", {"alpha": 1.0}, Xb, yb)
        run.check(r.status == 413, "1 MiB budget: the exact fit of 1000 rows is 413", r)
        r = fit(d, "nys", {"alpha": 1.0, "solver": "nystrom", "n_centres": 50}, Xb, yb)
        meta = (r.json() or {}).get("model", {})
        run.check(r.status == 201 and meta.get("n_samples") == 50,
                  "1 MiB budget: its nystrom fit of 50 centres is admitted", r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    X, T, y = rows("nys_X.txt"), rows("nys_T.txt"), run.read_fixture("nys_y.txt")

    def body(d):
        r = fit(d, "nys", PARAMS, X, y)
        meta = (r.json() or {}).get("model", {})
        run.check(r.status == 201, "nystrom fit: 201", r)
        run.check(meta.get("params") == dict(PARAMS, centres="uniform", keep_factor=False),
                  "metadata params: the solver by name, the params given, "
                  "the centres' rule and keep_factor false",
                  meta.get("params"))
        tr = meta.get("training", {})
        run.check(tr.get("solver") == "nystrom" and
                  isinstance(tr.get("iterations"), int) and
                  1 <= tr["iterations"] <= PARAMS["cg_max_iter"] and
                  0 <= tr.get("residual", 1) <= PARAMS["cg_tol"],
                  "metadata training: solver, iterations within the cap, "
                  "residual at most cg_tol", tr)
        run.check(meta.get("n_samples") == PARAMS["n_centres"],
                  "n_samples is the number of centres", meta.get("n_samples"))
        r = d.req("POST", "/v1/models/nys/predict", {"X": T})
        got = (r.json() or {}).get("predictions", [])
        want = run.read_fixture("nys_seed_pred.txt")
        run.check(len(got) == len(want) and run.max_rel(got, want, 1e-3) <= 1e-8,
                  "predictions equal Nystroem + Ridge on the same centres to 1e-8",
                  (got[:3], want[:3]))
        r = d.req("GET", "/v1/models/nys")
        run.check(r.status == 200 and
                  r.json().get("params") == dict(PARAMS, centres="uniform", keep_factor=False),
                  "GET shows the same params", r)

        # defaults: solver only; an exact fit shows alpha alone
        r = fit(d, "nysdef", {"solver": "nystrom"}, X, y)
        p = (r.json() or {}).get("model", {}).get("params")
        run.check(r.status == 201 and p == {
            "alpha": 1.0, "solver": "nystrom", "n_centres": 600, "seed": 0,
            "cg_tol": 1e-7, "cg_max_iter": 100, "centres": "uniform",
            "keep_factor": False},
            "nystrom defaults: n_centres min(n, 1000), seed 0, cg_tol 1e-7, "
            "cg_max_iter 100, centres uniform, keep_factor false", p)
        r = fit(d, "exact", {"alpha": 0.01}, X, y)
        meta = (r.json() or {}).get("model", {})
        run.check(r.status == 201 and
                  meta.get("params") == {"alpha": 0.01, "keep_factor": False} and
                  not {"solver", "iterations", "residual"} & set(meta.get("training", {})),
                  "an exact fit's metadata shows what it did before", meta)
        r = fit(d, "exact2", {"alpha": 0.01, "solver": "exact"}, X, y)
        run.check(r.status == 201 and
                  (r.json() or {}).get("model", {}).get("params") ==
                  {"alpha": 0.01, "keep_factor": False},
                  "solver exact given: the same", r)

        for params, status, text, what in (
                ({"solver": "nystrom", "n_centres": 0}, 400, "params.n_centres",
                 "n_centres 0"),
                ({"solver": "nystrom", "n_centres": 601}, 422, "params.n_centres",
                 "n_centres above the rows"),
                ({"solver": "nystrom", "n_centres": 2.5}, 400, "params.n_centres",
                 "n_centres not whole"),
                ({"solver": "falkon"}, 400, "params.solver must be one of exact, nystrom",
                 "an unknown solver"),
                ({"solver": "nystrom", "cg_tol": 0}, 400, "params.cg_tol",
                 "cg_tol 0"),
                ({"solver": "nystrom", "cg_tol": -1e-3}, 400, "params.cg_tol",
                 "cg_tol < 0"),
                ({"solver": "nystrom", "cg_max_iter": 0}, 400, "params.cg_max_iter",
                 "cg_max_iter 0"),
                ({"solver": "nystrom", "seed": -1}, 400, "params.seed", "seed -1"),
                ({"n_centres": 10}, 400,
                 'params.n_centres applies only with params.solver \\"nystrom\\"',
                 "n_centres with the exact solver")):
            r = fit(d, "bad", params, X, y)
            run.check(r.status == status and text in r.body,
                      f"{what}: {status} naming the field", r)
        r = fit(d, "bad", {"solver": "nystrom", "n_centres": 20}, X, y,
                search={"params": {"alpha": [0.1, 1]}, "cv": "gcv"})
        run.check(r.status == 400 and "params.solver" in r.body,
                  "a gcv search of nystrom points: 400", r)
        r = fit(d, "searched", {"solver": "nystrom", "n_centres": 40}, X[:200], y[:200],
                search={"params": {"alpha": [0.01, 1]}, "cv": {"folds": 3}})
        meta = (r.json() or {}).get("model", {})
        run.check(r.status == 201 and meta.get("params", {}).get("solver") == "nystrom"
                  and meta.get("n_samples") == 40,
                  "a k-fold search of nystrom points refits a nystrom model", r)
        run.check(d.req("GET", "/v1/models/bad").status == 404,
                  "nothing created by the refused fits")
        admission(args.server, X, y)

    return run.with_daemon(args.server, "kmserve-nystrom-", body)


if __name__ == "__main__":
    sys.exit(main())
