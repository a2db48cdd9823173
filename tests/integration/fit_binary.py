#!/usr/bin/python3
"""Binary bodies for POST /v1/models/{name}/fit and update: X and y as
binary tensors ({"datatype", "shape", "binary_data_size"}) whose
little-endian bytes follow the JSON header (Inference-Header-Content-Length),
X's first, then y's.

Equal models: krr with one output and with two (y of shape [n, 2]), svc
with integer labels sent as INT32, kpca (no y), gpr, and a precomputed
kernel (X the n x n Gram) fitted from binary bodies predict exactly (to
the bit) as the same fits from JSON, and their metadata agree; either
member alone binary (the other JSON, inside the header) gives the same
model too. FP32 bytes fit the model JSON gives for the same numbers
rounded to single precision. An update of an exact gpr model from a
binary body equals the JSON update.

Hostile bodies, each a 400 whose message names the field and what was
expected, the server answering after each: a binary member without the
header; the header past the body; bytes no tensor claims; a tensor
short of its bytes; binary_data_size not shape x width; a shape of one
dimension for X, of no columns, of three dimensions, or whose product
overflows; NaN in FP64 and infinity in FP32 bytes; an unknown
datatype and BYTES (and the datatypes the refusal lists are the spec's);
an unknown key in a tensor; a y of other rows than X, or of two columns
where one number a row is taken; X's columns against an
updated model's; application/octet-stream without the header (415).

The Python client: fit(binary=True) and update(binary=True) equal the
JSON fits, for numpy and list X.

Usage, from the project root:
    /usr/bin/python3 tests/integration/fit_binary.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                "clients", "python"))
import run  # noqa: E402
from run import check  # noqa: E402

HEADER = "Inference-Header-Content-Length"
NP = {"FP64": "<f8", "FP32": "<f4", "INT32": "<i4"}


def tensor(values, datatype="FP64"):
    """A binary member for values and its bytes."""
    A = np.asarray(values)
    data = A.astype(NP[datatype]).tobytes()
    return {"datatype": datatype, "shape": list(A.shape),
            "binary_data_size": len(data)}, data


def post_binary(d, path, header, tail, hlen=None,
                ctype="application/octet-stream"):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    hdrs = [("Content-Type", ctype)]
    if hlen is not False:
        hdrs.append((HEADER, str(len(text) if hlen is None else hlen)))
    return d.req("POST", path, text + tail, headers=hdrs)


def fit_binary(d, name, body, X=None, y=None, types=("FP64", "FP64")):
    """body's fit with X and y (those given) sent as binary tensors."""
    head, tail = dict(body), b""
    for key, v, t in (("X", X, types[0]), ("y", y, types[1])):
        if v is not None:
            head[key], data = tensor(v, t)
            tail += data
    return post_binary(d, f"/v1/models/{name}/fit", head, tail)


def predictions(d, name, T, output=None):
    body = {"X": T}
    if output:
        body["output"] = output
    r = d.req("POST", f"/v1/models/{name}/predict", body)
    return r.status, r.body and r.json().get("predictions")


def bits(v):
    return [float(x).hex() for x in np.asarray(v, dtype=float).ravel()]


def same_model(d, a, b, T, what, project=False):
    if project:
        ra = d.req("POST", f"/v1/models/{a}/project", {"X": T}).json()
        rb = d.req("POST", f"/v1/models/{b}/project", {"X": T}).json()
        got, want = rb.get("projections"), ra.get("projections")
    else:
        (sa, want), (sb, got) = predictions(d, a, T), predictions(d, b, T)
    ma = d.req("GET", f"/v1/models/{a}").json()
    mb = d.req("GET", f"/v1/models/{b}").json()
    keys = ("algorithm", "n_samples", "n_features", "n_outputs", "classes")
    check(want is not None and got is not None and bits(got) == bits(want) and
          all(ma.get(k) == mb.get(k) for k in keys),
          f"{what}: the binary body's model answers as the JSON body's, to the bit",
          (want and want[:2], got and got[:2]))


