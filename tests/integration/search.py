#!/usr/bin/python3
"""Hyperparameter search over HTTP (a fit's "search" member) and through
kmctl search.

- With the folds given (cv.test_fold), each point's mean and std score and
  the chosen point equal scikit-learn's GridSearchCV with PredefinedSplit
  (tests/fixtures/gen_search_http_refs.py, search_http.json): krr to 1e-8,
  krr with preprocess standardize against Pipeline(StandardScaler,
  KernelRidge) to 1e-8, svc accuracies exactly (to 1e-12), svr to 1e-6
  (the SMO's parity with LIBSVM), kpca's reconstruction error (gamma and
  the inverse map's alpha) to 1e-8; the refitted model predicts as
  GridSearchCV's best_estimator_.
- krr's closed-form leave-one-out and GCV equal numpy's brute force (n
  refits; the GCV formula) to 1e-9.
- The record in metadata survives a restart; random draws are repeatable
  by seed; a search runs as a job with rising progress and can be
  cancelled, leaving nothing served; errors: unknown scoring, bad
  parameter, empty list, a grid over 10000 points (400), more folds than
  rows (422), over the memory budget (413).
- kmctl search prints the table and marks the best point.
Usage, from the project root:
    /usr/bin/python3 tests/integration/search.py --server build/kmserve --kmctl build/kmctl
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

with open(os.path.join(run.FIXTURES, "search_http.json")) as f:
    REFS = json.load(f)


def rel(a, b, floor):
    return max((abs(x - y) / max(abs(y), floor) for x, y in zip(a, b)), default=0)


def search_body(case, **search):
    body = dict(case["body"])
    body["X"] = case["X"]
    if case["y"] is not None:
        body["y"] = case["y"]
    body["search"] = search
    return body


def grid_of(case):
    """The points' values as lists per name (the grid is their product)."""
    names = sorted(case["points"][0])
    return {k: sorted({p[k] for p in case["points"]}) for k in names}


def table(meta):
    return (meta or {}).get("search") or {}


def check_grid(d, name, case, tol, floor):
    body = search_body(case, params=grid_of(case), cv={"test_fold": case["test_fold"]},
                       scoring=case["scoring"])
    r = d.req("POST", f"/v1/models/{name}/fit", body)
    meta = (r.json() or {}).get("model")
    t = table(meta)
    rows = t.get("results", [])
    check(r.status == 201 and len(rows) == len(case["points"]),
          f"{name}: fit with search 201, one result per point", r)
    if not rows:
        return
    check([row["params"] for row in rows] == case["points"],
          f"{name}: points in ParameterGrid order", [row["params"] for row in rows][:3])
    mean = [row["mean_score"] for row in rows]
    std = [row["std_score"] for row in rows]
    check(rel(mean, case["mean"], floor) <= tol and rel(std, case["std"], floor) <= tol,
          f"{name}: mean and std scores equal GridSearchCV's to {tol:g}",
          (mean, case["mean"], std, case["std"]))
    best = t.get("best_index")
    check(best == case["best"] or abs(mean[best] - case["mean"][case["best"]]) <= 1e-12,
          f"{name}: the same best point as GridSearchCV", (best, case["best"]))
    check(t.get("n_splits") == max(case["test_fold"]) + 1 and t.get("cv") == "predefined" and
          t.get("best_params") == case["points"][case["best"]],
          f"{name}: record names the folds and the best params", t.get("best_params"))
    if case["predictions"] is None:
        return
    p = d.req("POST", f"/v1/models/{name}/predict", {"X": case["T"]}).json() or {}
    got = p.get("predictions", [])
    check(len(got) == len(case["predictions"]) and
          rel(got, case["predictions"], floor) <= max(tol, 1e-9),
          f"{name}: the refit predicts as best_estimator_", (got, case["predictions"]))


def scenario_parity(d):
    check_grid(d, "s-krr", REFS["krr"], 1e-8, 1e-6)
    check_grid(d, "s-krr-pipe", REFS["krr_pipeline"], 1e-8, 1e-6)
    check_grid(d, "s-svc", REFS["svc"], 1e-12, 1e-6)
    check_grid(d, "s-svr", REFS["svr"], 1e-6, 1e-6)
    check_grid(d, "s-kpca", REFS["kpca"], 1e-8, 1e-6)


