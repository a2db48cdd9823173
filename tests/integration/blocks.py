#!/usr/bin/python3
"""A batch answers, row for row, what its rows answer alone (issue 24,
defect 1: a klr model of 4 classes with preprocess.scale wrote k(k-1)/2
decision values a row past the first block of its scaled copy).

Core predicts a model with preprocessing through a scaled copy of X, a
block of 2^17 / d rows at a time (core/model/km_predict.c, km_pre_block_rows); every answer
is written a row's width at a time (km_model_answer_width). Here d = 512,
so a block is 256 rows, and the batch is 704 rows: three blocks, the last
partly full, and under gpr's 1000-row bound for cov.

For every model below, fitted without preprocessing and with
preprocess.scale standardize (center_y too where the server accepts it):
  - /v1: every output the server offers the model, read from the server
    (predict's 400 "output must be one of ..." lists them; a model with no
    choice answers its default; a model that answers project is asked
    project, and project with inverse on its projections when the model
    has the inverse map), each asked once for the whole batch;
  - /v2: every output the model's v2 metadata lists, in one infer of the
    whole batch;
and each answer must have one row per input row, of the width v2's
metadata gives, equal to the answer of that row asked alone, for the
first and last row of every block and 4 rows drawn at random (the seed is
printed; KM_BLOCKS_SEED set in the environment gives it): labels and cluster ids exactly, numbers to 1e-12 of the largest
magnitude in that answer (a block's kernel rows come from one BLAS
product, a row's alone from another, which may round the last bits
differently; the largest difference is printed: about 1e-15 here). cov,
the joint covariance of the rows asked, is checked on its diagonal
against single rows and on pairs of those rows asked together. A daemon
that dies is a failure; it is restarted so that the models after it are
still asked.

The models: krr exact (two outputs), nystrom and rff; svr; svc exact
binary and 4 classes (with probabilities) and nystrom 4 classes; kpca
auto (dense at 48 rows, with the inverse map) and nystrom; gpr exact and nystrom (with
variance); kkmeans; klr binary, multinomial and ovr of 4 classes, and
nystrom of 4 classes: each model form a solver makes. The others
the spec lists (auto, screened, iterative, randomized) make models of one
of these forms. The runner checks that it covers every algorithm of GET
/v1, every solver of /openapi.yaml (or names the form it makes) and every
choice of predict's output the spec lists, so a new one fails here until
it is added.
Usage, from the project root:
    /usr/bin/python3 tests/integration/blocks.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import random
import sys

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

D = 512
BLOCK = run.block_rows(D)
N = 2 * BLOCK + 3 * BLOCK // 4  # three blocks, the last partly full
N_TRAIN = 48
K = 4
N_RANDOM = 4
KERNEL = {"type": "rbf", "gamma": 0.5 / D}
JSON = [("Content-Type", "application/json")]

# name, algorithm, params, y ("y", "y2": two outputs, "cls": 4 classes,
# "bin": 2 classes, None)
MODELS = [
    ("krr", "krr", {"alpha": 0.1}, "y2"),
    ("krr-nystrom", "krr", {"solver": "nystrom", "n_centres": 16}, "y"),
    ("krr-rff", "krr", {"solver": "rff", "n_components": 64}, "y"),
    ("svr", "svr", {}, "y"),
    ("svc2", "svc", {"probability": True}, "bin"),
    ("svc4", "svc", {"probability": True}, "cls"),
    ("svc4-nystrom", "svc", {"solver": "nystrom", "n_centres": 16}, "cls"),
    ("kpca", "kpca", {"n_components": 5, "fit_inverse_transform": True}, None),
    ("kpca-nystrom", "kpca",
     {"n_components": 5, "eigen_solver": "nystrom", "n_centres": 16}, None),
    ("gpr", "gpr", {}, "y"),
    ("gpr-nystrom", "gpr",
     {"solver": "nystrom", "n_centres": 16, "variance": True}, "y"),
    ("kkmeans", "kkmeans", {"n_clusters": K}, None),
    ("klr2", "klr", {}, "bin"),
    ("klr4", "klr", {}, "cls"),
    ("klr4-ovr", "klr", {"multi_class": "ovr"}, "cls"),
    ("klr4-nystrom", "klr", {"solver": "nystrom", "n_centres": 16}, "cls"),
]
# Solvers the spec lists that make a model of a form fitted above.
SAME_FORM = {("krr", "auto"): "exact or nystrom",
             ("svc", "screened"): "exact", ("svc", "auto"): "exact",
             ("kpca", "dense"): "auto", ("kpca", "iterative"): "auto",
             ("kpca", "randomized"): "auto", ("gpr", "auto"): "exact or nystrom"}
SOLVER_KEYS = ("solver", "eigen_solver")


def data():
    """Training rows of K classes and the batch, features of unequal
    shift and scale (so that standardize changes them), values with 3
    decimals (short JSON)."""
    rng = np.random.default_rng(24)
    shift, scale = rng.uniform(-3, 3, D), rng.uniform(0.5, 2, D)
    centres = rng.normal(0, 0.6, (K, D))

    def rows(cls):
        z = centres[cls] + rng.normal(size=(len(cls), D))
        return np.round(z * scale + shift, 3), z

    cls = np.arange(N_TRAIN) % K
    X, z = rows(cls)
    y = z[:, :8].sum(axis=1) + cls
    T, _ = rows(rng.integers(0, K, N))
    fits = {"y": [round(float(v), 6) for v in y],
            "y2": [[round(float(v), 6), round(float(-v / 2 + 1), 6)] for v in y],
            "cls": [int(c) for c in cls], "bin": [int(c % 2) for c in cls]}
    return X.tolist(), fits, T.tolist()


def sample_rows(rng):
    """The first and last row of every block, and N_RANDOM more."""
    rows = set(run.block_edges(N, BLOCK))
    rows |= set(rng.sample(range(N), N_RANDOM))
    return sorted(rows)


def ask(d, method, path, body=None, **kw):
    """d.req, or a reply of status 0 when the daemon does not answer (it
    died: alive says so)."""
    try:
        return d.req(method, path, body, **kw)
    except OSError as e:
        return run.Reply(0, {}, repr(e))


def alive(d, what):
    """Whether the daemon survived what; if not, a failure, its log's
    sanitizer report, and a restart (the models load from their files)
    so that the models after it are still asked. A daemon that stopped
    answering is given time to exit first (a sanitizer writes its report
    before it exits)."""
    if d.proc is not None and d.proc.poll() is None and \
            ask(d, "GET", "/livez").status == 0:
        try:
            d.proc.wait(timeout=60)
        except run.subprocess.TimeoutExpired:
            pass
    ok = d.proc is not None and d.proc.poll() is None
    check(ok, f"{what}: the daemon is still running")
    if not ok:
        d.check_log()
        d.proc = None
        d.start()
    return ok


def fit(d, name, algo, params, ykind, pre, X, ys):
    body = {"algorithm": algo, "kernel": KERNEL, "params": params, "X": X}
    if ykind:
        body["y"] = ys[ykind]
    if pre:
        body["preprocess"] = {"scale": "standardize", "center_y": True}
    r = d.req("POST", f"/v1/models/{name}/fit", body)
    if pre and r.status == 400 and "center_y applies to" in \
            ((r.json() or {}).get("error") or {}).get("message", ""):
        body["preprocess"] = {"scale": "standardize"}
        r = d.req("POST", f"/v1/models/{name}/fit", body)
    check(r.status == 201, f"{name}: fit 201", r)
    return r.status == 201


def v1_outputs(d, name, row):
    """(route, output, inverse) of every /v1 answer the model offers, as
    the server says."""
    r = ask(d, "POST", f"/v1/models/{name}/predict", {"X": [row], "output": ""})
    msg = ((r.json() or {}).get("error") or {}).get("message", "")
    if r.status == 400 and msg.startswith("output must be one of "):
        return [("predict", o, False)
                for o in msg[len("output must be one of "):].split(", ")]
    if r.status == 400 and msg.startswith("output applies only to"):
        return [("predict", None, False)]
    if r.status == 409 and "/project" in msg:
        return [("project", None, False), ("project", None, True)]
    check(False, f"{name}: predict says which outputs it offers", r)
    return []


def v1_body(X_text, output, inverse):
    extra = (f',"output":{json.dumps(output)}' if output else "") + \
            (',"inverse":true' if inverse else "")
    return '{"X":' + X_text + extra + "}"


def v1_ask(d, name, route, output, inverse, X=None, X_text=None):
    text = X_text if X_text is not None else json.dumps(X)
    r = ask(d, "POST", f"/v1/models/{name}/{route}",
            v1_body(text, output, inverse), headers=JSON)
    j = r.json() or {}
    return r, j.get("predictions", j.get("projections"))


def v2_ask(d, name, outputs, rows, X=None, X_text=None):
    text = X_text if X_text is not None else json.dumps(X)
    body = ('{"inputs":[{"name":"X","datatype":"FP64","shape":[%d,%d],'
            '"data":%s}],"outputs":%s}' %
            (rows, D, text, json.dumps([{"name": o} for o in outputs])))
    r = ask(d, "POST", f"/v2/models/{name}/infer", body, headers=JSON)
    got = {o.get("name"): o for o in (r.json() or {}).get("outputs", [])}
    return r, got


def v2_rows(out, rows):
    """An infer output as rows (a row: a list of its values)."""
    data, shape = out.get("data") or [], out.get("shape") or []
    w = shape[1] if len(shape) == 2 else 1
    if shape[:1] != [rows] or len(data) != rows * w:
        return None
    return [data[i * w:(i + 1) * w] for i in range(rows)]


def v1_rows(pred, rows):
    if not isinstance(pred, list) or len(pred) != rows:
        return None
    return [p if isinstance(p, list) else [p] for p in pred]


# A number may differ from the same row's answer alone by rounding: a
# block's kernel rows, and the products after them, are BLAS products of
# the whole block, and a row's alone products of one row, which OpenBLAS
# may sum in another order. So numbers are equal to TOL of the largest
# magnitude in that answer of the batch (seen: about 1e-15); labels and
# cluster ids exactly. A row written at the wrong place (the defect) is
# off by the values' whole size.
TOL = 1e-12
worst = [0.0, ""]


def numbers(v):
    if isinstance(v, list):
        for x in v:
            yield from numbers(x)
    elif isinstance(v, float):
        yield v


def same(a, b, scale):
    """a equals b: numbers within TOL * scale, labels as given."""
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and \
            len(a) == len(b) and all(same(x, y, scale) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= TOL * scale
    return type(a) is type(b) and a == b


def compare(what, batch, singles, scale):
    """batch: rows of the whole batch; singles: {row: that row alone};
    scale: the largest magnitude of the batch's answer."""
    bad = [(i, batch[i], s) for i, s in singles.items()
           if not same(batch[i], s, scale)]
    for i, s in singles.items():
        if not bad and scale > 0:
            err = max((abs(x - y) / scale for x, y in
                       zip(numbers(batch[i]), numbers(s))), default=0.0)
            if err > worst[0]:
                worst[:] = [err, what]
    check(not bad, f"{what}: rows {sorted(singles)} of the batch equal each "
          "row asked alone",
          f"{len(bad)} differ; first: row {bad[0][0]}: batch {bad[0][1][:6]} "
          f"alone {bad[0][2][:6]}" if bad else "")


