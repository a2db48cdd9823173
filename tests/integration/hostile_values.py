#!/usr/bin/python3
"""Hostile values: numbers that overflow, strings that are not text, and
paths that name no route.

- A prediction or projection that is not a finite number is never
  written (JSON has no inf or nan): the answer is 422 naming the row.
- A fit whose data overflow the kernel in double precision answers 422 at
  fit time, and no model is created.
- A string with an escaped NUL (a label, a member name, any value) is
  refused with 400 naming the field, so labels that differ after a NUL
  are never merged.
- Bytes that are not UTF-8, in the path, the method, a header, a member
  name or a string value: every answer body is valid UTF-8 JSON, and so is
  every access-log line.
- Route statuses: unknown path 404, bad model name 400 (also empty, or
  with an encoded NUL), 405 only for a known route with a wrong method.
- kpca with n_components above n_samples answers 422.

Standard library only (and run.py's helpers). Usage (from the project root):
    python3 tests/integration/hostile_values.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import shutil
import socket
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402


def strict_json(data):
    """The value of data (bytes or str) as strict JSON: UTF-8, and none of
    Python's extensions NaN, Infinity, -Infinity; None if it is not."""
    def no_constant(name):
        raise ValueError(f"{name} is not JSON")
    try:
        if isinstance(data, bytes):
            data = data.decode("utf-8")
        return json.loads(data, parse_constant=no_constant)
    except ValueError:  # UnicodeDecodeError and JSONDecodeError included
        return None


