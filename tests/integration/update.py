#!/usr/bin/python3
"""Model updates (POST /v1/models/{name}/update) over HTTP, against refits.

An exact gpr model (with and without normalize_y, and one whose
hyperparameters the optimizer chose) updated by new rows answers the mean,
std and var, and shows the log marginal likelihood, of a refit on all the
rows at the model's hyperparameters, to 1e-9; a krr model fitted with
params.keep_factor (two outputs) predicts as a refit on all the rows to
1e-9 relative, twice in a row. Each update makes the next version (201
and its metadata: n_samples, updatable, training.rows_added and updates),
as a fit does: listed by /versions, answered by /versions/{v}/predict,
restorable by rollback; an async update is a job with a Location; two
updates sent at once lose no rows (the second succeeds on the first's, or
is 409: its version changed while it ran). After a
restart, the updated versions answer bit for bit as before. Refusals: a
krr model without keep_factor, a gpr nystrom model without keep_factor
and an svc model are 409 naming what can be updated; svc (string labels, an update with a subset
of them) and svr models fitted with params.keep_rows, updated by
warm-started SMO, label and predict as fresh fits on all the rows within
1e-2, and a class the svc model does not have is 409 naming it; an unknown model 404; X of another width,
NaN, strings, y missing, too short or of two outputs for gpr, an unknown
member, keep_factor with the rff solver: 400 naming the field; none of
them makes a version. kmctl update adds a CSV's rows (as a refit on all
rows predicts) and exits 1 with the server's 409 for a model that cannot
be updated; it updates an svc keep_rows model from a CSV of string
labels. Under --memory-budget-mb 1 an update whose
estimate does not fit is 413, as the fit of all its rows is.

Standard library only. Usage, from the project root:
    KM_KMCTL=build/kmctl /usr/bin/python3 tests/integration/update.py \
        --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

TOL = 1e-9
DIM = 3


def data(n, outputs, seed):
    rng = random.Random(seed)
    X = [[rng.uniform(-2, 2) for _ in range(DIM)] for _ in range(n)]
    if outputs == 0:
        return X, [sum(r) + 3 + rng.gauss(0, 0.1) for r in X]
    return X, [[sum(r) * (j + 1) + j + rng.gauss(0, 0.1)
                for j in range(outputs)] for r in X]


def close(got, want, tol=TOL):
    flat = lambda v: [x for r in v for x in (r if isinstance(r, list) else [r])]
    if not isinstance(got, list) or not isinstance(want, list):
        return False
    a, b = flat(got), flat(want)
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1.0, abs(y))
                                    for x, y in zip(a, b))


def meta(r):
    return (r.json() or {}).get("model", {})


def fit(d, name, algorithm, kernel, params, X, y):
    return d.req("POST", f"/v1/models/{name}/fit",
                 {"algorithm": algorithm, "kernel": kernel, "params": params,
                  "X": X, "y": y})


def update(d, name, X, y, **extra):
    return d.req("POST", f"/v1/models/{name}/update", dict(X=X, y=y, **extra))


def predict(d, name, X, output=None):
    body = {"X": X}
    if output:
        body["output"] = output
    r = d.req("POST", f"/v1/models/{name}/predict", body)
    return (r.json() or {}).get("predictions")


def gpr(d, answers, T):
    kernel = {"type": "rbf", "gamma": 0.4}
    for norm in (False, True):
        name = f"g{int(norm)}"
        params = {"noise": 0.05, "signal_variance": 1.5, "normalize_y": norm}
        X, y = data(75, 0, 10 + norm)
        r = fit(d, name, "gpr", kernel, params, X[:50], y[:50])
        run.check(r.status == 201 and meta(r).get("updatable") is True,
                  f"gpr normalize_y {norm}: fit 201, metadata updatable", r)
        n, version = 50, 1
        for k in (10, 15):
            r = update(d, name, X[n:n + k], y[n:n + k])
            m = meta(r)
            n, version = n + k, version + 1
            tr = m.get("training", {})
            run.check(r.status == 201 and m.get("version") == version and
                      m.get("n_samples") == n and m.get("updatable") is True
                      and tr.get("rows_added") == k and
                      tr.get("updates") == version - 1,
                      f"gpr normalize_y {norm}: update by {k} rows: 201, "
                      f"version {version}, n_samples {n}, rows_added, updates",
                      r)
            ref = fit(d, f"{name}-ref", "gpr", kernel, params, X[:n], y[:n])
            lml = tr.get("log_marginal_likelihood")
            want = meta(ref).get("training", {}).get(
                "log_marginal_likelihood")
            run.check(lml is not None and close([lml], [want]),
                      f"gpr normalize_y {norm}, {n} rows: log marginal "
                      "likelihood as the refit's to 1e-9", (lml, want))
            for output in ("mean", "std", "var"):
                got = predict(d, name, T, output)
                run.check(close(got, predict(d, f"{name}-ref", T, output)),
                          f"gpr normalize_y {norm}, {n} rows: output "
                          f"{output} as a refit on all rows to 1e-9", got)
                answers[(name, output)] = got

    # the optimizer's hyperparameters are kept: the refit runs at them
    X, y = data(60, 0, 12)
    r = fit(d, "gopt", "gpr", {"type": "rbf", "gamma": 1.0},
            {"noise": 0.1, "optimizer": "lbfgs"}, X[:45], y[:45])
    tr = meta(r).get("training", {})
    r = update(d, "gopt", X[45:], y[45:])
    fixed = {"noise": tr.get("noise"),
             "signal_variance": tr.get("signal_variance")}
    ref = fit(d, "gopt-ref", "gpr", {"type": "rbf", "gamma": tr.get("gamma")},
              fixed, X, y)
    run.check(r.status == 201 and ref.status == 201 and
              meta(r).get("training", {}).get("gamma") == tr.get("gamma") and
              close(predict(d, "gopt", T, "std"),
                    predict(d, "gopt-ref", T, "std")) and
              close(predict(d, "gopt", T), predict(d, "gopt-ref", T)),
              "gpr optimizer lbfgs: the update keeps the fitted "
              "hyperparameters; mean and std as a refit at them to 1e-9",
              (r, ref))


def krr(d, answers, T):
    kernel = {"type": "rbf", "gamma": 0.5}
    params = {"alpha": 0.1, "keep_factor": True}
    X, y = data(90, 2, 20)
    r = fit(d, "k", "krr", kernel, params, X[:60], y[:60])
    m = meta(r)
    run.check(r.status == 201 and m.get("updatable") is True and
              m.get("params", {}).get("keep_factor") is True,
              "krr keep_factor: fit 201, params.keep_factor and updatable in "
              "the metadata", r)
    n = 60
    for k in (25, 5):
        r = update(d, "k", X[n:n + k], y[n:n + k])
        n += k
        ref = fit(d, "k-ref", "krr", kernel, params, X[:n], y[:n])
        plain = fit(d, "k-plain", "krr", kernel, {"alpha": 0.1}, X[:n], y[:n])
        got = predict(d, "k", T)
        run.check(r.status == 201 and meta(r).get("n_samples") == n and
                  close(got, predict(d, "k-ref", T)) and
                  close(got, predict(d, "k-plain", T)) and
                  close(meta(r).get("training", {}).get("rkhs_norm_sq"),
                        meta(ref).get("training", {}).get("rkhs_norm_sq")),
                  f"krr keep_factor, {n} rows (2 outputs): predictions and "
                  "rkhs_norm_sq as refits on all rows to 1e-9", r)
        answers[("k", None)] = got
    run.check(meta(plain).get("updatable") is False and
              meta(plain).get("params", {}).get("keep_factor") is False,
              "krr without keep_factor: updatable false", plain)


def versions(d, T):
    r = d.req("GET", "/v1/models/k/versions")
    listed = [v.get("version") for v in (r.json() or {}).get("versions", [])]
    run.check(r.status == 200 and (r.json() or {}).get("current") == 3 and
              listed[:1] == [3], "versions: the updates are versions 2 and 3 "
              "of k, 3 current", r)
    v3 = predict(d, "k", T)
    r = d.req("POST", "/v1/models/k/rollback", {"version": 2})
    run.check(r.status == 200 and meta(r).get("version") == 4 and
              meta(r).get("n_samples") == 85,
              "rollback to version 2 (the first update's): version 4, 85 "
              "rows", r)
    r = d.req("POST", "/v1/models/k/rollback", {"version": 3})
    run.check(r.status == 200 and predict(d, "k", T) == v3,
              "rollback to version 3: its predictions again", r)
    # async: a job, then the next version
    X, y = data(4, 2, 30)
    r = update(d, "k", X, y, **{"async": True})
    job = (r.json() or {}).get("job", {})
    run.check(r.status == 202 and r.headers.get("location", "").startswith(
        "/v1/jobs/"), "async update: 202 with a job and its Location", r)
    job = run.wait_job(d, job.get("id"), ("succeeded", "failed"))
    m = (job or {}).get("result") or {}
    run.check(m.get("version") == 6 and m.get("n_samples") == 94,
              "async update: the job succeeds with version 6 of 94 rows", job)
    return predict(d, "k", T)


def concurrent(d):
    """Two updates sent at once, both of the version served: whatever the
    order the worker runs them in, no update is lost. A ledger: each job
    either succeeds with the rows of the updates before it, or fails 409
    naming the change (its version is no longer the newest); the model
    ends with the rows of the jobs that succeeded."""
    X, y = data(1210, 0, 80)
    r = fit(d, "cc", "gpr", {"type": "rbf", "gamma": 0.5}, {"noise": 0.1},
            X[:1200], y[:1200])
    jobs = []
    for i in range(2):
        a = update(d, "cc", X[1200 + 5 * i:1205 + 5 * i],
                   y[1200 + 5 * i:1205 + 5 * i], **{"async": True})
        jobs.append((a.json() or {}).get("job", {}).get("id"))
    done = [run.wait_job(d, j, ("succeeded", "failed"), timeout=300)
            for j in jobs]
    ok = [j for j in done if (j or {}).get("status") == "succeeded"]
    bad = [j for j in done if (j or {}).get("status") == "failed"]
    final = d.req("GET", "/v1/models/cc").json() or {}
    sizes = sorted(j["result"]["n_samples"] for j in ok)
    run.check(r.status == 201 and len(ok) + len(bad) == 2 and len(ok) >= 1
              and sizes == [1200 + 5 * (i + 1) for i in range(len(ok))] and
              final.get("n_samples") == 1200 + 5 * len(ok) and
              all(j["error"]["code"] == "conflict" and "changed while the "
                  "update ran" in j["error"]["message"] for j in bad),
              "two updates at once: each succeeds on the rows before it or "
              "is 409 naming the change; none is lost", done)


def refusals(d, T):
    X, y = data(20, 0, 40)
    fit(d, "svc", "svc", {"type": "rbf"}, {}, X, [int(v > 3) for v in y])
    fit(d, "gnys", "gpr", {"type": "rbf"},
        {"solver": "nystrom", "n_centres": 10}, X, y)
    for name, text, what in (
            ("k-plain", "keep_factor", "krr without keep_factor"),
            ("gnys", "nystrom", "gpr nystrom"),
            ("svc", "svc", "svc")):
        r = update(d, name, X[:2], y[:2])
        run.check(r.status == 409 and text in r.body and
                  "krr models fitted with params.keep_factor, svc and svr "
                  "models fitted with params.keep_rows and exact gpr models "
                  "and nystrom gpr models fitted with params.keep_factor"
                  in r.body,
                  f"update of {what}: 409 naming what can be updated", r)
    r = update(d, "nosuch", X[:2], y[:2])
    run.check(r.status == 404, "update of an unknown model: 404", r)
    raw = '{"X":[[1,NaN,2]],"y":[1]}'
    for body, text, what in (
            ({"X": [[1, 2]], "y": [1]}, "features", "X of 2 columns"),
            (raw, "", "NaN in X"),
            ({"X": [["a", "b", "c"]], "y": [1]}, "X", "strings in X"),
            ({"X": X[:2]}, "y is required", "y missing"),
            ({"X": X[:2], "y": [1]}, "y has 1 entries", "y too short"),
            ({"X": X[:2], "y": [1, 2], "params": {}}, "params",
             "an unknown member"),
            ({"X": X[:2], "y": [[1, 2], [3, 4]]}, "y", "y of two outputs"),
            ({"X": [], "y": []}, "X", "no rows")):
        r = d.req("POST", "/v1/models/g0/update", body,
                  headers=[("Content-Type", "application/json")])
        run.check(r.status == 400 and text in r.body,
                  f"update with {what}: 400 naming it", r)
    r = d.req("GET", "/v1/models/g0")
    run.check((r.json() or {}).get("version") == 3,
              "the refused updates made no version", r)
    r = fit(d, "kn", "krr", {"type": "rbf"},
            {"solver": "rff", "keep_factor": True}, X, y)
    run.check(r.status == 400 and "params.keep_factor" in r.body,
              "keep_factor with the rff solver: 400 naming it", r)


def classes(X):
    """Three string classes of the rows (by the sign of two sums)."""
    return ["a" if r[0] + r[1] > 0.5 else "b" if r[2] - r[0] > 0 else "c"
            for r in X]


def svm(d, answers, T):
    """svc (three string labels) and svr fitted with params.keep_rows,
    updated by warm-started SMO, against fresh fits on all the rows: the
    same labels and decision values (svr predictions) within 1e-2, ten
    times SMO's tolerance 1e-3, the bound two solutions that each meet
    SMO's stopping rule keep to (test_km_svm_update.c measures it). The
    second svc update holds only classes b and c, whose indices in the
    update differ from the model's. A class the model does not have is
    409 naming it; keep_rows with the nystrom solver 400."""
    kernel, params = {"type": "rbf", "gamma": 0.5}, {"C": 2, "keep_rows": True}
    X, _ = data(130, 0, 90)
    y = classes(X)
    bc = [i for i in range(100, 130) if y[i] != "a"][:12]
    rows = list(range(80)) + list(range(80, 100)) + bc
    r = fit(d, "s", "svc", kernel, params, X[:80], y[:80])
    m = meta(r)
    run.check(r.status == 201 and m.get("updatable") is True and
              m.get("params", {}).get("keep_rows") is True,
              "svc keep_rows: fit 201, params.keep_rows and updatable in the "
              "metadata", r)
    n = 80
    for step, idx in enumerate((list(range(80, 100)), bc)):
        r = update(d, "s", [X[i] for i in idx], [y[i] for i in idx])
        n += len(idx)
        ref = fit(d, "s-ref", "svc", kernel, params,
                  [X[i] for i in rows[:n]], [y[i] for i in rows[:n]])
        got = predict(d, "s", T, "decision_function")
        want = predict(d, "s-ref", T, "decision_function")
        labels = predict(d, "s", T)
        tr = meta(r).get("training", {})
        run.check(r.status == 201 and meta(r).get("n_samples") == n and
                  meta(r).get("updatable") is True and
                  tr.get("updates") == step + 1 and
                  close(got, want, 1e-2) and labels == predict(d, "s-ref", T)
                  and set(labels) <= {"a", "b", "c"},
                  f"svc keep_rows, update {step + 1} to {n} rows: labels and "
                  "decision values as a fresh fit on all rows (1e-2)",
                  (r, got, want))
        answers[("s", "decision_function")] = got
    r = update(d, "s", X[:2], ["a", "z"])
    msg = ((r.json() or {}).get("error") or {}).get("message", "")
    run.check(r.status == 409 and '"z"' in msg and "cannot add a class"
              in msg, "svc update with a class the model does not have: "
              "409 naming it", r)
    r = update(d, "s", X[:2], [1, 2])
    run.check(r.status == 409, "svc update with numbers for string labels: "
              "409", r)
    r = d.req("GET", "/v1/models/s")
    run.check((r.json() or {}).get("version") == 3,
              "the refused svc updates made no version", r)
    plain = fit(d, "s-plain", "svc", kernel, {"C": 2}, X[:80], y[:80])
    r = update(d, "s-plain", X[:2], y[:2])
    run.check(meta(plain).get("updatable") is False and r.status == 409 and
              "keep_rows" in r.body, "svc without keep_rows: updatable "
              "false, update 409 naming keep_rows", (plain, r))
    r = fit(d, "sn", "svc", kernel, {"solver": "nystrom", "keep_rows": True},
            X, y)
    run.check(r.status == 400 and "params.keep_rows" in r.body,
              "keep_rows with the nystrom solver: 400 naming it", r)

    Xr, yr = data(90, 0, 91)
    params = {"C": 5, "epsilon": 0.05, "keep_rows": True}
    r = fit(d, "v", "svr", kernel, params, Xr[:60], yr[:60])
    run.check(r.status == 201 and meta(r).get("updatable") is True,
              "svr keep_rows: fit 201, updatable", r)
    r = update(d, "v", Xr[60:], yr[60:])
    ref = fit(d, "v-ref", "svr", kernel, params, Xr, yr)
    got = predict(d, "v", T)
    run.check(r.status == 201 and meta(r).get("n_samples") == 90 and
              close(got, predict(d, "v-ref", T), 1e-2),
              "svr keep_rows: update to 90 rows predicts as a fresh fit on "
              "all rows (1e-2)", (r, got))
    answers[("v", None)] = got


def kmctl(d, binary, tmp, T):
    """kmctl update: the CSV's rows (features, then the target) added; a
    model that cannot be updated is exit 1 with the server's 409."""
    X, y = data(40, 0, 70)
    r = fit(d, "kc", "gpr", {"type": "rbf", "gamma": 0.5}, {"noise": 0.1},
            X[:30], y[:30])
    path = os.path.join(tmp, "rows.csv")
    with open(path, "w") as f:
        f.write("a,b,c,y\n")
        for row, t in zip(X[30:], y[30:]):
            f.write(",".join(repr(v) for v in row + [t]) + "\n")
    url = f"http://127.0.0.1:{d.port}"
    p = subprocess.run([binary, "--server", url, "update", "kc", path],
                       capture_output=True, text=True, timeout=300)
    ref = fit(d, "kc-ref", "gpr", {"type": "rbf", "gamma": 0.5},
              {"noise": 0.1}, X, y)
    run.check(r.status == 201 and p.returncode == 0 and
              p.stdout.startswith("updated kc version 2: gpr") and
              close(predict(d, "kc", T), predict(d, "kc-ref", T)),
              "kmctl update NAME DATA.csv: exit 0, 'updated kc version 2', "
              "predictions as a refit on all rows", (p.stdout, p.stderr))
    # an svc keep_rows model of string labels: the CSV's last column holds
    # its labels
    X, _ = data(52, 0, 71)
    labels = classes(X)
    fit(d, "ks", "svc", {"type": "rbf", "gamma": 0.5}, {"keep_rows": True},
        X[:40], labels[:40])
    X, labels = X[40:], labels[40:]
    spath = os.path.join(tmp, "svc.csv")
    with open(spath, "w") as f:
        f.write("a,b,c,label\n")
        for row, t in zip(X, labels):
            f.write(",".join(repr(v) for v in row) + f",{t}\n")
    p = subprocess.run([binary, "--server", url, "update", "ks", spath],
                       capture_output=True, text=True, timeout=300)
    m = d.req("GET", "/v1/models/ks").json() or {}
    run.check(p.returncode == 0 and
              p.stdout.startswith("updated ks version 2: svc") and
              m.get("n_samples") == 52 and
              m.get("training", {}).get("updates") == 1,
              "kmctl update of an svc keep_rows model (string labels): exit "
              "0, version 2 of 52 rows", (p.stdout, p.stderr, m))
    p = subprocess.run([binary, "--server", url, "update", "gnys", path],
                       capture_output=True, text=True, timeout=300)
    run.check(p.returncode == 1 and "409" in p.stderr and
              "nystrom" in p.stderr,
              "kmctl update of a model that cannot be updated: exit 1 with "
              "the server's 409", (p.returncode, p.stderr))


