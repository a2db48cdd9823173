#!/usr/bin/python3
"""The Python client (clients/python) against the real daemon.

- Install: the package is copied to a temporary folder and installed with
  pip into a fresh venv (python3 -m venv --system-site-packages; pip
  install --no-build-isolation --no-index: no network); the venv's python
  imports it from the venv, and the checks below import that installed
  copy, not the source folder.
- Client: every method against a daemon with admin and read tokens:
  health, info, metrics, fit (sync, async Job, with a progress callback),
  predict (each svc output), project (and inverse), score, search, jobs
  (list, get, wait with progress, cancel), models (list, get, delete);
  answers equal the raw HTTP answers exactly; error answers raise the
  KmserveError subclass of their code with status, code and the server's
  message naming the field; a failed job raises its error with the job;
  GETs are retried after a broken connection and a fit is not (a fake
  server that drops the first connection); TLS with cafile, without (the
  certificate is refused) and with verify=False.
- Estimators against scikit-learn 1.2's own on the same data (breast
  cancer, satellite, digits from data/, scaled to [-1, 1]):
  KernelRidge's predictions to 1e-10 relative (floor 1e-6), SVC's labels
  equal and decision values (binary, multi-class ovr and ovo) and SVR's
  predictions to 1e-6 relative to max(|reference|, 1), both with tol
  1e-8 (see SVM_FLOOR); KernelPCA's eigenvalues and projections (signs
  included: both make each eigenvector's largest entry positive) to
  1e-8, its inverse map to
  1e-6; clone, cross_val_score (equal to scikit-learn's scores to 1e-10)
  and GridSearchCV (the same best parameters, mean scores to 1e-10) and a
  Pipeline; KernelModel(algorithm=...) answers as KernelRidge and works
  in GridSearchCV; models of discarded estimators are deleted, kept ones
  stay; a refit elsewhere raises StaleModel; pickling.
- The estimators of gpr, klr and kkmeans (scenario_new_estimators):
  GaussianProcessRegressor(optimizer=None)'s mean, std and cov equal
  scikit-learn's GaussianProcessRegressor with the same fixed kernel
  (ConstantKernel(1, "fixed") * RBF(1/sqrt(2 gamma), "fixed")) and alpha
  to 1e-9 absolute; KernelLogisticRegression's answers are the server's
  (predict_proba equals Client.predict output probability exactly),
  rows sum to 1 (1e-12), labels are classes_ at the largest probability,
  binary decision_function is the log-odds (1e-9), and the fit meets the
  optimum's conditions in numpy (f - K (y - p) / lambda constant over
  the training rows, sum(y - p) = 0, both to 1e-6), score is numpy's
  accuracy; KernelKMeans' fit_predict equals predict on the training rows
  and labels_; each is a regressor / classifier / clusterer to
  scikit-learn (from the server's capabilities), clones, and runs in
  GridSearchCV.
- partial_fit (scenario_partial_fit): KernelRidge with keep_factor and
  GaussianProcessRegressor(optimizer=None, normalize_y=True) fitted, then
  updated twice, predict as the same estimator fitted on all the rows to
  1e-9 (versions 1 to 3); a nystrom KernelRidge with keep_factor updated
  once predicts as the normal equations of all the rows with its centres
  (read back), solved by numpy, to 1e-6; SVC (string labels) and SVR with keep_rows
  likewise within 1e-2 (SMO's tol), SVC's labels equal on >= 99% of the
  held-out rows; Client.update of a krr model
  without keep_factor raises Conflict naming keep_factor.
- Strings (scenario_strings): Client.fit / predict / score take a list
  of str as X, sent as it is (a list answers lists, a numpy array of str
  arrays), equal to the raw HTTP answer and to numpy's solve on
  tests/strings_ref.py's Gram to 1e-9; one string as X is a TypeError;
  SVC(kernel="spectrum") and KernelRidge on a normalized spectrum kernel
  against scikit-learn's SVC(kernel="precomputed") labels on the
  reference Gram and numpy's solve, cross_val_score on a list of str
  equal to scikit-learn's on the Gram. kernel="precomputed" with a numpy
  Gram (scenario_precomputed): KernelRidge's predictions to 1e-10 and
  SVC's labels as scikit-learn's with kernel="precomputed", and
  cross_val_score cutting the Gram by rows and columns (the pairwise
  tag) equal to scikit-learn's.
- Without numpy and scikit-learn (blocked in a child process of the
  venv's python): lists in and out, the same numbers, get_params /
  set_params, gamma "scale" computed in plain Python.
Usage, from the project root:
    /usr/bin/python3 tests/integration/pyclient.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import gc
import glob
import json
import os
import pickle
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

SOURCE = os.path.join(run.ROOT, "clients", "python")
ADMIN, READ = "admin-" + "a" * 20, "read-" + "r" * 20
# SVC and SVR against scikit-learn: 1e-6 relative to max(|reference|, 1).
# LIBSVM inside scikit-learn keeps kernel values in single precision (its
# cache's Qfloat), which moves its decision values by about 2e-7 here
# whatever tol is (1e-8 to 1e-12 alike), so the floor is the output's
# scale, not a small number.
SVM_FLOOR = 1.0


def rel(a, b, floor):
    """The largest relative difference of two flat sequences."""
    a, b = list(a), list(b)
    if len(a) != len(b):
        return float("inf")
    return max((abs(x - y) / max(abs(y), floor) for x, y in zip(a, b)), default=0.0)


def flat(v):
    return [x for row in v for x in row] if v and isinstance(v[0], (list, tuple)) else list(v)


def install(tmp):
    """A venv with the package pip-installed from a copy of the source;
    its python and site-packages folder, or None."""
    src = os.path.join(tmp, "src")
    shutil.copytree(SOURCE, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                               "__pycache__"))
    venv = os.path.join(tmp, "venv")
    p = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                       capture_output=True, text=True, timeout=300)
    if not check(p.returncode == 0, "python3 -m venv --system-site-packages", p.stderr[-500:]):
        return None
    py = os.path.join(venv, "bin", "python")
    p = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                        "--disable-pip-version-check", "--no-input", src],
                       capture_output=True, text=True, timeout=300)
    if not check(p.returncode == 0 and "Successfully installed kmserve" in p.stdout,
                 "pip install --no-build-isolation --no-index (no network) installs kmserve",
                 p.stdout[-500:] + p.stderr[-1500:]):
        return None
    site = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))[0]
    p = subprocess.run([py, "-c", "import kmserve; print(kmserve.__file__, kmserve.__version__)"],
                       capture_output=True, text=True, timeout=60, cwd=tmp)
    check(p.returncode == 0 and p.stdout.startswith(site),
          "the venv's python imports the installed kmserve", p.stdout + p.stderr[-500:])
    return py, site


# ---------------------------------------------------------------- Client

def scenario_client(km, d, np):
    url = f"http://127.0.0.1:{d.port}"
    c = km.Client(url, token=ADMIN)
    A = [("Authorization", f"Bearer {ADMIN}")]
    check(c.live() and c.ready() and c.health() == {"status": "ready", "models": 0},
          "live, ready, health", c.health())
    info = c.info()
    check(info["name"] == "kmserve" and {"krr", "svc", "svr", "kpca"} <= set(info["algorithms"]),
          "info: GET /v1", info)
    check(c.metrics().startswith("# HELP"), "metrics: the Prometheus text")

    # fit (sync) and predict: the very doubles of the raw answer.
    X, y = run.synthetic(60, 3, 11)
    meta = c.fit("c-krr", X, y, algorithm="krr", kernel={"type": "rbf", "gamma": 0.5},
                 params={"alpha": 0.1})
    check(meta["name"] == "c-krr" and meta["version"] == 1 and meta["n_samples"] == 60,
          "fit: synchronous, returns the metadata", meta)
    got = c.predict("c-krr", X[:7])
    raw = d.req("POST", "/v1/models/c-krr/predict", {"X": X[:7]}, headers=A).json()
    check(isinstance(got, list) and got == raw["predictions"],
          "predict: lists in, the raw answer's doubles out", (got, raw))
    arr = c.predict("c-krr", np.asarray(X[:7]))
    check(isinstance(arr, np.ndarray) and arr.tolist() == raw["predictions"],
          "predict: numpy in, an ndarray of the same doubles out", arr)
    # (a row's prediction may differ in the last bits with the rows sent
    # beside it: the kernel blocks' BLAS sums)
    batched = c.predict("c-krr", X, batch_size=7)
    check(len(batched) == 60 and rel(batched, c.predict("c-krr", X), 1e-6) <= 1e-12,
          "predict: batches of 7 rows give the same answer")
    forced = km.Client(url, token=ADMIN, numpy=True).predict("c-krr", X[:7])
    lists = km.Client(url, token=ADMIN, numpy=False).predict("c-krr", np.asarray(X[:7]))
    check(isinstance(forced, np.ndarray) and isinstance(lists, list) and
          forced.tolist() == lists, "numpy=True / False force the answer's type")

    # score against metrics computed from the predictions.
    answer = c.score("c-krr", X, y)
    pred = c.predict("c-krr", X)
    mean = sum(y) / len(y)
    r2 = 1 - sum((a - b) ** 2 for a, b in zip(y, pred)) / sum((a - mean) ** 2 for a in y)
    check(answer["n"] == 60 and abs(answer["scoring"]["r2"] - r2) <= 1e-12,
          "score: the server's r2 equals r2 of the predictions", answer)

    # drift: the rows predicted above are the model's reservoir.
    dr = c.drift("c-krr", permutations=50, seed=2)
    raw = d.req("GET", "/v1/models/c-krr/drift?permutations=50&seed=2",
                headers=A).json() or {}
    check(dr.get("mmd2") == raw.get("mmd2") and
          dr.get("p_value") == raw.get("p_value") and
          dr.get("permutations") == 50 and dr.get("seed") == 2,
          "drift: the server's answer", dr)
    off = c.set_drift("c-krr", collect=False)
    on = c.set_drift("c-krr", collect=True)
    check(off.get("collect") is False and off.get("rows") == 0 and
          on.get("collect") is True, "set_drift: collection off, then on", off)

    # svc: each output.
    Xs = [[i % 5 * 0.3, (i * 7) % 11 * 0.1] for i in range(40)]
    ys = ["a" if r[0] + r[1] < 0.9 else ("b" if r[0] < 0.7 else "c") for r in Xs]
    c.fit("c-svc", Xs, ys, algorithm="svc", kernel="rbf", params={"C": 10, "probability": True})
    for output, body_output in ((None, None), ("label", "label"),
                                ("decision_function", "decision_function"),
                                ("probability", "probability")):
        body = {"X": Xs[:5]}
        if body_output:
            body["output"] = body_output
        raw = d.req("POST", "/v1/models/c-svc/predict", body, headers=A).json()
        check(c.predict("c-svc", Xs[:5], output=output) == raw["predictions"],
              f"predict output={output}: as the server answers", raw)
    check(c.score("c-svc", Xs, ys)["scoring"]["labels"] == ["a", "b", "c"],
          "score: svc figures with labels")

    # kpca: project and inverse.
    c.fit("c-kpca", X, algorithm="kpca", kernel={"type": "rbf", "gamma": 0.2},
          params={"n_components": 2, "fit_inverse_transform": True})
    P = c.project("c-kpca", X[:4])
    raw = d.req("POST", "/v1/models/c-kpca/project", {"X": X[:4]}, headers=A).json()
    check(P == raw["projections"] and len(P[0]) == 2, "project: the raw projections", P)
    back = c.project("c-kpca", P, inverse=True)
    raw = d.req("POST", "/v1/models/c-kpca/project", {"X": P, "inverse": True},
                headers=A).json()
    check(back == raw["projections"] and len(back[0]) == 3, "project inverse=True", back)

    # search.
    meta = c.search("c-search", X, y, algorithm="krr", kernel="rbf",
                    grid={"alpha": [0.01, 0.1, 1], "kernel.gamma": [0.1, 1]}, cv=3)
    t = meta.get("search", {})
    check(t.get("n_points") == 6 and t.get("n_splits") == 3 and len(t.get("results", [])) == 6,
          "search: a fit with a search record of 6 points, 3 folds", t.get("best_params"))

    # models: list, get, delete.
    names = [m["name"] for m in c.models()]
    check(names == sorted(names) and {"c-krr", "c-svc", "c-kpca", "c-search"} <= set(names),
          "models: every model, sorted", names)
    check(c.model("c-krr")["algorithm"] == "krr", "model: one model's metadata")
    c.delete_model("c-search")
    try:
        c.model("c-search")
        check(False, "delete_model: the model is gone")
    except km.NotFound as e:
        check(e.status == 404 and e.code == "not_found", "delete_model: then model() is NotFound",
              e)

    scenario_errors(km, c, url, X, y)
    scenario_jobs(km, c, X, y)


def expect(km, what, cls, status, code, text, fn):
    """fn() must raise cls with status, code and a message holding text."""
    try:
        fn()
    except km.KmserveError as e:
        return check(isinstance(e, cls) and e.status == status and e.code == code and
                     text in e.message and text in str(e),
                     f"{what}: {cls.__name__} {status} {code}", repr((type(e), str(e))))
    except Exception as e:  # noqa: BLE001  (the wrong kind of error is a failure)
        return check(False, f"{what}: {cls.__name__}", repr(e))
    return check(False, f"{what}: {cls.__name__}", "no exception")


def scenario_errors(km, c, url, X, y):
    expect(km, "a bad kernel member", km.InvalidArgument, 400, "invalid_argument",
           "kernel.gamma must be a finite number > 0",
           lambda: c.fit("c-bad", X, y, algorithm="krr", kernel={"type": "rbf", "gamma": -1}))
    expect(km, "a misspelt parameter", km.InvalidArgument, 400, "invalid_argument",
           "params.alhpa is not a known field",
           lambda: c.fit("c-bad", X, y, algorithm="krr", kernel="rbf", params={"alhpa": 1}))
    expect(km, "a wrong feature count", km.InvalidArgument, 400, "invalid_argument",
           "X[0] has 2 features; the model expects 3", lambda: c.predict("c-krr", [[1, 2]]))
    expect(km, "a bad model name", km.InvalidArgument, 400, "invalid_argument", "",
           lambda: c.predict("a/b", X[:1]))
    expect(km, "no such model", km.NotFound, 404, "not_found", "does not exist",
           lambda: c.predict("nope", X[:1]))
    expect(km, "predict on kpca", km.Conflict, 409, "conflict", "",
           lambda: c.predict("c-kpca", X[:1]))
    expect(km, "no token", km.Unauthenticated, 401, "unauthenticated", "",
           lambda: km.Client(url).models())
    expect(km, "a read token fits", km.PermissionDenied, 403, "permission_denied", "",
           lambda: km.Client(url, token=READ).fit("c-bad", X, y, algorithm="krr", kernel="rbf"))
    check(km.Client(url, token=READ).predict("c-krr", X[:1]) == c.predict("c-krr", X[:1]),
          "a read token predicts")
    try:
        c.predict("c-krr", [[1.0, float("nan"), 2.0]])
        check(False, "NaN in X is refused before sending")
    except ValueError as e:
        check("X[0][1]" in str(e) and not isinstance(e, km.KmserveError),
              "NaN in X: ValueError naming X[0][1], nothing sent", e)
    try:
        km.Client("http://127.0.0.1:9").info()
        check(False, "an unreachable server")
    except km.KmserveConnectionError as e:
        check(e.status is None and isinstance(e, ConnectionError),
              "an unreachable server: KmserveConnectionError", e)


def scenario_jobs(km, c, X, y):
    job = c.fit("c-job", X, y, algorithm="krr", kernel="rbf", asynchronous=True)
    check(isinstance(job, km.Job) and job.id.startswith("j-") and job.model == "c-job",
          "fit asynchronous=True: a Job", job)
    seen = []
    meta = job.wait(progress=lambda j: seen.append((j.status, j.progress)))
    check(meta["name"] == "c-job" and job.status == "succeeded" and job.progress == 1 and
          seen and seen[-1] == ("succeeded", 1),
          "Job.wait: the metadata; progress called up to succeeded 1", seen)
    check(c.job(job.id).status == "succeeded" and job.id in [j.id for j in c.jobs()] and
          c.wait_job(job.id)["version"] == meta["version"], "jobs, job, wait_job")
    expect(km, "cancel a finished job", km.Conflict, 409, "conflict", "already finished",
           lambda: c.cancel_job(job.id))
    expect(km, "an unknown job", km.NotFound, 404, "not_found", "",
           lambda: c.job("j-0000000000000000"))

    # A fit that fails in the worker: kpca with n_components = n.
    expect(km, "a failed job", km.Unprocessable, 422, "unprocessable", "",
           lambda: c.fit("c-fail", X[:5], algorithm="kpca", kernel="rbf",
                         params={"n_components": 5}, progress=lambda j: None))

    # A long fit with progress, cancelled from its own callback.
    big_X, big_y = run.synthetic(run.BIG, 5, 2)
    c.fit("c-cancel", big_X[:50], big_y[:50], algorithm="krr", kernel="rbf")
    seen = []

    def on_progress(j):
        seen.append((j.status, j.progress))
        # at the first sight of the job, queued or running: waiting for a
        # fraction of progress lets a loaded machine finish the fit first
        # (its first fraction can come late in the fit)
        if len(seen) == 1:
            j.cancel()

    try:
        c.fit("c-cancel", big_X, big_y, algorithm="krr", kernel="rbf", progress=on_progress,
              poll_interval=0.01)
        check(False, "a cancelled job raises Conflict", seen[-5:])
    except km.Conflict as e:
        ps = [p for _, p in seen]
        check(e.job is not None and e.job.status == "cancelled" and e.status == 409,
              "a job cancelled while running raises Conflict with the job", e)
        check(ps == sorted(ps) and all(0 <= p < 1 for p in ps),
              "progress callback: rising values below 1", seen[-8:])
    check(c.model("c-cancel")["n_samples"] == 50, "the cancelled fit left version 1 serving")


def scenario_retries(km):
    """A fake server: drops the first connection without answering, answers
    the next ones. A GET is retried and gets the answer; a fit is not."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    count = [0]
    body = b'{"name":"fake","version":"0","algorithms":[],"kernels":[]}'

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            count[0] += 1
            if count[0] % 2 == 1:
                conn.close()
                continue
            conn.settimeout(5)
            data = b""
            while b"\r\n\r\n" not in data:
                part = conn.recv(65536)
                if not part:
                    break
                data += part
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        c = km.Client(f"http://127.0.0.1:{port}")
        check(c.info()["name"] == "fake" and count[0] == 2,
              "a GET is retried after a dropped connection", count)
        count[0] = 0
        try:
            c.fit("x", [[1]], [1], algorithm="krr", kernel="rbf")
            check(False, "a fit is not retried")
        except km.KmserveConnectionError:
            check(count[0] == 1, "a fit is not retried: one connection, "
                  "KmserveConnectionError", count)
        count[0] = 0
        try:
            km.Client(f"http://127.0.0.1:{port}", retries=0).info()
            check(False, "retries=0")
        except km.KmserveConnectionError:
            check(count[0] == 1, "retries=0: a GET is sent once", count)
    finally:
        srv.close()


