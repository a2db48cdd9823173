#!/usr/bin/python3
"""Hostile HTTP: request framing (RFC 9112 section 6) and slow clients.

Raw bytes on loopback sockets against the real daemon: request smuggling
with Content-Length and Transfer-Encoding together, two differing
Content-Length headers, transfer codings other than exactly chunked, a
chunked body over --max-body-mb, a short body with a half-close, headers
trickled past --header-timeout, a body past --body-timeout, and slowloris
connections beyond --max-connections while a well-behaved client asks.

Standard library only. Usage (from the project root):
    /usr/bin/python3 tests/integration/hostile_http.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (check, http, Daemon)

check = run.check
MAX_BODY_MB = 1
LIMIT = MAX_BODY_MB * 1048576
HEADER_TIMEOUT = 2
BODY_TIMEOUT = 3
MAX_CONNECTIONS = 16
JSON_HEAD = b"Host: 127.0.0.1\r\nContent-Type: application/json\r\n"


# ---------------------------------------------------------------- raw sockets

class Raw:
    """What came back on one raw connection."""

    def __init__(self, data, closed, seconds):
        self.data, self.closed, self.seconds = data, closed, seconds

    def statuses(self):
        """The status of every response in the bytes, in order."""
        return [int(m) for m in re.findall(rb"HTTP/1\.[01] (\d{3}) ",
                                           self.data)]

    def header(self, name):
        head = self.data.partition(b"\r\n\r\n")[0].decode("latin-1")
        for line in head.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == name.lower():
                return v.strip()
        return None

    def error_code(self):
        body = self.data.partition(b"\r\n\r\n")[2]
        try:
            return json.loads(body.decode("utf-8", "replace"))["error"]["code"]
        except (ValueError, KeyError, TypeError):
            return None

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return f"[{state} after {self.seconds:.1f} s] {self.data[:300]!r}"


def read_all(s, timeout):
    """Reads until the peer closes or timeout seconds pass."""
    t0 = time.time()
    data, closed = b"", False
    while time.time() - t0 < timeout:
        s.settimeout(max(0.05, timeout - (time.time() - t0)))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except OSError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        data += chunk
    return Raw(data, closed, time.time() - t0)


def raw(port, data, timeout=3.0, half_close=False):
    """Sends data on a fresh connection, then reads until close or timeout."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            s.sendall(data)
            if half_close:
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may close while we send; read what it said
        return read_all(s, timeout)
    finally:
        s.close()


def model_exists(d, name):
    return d.req("GET", f"/v1/models/{name}", timeout=10).status == 200


def fit_keep(d, name):
    r = d.req("POST", f"/v1/models/{name}/fit", {
        "algorithm": "krr", "kernel": {"type": "linear"},
        "X": [[1, 2], [3, 4], [5, 7]], "y": [1, 2, 3]})
    check(r.status == 201, f"set-up: fit {name}", r)


# ---------------------------------------------------------------- framing

def refused(d, name, data, hidden_delete=None):
    """data must be answered once with 400 bad_request, Connection: close,
    and the connection closed; the hidden DELETE (if any) must not run."""
    r = raw(d.port, data)
    ok = (r.statuses() == [400] and r.error_code() == "bad_request" and
          (r.header("Connection") or "").lower() == "close" and r.closed)
    check(ok, f"{name}: one 400 bad_request with Connection: close, then "
          "closed", r)
    if hidden_delete:
        check(model_exists(d, hidden_delete),
              f"{name}: the smuggled DELETE did not run", hidden_delete)