def raw(port, data, timeout=10):
    """Sends data (bytes) on a fresh connection; returns (status, body
    bytes) of the answer (status 0 if there was none)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    try:
        s.sendall(data)
        while len(out) < 1 << 20:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except OSError:
        pass
    finally:
        s.close()
    head, _, body = out.partition(b"\r\n\r\n")
    parts = head.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
        return 0, out
    return int(parts[1]), body


def request(method, path, body=b"", headers=()):
    """The bytes of one request, with any bytes in method, path and body."""
    head = method + b" " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    head += b"Connection: close\r\n"
    for k, v in headers:
        head += k + b": " + v + b"\r\n"
    if body or method == b"POST":
        head += b"Content-Length: %d\r\n" % len(body)
    return head + b"\r\n" + body


def post(d, path, body):
    """POST of a JSON body given as bytes (sent as they are)."""
    return raw(d.port, request(b"POST", path, body,
                               [(b"Content-Type", b"application/json")]))


def error_of(status, body):
    """The error object of an answer, or None."""
    v = strict_json(body)
    return v.get("error") if isinstance(v, dict) else None


def expect_error(got, status, code, needle, name):
    st, body = got
    err = error_of(st, body)
    check(st == status and err is not None and err.get("code") == code and
          needle in err.get("message", ""), name, (st, body[:300]))


def fit(d, name, body):
    return d.req("POST", f"/v1/models/{name}/fit", body)


# ------------------------------------------------------------ numbers

def scenario_overflow(d):
    """Predictions and projections that overflow: 422 naming the row; no
    inf or nan in any body."""
    lin = {"type": "linear"}
    r = fit(d, "lin", {"algorithm": "krr", "kernel": lin,
                       "X": [[1, 2], [3, 4], [5, 7]], "y": [1, 2, 3]})
    check(r.status == 201, "set-up: a linear krr", r)
    r = fit(d, "lin-svr", {"algorithm": "svr", "kernel": lin,
                           "X": [[1, 2], [3, 4], [5, 7]], "y": [1, 2, 3]})
    check(r.status == 201, "set-up: a linear svr", r)
    r = fit(d, "lin-svc", {"algorithm": "svc", "kernel": lin,
                           "X": [[0, 0], [1, 1], [2, 0], [3, 1]],
                           "y": ["a", "b", "a", "b"]})
    check(r.status == 201, "set-up: a linear svc", r)
    r = fit(d, "lin-kpca", {"algorithm": "kpca", "kernel": lin,
                            "X": [[1, 2], [3, 4], [5, 7]],
                            "params": {"n_components": 1}})
    check(r.status == 201, "set-up: a linear kpca", r)

    big = [[1e308, 1e308]]
    cases = [
        ("lin", "predict", {"X": big}, "predictions[0]"),
        ("lin", "predict", {"X": [[1, 2], [-1e308, 1e308], [1e308, 1e308]]},
         "predictions[1]"),
        ("lin-svr", "predict", {"instances": big}, "predictions[0]"),
        ("lin-svc", "predict", {"X": big, "output": "decision_function"},
         "predictions[0]"),
        ("lin-kpca", "project", {"X": big}, "projections[0]"),
    ]
    for model, op, body, row in cases:
        r = d.req("POST", f"/v1/models/{model}/{op}", body)
        err = error_of(r.status, r.body.encode())
        check(r.status == 422 and err is not None and
              err.get("code") == "unprocessable" and row in err["message"],
              f"overflow: {op} on {model} answers 422 naming {row}", r)
    r = d.req("POST", "/v1/models/lin/predict", {"X": [[1, 2], [3, 4]]})
    v = strict_json(r.body)
    check(r.status == 200 and v is not None and len(v["predictions"]) == 2,
          "overflow: finite predictions still answer 200", r)


def scenario_overflow_at_fit(d):
    """Data whose kernel overflows a double: 422 at fit, no model."""
    X = [[1e300, 2e300], [3e300, -4e300], [5e300, 7e300], [-2e300, 1e300]]
    cases = [
        ("krr", {"type": "linear"}, {"y": [1, 2, 3, 4]}),
        ("krr", {"type": "polynomial", "degree": 2}, {"y": [1, 2, 3, 4]}),
        ("svr", {"type": "linear"}, {"y": [1, 2, 3, 4]}),
        ("svc", {"type": "linear"}, {"y": [0, 1, 0, 1]}),
        ("svc", {"type": "sigmoid"}, {"y": [0, 1, 2, 1]}),
        ("kpca", {"type": "linear"}, {"params": {"n_components": 1}}),
    ]
    for i, (algo, kernel, extra) in enumerate(cases):
        name = f"huge-{i}"
        r = fit(d, name, dict(algorithm=algo, kernel=kernel, X=X, **extra))
        err = error_of(r.status, r.body.encode())
        check(r.status == 422 and err is not None and
              err.get("code") == "unprocessable" and
              "X[0] with itself is not a finite number" in err["message"],
              f"overflow at fit: {algo} {kernel['type']} on 1e300 answers 422 "
              "naming the row",
              r)
        r = d.req("GET", f"/v1/models/{name}")
        check(r.status == 404, f"overflow at fit: no model {name}", r)
    # the same data, scaled, fit and predict on their own rows
    small = [[v * 1e-300 for v in row] for row in X]
    r = fit(d, "scaled", {"algorithm": "krr", "kernel": {"type": "linear"},
                          "X": small, "y": [1, 2, 3, 4]})
    check(r.status == 201, "overflow at fit: the rescaled data fit", r)
    r = d.req("POST", "/v1/models/scaled/predict", {"X": small})
    check(r.status == 200 and strict_json(r.body) is not None,
          "overflow at fit: the rescaled model predicts its rows", r)


# ------------------------------------------------------------ strings

def scenario_nul(d):
    """An escaped NUL in any string of a body: 400 naming the field."""
    body = (b'{"algorithm":"svc","kernel":{"type":"linear"},'
            b'"X":[[0],[1],[2],[3]],'
            b'"y":["a\\u0000x","a\\u0000y","a\\u0000x","a\\u0000y"]}')
    expect_error(post(d, b"/v1/models/nul/fit", body), 400, "invalid_argument",
                 "y[0]", "NUL: labels with a NUL are refused, naming y[0]")
    body = (b'{"algorithm":"svc","kernel":{"type":"linear"},'
            b'"X":[[0],[1],[2],[3]],"y":["a","b","a","b\\u0000"]}')
    expect_error(post(d, b"/v1/models/nul/fit", body), 400, "invalid_argument",
                 "y[3]", "NUL: a NUL in the last label names y[3]")
    body = b'{"X":[[1,2]],"out\\u0000put":"label"}'
    expect_error(post(d, b"/v1/models/lin/predict", body), 400,
                 "invalid_argument", "member name",
                 "NUL: a member name with a NUL is refused")
    body = (b'{"algorithm":"krr\\u0000","kernel":{"type":"linear"},'
            b'"X":[[1]],"y":[1]}')
    expect_error(post(d, b"/v1/models/nul/fit", body), 400, "invalid_argument",
                 "algorithm", "NUL: a NUL in a string value names the field")
    r = d.req("GET", "/v1/models/nul")
    check(r.status == 404, "NUL: no model was created", r)
    # labels that differ only after a NUL are refused; without the NUL,
    # the same labels fit and predict as sent
    r = fit(d, "labels", {"algorithm": "svc", "kernel": {"type": "linear"},
                          "X": [[0], [1], [2], [3]],
                          "y": ["a x", "a y", "a x", "a y"]})
    check(r.status == 201 and
          r.json()["model"].get("classes") == ["a x", "a y"],
          "NUL: distinct labels stay distinct", r)


def access_lines(d):
    """Every line of the daemon's output, as bytes."""
    d.log.flush()
    with open(d.log_path, "rb") as f:
        return f.read().splitlines()


