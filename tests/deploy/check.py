#!/usr/bin/python3
"""Deploy checks: what can be checked of the Docker image, deploy/ and the
systemd unit on a machine without a Docker engine.

1. The Dockerfile is read and its instructions carried out, stage by stage,
   in chroots of Debian bookworm made with debootstrap (the stand-in for
   debian:bookworm-slim; cached in build/deploy/): the build stage's RUN
   lines install the build packages and run `make all`; the runtime stage
   installs its packages, makes its user, and gets the binaries by COPY
   --from=build. Then, in the runtime chroot, as the image's USER, with its
   ENV: ldd finds every library (kmserve, kmctl, kmserve-mpi), `kmserve
   --version`, kmserve-mpi answers --help with its usage, mpirun runs, no
   compiler or -dev package is there, the daemon starts from ENTRYPOINT
   (with KMSERVE_MPI_LAUNCH set to a 1-rank mpirun), the HEALTHCHECK
   command passes, /livez answers, kmctl fits a model into the VOLUME and
   predicts with it, a krr and a kpca fit with "distributed": true run
   through mpirun and kmserve-mpi and answer as the same fits in the
   daemon, and SIGTERM ends it with 0. The installed size of the runtime
   packages is measured and compared with the Dockerfile's claim. The
   chroots get debian:bookworm-slim's /usr/sbin/policy-rc.d (no service
   starts while packages install: openssh-server's would).
2. Dockerfile rules (hadolint is in neither Debian 12 nor npm): base images,
   non-root USER, HEALTHCHECK, apt hygiene, and shellcheck on every RUN line
   (as hadolint does).
3. deploy/k8s: YAML parsed (python3-yaml), every object validated against
   the Kubernetes JSON schemas (kubernetes-models from npm), and cross-checked
   (selectors, ports, probes, PVC mode, resources, the image's user and port).
4. deploy/docker-compose.yml by `docker-compose config` (Debian's
   docker-compose; the docker client here has no compose plugin), and the
   Prometheus files' structure.
5. deploy/kmserve.service by `systemd-analyze verify` and `systemd-analyze
   security --offline`.
6. deploy/mpi (distributed fits): the MPIJob's structure (kubeflow.org/
   v2beta1: Launcher and Worker replica specs, the launcher's
   KMSERVE_MPI_LAUNCH names the operator's hostfile and as many ranks as
   workers x slotsPerWorker, one ReadWriteMany claim on every pod), each
   replica's pod template validated as a Pod against the Kubernetes
   schemas; against the runtime image (item 1): both pods run the image
   deploy/k8s runs, the launcher's command, mpirun and KMSERVE_MPI_WORKER
   are executables there, and the worker's sshd config is there and
   passes `sshd -t` as the image's user with a host key where the
   operator mounts sshAuthMountPath; the Slurm script by shellcheck and
   `bash -n`.
Every validator is also fed a broken input that it must refuse.

Needs root (chroot, mount namespaces) and the network to Debian's mirror and
the npm registry on the first run. Usage, from the project root:
    /usr/bin/python3 tests/deploy/check.py [--keep]
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import fnmatch
import glob
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

import chroot
from chroot import (BASE_IMAGE, CACHE, DEFAULT_PATH, HERE, ROOT, check, fresh_root,
                    in_root, in_root_argv, make_base, note, sh)

SLIM_MB = 74.8  # docker image inspect debian:bookworm-slim (12.x), uncompressed

# ---------------------------------------------------------------- Dockerfile

class Instr:
    def __init__(self, line, op, rest):
        self.line, self.op, self.rest = line, op, rest
        self.flags = {}
        # --from=build, --chown=u:g, --interval=15s ... before the arguments
        while self.op in ("COPY", "ADD", "HEALTHCHECK", "FROM", "RUN") and \
                self.rest.startswith("--"):
            flag, _, self.rest = self.rest.partition(" ")
            k, _, v = flag[2:].partition("=")
            self.flags[k] = v
            self.rest = self.rest.lstrip()

    def json_or_shell(self, text=None):
        """The exec (JSON) form as a list, or the shell form wrapped in sh -c."""
        text = self.rest if text is None else text
        if text.startswith("["):
            return json.loads(text)
        return ["/bin/sh", "-c", text]

    def __str__(self):
        flags = "".join(f"--{k}={v} " for k, v in self.flags.items())
        return f"{self.op} {flags}{self.rest}"


class Stage:
    def __init__(self, base, name, index):
        self.base, self.name, self.index = base, name, index
        self.instrs = []


def parse_dockerfile(path):
    with open(path) as f:
        lines = f.read().split("\n")
    stages, logical, start = [], "", None
    for n, raw in enumerate(lines, 1):
        s = raw.strip()
        if s.startswith("#") or (not s and not logical):
            continue  # comments go, also inside continued lines (as Docker)
        if start is None:
            start = n
        if s.endswith("\\"):
            logical += s[:-1] + " "
            continue
        logical += s
        op, _, rest = logical.strip().partition(" ")
        ins = Instr(start, op.upper(), rest.strip())
        logical, start = "", None
        if ins.op == "FROM":
            m = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", ins.rest, re.I)
            if not m:
                raise ValueError(f"line {ins.line}: cannot read FROM {ins.rest}")
            stages.append(Stage(m.group(1), m.group(2), len(stages)))
        elif not stages:
            if ins.op != "ARG":
                raise ValueError(f"line {ins.line}: {ins.op} before FROM")
        else:
            stages[-1].instrs.append(ins)
    return stages


# ---------------------------------------------------------------- chroots

def lookup_user(root, spec):
    """USER name[:group] or uid[:gid] -> (uid, gid, home), from the chroot."""
    user, _, group = spec.partition(":")
    uid = gid = None
    home = "/"
    with open(os.path.join(root, "etc", "passwd")) as f:
        for line in f:
            p = line.strip().split(":")
            if len(p) >= 6 and (p[0] == user or p[2] == user):
                uid, gid, home = int(p[2]), int(p[3]), p[5]
    if uid is None and user.isdigit():
        uid, gid = int(user), int(user)
    if group:
        with open(os.path.join(root, "etc", "group")) as f:
            for line in f:
                p = line.strip().split(":")
                if len(p) >= 3 and (p[0] == group or p[2] == group):
                    gid = int(p[2])
        if group.isdigit():
            gid = int(group)
    if uid is None or gid is None:
        raise RuntimeError(f"USER {spec}: no such user in the image")
    return uid, gid, home


# ---------------------------------------------------------------- stages

class Image:
    """What a stage leaves: its root and its configuration."""

    def __init__(self, root):
        self.root = root
        self.env = {"PATH": DEFAULT_PATH}
        self.user, self.workdir = None, "/"
        self.entrypoint, self.cmd, self.healthcheck = [], [], None
        self.volumes, self.expose, self.stopsignal = [], [], "SIGTERM"
        self.args = {}


def dockerignore():
    path = os.path.join(ROOT, ".dockerignore")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def ignored(rel, patterns):
    parts = rel.split("/")
    return any(fnmatch.fnmatch("/".join(parts[:i]), p.strip("/"))
               for p in patterns for i in range(1, len(parts) + 1))


def copy_into(src, dest, patterns, ctx_rel):
    if os.path.isdir(src):
        os.makedirs(dest, exist_ok=True)
        for entry in sorted(os.listdir(src)):
            rel = f"{ctx_rel}/{entry}" if ctx_rel else entry
            if patterns and ignored(rel, patterns):
                continue
            copy_into(os.path.join(src, entry), os.path.join(dest, entry), patterns, rel)
    else:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(src, dest, follow_symlinks=False)


def run_stage(stage, images, label):
    if stage.base in images:
        img_from = images[stage.base]
        root = os.path.join(CACHE, f"root-{label}")
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(img_from.root, root, symlinks=True)
    elif stage.base == BASE_IMAGE:
        root = fresh_root(label)
        # debian:bookworm-slim (debuerreotype) has it: services are not
        # started while packages install (openssh-server's would be)
        rc = os.path.join(root, "usr", "sbin", "policy-rc.d")
        with open(rc, "w") as f:
            f.write("#!/bin/sh\nexit 101\n")
        os.chmod(rc, 0o755)
    else:
        raise RuntimeError(f"FROM {stage.base}: only {BASE_IMAGE} or an earlier stage")
    img = Image(root)
    patterns = dockerignore()
    total = len(stage.instrs)
    for i, ins in enumerate(stage.instrs, 1):
        t0 = time.time()
        op, rest = ins.op, ins.rest
        if op == "RUN":
            user = lookup_user(root, img.user) if img.user else None
            env = dict(img.env)
            env.setdefault("HOME", user[2] if user else "/root")
            p = in_root(root, ins.json_or_shell(), env, user, img.workdir)
            if p.returncode != 0:
                raise RuntimeError(f"line {ins.line}: RUN exited {p.returncode}\n"
                                   f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        elif op == "COPY":
            args = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
            srcs, dest = args[:-1], args[-1]
            dest_abs = dest if dest.startswith("/") else os.path.join(img.workdir, dest)
            into_dir = dest.endswith("/") or len(srcs) > 1
            frm = ins.flags.get("from")
            for s in srcs:
                if frm:
                    if frm not in images:
                        raise RuntimeError(f"line {ins.line}: COPY --from={frm}: no such stage")
                    host_src = os.path.join(images[frm].root, s.lstrip("/"))
                    pats, ctx_rel = [], ""
                else:
                    ctx_rel = os.path.normpath(s)
                    ctx_rel = "" if ctx_rel == "." else ctx_rel
                    host_src = os.path.join(ROOT, ctx_rel)
                    if ctx_rel and ignored(ctx_rel, patterns):
                        raise RuntimeError(f"line {ins.line}: {s} is excluded by .dockerignore")
                    pats = patterns
                if not os.path.exists(host_src):
                    raise RuntimeError(f"line {ins.line}: COPY {s}: not found")
                target = dest_abs
                if os.path.isfile(host_src) and into_dir:
                    target = os.path.join(dest_abs, os.path.basename(s.rstrip("/")))
                copy_into(host_src, os.path.join(root, target.lstrip("/")), pats, ctx_rel)
                if ins.flags.get("chown"):
                    uid, gid, _ = lookup_user(root, ins.flags["chown"])
                    sh(["chown", "-R", f"{uid}:{gid}", os.path.join(root, target.lstrip("/"))])
        elif op == "WORKDIR":
            img.workdir = rest if rest.startswith("/") else os.path.join(img.workdir, rest)
            os.makedirs(os.path.join(root, img.workdir.lstrip("/")), exist_ok=True)
        elif op == "ENV":
            words = shlex.split(rest)
            if words and "=" not in words[0]:
                img.env[words[0]] = rest.split(None, 1)[1]
            else:
                for w in words:
                    k, _, v = w.partition("=")
                    img.env[k] = v
        elif op == "ARG":
            k, _, v = rest.partition("=")
            img.args[k] = v
        elif op == "USER":
            lookup_user(root, rest)  # must exist
            img.user = rest
        elif op == "ENTRYPOINT":
            img.entrypoint = ins.json_or_shell()
        elif op == "CMD":
            img.cmd = ins.json_or_shell()
        elif op == "HEALTHCHECK":
            kind, _, cmd = rest.partition(" ")
            img.healthcheck = None if kind == "NONE" else ins.json_or_shell(cmd.strip())
            img.healthcheck_flags = ins.flags
        elif op == "VOLUME":
            img.volumes += json.loads(rest) if rest.startswith("[") else rest.split()
        elif op == "EXPOSE":
            img.expose += [int(p.split("/")[0]) for p in rest.split()]
        elif op == "STOPSIGNAL":
            img.stopsignal = rest
        elif op == "LABEL":
            pass
        else:
            raise RuntimeError(f"line {ins.line}: {op} is not carried out by this check")
        note(f"[{label} {i}/{total}] {str(ins)[:90]} ({time.time() - t0:.1f} s)")
    return img


# ---------------------------------------------------------------- checks

def lint_dockerfile(stages):
    """hadolint's main rules, for want of hadolint."""
    names = {s.name for s in stages if s.name}
    check(all(s.base == BASE_IMAGE or s.base in names for s in stages) and
          all(":latest" not in s.base for s in stages),
          f"Dockerfile: every stage is {BASE_IMAGE} or an earlier stage",
          [s.base for s in stages])
    final = stages[-1]
    ops = [i.op for i in final.instrs]
    users = [i.rest for i in final.instrs if i.op == "USER"]
    check(users and users[-1].split(":")[0] not in ("root", "0"),
          "Dockerfile: the runtime stage runs as a non-root USER", users)
    check("HEALTHCHECK" in ops and "ENTRYPOINT" in ops and "VOLUME" in ops and "EXPOSE" in ops,
          "Dockerfile: runtime stage has HEALTHCHECK, ENTRYPOINT, VOLUME, EXPOSE", ops)
    check(all(i.op != "ADD" for s in stages for i in s.instrs), "Dockerfile: COPY, never ADD")
    runs = [i for s in stages for i in s.instrs if i.op == "RUN"]
    apt_ok = True
    for r in runs:
        if "apt-get install" in r.rest:
            apt_ok &= "--no-install-recommends" in r.rest and " -y" in r.rest
            apt_ok &= "apt-get update" in r.rest and "rm -rf /var/lib/apt/lists/*" in r.rest
    check(apt_ok, "Dockerfile: apt-get update + install -y --no-install-recommends + lists "
          "removed, in one RUN")
    # shellcheck on each RUN, as hadolint does (SC1091: sourced files absent).
    bad = []
    for r in runs:
        if r.rest.startswith("["):
            continue
        p = sh(["shellcheck", "-s", "sh", "-e", "SC1091", "-"], input=r.rest + "\n")
        if p.returncode:
            bad.append(f"line {r.line}: {p.stdout[-600:]}")
    check(not bad, f"Dockerfile: shellcheck passes on its {len(runs)} RUN lines", bad)
    p = sh(["shellcheck", "-s", "sh", "-"], input='rm -rf $DIR/*\n')
    check(p.returncode != 0, "shellcheck refuses an unquoted rm -rf $DIR/* (control)")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def http_post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def mpi_fits(port, models):
    """A krr and a kpca fit with "distributed": true (kmserve-mpi under the
    daemon's 1-rank mpirun) answer as the same fits in the daemon."""
    X = [[0, 0], [1, 0], [0, 1], [1, 1], [2, 1], [0.5, 2], [1.5, 0.5]]
    y = [0, 1, 1, 2, 3, 2.5, 2]
    fits = {"krr": ({"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.5},
                     "params": {"alpha": 0.1}, "X": X, "y": y}, "predict", "predictions"),
            "kpca": ({"algorithm": "kpca", "kernel": {"type": "rbf", "gamma": 0.5},
                      "params": {"n_components": 2}, "X": X}, "project", "projections")}
    for name, (body, route, key) in fits.items():
        answers = []
        for where in ("local", "mpi"):
            st, out = http_post(port, f"/v1/models/{name}-{where}/fit",
                                dict(body, distributed=where == "mpi"))
            if not check(st == 201, f"runtime: a {name} fit ({where}) answers 201", (st, out)):
                return
            st, out = http_post(port, f"/v1/models/{name}-{where}/{route}", {"X": X})
            answers.append(out.get(key) if st == 200 and isinstance(out, dict) else None)
        a, b = answers
        ok = a is not None and b is not None and len(a) == len(b)
        if ok and name == "kpca":  # components are unique up to sign
            b = [[v * (1 if sum(r[j] * s[j] for r, s in zip(a, b)) >= 0 else -1)
                  for j, v in enumerate(row)] for row in b]
        flat = [(u, v) for ra, rb in zip(a or [], b or [])
                for u, v in (zip(ra, rb) if isinstance(ra, list) else [(ra, rb)])]
        err = max((abs(u - v) for u, v in flat), default=1)
        check(ok and flat and err <= 1e-8 * max(abs(u) for u, _ in flat),
              f"runtime: {name} fitted by kmserve-mpi under mpirun answers as the "
              f"daemon's own fit ({err:.1e})", (a, b))
    left = [f for f in os.listdir(models) if f.startswith(".kmserve-mpi-")]
    check(not left, "runtime: no MPI staging file left in the VOLUME", left)


