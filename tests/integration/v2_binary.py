#!/usr/bin/python3
"""The Open Inference Protocol's binary tensor data extension on
/v2/models/{name}/infer.

Equal answers: for krr (one and two outputs), svr, svc (string, integer
and fractional labels, with probabilities), kpca, gpr and kkmeans, every
output the metadata lists is answered the same whichever way the tensors
travel: binary in and out, binary in and JSON out, JSON in (with the
header) and binary out all give the doubles (labels, cluster ids) of the
plain JSON request, to the bit; the binary output's bytes are
binary_data_size long, its datatype and shape those of the JSON answer,
and the answer carries Inference-Header-Content-Length and
application/octet-stream. FP32 bytes equal FP32 JSON data, and every
integer datatype's bytes equal the same numbers as JSON. A batch of 3000
rows (several of core's predict blocks) equals the JSON path.

Hostile bodies, each a 400 whose message names the field and what was
expected, the server answering the next request: the header not a
number, 0, or past the body; the JSON header cut short; binary_data_size
not a whole number, not shape x width, past the body, or short of it
(bytes no input claims); a shape whose product overflows; NaN and
infinity in FP64 and FP32 bytes; data and binary_data_size together;
binary_data_size without the header; binary flags that are not booleans;
binary data for a BYTES input; application/octet-stream without the
header (415).

The Python client: infer(binary=True) equals infer() (the JSON path), for
numpy and list X, FP32 too, BYTES labels as str; predict(binary=True)
equals predict().
Usage, from the project root:
    /usr/bin/python3 tests/integration/v2_binary.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                "clients", "python"))
import run  # noqa: E402
from run import check  # noqa: E402

HEADER = "Inference-Header-Content-Length"
NP_TYPES = {"FP64": "<f8", "FP32": "<f4", "INT8": "<i1", "INT16": "<i2",
            "INT32": "<i4", "INT64": "<i8", "UINT8": "<u1", "UINT16": "<u2",
            "UINT32": "<u4", "UINT64": "<u8"}


def infer_json(d, name, Q, outputs=None, datatype="FP64"):
    body = {"inputs": [{"name": "X", "datatype": datatype,
                        "shape": list(np.shape(Q)),
                        "data": np.asarray(Q).ravel().tolist()}]}
    if outputs:
        body["outputs"] = [{"name": o} for o in outputs]
    r = d.req("POST", f"/v2/models/{name}/infer", body)
    return r, r.json()


def binary_request(d, name, header, tail, ctype="application/octet-stream",
                   hlen=None):
    """POSTs header (a dict or bytes) then tail; hlen overrides the
    header's length."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    hdrs = [("Content-Type", ctype)]
    if hlen is not False:
        hdrs.append((HEADER, str(len(text) if hlen is None else hlen)))
    return d.req("POST", f"/v2/models/{name}/infer", text + tail, headers=hdrs)


def infer_binary(d, name, Q, outputs=None, datatype="FP64", bin_in=True,
                 bin_out=True):
    """An infer with the extension; returns (reply, JSON header, {output:
    values}) with binary outputs decoded independently here."""
    A = np.asarray(Q)
    tensor = {"name": "X", "datatype": datatype, "shape": list(A.shape)}
    tail = b""
    if bin_in:
        tail = A.astype(NP_TYPES[datatype]).tobytes()
        tensor["parameters"] = {"binary_data_size": len(tail)}
    else:
        tensor["data"] = A.ravel().tolist()
    body = {"inputs": [tensor]}
    if outputs:
        body["outputs"] = [{"name": o, "parameters": {"binary_data": bin_out}}
                           for o in outputs]
    elif bin_out:
        body["parameters"] = {"binary_data_output": True}
    r = binary_request(d, name, body, tail)
    if r.status != 200:
        return r, None, None
    hl = int(r.headers.get(HEADER.lower(), len(r.raw)))
    head = json.loads(r.raw[:hl])
    rest, at, values = r.raw[hl:], 0, {}
    for o in head["outputs"]:
        size = (o.get("parameters") or {}).get("binary_data_size")
        if size is None:
            values[o["name"]] = o["data"]
            continue
        chunk, at = rest[at:at + size], at + size
        if o["datatype"] == "BYTES":
            out, k = [], 0
            while k < len(chunk):
                (n,) = struct.unpack_from("<I", chunk, k)
                out.append(chunk[k + 4:k + 4 + n].decode())
                k += 4 + n
            values[o["name"]] = out
        else:
            dt = {"FP64": "<f8", "INT64": "<i8"}[o["datatype"]]
            values[o["name"]] = np.frombuffer(chunk, dt).tolist()
    check(at == len(rest), f"{name}: binary_data_sizes add up to the bytes "
          "after the JSON header", (at, len(rest)))
    return r, head, values