def equal_models(d):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(120, 4))
    T = rng.normal(size=(30, 4)).tolist()
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1]
    Y2 = np.stack([y, X[:, 2] ** 2], axis=1)
    labels = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int)
    rbf = {"type": "rbf", "gamma": 0.25}
    cases = [
        ("krr", {"algorithm": "krr", "kernel": rbf, "params": {"alpha": 0.1}}, y),
        ("krr2", {"algorithm": "krr", "kernel": rbf, "params": {"alpha": 0.1}}, Y2),
        ("gpr", {"algorithm": "gpr", "kernel": rbf,
                 "params": {"solver": "exact", "noise": 0.1}}, y),
        ("svc", {"algorithm": "svc", "kernel": rbf, "params": {"C": 2.0}}, labels),
        ("kpca", {"algorithm": "kpca", "kernel": rbf,
                  "params": {"n_components": 3}}, None),
    ]
    for name, body, target in cases:
        j = dict(body, X=X.tolist())
        if target is not None:
            j["y"] = target.tolist()
        r1 = d.req("POST", f"/v1/models/{name}-json/fit", j)
        types = ("FP64", "INT32" if name == "svc" else "FP64")
        r2 = fit_binary(d, f"{name}-bin", body, X, target, types)
        check(r1.status == 201 and r2.status == 201,
              f"{name}: fits from JSON and from a binary body: 201", (r1, r2))
        same_model(d, f"{name}-json", f"{name}-bin", T, name,
                   project=name == "kpca")
    # one member binary, the other JSON inside the header
    body = {"algorithm": "krr", "kernel": rbf, "params": {"alpha": 0.1}}
    r = fit_binary(d, "krr-xonly", dict(body, y=y.tolist()), X, None)
    check(r.status == 201, "X binary, y JSON: 201", r)
    same_model(d, "krr-json", "krr-xonly", T, "X binary, y JSON")
    r = fit_binary(d, "krr-yonly", dict(body, X=X.tolist()), None, y)
    check(r.status == 201, "X JSON, y binary: 201", r)
    same_model(d, "krr-json", "krr-yonly", T, "X JSON, y binary")
    # FP32: the numbers rounded to single precision
    X32 = X.astype(np.float32).astype(float)
    r1 = d.req("POST", "/v1/models/krr32-json/fit", dict(body, X=X32.tolist(), y=y.tolist()))
    r2 = fit_binary(d, "krr32-bin", body, X, y, ("FP32", "FP64"))
    check(r1.status == 201 and r2.status == 201, "FP32 X: 201", (r1, r2))
    same_model(d, "krr32-json", "krr32-bin", T, "FP32 X (the JSON of its rounded numbers)")
    # a precomputed kernel: X is the n x n Gram
    G = np.exp(-0.25 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    pbody = {"algorithm": "krr", "kernel": {"type": "precomputed"},
             "params": {"alpha": 0.1}}
    r1 = d.req("POST", "/v1/models/pre-json/fit", dict(pbody, X=G.tolist(), y=y.tolist()))
    r2 = fit_binary(d, "pre-bin", pbody, G, y)
    check(r1.status == 201 and r2.status == 201, "precomputed: 201", (r1, r2))
    same_model(d, "pre-json", "pre-bin", G[:5].tolist(), "precomputed kernel")
    return X, y, T


def updates(d, X, y, T):
    body = {"algorithm": "gpr", "kernel": {"type": "rbf", "gamma": 0.25},
            "params": {"solver": "exact", "noise": 0.1}, "X": X.tolist(),
            "y": y.tolist()}
    rng = np.random.default_rng(8)
    Xn = rng.normal(size=(15, 4))
    yn = np.sin(Xn[:, 0])
    for name in ("up-json", "up-bin"):
        check(d.req("POST", f"/v1/models/{name}/fit", body).status == 201,
              f"{name}: fitted")
    r1 = d.req("POST", "/v1/models/up-json/update", {"X": Xn.tolist(), "y": yn.tolist()})
    hx, bx = tensor(Xn)
    hy, by = tensor(yn)
    r2 = post_binary(d, "/v1/models/up-bin/update", {"X": hx, "y": hy}, bx + by)
    check(r1.status == 201 and r2.status == 201 and
          r2.json()["model"]["version"] == 2 and r2.json()["model"]["n_samples"] == 135,
          "update from a binary body: 201, version 2, 135 rows", (r1, r2))
    same_model(d, "up-json", "up-bin", T, "update")
    # columns against the model's
    h3, b3 = tensor(rng.normal(size=(2, 3)))
    r = post_binary(d, "/v1/models/up-bin/update", {"X": h3, "y": tensor([1.0, 2.0])[0]},
                    b3 + tensor([1.0, 2.0])[1])
    check(r.status == 400 and "X has 3 columns; the model expects 4" in r.body,
          "update: X's columns against the model's: 400 naming them", r)


def hostile(d):
    rng = np.random.default_rng(9)
    X = rng.normal(size=(10, 2))
    y = X[:, 0].copy()
    body = {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.5},
            "params": {"alpha": 1.0}}
    hx, bx = tensor(X)
    hy, by = tensor(y)
    good = dict(body, X=hx, y=hy)
    path = "/v1/models/h/fit"

    def bad(what, header, tail, expect, hlen=None, status=400, **kw):
        r = post_binary(d, path, header, tail, hlen=hlen, **kw)
        check(r.status == status and expect in r.body, f"hostile: {what}: {status}", r)
        check(d.req("GET", "/livez").status == 200, "the server answers after it")

    def with_(**members):
        h = dict(good)
        h.update(members)
        return h

    r = d.req("POST", path, json.dumps(good).encode() + bx + by,
              headers=[("Content-Type", "application/json")])
    check(r.status == 400, "hostile: binary bytes without the header: 400", r)
    r = d.req("POST", path, dict(good))
    check(r.status == 400 and "X is an object, a binary tensor, which needs the "
          "Inference-Header-Content-Length header" in r.body,
          "hostile: a binary member without the header: 400 naming it", r)
    bad("the header past the body", good, bx + by, "Inference-Header-Content-Length",
        hlen=10 ** 9)
    bad("bytes no tensor claims", good, bx + by + b"\0", "bytes follow the JSON header")
    bad("y short of its bytes", good, bx + by[:-8], "y.binary_data_size is 80 bytes, but only 72")
    bad("binary_data_size not shape x width",
        with_(X=dict(hx, binary_data_size=hx["binary_data_size"] - 8)), bx[:-8] + by,
        "X.binary_data_size is 152 bytes; shape [10, 2] of FP64 (8 bytes each) takes 160")
    bad("X of one dimension", with_(X=dict(hx, shape=[20])), bx + by,
        "X.shape must be [rows, columns]")
    bad("X of no columns", with_(X=dict(hx, shape=[10, 0], binary_data_size=0)), by,
        "X.shape must be [rows, columns], with at least one column")
    bad("X of three dimensions", with_(X=dict(hx, shape=[10, 2, 1])), bx + by,
        "X.shape must be [rows] or [rows, columns]")
    bad("a shape whose product overflows",
        with_(X=dict(hx, shape=[2 ** 53, 2 ** 53])), bx + by, "takes")
    bad("a negative size", with_(X=dict(hx, binary_data_size=-8)), bx + by,
        "X.binary_data_size must be a whole number of bytes")
    nan = np.array(X)
    nan[3, 1] = np.nan
    bad("NaN in FP64 bytes", good, tensor(nan)[1] + by,
        "X's binary value [3][1] is not a finite number")
    h32, b32 = tensor(X, "FP32")
    b32 = bytearray(b32)
    b32[4 * 5:4 * 6] = np.array([np.inf], "<f4").tobytes()
    bad("infinity in FP32 bytes", with_(X=h32), bytes(b32) + by,
        "X's binary value [2][1] is not a finite number")
    bad("an unknown datatype", with_(X=dict(hx, datatype="FP16")), bx + by,
        "X.datatype must be one of FP64, FP32, INT8")
    bad("BYTES", with_(y=dict(hy, datatype="BYTES")), bx + by, "y.datatype must be one of")
    # the server's datatypes (its one table, as the refusal lists it) are
    # the spec's: the binary tensors' enum, and v2's inputs' less BYTES
    r = post_binary(d, path, with_(X=dict(hx, datatype="no")), bx + by)
    listed = r.body.split("must be one of ", 1)[-1].split('"')[0].split(", ")
    import yaml
    with open(os.path.join(run.ROOT, "api", "openapi.yaml")) as f:
        schemas = yaml.safe_load(f)["components"]["schemas"]
    v2 = [t for t in schemas["V2Tensor"]["properties"]["datatype"]["enum"] if t != "BYTES"]
    check(listed == schemas["BinaryTensor"]["properties"]["datatype"]["enum"] == v2,
          "the spec's datatypes are the server's table", (listed, v2))
    bad("an unknown key in a tensor", with_(X=dict(hx, data=[1])), bx + by, "X")
    h9, b9 = tensor(y[:9])
    bad("y of other rows than X (read before anything of y's size)",
        with_(y=h9), bx + b9, "y has 9 entries; X has 10 rows")
    h2, b2 = tensor(np.stack([y, y], axis=1))
    bad("y of two columns for svr (one number a row)",
        with_(algorithm="svr", params={}, y=h2), bx + b2,
        "y.shape must be [rows] (one number a row) for svr")
    bad("octet-stream without the header", good, bx + by, "Content-Type must be",
        hlen=False, status=415)
    r = post_binary(d, path, good, bx + by)
    check(r.status == 201, "a good binary body after them all: 201", r)