def scenario_closed_form(d):
    c = REFS["loo"]
    for cv, want in (("loo", c["loo"]), ("gcv", c["gcv"])):
        body = {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": c["gamma"]},
                "X": c["X"], "y": c["y"],
                "search": {"params": {"alpha": c["alphas"]}, "cv": cv,
                           "scoring": "neg_mean_squared_error"}}
        r = d.req("POST", f"/v1/models/s-{cv}/fit", body)
        t = table((r.json() or {}).get("model"))
        mean = [row["mean_score"] for row in t.get("results", [])]
        check(r.status == 201 and len(mean) == len(want) and rel(mean, want, 1e-6) <= 1e-9,
              f"krr {cv}: closed form equals numpy's brute force to 1e-9", (mean, want, r.status))
        check(t.get("cv") == cv and t.get("best_index") == want.index(max(want)),
              f"krr {cv}: the record says {cv} and picks the best alpha", t.get("best_index"))


def scenario_record(d, server, models_dir):
    case = REFS["krr"]
    body = search_body(case, params={"alpha": [0.1, 1.0], "kernel.gamma": {"log_uniform": [0.01, 1.0]}},
                       n_iter=6, seed=7, cv=3)
    a = table(d.req("POST", "/v1/models/s-rand/fit", body).json().get("model"))
    b = table(d.req("POST", "/v1/models/s-rand2/fit", body).json().get("model"))
    pa = [row["params"] for row in a.get("results", [])]
    check(len(pa) == 6 and pa == [row["params"] for row in b.get("results", [])] and
          all(0.01 <= p["kernel.gamma"] <= 1.0 and p["alpha"] in (0.1, 1.0) for p in pa),
          "random search: n_iter draws within the ranges, the same for the same seed", pa)
    body["search"]["seed"] = 8
    c = table(d.req("POST", "/v1/models/s-rand3/fit", body).json().get("model"))
    check([row["params"] for row in c.get("results", [])] != pa,
          "random search: another seed draws other points", c.get("results", [])[:1])
    d.stop()
    d.start()
    listed = [m for m in d.req("GET", "/v1/models").json().get("models", [])
              if m.get("name") == "s-rand"]
    brief = table(listed[0] if listed else {})
    check("results" not in brief and brief.get("best_params") == a.get("best_params"),
          "GET /v1/models lists the search record without its results table", brief)
    again = table(d.req("GET", "/v1/models/s-rand").json())
    check(again == a and again.get("n_points") == 6,
          "the search record survives a restart (model file version 2)", again.get("n_points"))


def scenario_job(d):
    X, y = run.synthetic(1500, 6, 3)
    body = {"algorithm": "krr", "kernel": {"type": "rbf"}, "X": X, "y": y, "async": True,
            "search": {"params": {"alpha": [0.1, 1, 10], "kernel.gamma": [0.01, 0.1, 1, 10]},
                       "cv": 5}}
    r = d.req("POST", "/v1/models/s-job/fit", body)
    jid = (r.json() or {}).get("job", {}).get("id")
    check(r.status == 202 and jid, "async search: 202 with a job", r)
    seen = []
    deadline = run.time.time() + 180  # a loaded machine (or a sanitizer) is slow
    while run.time.time() < deadline:
        job = d.req("GET", f"/v1/jobs/{jid}").json() or {}
        seen.append(job.get("progress", 0))
        if job.get("status") in ("succeeded", "failed", "cancelled"):
            break
        run.time.sleep(0.02)
    check(job.get("status") == "succeeded" and seen == sorted(seen) and
          len(set(seen)) > 2 and seen[-1] == 1,
          "search job: progress rises through the points to 1", (job.get("status"), seen[-5:]))
    check(table(job.get("result")).get("n_points") == 12, "search job: the result holds the table")
    body["search"]["params"]["alpha"] = [0.1, 1, 10, 100]
    r = d.req("POST", "/v1/models/s-cancel/fit", body)
    jid = (r.json() or {}).get("job", {}).get("id")
    run.wait_job(d, jid, ("running",))
    run.time.sleep(0.2)
    d.req("DELETE", f"/v1/jobs/{jid}")
    job = run.wait_job(d, jid, ("cancelled", "succeeded", "failed"))
    check(job.get("status") == "cancelled" and d.req("GET", "/v1/models/s-cancel").status == 404,
          "a cancelled search serves nothing", job.get("status"))


