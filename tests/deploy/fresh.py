#!/usr/bin/python3
"""The fresh-machine check: the README's two commands on a bare Debian 12.

A bare machine here is a chroot of Debian bookworm's minbase (debootstrap,
with bookworm's updates; the same base as the deploy checks, chroot.py)
with git installed and no package lists, holding a clone of the current
commit (HEAD: what is committed, not the work tree) in /root/kmserve. The
commands are taken from README.md's "Quick start" section as written: its
first shell block serves, its second tests, its third holds the curl
examples.

1. Serve, in one such root: the command runs in the background in a
   process group of its own (as in a terminal); once 127.0.0.1:8080/readyz
   answers 200, the curl examples run verbatim (sh -e) in the same root and
   their answers must be what the README says; then SIGINT to the group
   (Ctrl-C): the daemon must log "stopped" and every process end.
2. Test, in a second such root: the command must exit 0, and every runner's
   last line must say 0 failed.

The chroot shares this machine's network: the daemon binds 127.0.0.1:8080,
so that port must be free. Needs root, and Debian's mirror. Usage, from the
project root:
    /usr/bin/python3 tests/deploy/fresh.py
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import chroot
from chroot import CACHE, DEFAULT_PATH, ROOT, check, fresh_root, in_root, in_root_argv, \
    make_base, note, sh

ENV = {"PATH": DEFAULT_PATH, "HOME": "/root", "TERM": "dumb"}
SRC = "/root/kmserve"
SERVE_TIMEOUT = 900   # seconds for the serve command to install (OpenMPI and ScaLAPACK too), build and become ready
TEST_TIMEOUT = 1800  # make test installs ~1 GB of packages (Chromium, OpenMPI, scikit-learn) first


def readme_commands():
    """(serve command, test command, curl examples) from README.md."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    start = text.index("## Quick start")
    end = text.find("\n## ", start + 1)
    blocks = re.findall(r"```sh\n(.*?)```", text[start:end], re.S)
    if len(blocks) < 3:
        raise RuntimeError("README.md: the Quick start section needs three sh blocks "
                           "(serve, test, examples)")

    def one(block):
        lines = [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]
        if len(lines) != 1:
            raise RuntimeError(f"README.md: expected one command in {block!r}")
        return lines[0]
    return one(blocks[0]), one(blocks[1]), blocks[2]


def bare_machine(name):
    """A fresh root with git and a clone of HEAD; no apt lists."""
    root = fresh_root(name)
    p = in_root(root, ["/bin/sh", "-c",
                       "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install "
                       "-y -qq --no-install-recommends git >/dev/null && apt-get clean && "
                       "rm -rf /var/lib/apt/lists/*"], ENV)
    if p.returncode:
        raise RuntimeError(f"installing git in the bare root: {p.stdout[-800:]}{p.stderr[-800:]}")
    head = sh(["git", "-C", ROOT, "rev-parse", "HEAD"]).stdout.strip()
    dst = os.path.join(root, SRC.lstrip("/"))
    p = sh(["git", "clone", "-q", "--no-hardlinks", ROOT, dst])
    if p.returncode == 0:
        p = sh(["git", "-C", dst, "checkout", "-q", head])
    if p.returncode:
        raise RuntimeError(f"git clone: {p.stderr}")
    note(f"{name}: bare bookworm root with git and a clone of {head[:12]}")
    return root