def python_client(d, X, y, T):
    from kmserve import Client
    c = Client(f"http://127.0.0.1:{d.port}")
    kw = {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.25},
          "params": {"alpha": 0.1}}
    for tag, XX, yy in (("numpy", X, y), ("list", X.tolist(), y.tolist())):
        c.fit(f"pc-{tag}", XX, yy, binary=True, **kw)
        same_model(d, "krr-json", f"pc-{tag}", T, f"client: fit(binary=True), {tag}")
    labels = ["a" if v > 0 else "b" for v in X[:, 0]]
    m = c.fit("pc-labels", X, labels, algorithm="svc", kernel="rbf", binary=True)
    check(m["classes"] == ["a", "b"], "client: string labels go as JSON beside binary X", m)
    gp = {"algorithm": "gpr", "kernel": {"type": "rbf", "gamma": 0.25},
          "params": {"solver": "exact", "noise": 0.1}}
    c.fit("pc-up", X, y, **gp)
    rng = np.random.default_rng(8)
    Xn = rng.normal(size=(15, 4))
    m = c.update("pc-up", Xn, np.sin(Xn[:, 0]), binary=True)
    check(m["version"] == 2 and m["n_samples"] == 135, "client: update(binary=True)", m)
    same_model(d, "up-json", "pc-up", T, "client: update(binary=True)")
    job = c.fit("pc-async", X, y, binary=True, asynchronous=True, **kw)
    job.wait(timeout=60)
    same_model(d, "krr-json", "pc-async", T, "client: fit(binary=True, asynchronous=True)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()

    def body(d):
        X, y, T = equal_models(d)
        updates(d, X, y, T)
        hostile(d)
        python_client(d, X, y, T)
    return run.with_daemon(os.path.abspath(args.server), "kmserve-fitbin-", body)


if __name__ == "__main__":
    sys.exit(main())
