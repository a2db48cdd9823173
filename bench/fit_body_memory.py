#!/usr/bin/python3
"""One fit over HTTP with a large body: the time to its 201 and the
daemon's peak resident memory. For before/after comparisons of the request
path (not run by `make bench`: there is no reference to run beside it).

    /usr/bin/python3 bench/fit_body_memory.py build/kmserve [more binaries]

KRR rbf on 5000 x 500 random rows (a 52 MB JSON body); the fit itself
holds the 5000 x 5000 kernel matrix (191 MiB).
"""
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import free_port, stop, wait_ready  # noqa: E402


def peak_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((5000, 500)), rng.standard_normal(5000)
    body = json.dumps({"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.002},
                       "params": {"alpha": 1.0}, "X": X.tolist(), "y": y.tolist()}).encode()
    for binary in sys.argv[1:] or ["build/kmserve"]:
        tmp = tempfile.mkdtemp(prefix="kmbench-fitbody-")
        port = free_port()
        p = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--models-dir",
                              os.path.join(tmp, "models"), "--access-log", "false"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(port, p)
            t = time.perf_counter()
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            c.request("POST", "/v1/models/big/fit", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            print(f"{binary}: body {len(body) / 1e6:.1f} MB, status {r.status}, "
                  f"{time.perf_counter() - t:.2f} s to the answer, peak RSS {peak_mib(p.pid):.0f} MiB")
        finally:
            stop(p)


if __name__ == "__main__":
    main()
