#!/usr/bin/python3
"""Kept versions, rollback and the Open Inference Protocol (v2) over HTTP.

Versions (a daemon with --keep-versions 3): four fits of one name leave
NAME.kmm and the two versions below it on disk; GET .../versions lists
them newest first with their params; a pinned predict, project and score
answer what that version answered when it was current, to the bit; an
unknown version is 404 naming it and the versions there are, a bad one
400; a rollback makes a kept version's content the next version (the
predictions are the old version's to the bit), is counted in
kmserve_rollbacks_total and not as a fit, is logged, and reaches a
replica sharing the directory; a restart lists and answers the same; a
kept file of the current version left by a crash between the link and the
rename changes nothing; delete removes every version's file. With the
default (1) no kept file is ever written and a rollback is 404 naming
--keep-versions; --keep-versions 0 is refused at start.

The Open Inference Protocol: the protocol's documented examples (server
metadata, health, model metadata, an inference request with an id and
outputs) adapted to our models; for krr (one and two outputs), svr, svc
(string, integer and fractional labels, with probabilities), kpca, gpr and
kkmeans, every output the metadata lists, with the datatype and shape it
says, equals /v1 predict or project's answer to the bit (the same core
call and the same number text); FP32 data is rounded to float32 first
(numpy), integer data equals the same numbers as FP64, nested data equals
flat; a pinned version's infer answers that version; hostile tensors
(wrong shape, datatype mismatch, NaN, overflowing shapes, ragged data)
are 400 with a message naming the member; errors are {"error": message};
tokens guard /v2 as /v1 (health open).

Inputs beyond vectors: a string model's metadata says X is BYTES of shape
[-1]; its infer of BYTES (shape [n], or [n, 1] flat or nested) equals /v1
predict to the bit and numpy's solve on tests/strings_ref.py's Gram to
1e-9 (svc: every output equal to /v1's); its max_length counts bytes. A
precomputed model's X is FP64 of shape [-1, n_training]: its answers equal
/v1's to the bit, the rbf model's whose Gram it was fitted on to 1e-12,
numpy's solve to 1e-9 and scikit-learn's SVC(kernel="precomputed")
labels. A datatype of the wrong kind (BYTES to a numeric or precomputed
model, numbers to a string model), a wrong shape, a ragged or mistyped
datum or a string over max_length is 400 saying what the model takes. A
predict or infer of strings is admitted for the full-width rows they
become (2000 empty strings to a model of max_length 65536: 413 under a
64 MiB budget, with an estimate at least those rows' bytes).
Usage, from the project root:
    /usr/bin/python3 tests/integration/oip.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import run  # noqa: E402
from run import check  # noqa: E402

X4 = [[0.0, 0.0], [1.0, 1.0], [2.0, 0.5], [0.5, 2.0], [3.0, 1.0],
      [1.5, 2.5]]


def krr(alpha, X=X4, y=None):
    return {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.5},
            "params": {"alpha": alpha}, "X": X,
            "y": y or [sum(r) for r in X]}


def bits(values):
    """The values as the exact text of their doubles (nested lists kept)."""
    if isinstance(values, list):
        return [bits(v) for v in values]
    return values.hex() if isinstance(values, float) else values


def predict(d, path, body):
    r = d.req("POST", path, body)
    return r.status, (r.json() or {})


def metric(d, name):
    for line in d.req("GET", "/metrics").body.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    return None


def message(r):
    """The message of a /v1 error answer."""
    return ((r.json() or {}).get("error") or {}).get("message", "")


def kept_files(models, name):
    return sorted(f for f in os.listdir(models) if f.startswith(name + ".kmm"))


# ---------------------------------------------------------------- versions

def versions(d):
    models = d.models
    Q = {"X": [[0.3, 0.7], [2.5, 1.5]]}
    answers = {}
    for v, alpha in enumerate((1.0, 0.5, 0.25, 0.125), 1):
        r = d.req("POST", "/v1/models/m/fit", krr(alpha))
        check(r.status == 201 and r.json()["model"]["version"] == v,
              f"versions: fit {v} is version {v}", r)
        answers[v] = predict(d, "/v1/models/m/predict", Q)[1]["predictions"]
    check(kept_files(models, "m") == ["m.kmm", "m.kmm.v2", "m.kmm.v3"],
          "versions: keep 3 leaves m.kmm, m.kmm.v3, m.kmm.v2 on disk",
          kept_files(models, "m"))
    r = d.req("GET", "/v1/models/m/versions")
    j = r.json() or {}
    vs = j.get("versions", [])
    check(r.status == 200 and j.get("current") == 4 and
          j.get("keep_versions") == 3 and
          [x.get("version") for x in vs] == [4, 3, 2] and
          [x.get("current") for x in vs] == [True, False, False] and
          [x["params"]["alpha"] for x in vs] == [0.125, 0.25, 0.5] and
          all("created_at" in x and x.get("algorithm") == "krr" and
              x.get("size_bytes", 0) > 0 for x in vs),
          "versions: the list, newest first, with params, times and sizes", r)
    for v in (4, 3, 2):
        s, a = predict(d, f"/v1/models/m/versions/{v}/predict", Q)
        check(s == 200 and a["model"]["version"] == v and
              bits(a["predictions"]) == bits(answers[v]),
              f"versions: pinned predict of version {v} answers what it did "
              "when current, to the bit", a)
        r = d.req("GET", f"/v1/models/m/versions/{v}")
        check(r.status == 200 and r.json()["version"] == v,
              f"versions: GET version {v}'s metadata", r)
    y = [1.0, 4.0]
    s, a = predict(d, "/v1/models/m/versions/3/score", dict(Q, y=y))
    ref = np.array(answers[3]) - np.array(y)
    check(s == 200 and abs(a["scoring"]["mse"] - float(np.mean(ref ** 2)))
          <= 1e-12 * max(1.0, float(np.mean(ref ** 2))),
          "versions: pinned score of version 3 (mse against numpy, 1e-12)", a)
    for path, status, text in (
            ("/v1/models/m/versions/1/predict", 404,
             "model \"m\" has no version 1; versions: 4 (current), 3, 2"),
            ("/v1/models/m/versions/9/predict", 404, "has no version 9"),
            ("/v1/models/m/versions/0/predict", 400, "version \"0\" must be"),
            ("/v1/models/m/versions/x1/predict", 400, "must be a whole number"),
            ("/v1/models/m/versions/99999999999999999999/predict", 400,
             "must be a whole number"),
            ("/v1/models/nope/versions/1/predict", 404, "does not exist")):
        r = d.req("POST", path, Q)
        check(r.status == status and text in message(r),
              f"versions: {path} is {status} ({text})", r)

    # kpca: a pinned project
    kp = {"algorithm": "kpca", "kernel": {"type": "rbf", "gamma": 0.3},
          "params": {"n_components": 2}, "X": X4}
    d.req("POST", "/v1/models/pc/fit", kp)
    p1 = predict(d, "/v1/models/pc/project", Q)[1]["projections"]
    d.req("POST", "/v1/models/pc/fit", dict(kp, params={"n_components": 1}))
    s, a = predict(d, "/v1/models/pc/versions/1/project", Q)
    check(s == 200 and bits(a["projections"]) == bits(p1),
          "versions: pinned project of kpca version 1, to the bit", a)

    # rollback
    fits = metric(d, 'kmserve_fit_duration_seconds_count{algorithm="krr"}')
    r = d.req("POST", "/v1/models/m/rollback", {"version": 2})
    j = r.json() or {}
    check(r.status == 200 and j.get("restored_version") == 2 and
          j["model"]["version"] == 5 and j["model"]["params"]["alpha"] == 0.5,
          "rollback: version 2's content becomes version 5", r)
    s, a = predict(d, "/v1/models/m/predict", Q)
    check(a["model"]["version"] == 5 and
          bits(a["predictions"]) == bits(answers[2]),
          "rollback: predictions are version 2's to the bit", a)
    check(metric(d, "kmserve_rollbacks_total") == 1 and
          metric(d, 'kmserve_fit_duration_seconds_count{algorithm="krr"}')
          == fits, "rollback: counted as a rollback, not as a fit")
    with open(d.log_path, "rb") as f:
        log = f.read().decode()
    check('"event":"model_rolled_back"' in log and
          "m version 5 restores version 2" in log, "rollback: logged")
    check(kept_files(models, "m") == ["m.kmm", "m.kmm.v3", "m.kmm.v4"],
          "rollback: version 4 kept in turn, version 2's file pruned",
          kept_files(models, "m"))
    for body, status, text in (
            ({"version": 5}, 409, "already at version 5"),
            ({"version": 2}, 404, "has no version 2"),
            ({}, 400, "version is required"),
            ({"version": 1.5}, 400, "version must be a whole number"),
            ({"version": 3, "force": True}, 400, "force")):
        r = d.req("POST", "/v1/models/m/rollback", body)
        check(r.status == status and text in message(r),
              f"rollback {body}: {status} ({text})", r)
    r = d.req("POST", "/v1/models/nope/rollback", {"version": 1})
    check(r.status == 404, "rollback of an unknown model: 404", r)

    # a replica on the same directory sees the rollback and the kept files
    with run.temp_daemon(d.binary, "kmserve-oip-replica-", "--keep-versions",
                         "3") as b:
        b.stop()
        b.models = models
        b.extra += ["--watch-interval", "0.2"]
        b.start()
        d.req("POST", "/v1/models/m/rollback", {"version": 3})
        deadline = time.time() + 10
        while time.time() < deadline and \
                b.req("GET", "/v1/models/m").json().get("version") != 6:
            time.sleep(0.1)
        s, a = predict(b, "/v1/models/m/predict", Q)
        check(a["model"]["version"] == 6 and
              bits(a["predictions"]) == bits(answers[3]),
              "replica: serves the rollback (version 6 = version 3's content)",
              a)
        s, a = predict(b, "/v1/models/m/versions/5/predict", Q)
        check(s == 200 and bits(a["predictions"]) == bits(answers[2]),
              "replica: a pinned predict reads the kept file", a)

    # a crash between the link and the rename leaves a kept file of the
    # current version: nothing changes, the next save replaces it
    os.link(os.path.join(models, "m.kmm"), os.path.join(models, "m.kmm.v6"))
    d.stop()
    d.start()
    r = d.req("GET", "/v1/models/m/versions")
    check([x["version"] for x in r.json()["versions"]] == [6, 5, 4],
          "restart: the same versions (a kept file of the current version "
          "is not listed)", r)
    s, a = predict(d, "/v1/models/m/versions/4/predict", Q)
    check(bits(a["predictions"]) == bits(answers[4]),
          "restart: a pinned predict answers the same", a)
    d.req("POST", "/v1/models/m/fit", krr(2.0))
    s, a = predict(d, "/v1/models/m/versions/6/predict", Q)
    check(s == 200 and bits(a["predictions"]) == bits(answers[3]),
          "the next fit keeps version 6 over the leftover", a)
    check(d.req("DELETE", "/v1/models/m").status == 204 and
          kept_files(models, "m") == [],
          "delete removes every version's file", kept_files(models, "m"))


def default_keep(server):
    with run.temp_daemon(server, "kmserve-oip-keep1-") as d:
        for a in (1.0, 2.0):
            d.req("POST", "/v1/models/k/fit", krr(a))
        check(kept_files(d.models, "k") == ["k.kmm"],
              "keep 1 (default): no kept file is written",
              kept_files(d.models, "k"))
        r = d.req("POST", "/v1/models/k/rollback", {"version": 1})
        check(r.status == 404 and "--keep-versions" in r.body,
              "keep 1: a rollback is 404 naming --keep-versions", r)
        r = d.req("GET", "/v1/models/k/versions")
        check([x["version"] for x in r.json()["versions"]] == [2],
              "keep 1: the list holds the current version only", r)
    p = subprocess.run([server, "--keep-versions", "0"], capture_output=True,
                       text=True, timeout=20)
    check(p.returncode == 2 and "from 1 to" in p.stderr,
          "--keep-versions 0 is refused at start", p.stderr)


# ---------------------------------------------------------------- the v2 protocol

def tensor(data, shape, datatype="FP64", name="X"):
    return {"name": name, "shape": shape, "datatype": datatype, "data": data}


def infer(d, name, X, outputs=None, version=None, datatype="FP64", **extra):
    """X: rows of numbers, or strings (a BYTES tensor of shape [n])."""
    if isinstance(X[0], str):
        body = {"inputs": [tensor(X, [len(X)], "BYTES")]}
    else:
        body = {"inputs": [tensor([v for r in X for v in r],
                                  [len(X), len(X[0])], datatype)]}
    if outputs is not None:
        body["outputs"] = [{"name": o} for o in outputs]
    body.update(extra)
    path = f"/v2/models/{name}" + (f"/versions/{version}" if version else "")
    r = d.req("POST", path + "/infer", body)
    return r, (r.json() or {})


# /v1 answer of each v2 output: (route, body member, its value)
V1_OF = {"predictions": ("predict", None), "mean": ("predict", "mean"),
         "labels": ("predict", "label"),
         "decision_values": ("predict", "decision_function"),
         "probabilities": ("predict", "probability"),
         "std": ("predict", "std"), "variance": ("predict", "var"),
         "covariance": ("predict", "cov"), "clusters": ("predict", None),
         "projections": ("project", None)}


def flat(v):
    return [x for r in v for x in r] if v and isinstance(v[0], list) else v


def same_as_v1(d, name, X, meta):
    """Every output the metadata lists equals /v1's answer to the bit."""
    outs = {o["name"]: o for o in meta["outputs"]}
    r, j = infer(d, name, X, list(outs))
    got = {o["name"]: o for o in j.get("outputs", [])}
    check(r.status == 200 and list(got) == list(outs),
          f"{name}: infer answers every output asked for, in order", r)
    for o, m in outs.items():
        route, choice = V1_OF[o]
        body = {"X": X}
        if choice:
            body["output"] = choice
        s, a = predict(d, f"/v1/models/{name}/{route}", body)
        v1 = a.get("predictions", a.get("projections"))
        g = got.get(o, {})
        shape = [len(X)] + ([len(v1[0])] if v1 and isinstance(v1[0], list)
                            else [])
        want_shape = [len(X) if x == -1 else x for x in m["shape"]]
        if o == "covariance":
            want_shape = [len(X), len(X)]
        check(s == 200 and g.get("datatype") == m["datatype"] and
              g.get("shape") == shape == want_shape and
              bits(g.get("data")) == bits(flat(v1)),
              f"{name}: {o} ({m['datatype']} {m['shape']}) equals /v1 "
              f"{route}{' ' + choice if choice else ''} to the bit",
              (g, v1))