def dpkg_sizes(root):
    p = in_root(root, ["dpkg-query", "-W", "-f", "${Package}\t${Installed-Size}\n"],
                {"PATH": DEFAULT_PATH})
    out = {}
    for line in p.stdout.splitlines():
        name, _, kb = line.partition("\t")
        out[name] = int(kb or 0)
    return out


def check_runtime(img, build_img, stated_mb):
    root = img.root
    user = lookup_user(root, img.user) if img.user else None
    check(user is not None and user[:2] == (10001, 10001),
          "runtime: runs as uid 10001, gid 10001 (as deploy/k8s expects)", (img.user, user))
    env = dict(img.env)
    env["HOME"] = user[2] if user else "/root"
    bins = ["/usr/local/bin/kmserve", "/usr/local/bin/kmctl", "/usr/local/bin/kmserve-mpi"]
    for b in bins:
        p = in_root(root, ["ldd", b], env, user)
        check(p.returncode == 0 and "not found" not in p.stdout,
              f"runtime: ldd {b}: every library found", p.stdout + p.stderr)
    p = in_root(root, img.entrypoint + ["--version"], env, user)
    check(p.returncode == 0 and p.stdout.startswith("kmserve "), "runtime: kmserve --version",
          p.stdout + p.stderr)
    p = in_root(root, ["kmctl", "--version"], env, user)
    check(p.returncode == 0 and p.stdout.startswith("kmctl "), "runtime: kmctl --version", p)
    p = in_root(root, ["kmserve-mpi", "--help"], env, user)
    check(p.returncode == 2 and p.stderr.startswith("usage: kmserve-mpi --request"),
          "runtime: kmserve-mpi --help prints its usage", p.stdout + p.stderr)
    p = in_root(root, ["mpirun", "--version"], env, user)
    check(p.returncode == 0 and "Open MPI" in p.stdout, "runtime: mpirun --version (OpenMPI)",
          p.stdout + p.stderr)

    base = dpkg_sizes(build_img.base_root) if hasattr(build_img, "base_root") else None
    pkgs = dpkg_sizes(root)
    dev = sorted(n for n in pkgs if n.endswith("-dev") or n in ("gcc", "make", "cpp", "gcc-12"))
    check(not dev, "runtime: no compiler and no -dev package", dev)
    if base is not None:
        added = {n: kb for n, kb in pkgs.items() if n not in base}
        mb = sum(added.values()) / 1024
        bin_mb = sum(os.path.getsize(os.path.join(root, b.lstrip("/"))) for b in bins) / 1048576
        total = SLIM_MB + mb + bin_mb
        note(f"runtime packages added to the base: {len(added)}, {mb:.1f} MiB installed "
             f"(largest: {', '.join(f'{n} {kb // 1024} MiB' for n, kb in sorted(added.items(), key=lambda x: -x[1])[:4])}); "
             f"binaries {bin_mb:.2f} MiB; image about {total:.0f} MB")
        check(stated_mb is not None and abs(stated_mb - total) <= 0.15 * total,
              f"Dockerfile's stated size ({stated_mb} MB) is within 15% of the measured {total:.0f} MB",
              stated_mb)

    # The volume exists and belongs to the user.
    for v in img.volumes:
        st = os.stat(os.path.join(root, v.lstrip("/")))
        check(user and st.st_uid == user[0], f"runtime: VOLUME {v} belongs to the image user",
              (st.st_uid, user))
    check(8080 in img.expose and env.get("KMSERVE_LISTEN") == "0.0.0.0:8080",
          "runtime: listens on 0.0.0.0:8080 and EXPOSEs it", (img.expose, env.get("KMSERVE_LISTEN")))

    # Start it as `docker run` would. The chroot shares this machine's
    # network, so it listens on a free loopback port instead of 8080.
    port = free_port()
    # Distributed fits on one local rank (machine: /sys and /dev/shm, which
    # OpenMPI's hwloc and shared memory use).
    env_run = dict(env, KMSERVE_LISTEN=f"127.0.0.1:{port}", KMSERVE_URL=f"http://127.0.0.1:{port}",
                   KMSERVE_ACCESS_LOG="false", KMSERVE_MPI_LAUNCH="mpirun -np 1 --mca btl self")
    log = open(os.path.join(CACHE, "runtime-daemon.log"), "w")
    proc = subprocess.Popen(in_root_argv(root, img.entrypoint + img.cmd, env_run, user, img.workdir,
                                         machine=True),
                            stdout=log, stderr=log)
    try:
        deadline, status = time.time() + 30, 0
        while time.time() < deadline and status != 200 and proc.poll() is None:
            status, body = http_get(port, "/livez")
            time.sleep(0.1)
        check(status == 200 and json.loads(body) == {"status": "live"},
              "runtime: the ENTRYPOINT starts kmserve; /livez answers", (status, body))
        p = in_root(root, img.healthcheck, env_run, user, img.workdir)
        check(p.returncode == 0, f"runtime: HEALTHCHECK {' '.join(img.healthcheck)} passes",
              p.stdout + p.stderr)
        csv_path = os.path.join(root, "tmp", "demo.csv")
        with open(csv_path, "w") as f:
            f.write("a,b,y\n0,0,0\n1,0,1\n0,1,1\n1,1,2\n2,1,3\n")
        p = in_root(root, ["kmctl", "fit", "demo", "/tmp/demo.csv", "--algorithm", "krr",
                           "--kernel", "rbf", "--gamma", "0.5"], env_run, user, img.workdir)
        files = os.listdir(os.path.join(root, img.volumes[0].lstrip("/"))) if img.volumes else []
        check(p.returncode == 0 and any(f.startswith("demo") for f in files),
              "runtime: kmctl fits a model (OpenBLAS + LAPACKE) and it lands in the VOLUME",
              (p.stdout, p.stderr, files))
        p = in_root(root, ["kmctl", "predict", "demo", "/tmp/demo.csv"], env_run, user, img.workdir)
        check(p.returncode == 0 and len(p.stdout.splitlines()) == 6, "runtime: kmctl predicts",
              p.stdout + p.stderr)
        mpi_fits(port, os.path.join(root, img.volumes[0].lstrip("/")))
    finally:
        proc.send_signal(getattr(signal, img.stopsignal))
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        log.close()
    check(rc == 0, f"runtime: {img.stopsignal} stops kmserve with 0", rc)
    p = in_root(root, img.healthcheck, env_run, user, img.workdir)
    check(p.returncode != 0, "runtime: the HEALTHCHECK fails once kmserve is gone (control)")


