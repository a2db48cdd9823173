#!/usr/bin/python3
"""Integration tests of kmctl: the real client against the real daemon.

Starts build/kmserve on a free loopback port with a temporary models
directory (as run.py does) and runs build/kmctl against it: fits from CSV
files written here and from data/breast_cancer.csv, predictions
compared value for value with what the HTTP API answers for the same rows,
models/get/delete/jobs/health, error messages and exit codes, tokens and
TLS, progress lines, and Ctrl-C during an asynchronous fit (without and
with a terminal) cancelling the job.

Standard library only. Usage (from the project root):
    /usr/bin/python3 tests/integration/kmctl_test.py \\
        --server build/kmserve --kmctl build/kmctl
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import csv
import io
import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (the daemon harness and HTTP helper of run.py)
from run import Daemon, check, synthetic  # noqa: E402

KMCTL = None
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "ThreadSanitizer",
                   "runtime error:")


def kmctl(d, *args, env=None, stdin=None, timeout=300):
    """Runs kmctl against daemon d (None: no server set); returns the
    CompletedProcess with text output. A sanitizer report fails the test."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("KMSERVE_")}
    if d is not None:
        e["KMSERVE_URL"] = f"http://127.0.0.1:{d.port}"
    e.update(env or {})
    p = subprocess.run([KMCTL] + [str(a) for a in args], env=e, input=stdin,
                       capture_output=True, text=True, timeout=timeout)
    for mark in SANITIZER_MARKS:
        if mark in p.stderr:
            check(False, f"kmctl sanitizer report ({mark})", p.stderr[-3000:])
            break
    return p


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def read_out(text):
    rows = list(csv.reader(io.StringIO(text)))
    return (rows[0], rows[1:]) if rows else ([], [])


def same(cell, value):
    """A CSV cell from kmctl equals a value from the JSON answer: numbers
    exactly (kmctl prints the shortest text that reads back the same)."""
    if isinstance(value, list):
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(cell) == float(value)
        except ValueError:
            return False
    return cell == value


def same_rows(out_rows, answers):
    if len(out_rows) != len(answers):
        return False
    for cells, a in zip(out_rows, answers):
        vals = a if isinstance(a, list) else [a]
        if len(cells) != len(vals) or not all(same(c, v) for c, v in zip(cells, vals)):
            return False
    return True


def load(path):
    with open(path) as f:
        r = list(csv.reader(f))
    return r[0], r[1:]


# ---------------------------------------------------------------- scenarios

def scenario_usage(d, tmp):
    p = kmctl(d, "--help")
    check(p.returncode == 0 and all(c in p.stdout for c in
          ("fit", "predict", "project", "score", "models", "get", "delete", "jobs", "health",
           "KMSERVE_URL", "KMSERVE_TOKEN")), "--help lists commands and environment", p)
    p = kmctl(d, "predict", "--help")
    check(p.returncode == 0 and "--output" in p.stdout and "--target" in p.stdout
          and "--gamma" not in p.stdout, "predict --help shows predict's options only", p)
    p = kmctl(d, "--version")
    check(p.returncode == 0 and p.stdout.startswith("kmctl "), "--version", p)
    for args, name in ((["frobnicate"], "unknown command"),
                       ([], "no command"),
                       (["get"], "missing argument"),
                       (["models", "extra"], "extra argument"),
                       (["fit", "m", "x.csv", "--algorithm", "krr", "--kernel", "rbf",
                         "--gamma", "abc"], "a non-number for --gamma"),
                       (["models", "--gamma", "1"], "an option of another command"),
                       (["fit", "m", "x.csv", "--kernel", "rbf"], "fit without --algorithm"),
                       (["predict", "m", "x.csv", "--output", "odds"], "a bad --output")):
        p = kmctl(d, *args)
        check(p.returncode == 2 and p.stderr.splitlines()[-1].startswith("kmctl: "),
              f"usage error exits 2: {name}", p)


def scenario_health(d, tmp):
    p = kmctl(d, "health")
    check(p.returncode == 0 and p.stdout.startswith("ready"), "health: ready exits 0", p)
    p = kmctl(None, "health", env={"KMSERVE_URL": f"http://127.0.0.1:{run.free_port()}"})
    check(p.returncode == 3 and "cannot reach" in p.stderr,
          "health: no server exits 3", p)
    p = kmctl(None, "--server", f"http://127.0.0.1:{d.port}", "health",
              env={"KMSERVE_URL": "http://127.0.0.1:1"})
    check(p.returncode == 0, "--server wins over KMSERVE_URL", p)
    p = kmctl(None, "models", "--server", "ftp://x")
    check(p.returncode == 2, "a non-HTTP URL is a usage error", p)


def scenario_krr(d, tmp):
    """A regression CSV with the target in the middle (--target), fit, then
    predict from the same file and compare with the HTTP API."""
    X, y = synthetic(120, 3, 11)
    rows = [[f"{r[0]:.6f}", f"{t:.6f}", f"{r[1]:.6f}", f"{r[2]:.6f}"] for r, t in zip(X, y)]
    path = write_csv(os.path.join(tmp, "reg.csv"), ["a", "target", "b", "c"], rows)
    p = kmctl(d, "fit", "reg", path, "--algorithm", "krr", "--kernel", "rbf",
              "--gamma", "0.2", "--alpha", "0.5", "--target", "target")
    check(p.returncode == 0 and "fitted reg version 1" in p.stdout, "fit krr from CSV", p)
    m = d.req("GET", "/v1/models/reg").json() or {}
    check(m.get("n_features") == 3 and m.get("n_samples") == 120 and
          m.get("kernel") == {"type": "rbf", "gamma": 0.2} and
          m.get("params", {}).get("alpha") == 0.5,
          "fit krr: features, samples, kernel and params as given", m)
    feats = [[float(r[0]), float(r[2]), float(r[3])] for r in rows]
    want = d.req("POST", "/v1/models/reg/predict", {"X": feats}).json()["predictions"]
    p = kmctl(d, "predict", "reg", path, "--target", "target")
    head, out = read_out(p.stdout)
    check(p.returncode == 0 and head == ["prediction"] and same_rows(out, want),
          "predict krr: CSV equals the HTTP answer exactly", p.stderr or p.stdout[:200])
    # In batches the GEMM shapes differ, so the last bits may (BLAS rounding).
    p2 = kmctl(d, "predict", "reg", path, "--target", "target", "--batch", "7")
    b = [float(r[0]) for r in read_out(p2.stdout)[1]]
    check(p2.returncode == 0 and len(b) == len(want) and
          run.max_rel(b, want, floor=1.0) < 1e-12, "predict in batches of 7: same values",
          p2.stderr)
    # Features only, read from standard input.
    only = io.StringIO()
    csv.writer(only).writerows([["a", "b", "c"]] + [[r[0], r[2], r[3]] for r in rows])
    p3 = kmctl(d, "predict", "reg", "-", stdin=only.getvalue())
    check(p3.returncode == 0 and p3.stdout == p.stdout, "predict from stdin (-)", p3.stderr)
    # Several outputs: y as rows is not what a CSV target gives; check the
    # header of a 2-output model fitted over HTTP instead.
    d.req("POST", "/v1/models/reg2/fit", {"algorithm": "krr", "kernel": {"type": "linear"},
                                          "X": feats[:10], "y": [[v, -v] for v in y[:10]]})
    p = kmctl(d, "predict", "reg2", path, "--target", "target")
    want = d.req("POST", "/v1/models/reg2/predict", {"X": feats}).json()["predictions"]
    head, out = read_out(p.stdout)
    check(p.returncode == 0 and head == ["prediction_0", "prediction_1"] and
          same_rows(out, want), "predict with 2 outputs: two columns", p.stdout[:200])