def protocol_examples(d):
    """The protocol's documented examples, adapted to our models."""
    r = d.req("GET", "/v2/health/live")
    check(r.status == 200 and r.body == "", "health live: 200, empty body", r)
    r = d.req("GET", "/v2/health/ready")
    check(r.status == 200 and r.body == "", "health ready: 200, empty body", r)
    r = d.req("GET", "/v2")
    j = r.json() or {}
    check(r.status == 200 and j.get("name") == "kmserve" and
          isinstance(j.get("version"), str) and j.get("extensions") == ["binary_tensor_data"],
          "server metadata: name, version, extensions", r)
    # the example model of the protocol's text: two inputs rows, one output
    d.req("POST", "/v1/models/mymodel/fit", krr(1.0))
    r = d.req("GET", "/v2/models/mymodel/ready")
    check(r.status == 200 and r.body == "", "model ready: 200", r)
    r = d.req("GET", "/v2/models/mymodel")
    check(r.status == 200 and r.json() == {
        "name": "mymodel", "versions": ["1"], "platform": "kmserve_krr",
        "inputs": [{"name": "X", "datatype": "FP64", "shape": [-1, 2]}],
        "outputs": [{"name": "predictions", "datatype": "FP64",
                     "shape": [-1]}]}, "model metadata of the example", r)
    body = {"id": "42", "inputs": [{"name": "X", "shape": [2, 2],
                                    "datatype": "FP64",
                                    "data": [1, 2, 3, 4]}],
            "outputs": [{"name": "predictions"}]}
    r = d.req("POST", "/v2/models/mymodel/infer", body)
    j = r.json() or {}
    s, a = predict(d, "/v1/models/mymodel/predict", {"X": [[1, 2], [3, 4]]})
    check(r.status == 200 and j.get("id") == "42" and
          j.get("model_name") == "mymodel" and j.get("model_version") == "1" and
          j.get("outputs") == [{"name": "predictions", "datatype": "FP64",
                                "shape": [2], "data": a["predictions"]}],
          "the inference example: id echoed, the output named, equal to /v1",
          r)
    r = d.req("POST", "/v2/models/mymodel/versions/1/infer",
              dict(body, parameters={"custom": 1}))
    check(r.status == 200, "parameters are tolerated; a pinned version", r)


