#!/usr/bin/python3
"""krr's solver "auto" and the nystrom solver's rpcholesky centres over
HTTP.

auto: under --memory-budget-mb 100 a 6000-row fit (d 5; the exact
solver's estimate about 4 n^2 = 144 MB, above half the budget) resolves to
nystrom: 201, metadata params.solver "auto", training.solver "nystrom",
training.memory_budget_mb 100, n_samples the 1000 default centres; the
same fit with solver "exact" is 413. Under --memory-budget-mb 1000 the
same auto fit resolves to exact (n_samples 6000, training.solver
"exact") and predicts what the explicit exact fit predicts.

rpcholesky: on the fixture set of tests/fixtures/gen_rpcholesky_refs.py
(n 500, rbf gamma 0.5, 100 centres, seed 11) the fit predicts what
scikit-learn's Nystroem + Ridge predict on the pivots numpy's randomly
pivoted Cholesky picks with core's draws, to 1e-8 relative, and shows
params.centres "rpcholesky"; an unknown rule is 400; under the 100 MiB
budget the 6000-row fit with 2000 uniform centres is admitted and its
rpcholesky version (which holds an n x m factor, 96 MB more) is 413.
Usage, from the project root:
    /usr/bin/python3 tests/integration/auto.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

KERNEL = {"type": "rbf", "gamma": 0.5}
N, D = 6000, 5


def fit(d, name, params, X, y, kernel=KERNEL):
    body = {"algorithm": "krr", "kernel": kernel, "params": params,
            "X": X, "y": y}
    r = d.req("POST", f"/v1/models/{name}/fit", body)
    return r, (r.json() or {}).get("model", {})


def small_budget(d, X, y):
    r, meta = fit(d, "auto", {"solver": "auto", "alpha": 1.0}, X, y)
    tr = meta.get("training", {})
    run.check(r.status == 201 and meta.get("params", {}).get("solver") == "auto"
              and tr.get("solver") == "nystrom" and
              tr.get("memory_budget_mb") == 100 and meta.get("n_samples") == 1000,
              "100 MiB: auto on 6000 rows resolves to nystrom (1000 centres) "
              "and says so", meta)
    r, _ = fit(d, "exact", {"solver": "exact", "alpha": 1.0}, X, y)
    run.check(r.status == 413, "100 MiB: the exact fit of the same rows is 413", r)

    # rpcholesky against the numpy reference, over HTTP
    F = 3
    Xr = run.fixture_rows("rpc_X.txt", F)
    Tr = run.fixture_rows("rpc_T.txt", F)
    params = {"alpha": 0.01, "solver": "nystrom", "centres": "rpcholesky",
              "n_centres": 100, "seed": 11, "cg_tol": 1e-13, "cg_max_iter": 500}
    r, meta = fit(d, "rpc", params, Xr, run.read_fixture("rpc_y.txt"))
    run.check(r.status == 201 and
              meta.get("params") == dict(params, keep_factor=False) and
              meta.get("n_samples") == 100,
              "rpcholesky fit: 201, params.centres shown by name, "
              "keep_factor false", meta)
    r = d.req("POST", "/v1/models/rpc/predict", {"X": Tr})
    got = (r.json() or {}).get("predictions", [])
    want = run.read_fixture("rpc_pred.txt")
    run.check(len(got) == len(want) and run.max_rel(got, want, 1e-3) <= 1e-8,
              "rpcholesky predictions equal Nystroem + Ridge on numpy's "
              "pivots to 1e-8", (got[:3], want[:3]))
    r, _ = fit(d, "bad", {"solver": "nystrom", "centres": "leverage"}, Xr,
               run.read_fixture("rpc_y.txt"))
    run.check(r.status == 400 and "params.centres must be one of uniform, "
              "rpcholesky" in r.body, "an unknown centres rule: 400", r)
    r, _ = fit(d, "bad", {"centres": "rpcholesky"}, Xr,
               run.read_fixture("rpc_y.txt"))
    run.check(r.status == 400 and "params.centres applies only" in r.body,
              "centres with the exact solver: 400", r)
    # admission counts rpcholesky's n x m factor
    p = {"solver": "nystrom", "n_centres": 2000, "alpha": 1.0}
    r, _ = fit(d, "uni2000", p, X, y)
    run.check(r.status == 201, "100 MiB: 2000 uniform centres of 6000 rows "
              "admitted", r)
    r, _ = fit(d, "rpc2000", dict(p, centres="rpcholesky"), X, y)
    run.check(r.status == 413 and "estimated" in r.body,
              "100 MiB: its rpcholesky version is 413", r)


def big_budget(server, X, y, T):
    with run.temp_daemon(server, "kmserve-auto-big-",
                         "--memory-budget-mb", "1000") as d:
        r, meta = fit(d, "auto", {"solver": "auto", "alpha": 1.0}, X, y)
        tr = meta.get("training", {})
        run.check(r.status == 201 and tr.get("solver") == "exact" and
                  tr.get("memory_budget_mb") == 1000 and
                  meta.get("n_samples") == N and
                  meta.get("params") == {"alpha": 1.0, "solver": "auto"},
                  "1000 MiB: the same auto fit resolves to exact", meta)
        r, _ = fit(d, "exact", {"alpha": 1.0}, X, y)
        run.check(r.status == 201, "1000 MiB: the exact fit is admitted", r)
        pa = d.req("POST", "/v1/models/auto/predict", {"X": T})
        pe = d.req("POST", "/v1/models/exact/predict", {"X": T})
        a = (pa.json() or {}).get("predictions", [])
        e = (pe.json() or {}).get("predictions", [])
        run.check(len(a) == len(T) and a == e,
                  "auto's exact model predicts as the exact fit", (a[:2], e[:2]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    X, y = run.synthetic(N, D, 14)
    T, _ = run.synthetic(50, D, 15)

    def body(d):
        small_budget(d, X, y)
        big_budget(args.server, X, y, T)

    return run.with_daemon(args.server, "kmserve-auto-", body,
                           "--memory-budget-mb", "100")


if __name__ == "__main__":
    sys.exit(main())