def docker_checks(keep):
    dockerfile = os.path.join(ROOT, "Dockerfile")
    stages = parse_dockerfile(dockerfile)
    check(len(stages) == 2 and stages[0].name == "build",
          "Dockerfile: two stages, the first named build", [(s.base, s.name) for s in stages])
    lint_dockerfile(stages)
    with open(dockerfile) as f:
        m = re.search(r"Expected size: about (\d+) MB", f.read())
    stated = int(m.group(1)) if m else None
    if not make_base():
        return
    images = {}
    try:
        for s in stages:
            label = s.name or f"stage{s.index}"
            t0 = time.time()
            try:
                img = run_stage(s, images, label)
            except Exception as e:  # noqa: BLE001 - report the step that broke
                check(False, f"Dockerfile stage {label}: every instruction carried out", e)
                return
            check(True, f"Dockerfile stage {label}: every instruction carried out "
                  f"({time.time() - t0:.0f} s)")
            images[label] = img
            if s.name:
                images[s.name] = img
        build = images["build"]
        check(all(os.access(os.path.join(build.root, "src/build", b), os.X_OK)
                  for b in ("kmserve", "kmctl", "kmserve-mpi")),
              "build stage: make all built kmserve, kmctl and kmserve-mpi")
        final = images[stages[-1].name or f"stage{stages[-1].index}"]
        build.base_root = fresh_root("base")
        check_runtime(final, build, stated)
        mpijob_in_image(final)
    finally:
        if not keep:
            for label in ["base"] + [s.name or f"stage{s.index}" for s in stages]:
                shutil.rmtree(os.path.join(CACHE, f"root-{label}"), ignore_errors=True)