def all_algorithms(d):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 3)).round(3).tolist()
    Q = rng.normal(size=(5, 3)).tolist()
    yv = [r[0] - 2 * r[1] + 0.5 * r[2] for r in X]
    lab = ["a" if r[0] > 0.3 else "b" if r[1] > 0 else "c" for r in X]
    fits = {
        "krr1": {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.3},
                 "params": {"alpha": 0.1}, "y": yv},
        "krr2": {"algorithm": "krr", "kernel": {"type": "linear"},
                 "params": {"alpha": 0.1}, "y": [[v, -v] for v in yv]},
        "svr": {"algorithm": "svr", "kernel": {"type": "rbf", "gamma": 0.3},
                "params": {"C": 2.0}, "y": yv},
        "svcs": {"algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.5},
                 "params": {"probability": True}, "y": lab},
        "svci": {"algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.5},
                 "params": {}, "y": [{"a": 1, "b": 7, "c": 7}[v] for v in lab]},
        "svcf": {"algorithm": "svc", "kernel": {"type": "linear"},
                 "params": {}, "y": [{"a": 0.5, "b": 2, "c": 3}[v]
                                      for v in lab]},
        "kpca": {"algorithm": "kpca", "kernel": {"type": "rbf", "gamma": 0.3},
                 "params": {"n_components": 2}},
        "gpr": {"algorithm": "gpr", "kernel": {"type": "rbf", "gamma": 0.3},
                "params": {"noise": 0.1, "optimizer": "none"}, "y": yv},
        "kkm": {"algorithm": "kkmeans", "kernel": {"type": "linear"},
                "params": {"n_clusters": 3, "seed": 1}},
    }
    types = {"svcs": "BYTES", "svci": "INT64", "svcf": "FP64"}
    for name, body in fits.items():
        r = d.req("POST", f"/v1/models/{name}/fit", dict(body, X=X))
        check(r.status == 201, f"{name}: fit", r)
        meta = d.req("GET", f"/v2/models/{name}").json()
        names = [o["name"] for o in meta["outputs"]]
        if name in types:
            check(meta["outputs"][0] == {"name": "labels",
                                         "datatype": types[name],
                                         "shape": [-1]},
                  f"{name}: labels are {types[name]}", meta)
        same_as_v1(d, name, Q, meta)
        r, j = infer(d, name, Q)
        check(r.status == 200 and [o["name"] for o in j["outputs"]] ==
              names[:1], f"{name}: the default output is {names[0]}", r)
    r, j = infer(d, "svci", Q, ["probabilities"])
    check(r.status == 409 and "probabilities" in j.get("error", ""),
          "probabilities of a model fitted without: 409", r)

    # FP32 rounds to float32; integers equal FP64; nested equals flat
    r, j = infer(d, "krr1", Q, datatype="FP32")
    q32 = np.asarray(Q, dtype=np.float32).astype(np.float64).tolist()
    s, a = predict(d, "/v1/models/krr1/predict", {"X": q32})
    check(bits(j["outputs"][0]["data"]) == bits(a["predictions"]),
          "FP32 data: rounded to float32 (numpy), then as /v1", (j, a))
    Qi = [[3, -2, 1], [0, 5, -7]]
    for dt in ("INT8", "INT16", "INT32", "INT64"):
        r, j = infer(d, "krr1", Qi, datatype=dt)
        s, a = predict(d, "/v1/models/krr1/predict", {"X": Qi})
        check(r.status == 200 and
              bits(j["outputs"][0]["data"]) == bits(a["predictions"]),
              f"{dt} data equals the same numbers as FP64", r)
    r = d.req("POST", "/v2/models/krr1/infer", {"inputs": [
        tensor(Q, [len(Q), 3])]})
    r2, j2 = infer(d, "krr1", Q)
    check(r.status == 200 and r.json()["outputs"] == j2["outputs"],
          "nested data equals flat", r)