def scenario_svc_cancer(d, tmp):
    """breast_cancer.csv: numeric labels go as numbers; labels, decision
    values and probabilities equal the HTTP API's."""
    path = run.data_file("breast_cancer.csv")
    p = kmctl(d, "fit", "cancer", path, "--algorithm", "svc", "--kernel", "rbf",
              "--gamma", "1e-5", "--C", "10", "--probability")
    check(p.returncode == 0 and "569 samples x 30 features" in p.stdout,
          "fit svc from breast_cancer.csv", p)
    m = d.req("GET", "/v1/models/cancer").json() or {}
    check(m.get("classes") == [0, 1], "numeric labels are sent as numbers", m.get("classes"))
    head, rows = load(path)
    X = [[float(v) for v in r[:-1]] for r in rows]
    for output, header in (("label", ["label"]),
                           ("decision_function", ["decision_function"]),
                           ("probability", ["p_0", "p_1"])):
        want = d.req("POST", "/v1/models/cancer/predict",
                     {"X": X, "output": output}).json()["predictions"]
        p = kmctl(d, "predict", "cancer", path, "--output", output)
        h, out = read_out(p.stdout)
        check(p.returncode == 0 and h == header and same_rows(out, want) and
              "leaving out column 'y'" in p.stderr,
              f"predict svc --output {output}: equals the HTTP answer", p.stderr[-300:])
    acc = sum(float(o[0]) == float(r[-1]) for o, r in
              zip(read_out(kmctl(d, "predict", "cancer", path).stdout)[1], rows)) / len(rows)
    check(acc > 0.9, "svc on breast_cancer fits its training data (> 90%)", acc)


def scenario_svc_strings(d, tmp):
    """String labels (one with a comma and a quote) in a 3-class problem;
    multi-class decision values get one column per class pair."""
    X, _ = synthetic(90, 2, 12)
    names = ["red", 'blue, "dark"', "green"]
    rows = []
    for i, r in enumerate(X):
        c = i % 3
        rows.append([f"{r[0] + 3 * c:.5f}", f"{r[1] - 2 * c:.5f}", names[c]])
    path = write_csv(os.path.join(tmp, "colors.csv"), ["x1", "x2", "colour"], rows)
    p = kmctl(d, "fit", "colors", path, "--algorithm", "svc", "--kernel", "linear",
              "--param", "C=2", "--param", "shrinking=false")
    m = d.req("GET", "/v1/models/colors").json() or {}
    check(p.returncode == 0 and m.get("classes") == sorted(names) and
          m.get("params", {}).get("shrinking") is False and m["params"].get("C") == 2,
          "fit svc with string labels and --param JSON values", (p, m.get("params")))
    feats = [[float(r[0]), float(r[1])] for r in rows]
    want = d.req("POST", "/v1/models/colors/predict", {"X": feats}).json()["predictions"]
    p = kmctl(d, "predict", "colors", path)
    h, out = read_out(p.stdout)
    check(p.returncode == 0 and h == ["label"] and same_rows(out, want),
          "predict string labels, CSV-quoted where needed", p.stdout[:300])
    want = d.req("POST", "/v1/models/colors/predict",
                 {"X": feats, "output": "decision_function"}).json()["predictions"]
    p = kmctl(d, "predict", "colors", path, "--output", "decision_function")
    h, out = read_out(p.stdout)
    s = sorted(names)
    check(p.returncode == 0 and h == [f"{s[0]}_vs_{s[1]}", f"{s[0]}_vs_{s[2]}",
                                      f"{s[1]}_vs_{s[2]}"] and same_rows(out, want),
          "multi-class decision_function: a column per pair", h)


def scenario_klr(d, tmp):
    """klr through --param: three classes, decision values one column per
    class (not per pair, although 3 classes have 3 pairs), probabilities."""
    X, _ = synthetic(90, 2, 13)
    names = ["a", "b", "c"]
    rows = [[f"{r[0] + 3 * (i % 3):.5f}", f"{r[1]:.5f}", names[i % 3]]
            for i, r in enumerate(X)]
    path = write_csv(os.path.join(tmp, "klr.csv"), ["x1", "x2", "y"], rows)
    p = kmctl(d, "fit", "klr3", path, "--algorithm", "klr", "--kernel", "rbf",
              "--param", "lambda=0.1", "--param", "multi_class=ovr")
    m = d.req("GET", "/v1/models/klr3").json() or {}
    check(p.returncode == 0 and m.get("algorithm") == "klr" and
          m.get("params", {}).get("lambda") == 0.1 and
          m["params"].get("multi_class") == "ovr",
          "fit klr with --param lambda and multi_class", (p, m.get("params")))
    feats = [[float(r[0]), float(r[1])] for r in rows]
    for output, header in (("decision_function", ["f_a", "f_b", "f_c"]),
                           ("probability", ["p_a", "p_b", "p_c"])):
        want = d.req("POST", "/v1/models/klr3/predict",
                     {"X": feats, "output": output}).json()["predictions"]
        p = kmctl(d, "predict", "klr3", path, "--output", output)
        h, out = read_out(p.stdout)
        check(p.returncode == 0 and h == header and same_rows(out, want),
              f"predict klr --output {output}: a column per class", h)


