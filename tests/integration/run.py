#!/usr/bin/python3
"""Integration tests: the real kmserve daemon on a loopback port.

Runs the request/answer cases of cases.test, then scenarios that need more
than one request: parity with scikit-learn over HTTP, list/get/delete,
async jobs and cancellation, restart, kill -9 during a fit, quarantine of
corrupt files, admission and queue limits, metrics, SIGTERM.

Standard library only. Usage (from the project root):
    /usr/bin/python3 tests/integration/run.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import contextlib
import csv
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import tally  # noqa: E402  (check and the closing line)
from kmdata import data_file  # noqa: E402  (the data sets: $KM_DATA or data/)
from tally import check  # noqa: E402
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
# Rows of the fits that must still be running when the test acts on them
# (cancel, kill -9, queue full). Smaller under ThreadSanitizer, which is
# slow: .ci/run sets KM_IT_BIG.
BIG = int(os.environ.get("KM_IT_BIG", "8000"))

# ---------------------------------------------------------------- HTTP

class Reply:
    """status, headers (lower-case names), body (text) and raw (the body's
    bytes as they came, de-chunked)."""

    def __init__(self, status, headers, body, raw=b""):
        self.status, self.headers, self.body, self.raw = status, headers, body, raw

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def __repr__(self):
        return f"{self.status} {self.body[:300]!r}"


# core's predict works on blocks of rows (km_pre_block_rows in
# core/model/km_predict.c: 2^17 / d rows, at least one); runners whose
# batches must span several blocks (answers.py, blocks.py) take the size
# and the blocks' edge rows from here.
PREDICT_BLOCK_VALUES = 1 << 17


def block_rows(d):
    return max(1, PREDICT_BLOCK_VALUES // d)


def block_edges(n, block):
    """The first and last row of every block of a batch of n rows."""
    return sorted({i for b in range(0, n, block) for i in (b, min(b + block, n) - 1)})


def http(port, method, path, body=None, headers=None, length=True,
         chunked=False, timeout=120, tls=None):
    """One request on a fresh connection; headers is a list of (k, v).
    length=False sends no Content-Length; chunked sends the body chunked."""
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        headers = (headers or []) + [("Content-Type", "application/json")]
    elif isinstance(body, str):
        body = body.encode()
    body = body or b""
    headers = list(headers or [])
    names = {k.lower() for k, _ in headers}
    if chunked:
        headers.append(("Transfer-Encoding", "chunked"))
    elif length and "content-length" not in names and (body or method in ("POST", "PUT")):
        headers.append(("Content-Length", str(len(body))))
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    if tls:
        s = tls.wrap_socket(s, server_hostname="127.0.0.1")
    try:
        s.sendall(head.encode())
        if chunked:
            for i in range(0, len(body), 65536):
                part = body[i:i + 65536]
                s.sendall(b"%x\r\n" % len(part) + part + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        elif body:
            s.sendall(body)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server answered early and closed; read what it said
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, OSError):
        pass
    s.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if not lines or not lines[0].startswith("HTTP/"):
        return Reply(0, {}, data)
    status = int(lines[0].split()[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if hdrs.get("transfer-encoding", "").lower() == "chunked":
        out, buf = b"", rest
        while buf:
            size, _, buf = buf.partition(b"\r\n")
            n = int(size, 16)
            if n == 0:
                break
            out, buf = out + buf[:n], buf[n + 2:]
        rest = out
    return Reply(status, hdrs, rest.decode("utf-8", "replace"), rest)


# ---------------------------------------------------------------- daemon

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    def __init__(self, binary, models, *extra, tls=None, env=None):
        self.binary, self.models, self.extra = binary, models, list(extra)
        self.tls, self.env = tls, env
        self.proc = None
        self.port = None
        self.log_path = os.path.join(os.path.dirname(models), "daemon.log")
        self.log = open(self.log_path, "ab")
        self.log_seen = 0

    def start(self):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [self.binary, "--listen", f"127.0.0.1:{self.port}",
             "--models-dir", self.models, "--access-log", "false"] + self.extra,
            stdout=self.log, stderr=self.log, env=self.env)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if http(self.port, "GET", "/readyz", timeout=2,
                        tls=self.tls).status == 200:
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"kmserve exited with {self.proc.returncode}")
            time.sleep(0.05)
        raise RuntimeError("kmserve did not become ready")

    def req(self, method, path, body=None, **kw):
        return http(self.port, method, path, body, tls=self.tls, **kw)

    def stop(self, sig=signal.SIGTERM):
        if not self.proc:
            return None
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        self.check_log()
        return rc

    def check_log(self):
        """A sanitizer report in the daemon's output fails the run."""
        self.log.flush()
        with open(self.log_path, "rb") as f:
            f.seek(self.log_seen)
            text = f.read().decode("utf-8", "replace")
            self.log_seen = f.tell()
        for mark in ("ThreadSanitizer", "AddressSanitizer", "LeakSanitizer",
                     "runtime error:"):
            if mark in text:
                at = text.index(mark)
                check(False, f"sanitizer report ({mark})", text[max(0, at - 200):at + 3000])
                break


# ---------------------------------------------------------------- data

def load_csv(name, rows=None):
    with open(data_file(name)) as f:
        r = csv.reader(f)
        next(r)
        data = [row for row in r]
    if rows:
        data = data[:rows]
    X = [[float(v) for v in row[:-1]] for row in data]
    y = [row[-1] for row in data]
    return X, y


def scale_minmax(X, n_fit):
    """As tests/testdata.h and gen_refs.py: each feature to [-1, 1]."""
    d = len(X[0])
    lo = [min(r[j] for r in X[:n_fit]) for j in range(d)]
    hi = [max(r[j] for r in X[:n_fit]) for j in range(d)]
    return [[2.0 * (r[j] - lo[j]) / (hi[j] - lo[j]) - 1.0 if hi[j] > lo[j] else 0.0
             for j in range(d)] for r in X]


def read_fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return [float(v) for v in f.read().split()]


def chunk(v, width):
    """A flat list as rows of width values."""
    return [v[i:i + width] for i in range(0, len(v), width)]


def fixture_rows(name, width):
    """A fixture file's values as rows of width values."""
    return chunk(read_fixture(name), width)


def max_rel(a, b, floor=1e-3):
    return max(abs(x - y) / max(abs(y), floor) for x, y in zip(a, b))


def kmm_formats(blob):
    """(file format version, payload layout version) of a .kmm file's bytes.
    A version 8 file (a model that keeps a drift reference) records its
    payload's layout before the reference: u32 layout, u64 rows, then the
    rows' f64s (a u64 count, rows * n_features values); found by that
    shape (core/model/km_model.c's header comment)."""
    import struct
    fv = struct.unpack("<I", blob[4:8])[0]
    if fv < 8:
        return fv, fv
    nf = struct.unpack("<Q", blob[12:20])[0]
    for i in range(36, len(blob) - 20):
        pf, rows, count = struct.unpack("<IQQ", blob[i:i + 20])
        if 2 <= pf < 8 and 1 <= rows <= 1000 and count == rows * nf and \
                i + 20 + 8 * count <= len(blob):
            return fv, pf
    return fv, None


def synthetic(n, d, seed):
    rng = random.Random(seed)
    X = [[rng.gauss(0, 1) for _ in range(d)] for _ in range(n)]
    y = [sum(r) + rng.gauss(0, 0.1) for r in X]
    return X, y


def fit_body(X, y, **extra):
    body = {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.1},
            "params": {"alpha": 1.0}, "X": X, "y": y}
    body.update(extra)
    return body


def wait_job(d, job_id, states, timeout=120):
    deadline = time.time() + timeout
    job = None
    while time.time() < deadline:
        job = d.req("GET", f"/v1/jobs/{job_id}").json()
        if job and job.get("status") in states:
            return job
        time.sleep(0.02)
    return job


# ---------------------------------------------------------------- cases