def hostile(d):
    good = tensor([1, 2, 3, 4], [2, 2])
    cases = [
        ({"inputs": [dict(good, shape=[2, 3])]}, "the model expects [-1, 2]"),
        ({"inputs": [dict(good, shape=[3, 2])]},
         "inputs[0].data has 4 values; shape [3, 2] needs 6"),
        ({"inputs": [dict(good, shape=[4])]}, "inputs[0].shape must be an "
         "array of two"),
        ({"inputs": [dict(good, shape=[2, 2, 1])]}, "inputs[0].shape"),
        ({"inputs": [dict(good, shape=[-1, 2])]}, "inputs[0].shape[0] must be"),
        ({"inputs": [dict(good, shape=[0, 2], data=[])]},
         "give at least one row"),
        ({"inputs": [dict(good, shape=[1.5, 2])]}, "inputs[0].shape[0]"),
        ({"inputs": [dict(good, shape=[1e300, 2])]}, "inputs[0].shape[0]"),
        ({"inputs": [dict(good, shape=[2 ** 53, 2])]},
         "shape [9007199254740992, 2] needs 18014398509481984"),
        ({"inputs": [dict(good, shape=["2", 2])]}, "inputs[0].shape[0]"),
        ({"inputs": [dict(good, datatype="BYTES", data=["1", "2", "3", "4"])]},
         "inputs[0].datatype is BYTES, but model \"mymodel\" takes rows of "
         "2 numbers"),
        ({"inputs": [dict(good, datatype="FP16")]},
         "datatype FP16 is not supported"),
        ({"inputs": [dict(good, datatype="fp64")]}, "datatype fp64"),
        ({"inputs": [dict(good, datatype=64)]}, "inputs[0].datatype must be"),
        ({"inputs": [dict(good, datatype="INT8", data=[1, 2, 300, 4])]},
         "inputs[0].data[2] is 300, which INT8 cannot hold"),
        ({"inputs": [dict(good, datatype="INT32", data=[1, 2.5, 3, 4])]},
         "inputs[0].data[1] is 2.5, which INT32 cannot hold"),
        ({"inputs": [dict(good, datatype="UINT8", data=[1, -2, 3, 4])]},
         "inputs[0].data[1] is -2, which UINT8 cannot hold"),
        ({"inputs": [dict(good, datatype="FP32", data=[1, 2, 1e39, 4])]},
         "which FP32 cannot hold"),
        ({"inputs": [dict(good, data=[1, "NaN", 3, 4])]},
         "inputs[0].data[1] must be a number, not a string"),
        ({"inputs": [dict(good, data=[1, None, 3, 4])]},
         "inputs[0].data[1] must be a number, not null"),
        ({"inputs": [dict(good, data=[[1, 2], [3]])]},
         "inputs[0].data[1] must be an array of 2 numbers"),
        ({"inputs": [dict(good, data=[[1, 2], 3])]}, "inputs[0].data"),
        ({"inputs": [dict(good, data=[[[1, 2]], [[3, 4]]])]},
         "inputs[0].data[0] must be an array of 2 numbers"),
        ({"inputs": [dict(good, name="input-0")]},
         "inputs[0].name must be \"X\""),
        ({"inputs": [good, good]}, "inputs must be an array of one tensor"),
        ({"inputs": []}, "inputs must be an array of one tensor"),
        ({}, "inputs must be an array of one tensor"),
        ({"inputs": [dict(good, extra=1)]}, "extra"),
        ({"inputs": [good], "outputs": [{"name": "labels"}]},
         "outputs[0].name must be one of predictions"),
        ({"inputs": [good], "outputs": [{"name": "predictions"},
                                        {"name": "predictions"}]},
         "asked for twice"),
        ({"inputs": [good], "outputs": "predictions"}, "outputs must be"),
        ({"inputs": [good], "id": 42}, "id must be a string"),
        ({"inputs": [good], "parameters": 3}, "parameters must be an object"),
        ({"inputs": [good], "model": "x"}, "model"),
    ]
    for body, text in cases:
        r = d.req("POST", "/v2/models/mymodel/infer", body)
        j = r.json() or {}
        check(r.status == 400 and isinstance(j.get("error"), str) and
              text in j["error"] and set(j) == {"error"},
              f"hostile: 400 {text}", (json.dumps(body)[:200], r))
    r = d.req("POST", "/v2/models/mymodel/infer",
              b'{"inputs":[{"name":"X","shape":[1,2],"datatype":"FP64",'
              b'"data":[1,1e400]}]}', headers=[("Content-Type",
                                                 "application/json")])
    check(r.status == 400 and "inputs[0].data[1] is not a finite number"
          in r.body, "hostile: 1e400 (infinite) is 400", r)
    for method, path, body, status in (
            ("GET", "/v2/models/none", None, 404),
            ("GET", "/v2/models/none/ready", None, 404),
            ("GET", "/v2/models/mymodel/versions/7/ready", None, 404),
            ("GET", "/v2/models/mymodel/versions/x", None, 400),
            ("POST", "/v2/models/none/infer", {"inputs": []}, 404),
            ("PUT", "/v2/models/mymodel/infer", None, 405),
            ("GET", "/v2/nothing", None, 404),
            ("POST", "/v2/models/mymodel/infer", "{", 400)):
        r = d.req(method, path, body) if not isinstance(body, str) else \
            d.req(method, path, body, headers=[("Content-Type",
                                                "application/json")])
        j = r.json() or {}
        check(r.status == status and set(j) == {"error"} and
              isinstance(j["error"], str),
              f"errors: {method} {path} is {status} with {{\"error\": str}}", r)
    r = d.req("POST", "/v2/models/mymodel/infer", b"{}",
              headers=[("Content-Type", "text/plain")])
    check(r.status == 415 and isinstance((r.json() or {}).get("error"), str),
          "errors: 415 in the protocol's form", r)