def scenario_crud(d, tmp):
    p = kmctl(d, "models")
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and lines and lines[0].split()[:3] == ["NAME", "VERSION", "ALGORITHM"]
          and any(line.split()[0] == "cancer" for line in lines[1:]),
          "models: a table with the fitted models", p.stdout[:300])
    p = kmctl(d, "models", "--json")
    names = {m["name"] for m in json.loads(p.stdout)["models"]} if p.returncode == 0 else set()
    http_names = {m["name"] for m in d.req("GET", "/v1/models").json()["models"]}
    check(names == http_names and "reg" in names, "models --json: the server's list", names)
    p = kmctl(d, "get", "reg")
    check(p.returncode == 0 and json.loads(p.stdout) == d.req("GET", "/v1/models/reg").json(),
          "get: the metadata as JSON", p.stdout[:200])
    p = kmctl(d, "delete", "reg2")
    check(p.returncode == 0 and d.req("GET", "/v1/models/reg2").status == 404,
          "delete: gone from the server", p)
    p = kmctl(d, "get", "reg2")
    check(p.returncode == 1 and p.stderr.strip() ==
          'kmctl: 404 not_found: model "reg2" does not exist', "get unknown: 404 message, exit 1", p)
    p = kmctl(d, "delete", "bad/name")
    check(p.returncode == 1 and p.stderr.startswith("kmctl: 4"),
          "a name with '/' is escaped and refused by the server", p)
    p = kmctl(d, "jobs")
    ids = [j["id"] for j in d.req("GET", "/v1/jobs").json()["jobs"]]
    listed = [line.split()[0] for line in p.stdout.splitlines()[1:]]
    check(p.returncode == 0 and listed == ids and ids, "jobs: the server's jobs in order", p.stdout[:300])


def scenario_errors(d, tmp):
    X, y = synthetic(20, 2, 13)
    path = write_csv(os.path.join(tmp, "small.csv"), ["a", "b", "y"],
                     [[r[0], r[1], t] for r, t in zip(X, y)])
    # The server's own message, as the API answers it for the same body.
    want = d.req("POST", "/v1/models/e/fit", {"algorithm": "krr",
                 "kernel": {"type": "rbf", "gamma": -1}, "X": X, "y": y}).json()["error"]
    p = kmctl(d, "fit", "e", path, "--algorithm", "krr", "--kernel", "rbf", "--gamma", "-1")
    check(p.returncode == 1 and p.stderr.strip() ==
          f"kmctl: 400 {want['code']}: {want['message']}", "server error: status, code and message, exit 1",
          (p.stderr, want))
    p = kmctl(d, "fit", "e", path, "--algorithm", "krr", "--kernel", "rbf", "--param",
              "alhpa=1")
    check(p.returncode == 1 and "400 invalid_argument" in p.stderr and "alhpa" in p.stderr,
          "a misspelt --param is named by the server", p.stderr)
    p = kmctl(d, "fit", "e", path, "--algorithm", "svc", "--kernel", "rbf",
              "--target", "nope")
    check(p.returncode == 2 and "no column 'nope'" in p.stderr, "fit: unknown --target, exit 2", p)
    bad = os.path.join(tmp, "bad.csv")
    with open(bad, "w") as f:
        f.write("a,b,y\n1,2,3\n4,oops,5\n")
    p = kmctl(d, "fit", "e", bad, "--algorithm", "krr", "--kernel", "linear")
    check(p.returncode == 2 and p.stderr.strip() ==
          f"kmctl: {bad}:3: column 'b': 'oops' is not a finite number",
          "a non-number names file, line and column, exit 2", p.stderr)
    with open(bad, "w") as f:
        f.write("a,b,y\n1,2,3\n4,5\n")
    p = kmctl(d, "fit", "e", bad, "--algorithm", "krr", "--kernel", "linear")
    check(p.returncode == 2 and ":3: 2 fields; the header has 3" in p.stderr,
          "a ragged CSV is refused, exit 2", p.stderr)
    p = kmctl(d, "fit", "e", os.path.join(tmp, "missing.csv"), "--algorithm", "krr",
              "--kernel", "linear")
    check(p.returncode == 2 and "cannot open" in p.stderr, "a missing file, exit 2", p.stderr)
    check(d.req("GET", "/v1/models/e").status == 404, "failed fits created no model")
    # predict: the model has 3 features; a 2-column CSV cannot be matched.
    p = kmctl(d, "predict", "colors", path, "--target", "y")
    check(p.returncode == 0, "predict with --target y on a 2-feature model", p.stderr)
    five = write_csv(os.path.join(tmp, "five.csv"), list("abcde"), [[1, 2, 3, 4, 5]])
    p = kmctl(d, "predict", "colors", five)
    check(p.returncode == 2 and "has 5 feature columns; model colors expects 2" in p.stderr,
          "predict: a wrong column count is a usage error", p.stderr)
    p = kmctl(d, "predict", "nope", five)
    check(p.returncode == 1 and "404 not_found" in p.stderr, "predict unknown model: 404", p.stderr)
    p = kmctl(d, "predict", "colors", path, "--target", "y", "--output", "probability")
    check(p.returncode == 1 and p.stderr.startswith("kmctl: 409 conflict: "),
          "probability from a model without it: 409 from the server", p.stderr)


