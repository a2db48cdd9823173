"""Starting and stopping a daemon for the benchmarks that talk to one over
HTTP (bench_serving.py, bench_krr.py, fit_body_memory.py, the update
benchmarks), and one timed JSON call to it."""
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_ready(port, proc, path="/readyz", timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
                if r.status == 200:
                    return
        except (OSError, urllib.error.HTTPError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server on {port} not ready")


def stop(proc):
    if proc and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def call(port, method, path, body=None, timeout=3600):
    """(seconds, the answer's JSON or None) of one request to the daemon."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                 method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=timeout) as r:
        text = r.read()
    return time.perf_counter() - t0, json.loads(text) if text else None


def start(bin_dir, models_dir, *flags):
    """(process, port) of bin_dir's kmserve on a free loopback port with
    models_dir, ready; flags are added to its command line."""
    port = free_port()
    proc = subprocess.Popen([os.path.join(bin_dir, "kmserve"), "--listen",
                             f"127.0.0.1:{port}", "--models-dir", models_dir,
                             *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, proc)
    except Exception:
        stop(proc)
        raise
    return proc, port