def port_free(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def readyz():
    try:
        with urllib.request.urlopen("http://127.0.0.1:8080/readyz", timeout=2) as r:
            return r.status
    except Exception:
        return None


def group_alive(proc):
    """Whether any process of proc's group is left (proc itself reaped
    first: a zombie still counts for kill)."""
    proc.poll()
    pgid = proc.pid
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def serve(cmd, examples):
    if not check(port_free(8080), "serve: 127.0.0.1:8080 is free on this machine",
                 "something listens there; the README's daemon needs it"):
        return
    root = bare_machine("fresh-serve")
    log_path = os.path.join(CACHE, "fresh-serve.log")
    log = open(log_path, "w")
    t0 = time.time()
    proc = subprocess.Popen(in_root_argv(root, ["/bin/sh", "-c", cmd], ENV, cwd=SRC,
                                         machine=True),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while time.time() - t0 < SERVE_TIMEOUT and proc.poll() is None and readyz() != 200:
            time.sleep(1)
        with open(log_path) as f:
            text = f.read()
        if not check(readyz() == 200, f"serve: `{cmd}` serves on 127.0.0.1:8080",
                     f"after {time.time() - t0:.0f} s, exit {proc.poll()}: {text[-3000:]}"):
            return
        note(f"serve: ready {time.time() - t0:.0f} s after the command started")
        check("installing:" in text and "make" not in text.split("installing:")[1].split("\n")[0].split(),
              "serve: make deps installed the missing packages (make itself came first)",
              text[-1500:])
        p = in_root(root, ["/bin/sh", "-e", "-c", examples], ENV, cwd=SRC, timeout=60)
        out = p.stdout
        check(p.returncode == 0, "examples: every curl command exits 0", p.stderr[-1500:])
        check('"predictions":[' in out, "examples: the fit and the predict answer", out[:600])
        check(re.search(r"HTTP/1.1 202 Accepted\r?\n", out) is not None and
              "Location: /v1/jobs/j-" in out, "examples: the async fit answers 202 with a Location",
              out[:1500])
        check('"version":2' in out, "examples: metadata shows version 2", out[-1500:])
        check(re.search(r"\}204\n", out) is not None, "examples: DELETE answers 204", out[-1500:])
        m = re.search(r'(\{"status":"ready","models":\d+\})', out)
        check(m is not None and json.loads(m.group(1))["status"] == "ready",
              "examples: /readyz answers ready", out[-1500:])
        check("# TYPE kmserve_" in out, "examples: /metrics answers Prometheus text", out[-800:])
    finally:
        if proc.poll() is None or group_alive(proc):
            os.killpg(proc.pid, signal.SIGINT)      # Ctrl-C in the terminal
        deadline = time.time() + 60
        while time.time() < deadline and group_alive(proc):
            time.sleep(0.2)
        if group_alive(proc):
            os.killpg(proc.pid, signal.SIGKILL)
            check(False, "serve: Ctrl-C ends the daemon and make within 60 s")
        log.close()
        with open(log_path) as f:
            text = f.read()
        check('"event":"stopped"' in text, "serve: Ctrl-C drains the daemon (event stopped)",
              text[-1500:])


def test(cmd):
    root = bare_machine("fresh-test")
    t0 = time.time()
    p = in_root(root, ["/bin/sh", "-c", cmd], ENV, cwd=SRC, machine=True, timeout=TEST_TIMEOUT)
    out = p.stdout + p.stderr
    with open(os.path.join(CACHE, "fresh-test.log"), "w") as f:
        f.write(out)
    note(f"test: {time.time() - t0:.0f} s")
    check(p.returncode == 0, f"test: `{cmd}` exits 0", out[-4000:])
    summaries = re.findall(r"^(\d+) passed, (\d+) failed", out, re.M)
    checks = re.findall(r"^\d+%: Checks: (\d+), Failures: (\d+), Errors: (\d+)", out, re.M)
    check(len(summaries) >= 2 and all(f == "0" for _, f in summaries) and
          sum(int(n) for n, _ in summaries) > 0,
          f"test: the integration runners report 0 failed ({len(summaries)} runners)", summaries)
    check(len(checks) >= 5 and all(f == "0" and e == "0" for _, f, e in checks),
          f"test: the Check suites report no failure ({len(checks)} suites)", checks)


def main():
    t0 = time.time()
    try:
        if os.geteuid() != 0:
            check(False, "root", "the fresh-machine check needs root (debootstrap, chroot)")
        elif make_base():
            serve_cmd, test_cmd, examples = readme_commands()
            note(f"README's serve command: {serve_cmd}")
            note(f"README's test command: {test_cmd}")
            serve(serve_cmd, examples)
            test(test_cmd)
    except Exception as e:  # a crash of the checker is a failure, not a pass
        import traceback
        traceback.print_exc()
        check(False, "checker", repr(e))
    finally:
        for name in ("fresh-serve", "fresh-test"):
            subprocess.run(["rm", "-rf", os.path.join(CACHE, f"root-{name}")])
    note(f"fresh-machine check took {time.time() - t0:.0f} s")
    return chroot.tally.summary()


if __name__ == "__main__":
    sys.exit(main())