def scenario_bytes(d):
    """Bytes that are not UTF-8: every answer is valid UTF-8 JSON."""
    ct = [(b"Content-Type", b"application/json")]
    sends = [
        ("path", request(b"GET", b"/v1/\xff\xfe/x")),
        ("percent-encoded path", request(b"GET", b"/v1/models/a%ff%fe")),
        ("percent-encoded job id", request(b"GET", b"/v1/jobs/j-%c3%28")),
        ("path under a model", request(b"POST", b"/v1/models/x\xff/foo",
                                       b"{}", ct)),
        ("method", request(b"G\xffT", b"/v1")),
        ("method on an unknown path", request(b"\xc3\xa9\xff", b"/nope")),
        ("Content-Type", request(b"POST", b"/v1/models/lin/predict",
                                 b'{"X":[[1,2]]}',
                                 [(b"Content-Type", b"text/\xff\xfe")])),
        ("member name", request(b"POST", b"/v1/models/lin/predict",
                                b'{"X\xff":[[1,2]]}', ct)),
        ("member name after the matrix", request(
            b"POST", b"/v1/models/lin/predict",
            b'{"X":[[1,2]],"\xe9t\xe9":1}', ct)),
        ("string value", request(
            b"POST", b"/v1/models/bytes/fit",
            b'{"algorithm":"\xff","kernel":{"type":"linear"},'
            b'"X":[[1]],"y":[1]}', ct)),
        ("kernel type", request(
            b"POST", b"/v1/models/bytes/fit",
            b'{"algorithm":"krr","kernel":{"type":"lin\xc3"},'
            b'"X":[[1]],"y":[1]}', ct)),
        ("svc labels", request(
            b"POST", b"/v1/models/bytes/fit",
            b'{"algorithm":"svc","kernel":{"type":"linear"},'
            b'"X":[[0],[1]],"y":["\xff","\xfe"]}', ct)),
        ("an overlong encoding", request(
            b"POST", b"/v1/models/bytes/fit",
            b'{"algorithm":"\xc0\xafkrr","kernel":{"type":"linear"},'
            b'"X":[[1]],"y":[1]}', ct)),
        ("a surrogate encoded in UTF-8", request(
            b"POST", b"/v1/models/bytes/fit",
            b'{"algorithm":"\xed\xa0\x80","kernel":{"type":"linear"},'
            b'"X":[[1]],"y":[1]}', ct)),
        ("a class_weight key", request(
            b"POST", b"/v1/models/bytes/fit",
            b'{"algorithm":"svc","kernel":{"type":"linear"},'
            b'"params":{"class_weight":{"\xff":1}},'
            b'"X":[[0],[1]],"y":["a","b"]}', ct)),
    ]
    # a long path of two-byte characters, cut by the server's path buffer
    sends.append(("a long path of multibyte characters",
                  request(b"GET", b"/" + "\u00e9".encode() * 700)))
    # each byte is six characters escaped: more than a log line's buffer;
    # request ids of 1 to 6 characters shift where the buffer ends
    for i in range(1, 7):
        sends.append((f"a long path of bytes that are not UTF-8 ({i})",
                      request(b"GET", b"/" + b"\xff" * 1000,
                              headers=[(b"X-Request-Id", b"r" * i)])))
    sends.append(("a long path of escapes",
                  request(b"GET", b"/" + b"%01" * 1000)))
    for what, data in sends:
        st, body = raw(d.port, data)
        err = error_of(st, body)
        check(st >= 400 and err is not None and
              isinstance(err.get("message"), str),
              f"bytes: {what}: the answer is valid UTF-8 JSON", (st, body[:200]))
    st, body = raw(d.port, sends[9][1])
    check(st == 400 and b"UTF-8" in body,
          "bytes: a string value that is not UTF-8 answers 400 saying so",
          (st, body[:200]))
    r = d.req("GET", "/v1/models/bytes")
    check(r.status == 404, "bytes: no model was created", r)
    r = d.req("GET", "/livez")
    check(r.status == 200, "bytes: the daemon still answers", r)


def check_log(d):
    """Every line the daemon wrote is valid UTF-8 JSON, and there are
    access lines for the hostile requests."""
    deadline = time.time() + 5
    lines = access_lines(d)
    while time.time() < deadline and \
            not any(b'"method":"G' in x and b'T"' in x for x in lines):
        time.sleep(0.1)
        lines = access_lines(d)
    bad = [x for x in lines if x.strip() and
           not isinstance(strict_json(x), dict)]
    check(not bad, "log: every line is valid UTF-8 JSON", bad[:3])
    seen = [strict_json(x) for x in lines]
    reqs = [x for x in seen if isinstance(x, dict) and
            x.get("event") == "request"]
    check(any(x.get("method", "").startswith("G") and x.get("path") == "/v1"
              for x in reqs), "log: the request with a bad method is logged",
          reqs[-5:])
    check(any("\ufffd" in x.get("path", "") for x in reqs),
          "log: bad bytes in a path are logged as U+FFFD", reqs[-5:])
    long = [x for x in reqs if x.get("path", "").startswith("/" + "\ufffd" * 100)]
    check(len(long) == 6 and
          all(x.get("status") == 404 and "bytes_out" in x for x in long),
          "log: a path too long for the line is cut, the line keeps its "
          "fields", [str(x)[-120:] for x in long])


