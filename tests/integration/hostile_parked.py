#!/usr/bin/python3
"""Clients that leave a synchronous fit while it is parked.

A synchronous fit parks its request with a continuation (srv_request.h):
the connection is suspended until the job wakes it. Scenarios, each
against a real daemon on 127.0.0.1:
  - a client sends a fit that runs for a while and closes its connection
    once the job exists: the fit is still committed (version 1, its job
    succeeded), and the daemon goes on answering;
  - 24 clients send small fits at once, every other one closing once its
    job exists (the fits end before or after their request is parked,
    either way): every fit is committed, and each client that stayed gets
    its 201;
  - then the daemon stops cleanly (exit 0), and under the sanitizers its
    output holds no report (a continuation's job reference leaked or
    released twice would be one).

Usage: python3 tests/integration/hostile_parked.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check, fit_body, synthetic  # noqa: E402


def job_of(d, name):
    jobs = (d.req("GET", "/v1/jobs").json() or {}).get("jobs", [])
    return [j for j in jobs if j.get("model") == name]


def send_and_leave(d, name, body):
    """Sends a whole fit of model name, waits until its job exists (the
    request was handled: parked, or answered at once), then closes
    without reading the answer. (A client that closes as it sends may
    have its request dropped unread: that is not what is tested here.)
    Returns whether the job appeared."""
    data = json.dumps(body).encode()
    head = (f"POST /v1/models/{name}/fit HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n")
    s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
    s.sendall(head.encode() + data)
    deadline = time.time() + 30
    while not job_of(d, name) and time.time() < deadline:
        time.sleep(0.005)
    s.close()
    return bool(job_of(d, name))


def wait_version(d, name, version, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = d.req("GET", f"/v1/models/{name}").json() or {}
        if m.get("version") == version:
            return True
        time.sleep(0.02)
    return False


def scenario_leave_long_fit(d):
    n = min(run.BIG, 3000)
    X, y = synthetic(n, 5, 31)
    check(send_and_leave(d, "left", fit_body(X, y)), "the fit's job exists")
    check(wait_version(d, "left", 1),
          f"a client that left its fit ({n} rows): the fit is committed all the same")
    mine = job_of(d, "left")
    check(len(mine) == 1 and mine[0].get("status") == "succeeded",
          "its job succeeded", mine)
    r = d.req("POST", "/v1/models/left/predict", {"X": [[0, 0, 0, 0, 0]]})
    check(r.status == 200, "and the model answers", r)


def scenario_many_small(d):
    X, y = synthetic(40, 3, 32)
    answers, left = {}, {}

    def client(i):
        if i % 2:
            left[i] = send_and_leave(d, f"small{i}", fit_body(X, y))
        else:
            answers[i] = d.req("POST", f"/v1/models/small{i}/fit",
                               fit_body(X, y), timeout=60)
    threads = [threading.Thread(target=client, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stayed = sorted(answers)
    check(all(answers[i].status == 201 for i in stayed) and len(stayed) == 12,
          "every client that stayed got its 201",
          [(i, answers[i].status) for i in stayed if answers[i].status != 201])
    check(len(left) == 12 and all(left.values()) and
          all(wait_version(d, f"small{i}", 1, timeout=60) for i in range(24)),
          "all 24 fits are committed, the left ones too", left)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    binary = os.path.abspath(args.server)
    tmp = tempfile.mkdtemp(prefix="kmserve-hp-")
    d = None
    try:
        models = os.path.join(tmp, "models")
        os.makedirs(models)
        d = run.Daemon(binary, models, "--workers", "2", "--queue", "64").start()
        for s in (scenario_leave_long_fit, scenario_many_small):
            try:
                s(d)
            except Exception as e:  # a crash of a scenario is a failure
                check(False, f"{s.__name__}: runner", repr(e))
        rc = d.stop()
        d = None
        check(rc == 0, "the daemon stops cleanly after clients left parked fits", rc)
    finally:
        if d:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return run.tally.summary()


if __name__ == "__main__":
    sys.exit(main())
