#!/usr/bin/python3
"""Preprocessing kept in the model, over HTTP. Each case of
tests/fixtures/pre_cases.py is fitted with its "preprocess" member and
must answer what the scikit-learn Pipeline of gen_pre_refs.py answers:
krr predictions and kpca projections and inverse map to 1e-10 relative
(floor 1e-3 of the largest reference value), svc labels exactly, svc
decision values and svr predictions to 1e-6 (SMO and LIBSVM stop at
different points of the same optimum, as in kernels.py). Metadata shows
the statistics (x_shift, x_scale equal to the scaler's to 1e-15; y_mean;
the arrays only where they apply), and the same after a restart of the
daemon, which then predicts the same numbers bit for bit. Bad preprocess
members are 400 with a message naming the field.
Usage, from the project root:
    /usr/bin/python3 tests/integration/preprocess.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures"))
import run  # noqa: E402
from pre_cases import CASES, N_TEST, N_TRAIN, dataset, read_rows  # noqa: E402

check = run.check


def flat(v):
    out = []
    for x in v:
        out.extend(flat(x) if isinstance(x, list) else [x])
    return out


def fixture(name, what):
    return run.read_fixture(f"pre_{name}_{what}.txt")


def rel(got, want):
    floor = 1e-3 * max(abs(v) for v in want)
    if len(got) != len(want):
        return float("inf")
    return run.max_rel(got, want, floor)


def answers(d, name, case, T):
    """Every answer of the case's model on the test rows, by kind."""
    a = case["algorithm"]
    out = {}
    if a == "kpca":
        r = d.req("POST", f"/v1/models/{name}/project", {"X": T})
        out["proj"] = flat((r.json() or {}).get("projections", []))
        P = fixture(name, "proj")
        k = case["params"]["n_components"]
        r = d.req("POST", f"/v1/models/{name}/project",
                  {"X": [P[i:i + k] for i in range(0, len(P), k)], "inverse": True})
        out["inverse"] = flat((r.json() or {}).get("projections", []))
    elif a == "svc":
        r = d.req("POST", f"/v1/models/{name}/predict", {"X": T})
        out["labels"] = (r.json() or {}).get("predictions", [])
        r = d.req("POST", f"/v1/models/{name}/predict",
                  {"X": T, "output": "decision_function"})
        out["pred"] = flat((r.json() or {}).get("predictions", []))
    else:
        r = d.req("POST", f"/v1/models/{name}/predict", {"X": T})
        out["pred"] = flat((r.json() or {}).get("predictions", []))
    return out


def check_answers(name, case, got):
    a = case["algorithm"]
    tol = 1e-6 if a in ("svc", "svr") else 1e-10
    for what, values in got.items():
        if what == "labels":
            want = [int(v) for v in fixture(name, "labels")]
            check(values == want, f"{name}: labels equal scikit-learn's",
                  (values[:5], want[:5]))
            continue
        want = fixture(name, what)
        e = rel(values, want)
        check(e <= tol, f"{name}: {what} equal scikit-learn's to {tol:g} "
              f"(off by {e:.2g})", (values[:3], want[:3]))


def check_metadata(name, case, meta, d_in, m_out):
    pre = meta.get("preprocess") or {}
    check(pre.get("scale") == case["scale"] and
          pre.get("center_y") == case["center_y"],
          f"{name}: metadata shows preprocess as given", pre)
    keys = {"scale", "center_y"}
    if case["scale"] != "none":
        keys |= {"x_shift", "x_scale"}
    if case["center_y"]:
        keys.add("y_mean")
    check(set(pre) == keys, f"{name}: metadata shows the arrays that apply",
          sorted(pre))
    if case["scale"] != "none":
        shift, scale = pre.get("x_shift", []), pre.get("x_scale", [])
        st = fixture(name, "stats")
        a, b = st[:d_in], st[d_in:]
        if case["scale"] == "standardize":  # mean_, scale_
            e = max(abs(s - m) / max(abs(m), 1e-300) for s, m in zip(shift, a))
            e = max([e] + [abs(s - m) / m for s, m in zip(scale, b)])
        else:  # x scale_ + min_ = (x - shift) / scale
            e = max(abs(1 / s - m) / m for s, m in zip(scale, a))
            e = max([e] + [abs(-h / s - m) / max(abs(m), 1)
                           for h, s, m in zip(shift, scale, b)])
        check(len(shift) == d_in and len(scale) == d_in and e <= 1e-15,
              f"{name}: x_shift, x_scale are the scaler's statistics "
              f"(off by {e:.2g})", (shift[:3], scale[:3]))
    if case["center_y"]:
        want = fixture(name, "ymean")
        got = pre.get("y_mean", [])
        check(len(got) == m_out and run.max_rel(got, want, 1e-300) <= 1e-14,
              f"{name}: y_mean is numpy's", (got, want))