def flat(v):
    return np.asarray(v).ravel().tolist() if not (
        v and isinstance(v[0], str)) else v


def same(a, b):
    """Exactly the same values: doubles by their bits, labels as given."""
    fa, fb = flat(a), flat(b)
    return len(fa) == len(fb) and all(
        (x.hex() if isinstance(x, float) else x) ==
        (y.hex() if isinstance(y, float) else y)
        for x, y in zip([float(v) if isinstance(v, (int, float)) and
                         not isinstance(v, bool) else v for v in fa],
                        [float(v) if isinstance(v, (int, float)) and
                         not isinstance(v, bool) else v for v in fb]))


def fit_models(d):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 3)).round(3).tolist()
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
                 "params": {}, "y": [{"a": 1, "b": 7, "c": -3}[v] for v in lab]},
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
    for name, body in fits.items():
        r = d.req("POST", f"/v1/models/{name}/fit", dict(body, X=X))
        check(r.status == 201, f"{name}: fit", r)
    return list(fits)


def equal_answers(d, names):
    Q = np.random.default_rng(5).normal(size=(7, 3))
    for name in names:
        meta = d.req("GET", f"/v2/models/{name}").json()
        outs = [o["name"] for o in meta["outputs"]]
        r, j = infer_json(d, name, Q, outs)
        check(r.status == 200, f"{name}: the JSON infer", r)
        want = {o["name"]: o for o in j["outputs"]}
        for bin_in, bin_out in ((True, True), (True, False), (False, True)):
            how = f"binary {'in' if bin_in else ''}{' and ' if bin_in and bin_out else ''}{'out' if bin_out else ''}"
            rb, head, got = infer_binary(d, name, Q, outs, bin_in=bin_in,
                                         bin_out=bin_out)
            check(rb.status == 200, f"{name}: {how}: 200", rb)
            if rb.status != 200:
                continue
            check((rb.headers.get("content-type") ==
                   "application/octet-stream") == bin_out and
                  (HEADER.lower() in rb.headers) == bin_out,
                  f"{name}: {how}: the answer's Content-Type and {HEADER}",
                  rb.headers)
            for o in head["outputs"]:
                w = want[o["name"]]
                check(o["datatype"] == w["datatype"] and
                      o["shape"] == w["shape"] and
                      same(got[o["name"]], w["data"]),
                      f"{name}: {how}: {o['name']} ({o['datatype']}) equals "
                      "the JSON answer to the bit", (o, w))
                if bin_out:
                    check("data" not in o and
                          o["parameters"]["binary_data_size"] > 0,
                          f"{name}: {how}: {o['name']} states "
                          "binary_data_size instead of data", o)
        # the request-level flag answers the main output in binary
        rb, head, got = infer_binary(d, name, Q)
        check(rb.status == 200 and head["outputs"][0]["name"] == outs[0] and
              same(got[outs[0]], want[outs[0]]["data"]),
              f"{name}: binary_data_output answers the main output", rb)
        # a plain JSON request (no header of its own) may ask for binary
        # outputs too, as the extension allows
        plain = {"inputs": [{"name": "X", "datatype": "FP64", "shape": list(Q.shape),
                             "data": Q.ravel().tolist()}],
                 "parameters": {"binary_data_output": True}}
        rp = binary_request(d, name, plain, b"", ctype="application/json", hlen=False)
        hl = int(rp.headers.get(HEADER.lower(), "-1"))
        ok = rp.status == 200 and 0 < hl <= len(rp.raw)
        if ok:
            o = json.loads(rp.raw[:hl])["outputs"][0]
            size = o["parameters"]["binary_data_size"]
            w = want[o["name"]]
            ok = (size == len(rp.raw) - hl and o["datatype"] in ("FP64", "INT64") and
                  same(np.frombuffer(rp.raw[hl:], "<f8" if o["datatype"] == "FP64" else "<i8").tolist(),
                       w["data"])) or o["datatype"] == "BYTES"
        check(ok, f"{name}: a JSON request asking binary_data_output gets binary outputs "
              "equal to the JSON answer", rp)
    # label datatypes: BYTES strings, INT64 whole numbers, FP64 fractions
    for name, dt, kinds in (("svcs", "BYTES", {"a", "b", "c"}),
                            ("svci", "INT64", {1, 7, -3}),
                            ("svcf", "FP64", {0.5, 2.0, 3.0})):
        rb, head, got = infer_binary(d, name, Q, ["labels"])
        check(head and head["outputs"][0]["datatype"] == dt and
              set(got["labels"]) <= kinds, f"{name}: binary labels are {dt} "
              "of the fitted labels", got)