# ------------------------------------------------------------ routes

def scenario_routes(d):
    ct = [(b"Content-Type", b"application/json")]
    fit_body = (b'{"algorithm":"krr","kernel":{"type":"linear"},'
                b'"X":[[1]],"y":[1]}')
    cases = [
        (b"POST", b"/v1/models//fit", fit_body, 400, "invalid_argument"),
        (b"POST", b"/v1/models//predict", b'{"X":[[1]]}', 400,
         "invalid_argument"),
        (b"POST", b"/v1/models/a%00b/fit", fit_body, 400, "invalid_argument"),
        (b"GET", b"/v1/models/a%00b", b"", 400, "invalid_argument"),
        (b"POST", b"/v1/models/a%00/predict", b'{"X":[[1]]}', 400,
         "invalid_argument"),
        (b"POST", b"/v1/models/x/foo", b"{}", 404, "not_found"),
        (b"GET", b"/v1/models/x/foo", b"", 404, "not_found"),
        (b"DELETE", b"/v1/models/lin/fit/extra", b"", 404, "not_found"),
        (b"POST", b"/v1/models/lin/fit/", fit_body, 404, "not_found"),
        (b"GET", b"/livez%00", b"", 404, "not_found"),
        (b"GET", b"/v1/jobs/x/y", b"", 404, "not_found"),
        (b"GET", b"/v1/models/lin/fit", b"", 405, "method_not_allowed"),
        (b"PUT", b"/v1/models/lin", b"", 405, "method_not_allowed"),
        (b"DELETE", b"/v1/models/lin/predict", b"", 405,
         "method_not_allowed"),
        (b"POST", b"/v1/models/..%2Fx/fit", fit_body, 400,
         "invalid_argument"),
    ]
    for method, path, body, status, code in cases:
        st, got = raw(d.port, request(method, path, body,
                                      ct if method == b"POST" else []))
        err = error_of(st, got)
        check(st == status and err is not None and err.get("code") == code,
              f"routes: {method.decode()} {path.decode()} answers {status}",
              (st, got[:200]))
    r = d.req("GET", "/v1/models/lin")
    check(r.status == 200, "routes: the model is still there", r)


# ------------------------------------------------------------ kpca

def scenario_kpca_components(d):
    X = [[0, 1], [1, 0], [2, 2]]
    for nc, status, code in [(4, 422, "unprocessable"),
                             (1000, 422, "unprocessable"),
                             (0, 400, "invalid_argument"),
                             (1.5, 400, "invalid_argument")]:
        r = fit(d, "kp", {"algorithm": "kpca", "kernel": {"type": "rbf"},
                          "X": X, "params": {"n_components": nc}})
        err = error_of(r.status, r.body.encode())
        check(r.status == status and err is not None and
              err.get("code") == code and "n_components" in err["message"],
              f"kpca: n_components {nc} with 3 rows answers {status}", r)
    r = fit(d, "kp", {"algorithm": "kpca", "kernel": {"type": "rbf"},
                      "X": X, "params": {"n_components": 2}})
    check(r.status == 201, "kpca: n_components 2 with 3 rows fits", r)
    with open(os.path.join(ROOT, "api", "openapi.yaml")) as f:
        spec = f.read()
    check("n_components above n_samples" in spec and "422" in spec,
          "kpca: api/openapi.yaml states the 422 rule")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(ROOT, "build", "kmserve"))
    args = ap.parse_args()
    binary = os.path.abspath(args.server)
    tmp = tempfile.mkdtemp(prefix="kmserve-values-")
    d = None
    try:
        models = os.path.join(tmp, "models")
        os.makedirs(models)
        d = run.Daemon(binary, models, "--access-log", "true").start()
        scenario_overflow(d)
        scenario_overflow_at_fit(d)
        scenario_nul(d)
        scenario_bytes(d)
        scenario_routes(d)
        scenario_kpca_components(d)
        check_log(d)
        check(d.stop() == 0, "daemon exits 0 on SIGTERM")
        d = None
    except Exception as e:  # a crash of the runner is a failure, not a pass
        check(False, "runner", repr(e))
    finally:
        if d is not None:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return run.tally.summary()


if __name__ == "__main__":
    sys.exit(main())