def bad_bodies(d, X, y, labels):
    base = {"algorithm": "krr", "kernel": {"type": "rbf"}, "X": X[:10], "y": y[:10]}
    cases = [
        ("a string", dict(base, preprocess="standardize"),
         "preprocess must be an object"),
        ("an unknown member", dict(base, preprocess={"scale": "minmax", "shift": 1}),
         "preprocess.shift is not a known field; expected one of: scale, center_y"),
        ("an unknown scale", dict(base, preprocess={"scale": "zscore"}),
         "preprocess.scale must be one of none, standardize, minmax"),
        ("a scale that is not a string", dict(base, preprocess={"scale": 1}),
         "preprocess.scale must be one of none, standardize, minmax"),
        ("center_y not a boolean", dict(base, preprocess={"center_y": "yes"}),
         "preprocess.center_y must be true or false"),
        ("statistics given", dict(base, preprocess={"x_shift": [0]}),
         "preprocess.x_shift is not a known field"),
        ("center_y for svc", {"algorithm": "svc", "kernel": {"type": "rbf"},
                              "X": X[:10], "y": labels[:10],
                              "preprocess": {"center_y": True}},
         "preprocess.center_y applies to algorithms that predict values (krr, svr, gpr), not svc"),
        ("center_y for kpca", {"algorithm": "kpca", "kernel": {"type": "rbf"},
                               "X": X[:10], "params": {"n_components": 2},
                               "preprocess": {"center_y": True}},
         "preprocess.center_y applies to algorithms that predict values (krr, svr, gpr), not kpca"),
    ]
    for what, body, text in cases:
        r = d.req("POST", "/v1/models/pre-bad/fit", body)
        err = (r.json() or {}).get("error", {})
        check(r.status == 400 and err.get("code") == "invalid_argument" and
              text in err.get("message", ""), f"preprocess as {what}: 400 naming the field", r)
    r = d.req("GET", "/v1/models/pre-bad")
    check(r.status == 404, "bad preprocess bodies created nothing", r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    feats, labels = read_rows(run.data_file("breast_cancer.csv"))

    def body(d):
        first = {}
        for name, case in CASES.items():
            X, y = dataset(case["data"], feats, labels)
            fit = {"algorithm": case["algorithm"], "kernel": case["kernel"],
                   "params": case["params"], "X": X[:N_TRAIN],
                   "preprocess": {"scale": case["scale"], "center_y": case["center_y"]}}
            if y is not None:
                fit["y"] = y[:N_TRAIN]
            r = d.req("POST", f"/v1/models/{name}/fit", fit)
            check(r.status == 201, f"{name}: fit 201", r)
            meta = (r.json() or {}).get("model", {})
            m_out = len(y[0]) if y and isinstance(y[0], list) else 1
            check_metadata(name, case, meta, len(X[0]), m_out)
            got = answers(d, name, case, X[N_TRAIN:N_TRAIN + N_TEST])
            check_answers(name, case, got)
            first[name] = (got, meta.get("preprocess"))
        # a plain fit shows preprocess none
        X, y = dataset("reg", feats, labels)
        r = d.req("POST", "/v1/models/pre-plain/fit",
                  {"algorithm": "krr", "kernel": {"type": "linear"}, "X": X[:20], "y": y[:20]})
        check(r.status == 201 and (r.json() or {}).get("model", {}).get("preprocess") ==
              {"scale": "none", "center_y": False}, "a fit without preprocess shows none", r)
        Xc, yc = dataset("cls", feats, labels)
        bad_bodies(d, X, y, yc)

        d.stop()
        d.start()
        for name, case in CASES.items():
            X, _ = dataset(case["data"], feats, labels)
            r = d.req("GET", f"/v1/models/{name}")
            got_pre = (r.json() or {}).get("preprocess")
            check(r.status == 200 and got_pre == first[name][1],
                  f"{name}: after a restart metadata shows the same preprocess", r)
            got = answers(d, name, case, X[N_TRAIN:N_TRAIN + N_TEST])
            check(got == first[name][0],
                  f"{name}: after a restart the answers are bit for bit the same")

    return run.with_daemon(args.server, "kmserve-preprocess-", body)


if __name__ == "__main__":
    sys.exit(main())