# ---------------------------------------------------------------- strings, precomputed

STR_KERNEL = {"type": "spectrum", "length": 2}
STR_X = ["acgtacgt", "ggcatta", "acgt", "ttttgca", "acacac", "gtgtgt",
         "\u00e9t\u00e9 acgt", "cagtca"]
STR_Q = ["acg", "tgca", "\u00e9t\u00e9", "", "ggggcc"]


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-3)))


def bytes_tensor(data, shape):
    return {"inputs": [tensor(data, shape, "BYTES")]}


def string_models(d):
    """BYTES tensors for string models: metadata, every output equal to
    /v1's, predictions equal to numpy's solve on strings_ref's Gram."""
    import strings_ref as sref
    y = [float(len(s) % 3) for s in STR_X]
    lab = ["gc" if s.count("g") + s.count("c") > 2 else "at" for s in STR_X]
    fits = {
        "s-krr": {"algorithm": "krr", "params": {"alpha": 0.5}, "y": y,
                  "max_length": 16},
        "s-svc": {"algorithm": "svc", "params": {"probability": True},
                  "y": lab},
    }
    for name, body in fits.items():
        r = d.req("POST", f"/v1/models/{name}/fit",
                  dict(body, kernel=STR_KERNEL, X=STR_X))
        check(r.status == 201, f"{name}: fit on strings", r)
    meta = d.req("GET", "/v2/models/s-krr").json() or {}
    check(meta.get("inputs") == [{"name": "X", "datatype": "BYTES",
                                  "shape": [-1]}],
          "s-krr: the metadata's X is BYTES, shape [-1]", meta)
    # numpy's solve on the reference Gram (strings_ref: substring counts)
    K = np.array(sref.gram(STR_KERNEL, STR_X))
    Kq = np.array(sref.gram(STR_KERNEL, STR_Q, STR_X))
    want = Kq @ np.linalg.solve(K + 0.5 * np.eye(len(STR_X)), y)
    v1 = predict(d, "/v1/models/s-krr/predict", {"X": STR_Q})[1]
    for shape, data, what in (
            ([len(STR_Q)], STR_Q, "shape [n]"),
            ([len(STR_Q), 1], STR_Q, "shape [n, 1], flat"),
            ([len(STR_Q), 1], [[s] for s in STR_Q], "shape [n, 1], nested")):
        r = d.req("POST", "/v2/models/s-krr/infer", bytes_tensor(data, shape))
        out = ((r.json() or {}).get("outputs") or [{}])[0]
        got = out.get("data") or []
        check(r.status == 200 and out.get("shape") == [len(STR_Q)] and
              bits(got) == bits(v1.get("predictions")) and
              len(got) == len(want) and rel(got, want) <= 1e-9,
              f"s-krr: BYTES {what} equals /v1 predict to the bit and "
              "numpy's solve on the reference Gram (1e-9)", (r, want))
    meta = d.req("GET", "/v2/models/s-svc").json() or {}
    check(meta.get("inputs") == [{"name": "X", "datatype": "BYTES",
                                  "shape": [-1]}] and
          meta["outputs"][0]["datatype"] == "BYTES",
          "s-svc: X and the labels are BYTES", meta)
    same_as_v1(d, "s-svc", STR_Q, meta)
    # the model's max_length counts bytes: 8 x "é" is 16 bytes, 9 are 18
    r = d.req("POST", "/v2/models/s-krr/infer",
              bytes_tensor(["\u00e9" * 8], [1]))
    check(r.status == 200, "s-krr: a string of max_length bytes is taken", r)