def scenario_preprocess(d, tmp):
    """--scale and --center-y: the fit's preprocess member; predictions of
    the raw rows equal scikit-learn's pipeline (tests/fixtures/
    gen_pre_refs.py, cases krr_std and krr_none_cy of pre_cases.py) to
    1e-10."""
    sys.path.insert(0, run.FIXTURES)
    from pre_cases import CASES, N_TEST, N_TRAIN, dataset, read_rows
    feats, labels = read_rows(run.data_file("breast_cancer.csv"))
    X, y = dataset("reg", feats, labels)
    head = [f"x{j}" for j in range(len(X[0]))]
    train = write_csv(os.path.join(tmp, "pre-train.csv"), head + ["y"],
                      [[repr(v) for v in r] + [repr(t)] for r, t in
                       zip(X[:N_TRAIN], y[:N_TRAIN])])
    test = write_csv(os.path.join(tmp, "pre-test.csv"), head,
                     [[repr(v) for v in r] for r in X[N_TRAIN:N_TRAIN + N_TEST]])
    for name, flags in (("krr_std", ["--scale", "standardize"]),
                        ("krr_none_cy", ["--center-y"])):
        case = CASES[name]
        p = kmctl(d, "fit", f"k{name}", train, "--algorithm", "krr", "--kernel", "rbf",
                  "--gamma", case["kernel"]["gamma"], "--alpha", case["params"]["alpha"],
                  *flags)
        m = d.req("GET", f"/v1/models/k{name}").json() or {}
        pre = m.get("preprocess", {})
        check(p.returncode == 0 and pre.get("scale") == case["scale"] and
              pre.get("center_y") == case["center_y"],
              f"fit {' '.join(flags)}: metadata shows the preprocessing", (p, pre))
        p = kmctl(d, "predict", f"k{name}", test)
        got = [float(r[0]) for r in read_out(p.stdout)[1]]
        want = run.read_fixture(f"pre_{name}_pred.txt")
        check(p.returncode == 0 and len(got) == len(want) and
              run.max_rel(got, want, 1e-3 * max(map(abs, want))) <= 1e-10,
              f"predict after fit {' '.join(flags)}: scikit-learn's pipeline to 1e-10",
              p.stderr or (got[:3], want[:3]))
    p = kmctl(d, "fit", "kbad", train, "--algorithm", "krr", "--kernel", "rbf",
              "--scale", "zscore")
    check(p.returncode == 1 and "400 invalid_argument" in p.stderr and
          "preprocess.scale must be one of none, standardize, minmax" in p.stderr,
          "--scale with an unknown name: the server's 400, exit 1", p.stderr)
    p = kmctl(d, "fit", "--help")
    check(p.returncode == 0 and "--scale NAME" in p.stdout and "--center-y" in p.stdout
          and "standardize" in p.stdout and "minmax" in p.stdout,
          "fit --help shows --scale and --center-y", p.stdout[-600:])


def scenario_async_progress(d, tmp):
    X, y = synthetic(200, 3, 14)
    path = write_csv(os.path.join(tmp, "async.csv"), ["a", "b", "c", "y"],
                     [r + [t] for r, t in zip(X, y)])
    p = kmctl(d, "fit", "asy", path, "--algorithm", "krr", "--kernel", "rbf", "--async")
    lines = p.stderr.splitlines()
    check(p.returncode == 0 and lines and all(line.startswith("job j-") for line in lines)
          and lines[-1].endswith(": succeeded 100%") and len(lines) == len(set(lines))
          and "fitted asy version 1" in p.stdout,
          "--async without a terminal: a plain line per change, then the model", p)
    jid = lines[-1].split()[1].rstrip(":") if lines else ""
    job = d.req("GET", f"/v1/jobs/{jid}").json() or {}
    check(job.get("status") == "succeeded" and job.get("model") == "asy",
          "the job kmctl waited for is the server's", job)
    # Large enough to go async by itself (more than 20000 values).
    Xb, yb = synthetic(2100, 10, 15)
    big = write_csv(os.path.join(tmp, "auto.csv"), [f"f{i}" for i in range(10)] + ["y"],
                    [[f"{v:.4f}" for v in r] + [f"{t:.4f}"] for r, t in zip(Xb, yb)])
    p = kmctl(d, "fit", "auto", big, "--algorithm", "krr", "--kernel", "linear", "--json")
    meta = json.loads(p.stdout) if p.returncode == 0 else {}
    check(p.returncode == 0 and "job j-" in p.stderr and meta.get("n_samples") == 2100,
          "a fit of 21000 values goes async; --json prints the metadata", p.stderr[-300:])