def scale_of(batch):
    return max((abs(x) for x in numbers(batch)), default=0.0)


def cov_pairs(rows):
    return [(rows[i], rows[i + 1]) for i in range(0, len(rows) - 1, 2)]


def check_v1(d, name, T, T_text, rows):
    P = None  # the batch's projections, for inverse
    answered = []
    outs = v1_outputs(d, name, T[0])
    for route, output, inverse in outs:
        label = f"{name} /v1 {route}" + (f" {output}" if output else "") + \
                (" inverse" if inverse else "")
        X = P if inverse else T
        r, pred = v1_ask(d, name, route, output, inverse, X=X,
                         X_text=None if inverse else T_text)
        if not alive(d, label):
            continue
        if r.status == 409 and "was fitted without" in r.body:
            continue  # (probabilities, the inverse map) not in this model
        answered.append(output)
        batch = v1_rows(pred, N)
        check(r.status == 200 and batch is not None,
              f"{label}: the batch of {N} rows answers {N} rows", r)
        if batch is None:
            continue
        if route == "project" and not inverse:
            P = pred
        if output == "cov":
            diag = {i: [[batch[i][i]]] for i in rows}
            alone = {i: v1_ask(d, name, route, output, False, X=[T[i]])[1]
                     for i in rows}
            compare(f"{label} (diagonal)", diag, alone, scale_of(batch))
            pairs = {(i, j): v1_ask(d, name, route, output, False,
                                    X=[T[i], T[j]])[1]
                     for i, j in cov_pairs(rows)}
            sub = {(i, j): [[batch[i][i], batch[i][j]], [batch[j][i], batch[j][j]]]
                   for i, j in pairs}
            compare(f"{label} (pairs of rows)", sub, pairs, scale_of(batch))
            continue
        alone = {}
        for i in rows:
            r1, p1 = v1_ask(d, name, route, output, inverse, X=[X[i]])
            one = v1_rows(p1, 1)
            alone[i] = one[0] if r1.status == 200 and one else (r1.status, p1)
        compare(label, batch, alone, scale_of(batch))
    return answered