def scenario_tls(km, binary, tmp):
    base = os.path.join(tmp, "tls")
    models = os.path.join(base, "models")
    os.makedirs(models)
    made = run.tls_cert(base)
    if not made:
        return
    cert, key = made
    ctx = ssl.create_default_context(cafile=cert)
    d = run.Daemon(binary, models, "--tls-cert", cert, "--tls-key", key, tls=ctx).start()
    try:
        url = f"https://127.0.0.1:{d.port}"
        c = km.Client(url, cafile=cert)
        meta = c.fit("t", [[0], [1], [2]], [0, 1, 2], algorithm="krr", kernel="linear")
        check(meta["version"] == 1 and len(c.predict("t", [[1.5]])) == 1,
              "tls: fit and predict with cafile")
        try:
            km.Client(url).info()
            check(False, "tls: an unknown certificate is refused")
        except km.KmserveConnectionError as e:
            check("CERTIFICATE_VERIFY_FAILED" in str(e), "tls: an unknown certificate is "
                  "refused (KmserveConnectionError)", e)
        check(km.Client(url, verify=False).info()["name"] == "kmserve",
              "tls: verify=False connects")
        check(km.Client(url, ssl_context=ctx).ready(), "tls: an ssl_context of one's own")
    finally:
        d.stop()


