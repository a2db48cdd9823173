#!/usr/bin/python3
"""Drift detection over HTTP: GET /v1/models/{name}/drift, the per-model
reservoir of predicted rows, its window, cache, job and metrics.

Each model keeps its training rows as its drift reference (all of them
below 1000 rows, in order), and each predict's rows go into its reservoir
(all of them while it is not full), so the test's two samples are known
exactly here, and the answer is checked against numpy:
- the unbiased MMD^2 (Gretton et al. 2012: the off-diagonal means of K_XX
  and K_YY less twice the mean of K_XY) equals numpy's on the same rows to
  1e-12, for the model's own characteristic kernel (rbf), for the
  median-heuristic rbf of a polynomial model (gamma = 1 / (2 median^2) of
  the reference's pairwise distances, numpy's median, to 1e-12), and
  through a model's stored standardization;
- rows asked through v2 infer count, and pinned /versions/{v} predicts and
  predicts with the header Kmserve-Drift: skip do not; --drift-window-rows tests only the last N rows;
- an unshifted sample gets a large p-value, one shifted by 1.5 in a
  feature a small one (<= 0.01 with 200 permutations);
- the answer is cached (cached: true, the same numbers), async=true runs
  it as a job (202, then the job's result), and /metrics has
  kmserve_model_drift_mmd2{model} and kmserve_model_drift_p_value{model}
  equal to the latest answer; --drift-refresh-seconds fills them without
  a request;
- hostile inputs: unknown query parameters and bad permutations, seed or
  async are 400 naming the field; an unknown model 404; too few recent
  rows, a precomputed model, a model file older than format version 8,
  and collection turned off (POST .../drift {"collect": false}) 409
  naming why; --drift false collects nothing;
- the reservoir's bytes are held against the memory budget
  (kmserve_fit_memory_reserved_bytes) and given back by collect false;
- kmctl drift NAME prints the answer.
Usage, from the project root:
    /usr/bin/python3 tests/integration/drift.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

D = 3


def mmd2(X, Y, kern):
    """The unbiased MMD^2 of rows X against rows Y under kern(A, B)."""
    X, Y = np.asarray(X, float), np.asarray(Y, float)
    nx, ny = len(X), len(Y)
    kxx, kyy, kxy = kern(X, X), kern(Y, Y), kern(X, Y)
    return ((kxx.sum() - np.trace(kxx)) / (nx * (nx - 1)) +
            (kyy.sum() - np.trace(kyy)) / (ny * (ny - 1)) - 2 * kxy.mean())


def rbf(gamma):
    def k(A, B):
        d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2)
        return np.exp(-gamma * d2)
    return k


def median_gamma(X):
    X = np.asarray(X, float)
    dist = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    med = np.median(dist[np.triu_indices(len(X), 1)])
    return 1.0 / (2 * med * med)


def rows(rng, n, shift=0.0):
    return [[rng.gauss(0, 1) + (shift if j == 0 else 0) for j in range(D)]
            for _ in range(n)]


def fit(d, name, X, kernel, **extra):
    body = {"algorithm": "krr", "kernel": kernel, "X": X,
            "y": [r[0] - r[1] for r in X]}
    body.update(extra)
    r = d.req("POST", f"/v1/models/{name}/fit", body)
    check(r.status == 201, f"fit {name}", r)
    return (r.json() or {}).get("model", {})


def drift(d, name, query="permutations=200&seed=3"):
    return d.req("GET", f"/v1/models/{name}/drift?{query}")


def near(a, b, tol=1e-12):
    return a is not None and abs(a - b) <= tol * max(1.0, abs(b))


def exact(d, rng):
    X = rows(rng, 60)
    Y = rows(rng, 50)
    fit(d, "ref", X, {"type": "rbf", "gamma": 0.5})
    r = drift(d, "ref")
    check(r.status == 409 and "at least 20" in r.body and "0 recent" in r.body,
          "no predicted rows yet: 409 naming how many are needed", r)
    check(d.req("POST", "/v1/models/ref/predict", {"X": Y}).status == 200,
          "predict 50 rows")
    r = drift(d, "ref")
    a = r.json() or {}
    want = mmd2(X, Y, rbf(0.5))
    check(r.status == 200 and near(a.get("mmd2"), want),
          f"mmd2 equals numpy's on the training rows and the predicted rows "
          f"to 1e-12 ({a.get('mmd2')} vs {want})", r)
    check(a.get("sizes") == {"reference": 60, "recent": 50} and
          a.get("permutations") == 200 and a.get("seed") == 3 and
          a.get("kernel") == {"type": "rbf", "own": True, "gamma": None} and
          a.get("window", {}).get("rows") is None and
          a.get("window", {}).get("seen") == 50 and
          a.get("cached") is False and a.get("computed_at") and
          a.get("seconds", -1) >= 0 and a.get("version") == 1,
          "the answer: sizes, permutations, seed, the model's own kernel, the "
          "window, computed_at, seconds", a)
    check(0.05 < a.get("p_value", 0) <= 1,
          f"same distribution: p {a.get('p_value')} > 0.05", a)
    again = drift(d, "ref").json() or {}
    check(again.get("cached") is True and again.get("mmd2") == a.get("mmd2")
          and again.get("p_value") == a.get("p_value"),
          "asked again within --drift-cache-seconds: the cached answer", again)
    other = drift(d, "ref", "permutations=100&seed=3").json() or {}
    check(other.get("cached") is False and other.get("permutations") == 100
          and other.get("mmd2") == a.get("mmd2"),
          "other permutations: computed again, the same statistic", other)
    # a pinned version's rows are not the served model's
    d.req("POST", "/v1/models/ref/versions/1/predict", {"X": Y[:5]})
    r = drift(d, "ref", "permutations=50")
    check((r.json() or {}).get("sizes", {}).get("recent") == 50,
          "a pinned /versions/1 predict adds no rows", r)
    d.req("POST", "/v1/models/ref/predict", {"X": Y[:5]},
          headers=[("Kmserve-Drift", "skip")])
    r = drift(d, "ref", "permutations=60")
    check((r.json() or {}).get("sizes", {}).get("recent") == 50,
          "a predict with the header Kmserve-Drift: skip adds no rows", r)
    # shifted
    fit(d, "shift", X, {"type": "rbf", "gamma": 0.5})
    S = rows(rng, 50, shift=1.5)
    d.req("POST", "/v1/models/shift/predict", {"X": S})
    s = drift(d, "shift").json() or {}
    check(near(s.get("mmd2"), mmd2(X, S, rbf(0.5))) and
          s.get("p_value", 1) <= 0.01,
          f"shifted by 1.5: mmd2 as numpy's, p {s.get('p_value')} <= 0.01", s)
    return a


def deleted(d, rng):
    """What DELETE removes never answers again: the name's next fit (at
    version 1 again) has neither the deleted model's rows nor its cached
    answer; a refit of a served name keeps its rows."""
    X = rows(rng, 40)
    fit(d, "gone", X, {"type": "rbf", "gamma": 0.5})
    d.req("POST", "/v1/models/gone/predict", {"X": rows(rng, 30, shift=2.0)})
    first = drift(d, "gone")
    check(first.status == 200 and (first.json() or {}).get("version") == 1,
          "gone: a drift answer for version 1 (30 rows)", first)
    check(d.req("DELETE", "/v1/models/gone").status == 204, "gone: deleted")
    fit(d, "gone", X, {"type": "rbf", "gamma": 0.5})
    r = drift(d, "gone")
    check(r.status == 409 and "0 recent" in r.body,
          "gone, fitted again (version 1 again): no cached answer and none of "
          "the deleted model's rows (409, 0 recent)", r)
    Y = rows(rng, 25)
    d.req("POST", "/v1/models/gone/predict", {"X": Y})
    fit(d, "gone", X, {"type": "rbf", "gamma": 0.5})  # version 2: a refit
    a = drift(d, "gone").json() or {}
    check(a.get("version") == 2 and a.get("sizes", {}).get("recent") == 25 and
          near(a.get("mmd2"), mmd2(X, Y, rbf(0.5))),
          "gone: a refit keeps the name's rows (the 25 sent since the fit, "
          "mmd2 as numpy's on them)", a)


def fallback(d, rng):
    X = rows(rng, 40)
    Y = rows(rng, 30)
    fit(d, "poly", X, {"type": "polynomial", "degree": 2})
    d.req("POST", "/v1/models/poly/predict", {"X": Y})
    a = drift(d, "poly").json() or {}
    g = median_gamma(X)
    k = a.get("kernel", {})
    check(k.get("type") == "rbf" and k.get("own") is False and
          near(k.get("gamma"), g),
          f"polynomial: the median-heuristic rbf, gamma as numpy's "
          f"({k.get('gamma')} vs {g})", a)
    check(near(a.get("mmd2"), mmd2(X, Y, rbf(k.get("gamma", g)))),
          "polynomial: mmd2 as numpy's at that gamma", a)
    # preprocessing stored in the model is applied to both samples
    Xs = [[3 * v + 10 for v in r] for r in X]
    Ys = [[3 * v + 10 for v in r] for r in Y]
    meta = fit(d, "scaled", Xs, {"type": "laplacian", "gamma": 0.3},
               preprocess={"scale": "standardize"})
    pre = meta.get("preprocess", {})
    shift, scale = np.array(pre.get("x_shift")), np.array(pre.get("x_scale"))
    d.req("POST", "/v1/models/scaled/project", {"X": Ys})  # 409: krr
    d.req("POST", "/v1/models/scaled/predict", {"X": Ys})
    a = drift(d, "scaled").json() or {}

    def lap(A, B):
        return np.exp(-0.3 * np.abs(A[:, None, :] - B[None, :, :]).sum(axis=2))
    want = mmd2((np.array(Xs) - shift) / scale, (np.array(Ys) - shift) / scale,
                lap)
    check(a.get("kernel", {}).get("type") == "laplacian" and
          a.get("sizes", {}).get("recent") == 30 and near(a.get("mmd2"), want),
          "standardized model: its own laplacian on the standardized rows, "
          "as numpy's", a)


def v2_rows(d, rng):
    X = rows(rng, 30)
    Y = rows(rng, 25)
    fit(d, "v2m", X, {"type": "rbf", "gamma": 0.2})
    flat = [v for r in Y for v in r]
    r = d.req("POST", "/v2/models/v2m/infer", {"inputs": [
        {"name": "X", "shape": [25, D], "datatype": "FP64", "data": flat}]})
    check(r.status == 200, "v2 infer 25 rows", r)
    a = drift(d, "v2m").json() or {}
    check(a.get("sizes", {}).get("recent") == 25 and
          near(a.get("mmd2"), mmd2(X, Y, rbf(0.2))),
          "rows asked through v2 infer are tested, as numpy's", a)


def async_and_metrics(d, last):
    r = drift(d, "ref", "permutations=150&seed=9&async=true")
    job = ((r.json() or {}).get("job") or {})
    check(r.status == 202 and job.get("kind") == "drift" and
          r.headers.get("location") == f"/v1/jobs/{job.get('id')}",
          "async=true: 202 with a drift job", r)
    done = run.wait_job(d, job.get("id"), ("succeeded", "failed"))
    res = (done or {}).get("result") or {}
    check((done or {}).get("status") == "succeeded" and
          res.get("mmd2") == last.get("mmd2") and res.get("seed") == 9,
          "the job's result is the drift answer", done)
    m = d.req("GET", "/metrics").body
    want = {}
    for line in m.splitlines():
        for fam in ("kmserve_model_drift_mmd2", "kmserve_model_drift_p_value"):
            if line.startswith(fam + '{model="ref"}'):
                want[fam] = float(line.split()[-1])
    check(want.get("kmserve_model_drift_mmd2") == res.get("mmd2") and
          want.get("kmserve_model_drift_p_value") == res.get("p_value") and
          "# TYPE kmserve_model_drift_p_value gauge" in m,
          "/metrics: the latest answer's mmd2 and p_value", want)


def kmctl_drift(d, last):
    exe = os.environ.get("KM_KMCTL", os.path.join(run.ROOT, "build", "kmctl"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KMSERVE_")}
    env["KMSERVE_URL"] = f"http://127.0.0.1:{d.port}"
    p = subprocess.run([exe, "drift", "ref"], env=env, capture_output=True,
                       text=True, timeout=300)
    try:
        got = json.loads(p.stdout)
    except ValueError:
        got = {}
    check(p.returncode == 0 and got.get("mmd2") == last.get("mmd2") and
          got.get("permutations") == 200 and got.get("seed") == 0,
          "kmctl drift NAME prints the answer (200 permutations, seed 0)", p)
    p = subprocess.run([exe, "drift", "nope"], env=env, capture_output=True,
                       text=True, timeout=300)
    check(p.returncode != 0 and "nope" in p.stderr,
          "kmctl drift of an unknown model fails naming it", p)


def hostile(d, rng):
    for query, field in (("permutations=0", "permutations"),
                         ("permutations=100001", "permutations"),
                         ("permutations=abc", "permutations"),
                         ("permutations=", "permutations"),
                         ("seed=-1", "seed"), ("seed=1.5", "seed"),
                         ("async=maybe", "async"), ("window=5", "'window'")):
        r = drift(d, "ref", query)
        check(r.status == 400 and field in r.body,
              f"?{query}: 400 naming {field}", r)
    check(drift(d, "nope").status == 404, "unknown model: 404")
    r = d.req("POST", "/v1/models/ref/drift", {"collect": 3})
    check(r.status == 400 and "collect" in r.body, "collect: 3 is 400", r)
    r = d.req("POST", "/v1/models/ref/drift", {"colect": True})
    check(r.status == 400 and "colect" in r.body, "unknown key: 400", r)
    # precomputed: no input sample
    G = [[1.0 if i == j else 0.5 for j in range(4)] for i in range(4)]
    r = d.req("POST", "/v1/models/pre/fit", {
        "algorithm": "krr", "kernel": {"type": "precomputed"}, "X": G,
        "y": [1, 2, 3, 4]})
    d.req("POST", "/v1/models/pre/predict", {"X": G})
    r = drift(d, "pre")
    check(r.status == 409 and "precomputed" in r.body,
          "a precomputed model: 409 naming why", r)
    # a file from before format version 8: no reference
    with open(os.path.join(run.ROOT, "tests", "fixtures", "models",
                           "krr-rbf.kmm"), "rb") as f:
        blob = f.read()
    r = d.req("POST", "/v1/models/old/import", blob,
              headers=[("Content-Type", "application/octet-stream")])
    check(r.status == 201, "import a version 2 model file", r)
    r = drift(d, "old")
    check(r.status == 409 and "refit" in r.body,
          "a model without a drift reference: 409 saying to refit", r)
    # collection off for one model
    X = rows(rng, 30)
    fit(d, "quiet", X, {"type": "rbf"})
    r = d.req("POST", "/v1/models/quiet/drift", {"collect": False})
    check(r.status == 200 and (r.json() or {}).get("collect") is False,
          "POST collect false: 200", r)
    d.req("POST", "/v1/models/quiet/predict", {"X": X})
    r = drift(d, "quiet")
    check(r.status == 409 and "collection is off for this model" in r.body,
          "collection off: 409 naming it", r)
    r = d.req("POST", "/v1/models/quiet/drift", {"collect": True})
    d.req("POST", "/v1/models/quiet/predict", {"X": X})
    a = drift(d, "quiet").json() or {}
    check(r.status == 200 and a.get("sizes", {}).get("recent") == 30,
          "collect true again: the next rows are collected", a)
    r = d.req("POST", "/v1/models/quiet/drift", {"reset": True})
    check(r.status == 200 and (r.json() or {}).get("rows") == 0,
          "reset empties the reservoir", r)


def windowed(server, rng):
    with run.temp_daemon(server, "kmserve-drift-w-", "--drift-window-rows",
                         "30", "--drift-reservoir-rows", "100",
                         "--drift-cache-seconds", "0") as d:
        X = rows(rng, 40)
        Y = rows(rng, 50)
        fit(d, "w", X, {"type": "rbf", "gamma": 0.4})
        d.req("POST", "/v1/models/w/predict", {"X": Y})
        a = drift(d, "w").json() or {}
        check(a.get("sizes", {}).get("recent") == 30 and
              a.get("window", {}).get("rows") == 30 and
              near(a.get("mmd2"), mmd2(X, Y[20:], rbf(0.4))),
              "--drift-window-rows 30: the last 30 rows, as numpy's", a)
        again = drift(d, "w").json() or {}
        check(again.get("cached") is False,
              "--drift-cache-seconds 0: computed every time", again)
        want = 100 * (D + 2) * 8  # rows x (n_features doubles, row number, time)
        held = [line for line in d.req("GET", "/metrics").body.splitlines()
                if line.startswith("kmserve_fit_memory_reserved_bytes ")]
        check(held == [f"kmserve_fit_memory_reserved_bytes {want}"],
              f"the reservoir's {want} bytes are held against the budget", held)
        r = d.req("POST", "/v1/models/w/drift", {"collect": False})
        held = [line for line in d.req("GET", "/metrics").body.splitlines()
                if line.startswith("kmserve_fit_memory_reserved_bytes ")]
        check(held == ["kmserve_fit_memory_reserved_bytes 0"],
              "collect false gives them back", held)
    with run.temp_daemon(server, "kmserve-drift-off-", "--drift",
                         "false") as d:
        X = rows(rng, 30)
        fit(d, "off", X, {"type": "rbf"})
        d.req("POST", "/v1/models/off/predict", {"X": X})
        r = drift(d, "off")
        check(r.status == 409 and "--drift false" in r.body,
              "--drift false: nothing collected, 409 naming the flag", r)
    with run.temp_daemon(server, "kmserve-drift-r-",
                         "--drift-refresh-seconds", "0.2") as d:
        X = rows(rng, 30)
        fit(d, "sched", X, {"type": "rbf"})
        d.req("POST", "/v1/models/sched/predict", {"X": rows(rng, 25)})
        deadline, seen = time.time() + 60, ""
        while time.time() < deadline:
            seen = d.req("GET", "/metrics").body
            if 'kmserve_model_drift_p_value{model="sched"}' in seen:
                break
            time.sleep(0.1)
        check('kmserve_model_drift_mmd2{model="sched"}' in seen,
              "--drift-refresh-seconds: the metrics appear without a request")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build",
                                                     "kmserve"))
    args = ap.parse_args()
    rng = random.Random(29)

    def body(d):
        last = exact(d, rng)
        deleted(d, rng)
        fallback(d, rng)
        v2_rows(d, rng)
        async_and_metrics(d, last)
        kmctl_drift(d, last)
        hostile(d, rng)
        windowed(args.server, rng)

    return run.with_daemon(args.server, "kmserve-drift-", body)


if __name__ == "__main__":
    sys.exit(main())