def wait_for(pred, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


def scenario_ctrl_c(d, tmp):
    """SIGINT to kmctl during an async fit (no terminal): it cancels the job,
    exits 130, and the previous version keeps serving (kmctl prints the
    server's message, which says so)."""
    X, y = synthetic(run.BIG, 5, 16)
    path = write_csv(os.path.join(tmp, "cc.csv"), list("abcde") + ["y"],
                     [[f"{v:.5f}" for v in r] + [f"{t:.5f}"] for r, t in zip(X, y)])
    r = d.req("POST", "/v1/models/cc/fit", run.fit_body(X[:40], y[:40]))
    check(r.status == 201, "set-up: cc version 1", r)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KMSERVE_")}
    env["KMSERVE_URL"] = f"http://127.0.0.1:{d.port}"
    err_path = os.path.join(tmp, "cc.err")
    with open(err_path, "w") as err:
        proc = subprocess.Popen([KMCTL, "fit", "cc", path, "--algorithm", "krr", "--kernel",
                                 "rbf", "--gamma", "0.1", "--async"], env=env,
                                stdout=subprocess.PIPE, stderr=err, text=True)

        def running():
            with open(err_path) as f:
                return ": running" in f.read()
        ok = wait_for(running)
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
    with open(err_path) as f:
        err_text = f.read()
    jid = next((ln.split()[1].rstrip(":") for ln in err_text.splitlines()
                if ln.startswith("job j-")), "")
    job = d.req("GET", f"/v1/jobs/{jid}").json() or {}
    check(ok and rc == 130 and job.get("status") == "cancelled" and
          'cancelled: the fit of "cc" was cancelled; version 1 stays served' in err_text,
          "Ctrl-C (no terminal) cancels the job, exit 130", (rc, job.get("status"), err_text[-400:]))
    m = d.req("GET", "/v1/models/cc").json() or {}
    check(m.get("version") == 1 and m.get("n_samples") == 40, "cancelled fit: version 1 stays", m)
    for mark in SANITIZER_MARKS:
        check(mark not in err_text, f"kmctl under Ctrl-C: no {mark}", err_text[-2000:])

    # With a terminal: a progress bar, the question, 'y' cancels.
    pid, fd = pty.fork()
    if pid == 0:  # child: stdin, stdout and stderr are the terminal
        os.execve(KMCTL, [KMCTL, "fit", "cc", path, "--algorithm", "krr", "--kernel",
                          "rbf", "--gamma", "0.1", "--async"], env)
    seen = b""

    def read_until(token, timeout=60):
        nonlocal seen
        deadline = time.time() + timeout
        while token not in seen and time.time() < deadline:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
        return token in seen
    bar = read_until(b"%  running")
    os.kill(pid, signal.SIGINT)
    asked = read_until(b"? [y/N] ")
    os.write(fd, b"y\n")
    read_until(b"version 1 stays served")
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    rc = os.waitstatus_to_exitcode(status)
    check(bar and (b"[#" in seen or b"[." in seen), "terminal: a progress bar", seen[-300:])
    check(asked and rc == 130 and b"cancelled" in seen,
          "terminal: Ctrl-C asks 'cancel job? [y/N]', y cancels, exit 130", (rc, seen[-400:]))
    check((d.req("GET", "/v1/models/cc").json() or {}).get("version") == 1,
          "terminal cancel: version 1 stays")


def scenario_kpca(d, tmp):
    algs = (d.req("GET", "/v1").json() or {}).get("algorithms", [])
    if "kpca" not in algs:
        print("skip - kpca not in this build's algorithms: project not tested")
        return
    X, _ = synthetic(60, 4, 17)
    path = write_csv(os.path.join(tmp, "kp.csv"), list("abcd"), X)
    p = kmctl(d, "fit", "kp", path, "--algorithm", "kpca", "--kernel", "rbf",
              "--gamma", "0.3", "--n-components", "3", "--param", "fit_inverse_transform=true")
    check(p.returncode == 0, "fit kpca (no target)", p)
    want = d.req("POST", "/v1/models/kp/project", {"X": X}).json()
    p = kmctl(d, "project", "kp", path)
    h, out = read_out(p.stdout)
    check(p.returncode == 0 and h == ["pc1", "pc2", "pc3"] and
          same_rows(out, want.get("projections", [])), "project: equals the HTTP answer", p)
    proj = want.get("projections", [])
    ppath = write_csv(os.path.join(tmp, "proj.csv"), ["pc1", "pc2", "pc3"], proj)
    want = d.req("POST", "/v1/models/kp/project", {"X": proj, "inverse": True}).json()
    p = kmctl(d, "project", "kp", ppath, "--inverse")
    h, out = read_out(p.stdout)
    check(p.returncode == 0 and h == ["x1", "x2", "x3", "x4"] and
          same_rows(out, want.get("projections", [])), "project --inverse", p)
    p = kmctl(d, "predict", "kp", path)
    check(p.returncode == 1 and "409 conflict" in p.stderr, "predict on kpca: 409", p.stderr)


def figures(text):
    """kmctl score's "NAME VALUE" lines, up to the first blank line."""
    out = {}
    for line in text.splitlines()[1:]:
        if not line.strip():
            break
        k, _, v = line.partition(" ")
        out[k] = v.strip()
    return out


def scenario_score(d, tmp):
    """kmctl score prints the figures the HTTP API's /score answers, for
    the models the scenarios above fitted (krr with --target in the
    middle, svc with string labels, kpca with the inverse map)."""
    _, rows = load(os.path.join(tmp, "reg.csv"))
    X = [[float(r[0]), float(r[2]), float(r[3])] for r in rows]
    want = d.req("POST", "/v1/models/reg/score",
                 {"X": X, "y": [float(r[1]) for r in rows]}).json() or {}
    p = kmctl(d, "score", "reg", os.path.join(tmp, "reg.csv"), "--target", "target")
    got, sc = figures(p.stdout), want.get("scoring", {})
    check(p.returncode == 0 and set(got) == {"r2", "mse", "mae"} and
          all(float(got[k]) == sc[k] for k in got) and "120 rows" in p.stdout,
          "score krr: the figures the HTTP API answers", (p.stdout, want))
    _, rows = load(os.path.join(tmp, "colors.csv"))
    want = d.req("POST", "/v1/models/colors/score",
                 {"X": [[float(r[0]), float(r[1])] for r in rows],
                  "y": [r[2] for r in rows]}).json() or {}
    p = kmctl(d, "score", "colors", os.path.join(tmp, "colors.csv"))
    got, sc = figures(p.stdout), want.get("scoring", {})
    cm = [line.split()[-3:] for line in p.stdout.splitlines()[-3:]]
    check(p.returncode == 0 and set(got) == {"accuracy", "balanced_accuracy"} and
          all(float(got[k]) == sc[k] for k in got) and
          [[int(v) for v in r] for r in cm] == sc.get("confusion_matrix"),
          "score svc with string labels: figures and confusion matrix", (p.stdout, want))
    p = kmctl(d, "score", "colors", os.path.join(tmp, "colors.csv"), "--json")
    check(p.returncode == 0 and json.loads(p.stdout) == want,
          "score --json prints the server's answer", p.stdout[:300])
    kp = os.path.join(tmp, "kp.csv")
    if os.path.exists(kp):
        _, rows = load(kp)
        want = d.req("POST", "/v1/models/kp/score",
                     {"X": [[float(v) for v in r] for r in rows]}).json() or {}
        p = kmctl(d, "score", "kp", kp)
        got = figures(p.stdout)
        check(p.returncode == 0 and float(got.get("reconstruction_error", "nan")) ==
              want.get("scoring", {}).get("reconstruction_error"),
              "score kpca: the reconstruction error", (p.stdout, want))
    p = kmctl(d, "score", "reg", os.path.join(tmp, "colors.csv"))
    check(p.returncode == 2 and "model reg takes 3 features" in p.stderr,
          "score with the wrong columns: usage error naming the counts", p.stderr)


# ---------------------------------------------------------------- strings, precomputed

# A CSV of texts written by hand, with what RFC 4180 allows: CRLF line
# ends, quoted fields holding commas, doubled quotes and line breaks (LF
# and CRLF), an empty quoted field, spaces kept in unquoted fields, UTF-8.
# Python's csv module (an independent reader) gives the strings expected.
TEXT_CSV = (
    'text,y\r\n'
    'acgtacgt,1.5\r\n'
    '"gg,ca ""tt""",2\r\n'
    '"two\nlines",0.5\r\n'
    '"crlf\r\ninside",1\r\n'
    '  spaces kept  ,3\r\n'
    '"",0\r\n'
    '\u00e9t\u00e9 caf\u00e9,2.5\r\n'
    'ttttgcaacg,1\r\n'
    '"a ""quoted"" word, and more",4\r\n'
    'acacacgtgt,0\r\n')
LABEL_CSV = (
    'label,text\n'
    'gc,"ggccgcgc, gcgg"\n'
    'at,attatata\n'
    'gc,"cgcg ""gc"" gg"\n'
    'at,"tata\naatt"\n'
    'gc,ggcggc\n'
    'at,aattat\n'
    'gc,gcgcgcgg\n'
    'at,tttaaat\n')


def parsed(text):
    """Header and rows of a CSV text, as Python's csv module reads it."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return rows[0], rows[1:]


def scenario_strings(d, tmp):
    """A string kernel: fit, predict and score from CSV texts; the strings
    kmctl sends are Python's csv module's, to the byte: predictions equal
    the HTTP API's for those strings exactly, and numpy's solve on
    strings_ref's Gram to 1e-9; svc labels equal scikit-learn's
    SVC(kernel="precomputed") on it."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import numpy as np
    import strings_ref as sref
    from sklearn.svm import SVC
    kernel = {"type": "spectrum", "length": 2}
    path = os.path.join(tmp, "text.csv")
    with open(path, "w", newline="", encoding="utf-8") as f:
        f.write(TEXT_CSV)
    _, rows = parsed(TEXT_CSV)
    T, y = [r[0] for r in rows], [float(r[1]) for r in rows]
    p = kmctl(d, "fit", "txt", path, "--algorithm", "krr", "--kernel", "spectrum",
              "--length", "2", "--alpha", "0.5", "--max-length", "40")
    m = d.req("GET", "/v1/models/txt").json() or {}
    check(p.returncode == 0 and m.get("kernel") == kernel and
          m.get("input") == {"kind": "strings", "max_length": 40} and
          f"{len(T)} strings of at most 40 bytes" in p.stdout,
          "fit krr on a text column: --kernel spectrum --length, --max-length",
          (p, m))
    want = d.req("POST", "/v1/models/txt/predict", {"X": T}).json() or {}
    K = np.array(sref.gram(kernel, T))
    ref = K @ np.linalg.solve(K + 0.5 * np.eye(len(T)), y)
    p = kmctl(d, "predict", "txt", path)
    head, out = read_out(p.stdout)
    got = [float(r[0]) for r in out]
    check(p.returncode == 0 and head == ["prediction"] and
          "leaving out column 'y'" in p.stderr and
          same_rows(out, want.get("predictions", [])) and
          run.max_rel(got, ref.tolist()) <= 1e-9,
          "predict a string model: the text column as Python's csv reads it "
          "(quotes, commas, line breaks, spaces, UTF-8), equal to the HTTP "
          "answer and numpy's solve (1e-9)", (p.stderr, p.stdout[:300]))
    sc = (d.req("POST", "/v1/models/txt/score", {"X": T, "y": y}).json()
          or {}).get("scoring", {})
    r2 = 1 - np.sum((np.array(y) - ref) ** 2) / np.sum((np.array(y) - np.mean(y)) ** 2)
    p = kmctl(d, "score", "txt", path)
    got = figures(p.stdout)
    check(p.returncode == 0 and float(got.get("r2", "nan")) == sc.get("r2") and
          abs(sc.get("r2", 0) - r2) <= 1e-9 * max(1, abs(r2)),
          "score a string model: r2 as the HTTP API and numpy", (p.stdout, sc, r2))

    # svc with the label first (--target), as kernlab's sets are laid out
    lpath = os.path.join(tmp, "labels.csv")
    with open(lpath, "w", newline="") as f:
        f.write(LABEL_CSV)
    _, rows = parsed(LABEL_CSV)
    L, T2 = [r[0] for r in rows], [r[1] for r in rows]
    spec = {"type": "normalized", "kernels": [{"type": "spectrum", "length": 3}]}
    p = kmctl(d, "fit", "lab", lpath, "--target", "label", "--algorithm", "svc",
              "--kernel", json.dumps(spec))
    check(p.returncode == 0, "fit svc on texts with --target label and a "
          "normalized spectrum kernel (a composite of a string kernel)", p)
    G = np.array(sref.gram(spec, T2))
    sk = SVC(kernel="precomputed", C=1.0).fit(G, L).predict(G).tolist()
    p = kmctl(d, "predict", "lab", lpath, "--target", "label")
    head, out = read_out(p.stdout)
    check(p.returncode == 0 and head == ["label"] and [r[0] for r in out] == sk,
          "predict svc on texts: scikit-learn's labels on the reference Gram",
          (p, sk))


def scenario_strings_errors(d, tmp):
    """Text CSVs kmctl refuses (exit 2, naming the file, line and column),
    and a string over the model's max_length (the server's 400)."""
    cases = [
        ("wide.csv", "a,b,y\nacgt,tt,1\nggca,aa,2\n",
         ["fit", "w", "--algorithm", "krr", "--kernel", "spectrum"],
         "has 2 columns besides the target; a spectrum kernel takes strings"),
        ("latin1.csv", None, ["fit", "w", "--algorithm", "krr", "--kernel",
                              "spectrum"],
         "latin1.csv:3: column 'text': byte 2 of the text is not UTF-8"),
        ("open.csv", 'text,y\nacgt,1\n"unclosed,2\n',
         ["fit", "w", "--algorithm", "krr", "--kernel", "spectrum"],
         "open.csv:3: a quoted field is not closed"),
    ]
    for name, text, args, msg in cases:
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(text.encode() if text else b"text,y\nacgt,1\nc\xe9t,2\n")
        args = args[:2] + [path] + args[2:]
        p = kmctl(d, *args)
        check(p.returncode == 2 and msg in p.stderr, f"{name}: exit 2, {msg}", p)
    path = os.path.join(tmp, "long.csv")
    with open(path, "w") as f:
        f.write("text\nacgt\n" + "a" * 41 + "\n")
    p = kmctl(d, "predict", "txt", path)
    check(p.returncode == 1 and "at most 40 bytes" in p.stderr,
          "predict a string over max_length: the server's 400 (exit 1)", p)


def scenario_precomputed(d, tmp):
    """--kernel precomputed: the fit's CSV is the Gram plus the target, the
    predict's the kernel values against the training rows; equal to the
    rbf model's predictions (1e-12) and numpy's solve (1e-9)."""
    import numpy as np
    X, y = synthetic(12, 2, 5)
    Q, _ = synthetic(4, 2, 6)
    X, Q = np.array(X), np.array(Q)

    def rbf(A, B):
        return np.exp(-0.5 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))

    G, Gq = rbf(X, X), rbf(Q, X)
    names = [f"k{j}" for j in range(len(X))]
    gpath = write_csv(os.path.join(tmp, "gram.csv"), names + ["y"],
                      [[repr(v) for v in row] + [repr(t)] for row, t in zip(G.tolist(), y)])
    qpath = write_csv(os.path.join(tmp, "kq.csv"), names,
                      [[repr(v) for v in row] for row in Gq.tolist()])
    p = kmctl(d, "fit", "pre", gpath, "--algorithm", "krr", "--kernel",
              "precomputed", "--alpha", "0.5")
    m = d.req("GET", "/v1/models/pre").json() or {}
    check(p.returncode == 0 and m.get("input") == {"kind": "precomputed",
                                                   "n_training": 12} and
          "12 samples (kernel values given)" in p.stdout,
          "fit krr on a precomputed Gram from CSV", (p, m))
    d.req("POST", "/v1/models/pre-rbf/fit", {
        "algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.5},
        "params": {"alpha": 0.5}, "X": X.tolist(), "y": y})
    direct = d.req("POST", "/v1/models/pre-rbf/predict",
                   {"X": Q.tolist()}).json()["predictions"]
    ref = Gq @ np.linalg.solve(G + 0.5 * np.eye(len(X)), y)
    p = kmctl(d, "predict", "pre", qpath)
    got = [float(r[0]) for r in read_out(p.stdout)[1]]
    check(p.returncode == 0 and len(got) == 4 and
          run.max_rel(got, direct, floor=1.0) <= 1e-12 and
          run.max_rel(got, ref.tolist()) <= 1e-9,
          "predict a precomputed model from kernel values: the rbf model's "
          "predictions (1e-12) and numpy's solve (1e-9)", (p, got, direct))
    p = kmctl(d, "predict", "pre", gpath)
    got = [float(r[0]) for r in read_out(p.stdout)[1]]
    ref = G @ np.linalg.solve(G + 0.5 * np.eye(len(X)), y)
    check(p.returncode == 0 and "leaving out column 'y'" in p.stderr and
          run.max_rel(got, ref.tolist()) <= 1e-9,
          "predict from the Gram's own CSV: n_training columns, y left out",
          p)