# ---------------------------------------------------------------- estimators

def data(np):
    """breast cancer (binary, 0/1), satellite (5 string classes), digits:
    scaled to [-1, 1] on the rows fitted."""
    Xb, yb = run.load_csv("breast_cancer.csv")
    Xb = np.asarray(run.scale_minmax(Xb, 400))
    yb = np.asarray([int(float(v)) for v in yb])
    Xs, ys = run.load_csv("satellite.csv", 450)
    Xs = np.asarray(run.scale_minmax(Xs, 300))
    ys = np.asarray(ys)
    Xd, _ = run.load_csv("digits.csv", 500)
    Xd = np.asarray(run.scale_minmax(Xd, 400))
    return (Xb, yb), (Xs, ys), Xd


def scenario_parity(km, c, np, sk):
    (Xb, yb), (Xs, ys), Xd = data(np)
    fit, test = slice(0, 400), slice(400, None)

    for kw in ({"kernel": "rbf", "gamma": 0.1}, {"kernel": "poly", "gamma": 0.05, "degree": 2},
               {"kernel": "laplacian", "gamma": 0.02}, {"kernel": "linear"},
               {"kernel": "cosine"}):
        ours = km.KernelRidge(alpha=0.5, client=c, **kw).fit(Xb[fit], Xb[fit, 0] + yb[fit])
        ref = sk.KernelRidge(alpha=0.5, **kw).fit(Xb[fit], Xb[fit, 0] + yb[fit])
        got, want = ours.predict(Xb[test]), ref.predict(Xb[test])
        check(isinstance(got, np.ndarray) and rel(got, want, 1e-6) <= 1e-10,
              f"KernelRidge({kw}): predictions equal scikit-learn's to 1e-10",
              rel(got, want, 1e-6))
    r2 = ours.score(Xb[test], Xb[test, 0] + yb[test])
    check(abs(r2 - ref.score(Xb[test], Xb[test, 0] + yb[test])) <= 1e-10,
          "KernelRidge.score: the server's r2 equals scikit-learn's", r2)

    ours = km.SVC(C=1.0, tol=1e-8, client=c).fit(Xb[fit], yb[fit])
    ref = sk.SVC(C=1.0, tol=1e-8).fit(Xb[fit], yb[fit])
    check(ours.metadata_["kernel"]["gamma"] == ref._gamma,
          "SVC gamma='scale': the gamma scikit-learn computes", (ours.metadata_["kernel"],
                                                                 ref._gamma))
    check(list(ours.classes_) == list(ref.classes_) and
          (ours.predict(Xb[test]) == ref.predict(Xb[test])).all(),
          "SVC binary: classes and labels equal scikit-learn's")
    check(rel(ours.decision_function(Xb[test]), ref.decision_function(Xb[test]), SVM_FLOOR) <= 1e-6,
          "SVC binary: decision values equal scikit-learn's to 1e-6",
          rel(ours.decision_function(Xb[test]), ref.decision_function(Xb[test]), SVM_FLOOR))
    check(abs(ours.score(Xb[test], yb[test]) - ref.score(Xb[test], yb[test])) <= 1e-12,
          "SVC.score: the server's accuracy equals scikit-learn's")

    for shape in ("ovr", "ovo"):
        ours = km.SVC(C=10, gamma=0.5, tol=1e-8, decision_function_shape=shape,
                      client=c).fit(Xs[:300], ys[:300])
        ref = sk.SVC(C=10, gamma=0.5, tol=1e-8, decision_function_shape=shape).fit(
            Xs[:300], ys[:300])
        got, want = ours.decision_function(Xs[300:]), ref.decision_function(Xs[300:])
        check(got.shape == want.shape and rel(got.ravel(), want.ravel(), SVM_FLOOR) <= 1e-6 and
              (ours.predict(Xs[300:]) == ref.predict(Xs[300:])).all(),
              f"SVC 5 string classes, {shape}: labels equal, decision values to 1e-6",
              (got.shape, want.shape, rel(got.ravel(), want.ravel(), SVM_FLOOR)))

    ours = km.SVC(C=10, gamma=0.5, probability=True, client=c).fit(Xs[:300], ys[:300])
    p = ours.predict_proba(Xs[300:310])
    k = len(ours.classes_)
    check(k == 5 and p.shape == (10, k) and np.allclose(p.sum(axis=1), 1, atol=1e-9) and
          hasattr(ours, "predict_proba") and not hasattr(km.SVC(), "predict_proba"),
          "SVC probability: rows of 5 summing to 1; predict_proba only with probability=True",
          p[:1])

    Xr, yr = Xb[:, 1:], Xb[:, 0]
    ours = km.SVR(C=1.0, epsilon=0.05, tol=1e-8, client=c).fit(Xr[fit], yr[fit])
    ref = sk.SVR(C=1.0, epsilon=0.05, tol=1e-8).fit(Xr[fit], yr[fit])
    check(rel(ours.predict(Xr[test]), ref.predict(Xr[test]), SVM_FLOOR) <= 1e-6,
          "SVR: predictions equal scikit-learn's to 1e-6",
          rel(ours.predict(Xr[test]), ref.predict(Xr[test]), SVM_FLOOR))

    ours = km.KernelPCA(4, kernel="rbf", gamma=0.02, fit_inverse_transform=True, alpha=0.1,
                        client=c).fit(Xd[:400])
    ref = sk.KernelPCA(4, kernel="rbf", gamma=0.02, fit_inverse_transform=True, alpha=0.1,
                       eigen_solver="dense").fit(Xd[:400])
    check(rel(ours.eigenvalues_, ref.eigenvalues_, 1e-6) <= 1e-8,
          "KernelPCA: eigenvalues equal scikit-learn's to 1e-8")
    got, want = ours.transform(Xd[400:]), ref.transform(Xd[400:])
    check(rel(got.ravel(), want.ravel(), 1e-6) <= 1e-8,
          "KernelPCA: projections equal scikit-learn's to 1e-8, signs included",
          rel(got.ravel(), want.ravel(), 1e-6))
    back = ours.inverse_transform(want)
    check(rel(back.ravel(), ref.inverse_transform(want).ravel(), 1e-3) <= 1e-6,
          "KernelPCA.inverse_transform equals scikit-learn's to 1e-6")
    check(ours.score(Xd[400:]) < 0, "KernelPCA.score: minus the reconstruction error")
    check(km.KernelPCA(2, kernel="rbf", eigen_solver="arpack", client=c).fit(
        Xd[:400]).metadata_["training"]["solver"] == "iterative",
        "KernelPCA eigen_solver='arpack' runs the server's iterative solver")


