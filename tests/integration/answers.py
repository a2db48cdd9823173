#!/usr/bin/python3
"""Every answer of every algorithm, through /v1 and /v2 (issue 25: one
owner for each fact).

The pairs (algorithm, answer) are read from the server, not written here:
GET /v1's capabilities.outputs lists every answer with its v1 route, how
v1 asks for it (predict's "output", the route's default, or project's
inverse), its v2 name and datatype, the fit parameter it needs and the
algorithms that offer it (core's answer table, KM_ANSWER_MAP). A server
whose GET /v1 has no capabilities fails here with a message saying so.

For every algorithm a model is fitted with preprocess.scale standardize
(so core predicts through its scaled copy of X, a block of
km_pre_block_rows = 2^17 / d rows at a time: core/model/km_predict.c) and
with every parameter its answers need; the batch is N rows of D = 512
features, three blocks (the last partly full), under gpr's 1000-row bound
for cov. For every (algorithm, answer) pair:
  - /v1 answers the batch as the capabilities say to ask, one row per
    input row of the width this runner expects of that answer (a scalar a
    row when the width is 1, but for cov);
  - /v2 (when the answer has a v2 name) answers the same batch with the
    same numbers, bit for bit (both go through api_answer_compute and the
    shortest round-trip text), of the datatype the capabilities give (for
    labels the model's: INT64 for whole-number labels, BYTES for text),
    in the shape the model's v2 metadata gives;
  - the first and last row of every block asked together as one small
    batch answer what the big batch answers for them (to 1e-12 of the
    answer's largest value: BLAS may round a block's products
    differently).
And for every algorithm: v1's list of predict's "output" choices (its
400 message), its defaults (no "output"; v2 without "outputs") and its
refusals of the other route follow the capabilities' order; a model fitted
without what an answer needs is refused it (409 naming the parameter) on
/v1 and /v2, and its v2 metadata does not list it.

How to fit each algorithm (its target) and the width of each answer are
this runner's own expectations: an algorithm or answer the server offers
that they do not know fails here until it is added.

Usage, from the project root:
    /usr/bin/python3 tests/integration/answers.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

D = 512
BLOCK = run.block_rows(D)
N = 2 * BLOCK + 3 * BLOCK // 4  # three blocks, the last partly full
N_TRAIN = 48
K = 4
COMPONENTS = 5
KERNEL = {"type": "rbf", "gamma": 0.5 / D}
JSON = [("Content-Type", "application/json")]
TOL = 1e-12

# How each algorithm is fitted: its params (before what its answers need)
# and its target: "y2" two real outputs, "y" one, "cls" K whole-number
# classes, "text" K text classes, None no target.
FITS = {
    "krr": ({"alpha": 0.1}, "y2"),
    "svr": ({}, "y"),
    "svc": ({}, "cls"),
    "kpca": ({"n_components": COMPONENTS}, None),
    # nystrom: its models have the variance only when asked (exact's
    # always have it)
    "gpr": ({"solver": "nystrom", "n_centres": 16}, "y"),
    "kkmeans": ({"n_clusters": K}, None),
    "klr": ({}, "text"),
}
TEXT_LABELS = ["ant", "bee", "cat", "dog"]


def width(answer, algo, target):
    """Values a row of answer (a capabilities name) of a model of algo
    fitted on target; None when this runner does not know it."""
    classes = {"svc": K * (K - 1) // 2, "klr": K}  # one-vs-one pairs; k
    return {
        "label": 1, "clusters": 1, "mean": 1, "std": 1, "var": 1,
        "values": 2 if target == "y2" else 1,
        "projections": COMPONENTS, "inverse": D,
        "decision_function": classes.get(algo),
        "probability": K,
        "cov": N,
    }.get(answer)


def data():
    """Training rows of K classes and the batch, features of unequal
    shift and scale (so that standardize changes them), 3 decimals."""
    rng = np.random.default_rng(25)
    shift, scale = rng.uniform(-3, 3, D), rng.uniform(0.5, 2, D)
    centres = rng.normal(0, 0.6, (K, D))

    def rows(cls):
        z = centres[cls] + rng.normal(size=(len(cls), D))
        return np.round(z * scale + shift, 3), z

    cls = np.arange(N_TRAIN) % K
    X, z = rows(cls)
    y = z[:, :8].sum(axis=1) + cls
    T, _ = rows(rng.integers(0, K, N))
    targets = {"y": [round(float(v), 6) for v in y],
               "y2": [[round(float(v), 6), round(float(-v / 2 + 1), 6)]
                      for v in y],
               "cls": [int(c) for c in cls],
               "text": [TEXT_LABELS[c] for c in cls]}
    return X.tolist(), targets, T.tolist()


def needs_params(needs):
    """{"probability": True} from "params.probability: true"; None when
    needs is not of that form."""
    if not needs:
        return {}
    key, _, value = needs.partition(": ")
    if not key.startswith("params.") or value not in ("true", "false"):
        return None
    return {key[len("params."):]: value == "true"}


def message(r):
    return ((r.json() or {}).get("error") or {}).get("message", "")


# ---------------------------------------------------------------- asking

def v1_ask(d, name, ans, X_text):
    """/v1 as the capabilities say to ask for ans: (reply, its rows)."""
    extra = ""
    if ans.get("output"):
        extra += ',"output":' + json.dumps(ans["output"])
    if ans.get("inverse"):
        extra += ',"inverse":true'
    r = d.req("POST", f"/v1/models/{name}/{ans['route']}",
              '{"X":' + X_text + extra + "}", headers=JSON)
    j = r.json() or {}
    return r, j.get("predictions", j.get("projections"))


def v2_ask(d, name, outputs, rows, cols, X_text):
    body = ('{"inputs":[{"name":"X","datatype":"FP64","shape":[%d,%d],'
            '"data":%s}]%s}' %
            (rows, cols, X_text,
             "" if outputs is None else
             ',"outputs":' + json.dumps([{"name": o} for o in outputs])))
    r = d.req("POST", f"/v2/models/{name}/infer", body, headers=JSON)
    return r, (r.json() or {}).get("outputs") or []


def v1_shape_ok(pred, rows, w, is_cov):
    """pred is rows rows: scalars when w is 1 (but cov), else lists of w."""
    if not isinstance(pred, list) or len(pred) != rows:
        return False
    if w == 1 and not is_cov:
        return all(not isinstance(p, list) for p in pred)
    return all(isinstance(p, list) and len(p) == w for p in pred)


def flat(pred):
    return [x for p in pred for x in (p if isinstance(p, list) else [p])]


def numbers(v):
    return [x for x in v if isinstance(x, float)]


def close(a, b, scale):
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= TOL * scale
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------- checks

def read_capabilities(d):
    """GET /v1's capabilities: (outputs, {algorithm: [its outputs in
    order]}, {algorithm: the params it takes}), or None (a failure saying
    why)."""
    r = d.req("GET", "/v1")
    about = r.json() or {}
    caps = about.get("capabilities")
    if not (r.status == 200 and isinstance(caps, dict) and
            isinstance(caps.get("outputs"), list)):
        check(False, "GET /v1 publishes capabilities.outputs, the answers "
              "each algorithm gives (answers.py reads its pairs from it)",
              f"{r.status} keys {sorted(about)}; capabilities "
              f"{sorted(caps) if isinstance(caps, dict) else caps!r}")
        return None
    outputs = caps["outputs"]
    keys = {"name", "route", "output", "v2", "datatype", "needs",
            "algorithms"}
    bad = [o for o in outputs if not isinstance(o, dict) or
           not keys <= set(o)]
    check(outputs and not bad, f"capabilities.outputs: {len(outputs)} "
          f"answers, each with {', '.join(sorted(keys))}", bad[:2])
    if bad or not outputs:
        return None
    names = [o["name"] for o in outputs]
    check(len(set(names)) == len(names), "capabilities.outputs: names are "
          "unique", names)
    per_algo = {}
    for o in outputs:
        for a in o["algorithms"]:
            per_algo.setdefault(a, []).append(o)
    algos = about.get("algorithms") or []
    check(sorted(per_algo) == sorted(algos), "every algorithm of GET /v1 "
          "gives an answer, and only they do", (sorted(per_algo), algos))
    described = [a for a in caps.get("algorithms") or []
                 if isinstance(a, dict)]
    listed = {a.get("name"): a.get("outputs") for a in described}
    takes = {a.get("name"): {p.get("name") for p in a.get("params") or []
                             if isinstance(p, dict)} for a in described}
    for a, outs in per_algo.items():
        check(listed.get(a) == [o["name"] for o in outs],
              f"capabilities.algorithms {a}: outputs are the answers that "
              "list it, in the same order", (listed.get(a),
                                             [o["name"] for o in outs]))
    for a, outs in per_algo.items():
        for route in {o["route"] for o in outs}:
            defaults = [o["name"] for o in outs if o["route"] == route and
                        not o["output"] and not o.get("inverse")]
            check(len(defaults) <= 1, f"{a} {route}: at most one answer "
                  "is asked for by neither output nor inverse (how v1 asks "
                  "for each is published)", defaults)
    return outputs, per_algo, takes


def fit(d, name, algo, params, target, X, targets, pre=True):
    body = {"algorithm": algo, "kernel": KERNEL, "params": params, "X": X}
    if target:
        body["y"] = targets[target]
    if pre:
        body["preprocess"] = {"scale": "standardize"}
    r = d.req("POST", f"/v1/models/{name}/fit", body)
    check(r.status == 201, f"{name}: fit 201 ({algo}, params {params})", r)
    return r.status == 201


def check_routes(d, name, algo, outs):
    """predict's output choices and both routes' defaults and refusals,
    as the capabilities order them."""
    row = "[" + json.dumps([0.0] * D) + "]"
    choices = [o["output"] for o in outs if o["route"] == "predict" and
               o["output"]]
    r = d.req("POST", f"/v1/models/{name}/predict",
              '{"X":' + row + ',"output":"?"}', headers=JSON)
    routes = {o["route"] for o in outs}
    if "predict" not in routes:
        check(r.status == 409 and f"/v1/models/{name}/project" in message(r),
              f"{name}: predict refused (409), pointing to project", r)
    elif len(choices) > 1:
        want = "output must be one of " + ", ".join(choices)
        check(r.status == 400 and message(r) == want,
              f"{name}: predict's output choices are the capabilities' "
              f"({', '.join(choices)})", r)
    else:
        check(r.status == 400 and
              message(r).startswith("output applies only to "),
              f"{name}: predict has no output to choose", r)
    if "project" not in routes:
        r = d.req("POST", f"/v1/models/{name}/project", '{"X":' + row + "}",
                  headers=JSON)
        check(r.status == 409 and f"/v1/models/{name}/predict" in message(r),
              f"{name}: project refused (409), pointing to predict", r)
    for route in routes:
        first = next(o for o in outs if o["route"] == route and
                     not o.get("inverse"))
        r, got = v1_ask(d, name, {"route": route}, row)
        _, want = v1_ask(d, name, first, row)
        check(r.status == 200 and got == want, f"{name}: {route} without "
              f"output answers {first['name']}, its first", r)
    v2 = [o["v2"] for o in outs if o["v2"]]
    r = d.req("GET", f"/v2/models/{name}")
    meta = [o.get("name") for o in (r.json() or {}).get("outputs", [])]
    check(r.status == 200 and meta == v2, f"{name}: v2 metadata lists the "
          f"capabilities' v2 outputs in order ({', '.join(v2)})", (meta, r))
    if v2:
        r, got = v2_ask(d, name, None, 1, D, row)
        check(r.status == 200 and [o.get("name") for o in got] == v2[:1],
              f"{name}: v2 infer without outputs answers {v2[0]}, its first",
              r)


def check_pair(d, name, algo, target, ans, T, T_text, P, meta):
    """One (algorithm, answer) pair on the batch; returns the v1 rows."""
    label = f"{algo} {ans['name']}"
    inverse = bool(ans.get("inverse"))
    X, X_text = (P, json.dumps(P)) if inverse else (T, T_text)
    cols = len(X[0])
    w = width(ans["name"], algo, target)
    check(w is not None, f"{label}: answers.py knows its width",
          "add it to width()" if w is None else "")
    if w is None:
        return None
    is_cov = ans["name"] == "cov"
    r, pred = v1_ask(d, name, ans, X_text)
    ok = r.status == 200 and v1_shape_ok(pred, N, w, is_cov)
    check(ok, f"{label}: /v1 {ans['route']} answers {N} rows of {w}", r)
    if not ok:
        return None
    v1 = flat(pred)
    # the first and last row of every block, asked as one small batch
    picks = run.block_edges(N, BLOCK)
    if not is_cov:
        r1, p1 = v1_ask(d, name, ans, json.dumps([X[i] for i in picks]))
        scale = max((abs(x) for x in numbers(v1)), default=0.0)
        same = r1.status == 200 and v1_shape_ok(p1, len(picks), w, False) \
            and all(close(a, b, scale) for i, p in zip(picks, p1)
                    for a, b in zip(pred[i] if w > 1 else [pred[i]],
                                    p if w > 1 else [p]))
        check(same, f"{label}: rows {picks} (each block's first and last) "
              "asked alone answer as in the batch", r1)
    if not ans["v2"]:
        return pred
    if inverse:
        check(False, f"{label}: an answer asked by inverse has no v2 name",
              ans)
        return pred
    r, got = v2_ask(d, name, [ans["v2"]], N, cols, X_text)
    out = got[0] if len(got) == 1 else {}
    shape = [N] if w == 1 and not is_cov else [N, w]
    want_type = ans["datatype"] or ("BYTES" if target == "text" else "INT64")
    check(r.status == 200 and out.get("name") == ans["v2"] and
          out.get("shape") == shape and out.get("datatype") == want_type,
          f"{label}: /v2 {ans['v2']} answers shape {shape}, {want_type}",
          {k: out.get(k) for k in ("name", "shape", "datatype")} or r)
    check(out.get("data") == v1 and
          all(type(a) is type(b) for a, b in zip(out.get("data") or [], v1)),
          f"{label}: /v1 and /v2 {ans['v2']} give the same {len(v1)} values",
          r if r.status != 200 else "they differ")
    m = meta.get(ans["v2"]) or {}
    meta_shape = [-1] if w == 1 and not is_cov else [-1, -1 if is_cov else w]
    check(m.get("shape") == meta_shape and m.get("datatype") == want_type,
          f"{label}: v2 metadata gives {ans['v2']} shape {meta_shape}, "
          f"{want_type}", m)
    return pred


def check_lacking(d, name, algo, outs, T):
    """A model fitted without what an answer needs is refused it."""
    row = json.dumps(T[:1])
    r = d.req("GET", f"/v2/models/{name}")
    meta = [o.get("name") for o in (r.json() or {}).get("outputs", [])]
    for ans in outs:
        r, _ = v1_ask(d, name, ans, row if not ans.get("inverse")
                      else json.dumps([[0.0] * COMPONENTS]))
        check(r.status == 409 and ans["needs"] in message(r),
              f"{name}: /v1 {ans['name']} refused (409) naming "
              f"{ans['needs']}", r)
        if not ans["v2"]:
            continue
        check(ans["v2"] not in meta, f"{name}: v2 metadata does not list "
              f"{ans['v2']}", meta)
        r, _ = v2_ask(d, name, [ans["v2"]], 1, D, row)
        check(r.status == 409, f"{name}: /v2 {ans['v2']} refused (409)", r)


def body(d):
    caps = read_capabilities(d)
    if not caps:
        return
    outputs, per_algo, takes = caps
    X, targets, T = data()
    T_text = json.dumps(T)
    run.tally.note(f"d {D}, block {BLOCK} rows, batch {N} rows; "
                   f"{sum(len(o) for o in per_algo.values())} pairs")
    for algo, outs in per_algo.items():
        check(algo in FITS, f"{algo}: answers.py knows how to fit it",
              "add it to FITS" if algo not in FITS else "")
        if algo not in FITS:
            continue
        base, target = FITS[algo]
        params = dict(base)
        # what an answer needs, where the algorithm takes it (a model of
        # an algorithm without that parameter always has the answer: klr's
        # probabilities)
        lacking = []
        for ans in outs:
            p = needs_params(ans["needs"])
            if ans["needs"]:
                check(p is not None, f"{algo} {ans['name']}: needs "
                      f"{ans['needs']!r} is a parameter to give", ans)
            p = {k: v for k, v in (p or {}).items() if k in takes.get(algo,
                                                                      ())}
            params.update(p)
            lacking += [ans] if p else []
        name = f"{algo}-all"
        if not fit(d, name, algo, params, target, X, targets):
            continue
        check_routes(d, name, algo, outs)
        r = d.req("GET", f"/v2/models/{name}")
        meta = {o.get("name"): o for o in (r.json() or {}).get("outputs", [])}
        # the projections first: inverse maps them back
        P = None
        order = sorted(outs, key=lambda o: bool(o.get("inverse")))
        for ans in order:
            if ans.get("inverse") and P is None:
                check(False, f"{algo} {ans['name']}: projections to invert")
                continue
            pred = check_pair(d, name, algo, target, ans, T, T_text, P, meta)
            if ans["route"] == "project" and not ans.get("inverse"):
                P = pred
        if lacking:
            name = f"{algo}-bare"
            if fit(d, name, algo, base, target, X, targets, pre=False):
                check_lacking(d, name, algo, lacking, T)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build",
                                                     "kmserve"))
    args = ap.parse_args()
    return run.with_daemon(args.server, "kmserve-answers-", body)


if __name__ == "__main__":
    sys.exit(main())