def datatypes(d):
    Q = np.random.default_rng(6).normal(size=(5, 3))
    r, j = infer_json(d, "krr1", Q, datatype="FP32")
    rb, head, got = infer_binary(d, "krr1", Q, ["predictions"],
                                 datatype="FP32")
    check(rb.status == 200 and same(got["predictions"],
                                    j["outputs"][0]["data"]),
          "FP32 bytes equal FP32 JSON data (rounded to float32)", rb)
    Qi = np.array([[3, -2, 1], [0, 5, 7], [100, 1, 2]])
    for dt in NP_TYPES:
        if dt.startswith("FP"):
            continue
        A = np.abs(Qi) if dt.startswith("U") else Qi
        r, j = infer_json(d, "krr1", A, datatype=dt)
        rb, head, got = infer_binary(d, "krr1", A, ["predictions"],
                                     datatype=dt)
        check(r.status == 200 and rb.status == 200 and
              same(got["predictions"], j["outputs"][0]["data"]),
              f"{dt} bytes equal the same numbers as JSON", (r, rb))
    Q = np.random.default_rng(7).normal(size=(3000, 3))
    r, j = infer_json(d, "svcs", Q, ["labels", "decision_values"])
    rb, head, got = infer_binary(d, "svcs", Q, ["labels", "decision_values"])
    check(rb.status == 200 and all(
        same(got[o["name"]], o["data"]) for o in j["outputs"]),
        "3000 rows (several predict blocks): binary equals JSON", rb)


def hostile(d):
    good = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    raw = good.astype("<f8").tobytes()

    def head(size=48, shape=(2, 3), datatype="FP64", **extra):
        t = {"name": "X", "datatype": datatype, "shape": list(shape),
             "parameters": {"binary_data_size": size}}
        t.update(extra)
        return {"inputs": [t]}

    text = json.dumps(head()).encode()
    nan = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]]).astype("<f8")
    inf32 = np.array([[1.0, 2.0, 3.0], [4.0, np.inf, 6.0]]).astype("<f4")
    cases = [
        (text, raw, {"hlen": "abc"}, f"{HEADER} is 'abc'; expected"),
        (text, raw, {"hlen": 0}, f"{HEADER} is '0'"),
        (text, raw, {"hlen": len(text) + len(raw) + 1},
         f"from 1 to the body's {len(text) + len(raw)}"),
        (text, raw, {"hlen": "-5"}, f"{HEADER} is '-5'"),
        (text, raw, {"hlen": "99999999999999999999999"}, HEADER),
        (text, raw, {"hlen": len(text) - 3}, ""),  # the JSON cut short
        (head(40), raw, {}, "inputs[0].parameters.binary_data_size is 40 "
         "bytes; shape [2, 3] of FP64 (8 bytes each) takes 48"),
        (head(48), raw[:40], {}, "binary_data_size is 48 bytes, but only 40 "
         "follow the JSON header"),
        (head(48), raw + b"\0" * 8, {}, "the body has 56 bytes after its "
         "JSON header"),
        (head(48, datatype="FP32"), raw, {}, "shape [2, 3] of FP32 (4 bytes "
         "each) takes 24"),
        (head(-8), raw, {}, "binary_data_size must be a whole number"),
        (head(4.5), raw, {}, "binary_data_size must be a whole number"),
        (head("48"), raw, {}, "binary_data_size must be a whole number"),
        (head(2 ** 60), raw, {}, "binary_data_size must be a whole number"),
        (head(2 ** 53, shape=(2 ** 53, 3)), raw, {}, "takes"),
        (head(48, shape=(2 ** 53 - 1, 3)), raw, {}, "shape ["),
        (head(48), nan.tobytes(), {}, "inputs[0]'s binary value [0][1] is "
         "not a finite number"),
        (head(24, datatype="FP32"), inf32.tobytes(), {},
         "inputs[0]'s binary value [1][1] is not a finite number"),
        (head(48, data=[1, 2, 3, 4, 5, 6]), raw, {}, "inputs[0] has both "
         "data and parameters.binary_data_size"),
        (dict(head(), parameters={"binary_data_output": 1}), raw, {},
         "parameters.binary_data_output must be true or false"),
        (dict(head(), outputs=[{"name": "predictions",
                                "parameters": {"binary_data": "yes"}}]),
         raw, {}, "outputs[0].parameters.binary_data must be true or false"),
        (dict(head(), outputs=[{"name": "predictions", "parameters": 3}]),
         raw, {}, "outputs[0].parameters must be an object"),
        (head(48, parameters=[]), raw, {}, "inputs[0].parameters must be an "
         "object"),
    ]
    for body, tail, kw, want in cases:
        r = binary_request(d, "krr1", body, tail, **kw)
        j = r.json() or {}
        check(r.status == 400 and isinstance(j.get("error"), str) and
              want in j["error"], f"hostile: 400 {want or 'cut JSON'}",
              (str(body)[:200], r))
        alive = d.req("GET", "/v2/health/ready")
        check(alive.status == 200, "the server answers after it", alive)
    # without the header: binary_data_size and binary outputs are refused
    r = d.req("POST", "/v2/models/krr1/infer", head())
    check(r.status == 400 and f"needs the {HEADER} header" in r.body,
          "binary_data_size without the header: 400", r)
    r = d.req("POST", "/v2/models/krr1/infer", {
        "inputs": [{"name": "X", "datatype": "FP64", "shape": [2, 3],
                    "data": good.ravel().tolist()}],
        "outputs": [{"name": "predictions",
                     "parameters": {"binary_data": True}}]})
    check(r.status == 200 and r.headers.get(HEADER.lower()) and
          r.headers.get("content-type") == "application/octet-stream" and
          len(r.raw) == int(r.headers[HEADER.lower()]) + 16,
          "a binary output asked by a JSON request: its header and two "
          "doubles after it", r)
    r = binary_request(d, "krr1", head(), raw, hlen=False)
    check(r.status == 415 and "application/octet-stream" in r.body,
          "application/octet-stream without the header: 415", r)
    r = binary_request(d, "nosuch", head(), raw)
    check(r.status == 404, "an unknown model: 404", r)
    # a string model's BYTES input travels as JSON
    d.req("POST", "/v1/models/str/fit", {
        "algorithm": "krr", "kernel": {"type": "spectrum", "length": 2},
        "params": {"alpha": 0.1}, "X": ["acgt", "ggca", "tacg", "aatt"],
        "y": [1.0, 2.0, 3.0, 4.0]})
    r = binary_request(d, "str", {"inputs": [{
        "name": "X", "datatype": "BYTES", "shape": [1],
        "parameters": {"binary_data_size": 8}}]}, b"\4\0\0\0acgt")
    check(r.status == 400 and "send a BYTES tensor's strings as JSON" in
          r.body, "binary BYTES input: 400 saying what to send", r)
    rb, head2, got = infer_binary(d, "krr1", good)
    check(rb.status == 200, "a good binary request after them all", rb)


