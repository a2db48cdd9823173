#!/usr/bin/python3
"""krr's rff solver over HTTP (params.solver "rff", random Fourier
features).

For rbf, laplacian and laplacian_l2 (gamma 0.2), a fit with
n_components 300, seed 7 and alpha 0.1 on the data of
tests/fixtures/gen_nystrom_refs.py predicts what scikit-learn's Ridge
predicts on the same features, drawn in numpy from core's definition
(tests/fixtures/gen_rff_refs.py: rff_<kernel>_pred.txt), to 1e-9
relative; metadata shows the solver by name and the params given,
n_samples is D, and the model file on disk is format version 3 whose
answers survive a restart bit for bit. Bad params answer 400 naming the
field: a kernel without a spectral density (polynomial, a sum of rbfs),
n_components 0 and above 65536, n_components with nystrom, n_centres or
cg_tol with rff, seed with exact, a gcv search of rff points.
Usage, from the project root:
    /usr/bin/python3 tests/integration/rff.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

DIM = 5
PARAMS = {"alpha": 0.1, "solver": "rff", "n_components": 300, "seed": 7}
KINDS = ("rbf", "laplacian", "laplacian_l2")


def rows(name):
    return run.fixture_rows(name, DIM)


def fit(d, name, kernel, params, X, y, **extra):
    body = {"algorithm": "krr", "kernel": kernel, "params": params, "X": X,
            "y": y}
    body.update(extra)
    return d.req("POST", f"/v1/models/{name}/fit", body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    X, T, y = rows("nys_X.txt"), rows("nys_T.txt"), run.read_fixture("nys_y.txt")

    def body(d):
        answers = {}
        for kind in KINDS:
            name = f"rff-{kind.replace('_', '-')}"
            r = fit(d, name, {"type": kind, "gamma": 0.2}, PARAMS, X, y)
            meta = (r.json() or {}).get("model", {})
            run.check(r.status == 201 and meta.get("params") == PARAMS and
                      meta.get("n_samples") == PARAMS["n_components"] and
                      meta.get("training", {}).get("solver") == "rff",
                      f"{kind}: rff fit 201; metadata shows the solver, the "
                      "params given, n_samples D", meta)
            r = d.req("POST", f"/v1/models/{name}/predict", {"X": T})
            got = (r.json() or {}).get("predictions", [])
            want = run.read_fixture(f"rff_{kind}_pred.txt")
            err = run.max_rel(got, want, 1e-3) if len(got) == len(want) else 1
            run.check(len(got) == len(want) and err <= 1e-9,
                      f"{kind}: predictions equal Ridge on numpy's features "
                      f"from core's draws to 1e-9 ({err:.2g})",
                      (got[:3], want[:3]))
            answers[name] = got
            with open(os.path.join(d.models, f"{name}.kmm"), "rb") as f:
                head = f.read()
            run.check(head[:4] == b"KMSM" and run.kmm_formats(head) == (8, 3),
                      f"{kind}: the model file is format version 8 (a drift "
                      "reference) with version 3's payload", head[:8])
        r = fit(d, "exact", {"type": "rbf", "gamma": 0.2}, {"alpha": 0.1}, X, y)
        with open(os.path.join(d.models, "exact.kmm"), "rb") as f:
            head = f.read()
        run.check(r.status == 201 and run.kmm_formats(head) == (8, 2),
                  "an exact fit's payload is still version 2's", head[:8])
        r = fit(d, "rffdef", {"type": "rbf"}, {"solver": "rff"}, X, y)
        p = (r.json() or {}).get("model", {}).get("params")
        run.check(r.status == 201 and p == {"alpha": 1.0, "solver": "rff",
                                            "n_components": 1000, "seed": 0},
                  "rff defaults: n_components 1000, seed 0", p)

        d.stop()
        d.start()
        for name, want in answers.items():
            r = d.req("POST", f"/v1/models/{name}/predict", {"X": T})
            got = (r.json() or {}).get("predictions", [])
            run.check(got == want, f"{name}: the same answers after a restart "
                      "(loaded from its file)", got[:3])

        rbf = {"type": "rbf", "gamma": 0.2}
        for kernel, params, status, text, what in (
                ({"type": "polynomial"}, {"solver": "rff"}, 400,
                 "not kernel.type polynomial", "a polynomial kernel"),
                ({"type": "sum", "kernels": [{"type": "rbf"}, {"type": "rbf"}]},
                 {"solver": "rff"}, 400, "not kernel.type sum", "a sum kernel"),
                (rbf, {"solver": "rff", "n_components": 0}, 400,
                 "params.n_components", "n_components 0"),
                (rbf, {"solver": "rff", "n_components": 65537}, 400,
                 "params.n_components", "n_components 65537"),
                (rbf, {"solver": "rff", "n_components": 1.5}, 400,
                 "params.n_components", "n_components not whole"),
                (rbf, {"solver": "nystrom", "n_components": 10}, 400,
                 'params.n_components applies only with params.solver \\"rff\\"',
                 "n_components with nystrom"),
                (rbf, {"solver": "rff", "n_centres": 10}, 400,
                 "params.n_centres applies only", "n_centres with rff"),
                (rbf, {"solver": "rff", "cg_tol": 0.1}, 400,
                 "params.cg_tol applies only", "cg_tol with rff"),
                (rbf, {"seed": 3}, 400, "params.seed applies only",
                 "seed with exact"),
                (rbf, {"solver": "rff", "seed": -1}, 400, "params.seed",
                 "seed -1")):
            r = fit(d, "bad", kernel, params, X, y)
            run.check(r.status == status and text in r.body,
                      f"{what}: {status} naming the field", r)
        r = fit(d, "bad", rbf, {"solver": "rff", "n_components": 20}, X, y,
                search={"params": {"alpha": [0.1, 1]}, "cv": "gcv"})
        run.check(r.status == 400 and "params.solver" in r.body,
                  "a gcv search of rff points: 400", r)
        r = fit(d, "searched", rbf, {"solver": "rff", "n_components": 50},
                X[:200], y[:200],
                search={"params": {"alpha": [0.01, 1]}, "cv": {"folds": 3}})
        meta = (r.json() or {}).get("model", {})
        run.check(r.status == 201 and meta.get("params", {}).get("solver") == "rff"
                  and meta.get("n_samples") == 50,
                  "a k-fold search of rff points refits an rff model", r)
        run.check(d.req("GET", "/v1/models/bad").status == 404,
                  "nothing created by the refused fits")

    return run.with_daemon(args.server, "kmserve-rff-", body)


if __name__ == "__main__":
    sys.exit(main())