def small_budget(server):
    with run.temp_daemon(server, "kmserve-update-budget-",
                         "--memory-budget-mb", "1") as d:
        X, y = data(400, 0, 50)
        kernel, params = {"type": "rbf"}, {"keep_factor": True}
        r = fit(d, "k", "krr", kernel, params, X[:150], y[:150])
        run.check(r.status == 201, "1 MiB budget: a keep_factor fit of 150 "
                  "rows is admitted", r)
        r = update(d, "k", X[150:], y[150:])
        full = fit(d, "k2", "krr", kernel, params, X, y)
        run.check(r.status == 413 and full.status == 413,
                  "1 MiB budget: the update to 400 rows is 413, as the fit "
                  "of the 400 rows is", (r, full))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build",
                                                     "kmserve"))
    ap.add_argument("--kmctl", default=os.environ.get(
        "KM_KMCTL", os.path.join(run.ROOT, "build", "kmctl")))
    args = ap.parse_args()
    T, _ = data(20, 0, 99)

    def body(d):
        answers = {}
        gpr(d, answers, T)
        krr(d, answers, T)
        answers[("k", None)] = versions(d, T)
        refusals(d, T)
        svm(d, answers, T)
        concurrent(d)
        with tempfile.TemporaryDirectory(prefix="kmserve-update-csv-") as tmp:
            kmctl(d, os.path.abspath(args.kmctl), tmp, T)
        small_budget(args.server)
        meta_before = d.req("GET", "/v1/models/g1").json()
        d.stop()
        d.start()
        r = d.req("GET", "/v1/models/g1")
        run.check(r.json() == meta_before, "after a restart: the updated "
                  "gpr version's metadata as before", r)
        for (name, output), want in answers.items():
            got = predict(d, name, T, output)
            run.check(got == want, f"after a restart: {name} output "
                      f"{output or '(default)'} bit for bit", got)
        X, y = data(3, 0, 60)
        r = update(d, "g1", X, y)
        run.check(r.status == 201 and meta(r).get("version") == 4,
                  "after a restart: an updated version loaded from its file "
                  "is updated again (version 4)", r)

    return run.with_daemon(args.server, "kmserve-update-", body,
                           "--keep-versions", "5")


if __name__ == "__main__":
    sys.exit(main())