def python_client(d):
    import kmserve
    c = kmserve.Client(f"http://127.0.0.1:{d.port}")
    Q = np.random.default_rng(8).normal(size=(25, 3))
    for name, outs in (("krr2", ["predictions"]),
                       ("svcs", ["labels", "probabilities", "decision_values"]),
                       ("svci", ["labels"]), ("kkm", ["clusters"]),
                       ("kpca", ["projections"])):
        a = c.infer(name, Q, outs)
        b = c.infer(name, Q, outs, binary=True)
        check(set(a) == set(b) == set(outs) and
              all(isinstance(b[o], np.ndarray) and same(b[o].tolist(),
                                                        a[o].tolist())
                  for o in outs),
              f"client: {name}: infer(binary=True) equals infer()", (a, b))
        al = c.infer(name, Q.tolist(), outs, batch_size=10)
        bl = c.infer(name, Q.tolist(), outs, binary=True, batch_size=10)
        check(all(isinstance(bl[o], list) and same(bl[o], al[o])
                  for o in outs),
              f"client: {name}: list X in batches: lists, the same values",
              bl)
    a = c.infer("krr1", Q, datatype="FP32")
    b = c.infer("krr1", Q, binary=True, datatype="FP32")
    check(same(a["predictions"].tolist(), b["predictions"].tolist()),
          "client: FP32 binary equals FP32 JSON", (a, b))
    for name in ("krr1", "svcs", "gpr"):
        p = c.predict(name, Q)
        pb = c.predict(name, Q, binary=True)
        check(same(np.asarray(p).tolist(), np.asarray(pb).tolist()),
              f"client: {name}: predict(binary=True) equals predict()",
              (p, pb))
    try:
        c.infer("krr1", [[1.0, float("nan"), 2.0]], binary=True)
        check(False, "client: NaN is refused before sending", None)
    except ValueError as e:
        check("X[0][1] is not a finite number" in str(e),
              "client: NaN is refused before sending, naming it", str(e))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build",
                                                     "kmserve"))
    args = ap.parse_args()

    def body(d):
        names = fit_models(d)
        equal_answers(d, names)
        datatypes(d)
        hostile(d)
        python_client(d)
    return run.with_daemon(os.path.abspath(args.server), "kmserve-v2bin-",
                           body)


if __name__ == "__main__":
    sys.exit(main())