def scenario_tokens_tls(binary, tmp):
    base = os.path.join(tmp, "sec")
    models = os.path.join(base, "models")
    os.makedirs(models)
    admin, read = "admin-" + "k" * 20, "read-" + "q" * 20
    tokens = os.path.join(base, "tokens")
    with open(tokens, "w") as f:
        f.write(f"{admin} admin\n{read} read\n")
    X, y = synthetic(30, 2, 18)
    path = write_csv(os.path.join(base, "t.csv"), ["a", "b", "y"],
                     [[r[0], r[1], t] for r, t in zip(X, y)])
    fit = ["fit", "t", path, "--algorithm", "krr", "--kernel", "linear"]
    d = Daemon(binary, models, "--token-file", tokens).start()
    try:
        p = kmctl(d, *fit)
        check(p.returncode == 1 and p.stderr.startswith("kmctl: 401 unauthenticated: "),
              "tokens: no token is 401, exit 1", p.stderr)
        p = kmctl(d, *fit, "--token", admin)
        check(p.returncode == 0, "tokens: --token admin fits", p.stderr)
        p = kmctl(d, *fit, env={"KMSERVE_TOKEN": read})
        check(p.returncode == 1 and "403 permission_denied" in p.stderr,
              "tokens: KMSERVE_TOKEN read cannot fit (403)", p.stderr)
        p = kmctl(d, "predict", "t", path, env={"KMSERVE_TOKEN": read})
        check(p.returncode == 0 and len(p.stdout.splitlines()) == 31,
              "tokens: KMSERVE_TOKEN read predicts", p.stderr)
        p = kmctl(d, "health")
        check(p.returncode == 0, "tokens: health needs no token", p.stderr)
    finally:
        d.stop()

    cert, key = os.path.join(base, "cert.pem"), os.path.join(base, "key.pem")
    gen = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                          "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                          "-addext", "subjectAltName=IP:127.0.0.1"], capture_output=True)
    if not check(gen.returncode == 0, "tls: certificate generated", gen.stderr[-300:]):
        return
    import ssl
    d = Daemon(binary, models, "--tls-cert", cert, "--tls-key", key,
               tls=ssl.create_default_context(cafile=cert)).start()
    try:
        url = {"KMSERVE_URL": f"https://127.0.0.1:{d.port}"}
        p = kmctl(None, "models", "--cacert", cert, env=url)
        check(p.returncode == 0 and "t " in p.stdout, "tls: --cacert lists models over HTTPS", p)
        p = kmctl(None, "health", env=dict(url, KMSERVE_CACERT=cert))
        check(p.returncode == 0, "tls: KMSERVE_CACERT", p)
        p = kmctl(None, "health", env=url)
        check(p.returncode == 3 and "certificate" in p.stderr.lower(),
              "tls: an unknown certificate is refused, exit 3", p.stderr)
    finally:
        d.stop()


