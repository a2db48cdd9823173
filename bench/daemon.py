"""Starting and stopping a daemon for the benchmarks that talk to one over
HTTP (bench_serving.py, bench_krr.py, fit_body_memory.py)."""
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