def scenario_smuggling(d):
    predict = b"POST /v1/models/keep/predict HTTP/1.1\r\n" + JSON_HEAD
    hidden = b"DELETE /v1/models/keep HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    body = b"0\r\n\r\n" + hidden
    refused(d, "CL+TE smuggling",
            predict + b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n"
            % len(body) + body, "keep")
    refused(d, "TE+CL smuggling (TE first)",
            predict + b"Transfer-Encoding: chunked\r\nContent-Length: %d\r\n\r\n"
            % len(body) + body, "keep")
    short = b'{"X":[[1,2]]}'
    refused(d, "two differing Content-Length",
            predict + b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n"
            % (len(short), len(short) + len(hidden)) + short + hidden, "keep")
    refused(d, "two Content-Length, the larger first",
            predict + b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n"
            % (len(short) + len(hidden), len(short)) + short + hidden, "keep")
    for te in (b"identity", b"gzip, chunked", b"chunked, identity", b"chunked, chunked"):
        name = f"Transfer-Encoding: {te.decode()}"
        refused(d, name, predict + b"Transfer-Encoding: " + te +
                b"\r\n\r\n5\r\n{\"X\":\r\n0\r\n\r\n" + hidden, "keep")
    refused(d, "two Transfer-Encoding headers",
            predict + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked"
            b"\r\n\r\n0\r\n\r\n" + hidden, "keep")
    # A method without a body is framed the same way: a DELETE whose
    # identity-coded "body" would be read until the client closes.
    r = raw(d.port, b"DELETE /v1/models/nothere HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Transfer-Encoding: identity\r\n\r\n")
    check(r.statuses() == [400] and r.closed,
          "DELETE with Transfer-Encoding: identity: 400 and closed", r)
    # What is legitimate still works: chunked alone, in any letter case,
    # and a plain Content-Length on a keep-alive connection.
    body = b'{"X":[[1,2]]}'
    r = raw(d.port, predict + b"Transfer-Encoding: Chunked\r\nConnection: close\r\n"
            b"\r\n%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
    check(r.statuses() == [200], "Transfer-Encoding: Chunked is still served", r)
    one = predict + b"Content-Length: %d\r\n\r\n" % len(body) + body
    r = raw(d.port, one + one, timeout=2)
    check(r.statuses() == [200, 200], "two requests on one keep-alive "
          "connection are still both answered", r)
    check(model_exists(d, "keep"), "smuggling: the model is still there")


def scenario_chunked_over_limit(d):
    """Sends a chunked body until the daemon answers, at most 4 MiB past
    the limit, reading between chunks as a careful client does."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
    s.sendall(b"POST /v1/models/keep/predict HTTP/1.1\r\n" + JSON_HEAD +
              b"Transfer-Encoding: chunked\r\n\r\n")
    part = b"[1.0,2.0]," * 6553
    chunk = b"%x\r\n" % len(part) + part + b"\r\n"
    sent, crossed, answered = 0, None, False
    t0 = time.time()
    try:
        while sent < LIMIT + 4 * 1048576 and time.time() - t0 < 10:
            if select.select([s], [], [], 0)[0]:
                answered = True
                break
            s.sendall(chunk)
            sent += len(part)
            if crossed is None and sent > LIMIT:
                crossed = time.time()
    except OSError:
        pass
    r = read_all(s, 3.0)
    s.close()
    after = time.time() - (crossed or t0)
    check(r.statuses() == [413] and r.error_code() == "payload_too_large" and
          r.closed, "chunked body over --max-body-mb: 413, then closed", r)
    check(sent <= LIMIT + 4 * 1048576 and after < 3.0,
          "chunked body over the limit: answered and closed within 3 s of "
          "passing it", f"sent {sent} bytes, {after:.1f} s after the limit, "
          f"answered while sending: {answered}")
    check(run.http(d.port, "GET", "/livez").status == 200,
          "alive after a chunked body over the limit")


def scenario_half_close(d):
    predict = b"POST /v1/models/keep/predict HTTP/1.1\r\n" + JSON_HEAD
    for name, data in (
            ("Content-Length 100, 5 bytes sent",
             predict + b"Content-Length: 100\r\n\r\n{\"X\":"),
            ("Content-Length 100, nothing sent",
             predict + b"Content-Length: 100\r\n\r\n"),
            ("chunked, no terminator",
             predict + b"Transfer-Encoding: chunked\r\n\r\n5\r\n{\"X\":\r\n"),
            ("headers cut short", predict)):
        r = raw(d.port, data, timeout=5, half_close=True)
        check(r.closed and r.seconds < 2.0 and not r.statuses(),
              f"half-close, {name}: closed promptly without an answer", r)


# ---------------------------------------------------------------- slow clients

def scenario_trickle(d):
    """Headers one byte every 0.4 s (never idle for the idle timeout) are
    cut at --header-timeout; a body likewise at --body-timeout."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
    head = b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100
    t0, closed = time.time(), False
    try:
        for b in head:
            s.sendall(bytes([b]))
            if select.select([s], [], [], 0.4)[0] and s.recv(100) == b"":
                closed = True
                break
            if time.time() - t0 > HEADER_TIMEOUT + 4:
                break
    except OSError:
        closed = True
    took = time.time() - t0
    s.close()
    check(closed and HEADER_TIMEOUT - 0.5 <= took <= HEADER_TIMEOUT + 2.5,
          f"headers trickled past --header-timeout {HEADER_TIMEOUT}: closed",
          f"closed {closed} after {took:.1f} s")

    s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
    s.sendall(b"POST /v1/models/keep/predict HTTP/1.1\r\n" + JSON_HEAD +
              b"Content-Length: 1000\r\n\r\n")
    t0, closed = time.time(), False
    try:
        for _ in range(40):
            s.sendall(b" ")
            if select.select([s], [], [], 0.4)[0] and s.recv(100) == b"":
                closed = True
                break
    except OSError:
        closed = True
    took = time.time() - t0
    s.close()
    check(closed and BODY_TIMEOUT - 0.5 <= took <= BODY_TIMEOUT + 2.5,
          f"body trickled past --body-timeout {BODY_TIMEOUT}: closed",
          f"closed {closed} after {took:.1f} s")


def scenario_slowloris(d):
    """More slow connections than --max-connections, each sending a header
    byte every 0.5 s: a well-behaved client is still answered, at once
    rather than after the header timeout."""
    conns = []
    try:
        for _ in range(MAX_CONNECTIONS + 8):
            try:
                s = socket.create_connection(("127.0.0.1", d.port), timeout=2)
                s.sendall(b"GET /livez HTTP/1.1\r\n")
                conns.append(s)
            except OSError:
                pass
        time.sleep(0.3)
        served = []
        for i in range(3):
            for s in conns:
                try:
                    s.sendall(b"X")
                except OSError:
                    pass
            t0 = time.time()
            r = run.http(d.port, "GET", "/v1/models/keep", timeout=1.0)
            served.append((r.status, round(time.time() - t0, 2)))
            time.sleep(0.5)
        check(all(st == 200 and t < 1.0 for st, t in served),
              f"slowloris on {MAX_CONNECTIONS + 8} connections with "
              f"--max-connections {MAX_CONNECTIONS}: a well-behaved client is "
              "answered", served)
    finally:
        for s in conns:
            s.close()


def scenario_busy_not_evicted(d):
    """Connections past their headers are never closed to make room: a
    body being uploaded survives a burst of idle connections."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
    body = b'{"X":[[1,2]]}'
    s.sendall(b"POST /v1/models/keep/predict HTTP/1.1\r\n" + JSON_HEAD +
              b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) +
              body[:4])
    time.sleep(0.2)
    idle = []
    try:
        for _ in range(MAX_CONNECTIONS + 4):
            try:
                idle.append(socket.create_connection(("127.0.0.1", d.port),
                                                     timeout=2))
            except OSError:
                pass
        time.sleep(0.3)
        try:
            s.sendall(body[4:])
        except OSError:
            pass
        r = read_all(s, 3.0)
        check(r.statuses() == [200], "a request with its headers in is not "
              "closed when idle connections fill the limit", r)
    finally:
        s.close()
        for c in idle:
            c.close()


# ---------------------------------------------------------------- main

def scenario_port_in_use(binary, tmp):
    """An address in use: exit 1 with one clear error line naming the
    address and the reason, and no libmicrohttpd "Failed to bind" first."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        models = os.path.join(tmp, "inuse", "models")
        p = subprocess.run([binary, "--listen", f"127.0.0.1:{port}", "--models-dir", models],
                           capture_output=True, text=True, timeout=20)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    check(p.returncode == 1 and len(lines) == 1 and
          f"cannot listen on 127.0.0.1:{port}: Address already in use" in lines[0],
          "port in use: exit 1 with one clear line", (p.returncode, p.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    binary = os.path.abspath(args.server)
    tmp = tempfile.mkdtemp(prefix="kmserve-http-")
    d = None
    try:
        usage = subprocess.run([binary, "--help"], capture_output=True,
                               text=True, timeout=10).stdout
        flags = ["--max-body-mb", str(MAX_BODY_MB),
                 "--max-connections", str(MAX_CONNECTIONS),
                 "--connection-timeout", "30"]
        have = check("--header-timeout" in usage and "--body-timeout" in usage,
                     "flags: --header-timeout and --body-timeout exist")
        if have:
            flags += ["--header-timeout", str(HEADER_TIMEOUT),
                      "--body-timeout", str(BODY_TIMEOUT)]
        models = os.path.join(tmp, "http", "models")
        os.makedirs(models)
        d = run.Daemon(binary, models, *flags).start()
        fit_keep(d, "keep")
        scenario_smuggling(d)
        scenario_chunked_over_limit(d)
        scenario_half_close(d)
        scenario_trickle(d)
        scenario_slowloris(d)
        scenario_busy_not_evicted(d)
        scenario_port_in_use(binary, tmp)
        check(run.http(d.port, "GET", "/livez").status == 200,
              "alive after the hostile clients")
    except Exception as e:  # a crash of the runner is a failure, not a pass
        check(False, "runner", repr(e))
    finally:
        if d:
            check(d.stop() == 0, "daemon exits 0 on SIGTERM")
        log = os.path.join(tmp, "http", "daemon.log")
        if run.tally.failed and os.path.exists(log):
            print("--- daemon log (last lines) ---")
            with open(log, "rb") as f:
                print(b"".join(f.readlines()[-20:]).decode("utf-8", "replace"))
        shutil.rmtree(tmp, ignore_errors=True)
    return run.tally.summary()


if __name__ == "__main__":
    sys.exit(main())
