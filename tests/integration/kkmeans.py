#!/usr/bin/python3
"""Kernel k-means (algorithm "kkmeans") over HTTP.

On four separated blobs (tests/fixtures/gen_kkmeans_refs.py:
kkm_http_X.txt, their labels kkm_http_y.txt), a linear fit with
n_clusters 4 finds the blobs: its training inertia equals the blobs' own
(kkm_http_ref.txt, numpy) to 1e-10 relative, cluster_sizes are 30 each,
metadata shows the params given and the defaults, and predict answers
integer cluster ids 0..3 that group the rows as the blobs do. score
answers the inertia of the rows (without y), and with y (numbers, or the
same labels as strings) the adjusted Rand index of y against the cluster
ids, equal to sklearn's adjusted_rand_score (kkm_http_ref.txt) to 1e-12.
An rbf fit from a seed gives the same model twice. The model file is the
algorithm number 5, and a restart answers the same. Bad input: more
clusters than rows is 422, ranges 400 naming the field, y at fit 400,
output at predict 400, y of the wrong length or mixed kinds at score 400;
a search has no scoring for kkmeans (400).
Usage, from the project root:
    /usr/bin/python3 tests/integration/kkmeans.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402


def fit(d, name, params, X, kernel=None, **extra):
    body = {"algorithm": "kkmeans", "kernel": kernel or {"type": "linear"},
            "params": params, "X": X}
    body.update(extra)
    return d.req("POST", f"/v1/models/{name}/fit", body)


def same_partition(a, b):
    pairs = {}
    for x, y in zip(a, b):
        if pairs.setdefault(x, y) != y:
            return False
    return len(set(pairs.values())) == len(pairs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    X = run.fixture_rows("kkm_http_X.txt", 2)
    truth = [int(t) for t in run.read_fixture("kkm_http_y.txt")]
    noisy = [int(t) for t in run.read_fixture("kkm_http_noisy.txt")]
    inertia_ref, ari_ref = run.read_fixture("kkm_http_ref.txt")

    def body(d):
        r = fit(d, "blobs", {"n_clusters": 4, "seed": 3}, X)
        meta = (r.json() or {}).get("model", {})
        tr = meta.get("training", {})
        run.check(r.status == 201 and meta.get("algorithm") == "kkmeans" and
                  meta.get("params") == {"n_clusters": 4, "n_init": 10,
                                         "max_iter": 300, "tol": 0.0001,
                                         "seed": 3},
                  "fit 201; metadata shows the params given and the defaults",
                  meta)
        inertia = tr.get("inertia", -1)
        run.check(abs(inertia - inertia_ref) <= 1e-10 * inertia_ref,
                  "training inertia equals the blobs' own to 1e-10",
                  (inertia, inertia_ref))
        run.check(tr.get("cluster_sizes") == [30, 30, 30, 30] and
                  tr.get("n_iter", 0) >= 1 and "best_init" in tr and
                  "training_score" not in tr,
                  "cluster_sizes 30 each; n_iter, best_init; no training "
                  "score", tr)
        r = d.req("POST", "/v1/models/blobs/predict", {"X": X})
        pred = (r.json() or {}).get("predictions", [])
        run.check(r.status == 200 and len(pred) == len(X) and
                  all(isinstance(p, int) and 0 <= p < 4 for p in pred) and
                  same_partition(pred, truth),
                  "predict answers integer ids 0..3 that group rows as the "
                  "blobs", pred[:8])

        r = d.req("POST", "/v1/models/blobs/score", {"X": X})
        s = (r.json() or {}).get("scoring", {})
        run.check(r.status == 200 and set(s) == {"inertia"} and
                  abs(s["inertia"] - inertia_ref) <= 1e-10 * inertia_ref,
                  "score without y: the inertia only, the training one", s)
        for y, what in ((noisy, "numbers"), ([f"c{t}" for t in noisy],
                                             "strings")):
            r = d.req("POST", "/v1/models/blobs/score", {"X": X, "y": y})
            s = (r.json() or {}).get("scoring", {})
            ari = s.get("adjusted_rand_index", 9)
            run.check(r.status == 200 and abs(ari - ari_ref) <= 1e-12,
                      f"score with y ({what}): adjusted_rand_index equals "
                      f"sklearn's to 1e-12 ({ari} vs {ari_ref})", s)
        r = d.req("POST", "/v1/models/blobs/score", {"X": X, "y": truth})
        run.check((r.json() or {}).get("scoring", {}).get(
                  "adjusted_rand_index") == 1.0,
                  "score with the blobs' labels: adjusted_rand_index 1", r)

        rbf = {"type": "rbf", "gamma": 0.1}
        answers = {}
        for name in ("rbf-a", "rbf-b"):
            r = fit(d, name, {"n_clusters": 3, "n_init": 2, "seed": 9}, X, rbf)
            run.check(r.status == 201, f"{name}: rbf fit 201", r)
            r = d.req("POST", f"/v1/models/{name}/score", {"X": X[:40]})
            answers[name] = (r.json() or {}).get("scoring")
        run.check(answers["rbf-a"] == answers["rbf-b"] and answers["rbf-a"],
                  "the same seed, the same model", answers)

        with open(os.path.join(d.models, "blobs.kmm"), "rb") as f:
            head = f.read(12)
        run.check(struct.unpack("<I", head[8:12])[0] == 5,
                  "the model file holds algorithm number 5", head)
        d.stop()
        d.start()
        r = d.req("POST", "/v1/models/blobs/predict", {"X": X})
        run.check((r.json() or {}).get("predictions") == pred,
                  "the same cluster ids after a restart (loaded from its "
                  "file)", r)

        for params, status, text, what in (
                ({"n_clusters": 121}, 422, "params.n_clusters (121) is above "
                 "n_samples (120)", "more clusters than rows"),
                ({"n_clusters": 0}, 400, "params.n_clusters", "n_clusters 0"),
                ({}, 400, "params.n_clusters is required", "no n_clusters"),
                ({"n_clusters": 2, "tol": -1}, 400, "params.tol", "tol -1"),
                ({"n_clusters": 2, "n_init": 0}, 400, "params.n_init",
                 "n_init 0"),
                ({"n_clusters": 2, "max_iter": 100001}, 400,
                 "params.max_iter", "max_iter 100001"),
                ({"n_clusters": 2, "seed": -1}, 400, "params.seed", "seed -1"),
                ({"n_clusters": 2, "alpha": 1}, 400, "alpha",
                 "an unknown param")):
            r = fit(d, "bad", params, X)
            run.check(r.status == status and text in r.body,
                      f"{what}: {status} naming the field", r)
        r = fit(d, "bad", {"n_clusters": 2}, X, y=truth)
        run.check(r.status == 400 and "y does not apply to kkmeans" in r.body,
                  "y at fit: 400", r)
        r = fit(d, "bad", {"n_clusters": 2}, X,
                search={"params": {"n_clusters": [2, 3]}})
        run.check(r.status == 400 and "no scoring applies to kkmeans" in r.body,
                  "a search of kkmeans: 400, no scoring applies", r)
        run.check(d.req("GET", "/v1/models/bad").status == 404,
                  "nothing created by the refused fits")
        r = d.req("POST", "/v1/models/blobs/predict",
                  {"X": X[:2], "output": "label"})
        run.check(r.status == 400 and "output applies only to" in r.body,
                  "output at predict: 400", r)
        r = d.req("POST", "/v1/models/blobs/project", {"X": X[:2]})
        run.check(r.status == 409, "project: 409", r)
        for y, text in ((truth[:5], "y has 5 entries; X has 120 rows"),
                        ([0] * 119 + ["a"], "y[119] must be a number"),
                        ({"a": 1}, "y must be an array")):
            r = d.req("POST", "/v1/models/blobs/score", {"X": X, "y": y})
            run.check(r.status == 400 and text in r.body,
                      f"score with a bad y: 400 ({text})", r)

    return run.with_daemon(args.server, "kmserve-kkmeans-", body)


if __name__ == "__main__":
    sys.exit(main())
