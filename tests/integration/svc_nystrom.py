#!/usr/bin/python3
"""svc's nystrom and screened solvers over HTTP (params.solver "nystrom",
"screened").

A fit with seed 5 and 60 centres on the fixture set of
tests/fixtures/gen_svc_nystrom_refs.py answers decision_function rows
equal to liblinear's (LinearSVC, hinge, intercept_scaling 1) per pair on
numpy's Nystrom features of the centres core's seeded draw picks, to
1e-6, and labels equal to the one-vs-one vote of those; /score on the
test rows with those labels is accuracy 1; metadata shows the solver by
name, the params given and the descent's figures; the model file is
format version 4 and a restarted server answers the same. A binary fit's
decision_function has scikit-learn's sign. An async fit reports rising
progress and is cancelled. Bad params answer 400 naming the field
(probability or cache_mb with nystrom, n_centres or max_iter with exact,
n_centres 0, solver for svr), n_centres above the rows or below the
classes 422. With params.centres "rpcholesky" the decision_function rows
equal liblinear's on numpy's features of gen_rpcholesky_refs.py's pivots
(the same fixture script), to 1e-6, and metadata shows the rule; centres
with the exact solver or an unknown rule is 400. With params.precision
"float32" (float features) the decision_function rows equal the same
liblinear references to 1e-5 and the labels the vote's, and metadata
shows it; precision with the exact solver or an unknown value is 400.
params.solver "screened" (SMO on working sets a screen of 8 centres
picks, grown by rounds until every row meets the optimality conditions)
answers decision_function rows equal to the exact solver's to 1e-5, both
at tol 1e-9; metadata shows the solver, the screen's centres and seed,
cache_mb, and the rounds and rows they added; probability, max_iter,
centres and precision with it are 400, n_centres above the rows 422,
and svr has no such solver (400). params.solver "auto" on these 400 rows
runs exact (training.solver says so) and answers the exact fit's
decisions; with probability it is accepted (exact runs).
Usage, from the project root:
    /usr/bin/python3 tests/integration/svc_nystrom.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

D = 5
KERNEL = {"type": "rbf", "gamma": 0.3}
PARAMS = {"C": 1.0, "tol": 1e-9, "shrinking": True, "solver": "nystrom",
          "n_centres": 60, "seed": 5, "max_iter": 1000000}


def rows(name):
    return run.fixture_rows(name, D)


def fit(d, name, params, X, y, algorithm="svc", **extra):
    body = {"algorithm": algorithm, "kernel": KERNEL, "params": params, "X": X,
            "y": y}
    body.update(extra)
    return d.req("POST", f"/v1/models/{name}/fit", body)


def decisions(d, name, T):
    """decision_function of model name on T, its rows flattened."""
    r = d.req("POST", f"/v1/models/{name}/predict",
              {"X": T, "output": "decision_function"})
    return [v for row in (r.json() or {}).get("predictions", []) for v in row]


def max_abs(a, b):
    return max(abs(p - q) for p, q in zip(a, b)) if len(a) == len(b) else float("inf")


def cancel(d):
    rng = random.Random(11)
    X = [[rng.gauss(0, 1) for _ in range(20)] for _ in range(20000)]
    y = [int(r[0] > 0) + 2 * int(r[1] > 0) for r in X]
    r = fit(d, "long", {"solver": "nystrom", "n_centres": 1500, "tol": 1e-12,
                        "max_iter": 100000}, X, y, **{"async": True})
    jid = (r.json() or {}).get("job", {}).get("id")
    run.check(r.status == 202, "async nystrom fit: 202", r)
    seen = []
    deadline = time.time() + 120
    while time.time() < deadline:
        j = d.req("GET", f"/v1/jobs/{jid}").json()
        if j["status"] != "running" and j["status"] != "queued":
            break
        if j["status"] == "running":
            seen.append(j["progress"])
        if j["progress"] >= 0.4:
            break
        time.sleep(0.05)
    run.check(seen == sorted(seen) and any(0 < p < 1 for p in seen),
              "progress rises through values between 0 and 1", seen[-5:])
    r = d.req("DELETE", f"/v1/jobs/{jid}")
    run.check(r.status == 202, "cancel: 202", r)
    job = run.wait_job(d, jid, ("cancelled", "succeeded", "failed"))
    run.check(job and job["status"] == "cancelled", "the job ends cancelled", job)
    run.check(d.req("GET", "/v1/models/long").status == 404,
              "a cancelled first fit leaves no model")


def screened(d, X, y, T):
    """params.solver "screened": the exact optimum, found on working sets."""
    r = fit(d, "ex9", {"C": 1.0, "tol": 1e-9}, X, y)
    run.check(r.status == 201, "exact fit at tol 1e-9: 201", r)
    want = decisions(d, "ex9", T)
    given = {"solver": "screened", "tol": 1e-9, "n_centres": 8, "seed": 2,
             "cache_mb": 50}
    r = fit(d, "scr", given, X, y)
    meta = (r.json() or {}).get("model", {})
    run.check(r.status == 201, "svc screened fit: 201", r)
    run.check(meta.get("params") == dict(given, C=1.0, shrinking=True,
                                         probability=False),
              "metadata params: the solver by name, the screen's centres "
              "and seed, the exact solver's params", meta.get("params"))
    tr = meta.get("training", {})
    run.check(tr.get("solver") == "screened" and tr.get("rounds", 0) >= 2
              and tr.get("rows_added", 0) > 0
              and 0 < tr.get("working_rows", 0) <= 3 * 400
              and tr.get("screen_seconds", -1) >= 0
              and len(tr.get("objective", [])) == 6,
              "metadata training: the solver, its rounds, the rows they "
              "added, the working rows, one objective per pair", tr)
    got = decisions(d, "scr", T)
    run.check(max_abs(got, want) <= 1e-5,
              "screened: decision_function equals the exact solver's to 1e-5",
              (got[:3], want[:3]))
    # auto: exact up to 2000 rows (here 400), and the exact model
    r = fit(d, "auto", {"solver": "auto", "tol": 1e-9}, X, y)
    meta = (r.json() or {}).get("model", {})
    run.check(r.status == 201 and meta.get("params", {}).get("solver") == "auto"
              and meta.get("training", {}).get("solver") == "exact"
              and "rounds" not in meta.get("training", {}),
              "svc auto on 400 rows: 201, params.solver auto, training.solver "
              "exact", meta)
    got = decisions(d, "auto", T)
    run.check(got == want, "auto's exact fit answers the exact fit's decisions",
              (got[:3], want[:3]))
    r = fit(d, "autop", {"solver": "auto", "probability": True}, X, y)
    run.check(r.status == 201, "auto with probability: 201 (exact runs)", r)
    for params, status, text, what in (
            ({"solver": "screened", "probability": True}, 400,
             'params.probability applies only with params.solver \\"exact\\"',
             "probability with screened"),
            ({"solver": "screened", "max_iter": 5}, 400, "params.max_iter",
             "max_iter with screened"),
            ({"solver": "screened", "centres": "rpcholesky"}, 400,
             "params.centres", "centres with screened"),
            ({"solver": "screened", "precision": "float32"}, 400,
             "params.precision", "precision with screened"),
            ({"solver": "screened", "n_centres": 401}, 422, "params.n_centres",
             "the screen's centres above the rows")):
        r = fit(d, "bad", params, X, y)
        run.check(r.status == status and text in r.body,
                  f"{what}: {status} naming the field", r)
    r = fit(d, "bad", {"solver": "screened"}, X, [float(v) for v in y],
            algorithm="svr")
    run.check(r.status == 400 and "params.solver" in r.body,
              "svr has no screened solver: 400", r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    X, T = rows("svn_X.txt"), rows("svn_T.txt")
    y = [int(v) for v in run.read_fixture("svn_y.txt")]
    want_dec = run.read_fixture("svn_rbf_dec.txt")
    want_lab = [int(v) for v in run.read_fixture("svn_rbf_labels.txt")]

    def body(d):
        r = fit(d, "nys", PARAMS, X, y)
        meta = (r.json() or {}).get("model", {})
        run.check(r.status == 201, "svc nystrom fit: 201", r)
        run.check(meta.get("params") == PARAMS,
                  "metadata params: the solver by name and the params given",
                  meta.get("params"))
        tr = meta.get("training", {})
        run.check(tr.get("solver") == "nystrom" and isinstance(tr.get("epochs"), int)
                  and tr["epochs"] >= 6 and 0 <= tr.get("gap", 1) <= PARAMS["tol"]
                  and len(tr.get("objective", [])) == 6
                  and "epochs_capped" not in tr,
                  "metadata training: solver, epochs, gap at most tol, one "
                  "objective per pair", tr)
        run.check(meta.get("n_samples") == 60 and meta.get("classes") == [0, 1, 2, 3],
                  "n_samples is the number of centres; the classes", meta)
        got = decisions(d, "nys", T)
        run.check(max_abs(got, want_dec) <= 1e-6,
                  "decision_function equals liblinear's on the same centres to 1e-6",
                  (got[:3], want_dec[:3]))
        r = d.req("POST", "/v1/models/nys/predict", {"X": T})
        labels = (r.json() or {}).get("predictions")
        run.check(labels == want_lab, "labels: the reference's one-vs-one vote",
                  (labels or [])[:10])
        r = d.req("POST", "/v1/models/nys/score", {"X": T, "y": want_lab})
        run.check(r.status == 200 and
                  (r.json() or {}).get("scoring", {}).get("accuracy") == 1.0,
                  "score on the reference's labels: accuracy 1", r)
        r = d.req("POST", "/v1/models/nys/score", {"X": X, "y": y})
        run.check(r.status == 200 and
                  abs(r.json()["scoring"]["accuracy"] - tr.get("training_score", -1))
                  < 1e-12,
                  "score on the training rows is training_score", r)
        r = d.req("POST", "/v1/models/nys/predict", {"X": T, "output": "probability"})
        run.check(r.status == 409, "probability of a nystrom model: 409", r)
        with open(os.path.join(d.models, "nys.kmm"), "rb") as f:
            head = f.read()
        run.check(head[:4] == b"KMSM" and run.kmm_formats(head) == (8, 4),
                  "the model file is format version 8 (a drift reference) with "
                  "version 4's payload", head[:8])
        d.stop()
        d.start()
        again = decisions(d, "nys", T)
        run.check(again == got, "a restarted server answers the same", again[:3])

        # binary: scikit-learn's sign, positive for the second class
        yb = ["b" if v >= 2 else "a" for v in y]
        r = fit(d, "bin", {"solver": "nystrom", "n_centres": 60, "seed": 5}, X, yb)
        run.check(r.status == 201, "binary nystrom fit: 201", r)
        dec = d.req("POST", "/v1/models/bin/predict",
                    {"X": T, "output": "decision_function"}).json()["predictions"]
        lab = d.req("POST", "/v1/models/bin/predict", {"X": T}).json()["predictions"]
        run.check(all((v > 0) == (lab_ == "b") for v, lab_ in zip(dec, lab)),
                  "binary decision_function positive for the second class", dec[:4])

        # defaults: solver only
        r = fit(d, "def", {"solver": "nystrom"}, X, y)
        p = (r.json() or {}).get("model", {}).get("params")
        run.check(r.status == 201 and p == {
            "C": 1.0, "tol": 1e-3, "shrinking": True, "solver": "nystrom",
            "n_centres": 400, "seed": 0, "max_iter": 1000},
            "nystrom defaults: n_centres min(n, 1000), seed 0, max_iter 1000", p)
        r = fit(d, "exact", {"C": 1.0}, X, y)
        p = (r.json() or {}).get("model", {}).get("params", {})
        run.check(r.status == 201 and "solver" not in p and "cache_mb" in p,
                  "an exact fit's metadata shows what it did before", p)

        for params, status, text, what in (
                ({"solver": "nystrom", "probability": True}, 400,
                 'params.probability applies only with params.solver \\"exact\\"',
                 "probability with nystrom"),
                ({"solver": "nystrom", "cache_mb": 100}, 400, "params.cache_mb",
                 "cache_mb with nystrom"),
                ({"n_centres": 10}, 400,
                 'params.n_centres applies only with params.solver \\"nystrom\\"',
                 "n_centres with the exact solver"),
                ({"max_iter": 10}, 400, "params.max_iter", "max_iter with exact"),
                ({"solver": "nystrom", "n_centres": 0}, 400, "params.n_centres",
                 "n_centres 0"),
                ({"solver": "nystrom", "n_centres": 401}, 422, "params.n_centres",
                 "n_centres above the rows"),
                ({"solver": "nystrom", "n_centres": 3}, 422, "4 classes",
                 "n_centres below the classes"),
                ({"solver": "nystrom", "max_iter": 0}, 400, "params.max_iter",
                 "max_iter 0"),
                ({"solver": "liblinear"}, 400,
                 "params.solver must be one of exact, nystrom", "an unknown solver")):
            r = fit(d, "bad", params, X, y)
            run.check(r.status == status and text in r.body,
                      f"{what}: {status} naming the field", r)
        r = fit(d, "bad", {"solver": "nystrom"}, X, [float(v) for v in y],
                algorithm="svr")
        run.check(r.status == 400 and "params.solver" in r.body,
                  "svr has no solver: 400", r)
        run.check(d.req("GET", "/v1/models/bad").status == 404,
                  "nothing created by the refused fits")

        # rpcholesky centres: randomly pivoted Cholesky's factor as features
        rpc = dict(PARAMS, centres="rpcholesky")
        r = fit(d, "rpc", rpc, X, y)
        meta = (r.json() or {}).get("model", {})
        run.check(r.status == 201 and meta.get("params") == rpc
                  and meta.get("n_samples") == 60,
                  "rpcholesky fit: 201, metadata shows the rule", meta.get("params"))
        got = decisions(d, "rpc", T)
        want = run.read_fixture("svn_rpc_dec.txt")
        run.check(max_abs(got, want) <= 1e-6,
                  "rpcholesky: decision_function equals liblinear's on numpy's "
                  "features of the same pivots to 1e-6", (got[:3], want[:3]))
        # float features: within 1e-5 of the float64 path's references
        for name, rule, ref in (("f32", "uniform", want_dec),
                                ("f32rpc", "rpcholesky", want)):
            f32 = dict(PARAMS, centres=rule, precision="float32")
            r = fit(d, name, f32, X, y)
            meta = (r.json() or {}).get("model", {})
            shown = dict(f32)
            if rule == "uniform":
                del shown["centres"]
            run.check(r.status == 201 and meta.get("params") == shown,
                      f"float32 {rule} fit: 201, metadata shows the precision",
                      meta.get("params"))
            got = decisions(d, name, T)
            run.check(max_abs(got, ref) <= 1e-5,
                      f"float32 {rule}: decision_function within 1e-5 of "
                      "liblinear's on numpy's double features", (got[:3], ref[:3]))
        labels = d.req("POST", "/v1/models/f32/predict", {"X": T}).json()["predictions"]
        run.check(labels == want_lab, "float32: labels the reference's vote",
                  labels[:10])
        for params, text, what in (
                ({"centres": "rpcholesky"},
                 'params.centres applies only with params.solver \\"nystrom\\"',
                 "centres with the exact solver"),
                ({"solver": "nystrom", "centres": "leverage"}, "params.centres",
                 "an unknown centres rule"),
                ({"precision": "float32"},
                 'params.precision applies only with params.solver \\"nystrom\\"',
                 "precision with the exact solver"),
                ({"solver": "nystrom", "precision": "float16"}, "params.precision",
                 "an unknown precision")):
            r = fit(d, "bad", params, X, y)
            run.check(r.status == 400 and text in r.body,
                      f"{what}: 400 naming the field", r)
        screened(d, X, y, T)
        cancel(d)

    return run.with_daemon(args.server, "kmserve-svc-nystrom-", body)


if __name__ == "__main__":
    sys.exit(main())
