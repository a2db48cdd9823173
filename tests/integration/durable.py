#!/usr/bin/python3
"""What a fit acknowledges stays: models written from extreme but valid
data load again after a restart and answer the same (issue 24, defect 2).

For every algorithm and solver (krr exact, nystrom with uniform and
rpcholesky centres, rff and auto; svc exact, with probability, nystrom
with both centre rules, and screened; svr; kpca dense, with the inverse
map, and nystrom; gpr exact and nystrom with variance; kkmeans; klr
binary and multi-class, exact and nystrom; some with preprocessing),
with a linear, an rbf, a product and a laplacian_l2 kernel, fits on data
sets at the edges of a double: values near 1e+300 (targets, rows whose
kernel values come near it, rows near the largest double, near 1e10 for
a kernel of degree 5), values near 1e-300 and subnormals, rows all 0 or
of rank 1, duplicate rows (also near 1e150), one sample (a krr model of
two outputs then has more outputs than rows). Each fit is either 201, or
a refusal with a 4xx status and a message (never 5xx, and never a fit
that does not end: the daemon runs with --fit-timeout, whose refusal
counts as a failure). Every 201 model is asked for every output it
offers (predict, project with and without inverse) on its own rows and
on probe rows; then the daemon restarts on the same directory and must
list every model, quarantine none, show the same metadata (a training
figure that is not a number is null, before and after), and give byte-
identical answers, statuses included.

Usage, from the project root:
    /usr/bin/python3 tests/integration/durable.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

TINY = 5e-324  # the smallest subnormal


def datasets():
    """name -> (X, y for regression, labels for 2 classes, for 3)."""
    two = ["a", "b", "a", "b", "a", "b"]
    three = ["a", "b", "c", "a", "b", "c"]
    base = [[0.0, 1.0], [1.0, 0.5], [2.0, -1.0], [-1.0, 2.0], [0.5, 0.5],
            [3.0, 1.0]]
    return {
        # the issue's trigger: moderate rows, targets of alternating sign
        # near the largest double
        "yhuge": (base, [1e300, -1e300, 1e300, -1e300, 1e300, -1e300],
                  two, three),
        "ymax": (base, [1.7e308, -1.7e308, 1.7e308, 1.7e308, -1.7e308,
                        1.7e308], two, three),
        # rows whose linear kernel values come near 1e300
        "xbig": ([[r[0] * 1e149, r[1] * 1e149] for r in base],
                 [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], two, three),
        # rows near 1e300: kernels overflow (a 4xx refusal is fine)
        "xhuge": ([[r[0] * 1e300, r[1] * 1e300] for r in base],
                  [1.0, -1.0, 1.0, -1.0, 1.0, -1.0], two, three),
        # subnormal rows and targets
        "subn": ([[TINY * (i + 1), -TINY * i] for i in range(6)],
                 [TINY, -TINY, 2 * TINY, 0.0, TINY, -3 * TINY], two, three),
        "tiny": ([[r[0] * 1e-300, r[1] * 1e-300] for r in base],
                 [1e-300, -1e-300, 2e-300, 1e-310, -1e-305, 3e-300],
                 two, three),
        # every row the same, targets and labels differ
        "dup": ([[-1.0060241824208043, -0.6757090646596318]] * 6,
                [1.0, 2.0, 3.0, 1e300, -1e300, 0.0], two, three),
        # rows near the largest double (kernels and features overflow)
        "xmax": ([[1.5e308, 1.5e308], [0.5, 1.7e308], [-0.4, 1e308],
                  [1.7e308, -1.5e308], [1e308, 0.0], [-1.5e308, 2.0]],
                 [1.0, -1.0, 2.0, 0.5, 0.25, 3.0], two, three),
        # every row 0: a linear kernel matrix of 0 (rpcholesky finds no
        # centre); rows of rank 1 (fewer rpcholesky centres than classes)
        "zero": ([[0.0, 0.0]] * 6, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], two,
                 three),
        "rank1": ([[float(i), 2.0 * i] for i in range(1, 7)],
                  [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], two, three),
        # values near 1e10: a polynomial kernel of degree 5 overflows on
        # kpca's projections (its inverse map)
        "x1e10": ([[1.5e10, 1.7e10], [1e10, -1.3], [-1.5e10, 1.7e10],
                   [0.5, 2.0], [1.0, 1.0], [2e10, -1e10]],
                  [1.5e10, 5e9, 1.5e10, 1.0, 2.0, 3.0], two, three),
        # identical rows near 1e150: the kernel of a row with itself is 1,
        # the kernel matrix's, through the norms, rounds to 0
        "dupbig": ([[1e150, 1.7e150]] * 6, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                   two, three),
        "one": ([[0.25, -4.0]], [1e300], ["a"], ["a"]),
        # one row, ordinary target: more outputs than rows
        "one1": ([[0.25, -4.0]], [3.0], ["a"], ["a"]),
    }


# (config name, algorithm, params, target kind, extra fit members, outputs)
# target kind: "y" regression, "two"/"three" class labels, None (no y).
# outputs: list of (path suffix, extra predict members).
PRED = [("predict", {})]
CLS = [("predict", {}), ("predict", {"output": "decision_function"})]
CLS_P = CLS + [("predict", {"output": "probability"})]
GPR = [("predict", {"output": o}) for o in ("mean", "std", "var", "cov")]
PROJ = [("project", {})]
PROJ_INV = PROJ + [("project", {"inverse": True})]


def configs(n):
    m = max(1, min(n, 3))
    return [
        ("krr-exact", "krr", {"alpha": 1.0}, "y", {}, PRED),
        ("krr-nys", "krr", {"solver": "nystrom", "n_centres": m}, "y", {},
         PRED),
        ("krr-rpc", "krr", {"solver": "nystrom", "n_centres": m,
                            "centres": "rpcholesky"}, "y", {}, PRED),
        ("krr-rff", "krr", {"solver": "rff", "n_components": 8}, "y", {},
         PRED),
        ("krr-auto", "krr", {"solver": "auto"}, "y", {}, PRED),
        ("krr-cy", "krr", {}, "y",
         {"preprocess": {"scale": "standardize", "center_y": True}}, PRED),
        ("krr-2out", "krr", {}, "y2", {}, PRED),
        ("svc2", "svc", {}, "two", {}, CLS),
        ("svc3", "svc", {}, "three", {}, CLS),
        ("svc3-mm", "svc", {}, "three", {"preprocess": {"scale": "minmax"}},
         CLS),
        ("svc-prob", "svc", {"probability": True}, "two", {}, CLS_P),
        ("svc-nys", "svc", {"solver": "nystrom", "n_centres": m}, "three",
         {}, CLS),
        ("svc-rpc", "svc", {"solver": "nystrom", "n_centres": m,
                            "centres": "rpcholesky"}, "three", {}, CLS),
        ("svc-scr", "svc", {"solver": "screened", "n_centres": m}, "three",
         {}, CLS),
        ("svr", "svr", {}, "y", {}, PRED),
        ("kpca", "kpca", {"n_components": 1}, None, {}, PROJ),
        ("kpca-inv", "kpca", {"n_components": 1,
                              "fit_inverse_transform": True}, None, {},
         PROJ_INV),
        ("kpca-nys", "kpca", {"n_components": 1, "eigen_solver": "nystrom",
                              "n_centres": m}, None, {}, PROJ),
        ("gpr", "gpr", {"normalize_y": True}, "y", {}, GPR),
        ("gpr-raw", "gpr", {}, "y", {}, GPR),
        ("gpr-nys", "gpr", {"solver": "nystrom", "n_centres": m,
                            "variance": True}, "y", {}, GPR),
        ("kkm", "kkmeans", {"n_clusters": min(n, 2), "n_init": 2}, None, {},
         PRED),
        ("klr2", "klr", {}, "two", {}, CLS_P),
        ("klr3", "klr", {}, "three", {}, CLS_P),
        ("klr3-ovr", "klr", {"multi_class": "ovr"}, "three", {}, CLS_P),
        ("klr3-std", "klr", {}, "three",
         {"preprocess": {"scale": "standardize"}}, CLS_P),
        ("klr-nys", "klr", {"solver": "nystrom", "n_centres": m}, "three",
         {}, CLS_P),
    ]


# A fit of these tiny problems that runs this long never ends (it is
# stopped, 422, and counted as a failure).
FIT_TIMEOUT = 60

# Fits whose SMO runs to its cap of 10^7 iterations (kernel values near
# 1e300): seconds each, many more under ASan; the same algorithm is covered
# on the same data with the other kernel.
SLOW = {"svr.xbig.lin", "svc-scr.x1e10.poly", "svc-prob.x1e10.poly"}

KERNELS = {"lin": {"type": "linear"}, "rbf": {"type": "rbf", "gamma": 0.5},
           "poly": {"type": "product", "kernels": [
               {"type": "polynomial", "degree": 5, "gamma": 10, "coef0": 1},
               {"type": "rbf", "gamma": 1}]},
           "l2": {"type": "laplacian_l2", "gamma": 2}}
# Kernels fitted only on some data sets: the degree-5 kernel where it
# overflows (and only it there), laplacian_l2 (the square root of a
# distance's rounding: identical rows are not quite at distance 0) on
# duplicate rows.
ONLY_ON = {"poly": ("x1e10",), "l2": ("dup",)}


def fit_all(d):
    """Fits every case; returns {name: (outputs, rows)} of the 201 ones."""
    fitted = {}
    for dname, (X, y, two, three) in datasets().items():
        # two outputs: y, and a second of ordinary size
        y2 = [[v, float(i)] for i, v in enumerate(y)]
        targets = {"y": y, "y2": y2, "two": two, "three": three}
        probe = X + [[0.0, 0.0], [1.0, -1.0]]
        for cname, algo, params, tkind, extra, outputs in configs(len(X)):
            for kname, kernel in KERNELS.items():
                if cname == "krr-rff" and kname != "rbf":
                    continue  # rff needs a shift-invariant kernel
                if dname not in ONLY_ON.get(kname, (dname,)) or (
                        dname == "x1e10" and kname != "poly"):
                    continue
                name = f"{cname}.{dname}.{kname}"
                if name in SLOW:
                    continue
                body = {"algorithm": algo, "kernel": kernel,
                        "params": params, "X": X}
                if tkind:
                    body["y"] = targets[tkind]
                body.update(extra)
                r = d.req("POST", f"/v1/models/{name}/fit", body,
                          timeout=FIT_TIMEOUT * 3)
                if r.status == 201:
                    fitted[name] = (outputs, probe)
                    continue
                msg = ((r.json() or {}).get("error") or {}).get("message")
                check(400 <= r.status < 500 and bool(msg) and
                      "--fit-timeout" not in msg,
                      f"{name}: a refused fit is a 4xx with a message (and "
                      "ends)", r)
    return fitted


def answers(d, fitted):
    """Every answer of every fitted model, as (status, body text)."""
    out = {}
    for name, (outputs, probe) in sorted(fitted.items()):
        meta = d.req("GET", f"/v1/models/{name}")
        out[(name, "meta")] = (meta.status, meta.body)
        for path, extra in outputs:
            for rows in ("own", "probe"):
                X = probe if rows == "probe" else probe[:-2]
                if extra.get("inverse"):
                    ncomp = json.loads(meta.body)["params"]["n_components"]
                    X = [[v[0] if v else 0.0] * ncomp for v in X]
                body = dict(extra, X=X)
                r = d.req("POST", f"/v1/models/{name}/{path}", body)
                out[(name, path, json.dumps(extra), rows)] = (r.status, r.body)
    return out


def body(d):
    models = d.models
    fitted = fit_all(d)
    run.tally.note(f"{len(fitted)} models fitted")
    check(len(fitted) > 200, "most extreme fits are accepted", len(fitted))
    before = answers(d, fitted)
    for name in sorted(fitted):
        bad = [(k[1:], s, t[:300]) for k, (s, t) in before.items()
               if k[0] == name and s >= 500]
        check(not bad, f"{name}: every output answers without 5xx", bad)
    for name, key in (("krr-exact.yhuge.rbf", "rkhs_norm_sq"),
                      ("krr-2out.yhuge.rbf", "rkhs_norm_sq")):
        meta = json.loads(before[(name, "meta")][1])
        check(key in meta["training"] and meta["training"][key] is None,
              f"{name}: {key}, not a finite number, is shown as null",
              meta["training"])

    d.stop()
    d.start()
    listed = {m["name"] for m in d.req("GET", "/v1/models").json()["models"]}
    lost = sorted(set(fitted) - listed)
    check(not lost, "restart: every acknowledged model is listed", lost)
    aside = sorted(f for f in os.listdir(models) if ".corrupt-" in f)
    check(not aside, "restart: no model file quarantined", aside)
    after = answers(d, fitted)
    for name in sorted(fitted):
        differ = [(k[1:], before[k], after.get(k)) for k in before
                  if k[0] == name and before[k] != after.get(k)]
        check(not differ, f"{name}: after a restart, the same metadata and "
              "answers byte for byte", differ[:2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server",
                    default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    # tiny problems: one BLAS thread, no spinning threads on a busy machine
    return run.with_daemon(args.server, "kmserve-durable-", body,
                           "--blas-threads", "1",
                           "--fit-timeout", str(FIT_TIMEOUT))


if __name__ == "__main__":
    sys.exit(main())
