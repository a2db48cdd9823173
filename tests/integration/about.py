#!/usr/bin/python3
"""GET /v1, the server's description of itself, against what the server
does: every fact clients take from it (the web console, kmctl, the Python
client) is checked by asking for it.

- The answer has the shape of api/openapi.yaml's About schema (checked
  with a validator of the subset of OpenAPI 3.0 the spec uses), its name
  lists are those of capabilities, in the same order, and docs/api.md's
  GET /v1 example is true of it: every object the example shows has
  exactly the answer's members with the answer's values (a list of named
  items may show fewer items than the answer has).
- Params: a fit giving every param that has a default and applies always,
  at that default, is 201 and metadata shows those values; every choice of
  a string param is taken and a string outside them is 400; a number below
  the minimum (at it, when exclusive) or above the maximum is 400; a param
  that applies only with some solver is 400 with another and taken with
  the first of its own; a kernel's params' defaults are what metadata
  shows, and a value below a kernel param's minimum is 400.
- Target: y is refused where the target is none; taken as numbers, as rows
  of numbers only with multi_output, as string labels with classes.
- Solvers: a fit with each solver and each kernel type is taken (201, or
  422 when the data do not suit the kernel) exactly when the solver lists
  the kernel, else 400.
- Search: a fit with a small search is 201 where search is true, else
  400. Distributed (a second daemon with --mpi-launch /bin/false, async
  fits): "distributed": true is accepted (202) where distributed is true
  and 400 "cannot run distributed" elsewhere.
- Outputs: each algorithm's outputs are exactly those whose algorithms
  name it; every output is answered (200, on its route, asked with its
  "output" or "inverse") by a model of each algorithm that offers it,
  fitted with what its "needs" names where the algorithm has that param,
  and under /v2 by its v2 name with its datatype; an "output" an
  algorithm does not offer is 400.
- Decision values: decision_columns is set exactly where decision_function
  is offered, and a model of two and of four classes answers as many
  columns as it says.
Usage, from the project root:
    /usr/bin/python3 tests/integration/about.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

N, D = 14, 2
X = [[((i * 7) % 11) / 10.0, ((i * 5) % 13) / 12.0] for i in range(N)]
T = [[0.25, 0.5], [0.75, 0.1], [0.4, 0.9]]
VALUES = [x[0] + 2 * x[1] - 0.3 * x[0] * x[1] for x in X]
CLASSES = ["a" if v < 1.0 else "b" if v < 1.8 else "c" for v in VALUES]


# ---------------------------------------------------------------- shape

def resolve(spec, schema):
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].split("/")[-1]]
    return schema


def conforms(spec, schema, value, path="$"):
    """Problems of value against an OpenAPI 3.0 schema (type, nullable,
    enum, required, properties, items, additionalProperties, $ref)."""
    schema = resolve(spec, schema)
    if value is None:
        return [] if schema.get("nullable") else [f"{path}: null"]
    types = {"object": dict, "array": list, "string": str, "boolean": bool,
             "integer": int, "number": (int, float)}
    t = schema.get("type")
    if t and (not isinstance(value, types[t]) or
              (t in ("integer", "number") and isinstance(value, bool))):
        return [f"{path}: {value!r} is not {t}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} not in {schema['enum']}"]
    out = []
    if isinstance(value, dict):
        props = schema.get("properties", {})
        out += [f"{path}: no {k}" for k in schema.get("required", []) if k not in value]
        for k, v in value.items():
            if k in props:
                out += conforms(spec, props[k], v, f"{path}.{k}")
            elif schema.get("additionalProperties") is False:
                out.append(f"{path}: {k} is not in the spec")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            out += conforms(spec, schema["items"], v, f"{path}[{i}]")
    return out


def members_of(spec, schema):
    return set(resolve(spec, schema).get("properties", {}))


def shape(d, about):
    import yaml
    with open(os.path.join(run.ROOT, "api", "openapi.yaml")) as f:
        spec = yaml.safe_load(f)
    schema = spec["paths"]["/v1"]["get"]["responses"]["200"]["content"][
        "application/json"]["schema"]
    problems = conforms(spec, schema, about)
    check(not problems, "GET /v1 conforms to openapi.yaml's About", problems[:10])
    # every member the answer has is documented in the spec (its objects)
    undocumented = []

    def walk(sch, v, path):
        sch = resolve(spec, sch)
        if isinstance(v, dict) and sch.get("properties"):
            for k, w in v.items():
                if k not in sch["properties"]:
                    undocumented.append(f"{path}.{k}")
                else:
                    walk(sch["properties"][k], w, f"{path}.{k}")
        elif isinstance(v, list) and "items" in sch:
            for w in v:
                walk(sch["items"], w, f"{path}[]")
    walk(schema, about, "$")
    check(not undocumented, "every member of GET /v1 is in openapi.yaml",
          sorted(set(undocumented)))
    caps = about["capabilities"]
    check(about["algorithms"] == [a["name"] for a in caps["algorithms"]] and
          about["kernels"] == [k["name"] for k in caps["kernels"]],
          "algorithms and kernels name capabilities' entries, in order",
          (about["algorithms"], about["kernels"]))
    for a in caps["algorithms"]:
        offered = [o["name"] for o in caps["outputs"] if a["name"] in o["algorithms"]]
        check(a["outputs"] == offered,
              f"{a['name']}: outputs are those whose algorithms name it",
              (a["outputs"], offered))
        names = [p["name"] for p in a["params"]]
        for s in a["solvers"]:
            check(set(s["kernels"]) <= set(about["kernels"]),
                  f"{a['name']} {s['name']}: its kernels are kernels", s)
        if a["solvers"]:
            p = param(a, a["solver_param"])
            check(p and p["choices"] == [s["name"] for s in a["solvers"]],
                  f"{a['name']}: solvers are the choices of {a['solver_param']}",
                  (names, a["solvers"]))


def docs_example(about):
    """docs/api.md's GET /v1 example is true of the answer."""
    with open(os.path.join(run.ROOT, "docs", "api.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^### GET /v1\n(.*?)^##", text, re.S | re.M)
    blocks = re.findall(r"```json\n(.*?)```", m.group(1) if m else "", re.S)
    check(len(blocks) == 1, "docs/api.md's GET /v1 section has one JSON example",
          len(blocks))
    if not blocks:
        return
    try:
        example = json.loads(blocks[0])
    except ValueError as e:
        check(False, "docs/api.md's GET /v1 example is JSON", e)
        return
    problems = []

    def same(ex, got, path):
        if isinstance(ex, dict):
            if not isinstance(got, dict) or set(ex) != set(got):
                problems.append(f"{path}: members {sorted(ex)} vs "
                                f"{sorted(got) if isinstance(got, dict) else got!r}")
                return
            for k in ex:
                same(ex[k], got[k], f"{path}.{k}")
        elif isinstance(ex, list) and ex and all(
                isinstance(e, dict) and "name" in e for e in ex):
            by = {g.get("name"): g for g in got if isinstance(g, dict)} \
                if isinstance(got, list) else {}
            for e in ex:
                if e["name"] not in by:
                    problems.append(f"{path}: no item {e['name']}")
                else:
                    same(e, by[e["name"]], f"{path}[{e['name']}]")
        elif ex != got:
            problems.append(f"{path}: {ex!r} vs {got!r}")
    same(example, about, "$")
    check(not problems, "docs/api.md's GET /v1 example is true of the answer",
          problems[:10])


# ---------------------------------------------------------------- fitting

def param(algo, name):
    return next((p for p in algo["params"] if p["name"] == name), None)


def kernel_of(caps, name):
    k = next(k for k in caps["kernels"] if k["name"] == name)
    body = {"type": name}
    parts = next((p for p in k["params"] if p["type"] == "array" and p["min_items"]), None)
    if parts:
        body[parts["name"]] = [{"type": "rbf"}] * parts["min_items"]
    return body


def required_params(algo):
    """Values for the params a fit must give (kpca's n_components,
    kkmeans's n_clusters): two, within the bounds."""
    out = {}
    for p in algo["params"]:
        if p["required"]:
            low = p["minimum"] if p["minimum"] is not None else 0
            out[p["name"]] = max(2, int(low) + 1)
    return out


# X as each input kind has it: strings (one per row of X, the classes'
# k-mers apart), and precomputed values (the Gram of X's rows under an rbf
# of gamma 1: positive definite)
STRINGS = ["acgt" * (1 + i % 3) + "gg" * (i % 4) for i in range(N)]
GRAM = [[2.718281828459045 ** -sum((a - b) ** 2 for a, b in zip(x, z))
         for z in X] for x in X]


def input_of(caps, kernel):
    """The input kind GET /v1 says a kernel object takes (a composite's:
    its first part's)."""
    while kernel.get("kernels"):
        kernel = kernel["kernels"][0]
    k = next(k for k in caps["kernels"] if k["name"] == kernel["type"])
    return k.get("input", "vectors")


def fit_body(caps, algo, params=None, kernel=None, y=True, **extra):
    kernel = kernel or {"type": "rbf"}
    rows = {"strings": STRINGS, "precomputed": GRAM}.get(
        input_of(caps, kernel), X)
    body = {"algorithm": algo["name"], "kernel": kernel,
            "params": dict(required_params(algo), **(params or {})),
            "X": rows}
    if y and algo["target"] == "values":
        body["y"] = VALUES
    elif y and algo["target"] == "classes":
        body["y"] = CLASSES
    body.update(extra)
    return body


def fit(d, name, body):
    return d.req("POST", f"/v1/models/{name}/fit", body)


def params_checks(d, caps, algo):
    a = algo["name"]
    given = {p["name"]: p["default"] for p in algo["params"]
             if p["default"] is not None and p["applies_with"] is None}
    r = fit(d, f"p-{a}", fit_body(caps, algo, given))
    meta = (r.json() or {}).get("model", {}).get("params", {})
    wrong = {k: (v, meta[k]) for k, v in given.items() if k in meta and meta[k] != v}
    check(r.status == 201 and not wrong,
          f"{a}: every param at its default is taken, metadata shows them so",
          (r, wrong))
    for p in algo["params"]:
        name = p["name"]
        cond = {}
        if p["applies_with"]:
            w = p["applies_with"][0]
            cond = {w["param"]: w["values"][0]}
            other = [c for c in param(algo, w["param"])["choices"]
                     if all(c not in x["values"] for x in p["applies_with"]
                            if x["param"] == w["param"])]
            sample = p["default"] if p["default"] is not None else \
                p["choices"][0] if p["choices"] else \
                (p["minimum"] or 0) + 1 if p["type"] in ("number", "integer") else \
                True if p["type"] == "boolean" else None
            if sample is not None and other and len(p["applies_with"]) == 1:
                r = fit(d, f"p-{a}", fit_body(caps, algo, {name: sample, w["param"]: other[0]}))
                check(r.status == 400 and name in r.body,
                      f"{a}: {name} with {w['param']} {other[0]} is 400", r)
            if sample is not None:
                r = fit(d, f"p-{a}", fit_body(caps, algo, dict(cond, **{name: sample})))
                check(r.status in (201, 422),
                      f"{a}: {name} with {w['param']} {w['values'][0]} is taken", r)
        for c in p["choices"] or []:
            r = fit(d, f"p-{a}", fit_body(caps, algo, dict(cond, **{name: c})))
            check(r.status in (201, 422), f"{a}: {name} {c} is taken", r)
        if p["choices"]:
            r = fit(d, f"p-{a}", fit_body(caps, algo, dict(cond, **{name: "no-such"})))
            check(r.status == 400, f"{a}: {name} outside its choices is 400", r)
        if p["type"] in ("number", "integer") and not p["required"]:
            bad = []
            if p["minimum"] is not None:
                bad.append(p["minimum"] if p["exclusive_minimum"] else p["minimum"] - 1)
            if p["maximum"] is not None:
                bad.append(p["maximum"] + 1)
            for v in bad:
                r = fit(d, f"p-{a}", fit_body(caps, algo, dict(cond, **{name: v})))
                check(r.status == 400, f"{a}: {name} {v} (out of its bounds) is 400", r)
    r = fit(d, f"p-{a}", fit_body(caps, algo, {"no_such_param": 1}))
    check(r.status == 400, f"{a}: a param it does not list is 400", r)


def kernel_checks(d, caps):
    krr = next(a for a in caps["algorithms"] if a["name"] == "krr")
    for k in caps["kernels"]:
        body = kernel_of(caps, k["name"])
        r = fit(d, "k", fit_body(caps, krr, kernel=body))
        meta = (r.json() or {}).get("model", {}).get("kernel", {})
        want = {p["name"]: p["default"] for p in k["params"] if p["default"] is not None}
        check(r.status == 201 and all(meta.get(n) == v for n, v in want.items()),
              f"kernel {k['name']}: metadata shows its params' defaults", (r, meta, want))
        for p in k["params"]:
            if p["type"] in ("number", "integer") and p["minimum"] is not None:
                v = p["minimum"] if p["exclusive_minimum"] else p["minimum"] - 1
                r = fit(d, "k", fit_body(caps, krr, kernel=dict(body, **{p["name"]: v})))
                check(r.status == 400, f"kernel {k['name']}: {p['name']} {v} is 400", r)
        r = fit(d, "k", fit_body(caps, krr, kernel=dict(body, no_such=1)))
        check(r.status == 400, f"kernel {k['name']}: a param it does not list is 400", r)


def target_checks(d, caps, algo):
    a, t = algo["name"], algo["target"]
    if t == "none":
        r = fit(d, f"t-{a}", dict(fit_body(caps, algo, y=False), y=VALUES))
        check(r.status == 400, f"{a}: target none, y is 400", r)
        r = fit(d, f"t-{a}", fit_body(caps, algo, y=False))
        check(r.status == 201, f"{a}: target none, no y is 201", r)
        return
    r = fit(d, f"t-{a}", fit_body(caps, algo, y=False))
    check(r.status == 400, f"{a}: target {t}, no y is 400", r)
    rows = [[v, -v] for v in VALUES]
    if t == "values":
        r = fit(d, f"t-{a}", dict(fit_body(caps, algo, y=False), y=rows))
        want = 201 if algo["multi_output"] else 400
        check(r.status == want, f"{a}: y of rows (multi_output "
              f"{algo['multi_output']}) is {want}", r)
    if t == "classes":
        r = fit(d, f"t-{a}", fit_body(caps, algo))
        meta = (r.json() or {}).get("model", {})
        check(r.status == 201 and meta.get("classes") == sorted(set(CLASSES)),
              f"{a}: target classes takes string labels", r)


def solver_checks(d, caps, algo):
    a = algo["name"]
    for s in algo["solvers"]:
        for k in caps["kernels"]:
            body = fit_body(caps, algo, {algo["solver_param"]: s["name"]},
                            kernel=kernel_of(caps, k["name"]))
            r = fit(d, f"s-{a}", body)
            if k["name"] in s["kernels"]:
                check(r.status in (201, 422),
                      f"{a} {s['name']} with kernel {k['name']} (listed) is taken", r)
            else:
                check(r.status == 400,
                      f"{a} {s['name']} with kernel {k['name']} (not listed) is 400", r)


def search_checks(d, caps, algo):
    a = algo["name"]
    p = next((p for p in algo["params"] if p["type"] == "number" and
              p["default"] is not None and p["applies_with"] is None), None)
    space = {p["name"]: [p["default"], p["default"] * 2]} if p else \
        {"kernel.gamma": [0.5, 1.0]}
    r = fit(d, f"q-{a}", fit_body(caps, algo, search={"params": space, "cv": 2}))
    # a default scoring may need a param (kpca's reconstruction error: the
    # inverse map): "... needs params.X"
    m = re.search(r"needs params\.(\w+)", r.body)
    if r.status == 400 and m and param(algo, m.group(1)):
        r = fit(d, f"q-{a}", fit_body(caps, algo, {m.group(1): True},
                                      search={"params": space, "cv": 2}))
    want = 201 if algo["search"] else 400
    check(r.status == want, f"{a}: a search (search {algo['search']}) is {want}", r)


def distributed_checks(server, caps):
    # a launcher that fails at once: what matters is the route's answer
    with run.temp_daemon(server, "kmserve-about-mpi-", "--mpi-launch", "/bin/false -np 1",
                         "--mpi-worker", "/bin/true") as d:
        for algo in caps["algorithms"]:
            a = algo["name"]
            r = fit(d, f"m-{a}", dict(fit_body(caps, algo), distributed=True,
                                      **{"async": True}))
            if algo["distributed"]:
                check(r.status == 202, f"{a}: distributed true, a distributed fit "
                      "is accepted", r)
            else:
                check(r.status == 400 and "cannot run distributed" in r.body,
                      f"{a}: distributed false, a distributed fit is 400", r)


def output_checks(d, caps):
    for o in caps["outputs"]:
        for a in o["algorithms"]:
            algo = next(x for x in caps["algorithms"] if x["name"] == a)
            params = {}
            m = re.fullmatch(r"params\.(\w+): (true|false)", o["needs"] or "")
            p = param(algo, m.group(1)) if m else None
            if p:
                params[p["name"]] = m.group(2) == "true"
                for w in (p["applies_with"] or [])[:1]:
                    params[w["param"]] = w["values"][0]
            name = f"o-{a}-{o['name']}"
            r = fit(d, name, fit_body(caps, algo, params))
            if not check(r.status == 201, f"{o['name']}: a {a} model is fitted", r):
                continue
            body = {"X": T}
            if o["output"]:
                body["output"] = o["output"]
            if o["inverse"]:  # rows of projections
                got = d.req("POST", f"/v1/models/{name}/project", {"X": T}).json() or {}
                body = {"X": got.get("projections", []), "inverse": True}
            r = d.req("POST", f"/v1/models/{name}/{o['route']}", body)
            key = "projections" if o["route"] == "project" else "predictions"
            check(r.status == 200 and key in (r.json() or {}),
                  f"{o['name']}: a {a} model answers it on {o['route']}", r)
            if o["v2"]:
                r = d.req("POST", f"/v2/models/{name}/infer", {
                    "inputs": [{"name": "X", "datatype": "FP64", "shape": [len(T), D],
                                "data": [v for row in T for v in row]}],
                    "outputs": [{"name": o["v2"]}]})
                outs = (r.json() or {}).get("outputs", [])
                check(r.status == 200 and [x.get("name") for x in outs] == [o["v2"]] and
                      (o["datatype"] is None or outs[0].get("datatype") == o["datatype"]),
                      f"{o['name']}: a {a} model answers v2 {o['v2']}", r)
    # an output an algorithm does not offer is refused
    choices = {o["output"] for o in caps["outputs"] if o["output"]}
    for algo in caps["algorithms"]:
        own = {o["output"] for o in caps["outputs"]
               if o["output"] and algo["name"] in o["algorithms"]}
        routes = {o["route"] for o in caps["outputs"] if algo["name"] in o["algorithms"]}
        if "predict" not in routes:
            continue
        for c in sorted(choices - own)[:2]:
            name = f"o-{algo['name']}-" + next(o["name"] for o in caps["outputs"]
                                               if algo["name"] in o["algorithms"])
            r = d.req("POST", f"/v1/models/{name}/predict", {"X": T, "output": c})
            check(r.status == 400,
                  f"{algo['name']}: output {c} (not offered) is 400", r)


def decision_checks(d, caps):
    """decision_columns: set exactly where decision_function is offered,
    and the answer's width is what it says for k classes: 1 for two,
    k(k-1)/2 (pairs), k (classes) or 1 (outputs) for four."""
    offered = {a for o in caps["outputs"] if o["output"] == "decision_function"
               for a in o["algorithms"]}
    four = [["a", "b", "c", "d"][i % 4] for i in range(N)]
    two = [["a", "b"][i % 2] for i in range(N)]
    for algo in caps["algorithms"]:
        a, layout = algo["name"], algo["decision_columns"]
        check((layout is not None) == (a in offered),
              f"{a}: decision_columns ({layout}) is set exactly where "
              f"decision_function is offered")
        if layout is None:
            continue
        for y, k in ((two, 2), (four, 4)):
            name = f"dc-{a}-{k}"
            r = fit(d, name, dict(fit_body(caps, algo, y=False), y=y))
            if not check(r.status == 201, f"{a}: fitted on {k} classes", r):
                continue
            r = d.req("POST", f"/v1/models/{name}/predict",
                      {"X": T, "output": "decision_function"})
            rows = (r.json() or {}).get("predictions", [])
            width = len(rows[0]) if rows and isinstance(rows[0], list) else 1
            want = 1 if k == 2 else {"pairs": k * (k - 1) // 2, "classes": k,
                                     "outputs": 1}[layout]
            check(r.status == 200 and width == want,
                  f"{a}: decision_function on {k} classes has {want} "
                  f"column(s) ({layout})", r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()

    def body(d):
        r = d.req("GET", "/v1")
        about = r.json() or {}
        if not check(r.status == 200 and "capabilities" in about,
                     "GET /v1 is 200 with capabilities", r):
            return
        caps = about["capabilities"]
        shape(d, about)
        docs_example(about)
        check(d.req("GET", "/v1").body == r.body, "GET /v1 answers the same text again")
        kernel_checks(d, caps)
        for algo in caps["algorithms"]:
            params_checks(d, caps, algo)
            target_checks(d, caps, algo)
            solver_checks(d, caps, algo)
            search_checks(d, caps, algo)
        output_checks(d, caps)
        decision_checks(d, caps)
        distributed_checks(args.server, caps)

    return run.with_daemon(args.server, "kmserve-about-", body)


if __name__ == "__main__":
    sys.exit(main())