def parse_cases(path):
    cases, cur = [], None
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("###"):
            cur = {"title": line[3:].strip(), "headers": [], "body": [],
                   "contains": [], "subset": [], "length": True}
            cases.append(cur)
            i += 1
            cur["method"], cur["path"] = lines[i].split(None, 1)
            i += 1
            while lines[i].strip():
                if lines[i].strip() == "@no-length":
                    cur["length"] = False
                else:
                    k, _, v = lines[i].partition(":")
                    cur["headers"].append((k.strip(), v.strip()))
                i += 1
            i += 1
            while not lines[i].startswith(">>>"):
                cur["body"].append(lines[i])
                i += 1
            parts = lines[i][3:].split()
            cur["status"] = int(parts[0])
            cur["code"] = parts[1] if len(parts) > 1 else None
        elif cur and line.startswith("~~~"):
            cur["contains"].append(line[3:].strip())
        elif cur and line.startswith("==="):
            cur["subset"].append(json.loads(line[3:].strip()))
        i += 1
    return cases


def is_subset(want, have):
    if isinstance(want, dict):
        return isinstance(have, dict) and all(
            k in have and is_subset(v, have[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(
            is_subset(a, b) for a, b in zip(want, have))
    return want == have


def run_cases(d):
    for c in parse_cases(os.path.join(HERE, "cases.test")):
        body = "\n".join(c["body"]).strip()
        r = d.req(c["method"], c["path"], body, headers=c["headers"],
                  length=c["length"])
        j = r.json() or {}
        problems = []
        if r.status != c["status"]:
            problems.append(f"status {r.status}, expected {c['status']}")
        if c["code"]:
            code = (j.get("error") or {}).get("code")
            if code != c["code"]:
                problems.append(f"code {code}, expected {c['code']}")
            if not (j.get("error") or {}).get("message"):
                problems.append("no error message")
        msg = (j.get("error") or {}).get("message", "")
        for text in c["contains"]:
            if text not in msg:
                problems.append(f"message {msg!r} lacks {text!r}")
        for sub in c["subset"]:
            if not is_subset(sub, j):
                problems.append(f"answer lacks {sub}")
        if r.status == 405 and not r.headers.get("allow"):
            problems.append("405 without an Allow header")
        check(not problems, f"case: {c['title']}", "; ".join(problems) + f" [{r}]")


# ---------------------------------------------------------------- scenarios

def scenario_sklearn_parity(d):
    """KRR over HTTP against scikit-learn's KernelRidge (fixture from
    tests/fixtures/gen_refs.py): rbf gamma 0.1, alpha 0.5, breast cancer
    scaled to [-1, 1], first 400 rows fitted, the rest predicted."""
    X, y = load_csv("breast_cancer.csv")
    X = scale_minmax(X, 400)
    y = [float(v) for v in y]
    r = d.req("POST", "/v1/models/bc/fit", {
        "algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.1},
        "params": {"alpha": 0.5}, "X": X[:400], "y": y[:400]})
    check(r.status == 201, "parity: fit breast cancer", r)
    r = d.req("POST", "/v1/models/bc/predict", {"X": X[400:]})
    got = (r.json() or {}).get("predictions", [])
    ref = read_fixture("krr_bc_rbf_pred.txt")
    ok = len(got) == len(ref) and max_rel(got, ref) <= 1e-8
    check(ok, "parity: predictions within 1e-8 of scikit-learn",
          f"max rel {max_rel(got, ref) if got else 'n/a'}")
    # Two outputs at once.
    Xs = read_fixture("krr_syn_X.txt")
    Ys = read_fixture("krr_syn_Y.txt")
    T = read_fixture("krr_syn_T.txt")
    pred = read_fixture("krr_syn_pred.txt")
    rows = chunk
    r = d.req("POST", "/v1/models/syn/fit", {
        "algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.3},
        "params": {"alpha": 0.1}, "X": rows(Xs, 5), "y": rows(Ys, 2)})
    check(r.status == 201 and r.json()["model"]["n_outputs"] == 2,
          "parity: fit two outputs", r)
    r = d.req("POST", "/v1/models/syn/predict", {"X": rows(T, 5)})
    got = [v for row in (r.json() or {}).get("predictions", []) for v in row]
    check(len(got) == len(pred) and max_rel(got, pred) <= 1e-8,
          "parity: two-output predictions within 1e-8", r)


def scenario_svm(d):
    """svc and svr over HTTP against LIBSVM's svm-train/svm-predict
    (fixtures from tests/fixtures/gen_svm_refs.py: breast cancer scaled to
    [-1, 1], 400 rows fitted, 169 predicted, C 1, gamma 0.1, tol 1e-3)."""
    X, y = load_csv("breast_cancer.csv")
    X = scale_minmax(X, 400)
    labels = [int(float(v)) for v in y]
    r = d.req("POST", "/v1/models/bc-svc/fit", {
        "algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.1},
        "params": {"C": 1.0, "tol": 1e-3}, "X": X[:400], "y": labels[:400]})
    meta = (r.json() or {}).get("model", {})
    nsv_ref = [int(v) for v in read_fixture("svm_bc_nsv.txt")]
    nsv = meta.get("training", {}).get("n_support", [])
    check(r.status == 201 and meta.get("classes") == [0, 1] and len(nsv) == 2 and
          all(abs(a - b) <= 0.02 * b + 1 for a, b in zip(nsv, nsv_ref)),
          "svc: fit, classes, n_support within 2% of LIBSVM", (nsv, nsv_ref, r))
    r = d.req("POST", "/v1/models/bc-svc/predict", {"X": X[400:]})
    pred = (r.json() or {}).get("predictions", [])
    ref = [int(v) for v in read_fixture("svm_bc_pred.txt")]
    agree = sum(a == b for a, b in zip(pred, ref)) / len(ref)
    check(len(pred) == len(ref) and agree >= 0.995 and all(isinstance(p, int) for p in pred),
          "svc: labels agree with LIBSVM on >= 99.5% of rows, as numbers", agree)
    r = d.req("POST", "/v1/models/bc-svc/predict", {"X": X[400:], "output": "decision_function"})
    dec = (r.json() or {}).get("predictions", [])
    # LIBSVM's sign favours the first label; scikit-learn's (ours) the second.
    ref = [-v for v in read_fixture("svm_bc_dec.txt")]
    check(len(dec) == len(ref) and max(abs(a - b) for a, b in zip(dec, ref)) <= 1e-3,
          "svc: binary decision values within 1e-3 of LIBSVM (scikit-learn sign)",
          max(abs(a - b) for a, b in zip(dec, ref)) if dec else r)
    r = d.req("POST", "/v1/models/bc-svc/predict", {"X": X[400:402], "output": "probability"})
    check(r.status == 409 and r.json()["error"]["code"] == "conflict",
          "svc: probability without probability: true is 409", r)
    r = d.req("POST", "/v1/models/bc-svc/predict", {"X": X[400:402], "output": "votes"})
    check(r.status == 400, "svc: unknown output is 400", r)

    # String labels, several classes, probabilities.
    Xs, ys = load_csv("satellite.csv", 600)
    Xs = scale_minmax(Xs, 600)
    r = d.req("POST", "/v1/models/sat/fit", {
        "algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.5},
        "params": {"C": 10, "probability": True, "class_weight": {ys[0]: 2.0}},
        "X": Xs[:500], "y": ys[:500]})
    classes = (r.json() or {}).get("model", {}).get("classes", [])
    check(r.status == 201 and classes == sorted(set(ys[:500])),
          "svc: string labels kept sorted by byte order", r)
    k = len(classes)
    out = d.req("POST", "/v1/models/sat/predict", {"X": Xs[500:]}).json()["predictions"]
    check(all(isinstance(v, str) and v in classes for v in out),
          "svc: string labels answered as strings", out[:5])
    acc = sum(a == b for a, b in zip(out, ys[500:])) / len(out)
    check(acc > 0.8, "svc: satellite subset accuracy is sensible", acc)
    dec = d.req("POST", "/v1/models/sat/predict",
                {"X": Xs[500:505], "output": "decision_function"}).json()["predictions"]
    check(len(dec) == 5 and all(len(row) == k * (k - 1) // 2 for row in dec),
          "svc: multi-class decision rows of k(k-1)/2 values", dec[:1])
    prob = d.req("POST", "/v1/models/sat/predict",
                 {"X": Xs[500:505], "output": "probability"}).json()["predictions"]
    check(len(prob) == 5 and all(len(row) == k and abs(sum(row) - 1) < 1e-9 for row in prob),
          "svc: probability rows of k that sum to 1", prob[:1])
    prob2 = d.req("POST", "/v1/models/sat/predict",
                  {"X": Xs[500:505], "output": "probability"}).json()["predictions"]
    check(prob == prob2, "svc: probabilities repeatable")

    bad = [
        ({"y": [0, "a", 0, 1]}, 400, "labels must be all numbers or all strings"),
        ({"y": [1, 1, 1, 1]}, 422, "svc needs at least 2"),
        ({"y": [0, 1, 0, 1], "params": {"class_weight": {"7": 1}}}, 400, "not in y"),
        ({"y": [0, 1, 0, 1], "params": {"C": 0}}, 400, "params.C"),
        ({"y": [0, 1, 0, 1], "params": {"epsilon": 0.1}}, 400, "params.epsilon is not a known field"),
        ({"y": [0, 1, 0, 1], "params": {"shrinking": 1}}, 400, "params.shrinking must be true or false"),
        ({"y": [0, None, 0, 1]}, 400, "y[1] must be a number or a string"),
    ]
    for extra, status, text in bad:
        body = {"algorithm": "svc", "kernel": {"type": "rbf"},
                "X": [[0, 0], [1, 1], [0, 1], [1, 0]]}
        body.update(extra)
        r = d.req("POST", "/v1/models/svc-bad/fit", body)
        msg = (r.json() or {}).get("error", {}).get("message", "")
        check(r.status == status and text in msg, f"svc error: {text}", r)

    # epsilon-SVR: feature 0 of breast cancer from features 1..29.
    r = d.req("POST", "/v1/models/bc-svr/fit", {
        "algorithm": "svr", "kernel": {"type": "rbf", "gamma": 0.1},
        "params": {"C": 1, "epsilon": 0.05}, "X": [row[1:] for row in X[:400]],
        "y": [row[0] for row in X[:400]]})
    check(r.status == 201, "svr: fit", r)
    r = d.req("POST", "/v1/models/bc-svr/predict", {"X": [row[1:] for row in X[400:]]})
    got = (r.json() or {}).get("predictions", [])
    ref = read_fixture("svm_svr_pred.txt")
    check(len(got) == len(ref) and max(abs(a - b) for a, b in zip(got, ref)) <= 1e-3,
          "svr: predictions within 1e-3 of LIBSVM",
          max(abs(a - b) for a, b in zip(got, ref)) if got else r)
    r = d.req("POST", "/v1/models/bc-svr/fit", {
        "algorithm": "svr", "kernel": {"type": "rbf"}, "params": {"probability": True},
        "X": [[0], [1]], "y": [0, 1]})
    check(r.status == 400, "svr: probability is not an svr parameter", r)


def scenario_kpca(d):
    """kpca over HTTP against scikit-learn's KernelPCA (dense solver;
    fixtures from tests/fixtures/gen_kpca_refs.py): digits scaled to
    [-1, 1], first 600 rows fitted, next 200 projected, rbf gamma 0.02,
    8 components, inverse map with alpha 0.1."""
    X, _ = load_csv("digits.csv", 800)
    X = scale_minmax(X, 600)
    k = 8
    r = d.req("POST", "/v1/models/digits-kpca/fit", {
        "algorithm": "kpca", "kernel": {"type": "rbf", "gamma": 0.02},
        "params": {"n_components": k, "fit_inverse_transform": True, "alpha": 0.1},
        "X": X[:600]})
    meta = (r.json() or {}).get("model", {})
    eig = meta.get("training", {}).get("eigenvalues", [])
    ref_eig = read_fixture("kpca_digits_eigenvalues.txt")
    check(r.status == 201 and len(eig) == k and max_rel(eig, ref_eig) <= 1e-8,
          "kpca: fit, eigenvalues within 1e-8 of scikit-learn", r)
    rows = chunk
    ref = rows(read_fixture("kpca_digits_proj.txt"), k)
    r = d.req("POST", "/v1/models/digits-kpca/project", {"X": X[600:800]})
    got = (r.json() or {}).get("projections", [])
    ok = len(got) == len(ref) and all(len(row) == k for row in got)
    worst = 0.0
    if ok:
        for j in range(k):  # eigenvectors are defined up to sign
            a, b = [row[j] for row in got], [row[j] for row in ref]
            sign = 1.0 if sum(x * y for x, y in zip(a, b)) >= 0 else -1.0
            worst = max(worst, max_rel([sign * x for x in a], b))
    check(ok and worst <= 1e-8, "kpca: projections within 1e-8 of scikit-learn (up to sign)",
          worst if ok else r)
    emb = rows(read_fixture("kpca_digits_embedding.txt"), k)
    r = d.req("POST", "/v1/models/digits-kpca/project", {"X": X[:5]})
    got = (r.json() or {}).get("projections", [])
    check(len(got) == 5 and max_rel([abs(v) for row in got for v in row],
                                    [abs(v) for row in emb[:5] for v in row]) <= 1e-8,
          "kpca: projecting training points gives the embedding", got[:1])
    P = ref[:50]
    r = d.req("POST", "/v1/models/digits-kpca/project", {"X": P, "inverse": True})
    inv = [v for row in (r.json() or {}).get("projections", []) for v in row]
    ref_inv = read_fixture("kpca_digits_inverse.txt")
    check(len(inv) == len(ref_inv) and max_rel(inv, ref_inv) <= 1e-6,
          "kpca: inverse map within 1e-6 of scikit-learn's inverse_transform",
          max_rel(inv, ref_inv) if inv else r)
    # The randomized eigen-solver: same model, its own solver figure (3,
    # km_kpca_solver's KM_KPCA_SOLVER_RANDOMIZED), no fallback.
    r = d.req("POST", "/v1/models/digits-kpca-rand/fit", {
        "algorithm": "kpca", "kernel": {"type": "rbf", "gamma": 0.02},
        "params": {"n_components": k, "eigen_solver": "randomized"},
        "X": X[:600]})
    tr = (r.json() or {}).get("model", {}).get("training", {})
    check(r.status == 201 and tr.get("solver") == "randomized" and tr.get("fallback") is False
          and tr.get("iterations", 0) >= 3
          and len(tr.get("eigenvalues", [])) == k
          and max_rel(tr.get("eigenvalues", []), ref_eig) <= 1e-8,
          "kpca: eigen_solver randomized fits (201, training.solver randomized, "
          "eigenvalues within 1e-8 of scikit-learn)", r)
    r = d.req("POST", "/v1/models/digits-kpca-rand/project", {"X": X[600:800]})
    got = (r.json() or {}).get("projections", [])
    ok = len(got) == len(ref) and all(len(row) == k for row in got)
    worst = 0.0
    if ok:
        for j in range(k):
            a, b = [row[j] for row in got], [row[j] for row in ref]
            sign = 1.0 if sum(x * y for x, y in zip(a, b)) >= 0 else -1.0
            worst = max(worst, max_rel([sign * x for x in a], b))
    check(ok and worst <= 1e-6, "kpca: randomized projections within 1e-6 of "
          "scikit-learn (up to sign)", worst if ok else r)
    r = d.req("POST", "/v1/models/digits-kpca/predict", {"X": X[:1]})
    check(r.status == 409, "kpca: predict on a kpca model is 409", r)
    r = d.req("POST", "/v1/models/digits-kpca/project", {"X": [[1] * 7]})
    check(r.status == 400 and "the model expects 64" in r.body, "kpca: wrong feature count", r)
    r = d.req("POST", "/v1/models/digits-kpca/project", {"X": P[:1], "inverse": "yes"})
    check(r.status == 400, "kpca: inverse must be a boolean", r)
    d.req("POST", "/v1/models/kpca-plain/fit", {
        "algorithm": "kpca", "kernel": {"type": "rbf"}, "params": {"n_components": 2},
        "X": X[:50]})
    r = d.req("POST", "/v1/models/kpca-plain/project", {"X": [[0, 0]], "inverse": True})
    check(r.status == 409, "kpca: inverse without fit_inverse_transform is 409", r)
    bad = [
        ({"params": {"n_components": 11}}, 422, "params.n_components (11) is above n_samples (10)"),
        ({"params": {}}, 400, "params.n_components is required"),
        ({"params": {"n_components": 2}, "y": [1] * 10}, 400, "y does not apply to kpca"),
        ({"params": {"n_components": 2, "eigen_solver": "arpack"}}, 400, "params.eigen_solver"),
        ({"params": {"n_components": 2, "alpha": -1}}, 400, "params.alpha"),
        ({"params": {"n_components": 10}, "kernel": {"type": "linear"}}, 422, "positive eigenvalues"),
    ]
    for extra, status, text in bad:
        body = {"algorithm": "kpca", "kernel": {"type": "rbf"},
                "X": [[i, i % 3] for i in range(10)]}
        body.update(extra)
        r = d.req("POST", "/v1/models/kpca-bad/fit", body)
        msg = (r.json() or {}).get("error", {}).get("message", "")
        check(r.status == status and text in msg, f"kpca error: {text}", r)


def scenario_crud(d, models):
    r = d.req("GET", "/v1/models")
    names = [m["name"] for m in (r.json() or {}).get("models", [])]
    check(r.status == 200 and names == sorted(names) and "base" in names,
          "list: sorted, has base", names)
    r = d.req("GET", "/v1/models/base")
    m = r.json() or {}
    check(r.status == 200 and m.get("algorithm") == "krr" and
          m.get("created_at", "").endswith("Z") and "seconds" in m.get("training", {}),
          "get: metadata", r)
    d.req("POST", "/v1/models/doomed/fit", fit_body([[1, 2], [3, 4]], [1, 2]))
    check(os.path.exists(os.path.join(models, "doomed.kmm")), "fit writes a file")
    r = d.req("DELETE", "/v1/models/doomed")
    check(r.status == 204, "delete: 204", r)
    check(not os.path.exists(os.path.join(models, "doomed.kmm")), "delete removes the file")
    check(d.req("GET", "/v1/models/doomed").status == 404, "delete: then 404")
    # Re-fit replaces and counts versions.
    r1 = d.req("POST", "/v1/models/ver/fit", fit_body([[1, 2], [3, 4]], [1, 2]))
    r2 = d.req("POST", "/v1/models/ver/fit", fit_body([[1, 2], [3, 5]], [1, 2]))
    check(r1.json()["model"]["version"] == 1 and r2.json()["model"]["version"] == 2,
          "re-fit increments the version", r2)
    # Request ids.
    r = d.req("GET", "/livez", headers=[("X-Request-Id", "abc-123")])
    check(r.headers.get("x-request-id") == "abc-123", "request id echoed", r.headers)
    r = d.req("GET", "/livez")
    check(len(r.headers.get("x-request-id", "")) == 16, "request id generated", r.headers)
    r = d.req("GET", "/v1")
    v = r.json() or {}
    check(v.get("name") == "kmserve" and "krr" in v.get("algorithms", []) and
          "laplacian" in v.get("kernels", []), "GET /v1", r)
    r = d.req("HEAD", "/livez")
    check(r.status == 200 and r.body == "", "HEAD answers without a body", r)


def scenario_plain(d):
    """What a person at a prompt expects: every JSON answer (success or
    error, /v1 or /v2) ends with a newline, and a kernel may be given by
    its name alone."""
    asks = [("GET", "/v1", None), ("GET", "/v1/models", None),
            ("GET", "/v1/models/base", None), ("GET", "/v1/models/nope", None),
            ("POST", "/v1/models/base/predict", {"X": [[1, 2]]}),
            ("POST", "/v1/models/base/predict", {"X": [[1]]}),
            ("GET", "/v1/jobs", None), ("GET", "/readyz", None),
            ("GET", "/v2/models/base", None), ("GET", "/v2/models/nope", None),
            ("POST", "/v1/kernels/gram", {"kernel": "linear", "X": [[1, 2]]})]
    bad = []
    for method, path, body in asks:
        r = d.req(method, path, body)
        if r.json() is None or not r.body.endswith("}\n"):
            bad.append((method, path, r.status, r.body[-40:]))
    check(not bad, f"{len(asks)} JSON answers (errors too) end with a newline", bad)
    X, y = [[0, 1], [1, 0], [2, 2], [3, 1]], [1, 2, 3, 4]
    named = d.req("POST", "/v1/models/bare/fit", {"algorithm": "krr", "kernel": "rbf",
                                                  "X": X, "y": y})
    full = d.req("POST", "/v1/models/full/fit", {"algorithm": "krr", "kernel": {"type": "rbf"},
                                                 "X": X, "y": y})
    kb = (named.json() or {}).get("model", {}).get("kernel")
    check(named.status == 201 and kb == {"type": "rbf", "gamma": 0.5} and
          kb == (full.json() or {}).get("model", {}).get("kernel"),
          'fit with "kernel": "rbf" is {"type": "rbf"} with its defaults (gamma 1/2)', named)
    T = {"X": [[0.5, 0.5], [2, 1]]}
    pb, pf = (d.req("POST", f"/v1/models/{n}/predict", T).json() or {} for n in ("bare", "full"))
    check("predictions" in pb and pb["predictions"] == pf["predictions"],
          "the two answer the same predictions", (pb, pf))
    r = d.req("POST", "/v1/models/bare/fit", {"algorithm": "krr", "kernel": "cosine", "X": X, "y": y})
    check(r.status == 400 and (r.json() or {}).get("error", {}).get("message", "").startswith(
          'kernel "cosine" is not a known kernel; expected one of linear,'),
          "an unknown bare name: 400 naming kernel and the names", r)
    r = d.req("POST", "/v1/models/bare/fit", {"algorithm": "krr", "kernel": 3, "X": X, "y": y})
    check(r.status == 400 and "kernel must be an object or a kernel's name, not a number"
          in r.body, "a number as kernel: 400", r)


def scenario_limits(d):
    big = b'{"X":[' + b",".join([b"[1.0,2.0]"] * 300000) + b"]}"
    r = d.req("POST", "/v1/models/base/predict", big, chunked=True,
              headers=[("Content-Type", "application/json")])
    check(r.status == 413 and r.json()["error"]["code"] == "payload_too_large",
          "chunked body over --max-body-mb: 413", r)
    r = d.req("POST", "/v1/models/base/predict", big,
              headers=[("Content-Type", "application/json")])
    check(r.status == 413, "declared body over --max-body-mb: 413", r)
    check(d.req("GET", "/livez").status == 200, "alive after the limits")


def scenario_async(d):
    X, y = synthetic(300, 5, 1)
    r = d.req("POST", "/v1/models/asyncm/fit", fit_body(X, y),
              headers=[("Prefer", "respond-async")])
    j = (r.json() or {}).get("job", {})
    check(r.status == 202 and r.headers.get("location") == f"/v1/jobs/{j.get('id')}",
          "Prefer: respond-async gives 202 and Location", r)
    job = wait_job(d, j.get("id"), ("succeeded", "failed"))
    check(job and job["status"] == "succeeded" and job["progress"] == 1.0 and
          job["result"]["name"] == "asyncm" and job["error"] is None,
          "async job succeeds with progress 1.0", job)
    r = d.req("POST", "/v1/models/asyncm/fit", fit_body(X, y, **{"async": True}))
    check(r.status == 202, '"async": true gives 202', r)
    wait_job(d, r.json()["job"]["id"], ("succeeded",))
    check(d.req("GET", "/v1/models/asyncm").json()["version"] == 2,
          "async re-fit served as version 2")
    r = d.req("GET", "/v1/jobs")
    check(r.status == 200 and len(r.json()["jobs"]) >= 2, "GET /v1/jobs lists jobs", r)
    # Validation comes first, also for async.
    r = d.req("POST", "/v1/models/asyncbad/fit",
              {"algorithm": "krr", "kernel": {"type": "rbf"}, "X": [[1]], "y": [1, 2],
               "async": True})
    check(r.status == 400 and d.req("GET", "/v1/models/asyncbad").status == 404,
          "invalid async fit: 400 at once, nothing created", r)


def scenario_cancel_and_busy(d):
    """A long fit is cancelled; the old version stays. While it runs,
    predicts keep answering."""
    X, y = synthetic(BIG, 5, 2)
    d.req("POST", "/v1/models/cancelme/fit", fit_body(X[:50], y[:50]))
    r = d.req("POST", "/v1/models/cancelme/fit", fit_body(X, y, **{"async": True}))
    jid = r.json()["job"]["id"]
    job = wait_job(d, jid, ("running", "succeeded", "failed"))
    running = job["status"] == "running"
    codes = [d.req("POST", "/v1/models/base/predict", {"X": [[1, 2]]}).status
             for _ in range(20)]
    seen = []
    deadline = time.time() + 60
    while time.time() < deadline:
        j = d.req("GET", f"/v1/jobs/{jid}").json()
        if j["status"] != "running" or j["progress"] >= 0.5:
            break
        seen.append(j["progress"])
        time.sleep(0.01)
    check(seen == sorted(seen) and any(0 < p < 1 for p in seen),
          "job progress rises through values between 0 and 1", seen[-10:])
    still = d.req("GET", f"/v1/jobs/{jid}").json()["status"] == "running"
    check(running and still and codes == [200] * 20,
          "predicts answer while a fit runs", (job["status"], codes))
    r = d.req("DELETE", f"/v1/jobs/{jid}")
    check(r.status == 202, "cancel: 202", r)
    job = wait_job(d, jid, ("cancelled", "succeeded", "failed"))
    check(job["status"] == "cancelled" and job["error"]["code"] == "conflict" and
          job["error"]["message"].endswith("was cancelled; version 1 stays served"),
          "job ends cancelled, saying version 1 stays served", job)
    m = d.req("GET", "/v1/models/cancelme").json()
    check(m["version"] == 1 and m["n_samples"] == 50, "cancelled fit keeps version 1", m)
    r = d.req("DELETE", f"/v1/jobs/{jid}")
    check(r.status == 409, "cancelling a finished job: 409", r)
    # the first fit of a name, cancelled: nothing is served, and the
    # message does not speak of a previous version
    r = d.req("POST", "/v1/models/cancelnew/fit", fit_body(X, y, **{"async": True}))
    jid = r.json()["job"]["id"]
    r = d.req("DELETE", f"/v1/jobs/{jid}")
    job = wait_job(d, jid, ("cancelled", "succeeded", "failed"))
    check(r.status == 202 and job["status"] == "cancelled" and
          job["error"]["message"].endswith("; no version was made") and
          d.req("GET", "/v1/models/cancelnew").status == 404,
          "cancelling a new name's first fit: no version was made, 404", job)


def scenario_metrics(d):
    def predict_count(text):
        for line in text.splitlines():
            if line.startswith('kmserve_http_requests_total{route="/v1/models/{name}/predict",'
                               'method="POST",code="200"}'):
                return int(line.split()[-1])
        return 0
    before = d.req("GET", "/metrics")
    d.req("POST", "/v1/models/base/predict", {"X": [[1, 2], [3, 4], [5, 6]]})
    after = d.req("GET", "/metrics")
    check(before.headers.get("content-type", "").startswith("text/plain") and
          predict_count(after.body) == predict_count(before.body) + 1,
          "metrics: predict counter moves", after.body[:200])
    names = ["kmserve_http_request_duration_seconds_bucket", "kmserve_fit_duration_seconds_bucket",
             "kmserve_predicted_rows_total", "kmserve_models_loaded", "kmserve_jobs{",
             "kmserve_build_info{version="]
    missing = [n for n in names if n not in after.body]
    check(not missing, "metrics: names clients alert on are present", missing)


def blas_core_label(d):
    for line in d.req("GET", "/metrics").body.splitlines():
        m = re.match(r'kmserve_build_info\{version="[^"]*",blas_core="([^"]*)"\} 1$', line)
        if m:
            return m.group(1)
    return None


def openblas_own_choice(env):
    """The kernel set OpenBLAS picks by itself on this CPU: asked of the
    library the daemon links, loaded in a fresh process without the
    variable."""
    code = ("import ctypes; l = ctypes.CDLL('libopenblas.so.0'); "
            "l.openblas_get_corename.restype = ctypes.c_char_p; "
            "print(l.openblas_get_corename().decode())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60)
    return out.stdout.strip()


def scenario_blas_core(binary, tmp):
    """OpenBLAS's kernels: with OPENBLAS_CORETYPE unset the daemon runs the
    widest set this CPU's flags (read here from /proc/cpuinfo) allow, in
    the same process (its PID, with the variable in its environment after
    the re-execution) when OpenBLAS's own choice is narrower, and without
    re-executing when it is not; a value the operator set is kept as it
    is."""
    with open("/proc/cpuinfo") as f:
        flags = set(next((l for l in f if l.startswith("flags")), "flags:").split(":", 1)[1].split())
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"} <= flags:
        want = {"SkylakeX", "Cooperlake", "SapphireRapids"}
    elif {"avx2", "fma"} <= flags:
        want = {"Haswell", "Zen", "Excavator", "SkylakeX", "Cooperlake", "SapphireRapids"}
    else:
        want = None  # no wider set to ask for: whatever OpenBLAS chose
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    for tag, extra_env, expect in (("unset", {}, want), ("Prescott", {"OPENBLAS_CORETYPE": "Prescott"}, {"Prescott"})):
        models = os.path.join(tmp, "blas-" + tag, "models")
        os.makedirs(models)
        d = Daemon(binary, models, env=dict(env, **extra_env)).start()
        try:
            label = blas_core_label(d)
            check(label is not None and (expect is None or label in expect),
                  f"blas core ({tag}): the kernels that run suit the CPU or the operator's choice",
                  (label, sorted(expect or [])))
            if tag == "unset" and want is not None:
                with open(f"/proc/{d.proc.pid}/environ", "rb") as f:
                    environ = [e for e in f.read().split(b"\0") if e.startswith(b"OPENBLAS_CORETYPE=")]
                native = openblas_own_choice(env)
                if native in want:
                    check(environ == [], "blas core: OpenBLAS's own choice already suits "
                          "the CPU: the daemon did not re-execute", (native, environ))
                else:
                    check(environ == [("OPENBLAS_CORETYPE=" + label).encode()],
                          "blas core: the daemon re-executed itself in place with the "
                          "variable set", (native, label, environ))
        finally:
            check(d.stop() == 0, f"blas core ({tag}): daemon exits 0")


def scenario_openapi(d):
    """api/openapi.yaml and the daemon agree: the same routes (the server's
    own list, from its metrics' route labels), the same methods on each
    (others answer 405 with an Allow header naming exactly the spec's), and
    the spec's examples succeed."""
    import yaml
    with open(os.path.join(ROOT, "api", "openapi.yaml")) as f:
        spec = yaml.safe_load(f)
    paths = spec["paths"]
    served = set()
    for line in d.req("GET", "/metrics").body.splitlines():
        if line.startswith("kmserve_http_request_duration_seconds_count{route="):
            served.add(line.split('"')[1])
    served.discard("unmatched")
    check(served == set(paths), "openapi: same routes as the server",
          sorted(served ^ set(paths)))
    verbs = ("get", "post", "delete", "put", "patch")
    for path, ops in paths.items():
        concrete = path.replace("{name}", "base").replace("{id}", "j-none")
        allowed = {v.upper() for v in verbs if v in ops}
        if "GET" in allowed:
            allowed.add("HEAD")
        for v in verbs:
            r = d.req(v.upper(), concrete, b"{}" if v == "post" else None,
                      headers=[("Content-Type", "application/json")] if v == "post" else [])
            if v.upper() in allowed:
                ok = r.status != 405
            else:
                got = {m.strip() for m in r.headers.get("allow", "").split(",")}
                ok = r.status == 405 and got == allowed
            check(ok, f"openapi: {v.upper()} {path}", r)
    fit = paths["/v1/models/{name}/fit"]["post"]["requestBody"]["content"]["application/json"]["example"]
    r = d.req("POST", "/v1/models/spec-example/fit", fit)
    check(r.status == 201, "openapi: the fit example succeeds", r)
    pred = paths["/v1/models/{name}/predict"]["post"]["requestBody"]["content"]["application/json"]["example"]
    r = d.req("POST", "/v1/models/spec-example/predict", pred)
    check(r.status == 200, "openapi: the predict example succeeds", r)
    score = paths["/v1/models/{name}/score"]["post"]["requestBody"]["content"]["application/json"]["example"]
    r = d.req("POST", "/v1/models/spec-example/score", score)
    check(r.status == 200 and set((r.json() or {}).get("scoring", {})) == {"r2", "mse", "mae"},
          "openapi: the score example succeeds", r)


def scenario_restart(binary, tmp):
    models = os.path.join(tmp, "restart", "models")
    os.makedirs(models)
    d = Daemon(binary, models).start()
    X, y = synthetic(200, 4, 3)
    d.req("POST", "/v1/models/keep/fit", fit_body(X, y))
    meta = d.req("GET", "/v1/models/keep").json()
    before = d.req("POST", "/v1/models/keep/predict", {"X": X[:10]}).json()
    rc = d.stop(signal.SIGTERM)
    check(rc == 0, "SIGTERM: exit status 0", rc)
    d.start()
    after = d.req("POST", "/v1/models/keep/predict", {"X": X[:10]}).json()
    meta2 = d.req("GET", "/v1/models/keep").json()
    check(before == after and after is not None, "restart: same predictions", after)
    check(meta2 == meta, "restart: same metadata (version, created_at)", (meta, meta2))

    # kill -9 while a fit that replaces the model runs.
    Xb, yb = synthetic(BIG, 5, 4)
    r = d.req("POST", "/v1/models/keep/fit", fit_body(Xb, yb, **{"async": True}))
    job = wait_job(d, r.json()["job"]["id"], ("running", "succeeded"))
    was_running = job["status"] == "running"
    d.stop(signal.SIGKILL)
    d.start()
    m = d.req("GET", "/v1/models/keep").json()
    again = d.req("POST", "/v1/models/keep/predict", {"X": X[:10]}).json()
    check(was_running and m["version"] == 1 and again == before,
          "kill -9 during a re-fit: version 1 still served", (job["status"], m.get("version")))
    leftovers = [f for f in os.listdir(models) if ".tmp-" in f]
    check(not leftovers, "no temporary files after restart", leftovers)

    # Corrupt and truncated files are moved aside; the rest is served.
    with open(os.path.join(models, "keep.kmm"), "rb") as f:
        good = f.read()
    with open(os.path.join(models, "trunc.kmm"), "wb") as f:
        f.write(good[:len(good) // 2])
    flipped = bytearray(good)
    flipped[len(flipped) // 2] ^= 0x10
    with open(os.path.join(models, "flip.kmm"), "wb") as f:
        f.write(bytes(flipped))
    with open(os.path.join(models, "junk.kmm"), "wb") as f:
        f.write(b"not a model at all")
    d.stop()
    d.start()
    names = [x["name"] for x in d.req("GET", "/v1/models").json()["models"]]
    files = os.listdir(models)
    aside = [f for f in files if ".corrupt-" in f]
    check(names == ["keep"] and len(aside) == 3,
          "corrupt files quarantined, the rest served", (names, files))
    # SIGHUP picks up a model file written by someone else.
    shutil.copy(os.path.join(models, "keep.kmm"), os.path.join(models, "copy.kmm"))
    d.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 10
    while time.time() < deadline and d.req("GET", "/v1/models/copy").status != 200:
        time.sleep(0.05)
    check(d.req("GET", "/v1/models/copy").status == 200, "SIGHUP rescans the directory")
    check(d.stop() == 0, "SIGTERM again: exit 0")


def run_scenarios(scenarios, binary, prefix, only=""):
    """Runs each scenario(binary, tmp) in one temporary folder (only: the
    comma-separated names without "scenario_" to run, all when empty); a
    scenario that raises is a failure, and the rest still run. Returns
    the runner's exit status (tally's summary)."""
    names = [s for s in only.split(",") if s]
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        for s in scenarios:
            if names and s.__name__.replace("scenario_", "") not in names:
                continue
            try:
                s(binary, tmp)
            except Exception as e:  # a crash of a scenario is a failure
                check(False, f"{s.__name__}: runner", repr(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tally.summary()


def with_daemon(server, prefix, body, *flags, setup=None):
    """The frame of a runner that needs one daemon: a fresh models
    directory in a temporary folder (setup(models) fills it first, if
    given), the daemon started on it with flags, body(d) run, a crash of
    body counted as a failure, the daemon stopped and the folder removed.
    Returns the exit status of the tally's closing line."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    models = os.path.join(tmp, "models")
    os.makedirs(models)
    d = Daemon(os.path.abspath(server), models, *flags)
    try:
        if setup:
            setup(models)
        d.start()
        body(d)
    except Exception as e:  # a crash of the runner is a failure, not a pass
        check(False, "runner", repr(e))
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return tally.summary()


@contextlib.contextmanager
def temp_daemon(server, prefix, *flags):
    """A second daemon inside a runner: started with flags on a fresh
    models directory in a temporary folder, stopped and the folder
    removed when the block ends."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    models = os.path.join(tmp, "models")
    os.makedirs(models)
    d = Daemon(os.path.abspath(server), models, *flags)
    try:
        d.start()
        yield d
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def wait_status(d, path, status, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = d.req("GET", path)
        if r.status == status:
            return r
        time.sleep(0.05)
    return d.req("GET", path)


def scenario_replicas(binary, tmp):
    """Two daemons share one models directory, as replicas on a
    ReadWriteMany volume: what one writes or deletes, the other's watcher
    picks up within --watch-interval."""
    models = os.path.join(tmp, "replicas", "models")
    os.makedirs(models)
    a = Daemon(binary, models, "--watch-interval", "0.2").start()
    b = Daemon(binary, models, "--watch-interval", "0.2").start()
    try:
        X, y = synthetic(100, 3, 7)
        a.req("POST", "/v1/models/shared/fit", fit_body(X, y))
        r = wait_status(b, "/v1/models/shared", 200)
        check(r.status == 200 and r.json()["version"] == 1,
              "replicas: a model fitted on A is served by B", r)
        pa = a.req("POST", "/v1/models/shared/predict", {"X": X[:5]}).json()["predictions"]
        pb = b.req("POST", "/v1/models/shared/predict", {"X": X[:5]}).json()["predictions"]
        check(pa == pb, "replicas: same predictions")
        a.req("POST", "/v1/models/shared/fit", fit_body(X[:50], y[:50]))
        deadline = time.time() + 10
        while time.time() < deadline and b.req("GET", "/v1/models/shared").json()["version"] != 2:
            time.sleep(0.05)
        check(b.req("GET", "/v1/models/shared").json()["version"] == 2,
              "replicas: a re-fit on A reaches B")
        a.req("DELETE", "/v1/models/shared")
        r = wait_status(b, "/v1/models/shared", 404)
        check(r.status == 404, "replicas: a delete on A unloads on B", r)
        # A's own writes are not loaded back as new versions.
        a.req("POST", "/v1/models/own/fit", fit_body(X, y))
        time.sleep(0.6)
        check(a.req("GET", "/v1/models/own").json()["version"] == 1,
              "replicas: own writes are not reloaded")
    finally:
        a.stop()
        b.stop()


def scenario_security(binary, tmp):
    """Bearer tokens with scopes; TLS with a certificate made here."""
    base = os.path.join(tmp, "security")
    models = os.path.join(base, "models")
    os.makedirs(models)
    admin, read = "admin-" + "a" * 20, "read-" + "r" * 20
    tokens = os.path.join(base, "tokens")
    with open(tokens, "w") as f:
        f.write(f"# scopes\n{admin} admin\n\n{read} read\n")
    d = Daemon(binary, models, "--token-file", tokens).start()
    A = [("Authorization", f"Bearer {admin}")]
    R = [("Authorization", f"Bearer {read}")]
    X, y = synthetic(30, 2, 8)
    try:
        r = d.req("POST", "/v1/models/t/fit", fit_body(X, y))
        check(r.status == 401 and r.json()["error"]["code"] == "unauthenticated" and
              r.headers.get("www-authenticate", "").startswith("Bearer"),
              "tokens: fit without a token is 401 with WWW-Authenticate", r)
        r = d.req("POST", "/v1/models/t/fit", fit_body(X, y), headers=R)
        check(r.status == 403 and r.json()["error"]["code"] == "permission_denied",
              "tokens: a read token cannot fit (403)", r)
        r = d.req("POST", "/v1/models/t/fit", fit_body(X, y), headers=A)
        check(r.status == 201, "tokens: an admin token fits", r)
        bad = [("Authorization", "Bearer " + read[:-1] + "x")]
        r = d.req("POST", "/v1/models/t/predict", {"X": X[:2]}, headers=bad)
        check(r.status == 401, "tokens: a wrong token is 401", r)
        r = d.req("POST", "/v1/models/t/predict", {"X": X[:2]}, headers=R)
        check(r.status == 200, "tokens: a read token predicts", r)
        check(d.req("GET", "/v1/models", headers=R).status == 200 and
              d.req("GET", "/v1/models").status == 401, "tokens: listing needs read")
        check(d.req("DELETE", "/v1/models/t", headers=R).status == 403 and
              d.req("GET", "/v1/jobs", headers=R).status == 403,
              "tokens: delete and jobs need admin")
        check(d.req("GET", "/livez").status == 200 and d.req("GET", "/readyz").status == 200
              and d.req("GET", "/metrics").status == 200,
              "tokens: health and metrics stay open")
    finally:
        d.stop()
    d = Daemon(binary, models, "--token-file", tokens, "--protect-metrics", "true").start()
    check(d.req("GET", "/metrics").status == 401 and
          d.req("GET", "/metrics", headers=R).status == 200,
          "tokens: --protect-metrics guards /metrics")
    d.stop()
    with open(tokens, "w") as f:
        f.write("short read\n")
    p = subprocess.run([binary, "--token-file", tokens, "--models-dir", models,
                        "--listen", f"127.0.0.1:{free_port()}"], capture_output=True, timeout=30)
    check(p.returncode != 0 and b"16 to 255" in p.stderr, "tokens: a weak token file is refused",
          p.stderr[-200:])

    # TLS
    made = tls_cert(base)
    if not made:
        return
    cert, key = made
    import ssl
    ctx = ssl.create_default_context(cafile=cert)
    d = Daemon(binary, models, "--tls-cert", cert, "--tls-key", key, tls=ctx).start()
    try:
        out = subprocess.run(["curl", "-s", "--cacert", cert,
                              f"https://127.0.0.1:{d.port}/livez"], capture_output=True,
                             text=True, timeout=30)
        check(out.returncode == 0 and json.loads(out.stdout or "{}") == {"status": "live"},
              "tls: curl --cacert gets /livez over HTTPS", out)
        r = d.req("POST", "/v1/models/tls/fit", fit_body(X, y))
        check(r.status == 201, "tls: fit over HTTPS", r)
        plain = http(d.port, "GET", "/livez", timeout=5)
        check(plain.status != 200, "tls: plain HTTP is not answered", plain)
        untrusted = subprocess.run(["curl", "-s", f"https://127.0.0.1:{d.port}/livez"],
                                   capture_output=True, timeout=30)
        check(untrusted.returncode != 0, "tls: an unknown certificate is refused by curl")
    finally:
        d.stop()


def tls_cert(base):
    """A self-signed certificate for 127.0.0.1 made with openssl in base:
    (cert, key), or None (a failed check)."""
    cert, key = os.path.join(base, "cert.pem"), os.path.join(base, "key.pem")
    gen = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                          "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                          "-addext", "subjectAltName=IP:127.0.0.1"], capture_output=True)
    if not check(gen.returncode == 0, "tls: certificate generated", gen.stderr[-300:]):
        return None
    return cert, key


def sync_fit_running(d, path, body):
    """Starts a synchronous fit from a thread and returns (thread, result)
    once the daemon lists a running job; result["r"] is its answer."""
    result = {}
    t = threading.Thread(target=lambda: result.update(r=d.req("POST", path, body)))
    t.start()
    deadline = time.time() + 60
    while time.time() < deadline and not any(
            j["status"] == "running" for j in d.req("GET", "/v1/jobs").json()["jobs"]):
        time.sleep(0.02)
    return t, result


def scenario_lifecycle(binary, tmp):
    """SIGTERM while a synchronous fit runs; two fits and predicts at once;
    slow and idle clients against the connection limit and timeout."""
    models = os.path.join(tmp, "lifecycle", "models")
    os.makedirs(models)
    X, y = synthetic(BIG, 5, 9)
    # a shutdown timeout no loaded machine reaches: the check is that the
    # running fit finishes, not how long the default (30 s) waits for it
    d = Daemon(binary, models, "--shutdown-timeout", "900").start()
    d.req("POST", "/v1/models/life/fit", fit_body(X[:40], y[:40]))
    t, result = sync_fit_running(d, "/v1/models/life/fit", fit_body(X, y))
    d.proc.send_signal(signal.SIGTERM)
    time.sleep(0.1)
    ready = d.req("GET", "/readyz")
    check(ready.status == 503 and ready.json() == {"status": "draining"},
          "SIGTERM: /readyz answers 503 draining at once", ready)
    r = d.req("POST", "/v1/models/other/fit", fit_body(X[:10], y[:10]))
    check(r.status == 503 and r.json()["error"]["code"] == "unavailable",
          "SIGTERM: new fits are refused with 503", r)
    r = d.req("POST", "/v1/models/life/predict", {"X": X[:2]})
    check(r.status == 200, "SIGTERM: predicts are still answered while draining", r)
    t.join(300)
    r = result.get("r")
    check(r is not None and r.status == 201 and r.json()["model"]["version"] == 2,
          "SIGTERM: the running synchronous fit finishes and is answered", r)
    rc = d.proc.wait(timeout=60)
    d.proc = None
    d.check_log()
    check(rc == 0, "SIGTERM: exit 0 after draining", rc)

    d = Daemon(binary, models, "--shutdown-timeout", "0").start()
    t, result = sync_fit_running(d, "/v1/models/life/fit", fit_body(X, y))
    rc = d.stop()
    t.join(300)
    r = result.get("r")
    check(rc == 0 and r is not None and r.status == 409 and "cancelled" in r.body,
          "SIGTERM with --shutdown-timeout 0: the waiting client is told the fit "
          "was cancelled, exit 0", (rc, r))
    d.start()
    check(d.req("GET", "/v1/models/life").json()["version"] == 2,
          "the cancelled fit left version 2 serving")
    d.stop()

    # Two long fits at once; predicts keep answering meanwhile.
    d = Daemon(binary, models, "--workers", "2", "--blas-threads", "1").start()
    ids = [d.req("POST", f"/v1/models/par{i}/fit", fit_body(X, y, **{"async": True}))
           .json()["job"]["id"] for i in range(2)]
    deadline = time.time() + 60
    while time.time() < deadline and sum(
            d.req("GET", f"/v1/jobs/{j}").json()["status"] == "running" for j in ids) < 2:
        time.sleep(0.02)
    lat, codes = [], []
    for _ in range(30):
        t0 = time.perf_counter()
        codes.append(d.req("POST", "/v1/models/life/predict", {"X": X[:1]}).status)
        lat.append(time.perf_counter() - t0)
    both = sum(d.req("GET", f"/v1/jobs/{j}").json()["status"] == "running" for j in ids)
    lat.sort()
    print(f"# predict latency while two fits run: median {lat[15] * 1e3:.1f} ms, "
          f"max {lat[-1] * 1e3:.1f} ms")
    check(codes == [200] * 30 and both == 2, "predicts answer while two fits run",
          (codes, both))
    for j in ids:
        d.req("DELETE", f"/v1/jobs/{j}")
    d.stop()

    # Idle and slow clients cannot hold the server.
    # One HTTP thread: MHD divides the limit among its threads, and the
    # kernel spreads connections over them unevenly.
    d = Daemon(binary, models, "--max-connections", "4", "--connection-timeout", "1",
               "--http-threads", "1").start()
    # With 4 connections, 3 may wait for their headers (one is kept in
    # reserve): each new connection past that closes the one that has
    # waited longest, so idle connections cannot lock a client out.
    idle = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(4)]
    time.sleep(0.2)
    r = d.req("GET", "/livez", timeout=2)
    idle[0].settimeout(2)
    try:
        first_closed = idle[0].recv(100) == b""
    except OSError:
        first_closed = True
    check(r.status == 200 and first_closed, "connection limit: the connection "
          "idle longest makes room for a new client", (r, first_closed))
    time.sleep(2.0)
    r = d.req("GET", "/livez", timeout=5)
    check(r.status == 200, "connection timeout: idle connections are closed", r)
    slow = socket.create_connection(("127.0.0.1", d.port))
    slow.sendall(b"POST /v1/models/life/predict HTTP/1.1\r\nHost: x\r\n")
    time.sleep(2.0)
    slow.settimeout(5)
    try:
        closed = slow.recv(100) == b""
    except OSError:
        closed = True
    check(closed, "connection timeout: a slow client is disconnected")
    for s in idle + [slow]:
        s.close()
    check(d.req("GET", "/livez").status == 200, "alive after slow and idle clients")
    d.stop()


def scenario_admission(binary, tmp):
    models = os.path.join(tmp, "admission", "models")
    os.makedirs(models)
    d = Daemon(binary, models, "--memory-budget-mb", "1", "--workers", "1",
               "--queue", "1").start()
    X, y = synthetic(1000, 3, 5)
    r = d.req("POST", "/v1/models/big/fit", fit_body(X, y))
    msg = (r.json() or {}).get("error", {}).get("message", "")
    check(r.status == 413 and "estimated" in msg and "budget" in msg,
          "fit over the memory budget: 413 with estimate and budget", r)
    check(d.req("GET", "/v1/models/big").status == 404, "nothing created by a refused fit")
    d.stop()
    d = Daemon(binary, models, "--workers", "1", "--queue", "1").start()
    Xb, yb = synthetic(BIG * 3 // 4, 5, 6)
    body = fit_body(Xb, yb, **{"async": True})
    a = d.req("POST", "/v1/models/q/fit", body)
    wait_job(d, a.json()["job"]["id"], ("running",))
    b = d.req("POST", "/v1/models/q/fit", body)
    c = d.req("POST", "/v1/models/q/fit", body)
    check(a.status == 202 and b.status == 202 and c.status == 429 and
          c.json()["error"]["code"] == "too_many_requests", "queue full: 429",
          (a.status, b.status, c))
    for r in (a, b):
        d.req("DELETE", f"/v1/jobs/{r.json()['job']['id']}")
    check(d.stop() == 0, "SIGTERM with cancelled fits: exit 0")
    d = Daemon(binary, models, "--fit-timeout", "0.05").start()
    r = d.req("POST", "/v1/models/slow/fit", fit_body(Xb, yb))
    msg = (r.json() or {}).get("error", {}).get("message", "")
    check(r.status == 422 and "--fit-timeout" in msg and
          d.req("GET", "/v1/models/slow").status == 404,
          "a fit over --fit-timeout fails with 422, nothing created", r)
    d.stop()


def scenario_logging(binary, tmp):
    """The access log: batched, so lines come within a second and all of
    them by exit; and a SIGTERM that the kernel hands to a thread kmserve
    did not start (OpenBLAS's pool) still drains and exits 0."""
    models = os.path.join(tmp, "logging", "models")
    os.makedirs(models)
    d = Daemon(binary, models, "--access-log", "true").start()
    body = {"algorithm": "krr", "kernel": {"type": "linear"},
            "X": [[1, 2], [3, 4], [5, 7]], "y": [1, 2, 3]}
    r = d.req("POST", "/v1/models/lg/fit", body)
    rid = r.headers.get("x-request-id")
    d.req("GET", "/no/such/route")
    for _ in range(100):
        d.req("POST", "/v1/models/lg/predict", {"X": [[1, 2]]})

    def lines():
        with open(d.log_path, "rb") as f:
            out = []
            for raw in f.read().decode("utf-8", "replace").splitlines():
                try:
                    out.append(json.loads(raw))
                except ValueError:
                    pass
            return [x for x in out if x.get("event") == "request" and
                    x.get("path") != "/readyz"]  # the runner's start-up probe
    deadline = time.time() + 3
    while time.time() < deadline and len(lines()) < 102:
        time.sleep(0.05)
    got = lines()
    fit = [x for x in got if x.get("request_id") == rid]
    check(len(got) == 102, "access log: every request within a second", len(got))
    check(len(fit) == 1 and fit[0]["method"] == "POST" and
          fit[0]["path"] == "/v1/models/lg/fit" and fit[0]["status"] == 201 and
          fit[0]["bytes_in"] == len(json.dumps(body)) and fit[0]["bytes_out"] > 0 and
          isinstance(fit[0]["duration_ms"], float) and fit[0]["duration_ms"] >= 0 and
          re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", fit[0]["time"]),
          "access log: the fit's line (id, method, path, status, sizes, time)", fit)
    check(any(x["status"] == 404 and x["path"] == "/no/such/route" for x in got),
          "access log: a 404 is logged")
    for _ in range(50):
        d.req("POST", "/v1/models/lg/predict", {"X": [[1, 2]]})
    check(d.stop() == 0, "access log: SIGTERM exits 0")
    check(len(lines()) == 152, "access log: lines still pending at exit are written",
          len(lines()))

    d.start()
    pid = d.proc.pid
    foreign = []
    for tid in sorted(int(t) for t in os.listdir(f"/proc/{pid}/task")):
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            blocked = int(re.search(r"SigBlk:\s*([0-9a-f]+)", f.read()).group(1), 16)
        if tid != pid and not blocked & (1 << (signal.SIGTERM - 1)):
            foreign.append(tid)
    if not foreign:
        check(True, "signals: no thread here takes SIGTERM (one BLAS thread?)")
        d.stop()
        return
    os.kill(foreign[0], signal.SIGTERM)  # the kernel prefers that thread
    try:
        rc = d.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        rc = None
    with open(d.log_path, "rb") as f:
        drained = b'"event":"draining"' in f.read().split(b'"event":"ready"')[-1]
    check(rc == 0 and drained,
          "signals: SIGTERM taken by a library's thread still drains, exit 0",
          (rc, foreign))
    if rc is None:
        d.stop(signal.SIGKILL)
    d.proc = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(ROOT, "build", "kmserve"))
    args = ap.parse_args()
    binary = os.path.abspath(args.server)
    tmp = tempfile.mkdtemp(prefix="kmserve-it-")
    try:
        models = os.path.join(tmp, "main", "models")
        os.makedirs(models)
        d = Daemon(binary, models, "--max-body-mb", "2").start()
        try:
            r = d.req("POST", "/v1/models/base/fit", {
                "algorithm": "krr", "kernel": {"type": "linear"},
                "X": [[1, 2], [3, 4], [5, 7]], "y": [1, 2, 3]})
            check(r.status == 201, "set-up: fit base", r)
            run_cases(d)
            scenario_sklearn_parity(d)
            scenario_svm(d)
            scenario_kpca(d)
            scenario_crud(d, models)
            scenario_plain(d)
            scenario_limits(d)
            scenario_async(d)
            scenario_cancel_and_busy(d)
            scenario_metrics(d)
            scenario_openapi(d)
            check(d.req("GET", "/livez").status == 200, "alive after everything")
        finally:
            check(d.stop() == 0, "main daemon exits 0 on SIGTERM")
        scenario_restart(binary, tmp)
        scenario_blas_core(binary, tmp)
        scenario_admission(binary, tmp)
        scenario_replicas(binary, tmp)
        scenario_security(binary, tmp)
        scenario_lifecycle(binary, tmp)
        scenario_logging(binary, tmp)
    except Exception as e:  # a crash of the runner is a failure, not a pass
        check(False, "runner", repr(e))
    finally:
        log = os.path.join(tmp, "main", "daemon.log")
        if tally.failed and os.path.exists(log):
            print("--- daemon log (last lines) ---")
            with open(log, "rb") as f:
                print(b"".join(f.readlines()[-30:]).decode("utf-8", "replace"))
        shutil.rmtree(tmp, ignore_errors=True)
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
