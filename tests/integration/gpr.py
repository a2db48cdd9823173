#!/usr/bin/python3
"""Gaussian-process regression (algorithm gpr) over HTTP, against
scikit-learn's GaussianProcessRegressor (tests/fixtures/gen_gpr_refs.py).

Fits with fixed hyperparameters (cases a and b of the generator, b with
normalize_y) predict the mean (the default output and output "mean"),
std, var and a batch's cov, and show the log marginal likelihood, as
sklearn's to 1e-8 relative; a fit with optimizer lbfgs from the
generator's start finds sklearn's optimum to 1e-4 in (log s, log l,
log noise); a search of gpr points refits its best. Output cov above
1000 rows, an output gpr does not give, a
gpr output asked of krr, bad params (each named), y of two columns and a
kernel matrix that cannot be factored are refused; score answers r2, mse
and mae of the mean; the model file holds algorithm id GPR_ID and every
answer survives a restart bit for bit.

The nystrom solver (tests/fixtures/gen_gpr_nystrom_refs.py): a fit with
params.solver "nystrom", params.seed 7 and params.variance true answers
the mean, std and var of the formulas in numpy on the centres core's
draw picks (1e-8) and shows their log marginal likelihood; its file is
format version 6; without params.variance the same mean, and std, var
and cov are 409 naming params.variance; the optimizer with nystrom, n_centres
0 (400) and above the rows (422), and variance without nystrom are
refused; under --memory-budget-mb 1 the exact fit of its 400 rows is 413
while the nystrom fit, and auto (which resolves to it), are admitted.

Standard library only. Usage, from the project root:
    /usr/bin/python3 tests/integration/gpr.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import math
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

GPR_ID = 4  # gpr's stored algorithm id (as tests/core/test_km_model.c)
DIM = 3
TOL = 1e-8
CASES = {  # gen_gpr_refs.py's: s, l, noise, normalize_y
    "a": (2.0, 1.3, 0.05, False),
    "b": (0.7, 0.8, 0.01, True),
}


def rows(name):
    return run.fixture_rows(name, DIM)


def rbf(l):
    return {"type": "rbf", "gamma": 1.0 / (2.0 * l * l)}


def fit(d, name, kernel, params, X, y):
    return d.req("POST", f"/v1/models/{name}/fit",
                 {"algorithm": "gpr", "kernel": kernel, "params": params,
                  "X": X, "y": y})


def predict(d, name, X, output=None):
    body = {"X": X}
    if output:
        body["output"] = output
    r = d.req("POST", f"/v1/models/{name}/predict", body)
    return r, (r.json() or {}).get("predictions")


def near(got, want, tol=TOL):
    return (isinstance(got, list) and len(got) == len(want) and
            run.max_rel(got, want) <= tol)


def fixed_cases(d, X, T, y, answers):
    for case, (s, l, noise, norm) in CASES.items():
        name = f"gpr-{case}"
        params = {"noise": noise, "signal_variance": s, "normalize_y": norm}
        r = fit(d, name, rbf(l), params, X, y)
        meta = (r.json() or {}).get("model", {})
        run.check(r.status == 201 and meta.get("algorithm") == "gpr" and
                  meta.get("params") == dict(params, optimizer="none"),
                  f"case {case}: fit 201; metadata shows the params given "
                  "and optimizer none", r)
        lml = meta.get("training", {}).get("log_marginal_likelihood")
        want = run.read_fixture(f"gpr_{case}_lml.txt")
        run.check(lml is not None and near([lml], want),
                  f"case {case}: log marginal likelihood as sklearn's to 1e-8",
                  (lml, want))
        mean = run.read_fixture(f"gpr_{case}_mean.txt")
        std = run.read_fixture(f"gpr_{case}_std.txt")
        cov = run.read_fixture(f"gpr_{case}_cov.txt")
        for output, want in ((None, mean), ("mean", mean), ("std", std),
                             ("var", [v * v for v in std])):
            r, got = predict(d, name, T, output)
            run.check(r.status == 200 and near(got, want),
                      f"case {case}: output {output or '(default)'} as "
                      "sklearn's to 1e-8", r)
            answers[(name, output)] = got
        r, got = predict(d, name, T[:8], "cov")
        flat = [v for row in got or [] for v in row]
        run.check(r.status == 200 and len(got or []) == 8 and
                  near(flat, cov),
                  f"case {case}: output cov of 8 rows (8 x 8) as sklearn's "
                  "to 1e-8", r)
        answers[(name, "cov")] = got


def optimizer(d, X, y):
    r = fit(d, "gpr-opt", rbf(1.0),
            {"noise": 0.1, "signal_variance": 1.0, "optimizer": "lbfgs"}, X, y)
    meta = (r.json() or {}).get("model", {})
    tr = meta.get("training", {})
    run.check(r.status == 201 and meta.get("params") == {
        "noise": 0.1, "signal_variance": 1.0, "normalize_y": False,
        "optimizer": "lbfgs", "n_restarts": 0, "seed": 0, "max_iter": 200},
        "optimizer lbfgs: fit 201; metadata shows its params", r)
    gamma = meta.get("kernel", {}).get("gamma", 1)
    try:
        theta = [math.log(tr["signal_variance"]),
                 -0.5 * math.log(2 * gamma), math.log(tr["noise"])]
    except (KeyError, TypeError, ValueError):
        theta = [0, 0, 0]
    want = run.read_fixture("gpr_opt_plain_theta.txt")
    run.check(max(abs(a - b) for a, b in zip(theta, want)) <= 1e-4 and
              tr.get("gamma") == gamma,
              "optimizer lbfgs: sklearn's optimum to 1e-4 in log-parameters; "
              "the kernel holds the tuned gamma", (theta, want))
    lml = tr.get("log_marginal_likelihood")
    run.check(lml is not None and near([lml], run.read_fixture(
        "gpr_opt_plain_lml.txt"), 1e-7) and
        tr.get("initial_log_marginal_likelihood", 0) < lml,
        "optimizer lbfgs: the optimum's likelihood as sklearn's; above the "
        "start's", tr)


def score(d, T):
    truth = [math.sin(2 * r[0]) + r[1] ** 2 / 2 - r[2] + 3 for r in T]
    r = d.req("POST", "/v1/models/gpr-a/score", {"X": T, "y": truth})
    got = (r.json() or {}).get("scoring", {})
    _, mean = predict(d, "gpr-a", T)
    n = len(truth)
    mu = sum(truth) / n
    mse = sum((a - b) ** 2 for a, b in zip(mean, truth)) / n
    mae = sum(abs(a - b) for a, b in zip(mean, truth)) / n
    r2 = 1 - mse * n / sum((t - mu) ** 2 for t in truth)
    ok = all(abs(got.get(k, 1e9) - v) <= 1e-12 * max(1, abs(v))
             for k, v in (("r2", r2), ("mse", mse), ("mae", mae)))
    run.check(r.status == 200 and ok, "score: r2, mse and mae of the mean",
              (r, r2, mse, mae))


def search(d, X, y):
    r = d.req("POST", "/v1/models/gpr-search/fit",
              {"algorithm": "gpr", "kernel": {"type": "rbf"}, "X": X, "y": y,
               "params": {"noise": 0.1},
               "search": {"params": {"noise": [0.01, 0.1],
                                     "kernel.gamma": [0.1, 1]},
                          "cv": {"folds": 3}}})
    meta = (r.json() or {}).get("model", {})
    best = meta.get("search", {}).get("best_params", {})
    run.check(r.status == 201 and meta.get("params", {}).get("noise") ==
              best.get("noise") and meta.get("kernel", {}).get("gamma") ==
              best.get("kernel.gamma") and
              meta.get("search", {}).get("n_points") == 4,
              "a 3-fold search of gpr points refits its best point", r)


def refusals(d, X, T, y):
    big = [[0.1, 0.2, 0.3]] * 1001
    r, _ = predict(d, "gpr-a", big, "cov")
    run.check(r.status == 400 and "output cov answers at most 1000 rows" in
              r.body, "output cov of 1001 rows: 400 naming the limit", r)
    r, _ = predict(d, "gpr-a", T, "label")
    run.check(r.status == 400 and "output must be one of mean, std, var, cov"
              in r.body, "output label of a gpr model: 400 listing its "
              "outputs", r)
    r = d.req("POST", "/v1/models/gpr-krr/fit",
              {"algorithm": "krr", "kernel": {"type": "rbf"}, "X": X, "y": y})
    r, _ = predict(d, "gpr-krr", T, "std")
    run.check(r.status == 400 and "output applies only to" in r.body and
              "gpr" in r.body, "output std of a krr model: 400", r)
    lin = {"type": "linear"}
    for params, text, what in (
            ({"noise": 0}, "params.noise", "noise 0"),
            ({"signal_variance": -1}, "params.signal_variance",
             "signal_variance -1"),
            ({"optimizer": "adam"}, "params.optimizer must be one of none, "
             "lbfgs", "optimizer adam"),
            ({"n_restarts": 2}, 'params.n_restarts applies only with '
             'params.optimizer \\"lbfgs\\"', "n_restarts without lbfgs"),
            ({"optimizer": "lbfgs", "n_restarts": 101}, "params.n_restarts",
             "n_restarts 101"),
            ({"optimizer": "lbfgs", "max_iter": 0}, "params.max_iter",
             "max_iter 0"),
            ({"normalize_y": 1}, "params.normalize_y", "normalize_y 1"),
            ({"alpha": 1}, "params.alpha is not a known field", "alpha")):
        r = fit(d, "gpr-bad", rbf(1.0), params, X, y)
        run.check(r.status == 400 and text in r.body,
                  f"{what}: 400 naming the field", r)
    r = fit(d, "gpr-bad", rbf(1.0), {}, X[:4], [[1, 2]] * 4)
    run.check(r.status == 400 and "y[0]" in r.body, "y of rows: 400", r)
    r = d.req("POST", "/v1/models/gpr-bad/fit",
              {"algorithm": "gpr", "kernel": lin, "X": X})
    run.check(r.status == 400 and "y" in r.body, "no y: 400", r)
    Xr = [[i, i % 3] for i in range(20)]
    r = fit(d, "gpr-bad", lin, {"noise": 1e-300}, Xr, list(range(20)))
    run.check(r.status == 422 and "params.noise" in r.body,
              "a kernel matrix that cannot be factored: 422 naming "
              "params.noise", r)
    run.check(d.req("GET", "/v1/models/gpr-bad").status == 404,
              "nothing created by the refused fits")


NYS = {"solver": "nystrom", "n_centres": 40, "seed": 7, "noise": 0.05,
       "signal_variance": 1.0, "cg_tol": 1e-14, "cg_max_iter": 1000}
NYS_KERNEL = {"type": "rbf", "gamma": 0.3}


def nystrom(d, answers):
    X, T = rows("gprn_X.txt"), rows("gprn_T.txt")
    y = run.read_fixture("gprn_y.txt")
    r = fit(d, "gpr-nys", NYS_KERNEL, dict(NYS, variance=True), X, y)
    meta = (r.json() or {}).get("model", {})
    tr = meta.get("training", {})
    run.check(r.status == 201 and meta.get("n_samples") == 40 and
              meta.get("params") == dict(NYS, variance=True,
                                         normalize_y=False, optimizer="none",
                                         centres="uniform",
                                         keep_factor=False) and
              tr.get("solver") == "nystrom" and tr.get("residual", 1) <= 1e-14,
              "nystrom: fit 201; metadata shows its params, 40 centres, the "
              "solver and the residual", r)
    lml = tr.get("log_marginal_likelihood")
    want = run.read_fixture("gprn_seed_lml.txt")
    run.check(lml is not None and near([lml], want),
              "nystrom: the approximation's log marginal likelihood as "
              "numpy's to 1e-8", (lml, want))
    mean = run.read_fixture("gprn_seed_mean.txt")
    var = run.read_fixture("gprn_seed_var.txt")
    for output, want in ((None, mean), ("mean", mean), ("var", var),
                         ("std", [math.sqrt(v) for v in var])):
        r, got = predict(d, "gpr-nys", T, output)
        run.check(r.status == 200 and near(got, want),
                  f"nystrom: output {output or '(default)'} as numpy's DTC "
                  "formulas to 1e-8", r)
        answers[("gpr-nys", output)] = got
    r, got = predict(d, "gpr-nys", T[:8], "cov")
    run.check(r.status == 200 and len(got or []) == 8 and
              all(abs(got[i][i] - var[i]) <= 1e-12 for i in range(8)),
              "nystrom: output cov's diagonal is var", r)
    answers[("gpr-nys", "cov")] = got
    with open(os.path.join(d.models, "gpr-nys.kmm"), "rb") as f:
        head = f.read()
    run.check(struct.unpack("<I", head[8:12])[0] == GPR_ID and
              run.kmm_formats(head) == (8, 6),
              "nystrom: its model file is format version 8 (a drift "
              "reference) with version 6's payload", head[:12])

    r = fit(d, "gpr-nys-mean", NYS_KERNEL, NYS, X, y)
    tr = (r.json() or {}).get("model", {}).get("training", {})
    run.check(r.status == 201 and "log_marginal_likelihood" not in tr,
              "nystrom without variance: fit 201, no likelihood", r)
    r, got = predict(d, "gpr-nys-mean", T)
    run.check(r.status == 200 and got == answers[("gpr-nys", None)],
              "nystrom without variance: the same mean", r)
    for output in ("std", "var", "cov"):
        r, _ = predict(d, "gpr-nys-mean", T[:4], output)
        run.check(r.status == 409 and "params.variance: true" in r.body and
                  f"{output} is not available" in r.body,
                  f"nystrom without variance: output {output} is 409 naming "
                  "params.variance", r)
    for params, status, text, what in (
            (dict(NYS, optimizer="lbfgs"), 400,
             "params.optimizer lbfgs needs params.solver exact",
             "optimizer lbfgs with nystrom"),
            (dict(NYS, n_centres=0), 400, "params.n_centres", "n_centres 0"),
            (dict(NYS, n_centres=401), 422,
             "params.n_centres is 401 but X has 400 rows", "n_centres 401"),
            ({"variance": True}, 400, "params.variance applies only with "
             'params.solver \\"nystrom\\"', "variance with exact"),
            (dict(NYS, cg_tol=0), 400, "params.cg_tol", "cg_tol 0")):
        r = fit(d, "gpr-bad", NYS_KERNEL, params, X, y)
        run.check(r.status == status and text in r.body,
                  f"nystrom: {what}: {status} naming the field", r)


def small_budget(server):
    X, y = rows("gprn_X.txt"), run.read_fixture("gprn_y.txt")
    with run.temp_daemon(server, "kmserve-gpr-budget-",
                         "--memory-budget-mb", "1") as d:
        r = fit(d, "gpr-exact", NYS_KERNEL, {"noise": 0.05}, X, y)
        run.check(r.status == 413, "1 MiB budget: the exact fit of 400 "
                  "rows is 413", r)
        r = fit(d, "gpr-nys", NYS_KERNEL, dict(NYS, variance=True), X, y)
        run.check(r.status == 201, "1 MiB budget: its nystrom fit of 40 "
                  "centres with the variance is admitted", r)
        r = fit(d, "gpr-auto", NYS_KERNEL,
                dict(NYS, solver="auto", variance=True), X, y)
        meta = (r.json() or {}).get("model", {})
        run.check(r.status == 201 and meta.get("params", {}).get("solver") ==
                  "auto" and meta.get("training", {}).get("solver") ==
                  "nystrom" and meta.get("n_samples") == 40,
                  "1 MiB budget: auto resolves to nystrom and says so", r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    X, T, y = rows("gpr_X.txt"), rows("gpr_T.txt"), run.read_fixture("gpr_y.txt")

    def body(d):
        answers = {}
        fixed_cases(d, X, T, y, answers)
        optimizer(d, X, y)
        score(d, T)
        search(d, X, y)
        refusals(d, X, T, y)
        nystrom(d, answers)
        small_budget(args.server)
        with open(os.path.join(d.models, "gpr-a.kmm"), "rb") as f:
            head = f.read(12)
        run.check(head[:4] == b"KMSM" and
                  struct.unpack("<I", head[8:12])[0] == GPR_ID,
                  f"the model file holds algorithm id {GPR_ID}", head)
        d.stop()
        d.start()
        Tn = rows("gprn_T.txt")
        for (name, output), want in answers.items():
            Tm = Tn if name == "gpr-nys" else T
            r, got = predict(d, name, Tm[:8] if output == "cov" else Tm,
                             output)
            run.check(r.status == 200 and got == want,
                      f"{name} output {output}: the same answer after a "
                      "restart (loaded from its file)", r)

    return run.with_daemon(args.server, "kmserve-gpr-", body)


if __name__ == "__main__":
    sys.exit(main())