def scenario_new_estimators(km, c, np):
    from sklearn.base import clone, is_classifier, is_regressor
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    from sklearn.model_selection import GridSearchCV
    (Xb, yb), _, _ = data(np)
    X, y = Xb[:, :5], Xb[:, 5] + Xb[:, 0]
    fit, test = slice(0, 150), slice(400, None)

    gamma, alpha = 0.4, 0.05
    ours = km.GaussianProcessRegressor(gamma=gamma, alpha=alpha, optimizer=None,
                                       client=c).fit(X[fit], y[fit])
    ref = GaussianProcessRegressor(ConstantKernel(1.0, "fixed") *
                                   RBF(1 / np.sqrt(2 * gamma), "fixed"),
                                   alpha=alpha, optimizer=None).fit(X[fit], y[fit])
    mean, std = ours.predict(X[test], return_std=True)
    rmean, rstd = ref.predict(X[test], return_std=True)
    check(np.abs(mean - rmean).max() <= 1e-9 and np.abs(std - rstd).max() <= 1e-9 and
          np.array_equal(ours.predict(X[test]), mean),
          "GaussianProcessRegressor: mean and std equal scikit-learn's to 1e-9",
          (np.abs(mean - rmean).max(), np.abs(std - rstd).max()))
    mean, cov = ours.predict(X[test], return_cov=True)
    rmean, rcov = ref.predict(X[test], return_cov=True)
    check(cov.shape == rcov.shape and np.abs(cov - rcov).max() <= 1e-9,
          "GaussianProcessRegressor: cov equals scikit-learn's to 1e-9",
          (cov.shape, np.abs(cov - rcov).max()))
    check(is_regressor(ours) and clone(ours).get_params() == ours.get_params(),
          "GaussianProcessRegressor: a regressor; clone keeps its parameters")

    lam, g = 0.5, 0.3
    yc = np.where(yb > 0, "b", "a")
    ours = km.KernelLogisticRegression(C=1 / lam, gamma=g, client=c).fit(X[fit], yc[fit])
    proba = ours.predict_proba(X[test])
    check(proba.tolist() == c.predict(ours.model_name_, X[test].tolist(),
                                      output="probability") and
          np.abs(proba.sum(axis=1) - 1).max() <= 1e-12 and
          (ours.predict(X[test]) == ours.classes_[proba.argmax(axis=1)]).all(),
          "KernelLogisticRegression: the server's probabilities, rows sum to 1, labels "
          "at the largest")
    dec = ours.decision_function(X[test])
    check(dec.shape == (len(proba),) and
          np.abs(dec - np.log(proba[:, 1] / proba[:, 0])).max() <= 1e-9,
          "KernelLogisticRegression binary: decision_function is the log-odds to 1e-9",
          np.abs(dec - np.log(proba[:, 1] / proba[:, 0])).max())
    Xf = X[fit]
    K = np.exp(-g * ((Xf[:, None, :] - Xf[None, :, :]) ** 2).sum(axis=2))
    p1 = ours.predict_proba(Xf)[:, 1]
    y1 = (yc[fit] == "b").astype(float)
    r = ours.decision_function(Xf) - K @ (y1 - p1) / lam
    check(np.ptp(r) <= 1e-6 and abs((y1 - p1).sum()) <= 1e-6,
          "KernelLogisticRegression: the fit is the optimum (numpy: f - K(y-p)/lambda "
          "constant, sum(y-p) = 0, to 1e-6)", (np.ptp(r), (y1 - p1).sum()))
    check(abs(ours.score(X[test], yc[test]) -
              (ours.predict(X[test]) == yc[test]).mean()) <= 1e-12 and is_classifier(ours),
          "KernelLogisticRegression: score is the accuracy; a classifier")
    y3 = np.digitize(X[:, 0], [-0.5, 0.0])
    three = km.KernelLogisticRegression(gamma=g, client=c).fit(X[fit], y3[fit])
    check(three.predict_proba(X[test]).shape == (len(proba), 3) and
          three.decision_function(X[test]).shape == (len(proba), 3),
          "KernelLogisticRegression 3 classes: a probability and a value per class")
    grid = GridSearchCV(km.KernelLogisticRegression(gamma=g, client=c),
                        {"C": [0.5, 2.0]}, cv=3).fit(X[fit], yc[fit])
    check(grid.best_params_["C"] in (0.5, 2.0),
          "KernelLogisticRegression in GridSearchCV", grid.best_params_)

    ours = km.KernelKMeans(3, kernel="rbf", gamma=g, random_state=3, client=c)
    labels = ours.fit_predict(X[fit])
    check(np.array_equal(labels, ours.predict(X[fit])) and
          np.array_equal(labels, ours.labels_) and set(labels.tolist()) <= {0, 1, 2} and
          ours.inertia_ > 0 and ours._estimator_type == "clusterer",
          "KernelKMeans: fit_predict equals predict on the training rows and labels_")
    check(clone(ours).get_params() == ours.get_params() and
          km.KernelModel(algorithm="kkmeans", client=c)._estimator_type == "clusterer" and
          km.KernelModel(algorithm="kpca", client=c)._estimator_type is None and
          km.KernelModel(algorithm="klr", client=c)._estimator_type == "classifier",
          "KernelKMeans clones; KernelModel's kind comes from the capabilities")


