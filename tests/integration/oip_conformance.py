#!/usr/bin/python3
"""Conformance of kmserve's /v2 routes to the Open Inference Protocol's
HTTP/REST API (KServe "predict protocol v2", the text of its
required_api.md as KServe, Triton and Seldon publish it).

The spec's requirements are written down below (SPEC): every endpoint a
compliant server must implement, and for each JSON object the fields it
requires, their JSON types, and the rules on tensors. The script walks
every endpoint for the current version and a pinned one, on a regression,
a classifier and a projection model, a classifier of strings (X BYTES)
and a regression on a precomputed kernel, sending X as each model's
metadata describes it, and checks every required field and
type, the optional ones where present, that tensor shapes are lists of
integers whose product is the number of data elements, that datatypes
are the protocol's, and the error object on failures.
Usage, from the project root:
    /usr/bin/python3 tests/integration/oip_conformance.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

# ------------------------------------------------------------------ the spec
# Endpoints (required_api.md, "HTTP/REST"): the versions portion of the
# URL is optional.
#   GET  v2/health/live                                  health
#   GET  v2/health/ready                                 health
#   GET  v2/models/${NAME}[/versions/${VERSION}]/ready   health
#   GET  v2                                              server metadata
#   GET  v2/models/${NAME}[/versions/${VERSION}]         model metadata
#   POST v2/models/${NAME}[/versions/${VERSION}]/infer   inference
# Health: "The HTTP response status code indicates a boolean result: 200
# true, 4xx false. The HTTP request and response bodies should be empty."
# Errors: "$error_response = { "error": $string }", with a 4xx or 5xx
# status.
# (field, JSON type, required)
SERVER_METADATA = [("name", str, True), ("version", str, True),
                   ("extensions", list, True)]
MODEL_METADATA = [("name", str, True), ("versions", list, False),
                  ("platform", str, True), ("inputs", list, True),
                  ("outputs", list, True)]
METADATA_TENSOR = [("name", str, True), ("datatype", str, True),
                   ("shape", list, True)]
INFER_RESPONSE = [("model_name", str, True), ("model_version", str, False),
                  ("id", str, False), ("parameters", dict, False),
                  ("outputs", list, True)]
RESPONSE_OUTPUT = [("name", str, True), ("shape", list, True),
                   ("datatype", str, True), ("parameters", dict, False),
                   ("data", list, True)]
ERROR = [("error", str, True)]
# "Tensor Data Types" table of the spec.
DATATYPES = {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
             "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES"}
NUMERIC = DATATYPES - {"BOOL", "BYTES"}


def fields(obj, spec, what):
    """Every required field present with its type; optional ones typed."""
    ok = isinstance(obj, dict)
    bad = []
    for name, typ, required in spec:
        if not ok:
            break
        if name not in obj:
            if required:
                bad.append(f"{name} missing")
        elif not isinstance(obj[name], typ) or isinstance(obj[name], bool):
            bad.append(f"{name} is {type(obj[name]).__name__}")
    return check(ok and not bad, f"{what}: required fields and types", (bad, obj))


def flatten(data):
    out = []
    for x in data:
        out.extend(flatten(x) if isinstance(x, list) else [x])
    return out


def tensor_ok(t, what, metadata=False):
    if not fields(t, METADATA_TENSOR if metadata else RESPONSE_OUTPUT, what):
        return
    shape = t["shape"]
    check(all(isinstance(s, int) and not isinstance(s, bool) and
              (s >= 0 or (metadata and s == -1)) for s in shape),
          f"{what}: shape is a list of integers{' (-1 variable)' if metadata else ''}",
          shape)
    check(t["datatype"] in DATATYPES, f"{what}: datatype is the protocol's",
          t["datatype"])
    if metadata:
        return
    data = flatten(t["data"])
    check(len(data) == math.prod(shape),
          f"{what}: data holds the shape's product of elements",
          (shape, len(data)))
    if t["datatype"] == "BYTES":
        good = all(isinstance(x, str) for x in data)
    elif t["datatype"] in NUMERIC:
        good = all(isinstance(x, (int, float)) and not isinstance(x, bool)
                   for x in data)
        if t["datatype"].startswith(("INT", "UINT")):
            good = good and all(isinstance(x, int) for x in data)
    else:
        good = all(isinstance(x, bool) for x in data)
    check(good, f"{what}: data elements are of datatype {t['datatype']}",
          data[:5])


def health(d, path, expect):
    r = d.req("GET", path)
    check(r.status == expect and r.body == "",
          f"GET {path}: {expect}, empty body", r)


def error_ok(r, status, what):
    check(r.status == status, f"{what}: status {status}", r)
    fields(r.json(), ERROR, f"{what}: error object")
    check(set(r.json() or {}) == {"error"}, f"{what}: only the error field", r)


def walk(d, name, X, versions):
    base = f"/v2/models/{name}"
    for v in [None] + versions:
        at = base + (f"/versions/{v}" if v else "")
        health(d, at + "/ready", 200)
        r = d.req("GET", at)
        meta = r.json()
        check(r.status == 200, f"GET {at}: 200", r)
        fields(meta, MODEL_METADATA, f"model metadata {at}")
        check(meta.get("name") == name and
              all(isinstance(x, str) for x in meta.get("versions", [])) and
              (not v or str(v) in meta["versions"]),
              f"model metadata {at}: its name, versions as strings", meta)
        for k in ("inputs", "outputs"):
            for t in meta.get(k, []):
                tensor_ok(t, f"{at} {k} {t.get('name')}", metadata=True)
        # the request's tensor as the metadata describes it: -1 is the
        # number of rows, data flat (strings for BYTES)
        inp = meta["inputs"][0]
        shape = [len(X) if s == -1 else s for s in inp["shape"]]
        data = X if inp["datatype"] == "BYTES" else \
            [x for row in X for x in row]
        check(math.prod(shape) == len(data),
              f"model metadata {at}: X's shape {inp['shape']} describes "
              "the rows sent", (inp, X))
        body = {"id": f"req-{name}-{v}",
                "inputs": [{"name": inp["name"], "datatype": inp["datatype"],
                            "shape": shape, "data": data}],
                "outputs": [{"name": o["name"]} for o in meta["outputs"]]}
        r = d.req("POST", at + "/infer", body)
        j = r.json()
        check(r.status == 200, f"POST {at}/infer: 200", r)
        fields(j, INFER_RESPONSE, f"infer response {at}")
        check(j.get("model_name") == name and j.get("id") == body["id"] and
              (not v or j.get("model_version") == str(v)),
              f"infer response {at}: model_name, id echoed, model_version",
              j)
        outs = {o["name"]: o for o in meta["outputs"]}
        for o in j.get("outputs", []):
            tensor_ok(o, f"{at}/infer output {o.get('name')}")
            m = outs.get(o.get("name"), {})
            want = [len(X) if s == -1 else s for s in m.get("shape", [])]
            check(o.get("datatype") == m.get("datatype") and
                  (o["shape"] == want or -1 in want[1:]),
                  f"{at}/infer output {o.get('name')}: datatype and shape as "
                  "the metadata says", (o.get("shape"), m))
        # without outputs: all or some outputs (the model's main one here)
        r = d.req("POST", at + "/infer", {"inputs": body["inputs"]})
        check(r.status == 200 and len(r.json().get("outputs", [])) >= 1,
              f"POST {at}/infer without outputs: 200 with outputs", r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build",
                                                     "kmserve"))
    args = ap.parse_args()

    def body(d):
        health(d, "/v2/health/live", 200)
        health(d, "/v2/health/ready", 200)
        r = d.req("GET", "/v2")
        check(r.status == 200, "GET /v2: 200", r)
        fields(r.json(), SERVER_METADATA, "server metadata")
        check(all(isinstance(e, str) for e in r.json().get("extensions", [])),
              "server metadata: extensions are strings", r)
        X = [[0, 0], [1, 1], [2, 0], [0, 2], [3, 1], [1, 3]]
        fits = {
            "reg": {"algorithm": "krr", "kernel": {"type": "rbf"},
                    "params": {"alpha": 0.5}, "y": [0, 1, 2, 3, 4, 5]},
            "cls": {"algorithm": "svc", "kernel": {"type": "rbf"},
                    "params": {"probability": True},
                    "y": ["a", "a", "b", "b", "c", "c"]},
            "proj": {"algorithm": "kpca", "kernel": {"type": "rbf"},
                     "params": {"n_components": 2}},
        }
        # inputs beyond vectors: strings (BYTES), a precomputed Gram
        # (kernel values against the six training rows)
        G = [[1.0 if i == j else 0.25 for j in range(6)] for i in range(6)]
        text = ["acgt", "ggca", "tacg", "ccgga", "attac", "gcgc"]
        fits.update({
            "txt": {"algorithm": "svc", "y": [0, 1, 0, 1, 0, 1],
                    "kernel": {"type": "spectrum", "length": 2}, "X": text},
            "gram": {"algorithm": "krr", "kernel": {"type": "precomputed"},
                     "y": [0, 1, 2, 3, 4, 5], "X": G},
        })
        queries = {"txt": ["acg", "ttgca"],
                   "gram": [[0.5] * 6, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]]}
        for name, f in fits.items():
            for _ in range(2):
                r = d.req("POST", f"/v1/models/{name}/fit", dict({"X": X}, **f))
            check(r.status == 201, f"fit {name} twice", r)
            walk(d, name, queries.get(name, [[0.5, 0.5], [2.5, 1.5]]), [2, 1])
        # failures: the error object, with a 4xx status
        error_ok(d.req("GET", "/v2/models/absent"), 404, "unknown model")
        error_ok(d.req("GET", "/v2/models/absent/ready"), 404,
                 "unknown model ready")
        error_ok(d.req("GET", "/v2/models/reg/versions/9"), 404,
                 "unknown version")
        error_ok(d.req("POST", "/v2/models/reg/infer", {"inputs": [
            {"name": "X", "datatype": "FP64", "shape": [1, 3],
             "data": [1, 2, 3]}]}), 400, "a tensor of the wrong shape")
        error_ok(d.req("POST", "/v2/models/absent/infer", {"inputs": []}),
                 404, "infer on an unknown model")
    return run.with_daemon(args.server, "kmserve-oipc-", body,
                           "--keep-versions", "2")


if __name__ == "__main__":
    sys.exit(main())