def string_errors(d):
    """Tensors of the wrong kind or shape for string and numeric models:
    400 naming the member and what the model takes."""
    good = tensor(["ab", "cd"], [2], "BYTES")
    cases = [
        ("s-krr", dict(good, datatype="FP64", data=[1, 2], shape=[2, 1]),
         "inputs[0].datatype is FP64, but model \"s-krr\" takes strings of "
         "at most 16 bytes"),
        ("s-krr", dict(good, datatype="INT8", data=[1, 2]),
         "datatype BYTES, shape [-1] or [-1, 1]"),
        ("s-krr", dict(good, datatype="STRING"),
         "inputs[0].datatype STRING is not supported: model \"s-krr\" takes "
         "strings"),
        ("s-krr", dict(good, shape=[2, 2]),
         "inputs[0].shape is [2, 2]; the model expects [-1] or [-1, 1]"),
        ("s-krr", dict(good, shape=[3]),
         "inputs[0].data has 2 items; shape [3] needs 3 strings"),
        ("s-krr", dict(good, shape=[]), "inputs[0].shape must be [rows] or "
         "[rows, 1]"),
        ("s-krr", dict(good, shape=[0], data=[]), "give at least one row"),
        ("s-krr", dict(good, data=["ab", 7]),
         "inputs[0].data[1] must be a string, not a number"),
        ("s-krr", dict(good, data=[["ab"], ["cd"]]),
         "inputs[0].data[0] must be a string, not an array"),
        ("s-krr", dict(good, shape=[2, 1], data=[["ab"], ["c", "d"]]),
         "inputs[0].data[1] must be an array of one string"),
        ("s-krr", dict(good, data="ab"),
         "inputs[0].data must be an array of 2 strings, not a string"),
        ("s-krr", dict(good, data=["ab", "\u00e9" * 9]),
         "inputs[0].data[1] has 18 bytes; this model takes strings of at "
         "most 16 bytes"),
        ("mymodel", tensor(["1", "2", "3", "4"], [2, 2], "BYTES"),
         "inputs[0].datatype is BYTES, but model \"mymodel\" takes rows of "
         "2 numbers"),
        ("pre", tensor(["a", "b"], [2], "BYTES"),
         "inputs[0].datatype is BYTES, but model \"pre\" takes kernel values "
         "against its 6 training rows"),
        ("pre", tensor([0.5] * 10, [2, 5]),
         "the model expects [-1, 6] (kernel values against its 6 training "
         "rows)"),
        ("pre", tensor([0.5] * 11 + ["x"], [2, 6]),
         "inputs[0].data[11] must be a number, not a string"),
    ]
    for name, t, text in cases:
        r = d.req("POST", f"/v2/models/{name}/infer", {"inputs": [t]})
        j = r.json() or {}
        check(r.status == 400 and text in j.get("error", "") and
              set(j) == {"error"}, f"{name}: 400 {text}",
              (json.dumps(t)[:160], r))


