#!/usr/bin/python3
"""POST /v1/models/{name}/score over HTTP, against metrics computed here.

Fits krr (one and two outputs), svc (with and without probability, string
labels), svr and kpca (with and without the inverse map) over HTTP on
tests/fixtures/score_X.txt (gen_score_refs.py), asks /score, and compares
every figure, to 1e-12, with the same metric computed in this file in
plain Python (written from sklearn.metrics' definitions, independently of
core/select/km_score.c) from the answers of /predict and /project for the same
rows; the training figures (training_score, rkhs_norm_sq, margin) against
the scikit-learn fixtures where those apply. Bad bodies answer 4xx naming
the field.

Standard library only. Usage, from the project root:
    /usr/bin/python3 tests/integration/score.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

EPS = 2.0 ** -52  # numpy's finfo(float64).eps: log_loss's clipping
TIGHT = 1e-12
GAMMA = 0.5
RBF = {"type": "rbf", "gamma": GAMMA}


rows = run.fixture_rows


def close(a, b, tol=TIGHT):
    return (a is not None and b is not None and
            abs(a - b) <= tol * max(1.0, abs(b)))


# ------------------------------------------------------- metrics, by hand

def regression(Y, P):
    """r2, mse, mae as sklearn.metrics (uniform average over outputs; r2 of
    a constant output 1 if predicted exactly, else 0; None for one row)."""
    n, m = len(Y), len(Y[0])
    r2s, mses, maes = [], [], []
    for j in range(m):
        y = [r[j] for r in Y]
        e = [r[j] - p[j] for r, p in zip(Y, P)]
        mean = math.fsum(y) / n
        num = math.fsum(v * v for v in e)
        den = 0.0 if all(v == y[0] for v in y) else math.fsum((v - mean) ** 2 for v in y)
        r2s.append(1.0 if num == 0 else 0.0 if den == 0 else 1 - num / den)
        mses.append(num / n)
        maes.append(math.fsum(abs(v) for v in e) / n)
    return {"r2": None if n < 2 else math.fsum(r2s) / m,
            "mse": math.fsum(mses) / m, "mae": math.fsum(maes) / m}


def classes(labels, truth, pred, proba=None):
    """accuracy, balanced accuracy (over labels present in truth),
    precision and recall per label (0 when undefined), the confusion
    matrix (rows: truth), log loss (clipped, renormalised)."""
    idx = {l: i for i, l in enumerate(labels)}
    k = len(labels)
    cm = [[0] * k for _ in range(k)]
    for t, p in zip(truth, pred):
        cm[idx[t]][idx[p]] += 1
    rows_ = [sum(r) for r in cm]
    cols = [sum(cm[t][c] for t in range(k)) for c in range(k)]
    recall = [cm[c][c] / rows_[c] if rows_[c] else 0.0 for c in range(k)]
    precision = [cm[c][c] / cols[c] if cols[c] else 0.0 for c in range(k)]
    present = [recall[c] for c in range(k) if rows_[c]]
    out = {"accuracy": sum(t == p for t, p in zip(truth, pred)) / len(truth),
           "balanced_accuracy": math.fsum(present) / len(present),
           "labels": labels, "precision": precision, "recall": recall,
           "confusion_matrix": cm}
    if proba is not None:
        losses = []
        for t, row in zip(truth, proba):
            c = [min(max(v, EPS), 1 - EPS) for v in row]
            s = 0.0
            for v in c:
                s += v
            losses.append(-math.log(c[idx[t]] / s))
        out["log_loss"] = math.fsum(losses) / len(losses)
    return out


def same_figures(got, want):
    if set(got) != set(want):
        return False
    for key, w in want.items():
        g = got[key]
        if isinstance(w, list):
            flat_w = [v for r in w for v in (r if isinstance(r, list) else [r])]
            flat_g = [v for r in g for v in (r if isinstance(r, list) else [r])]
            if len(flat_w) != len(flat_g) or not all(
                    (a == b) if isinstance(b, (str, int)) and not isinstance(b, float)
                    else close(a, b) for a, b in zip(flat_g, flat_w)):
                return False
        elif w is None:
            if g is not None:
                return False
        elif not close(g, w):
            return False
    return True


# ------------------------------------------------------- the runner

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    check = run.check

    def fit(d, name, body):
        r = d.req("POST", f"/v1/models/{name}/fit", body)
        check(r.status == 201, f"{name}: fit 201", r)
        return (r.json() or {}).get("model", {})

    def score(d, name, body, status=200):
        r = d.req("POST", f"/v1/models/{name}/score", body)
        ok = r.status == status
        if not ok:
            check(False, f"{name}: score {status}", r)
        return r, (r.json() or {})

    def predict(d, name, X, **extra):
        return (d.req("POST", f"/v1/models/{name}/predict", dict(X=X, **extra)).json()
                or {}).get("predictions")

    def body(d):
        X = rows("score_X.txt", 3)
        n = len(X)

        # krr, two outputs, on its training rows
        Y = rows("score_krr_Y.txt", 2)
        kref = run.read_fixture("score_krr_ref.txt")
        meta = fit(d, "krr2", {"algorithm": "krr", "kernel": RBF,
                               "params": {"alpha": 0.7}, "X": X, "y": Y})
        r, a = score(d, "krr2", {"X": X, "y": Y})
        want = regression(Y, predict(d, "krr2", X))
        check(a.get("model") == {"name": "krr2", "version": 1} and a.get("n") == n and
              same_figures(a.get("scoring", {}), want),
              "krr, 2 outputs: r2, mse, mae equal the metrics of /predict to 1e-12",
              (a, want))
        tr = meta.get("training", {})
        check(tr.get("training_score") == a.get("scoring", {}).get("r2"),
              "krr: training_score is the score of the training rows, exactly", tr)
        check(close(a.get("scoring", {}).get("r2"), kref[2], 1e-10),
              "krr: training r2 equals scikit-learn's KernelRidge to 1e-10",
              (a, kref[2]))
        norms = tr.get("rkhs_norm_sq", [])
        check(len(norms) == 2 and all(close(g, w, 1e-9) for g, w in zip(norms, kref[:2])),
              "krr: rkhs_norm_sq per output equals a^T K a of scikit-learn's to 1e-9",
              (norms, kref[:2]))

        # krr, one output, fitted on 40 rows and scored on the other 20;
        # one row (r2 null), a constant y (r2 0)
        y1 = [r_[0] for r_ in Y]
        fit(d, "krr1", {"algorithm": "krr", "kernel": RBF, "params": {"alpha": 0.3},
                        "X": X[:40], "y": y1[:40]})
        P = predict(d, "krr1", X[40:])
        r, a = score(d, "krr1", {"X": X[40:], "y": y1[40:]})
        want = regression([[v] for v in y1[40:]], [[v] for v in P])
        check(same_figures(a.get("scoring", {}), want),
              "krr on held-out rows: the metrics of /predict", (a, want))
        r, a = score(d, "krr1", {"X": X[40:41], "y": y1[40:41]})
        check(r.status == 200 and a.get("scoring", {}).get("r2", 0) is None and
              close(a["scoring"].get("mse"), (y1[40] - P[0]) ** 2),
              "krr, one row: r2 is null (not defined), mse its squared error", r)
        r, a = score(d, "krr1", {"X": X[40:], "y": [2.5] * 20})
        check(r.status == 200 and a.get("scoring", {}).get("r2") == 0,
              "krr, constant y predicted otherwise: r2 is 0", r)
        r, a = score(d, "krr1", {"X": X[40:], "y": [[v] for v in y1[40:]]})
        check(r.status == 200 and same_figures(a.get("scoring", {}), want),
              "krr, one output given as rows of one: the same figures", r)

        # svc with string labels: without probability, then with
        names = ["ant", "bee", "cat"]
        lab = [names[int(v)] for v in run.read_fixture("score_svc_y.txt")]
        sref = run.read_fixture("score_svc_ref.txt")
        meta = fit(d, "svc", {"algorithm": "svc", "kernel": RBF,
                              "params": {"tol": 1e-10}, "X": X, "y": lab})
        pred = predict(d, "svc", X)
        r, a = score(d, "svc", {"X": X, "y": lab})
        want = classes(names, lab, pred)
        check(same_figures(a.get("scoring", {}), want),
              "svc: accuracy, balanced accuracy, precision, recall and confusion "
              "matrix equal those of /predict's labels (no log_loss without "
              "probabilities)", (a, want))
        tr = meta.get("training", {})
        check(tr.get("training_score") == want["accuracy"] and
              close(want["accuracy"], sref[3]),
              "svc: training_score is the training accuracy, scikit-learn's SVC's",
              (tr, sref[3]))
        margins = tr.get("margin", [])
        check(len(margins) == 3 and all(close(1 / g, w, 1e-6) for g, w in zip(margins, sref[:3])),
              "svc: margin per pair is 1/|w| of scikit-learn's SVC to 1e-6", (margins, sref[:3]))
        # a subset where "cat" is never true: balanced over the labels present
        sub = [i for i in range(n) if lab[i] != "cat"][:25]
        r, a = score(d, "svc", {"X": [X[i] for i in sub], "y": [lab[i] for i in sub]})
        want = classes(names, [lab[i] for i in sub], [pred[i] for i in sub])
        check(same_figures(a.get("scoring", {}), want),
              "svc, a label absent from y: balanced accuracy over those present", (a, want))

        fit(d, "svcp", {"algorithm": "svc", "kernel": RBF,
                        "params": {"probability": True}, "X": X, "y": lab})
        r, a = score(d, "svcp", {"X": X, "y": lab})
        want = classes(names, lab, predict(d, "svcp", X),
                       predict(d, "svcp", X, output="probability"))
        check(same_figures(a.get("scoring", {}), want),
              "svc with probability: log_loss (clipped, renormalised) and the rest "
              "equal those of /predict", (a, want))

        # svr
        ys = run.read_fixture("score_svr_y.txt")
        vref = run.read_fixture("score_svr_ref.txt")
        meta = fit(d, "svr", {"algorithm": "svr", "kernel": RBF,
                              "params": {"C": 2, "epsilon": 0.05, "tol": 1e-10},
                              "X": X, "y": ys})
        r, a = score(d, "svr", {"X": X, "y": ys})
        want = regression([[v] for v in ys], [[v] for v in predict(d, "svr", X)])
        check(same_figures(a.get("scoring", {}), want),
              "svr: r2, mse, mae equal the metrics of /predict", (a, want))
        check(close(meta.get("training", {}).get("training_score"), vref[0], 1e-6) and
              meta["training"]["training_score"] == a["scoring"]["r2"],
              "svr: training_score is the training r2, scikit-learn's SVR's to 1e-6",
              (meta.get("training"), vref))

        # kpca: with the inverse map, and without (409)
        meta = fit(d, "kpca", {"algorithm": "kpca", "kernel": RBF,
                               "params": {"n_components": 2, "alpha": 0.1,
                                          "fit_inverse_transform": True,
                                          "eigen_solver": "dense"}, "X": X})
        proj = (d.req("POST", "/v1/models/kpca/project", {"X": X}).json() or {}).get("projections")
        back = (d.req("POST", "/v1/models/kpca/project",
                      {"X": proj, "inverse": True}).json() or {}).get("projections")
        err = math.fsum((x - b) ** 2 for xr, br in zip(X, back)
                        for x, b in zip(xr, br)) / (n * 3)
        r, a = score(d, "kpca", {"X": X})
        got = a.get("scoring", {})
        check(set(got) == {"reconstruction_error"} and close(got["reconstruction_error"], err),
              "kpca: reconstruction_error equals the mean squared difference of "
              "/project and its inverse", (a, err))
        check(close(got.get("reconstruction_error"),
                    run.read_fixture("score_kpca_ref.txt")[0], 1e-9) and
              meta.get("training", {}).get("training_score") == -got.get("reconstruction_error"),
              "kpca: against scikit-learn's KernelPCA; training_score is minus it",
              (got, meta.get("training")))
        meta = fit(d, "kpca0", {"algorithm": "kpca", "kernel": RBF,
                                "params": {"n_components": 2}, "X": X})
        check("training_score" not in meta.get("training", {}),
              "kpca without the inverse map: no training_score", meta.get("training"))
        r, a = score(d, "kpca0", {"X": X}, 409)
        check(r.status == 409 and "fit_inverse_transform" in r.body,
              "kpca without the inverse map: 409 naming fit_inverse_transform", r)

        # hostile bodies: 4xx naming the field
        bad = [
            ("krr1", {"X": [[1, 2, 3], [1, 2]], "y": [1, 2]}, 400, "X[1]", "ragged X"),
            ("krr1", '{"X": [[1, 2, NaN]], "y": [1]}', 400, "", "NaN token"),
            ("krr1", '{"X": [[1, 2, 1e400]], "y": [1]}', 400, "X[0][2]", "1e400 in X"),
            ("krr1", {"X": [[1, 2, "3"]], "y": [1]}, 400, "X[0][2]", "a string in X"),
            ("krr1", {"X": [], "y": []}, 400, "X", "empty X"),
            ("krr1", {"X": [[1, 2]], "y": [1]}, 400, "the model expects 3", "wrong feature count"),
            ("krr1", {"X": [[1, 2, 3]]}, 400, "y is required", "y missing"),
            ("krr1", {"X": [[1, 2, 3]], "y": 1}, 400, "y must be an array", "y not an array"),
            ("krr1", {"X": [[1, 2, 3]], "y": [1, 2]}, 400, "y has 2 entries; X has 1 rows",
             "y length mismatch"),
            ("krr1", {"X": [[1, 2, 3]], "y": ["1"]}, 400, "y[0]", "a string target"),
            ("krr1", '{"X": [[1, 2, 3]], "y": [1e400]}', 400, "y[0] is not a finite",
             "1e400 in y"),
            ("krr1", {"X": [[1, 2, 3]], "y": [1], "output": "x"}, 400, "output",
             "an unknown member"),
            ("krr2", {"X": [[1, 2, 3]], "y": [1]}, 400, "y[0]", "one number for two outputs"),
            ("krr2", {"X": [[1, 2, 3]], "y": [[1, 2, 3]]}, 400, "y[0]", "a row of three"),
            ("svc", {"X": [[1, 2, 3], [0, 0, 0]], "y": ["ant", "zebra"]}, 422, "y[1]",
             "a label the model does not know"),
            ("svc", {"X": [[1, 2, 3]], "y": [0]}, 400, "y[0]", "a number for string labels"),
            ("kpca", {"X": [[1, 2, 3]], "y": [1]}, 400, "y does not apply", "y for kpca"),
            ("nosuch", {"X": [[1, 2, 3]], "y": [1]}, 404, "nosuch", "no such model"),
        ]
        for name, b, status, text, what in bad:
            r = d.req("POST", f"/v1/models/{name}/score", b,
                      headers=[("Content-Type", "application/json")] if isinstance(b, str) else None)
            check(r.status == status and text in r.body and '"error"' in r.body,
                  f"bad body, {what}: {status} naming it", r)
        r = d.req("GET", "/v1/models/krr1/score")
        check(r.status == 405 and r.headers.get("allow") == "POST", "GET on /score: 405, Allow: POST", r)

    return run.with_daemon(args.server, "kmserve-score-", body)


if __name__ == "__main__":
    sys.exit(main())