def scenario_errors(d):
    case = REFS["krr"]
    X, y = case["X"], case["y"]
    base = {"algorithm": "krr", "kernel": {"type": "rbf"}, "X": X, "y": y}
    cases = [
        ({"params": {"alpha": [1]}, "scoring": "accuracy"}, 400, "search.scoring"),
        ({"params": {"alpha": [1]}, "scoring": "nope"}, 400, "search.scoring must be one of"),
        ({"params": {"alhpa": [1]}}, 400, "search.params.alhpa is not a parameter"),
        ({"params": {"kernel.degree": [2]}}, 400, "takes no degree"),
        ({"params": {"alpha": []}}, 400, "search.params.alpha must list"),
        ({"params": {"alpha": [1, -1]}}, 400, "search point 1 (alpha=-1)"),
        ({"params": {"alpha": {"log_uniform": [0.1, 1]}}}, 400, "search.n_iter is required"),
        ({"params": {"alpha": list(range(1, 102)), "kernel.gamma": list(range(1, 101))}}, 400,
         "at most 10000"),
        ({"params": {"alpha": [1]}, "cv": 1000}, 422, "search: cv.folds 1000 is more than the 120 rows"),
        ({"params": {"alpha": [1]}, "cv": {"test_fold": [0, 1]}}, 400, "search.cv.test_fold"),
        ({"params": {"alpha": [1]}, "cv": "nope"}, 400, "search.cv"),
        ({"params": {"alpha": [1]}, "bogus": 1}, 400, "search.bogus"),
        ({"params": {"alpha": [1]}, "seed": 3}, 400, "search.seed applies to random draws"),
        ("grid", 400, "search must be an object"),
    ]
    for search, status, text in cases:
        body = dict(base, search=search)
        r = d.req("POST", "/v1/models/s-bad/fit", body)
        msg = (r.json() or {}).get("error", {}).get("message", "")
        check(r.status == status and text in msg, f"search {json.dumps(search)[:60]}: {status}",
              (r.status, msg))
    small = {"algorithm": "krr", "kernel": {"type": "linear"}, "X": [[0], [1], [2], [3]],
             "y": [0, 1, 2, 3], "async": True}
    for tf, status, text in (([-1, -1, -1, -1], 400, "cv.folds must be at least 1"),
                             ([0, 2, 0, 2], 422, "cv fold 1 has no rows"),
                             ([0, 0, 0, 0], 422, "nothing is left to train on")):
        r = d.req("POST", "/v1/models/s-bad/fit",
                  dict(small, search={"params": {"alpha": [1]}, "cv": {"test_fold": tf}}))
        check(r.status == status and text in r.body,
              f"async search with test_fold {tf}: {status} at once, not a job", r)
    check(d.req("GET", "/v1/models/s-bad").status == 404, "a refused search creates nothing")
    svc = {"algorithm": "svc", "kernel": {"type": "rbf"}, "X": X[:10],
           "y": [0] * 9 + [1], "search": {"params": {"C": [1]}, "cv": 3}}
    r = d.req("POST", "/v1/models/s-bad/fit", svc)
    check(r.status == 422 and "more than the 1 rows of class" in r.body,
          "stratified folds above a class's rows: 422", r)
    r = d.req("POST", "/v1/models/s-bad/fit", dict(svc, y=[0, 1] * 5,
                                                  search={"params": {"C": [1]}, "scoring": "neg_log_loss"}))
    check(r.status == 400 and "probability" in r.body, "neg_log_loss without probability: 400", r)


def scenario_budget(binary, tmp):
    models = os.path.join(tmp, "budget", "models")
    os.makedirs(models)
    d = run.Daemon(binary, models, "--memory-budget-mb", "2").start()
    X, y = run.synthetic(300, 4, 9)
    plain = {"algorithm": "krr", "kernel": {"type": "rbf"}, "X": X, "y": y}
    r = d.req("POST", "/v1/models/b/fit", plain)
    check(r.status == 201, "a plain fit within the budget: 201", r)
    r = d.req("POST", "/v1/models/b/fit", dict(plain, search={"params": {"alpha": [1, 2]}, "cv": "loo"}))
    msg = (r.json() or {}).get("error", {}).get("message", "")
    check(r.status == 413 and "estimated" in msg, "a search over the memory budget: 413", r)
    d.stop()