def precomputed_models(d):
    """A precomputed model takes rows of kernel values against its
    training rows (shape [-1, n_training]): equal to /v1 predict to the
    bit, to the same fit with the kernel itself, and to scikit-learn's
    SVC(kernel="precomputed") labels."""
    from sklearn.svm import SVC
    X = np.array(X4)
    Q = np.array([[0.3, 0.7], [2.5, 1.5], [1.0, 0.0]])

    def rbf(A, B):
        return np.exp(-0.5 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))

    y = [float(sum(r)) for r in X4]
    lab = [1, 1, 2, 1, 2, 2]
    G, Gq = rbf(X, X).tolist(), rbf(Q, X).tolist()
    for name, body in (("pre", krr(0.5, X=G, y=y)),
                       ("pre-svc", {"algorithm": "svc", "params": {"C": 1.0},
                                    "X": G, "y": lab})):
        r = d.req("POST", f"/v1/models/{name}/fit",
                  dict(body, kernel={"type": "precomputed"}))
        check(r.status == 201, f"{name}: fit on a Gram", r)
    meta = d.req("GET", "/v2/models/pre").json() or {}
    check(meta.get("inputs") == [{"name": "X", "datatype": "FP64",
                                  "shape": [-1, 6]}],
          "pre: the metadata's X is FP64, shape [-1, n_training]", meta)
    same_as_v1(d, "pre", Gq, meta)
    direct = d.req("POST", "/v1/models/pre-rbf/fit", krr(0.5, y=y))
    r, j = infer(d, "pre", Gq)
    s, a = predict(d, "/v1/models/pre-rbf/predict", {"X": Q.tolist()})
    want = np.array(Gq) @ np.linalg.solve(np.array(G) + 0.5 * np.eye(6), y)
    got = j["outputs"][0]["data"] if r.status == 200 else []
    check(direct.status == 201 and len(got) == 3 and rel(got, a["predictions"]) <= 1e-12 and
          rel(got, want) <= 1e-9,
          "pre: kernel values give the rbf model's predictions (1e-12) and "
          "numpy's solve (1e-9)", (got, a, want))
    r, j = infer(d, "pre-svc", Gq, ["labels"])
    sk = SVC(kernel="precomputed", C=1.0).fit(G, lab).predict(Gq).tolist()
    check(r.status == 200 and j["outputs"][0]["data"] == sk,
          "pre-svc: labels equal scikit-learn's SVC(kernel=\"precomputed\")",
          (r, sk))
    r, j = infer(d, "pre", np.asarray(Gq, np.float32).tolist(),
                 datatype="FP32")
    s, a = predict(d, "/v1/models/pre/predict", {
        "X": np.asarray(Gq, np.float32).astype(np.float64).tolist()})
    check(r.status == 200 and bits(j["outputs"][0]["data"]) ==
          bits(a["predictions"]),
          "pre: FP32 kernel values are rounded to float32, then as /v1", r)