def scenario_import_export(d, tmp):
    """import and export: a model svm-train wrote becomes a served model;
    export writes LIBSVM text that svm-predict reads and a kmm file that
    import reads back (format told by the file's first bytes), through
    files and standard input and output."""
    rows = [[(i % 7) / 3.0 - 1, ((i * 5) % 11) / 5.0 - 1] for i in range(60)]
    y = [1 if r[0] + 0.5 * r[1] > 0 else -1 for r in rows]
    data = os.path.join(tmp, "ie.train")
    with open(data, "w") as f:
        for t, r in zip(y, rows):
            f.write(f"{t} 1:{r[0]!r} 2:{r[1]!r}\n")
    lib = os.path.join(tmp, "ie.model")
    subprocess.run(["svm-train", "-q", "-t", "2", "-g", "0.7", "-c", "4", data, lib],
                   check=True, timeout=60)
    p = kmctl(d, "import", "ie", lib)
    check(p.returncode == 0 and p.stdout.startswith("imported ie version 1: svc, kernel rbf"),
          "import a LIBSVM file", p)
    out = os.path.join(tmp, "ie.pred")
    subprocess.run(["svm-predict", "-q", data, lib, out], check=True, timeout=60)
    with open(out) as f:
        want = [int(float(v)) for v in f.read().split()]
    got = d.req("POST", "/v1/models/ie/predict", {"X": rows}).json()["predictions"]
    check(got == want, "import: labels equal svm-predict's", (got[:8], want[:8]))
    back = os.path.join(tmp, "ie-back.model")
    p = kmctl(d, "export", "ie", back)
    subprocess.run(["svm-predict", "-q", data, back, out], check=True, timeout=60)
    with open(out) as f:
        again = [int(float(v)) for v in f.read().split()]
    check(p.returncode == 0 and again == want and "exported ie (libsvm" in p.stderr,
          "export to a file: svm-predict gives the same labels", p)
    kmm = os.path.join(tmp, "ie.kmm")
    p = kmctl(d, "export", "ie", kmm)
    with open(kmm, "rb") as f:
        blob = f.read()
    check(p.returncode == 0 and blob[:4] == b"KMSM" and
          blob == d.req("GET", "/v1/models/ie/export?format=kmm").raw,
          "export NAME FILE.kmm writes the kmm file", p)
    p = kmctl(d, "import", "ie2", kmm)
    again = d.req("POST", "/v1/models/ie2/predict", {"X": rows}).json()["predictions"]
    check(p.returncode == 0 and "imported ie2 version 1" in p.stdout and again == got,
          "import of the kmm file (told by its magic): same predictions", p)
    p = subprocess.run([KMCTL, "export", "ie", "-", "--format", "libsvm"], capture_output=True,
                       env={**os.environ, "KMSERVE_URL": f"http://127.0.0.1:{d.port}"}, timeout=60)
    q = subprocess.run([KMCTL, "import", "ie3", "-"], input=p.stdout, capture_output=True,
                       env={**os.environ, "KMSERVE_URL": f"http://127.0.0.1:{d.port}"}, timeout=60)
    check(p.returncode == 0 and p.stdout.startswith(b"svm_type c_svc\n") and q.returncode == 0,
          "export to standard output, import from standard input", (p.stderr, q.stderr))
    bad = os.path.join(tmp, "bad.model")
    with open(bad, "w") as f:
        f.write("svm_type c_svc\nkernel_type rbf\ngamma 0\n")
    p = kmctl(d, "import", "bad", bad)
    check(p.returncode == 1 and p.stderr.startswith("kmctl: 400 invalid_argument: the uploaded "
                                                    "file: LIBSVM model"),
          "import of a bad file: the server's 400, exit 1", p)
    p = kmctl(d, "import", "bad", os.path.join(tmp, "none.model"))
    check(p.returncode == 2 and "cannot open" in p.stderr, "import of a missing file: exit 2", p)
    p = kmctl(d, "export", "ie", "x.txt", "--format", "csv")
    check(p.returncode == 2 and "--format must be libsvm or kmm" in p.stderr,
          "export --format csv: usage error", p)
    p = kmctl(d, "import", "ie4", lib, "--n-features", "5")
    meta = d.req("GET", "/v1/models/ie4").json() or {}
    check(p.returncode == 0 and meta.get("n_features") == 5, "import --n-features 5", p)
    d.req("POST", "/v1/models/ie-krr/fit", {"algorithm": "krr", "kernel": {"type": "rbf"},
                                            "X": rows, "y": [float(v) for v in y]})
    p = kmctl(d, "export", "ie-krr", os.path.join(tmp, "krr.model"))
    check(p.returncode == 1 and "409 conflict" in p.stderr, "export of krr as libsvm: 409", p)