def scenario_partial_fit(km, c, np):
    (Xb, _), _, _ = data(np)
    X, y = Xb[:, :5], Xb[:, 5] + Xb[:, 0]
    test = slice(400, None)
    for est, what in (
            (lambda: km.KernelRidge(alpha=0.1, kernel="rbf", gamma=0.3,
                                    server_params={"keep_factor": True}, client=c),
             "KernelRidge (keep_factor)"),
            (lambda: km.GaussianProcessRegressor(gamma=0.4, alpha=0.05, optimizer=None,
                                                 normalize_y=True, client=c),
             "GaussianProcessRegressor")):
        ours = est().partial_fit(X[:100], y[:100])
        ours.partial_fit(X[100:130], y[100:130]).partial_fit(X[130:150], y[130:150])
        ref = est().fit(X[:150], y[:150])
        got, want = ours.predict(X[test]), ref.predict(X[test])
        check(ours.model_version_ == 3 and ours.metadata_["n_samples"] == 150 and
              np.abs(got - want).max() <= 1e-9 * max(1.0, np.abs(want).max()),
              f"{what}: partial_fit three times (versions 1 to 3) predicts as a fit on "
              "all the rows to 1e-9", (ours.model_version_, np.abs(got - want).max()))
    # SVC (satellite's string labels) and SVR with keep_rows: within 1e-2
    # of a fit on all the rows (SMO's tol 1e-3 on both sides), the same
    # labels on >= 99% of the held-out rows
    (_, _), (Xs, ys), _ = data(np)
    for est, what, Xa, ya in (
            (lambda: km.SVC(C=2.0, gamma=0.5, decision_function_shape="ovo",
                            server_params={"keep_rows": True}, client=c),
             "SVC (keep_rows)", Xs, ys),
            (lambda: km.SVR(C=2.0, gamma=0.3, server_params={"keep_rows": True},
                            client=c), "SVR (keep_rows)", X, y)):
        ours = est().partial_fit(Xa[:200], ya[:200])
        ours.partial_fit(Xa[200:260], ya[200:260]).partial_fit(Xa[260:300],
                                                                ya[260:300])
        ref = est().fit(Xa[:300], ya[:300])
        held = Xa[300:]
        if what.startswith("SVC"):
            got, want = ours.decision_function(held), ref.decision_function(held)
            same = float(np.mean(ours.predict(held) == ref.predict(held)))
            extra = list(ours.classes_) == list(ref.classes_)
        else:
            got, want = ours.predict(held), ref.predict(held)
            same, extra = 1.0, True
        check(ours.model_version_ == 3 and ours.metadata_["n_samples"] == 300 and
              np.abs(got - want).max() <= 1e-2 and same >= 0.99 and extra,
              f"{what}: partial_fit three times (versions 1 to 3) answers as a fit "
              "on all the rows within 1e-2", (ours.model_version_,
                                              np.abs(got - want).max(), same))
    # nystrom: the centres stay; the reference is the normal equations of
    # all the rows with those centres, solved here
    nys = km.KernelRidge(alpha=0.1, kernel="rbf", gamma=0.3, client=c, server_params={
        "keep_factor": True, "solver": "nystrom", "n_centres": 40, "cg_tol": 1e-10,
        "cg_max_iter": 1000})
    nys.partial_fit(X[:100], y[:100]).partial_fit(X[100:150], y[100:150])
    _, co = c.request("GET", f"/v1/models/{nys.model_name_}/coefficients?limit=1000")
    Z = np.array(co["coefficients"]["centres_"]["values"])
    gram = lambda A, B: np.exp(-0.3 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
    Knm = gram(X[:150], Z)
    C = np.linalg.solve(Knm.T @ Knm + 0.1 * gram(Z, Z), Knm.T @ y[:150])
    got, want = nys.predict(X[test]), gram(X[test], Z) @ C
    check(nys.model_version_ == 2 and nys.metadata_["n_samples"] == 40 and
          np.abs(got - want).max() <= 1e-6 * max(1.0, np.abs(want).max()),
          "KernelRidge (nystrom, keep_factor): partial_fit twice predicts as the normal "
          "equations of all the rows with the model's centres to 1e-6",
          (nys.model_version_, np.abs(got - want).max()))
    plain = km.KernelRidge(alpha=0.1, kernel="rbf", client=c).fit(X[:50], y[:50])
    try:
        c.update(plain.model_name_, X[50:60].tolist(), y[50:60].tolist())
        check(False, "Client.update of a krr model without keep_factor raises Conflict")
    except km.Conflict as e:
        check(e.status == 409 and "keep_factor" in str(e),
              "Client.update of a krr model without keep_factor raises Conflict "
              "naming keep_factor", e)


def scenario_sklearn_tools(km, c, np, sk):
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    (Xb, yb), _, _ = data(np)
    X, y = Xb[:240], yb[:240]
    before = {m["name"] for m in c.models()}

    est = km.SVC(C=3.0, kernel="poly", degree=2, class_weight={0: 2.0}, client=c)
    twin = clone(est)
    check(type(twin) is km.SVC and twin.get_params() == est.get_params() and
          twin.client is c, "clone: the same parameters, the client shared", twin)
    est.set_params(C=5.0, kernel="rbf")
    check(est.C == 5.0 and est.kernel == "rbf" and twin.C == 3.0,
          "set_params changes the estimator, not its clone")

    folds = KFold(4)
    ours = cross_val_score(km.KernelRidge(alpha=0.3, kernel="rbf", gamma=0.2, client=c),
                           X, X[:, 0] + y, cv=folds)
    ref = cross_val_score(sk.KernelRidge(alpha=0.3, kernel="rbf", gamma=0.2), X,
                          X[:, 0] + y, cv=folds)
    check(rel(ours, ref, 1e-6) <= 1e-10, "cross_val_score(KernelRidge): scikit-learn's "
          "scores to 1e-10", (ours, ref))
    ours = cross_val_score(km.SVC(tol=1e-8, client=c), X, y, cv=4)
    ref = cross_val_score(sk.SVC(tol=1e-8), X, y, cv=4)
    check(rel(ours, ref, 1e-6) <= 1e-10, "cross_val_score(SVC), stratified folds: "
          "scikit-learn's accuracies", (ours, ref))

    grid = {"C": [0.1, 1, 10], "gamma": [0.01, 0.1]}
    gs = GridSearchCV(km.SVC(tol=1e-8, client=c), grid, cv=3).fit(X, y)
    gr = GridSearchCV(sk.SVC(tol=1e-8), grid, cv=3).fit(X, y)
    check(gs.best_params_ == gr.best_params_ and
          rel(gs.cv_results_["mean_test_score"], gr.cv_results_["mean_test_score"], 1e-6)
          <= 1e-10 and (gs.predict(Xb[400:]) == gr.predict(Xb[400:])).all(),
          "GridSearchCV(SVC): scikit-learn's best parameters, mean scores and refit",
          (gs.best_params_, gr.best_params_))

    pipe = make_pipeline(StandardScaler(), km.SVR(C=2.0, client=c)).fit(Xb[:300, 1:],
                                                                        Xb[:300, 0])
    ref = make_pipeline(StandardScaler(), sk.SVR(C=2.0)).fit(Xb[:300, 1:], Xb[:300, 0])
    check(rel(pipe.predict(Xb[400:, 1:]), ref.predict(Xb[400:, 1:]), SVM_FLOOR) <= 1e-6,
          "Pipeline(StandardScaler, SVR): scikit-learn's pipeline's predictions to 1e-6")
    served = km.SVR(C=2.0, preprocess={"scale": "standardize"}, client=c).fit(
        Xb[:300, 1:], Xb[:300, 0])
    check(rel(served.predict(Xb[400:, 1:]), ref.predict(Xb[400:, 1:]), SVM_FLOOR) <= 1e-6,
          "SVR(preprocess standardize, gamma 'scale'): the same model, scaled on the server")

    # The generic estimator.
    gen = km.KernelModel("krr", "rbf", gamma=0.2, alpha=0.3, client=c)
    check(gen.get_params()["alpha"] == 0.3 and clone(gen).get_params() == gen.get_params(),
          "KernelModel: params members are parameters; clone keeps them", gen.get_params())
    gen.set_params(alpha=0.5, solver="exact")
    check(gen.get_params()["solver"] == "exact" and gen.alpha == 0.5,
          "KernelModel.set_params: a new name becomes a params member")
    gen.fit(X, X[:, 0] + y)
    kr = km.KernelRidge(alpha=0.5, kernel="rbf", gamma=0.2, client=c).fit(X, X[:, 0] + y)
    check((gen.predict(Xb[400:]) == kr.predict(Xb[400:])).all() and
          gen.score(X, X[:, 0] + y) == kr.score(X, X[:, 0] + y),
          "KernelModel('krr') answers as KernelRidge")
    gk = GridSearchCV(km.KernelModel("svc", "rbf", gamma=0.1, C=1.0, tol=1e-8, client=c),
                      {"C": [0.1, 10]}, cv=3).fit(X, y)
    gsk = GridSearchCV(sk.SVC(gamma=0.1, tol=1e-8), {"C": [0.1, 10]}, cv=3).fit(X, y)
    check(gk.best_params_ == gsk.best_params_ and
          rel(gk.cv_results_["mean_test_score"], gsk.cv_results_["mean_test_score"], 1e-6)
          <= 1e-10, "GridSearchCV(KernelModel('svc')): stratified as a classifier, "
          "scikit-learn's scores", gk.cv_results_["mean_test_score"])
    seen = []
    km.KernelModel("kpca", "rbf", n_components=2, client=c).fit(
        X, progress=lambda j: seen.append(j.status))
    check(seen and seen[-1] == "succeeded", "estimator fit(progress=...): the job's states",
          seen)

    # Lifetime on the server.
    kept = km.KernelRidge(kernel="rbf", model_name="py-kept", keep_model=True, client=c).fit(X, y)
    named = km.KernelRidge(kernel="rbf", model_name="py-named", client=c).fit(X, y)
    check(named.model_name_ == "py-named" and c.model("py-named")["version"] == 1,
          "model_name: the model's name on the server")
    copy = pickle.loads(pickle.dumps(named))
    check((copy.predict(X[:5]) == named.predict(X[:5])).all(),
          "a pickled fitted estimator predicts as the original")
    other = km.KernelRidge(kernel="linear", model_name="py-named", client=c).fit(X, y)
    try:
        named.predict(X[:2])
        check(False, "a model refitted elsewhere raises StaleModel")
    except km.StaleModel as e:
        check("version 2" in str(e), "a model refitted elsewhere raises StaleModel", e)
    del est, twin, gs, gk, gen, kept, named, other, copy, pipe, served, kr
    gc.collect()
    left = {m["name"] for m in c.models()} - before
    check(left == {"py-kept"}, "discarded estimators' models are deleted, a kept one stays",
          sorted(left))
    try:
        km.KernelRidge(client=c).predict(X)
        check(False, "predict before fit")
    except Exception as e:  # noqa: BLE001
        from sklearn.exceptions import NotFittedError
        check(isinstance(e, NotFittedError), "predict before fit: NotFittedError", repr(e))


# ---------------------------------------------------------------- no numpy

NO_NUMPY = r"""
import json, sys
sys.modules["numpy"] = None      # import numpy raises ImportError
sys.modules["sklearn"] = None
import kmserve
from kmserve import estimators, _data
url, token, X, y = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
c = kmserve.Client(url, token=token)
out = {"have_sklearn": estimators.HAVE_SKLEARN, "np": _data.np is not None}
c.fit("nn-krr", X, y, algorithm="krr", kernel={"type": "rbf", "gamma": 0.5})
out["client"] = c.predict("nn-krr", X)
e = kmserve.KernelRidge(alpha=1.0, kernel="rbf", gamma=0.5, client=c)
out["params"] = sorted(e.get_params())
twin = type(e)(**e.get_params(deep=False))
twin.set_params(alpha=2.0)
out["set"] = [e.alpha, twin.alpha]
out["estimator"] = e.fit(X, y).predict(X)
labels = [int(v > 0) for v in y]
s = kmserve.SVC(client=c).fit(X, labels)
out["gamma"] = s.metadata_["kernel"]["gamma"]
out["classes"] = s.classes_
out["svc"] = s.predict(X)
out["score"] = s.score(X, labels)
try:
    s.set_params(nope=1)
except ValueError as err:
    out["bad"] = str(err)
print(json.dumps(out))
"""


def scenario_no_numpy(km, c, py, np, url):
    X, y = run.synthetic(40, 3, 5)
    p = subprocess.run([py, "-c", NO_NUMPY, url, ADMIN, json.dumps(X), json.dumps(y)],
                       capture_output=True, text=True, timeout=120)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        check(False, "without numpy and scikit-learn: the child runs", p.stderr[-2000:])
        return
    check(not out["have_sklearn"] and not out["np"],
          "without numpy: the fallbacks are in use", out)
    ref = km.KernelRidge(alpha=1.0, kernel="rbf", gamma=0.5, client=c).fit(X, y).predict(X)
    check(isinstance(out["estimator"], list) and out["estimator"] == ref.tolist() and
          out["client"] == ref.tolist(), "without numpy: lists out, the same doubles")
    check("alpha" in out["params"] and "client" in out["params"] and out["set"] == [1.0, 2.0],
          "without scikit-learn: get_params / set_params", out["params"])
    want = 1.0 / (3 * np.asarray(X).var())
    check(abs(out["gamma"] - want) <= 1e-12 * want, "without numpy: gamma 'scale' in plain "
          "Python", (out["gamma"], want))
    labels = [int(v > 0) for v in y]
    check(out["classes"] == [0, 1] and len(out["svc"]) == 40 and
          abs(out["score"] - sum(a == b for a, b in zip(out["svc"], labels)) / 40) <= 1e-12,
          "without numpy: SVC classes, labels and score")
    check("Invalid parameter 'nope'" in out.get("bad", ""),
          "without scikit-learn: set_params refuses an unknown name", out.get("bad"))


# ---------------------------------------------------------------- strings, precomputed

def dna(n, seed):
    """n two-class DNA-like strings (class 1 rich in g and c), lengths 12
    to 30, and their classes."""
    import random
    rng = random.Random(seed)
    X, y = [], []
    for i in range(n):
        c = i % 2
        letters = "ggccat" if c else "aattgc"
        X.append("".join(rng.choice(letters) for _ in range(rng.randint(12, 30))))
        y.append(c)
    return X, y


def scenario_strings(km, c, np, sk):
    """A list of str as X: Client.fit / predict / score send it as it is
    (answers lists, or numpy arrays for a numpy X), equal to the raw HTTP
    answer and to numpy's solve on strings_ref's Gram (1e-9); the
    estimators on strings against scikit-learn's on the reference Gram
    (kernel="precomputed"): SVC's labels and cross_val_score,
    KernelRidge's predictions."""
    sys.path.insert(0, os.path.dirname(HERE))
    import strings_ref as sref
    from sklearn.model_selection import KFold, cross_val_score
    X, lab = dna(40, 7)
    T, _ = dna(9, 8)
    T[0] = "caf\u00e9 \u00e9t\u00e9"  # UTF-8: the kernel reads its bytes
    y = [float(s.count("g") - s.count("a")) for s in X]
    kernel = {"type": "spectrum", "length": 3}
    K = np.array(sref.gram(kernel, X))
    Kt = np.array(sref.gram(kernel, T, X))
    ref = Kt @ np.linalg.solve(K + 0.5 * np.eye(len(X)), y)

    meta = c.fit("py-str", X, y, algorithm="krr", kernel=kernel, params={"alpha": 0.5},
                 max_length=64)
    check(meta.get("input") == {"kind": "strings", "max_length": 64},
          "Client.fit on a list of str, max_length: a string model", meta)
    got = c.predict("py-str", T)
    raw = c.request("POST", "/v1/models/py-str/predict", {"X": T})[1]["predictions"]
    check(isinstance(got, list) and got == raw and rel(got, ref, 1e-3) <= 1e-9,
          "Client.predict of a list of str: a list, the HTTP answer exactly, "
          "numpy's solve on the reference Gram (1e-9)", (got, ref))
    arr = c.predict("py-str", np.array(T), batch_size=4)
    check(isinstance(arr, np.ndarray) and rel(arr, ref, 1e-3) <= 1e-9,
          "Client.predict of a numpy array of str, in batches of 4", arr)
    sc = c.score("py-str", T, ref.tolist())["scoring"]
    check(abs(sc["r2"] - 1.0) <= 1e-9, "Client.score on strings: r2 1 against "
          "the reference predictions", sc)
    try:
        c.predict("py-str", "acgt")
        check(False, "one string as X is refused")
    except TypeError as e:
        check("not one string" in str(e), "one string as X: TypeError, not its "
              "letters as rows", e)
    try:
        c.predict("py-str", [[0.5] * 11])
        check(False, "numbers to a string model: InvalidArgument")
    except km.InvalidArgument as e:
        check("strings" in e.message, "numbers to a string model: InvalidArgument "
              "saying it takes strings", e.message)

    svc = km.SVC(kernel="spectrum", kernel_params={"length": 3}, C=2.0, tol=1e-8,
                 client=c).fit(X, lab)
    want = sk.SVC(kernel="precomputed", C=2.0, tol=1e-8).fit(K, lab)
    check(svc.metadata_["kernel"] == kernel and not hasattr(svc, "n_features_in_") and
          (svc.predict(T) == want.predict(Kt)).all() and
          abs(svc.score(T, want.predict(Kt)) - 1.0) <= 1e-12,
          "SVC(kernel='spectrum') on a list of str: scikit-learn's labels on the "
          "reference Gram; no n_features_in_", svc.metadata_.get("kernel"))
    norm = {"type": "normalized", "kernels": [kernel]}
    Kn, Ktn = np.array(sref.gram(norm, X)), np.array(sref.gram(norm, T, X))
    kr = km.KernelRidge(alpha=0.1, kernel=norm, client=c).fit(X, y)
    ref_n = Ktn @ np.linalg.solve(Kn + 0.1 * np.eye(len(X)), y)
    check(rel(kr.predict(T), ref_n, 1e-3) <= 1e-9,
          "KernelRidge(kernel=normalized spectrum) on strings: numpy's solve (1e-9)")
    folds = KFold(4)
    ours = cross_val_score(km.SVC(kernel="spectrum", kernel_params={"length": 3},
                                  client=c), X, lab, cv=folds)
    theirs = cross_val_score(sk.SVC(kernel="precomputed"), K, lab, cv=folds)
    check(rel(ours, theirs, 1e-6) <= 1e-12,
          "cross_val_score(SVC) on a list of str: scikit-learn's on the reference "
          "Gram", (ours, theirs))


def scenario_precomputed(km, c, np, sk):
    """kernel="precomputed" with a numpy Gram: the estimators answer as
    scikit-learn's with kernel="precomputed" (KernelRidge to 1e-10, SVC's
    labels), and scikit-learn's tools cut X by rows and columns (pairwise):
    cross_val_score equal to scikit-learn's."""
    from sklearn.model_selection import KFold, cross_val_score
    (Xb, yb), _, _ = data(np)
    X, y, Q = Xb[:80], yb[:80], Xb[80:100]

    def rbf(A, B):
        return np.exp(-0.3 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))

    G, Gq = rbf(X, X), rbf(Q, X)
    t = X[:, 0] + y
    kr = km.KernelRidge(alpha=0.5, kernel="precomputed", client=c).fit(G, t)
    ref = sk.KernelRidge(alpha=0.5, kernel="precomputed").fit(G, t).predict(Gq)
    check(kr.n_features_in_ == 80 and rel(kr.predict(Gq), ref, 1e-6) <= 1e-10,
          "KernelRidge(kernel='precomputed'): scikit-learn's predictions (1e-10), "
          "n_features_in_ the training rows", kr.metadata_.get("input"))
    svc = km.SVC(kernel="precomputed", tol=1e-8, client=c).fit(G, y)
    want = sk.SVC(kernel="precomputed", tol=1e-8).fit(G, y).predict(Gq)
    check((svc.predict(Gq) == want).all(), "SVC(kernel='precomputed'): "
          "scikit-learn's labels")
    folds = KFold(4)
    ours = cross_val_score(km.KernelRidge(alpha=0.5, kernel="precomputed", client=c),
                           G, t, cv=folds)
    theirs = cross_val_score(sk.KernelRidge(alpha=0.5, kernel="precomputed"), G, t,
                             cv=folds)
    check(rel(ours, theirs, 1e-6) <= 1e-10,
          "cross_val_score(KernelRidge(kernel='precomputed')): the Gram cut by "
          "rows and columns, scikit-learn's scores", (ours, theirs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    binary = os.path.abspath(args.server)
    tmp = tempfile.mkdtemp(prefix="kmserve-pyclient-")
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write(f"{ADMIN} admin\n{READ} read\n")

    def body(d):
        installed = install(tmp)
        if not installed:
            return
        py, site = installed
        sys.path.insert(0, site)
        import kmserve as km
        check(km.__file__.startswith(site), "the runner uses the installed copy", km.__file__)
        import numpy as np
        import sklearn.decomposition
        import sklearn.kernel_ridge
        import sklearn.svm

        class sk:  # scikit-learn's estimators, the references
            KernelRidge = sklearn.kernel_ridge.KernelRidge
            SVC, SVR = sklearn.svm.SVC, sklearn.svm.SVR
            KernelPCA = sklearn.decomposition.KernelPCA

        url = f"http://127.0.0.1:{d.port}"
        scenario_client(km, d, np)
        c = km.Client(url, token=ADMIN)
        scenario_retries(km)
        scenario_parity(km, c, np, sk)
        scenario_new_estimators(km, c, np)
        scenario_partial_fit(km, c, np)
        scenario_sklearn_tools(km, c, np, sk)
        scenario_strings(km, c, np, sk)
        scenario_precomputed(km, c, np, sk)
        scenario_no_numpy(km, c, py, np, url)
        scenario_tls(km, binary, tmp)

    try:
        return run.with_daemon(binary, "kmserve-pyclient-d-", body, "--token-file", tokens)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