def beyond_vectors(d):
    string_models(d)
    precomputed_models(d)
    string_errors(d)


def string_admission(server):
    """A predict of strings is admitted for what its rows hold: each
    string becomes a row of the model's width however short it is
    (a model of max_length 65536: rows of 1 + 65536 / 6 doubles), so
    2000 empty strings (a body of 8 kB) need at least 2000 such rows."""
    import re
    with run.temp_daemon(server, "kmserve-oip-adm-", "--memory-budget-mb",
                         "64") as d:
        r = d.req("POST", "/v1/models/big/fit", {
            "algorithm": "krr", "kernel": STR_KERNEL, "X": STR_X,
            "y": list(range(len(STR_X))), "max_length": 65536})
        check(r.status == 201, "admission: a string model of max_length "
              "65536", r)
        rows = 2000 * (1 + 65536 // 6) * 8 / 2 ** 20
        for path, body in (
                ("/v1/models/big/predict", {"X": [""] * 2000}),
                ("/v2/models/big/infer", bytes_tensor([""] * 2000, [2000]))):
            r = d.req("POST", path, body)
            m = re.search(r"estimated ([0-9.]+) MiB", r.body)
            check(r.status == 413 and m and float(m.group(1)) >= rows,
                  f"admission: {path} of 2000 empty strings is 413, "
                  f"estimated at least their rows' {rows:.0f} MiB", r)
            small = {"X": STR_Q} if "v1" in path else \
                bytes_tensor(STR_Q, [len(STR_Q)])
            r = d.req("POST", path, small)
            check(r.status == 200, f"admission: {path} of 5 strings is "
                  "admitted", r)


def tokens(server):
    import tempfile
    tmp = tempfile.mkdtemp(prefix="kmserve-oip-tok-")
    path = os.path.join(tmp, "tokens")
    with open(path, "w") as f:
        f.write("reader-token-0123456789 read\n")
    try:
        with run.temp_daemon(server, "kmserve-oip-tokens-", "--token-file",
                             path) as d:
            for p, status in (("/v2/health/live", 200),
                              ("/v2/health/ready", 200), ("/v2", 401),
                              ("/v2/models/x", 401)):
                r = d.req("GET", p)
                check(r.status == status, f"tokens: GET {p} is {status}", r)
            r = d.req("GET", "/v2/models/x",
                      headers=[("Authorization",
                                "Bearer reader-token-0123456789")])
            check(r.status == 404 and "error" in (r.json() or {}),
                  "tokens: a read token reaches /v2/models (404 here)", r)
    finally:
        os.remove(path)
        os.rmdir(tmp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build",
                                                     "kmserve"))
    args = ap.parse_args()
    server = os.path.abspath(args.server)

    def body(d):
        versions(d)
        protocol_examples(d)
        all_algorithms(d)
        hostile(d)
        beyond_vectors(d)
        string_admission(server)
        default_keep(server)
        tokens(server)
    return run.with_daemon(server, "kmserve-oip-", body, "--keep-versions",
                           "3")


if __name__ == "__main__":
    sys.exit(main())