def check_v2(d, name, T, T_text, rows):
    r = ask(d, "GET", f"/v2/models/{name}")
    meta = {o["name"]: o for o in (r.json() or {}).get("outputs", [])}
    check(r.status == 200 and meta, f"{name} /v2: metadata lists outputs", r)
    names = list(meta)
    r, got = v2_ask(d, name, names, N, X_text=T_text)
    if not alive(d, f"{name} /v2 infer"):
        return
    check(r.status == 200 and list(got) == names,
          f"{name} /v2: infer of {N} rows answers {', '.join(names)}", r)
    alone = {}
    for i in rows:
        r1, g1 = v2_ask(d, name, names, 1, X=[T[i]])
        alone[i] = (r1.status, g1)
    for o in names:
        label = f"{name} /v2 {o}"
        want = meta[o]["shape"]
        batch = v2_rows(got.get(o, {}), N)
        w = 1 if len(want) == 1 else want[1]
        shape_ok = batch is not None and (
            o == "covariance" or all(len(row) == w for row in batch))
        check(shape_ok, f"{label}: {N} rows of the width the metadata gives "
              f"({want})", got.get(o, {}).get("shape"))
        if not shape_ok:
            continue
        if o == "covariance":
            diag = {i: [batch[i][i]] for i in rows}
            single = {i: (v2_rows(g.get(o, {}), 1) or [None])[0]
                      for i, (s, g) in alone.items()}
            compare(f"{label} (diagonal)", diag, single, scale_of(batch))
            pairs = {}
            for i, j in cov_pairs(rows):
                _, g2 = v2_ask(d, name, [o], 2, X=[T[i], T[j]])
                pairs[(i, j)] = v2_rows(g2.get(o, {}), 2)
            sub = {(i, j): [[batch[i][i], batch[i][j]], [batch[j][i], batch[j][j]]]
                   for i, j in pairs}
            compare(f"{label} (pairs of rows)", sub, pairs, scale_of(batch))
            continue
        single = {i: ((v2_rows(g.get(o, {}), 1) or [None])[0] if s == 200
                      else (s, g)) for i, (s, g) in alone.items()}
        compare(label, batch, single, scale_of(batch))