# ---------------------------------------------------------------- deploy/

def load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def k8s_checks():
    files = sorted(glob.glob(os.path.join(ROOT, "deploy", "k8s", "*.yaml")))
    objs = {}
    for path in files:
        try:
            docs = load_docs(path)
        except yaml.YAMLError as e:
            check(False, f"k8s: {os.path.basename(path)} parses", e)
            continue
        for d in docs:
            objs.setdefault(d.get("kind"), []).append((os.path.basename(path), d))
    check(files and all(f.endswith(".yaml") for f in files), "k8s: YAML files parse",
          [os.path.basename(f) for f in files])
    kust = objs.pop("Kustomization", [])
    listed = set(kust[0][1].get("resources", [])) if kust else set()
    check(kust and listed == {os.path.basename(f) for f in files} - {"kustomization.yaml"},
          "k8s: kustomization.yaml lists every manifest", listed)
    need = ["Deployment", "Service", "PersistentVolumeClaim", "HorizontalPodAutoscaler",
            "PodDisruptionBudget"]
    check(all(k in objs for k in need), "k8s: Deployment, Service, PVC, HPA and PDB present",
          sorted(objs))
    if not all(k in objs for k in need):
        return
    dep = objs["Deployment"][0][1]
    pod = dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    c = pod["spec"]["containers"][0]
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    env = {e["name"]: e.get("value") for e in c.get("env", [])}

    def matches(sel):
        return bool(sel) and all(labels.get(k) == v for k, v in sel.items())

    check(matches(dep["spec"]["selector"]["matchLabels"]), "k8s: Deployment selector matches its pods")
    lp, rp = c.get("livenessProbe", {}), c.get("readinessProbe", {})
    check(lp.get("httpGet", {}).get("path") == "/livez" and rp.get("httpGet", {}).get("path") == "/readyz"
          and lp["httpGet"].get("port") in ports and rp["httpGet"].get("port") in ports,
          "k8s: liveness /livez and readiness /readyz on the container's named port")
    res = c.get("resources", {})

    def qty(v):
        v = str(v)
        units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "m": 1e-3}
        for u, f in units.items():
            if v.endswith(u):
                return float(v[:-len(u)]) * f
        return float(v)
    ok = all(k in res.get(t, {}) for t in ("requests", "limits") for k in ("cpu", "memory"))
    check(ok and all(qty(res["requests"][k]) <= qty(res["limits"][k]) for k in ("cpu", "memory")),
          "k8s: cpu and memory requests and limits, requests <= limits", res)
    if ok:
        budget = float(env.get("KMSERVE_MEMORY_BUDGET_MB") or 0) * 2**20
        check(0 < budget < qty(res["limits"]["memory"]),
              "k8s: KMSERVE_MEMORY_BUDGET_MB is set below the memory limit", budget)
        blas = int(env.get("KMSERVE_WORKERS", 1)) * int(env.get("KMSERVE_BLAS_THREADS", 1))
        check(blas <= qty(res["limits"]["cpu"]), "k8s: workers x BLAS threads <= the CPU limit", blas)
    check(int(env.get("KMSERVE_SHUTDOWN_TIMEOUT", 30)) < pod["spec"].get("terminationGracePeriodSeconds", 30),
          "k8s: terminationGracePeriodSeconds exceeds KMSERVE_SHUTDOWN_TIMEOUT")
    check(ports.get("http") == 8080 and env.get("KMSERVE_LISTEN") == "0.0.0.0:8080",
          "k8s: the container listens on 0.0.0.0:8080 (the image's port)", (ports, env.get("KMSERVE_LISTEN")))
    sc = pod["spec"].get("securityContext", {})
    check(sc.get("runAsNonRoot") is True and sc.get("runAsUser") == 10001 and sc.get("fsGroup") == 10001,
          "k8s: runs as the image's user 10001, fsGroup for the volume", sc)
    pvc = objs["PersistentVolumeClaim"][0][1]
    vols = {v["name"]: v for v in pod["spec"].get("volumes", [])}
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    mdir = env.get("KMSERVE_MODELS_DIR")
    vol = vols.get(mounts.get(mdir), {})
    check("ReadWriteMany" in pvc["spec"].get("accessModes", []) and
          vol.get("persistentVolumeClaim", {}).get("claimName") == pvc["metadata"]["name"],
          "k8s: the models directory is the ReadWriteMany PVC, mounted at KMSERVE_MODELS_DIR",
          (mdir, mounts, vol))
    svc = objs["Service"][0][1]
    check(matches(svc["spec"]["selector"]) and
          all(p.get("targetPort") in ports or p.get("targetPort") in ports.values()
              for p in svc["spec"]["ports"]),
          "k8s: Service selects the pods and targets their port")
    hpa = objs["HorizontalPodAutoscaler"][0][1]
    ref = hpa["spec"]["scaleTargetRef"]
    check(ref == {"apiVersion": "apps/v1", "kind": "Deployment", "name": dep["metadata"]["name"]}
          and hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"],
          "k8s: HPA scales the Deployment", ref)
    pdb = objs["PodDisruptionBudget"][0][1]
    check(matches(pdb["spec"]["selector"]["matchLabels"]) and
          pdb["spec"].get("minAvailable", 0) < hpa["spec"]["minReplicas"],
          "k8s: PDB selects the pods and leaves room to drain one")

    # JSON schemas, with a broken Deployment that must be refused.
    items = [{"name": f"{f} {k}", "doc": d, "expect": "valid"} for k, lst in objs.items()
             for f, d in lst]
    broken = json.loads(json.dumps(dep))
    broken["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "eighty"
    del broken["spec"]["selector"]
    items.append({"name": "control: a broken Deployment", "doc": broken, "expect": "invalid"})
    npm_dir = os.path.join(CACHE, "npm")
    stamp = os.path.join(npm_dir, "package-lock.json")
    lock = os.path.join(HERE, "package-lock.json")
    if not (os.path.exists(stamp) and open(stamp).read() == open(lock).read()
            and os.path.isdir(os.path.join(npm_dir, "node_modules"))):
        os.makedirs(npm_dir, exist_ok=True)
        for f in ("package.json", "package-lock.json"):
            shutil.copy(os.path.join(HERE, f), npm_dir)
        p = sh(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=npm_dir)
        if not check(p.returncode == 0, "k8s: npm ci kubernetes-models (pinned)", p.stderr[-1000:]):
            return
    shutil.copy(os.path.join(HERE, "k8s_validate.mjs"), npm_dir)
    p = sh(["node", os.path.join(npm_dir, "k8s_validate.mjs")], input=json.dumps(items), cwd=npm_dir)
    for line in p.stdout.splitlines():
        note(f"  {line}")
    check(p.returncode == 0 and p.stdout.count("\nok ") + p.stdout.startswith("ok ") == len(items),
          f"k8s: {len(items) - 1} objects valid against the Kubernetes schemas; the broken one refused",
          p.stdout[-1500:] + p.stderr[-1500:])


def mpi_checks():
    """deploy/mpi: the MPIJob and the Slurm script (item 6 above)."""
    path = os.path.join(ROOT, "deploy", "mpi", "mpijob.yaml")
    job = load_docs(path)[0]
    spec = job.get("spec", {})
    reps = spec.get("mpiReplicaSpecs", {})
    check(job.get("apiVersion") == "kubeflow.org/v2beta1" and job.get("kind") == "MPIJob"
          and set(reps) == {"Launcher", "Worker"} and reps["Launcher"].get("replicas") == 1,
          "mpi: an MPIJob (v2beta1) of one Launcher and Workers", list(reps))
    lc = reps["Launcher"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in lc.get("env", [])}
    launch = shlex.split(env.get("KMSERVE_MPI_LAUNCH", ""))
    ranks = reps["Worker"].get("replicas", 0) * spec.get("slotsPerWorker", 1)
    np = launch[launch.index("-np") + 1] if "-np" in launch else None
    check(launch[:1] == ["mpirun"] and "/etc/mpi/hostfile" in launch and np == str(ranks),
          "mpi: the launcher's KMSERVE_MPI_LAUNCH runs mpirun over the operator's hostfile, "
          "one rank per worker slot", (launch, ranks))
    check(env.get("KMSERVE_MPI_WORKER", "").endswith("kmserve-mpi") and
          float(env.get("KMSERVE_MPI_MEMORY_BUDGET_MB", "0")) > 0,
          "mpi: the worker's path and the per-rank budget are set", env)
    claims = set()
    for name, r in reps.items():
        pod = r["template"]["spec"]
        mounts = {m["name"]: m["mountPath"] for c in pod["containers"]
                  for m in c.get("volumeMounts", [])}
        vols = {v["name"]: v.get("persistentVolumeClaim", {}).get("claimName")
                for v in pod.get("volumes", [])}
        claims |= {vols.get("models")}
        check(mounts.get("models") == env.get("KMSERVE_MODELS_DIR"),
              f"mpi: the {name} mounts the models directory where the daemon keeps it",
              mounts)
    pvc = [d for d in load_docs(os.path.join(ROOT, "deploy", "k8s", "pvc.yaml"))
           if d.get("kind") == "PersistentVolumeClaim"]
    check(len(claims) == 1 and pvc and pvc[0]["metadata"]["name"] in claims and
          "ReadWriteMany" in pvc[0]["spec"]["accessModes"],
          "mpi: every pod mounts deploy/k8s's ReadWriteMany claim", claims)
    items = [{"name": f"mpijob {name} pod", "expect": "valid",
              "doc": {"apiVersion": "v1", "kind": "Pod",
                      "metadata": r["template"].get("metadata", {}),
                      "spec": r["template"]["spec"]}} for name, r in reps.items()]
    broken = json.loads(json.dumps(items[0]["doc"]))
    del broken["spec"]["containers"]
    items.append({"name": "control: a pod without containers", "doc": broken,
                  "expect": "invalid"})
    npm_dir = os.path.join(CACHE, "npm")
    if os.path.isdir(os.path.join(npm_dir, "node_modules")):
        shutil.copy(os.path.join(HERE, "k8s_validate.mjs"), npm_dir)
        p = sh(["node", os.path.join(npm_dir, "k8s_validate.mjs")], input=json.dumps(items),
               cwd=npm_dir)
        check(p.returncode == 0, "mpi: the MPIJob's pod templates are valid Pods; the "
              "broken one refused", p.stdout[-1500:] + p.stderr[-1500:])
    else:
        check(False, "mpi: kubernetes-models installed (by the k8s checks)", npm_dir)
    script = os.path.join(ROOT, "deploy", "mpi", "kmserve-slurm.sh")
    p = sh(["shellcheck", script])
    check(p.returncode == 0, "mpi: shellcheck passes on the Slurm script", p.stdout[-1500:])
    p = sh(["bash", "-n", script])
    check(p.returncode == 0, "mpi: bash -n parses the Slurm script", p.stderr)
    text = open(script).read()
    check("#SBATCH --nodes=" in text and "--mpi-launch" in text and "srun" in text,
          "mpi: the Slurm script is a batch job that launches fits with srun")


def mpijob_in_image(img):
    """deploy/mpi/mpijob.yaml against the runtime image (item 6)."""
    root = img.root
    user = lookup_user(root, img.user)
    env = dict(img.env, HOME=user[2])
    job = load_docs(os.path.join(ROOT, "deploy", "mpi", "mpijob.yaml"))[0]
    reps = job["spec"]["mpiReplicaSpecs"]
    dep = [d for d in load_docs(os.path.join(ROOT, "deploy", "k8s", "deployment.yaml"))
           if d.get("kind") == "Deployment"][0]
    image = dep["spec"]["template"]["spec"]["containers"][0]["image"]
    images = {c["image"] for r in reps.values() for c in r["template"]["spec"]["containers"]}
    check(images == {image}, f"mpi: the MPIJob's pods run the image deploy/k8s runs ({image})",
          images)
    lc = reps["Launcher"]["template"]["spec"]["containers"][0]
    wc = reps["Worker"]["template"]["spec"]["containers"][0]
    lenv = {e["name"]: e.get("value") for e in lc.get("env", [])}
    launch = shlex.split(lenv.get("KMSERVE_MPI_LAUNCH", ""))
    need = [lc["command"][0], launch[0] if launch else "mpirun",
            lenv.get("KMSERVE_MPI_WORKER", ""), wc["command"][0]]
    p = in_root(root, ["/bin/sh", "-c", 'for c; do command -v "$c" || exit 1; done', "-"] + need,
                env, user)
    check(p.returncode == 0, "mpi: the launcher's command, mpirun, KMSERVE_MPI_WORKER and the "
          "worker's command are executables in the image", (need, p.stdout, p.stderr))
    cmd = wc["command"]
    conf = cmd[cmd.index("-f") + 1] if "-f" in cmd else None
    mount = job["spec"].get("sshAuthMountPath", "")
    text = ""
    if conf and os.path.exists(os.path.join(root, conf.lstrip("/"))):
        with open(os.path.join(root, conf.lstrip("/"))) as f:
            text = f.read()
    keys = re.findall(r"^(?:HostKey|AuthorizedKeysFile)\s+(\S+)", text, re.M)
    check(text and keys and all(k.startswith(mount.rstrip("/") + "/") for k in keys),
          "mpi: the worker's sshd config is in the image and takes its keys from "
          "sshAuthMountPath", (conf, mount, keys))
    if not (text and mount):
        return
    # As the operator mounts it: a key pair and authorized_keys in mount.
    host = os.path.join(root, mount.lstrip("/"))
    os.makedirs(host, exist_ok=True)
    os.chown(host, user[0], user[1])
    p = in_root(root, ["/bin/sh", "-c", f'ssh-keygen -q -t rsa -N "" -f {mount}/id_rsa && '
                       f'cp {mount}/id_rsa.pub {mount}/authorized_keys'], env, user)
    p2 = in_root(root, ["/usr/sbin/sshd", "-t", "-f", conf], env, user)
    check(p.returncode == 0 and p2.returncode == 0,
          "mpi: sshd -t accepts the worker's config as the image's user", p.stderr + p2.stderr)
    shutil.rmtree(host, ignore_errors=True)


def compose_checks():
    path = os.path.join(ROOT, "deploy", "docker-compose.yml")
    p = sh(["docker-compose", "-f", path, "config", "-q"], cwd=os.path.dirname(path))
    check(p.returncode == 0 and not p.stderr.strip(), "compose: docker-compose config accepts it",
          p.stderr)
    with tempfile.NamedTemporaryFile("w", suffix=".yml", dir=os.path.dirname(path)) as bad:
        doc = load_docs(path)[0]
        doc["services"]["kmserve"]["helthcheck"] = {"test": ["CMD", "true"]}
        yaml.safe_dump(doc, bad)
        bad.flush()
        p = sh(["docker-compose", "-f", bad.name, "config", "-q"], cwd=os.path.dirname(path))
        check(p.returncode != 0, "compose: a misspelt key is refused (control)", p.stderr)
    svc = doc["services"]
    prom = load_docs(os.path.join(ROOT, "deploy", "prometheus.yml"))[0]
    targets = [t for j in prom["scrape_configs"] for sc in j.get("static_configs", [])
               for t in sc["targets"]]
    check("kmserve:8080" in targets and "kmserve" in svc and
          svc["prometheus"]["depends_on"]["kmserve"]["condition"] == "service_healthy" and
          any("/var/lib/kmserve/models" in v for v in svc["kmserve"]["volumes"]),
          "compose: Prometheus scrapes kmserve:8080 once it is healthy; models in a volume", targets)
    scrape = load_docs(os.path.join(ROOT, "deploy", "prometheus-scrape.yml"))[0]
    check(all(j.get("job_name") and (j.get("static_configs") or j.get("kubernetes_sd_configs"))
              for j in scrape["scrape_configs"]), "prometheus-scrape.yml: jobs with targets")


def verify_unit():
    """systemd-analyze verify wants ExecStart to exist: the copy checked
    points it at build/kmserve (identical but for that)."""
    unit = os.path.join(ROOT, "deploy", "kmserve.service")
    with open(unit) as f:
        text = f.read()
    binary = os.path.join(ROOT, "build", "kmserve")
    if not os.access(binary, os.X_OK):
        check(False, "systemd: build/kmserve exists for verify (run make first)")
        return
    with tempfile.TemporaryDirectory() as d:
        copy = os.path.join(d, "kmserve.service")
        with open(copy, "w") as f:
            f.write(text.replace("ExecStart=/usr/local/bin/kmserve", f"ExecStart={binary}"))
        p = sh(["systemd-analyze", "verify", copy])
        out = (p.stdout + p.stderr).strip()
        check(p.returncode == 0 and not out, "systemd: systemd-analyze verify is silent", out)
        with open(copy, "w") as f:
            f.write(text.replace("ProtectSystem=strict", "ProtectSystem=strickt"))
        p = sh(["systemd-analyze", "verify", copy])
        check("strickt" in p.stdout + p.stderr, "systemd: verify reports a bad value (control)",
              p.stdout + p.stderr)
    p = sh(["systemd-analyze", "security", "--offline=true", unit])
    m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", p.stdout + p.stderr)
    score = float(m.group(1)) if m else 99
    note(f"systemd-analyze security exposure: {score} (0 best, 10 worst)")
    check(score <= 2.0, "systemd: sandbox exposure level <= 2.0", (p.stdout + p.stderr)[-800:])
    keys = dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln and not ln.startswith("#"))
    check(keys.get("DynamicUser") == "yes" and keys.get("ProtectSystem") == "strict" and
          keys.get("NoNewPrivileges") == "yes" and "kmserve" in keys.get("StateDirectory", ""),
          "systemd: DynamicUser, ProtectSystem=strict, NoNewPrivileges, StateDirectory")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", action="store_true", help="keep the stage roots in build/deploy")
    args = ap.parse_args()
    t0 = time.time()
    try:
        if os.geteuid() != 0:
            check(False, "root", "the deploy checks need root (debootstrap, chroot, mount)")
        else:
            docker_checks(args.keep)
        k8s_checks()
        mpi_checks()
        compose_checks()
        verify_unit()
    except Exception as e:  # a crash of the checker is a failure, not a pass
        import traceback
        traceback.print_exc()
        check(False, "checker", repr(e))
    note(f"deploy checks took {time.time() - t0:.0f} s")
    note("not checked here: a real `docker build` (no Docker engine), hadolint (not in "
         "Debian 12 or npm), unknown fields in Kubernetes objects, the unit under a real systemd")
    return chroot.tally.summary()


if __name__ == "__main__":
    sys.exit(main())