def main():
    global KMCTL
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default="build/kmserve")
    ap.add_argument("--kmctl", default=os.environ.get("KM_KMCTL", "build/kmctl"))
    args = ap.parse_args()
    binary = os.path.abspath(args.server)
    KMCTL = os.path.abspath(args.kmctl)
    tmp = tempfile.mkdtemp(prefix="kmctl-it-")
    try:
        models = os.path.join(tmp, "main", "models")
        os.makedirs(models)
        d = Daemon(binary, models).start()
        try:
            scenario_usage(d, tmp)
            scenario_health(d, tmp)
            scenario_krr(d, tmp)
            scenario_svc_cancer(d, tmp)
            scenario_svc_strings(d, tmp)
            scenario_klr(d, tmp)
            scenario_crud(d, tmp)
            scenario_errors(d, tmp)
            scenario_preprocess(d, tmp)
            scenario_async_progress(d, tmp)
            scenario_ctrl_c(d, tmp)
            scenario_kpca(d, tmp)
            scenario_score(d, tmp)
            scenario_import_export(d, tmp)
            scenario_strings(d, tmp)
            scenario_strings_errors(d, tmp)
            scenario_precomputed(d, tmp)
        finally:
            check(d.stop() == 0, "daemon exits 0 on SIGTERM")
        scenario_tokens_tls(binary, tmp)
    except Exception as e:  # a crash of the runner is a failure, not a pass
        import traceback
        traceback.print_exc()
        check(False, "runner", repr(e))
    finally:
        log = os.path.join(tmp, "main", "daemon.log")
        if run.tally.failed and os.path.exists(log):
            print("--- daemon log (last lines) ---")
            with open(log, "rb") as f:
                print(b"".join(f.readlines()[-30:]).decode("utf-8", "replace"))
        shutil.rmtree(tmp, ignore_errors=True)
    return run.tally.summary()


if __name__ == "__main__":
    sys.exit(main())
