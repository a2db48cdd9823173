"""The same models served by scikit-learn behind Flask, for bench_serving.py.

A WSGI app, run by gunicorn (Debian's python3-flask and gunicorn):

    KM_BENCH_DATA=/tmp/data.npz gunicorn --preload -w 2 -k gthread \\
        --threads 4 -b 127.0.0.1:8091 --chdir bench skl_server:app

With --preload the models are fitted once, in the master, before the
workers fork. It answers kmserve's predict route and body shapes:
POST /v1/models/{krr,svc}/predict {"X": [[...], ...]} ->
{"model": {"name", "version"}, "predictions": [...]}, 400/404 as JSON.
The data file (numpy .npz) holds the training sets and parameters that
bench_serving.py also sends to kmserve, so both serve the same models.
"""
import os

import numpy as np
from flask import Flask, jsonify, request
from sklearn.kernel_ridge import KernelRidge
from sklearn.svm import SVC


def _fit_models(path):
    d = np.load(path)
    krr = KernelRidge(kernel="rbf", gamma=float(d["krr_gamma"]), alpha=float(d["krr_alpha"]))
    krr.fit(d["krr_X"], d["krr_y"])
    svc = SVC(kernel="rbf", gamma=float(d["svc_gamma"]), C=float(d["svc_C"]))
    svc.fit(d["svc_X"], d["svc_y"])
    return {"krr": krr, "svc": svc}


MODELS = _fit_models(os.environ["KM_BENCH_DATA"])
app = Flask(__name__)


def _error(status, code, message):
    return jsonify({"error": {"code": code, "message": message}}), status


@app.post("/v1/models/<name>/predict")
def predict(name):
    model = MODELS.get(name)
    if model is None:
        return _error(404, "not_found", f'model "{name}" does not exist')
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or "X" not in body:
        return _error(400, "invalid_argument", "X is required")
    try:
        X = np.asarray(body["X"], dtype=np.float64)
    except (TypeError, ValueError):
        return _error(400, "invalid_argument", "X must be a matrix of numbers")
    if X.ndim != 2 or X.shape[1] != model.n_features_in_:
        return _error(400, "invalid_argument", f"X must have {model.n_features_in_} columns")
    return jsonify({"model": {"name": name, "version": 1},
                    "predictions": model.predict(X).tolist()})


@app.get("/readyz")
def readyz():
    return jsonify({"status": "ready", "models": len(MODELS)})