def scenario_closed_form_memory(binary, tmp):
    """The closed forms' admission estimate bounds what they hold: the
    estimate (from the 413 of a daemon with a 1 MiB budget) against the
    growth of a fresh daemon's peak resident memory over the search (after
    a small fit of the same kind has loaded the code and the pools). Not
    under a sanitizer, whose resident memory is not the program's."""
    n = 2500
    X, y = run.synthetic(n, 4, 11)
    for cv in ("loo", "gcv"):
        body = {"algorithm": "krr", "kernel": {"type": "rbf"}, "X": X, "y": y,
                "search": {"params": {"alpha": [0.5, 1, 2, 4]}, "cv": cv}}
        models = os.path.join(tmp, "cfm-" + cv, "models")
        os.makedirs(models)
        d = run.Daemon(binary, models, "--memory-budget-mb", "1").start()
        r = d.req("POST", "/v1/models/m/fit", body)
        d.stop()
        m = re.search(r"needs an estimated ([0-9.]+) MiB", r.body)
        check(r.status == 413 and m, f"closed form ({cv}): refused under 1 MiB, the estimate said", r)
        if not m:
            continue
        estimate = float(m.group(1)) * 2 ** 20
        d = run.Daemon(binary, models + "2", "--memory-budget-mb", "8000").start()
        try:
            pid = d.proc.pid
            with open(f"/proc/{pid}/maps") as f:
                maps = f.read()
            if "libasan" in maps or "libtsan" in maps:
                continue
            small = dict(body, X=X[:60], y=y[:60])
            check(d.req("POST", "/v1/models/w/fit", small).status == 201, f"closed form ({cv}): warm-up fit", "")

            def status(key):
                with open(f"/proc/{pid}/status") as f:
                    return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key))
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")
            before = status("VmRSS")
            r = d.req("POST", "/v1/models/m/fit", body)
            growth = status("VmHWM") - before
            check(r.status == 201 and growth <= estimate + 2 * 2 ** 20,
                  f"closed form ({cv}): peak growth within the estimate",
                  f"{growth / 2 ** 20:.1f} MiB grown, {estimate / 2 ** 20:.1f} MiB estimated")
        finally:
            d.stop()


def scenario_kmctl(d, kmctl):
    case = REFS["svc"]
    tmp = tempfile.mkdtemp(prefix="kmserve-search-csv-")
    path = os.path.join(tmp, "svc.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([f"x{j}" for j in range(len(case["X"][0]))] + ["y"])
        for row, label in zip(case["X"], case["y"]):
            w.writerow(row + [label])
    p = subprocess.run([kmctl, "--server", f"http://127.0.0.1:{d.port}", "search", "k-svc", path,
                        "--algorithm", "svc", "--kernel", "rbf", "--grid", "gamma=0.05,0.5,5",
                        "--grid", "C=0.1,1,10", "--cv", "5"],
                       capture_output=True, text=True, timeout=120)
    lines = p.stdout.splitlines()
    marked = [ln for ln in lines if ln.rstrip().endswith("*")]
    check(p.returncode == 0 and any(ln.startswith("C ") and "kernel.gamma" in ln and "mean" in ln
                                    for ln in lines) and len(marked) == 1,
          "kmctl search: a table with a header, one row per point, the best marked",
          (p.returncode, p.stdout[-800:], p.stderr[-400:]))
    meta = d.req("GET", "/v1/models/k-svc").json() or {}
    check(table(meta).get("n_points") == 9 and table(meta).get("n_splits") == 5,
          "kmctl search: the model holds a 9-point, 5-fold record", table(meta).get("n_points"))
    p = subprocess.run([kmctl, "--server", f"http://127.0.0.1:{d.port}", "search", "k-svc", path,
                        "--algorithm", "svc", "--kernel", "rbf", "--cv", "5"],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "--grid" in p.stderr, "kmctl search without --grid: usage error", p.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    ap.add_argument("--kmctl", default=os.environ.get("KM_KMCTL", os.path.join(run.ROOT, "build", "kmctl")))
    args = ap.parse_args()
    server = os.path.abspath(args.server)

    def body(d):
        scenario_parity(d)
        scenario_closed_form(d)
        scenario_errors(d)
        scenario_job(d)
        scenario_kmctl(d, os.path.abspath(args.kmctl))
        scenario_record(d, server, d.models)
        tmp = tempfile.mkdtemp(prefix="kmserve-search-")
        try:
            scenario_budget(server, tmp)
            scenario_closed_form_memory(server, tmp)
        finally:
            run.shutil.rmtree(tmp, ignore_errors=True)

    return run.with_daemon(server, "kmserve-search-", body)


if __name__ == "__main__":
    sys.exit(main())