def check_coverage(d, fitted, v1_seen):
    """Every algorithm, solver and output choice the server offers is
    among those asked here."""
    r = d.req("GET", "/v1")
    algos = set((r.json() or {}).get("algorithms", []))
    covered = {a for _, a, _, _ in MODELS}
    check(algos and algos <= covered, "every algorithm of GET /v1 is asked",
          sorted(algos - covered))
    spec = yaml.safe_load(d.req("GET", "/openapi.yaml").body)
    schemas = spec["components"]["schemas"]
    missing = []
    for s in schemas.values():
        algo = s.get("x-algorithm") if isinstance(s, dict) else None
        for key in SOLVER_KEYS:
            prop = (s.get("properties") or {}).get(key) if algo else None
            for v in (prop or {}).get("enum", []):
                asked = (algo, v) in fitted or (
                    v == prop.get("default") and (algo, None) in fitted)
                if not asked and (algo, v) not in SAME_FORM:
                    missing.append(f"{algo} {key} {v}")
    check(not missing, "every solver the spec lists is asked, or makes a "
          "model of a form asked", missing)
    choices = set()
    for path in spec["paths"].values():
        for op in path.values():
            if not isinstance(op, dict):
                continue
            body = (((op.get("requestBody") or {}).get("content") or {})
                    .get("application/json") or {}).get("schema") or {}
            if "$ref" in body:
                body = schemas[body["$ref"].split("/")[-1]]
            out = (body.get("properties") or {}).get("output") or {}
            choices |= set(out.get("enum", []))
    check(choices and choices <= v1_seen,
          "every choice of predict's output in the spec is asked",
          sorted(choices - v1_seen))


def body(d):
    X, ys, T = data()
    T_text = json.dumps(T)
    seed = int(os.environ.get("KM_BLOCKS_SEED") or
               random.SystemRandom().randrange(1 << 30))
    run.tally.note(f"d {D}, block {BLOCK} rows, batch {N} rows, seed {seed}")
    rows = sample_rows(random.Random(seed))
    fitted, v1_seen = set(), set()
    for pre in (False, True):
        for base, algo, params, ykind in MODELS:
            name = base + ("-pre" if pre else "")
            if not fit(d, name, algo, params, ykind, pre, X, ys):
                continue
            key = next((k for k in SOLVER_KEYS if k in params), None)
            fitted.add((algo, params[key] if key else None))  # None: default
            v1_seen |= set(check_v1(d, name, T, T_text, rows))
            check_v2(d, name, T, T_text, rows)
            alive(d, f"{name}: every answer")
    check_coverage(d, fitted, v1_seen)
    run.tally.note(f"largest difference from a row alone: {worst[0]:.2g} of "
                   f"the answer's largest value ({worst[1] or 'none'})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    return run.with_daemon(args.server, "kmserve-blocks-", body)


if __name__ == "__main__":
    sys.exit(main())
