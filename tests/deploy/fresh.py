#!/usr/bin/python3
"""The fresh-machine check: the README's two commands on a bare Debian 12,
and what they install and how long they take, measured and compared with
the figures the README quotes.

A bare machine here is a chroot of Debian bookworm's minbase (debootstrap,
with bookworm's updates; the same base as the deploy checks, chroot.py)
with git installed and no package lists, holding a clone of the current
commit (HEAD: what is committed, not the work tree) in /root/kmserve. The
commands are taken from README.md's "Quick start" section as written: its
first shell block serves, its second tests, its third holds the curl
examples (in the first two, lines starting with "#" are comments and one
command is left).

1. Serve, in one such root: the command runs in the background in a
   process group of its own (as in a terminal); once 127.0.0.1:8080/readyz
   answers 200, the curl examples run verbatim (sh -e) in the same root and
   their answers must be what the README says; then SIGINT to the group
   (Ctrl-C): the daemon must log "stopped" and every process end. The serve
   command must install nothing of OpenMPI and ScaLAPACK (the Makefile's
   DEPS_MPI: `make run` skips kmserve-mpi with a note naming `make
   deps-mpi`). Then `make run PORT=N` (N a free port) in the same root must
   serve on 127.0.0.1:N, and stop on Ctrl-C.
2. Test, in a second such root: the command must exit 0, every runner's
   last line must say 0 failed, and kmserve-mpi must have been built and
   mpi.py run (make test installs OpenMPI).

The figures, for each command, measured in its root: packages installed
(dpkg's count after the command less the count before it, the bare root
with git), download size (the .deb files apt leaves in
/var/cache/apt/archives: the bare root has none, and neither the README's
`apt-get install` nor the Makefile's cleans them), installed size (the sum
of dpkg's Installed-Size after less before) and wall time (serve: from the
command's start until /readyz answers 200; test: the whole command). Sizes
are in MB of 10^6 bytes, as apt counts. They are printed and written as
JSON, with the machine (CPU model, cores, memory) and the commit, to
build/deploy/fresh-figures.json.

The README quotes them in its Quick start as a table, one row per command,
the first cell the command as it ends the shell block, in this form:

    | command | packages | download | installed | time |
    | --- | --- | --- | --- | --- |
    | `make run` | 123 | 140 MB | 520 MB | 95 s |
    | `make test` | 456 | 0.7 GB | 2.3 GB | 14 min |

(packages: a whole number; sizes: a number and MB or GB; time: a number
and s or min). Each quoted figure must agree with this run's: package
counts within 5%, sizes within 15%, times within a factor of 2 (the time
depends on the mirror and on the machine's load). A table that is missing
or off fails, and the failure shows the rows measured.

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
SERVE_TIMEOUT = 900   # seconds for the serve command to install, build and become ready
TEST_TIMEOUT = 2700  # make test installs ~1 GB of packages (Chromium, OpenMPI, scikit-learn) first
RERUN_TIMEOUT = 300  # make run PORT=N in the served root: installed and built already
FIGURES = os.path.join(CACHE, "fresh-figures.json")
# how far the README's quoted figures may be from this run's (see above)
TOLERANCE = {"packages": 0.05, "download_mb": 0.15, "installed_mb": 0.15}
TIME_FACTOR = 2.0
COLUMNS = ["command", "packages", "download", "installed", "time"]


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


def readme_figures():
    """{command: {packages, download_mb, installed_mb, seconds}} from the
    Quick start's figure table (the form in the docstring); {} if none."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    start = text.index("## Quick start")
    end = text.find("\n## ", start + 1)
    rows, header = {}, None
    for line in text[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            header = None
            continue
        if [c.lower() for c in cells] == COLUMNS:
            header = cells
            continue
        if header is None or set(cells) <= {"---"}:
            continue
        if len(cells) != len(COLUMNS):
            raise RuntimeError(f"README.md: figure row {line!r}: {len(COLUMNS)} cells expected")
        cmd = cells[0].strip("`")
        m_n = re.fullmatch(r"(\d+)", cells[1])
        sizes = [re.fullmatch(r"(\d+(?:\.\d+)?) (MB|GB)", c) for c in cells[2:4]]
        m_t = re.fullmatch(r"(\d+(?:\.\d+)?) (s|min)", cells[4])
        if not (m_n and all(sizes) and m_t):
            raise RuntimeError(f"README.md: figure row {line!r}: expected `COMMAND` | N | "
                               "X MB|GB | X MB|GB | X s|min")
        mb = [float(m.group(1)) * (1000 if m.group(2) == "GB" else 1) for m in sizes]
        rows[cmd] = {"packages": int(m_n.group(1)), "download_mb": mb[0], "installed_mb": mb[1],
                     "seconds": float(m_t.group(1)) * (60 if m_t.group(2) == "min" else 1)}
    return rows


def makefile_list(name):
    """The packages of one of the Makefile's DEPS_ lists (one line)."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        m = re.search(rf"^{name} := ([^\\\n]+)$", f.read(), re.M)
    if not m:
        raise RuntimeError(f"Makefile: no one-line {name} := list")
    return m.group(1).split()


def dpkg_state(root):
    """{package: Installed-Size in KiB} of what dpkg has installed in root."""
    p = in_root(root, ["dpkg-query", "-W", "-f=${db:Status-Abbrev}\t${Installed-Size}\t"
                       "${binary:Package}\n"], ENV)
    if p.returncode:
        raise RuntimeError(f"dpkg-query in {root}: {p.stderr}")
    state = {}
    for line in p.stdout.splitlines():
        status, size, pkg = line.split("\t")
        if status.startswith("ii"):
            state[pkg] = int(size or 0)
    return state


def downloaded_bytes(root):
    d = os.path.join(root, "var", "cache", "apt", "archives")
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".deb"))


def figures(root, before, seconds):
    after = dpkg_state(root)
    return {"packages": len(set(after) - set(before)),
            "download_mb": round(downloaded_bytes(root) / 1e6, 1),
            "installed_mb": round((sum(after.values()) - sum(before.values())) * 1024 / 1e6, 1),
            "seconds": round(seconds)}


def machine():
    cpu = ""
    with open("/proc/cpuinfo") as f:
        m = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
        cpu = m.group(1).strip() if m else ""
    with open("/proc/meminfo") as f:
        kib = int(re.search(r"^MemTotal:\s*(\d+)", f.read(), re.M).group(1))
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(kib * 1024 / 1e9, 1)}


def table_row(cmd, fig):
    """The README row for a measured command, in the parsed form."""
    tail = cmd.split("&&")[-1].strip()
    return (f"| `{tail}` | {fig['packages']} | {fig['download_mb']:.0f} MB | "
            f"{fig['installed_mb']:.0f} MB | {fig['seconds']:.0f} s |")


def compare(cmd, measured, quoted):
    """The README's row for cmd (the row whose command ends cmd) against
    this run's figures."""
    rows = [q for q in quoted if cmd.endswith(q)]
    if not check(len(rows) == 1, f"figures: README's Quick start quotes `{cmd}`",
                 f"{len(rows)} rows end the command; measured: {table_row(cmd, measured)}"):
        return
    q = quoted[rows[0]]
    for key, tol in TOLERANCE.items():
        ok = abs(q[key] - measured[key]) <= tol * measured[key]
        check(ok, f"figures: `{rows[0]}` {key} {q[key]:g} quoted, {measured[key]:g} measured "
                  f"(within {tol:.0%})", f"measured row: {table_row(cmd, measured)}")
    s, t = q["seconds"], measured["seconds"]
    check(t / TIME_FACTOR <= s <= t * TIME_FACTOR,
          f"figures: `{rows[0]}` time {s:g} s quoted, {t:g} s measured (within a factor of "
          f"{TIME_FACTOR:g})", f"measured row: {table_row(cmd, measured)}")


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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def readyz(port=8080):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
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


def start(root, cmd, log):
    """cmd in root, in the background in a process group of its own (as
    in a terminal), its output into the open file log."""
    return subprocess.Popen(in_root_argv(root, ["/bin/sh", "-c", cmd], ENV, cwd=SRC,
                                         machine=True),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_ready(proc, port, timeout):
    t0 = time.time()
    while time.time() - t0 < timeout and proc.poll() is None and readyz(port) != 200:
        time.sleep(1)
    return readyz(port) == 200


def stop(proc, log, log_path, what):
    """Ctrl-C to proc's group; every process must end and the daemon
    log "stopped"."""
    if proc.poll() is None or group_alive(proc):
        os.killpg(proc.pid, signal.SIGINT)      # Ctrl-C in the terminal
    deadline = time.time() + 60
    while time.time() < deadline and group_alive(proc):
        time.sleep(0.2)
    if group_alive(proc):
        os.killpg(proc.pid, signal.SIGKILL)
        check(False, f"{what}: Ctrl-C ends the daemon and make within 60 s")
    log.close()
    with open(log_path) as f:
        text = f.read()
    check('"event":"stopped"' in text, f"{what}: Ctrl-C drains the daemon (event stopped)",
          text[-1500:])


def examples_answer(root, examples):
    p = in_root(root, ["/bin/sh", "-e", "-c", examples], ENV, cwd=SRC, timeout=60)
    out = p.stdout
    check(p.returncode == 0, "examples: every curl command exits 0", p.stderr[-1500:])
    check('"predictions":[' in out, "examples: the fit and the predict answer", out[:600])
    check(re.search(r"HTTP/1.1 202 Accepted\r?\n", out) is not None and
          "Location: /v1/jobs/j-" in out, "examples: the async fit answers 202 with a Location",
          out[:1500])
    check('"version":2' in out, "examples: metadata shows version 2", out[-1500:])
    check(re.search(r"\}\n?204\n", out) is not None, "examples: DELETE answers 204", out[-1500:])
    m = re.search(r'(\{"status":"ready","models":\d+\})', out)
    check(m is not None and json.loads(m.group(1))["status"] == "ready",
          "examples: /readyz answers ready", out[-1500:])
    check("# TYPE kmserve_" in out, "examples: /metrics answers Prometheus text", out[-800:])


def lean(root, state, text):
    """What the serve command must leave out: OpenMPI and ScaLAPACK."""
    mpi = makefile_list("DEPS_MPI")
    got = sorted(p for p in state if p.split(":")[0] in mpi)
    check(not got, f"serve: nothing of DEPS_MPI ({' '.join(mpi)}) installed", got)
    check(not os.path.exists(os.path.join(root, SRC.lstrip("/"), "build", "kmserve-mpi")) and
          "make deps-mpi installs" in text,
          "serve: kmserve-mpi skipped, with the note naming make deps-mpi", text[-1500:])


def serve(cmd, examples):
    """The serve command, the examples, Ctrl-C, then make run PORT=N;
    the serve command's figures (None if it did not serve)."""
    if not check(port_free(8080), "serve: 127.0.0.1:8080 is free on this machine",
                 "something listens there; the README's daemon needs it"):
        return None
    root = bare_machine("fresh-serve")
    before = dpkg_state(root)
    log_path = os.path.join(CACHE, "fresh-serve.log")
    log = open(log_path, "w")
    t0 = time.time()
    proc = start(root, cmd, log)
    fig = None
    try:
        ready = wait_ready(proc, 8080, SERVE_TIMEOUT)
        seconds = time.time() - t0
        with open(log_path) as f:
            text = f.read()
        if not check(ready, f"serve: `{cmd}` serves on 127.0.0.1:8080",
                     f"after {seconds:.0f} s, exit {proc.poll()}: {text[-3000:]}"):
            return None
        note(f"serve: ready {seconds:.0f} s after the command started")
        fig = figures(root, before, seconds)
        check("installing:" in text and "make" not in text.split("installing:")[1].split("\n")[0].split(),
              "serve: make deps installed the missing packages (make itself came first)",
              text[-1500:])
        lean(root, dpkg_state(root), text)
        examples_answer(root, examples)
    finally:
        stop(proc, log, log_path, "serve")
    port = free_port()
    rerun = f"make run PORT={port}"
    log_path = os.path.join(CACHE, "fresh-serve-port.log")
    log = open(log_path, "w")
    proc = start(root, rerun, log)
    try:
        ready = wait_ready(proc, port, RERUN_TIMEOUT)
        with open(log_path) as f:
            text = f.read()
        check(ready and readyz(8080) is None and f"--listen 127.0.0.1:{port} " in text,
              f"serve: `{rerun}` serves on 127.0.0.1:{port} (and not on 8080)",
              f"exit {proc.poll()}: {text[-2000:]}")
    finally:
        stop(proc, log, log_path, f"`{rerun}`")
    return fig


def test(cmd):
    """The test command; its figures."""
    root = bare_machine("fresh-test")
    before = dpkg_state(root)
    t0 = time.time()
    p = in_root(root, ["/bin/sh", "-c", cmd], ENV, cwd=SRC, machine=True, timeout=TEST_TIMEOUT)
    seconds = time.time() - t0
    out = p.stdout + p.stderr
    with open(os.path.join(CACHE, "fresh-test.log"), "w") as f:
        f.write(out)
    note(f"test: {seconds:.0f} s")
    fig = figures(root, before, seconds)
    check(p.returncode == 0, f"test: `{cmd}` exits 0", out[-4000:])
    summaries = re.findall(r"^(\d+) passed, (\d+) failed", out, re.M)
    checks = re.findall(r"^\d+%: Checks: (\d+), Failures: (\d+), Errors: (\d+)", out, re.M)
    check(len(summaries) >= 2 and all(f == "0" for _, f in summaries) and
          sum(int(n) for n, _ in summaries) > 0,
          f"test: the integration runners report 0 failed ({len(summaries)} runners)", summaries)
    check(len(checks) >= 5 and all(f == "0" and e == "0" for _, f, e in checks),
          f"test: the Check suites report no failure ({len(checks)} suites)", checks)
    check(os.path.exists(os.path.join(root, SRC.lstrip("/"), "build", "kmserve-mpi")) and
          "mpi.py: skipped" not in out,
          "test: kmserve-mpi built and mpi.py run (make test installs OpenMPI)",
          [ln for ln in out.splitlines() if "mpi" in ln][-20:])
    return fig


def report(measured):
    """The figures printed, written to FIGURES and compared with the
    README's."""
    head = sh(["git", "-C", ROOT, "rev-parse", "HEAD"]).stdout.strip()
    doc = {"commit": head, "date": time.strftime("%Y-%m-%d", time.gmtime()),
           "machine": machine(), "commands": measured}
    os.makedirs(CACHE, exist_ok=True)
    with open(FIGURES, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    note(f"figures ({os.path.relpath(FIGURES, ROOT)}), machine {json.dumps(doc['machine'])}:")
    note("| " + " | ".join(COLUMNS) + " |")
    note("| --- | --- | --- | --- | --- |")
    for cmd, fig in measured.items():
        note(table_row(cmd, fig))
    quoted = readme_figures()
    for cmd, fig in measured.items():
        compare(cmd, fig, quoted)


def main():
    t0 = time.time()
    try:
        if os.geteuid() != 0:
            check(False, "root", "the fresh-machine check needs root (debootstrap, chroot)")
        elif make_base():
            serve_cmd, test_cmd, examples = readme_commands()
            readme_figures()  # a malformed table fails now, not after the runs
            note(f"README's serve command: {serve_cmd}")
            note(f"README's test command: {test_cmd}")
            measured = {}
            fig = serve(serve_cmd, examples)
            if fig:
                measured[serve_cmd] = fig
            measured[test_cmd] = test(test_cmd)
            report(measured)
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
