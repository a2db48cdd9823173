#!/usr/bin/python3
"""Distributed exact fits: kmserve-mpi under mpirun, and through the daemon.

Worker: mpi_check writes a staging file (krr n 600 d 3; gpr n 517 d 4,
standardize + center_y; kpca n 600 d 3, 5 components with the inverse
map), mpirun --oversubscribe -np 1, 2, 3 and 4 (grids 1x1, 1x2, 1x3,
2x2) with block 64 runs kmserve-mpi on it, and mpi_check compares the
model with core's single-process fit of the same request (itself checked
against scikit-learn in tests/core): krr coefficients and predictions,
gpr predictions and variances, within 1e-9 relative; kpca eigenvalues,
projections of 200 new rows (up to each component's sign) and their
inverse images within 1e-8. Kpca n 1200 on 2 ranks under a per-rank
budget that holds PDSYEVR's minimum workspace but not its optimum runs
with the minimum and gives the same. A per-rank budget too small for the
share fails with its message.

Daemon (--mpi-launch "mpirun --oversubscribe -np 2 ..."): a distributed
krr fit predicts what the local fit predicts (1e-9); under
--memory-budget-mb 40 a 3500-row exact fit (the packed factor: about
4 n^2 = 49 MB) is 413 locally and 201 with
"distributed": true; solver auto goes distributed (3500 samples, not
nystrom's centres); nystrom distributed is 400; without --mpi-launch
"distributed" is 400. Kpca (5 components, with the inverse map): a
distributed fit of 1500 rows projects 100 new rows as the local fit does
(up to each component's sign, 1e-8) and maps them back alike; under the
same local budget a 2500-row kpca (eigen_solver dense) is 413 locally and
201 with "distributed": true; eigen_solver randomized distributed is 400
naming params.eigen_solver.

Faults, on a daemon with one fit worker, --mpi-heartbeat-timeout 10 and
--mpi-start-timeout 30. Each fit is held at a named phase by the
worker's test hook (KMSERVE_MPI_TEST_HOLD names a file; a rank entering
the phase the file names waits, its liveness record in state "held"), so
the ranks are found from their own records (rank, pid, phase) and the
launcher as their session's leader, never by matching command lines:
kill -9 of rank 1 at the factorisation; the same with the launcher
stopped first (a launcher that never notices: the daemon's liveness rule
alone must end the job); SIGSTOP of rank 1 there (a silent rank: its
heartbeat stops); kill -9 of rank 1 during start-up, before MPI_Init has
returned; a start-up that never completes. Each must fail the job with
a message naming the rank (or the start-up deadline), leave no process
of the launcher's session and no staging file, keep the old version
served, and leave the worker free: the next distributed fit, held at its
factorisation to show that it runs, succeeds. A DELETE of a fit held at
its factorisation cancels it (not "before it ran") and ends every rank.
And kmserve-mpi under mpirun alone, held at the factorisation: when its
request file is removed (as the daemon does when it ends a job), every
rank ends itself and removes its liveness record.

Skipped (with a note) when kmserve-mpi was not built or mpirun is absent.
Usage, from the project root:
    /usr/bin/python3 tests/integration/mpi.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

ROOT = run.ROOT
TOL = 1e-9
TOL_KPCA = 1e-8  # eigenvectors: pdsyevr against dsyevr or block Lanczos


def mpirun(np):
    cmd = ["mpirun", "--oversubscribe", "-np", str(np), "--mca", "btl",
           "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return cmd


def worker_case(build, tmp, req, algo, np, tol, what="", extra=()):
    """kmserve-mpi on np ranks against the single-process fit of req."""
    check_bin = os.path.join(build, "tests", "mpi_check")
    out = os.path.join(tmp, f"{algo}{np}.kmm")
    files = ["--request", req, "--output", out, "--status", out + ".status",
             "--error", out + ".err", "--block", "64", *extra]
    p = subprocess.run(mpirun(np) + [os.path.join(build, "kmserve-mpi")] + files,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        err = open(out + ".err").read() if os.path.exists(out + ".err") else ""
        run.check(False, f"{algo} on {np} ranks{what} runs", err + p.stdout[-2000:])
        return p
    c = subprocess.run([check_bin, "compare", req, out],
                       capture_output=True, text=True, timeout=120)
    diffs = dict(line.split() for line in c.stdout.split("\n") if line)
    worst = max(float(v) for v in diffs.values()) if diffs else 1
    run.check(c.returncode == 0 and worst <= tol,
              f"{algo} on {np} ranks{what} equals the single-process fit "
              f"within {tol:g} ({', '.join(f'{k} {v}' for k, v in diffs.items())})",
              c.stdout + c.stderr)
    return p


def worker_cases(build):
    check_bin = os.path.join(build, "tests", "mpi_check")
    worker = os.path.join(build, "kmserve-mpi")
    tmp = tempfile.mkdtemp(prefix="kmserve-mpi-")
    try:
        for algo, n, d, tol in (("krr", 600, 3, TOL), ("gpr", 517, 4, TOL),
                                ("kpca", 600, 3, TOL_KPCA)):
            req = os.path.join(tmp, algo + ".req")
            subprocess.run([check_bin, "write", req, algo, str(n), str(d), "7"],
                           check=True)
            for np in (1, 2, 3, 4):
                worker_case(build, tmp, req, algo, np, tol)
        # 2 ranks of n 1200: A and Z take 11.5 MB a rank, PDSYEVR's optimum
        # (PDSYNTRD's copy: all of the matrix on one rank) 11.5 MB more,
        # its minimum about 1 MB: 20 MB holds only the minimum.
        big = os.path.join(tmp, "kpca1200.req")
        subprocess.run([check_bin, "write", big, "kpca", "1200", "3", "8"],
                       check=True)
        p = worker_case(build, tmp, big, "kpca", 2, TOL_KPCA,
                        " under a budget of 20 MB", ("--memory-budget-mb", "20"))
        run.check("pdsyevr with its minimum workspace" in p.stdout + p.stderr,
                  "... and it ran pdsyevr with its minimum workspace",
                  p.stdout[-1000:] + p.stderr[-1000:])
        out = os.path.join(tmp, "small.kmm")
        p = subprocess.run(mpirun(2) + [worker, "--request", req, "--output", out,
                                        "--status", out + ".s", "--error", out + ".e",
                                        "--memory-budget-mb", "1"],
                           capture_output=True, text=True, timeout=120)
        msg = open(out + ".e").read() if os.path.exists(out + ".e") else ""
        run.check(p.returncode != 0 and "per-rank budget" in msg and
                  not os.path.exists(out),
                  "a share above the per-rank budget fails with its message", msg)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def staging(models):
    return [f for f in os.listdir(models) if f.startswith(".kmserve-mpi-")]


def fit(d, name, X, y, params, **extra):
    body = {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.3},
            "params": params, "X": X, "y": y}
    body.update(extra)
    return d.req("POST", f"/v1/models/{name}/fit", body)


def predict(d, name, T):
    return (d.req("POST", f"/v1/models/{name}/predict", {"X": T}).json()
            or {}).get("predictions", [])


def kpca_fit(d, name, X, params, **extra):
    body = {"algorithm": "kpca", "kernel": {"type": "rbf", "gamma": 0.3},
            "params": {"n_components": 5, **params}, "X": X}
    body.update(extra)
    return d.req("POST", f"/v1/models/{name}/fit", body)


def project(d, name, rows, inverse=False):
    body = {"X": rows, "inverse": True} if inverse else {"X": rows}
    return (d.req("POST", f"/v1/models/{name}/project", body).json()
            or {}).get("projections", [])


def signed_rel(a, b):
    """Largest difference of b from a relative to a's largest entry, after
    flipping each of b's columns to a's sign."""
    if not a or len(a) != len(b):
        return 1.0
    cols = []
    for j in range(len(a[0])):
        u, v = [r[j] for r in a], [r[j] for r in b]
        if sum(x * y for x, y in zip(u, v)) < 0:
            v = [-y for y in v]
        cols.append((u, v))
    scale = max(abs(x) for u, _ in cols for x in u)
    return max(abs(x - y) for u, v in cols for x, y in zip(u, v)) / scale


def kpca_cases(d):
    X, _ = run.synthetic(1500, 3, 31)
    T, _ = run.synthetic(100, 3, 32)
    params = {"fit_inverse_transform": True, "alpha": 0.1}
    r = kpca_fit(d, "pca-local", X, params)
    r2 = kpca_fit(d, "pca-dist", X, params, distributed=True)
    a, b = project(d, "pca-local", T), project(d, "pca-dist", T)
    run.check(r.status == 201 and r2.status == 201 and len(a) == len(b) == len(T)
              and signed_rel(a, b) <= TOL_KPCA,
              f"over HTTP: the distributed kpca projects as the local one, up to "
              f"sign ({signed_rel(a, b):.1e} <= 1e-8)", (r2, a[:1], b[:1]))
    ia, ib = project(d, "pca-local", a, True), project(d, "pca-dist", b, True)
    run.check(len(ia) == len(ib) == len(T) and
              max(abs(x - y) for u, v in zip(ia, ib) for x, y in zip(u, v)) <=
              TOL_KPCA * max(abs(x) for u in ia for x in u),
              "... and its inverse map gives the same rows back (1e-8)")

    X2, _ = run.synthetic(2500, 3, 33)
    r = kpca_fit(d, "pca-big", X2, {"eigen_solver": "dense"})
    run.check(r.status == 413, "kpca of 2500 rows: 413 under the local budget", r)
    r = kpca_fit(d, "pca-big", X2, {"eigen_solver": "dense"}, distributed=True)
    meta = (r.json() or {}).get("model", {})
    run.check(r.status == 201 and meta.get("n_samples") == 2500,
              "the same kpca distributed: 201", r)
    r = kpca_fit(d, "pca-bad", X, {"eigen_solver": "randomized"},
                 distributed=True)
    run.check(r.status == 400 and "params.eigen_solver randomized" in r.body,
              "kpca's randomized solver distributed: 400 naming the field", r)


def daemon_cases(d):
    models = d.models
    X, y = run.synthetic(1500, 3, 21)
    T, _ = run.synthetic(100, 3, 22)
    r = fit(d, "local", X, y, {"alpha": 0.5})
    r2 = fit(d, "dist", X, y, {"alpha": 0.5}, distributed=True)
    a, b = predict(d, "local", T), predict(d, "dist", T)
    run.check(r.status == 201 and r2.status == 201 and len(a) == len(T) and
              len(b) == len(T) and run.max_rel(b, a, 1e-300) <= TOL,
              "over HTTP: the distributed fit predicts as the local one "
              "(1e-9)", (r2, a[:2], b[:2]))
    run.check(staging(models) == [], "no staging file after a fit",
              staging(models))
    # the distributed fit keeps core's drift reference as the local one
    # does (the same seeded rows): asked the same rows, the same answer
    dl = d.req("GET", "/v1/models/local/drift").json() or {}
    dd = d.req("GET", "/v1/models/dist/drift").json() or {}
    run.check(dd.get("sizes") == {"reference": 1000, "recent": len(T)} and
              dd.get("sizes") == dl.get("sizes") and
              dd.get("mmd2") is not None and dd.get("mmd2") == dl.get("mmd2") and
              dd.get("p_value") == dl.get("p_value"),
              "drift of the distributed fit: its reference is the local fit's "
              "(same sizes, MMD^2 and p-value)", (dl, dd))

    X2, y2 = run.synthetic(3500, 3, 23)
    r = fit(d, "big", X2, y2, {"alpha": 0.5})
    run.check(r.status == 413, "3500 rows exact: 413 under the local budget", r)
    r = fit(d, "big", X2, y2, {"alpha": 0.5}, distributed=True)
    meta = (r.json() or {}).get("model", {})
    run.check(r.status == 201 and meta.get("n_samples") == 3500,
              "the same fit distributed: 201", r)
    r = fit(d, "bigauto", X2, y2, {"alpha": 0.5, "solver": "auto"})
    meta = (r.json() or {}).get("model", {})
    run.check(r.status == 201 and meta.get("n_samples") == 3500,
              "solver auto above the local budget runs exact on the cluster",
              meta)
    r = fit(d, "bad", X, y, {"alpha": 0.5, "solver": "nystrom"},
            distributed=True)
    run.check(r.status == 400 and "nystrom" in r.body,
              "nystrom distributed: 400", r)
    kpca_cases(d)


# ---------------------------------------------------------------- faults

HOLD = os.path.join(tempfile.gettempdir(), f"kmserve-mpi-hold-{os.getpid()}")


def hold(phase):
    """Ranks entering phase wait there (the worker's test hook)."""
    with open(HOLD + ".tmp", "w") as f:
        f.write(phase + "\n")
    os.replace(HOLD + ".tmp", HOLD)


def release():
    if os.path.exists(HOLD):
        os.unlink(HOLD)


def records(models):
    """The liveness records of the distributed fit running in models
    (common/cmn_beat.h: "RANK PID BEAT PHASE STATE WHERE"), by rank."""
    out = {}
    for name in os.listdir(models):
        m = re.fullmatch(r"\.kmserve-mpi-.*\.rank(\d+)", name)
        if not m:
            continue
        try:
            with open(os.path.join(models, name)) as fh:
                f = fh.read().split()
        except FileNotFoundError:  # the job ended meanwhile
            continue
        if len(f) == 6 and f[0] == m.group(1):
            out[int(f[0])] = {"pid": int(f[1]), "phase": f[3], "state": f[4]}
    return out


def proc_stat(pid):
    """(state, ppid, session) of process pid, None when there is none."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    f = s[s.rindex(")") + 2:].split()
    return f[0], int(f[1]), int(f[3])


def session(sid):
    """The processes (zombies too) of session sid, but for zombies whose
    parent is PID 1: their launcher ended before reaping them (OpenMPI's
    mpirun may, when a rank is killed), so they are init's to reap, which
    on a loaded machine can take more than the 30 s waited here; they hold
    nothing but a PID."""
    out = []
    for p in os.listdir("/proc"):
        st = proc_stat(int(p)) if p.isdigit() else None
        if st and st[2] == sid and not (st[0] == "Z" and st[1] == 1):
            out.append((int(p), st[0]))
    return out


def poll(pred, timeout):
    """pred() once true, polled up to timeout s; its last value."""
    deadline = time.time() + timeout
    v = pred()
    while not v and time.time() < deadline:
        time.sleep(0.05)
        v = pred()
    return v


def job_of(r):
    return ((r.json() or {}).get("job") or {}).get("id")


def held_fit(d, name, phase, X, y):
    """An async distributed fit whose ranks are held at phase: (job, the
    records of its 2 ranks, the launcher's pid) once every rank is held
    there, the launcher the leader of the ranks' session and the
    daemon's child; records and launcher None if that never comes."""
    hold(phase)
    job = job_of(fit(d, name, X, y, {"alpha": 0.5}, distributed=True,
                     **{"async": True}))

    seen = {}

    def settled():  # every rank held at phase, or the job over
        r = records(d.models)
        if len(r) == 2 and all(v["phase"] == phase and v["state"] == "held"
                               for v in r.values()):
            seen["recs"] = r
            return True
        j = d.req("GET", f"/v1/jobs/{job}").json() or {}
        return j.get("status") not in ("queued", "running")
    poll(settled, 180)
    recs = seen.get("recs")
    if not recs:
        return job, None, None
    st = [proc_stat(v["pid"]) for v in recs.values()]
    sids = {x[2] for x in st if x}
    sid = sids.pop() if len(sids) == 1 and len(st) == 2 and all(st) else None
    leader = proc_stat(sid) if sid else None
    if not leader or leader[1] != d.proc.pid:
        return job, recs, None
    return job, recs, sid


def wait_end(d, job):
    """The job once it has ended (bounded generously), and the seconds."""
    t0 = time.time()
    j = run.wait_job(d, job, ("failed", "succeeded", "cancelled"),
                     timeout=180) or {}
    return j, time.time() - t0


def check_clean(d, what, sid):
    """No process of the launcher's session, no staging file."""
    left = poll(lambda: not session(sid), 30)
    run.check(left and staging(d.models) == [],
              f"{what}: no process of its session and no staging file left",
              (session(sid), staging(d.models)))


def worker_free(d, what, X, y):
    """The next distributed fit runs (held at its factorisation: it is
    running, not queued) and succeeds."""
    job, recs, sid = held_fit(d, "next", "factor", X, y)
    release()
    j, took = wait_end(d, job)
    run.check(recs is not None and j.get("status") == "succeeded",
              f"{what}: the worker is free, the next distributed fit runs and "
              f"succeeds ({took:.1f} s after its release)", (recs, j))
    if sid:
        check_clean(d, "... and after it", sid)


def fault(d, what, phase, act, expect, X, y, T, keep_held=False):
    """A fit of "f" held at phase, act(records, launcher) done to its ranks,
    released (unless keep_held): the job fails with a message holding each
    of expect(records), nothing of it is left, the old version serves and
    the worker is free."""
    before = predict(d, "f", T)
    job, recs, sid = held_fit(d, "f", phase, X, [v * 3 for v in y])
    run.check(recs is not None and sid is not None,
              f"{what}: its ranks are held at phase {phase}, found by their "
              f"records, their session led by the daemon's launcher",
              (recs, sid))
    if recs is None or sid is None:
        release()
        d.req("DELETE", f"/v1/jobs/{job}")
        wait_end(d, job)
        return
    act(recs, sid)
    if not keep_held:
        release()
    j, took = wait_end(d, job)
    release()
    msg = (j.get("error") or {}).get("message", "")
    want = expect(recs)
    run.check(j.get("status") == "failed" and all(w in msg for w in want),
              f"{what}: the job fails naming {want} ({took:.1f} s: {msg})", j)
    check_clean(d, what, sid)
    run.check(predict(d, "f", T) == before, f"{what}: the old version serves")
    worker_free(d, what, X, y)


def orphan_case(build):
    """kmserve-mpi straight under mpirun, with --heartbeat: its ranks held
    at the factorisation, the request file removed (as the daemon does
    when it ends a job): every rank ends itself, within a beat, and
    removes its record, though its main thread is held."""
    check_bin = os.path.join(build, "tests", "mpi_check")
    tmp = tempfile.mkdtemp(prefix="kmserve-mpi-orphan-")
    p = None
    try:
        req = os.path.join(tmp, "r.req")
        subprocess.run([check_bin, "write", req, "krr", "600", "3", "9"],
                       check=True)
        out = os.path.join(tmp, "r.kmm")
        hold("factor")
        log = open(os.path.join(tmp, "log"), "w")
        p = subprocess.Popen(
            mpirun(2) + [os.path.join(build, "kmserve-mpi"), "--request", req,
                         "--output", out, "--status", out + ".status",
                         "--error", out + ".err", "--block", "64",
                         "--heartbeat", os.path.join(tmp, ".kmserve-mpi-o.rank"),
                         "--heartbeat-interval", "0.2"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        def all_held():
            r = records(tmp)
            return len(r) == 2 and all(v["state"] == "held"
                                       for v in r.values())
        poll(lambda: all_held() or p.poll() is not None, 180)
        recs = records(tmp)
        os.unlink(req)
        try:
            rc = p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            rc = None
        run.check(len(recs) == 2 and rc not in (None, 0) and
                  records(tmp) == {} and poll(lambda: not session(p.pid), 30),
                  "a rank whose request file is gone ends itself and its "
                  f"record (mpirun exit status {rc})",
                  (recs, records(tmp), session(p.pid)))
    finally:
        release()
        if p and p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def fault_cases(d):
    X, y = run.synthetic(600, 3, 41)
    T, _ = run.synthetic(20, 3, 42)
    r = fit(d, "f", X, y, {"alpha": 0.5}, distributed=True)
    run.check(r.status == 201, "faults: a first version of the model", r)

    def kill(rank, sig=signal.SIGKILL):
        return lambda recs, sid: os.kill(recs[rank]["pid"], sig)

    def stop_launcher_then_kill(recs, sid):
        os.kill(sid, signal.SIGSTOP)
        os.kill(recs[1]["pid"], signal.SIGKILL)

    fault(d, "kill -9 of rank 1 at the factorisation", "factor", kill(1),
          lambda recs: ["rank 1"], X, y, T)
    fault(d, "kill -9 of rank 1 at the factorisation, its launcher stopped",
          "factor", stop_launcher_then_kill,
          lambda recs: [f"rank 1 (pid {recs[1]['pid']}) died in phase factor"],
          X, y, T)
    fault(d, "SIGSTOP of rank 1 at the factorisation", "factor",
          kill(1, signal.SIGSTOP),
          lambda recs: [f"rank 1 (pid {recs[1]['pid']}) sent no heartbeat",
                        "in phase factor", "--mpi-heartbeat-timeout"],
          X, y, T)
    fault(d, "kill -9 of rank 1 during start-up, before MPI_Init returned",
          "mpi-init", kill(1), lambda recs: ["rank 1"], X, y, T)
    fault(d, "a start-up that never completes", "mpi-init",
          lambda recs, sid: None,
          lambda recs: ["was still in MPI_Init", "--mpi-start-timeout 30"],
          X, y, T, keep_held=True)

    # DELETE of a fit held at its factorisation: cancelled while it ran
    job, recs, sid = held_fit(d, "f", "factor", X, y)
    d.req("DELETE", f"/v1/jobs/{job}")
    j, _ = wait_end(d, job)
    release()
    msg = (j.get("error") or {}).get("message", "")
    run.check(recs is not None and j.get("status") == "cancelled" and
              "before it ran" not in msg,
              "a DELETE at the factorisation cancels the running fit", j)
    if sid:
        check_clean(d, "the cancel", sid)
    worker_free(d, "the cancel", X, y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(ROOT, "build", "kmserve"))
    args = ap.parse_args()
    build = os.path.dirname(os.path.abspath(args.server))
    if not os.path.exists(os.path.join(build, "kmserve-mpi")) or \
            not shutil.which("mpirun"):
        print("mpi.py: skipped: kmserve-mpi not built or no mpirun "
              "(make deps-mpi installs OpenMPI and ScaLAPACK)")
        return 0
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # 4 ranks on 2 shared cores
    worker_cases(build)
    with run.temp_daemon(args.server, "kmserve-nompi-") as d:
        X, y = run.synthetic(50, 3, 1)
        r = fit(d, "m", X, y, {"alpha": 1.0}, distributed=True)
        run.check(r.status == 400 and "--mpi-launch" in r.body,
                  "distributed without --mpi-launch: 400", r)
    launch = " ".join(mpirun(2))
    os.environ["KMSERVE_MPI_TEST_HOLD"] = HOLD  # off while the file is absent
    release()
    orphan_case(build)
    try:
        with run.temp_daemon(args.server, "kmserve-mpi-faults-",
                             "--mpi-launch", launch, "--workers", "1",
                             "--mpi-heartbeat-timeout", "10",
                             "--mpi-start-timeout", "30",
                             "--mpi-memory-budget-mb", "200",
                             "--mpi-block", "64") as d:
            fault_cases(d)
    except Exception as e:  # a crash of the runner is a failure
        run.check(False, "fault cases", repr(e))
    finally:
        release()
    return run.with_daemon(args.server, "kmserve-mpi-", daemon_cases,
                           "--mpi-launch", launch, "--memory-budget-mb", "40",
                           "--mpi-memory-budget-mb", "200", "--mpi-block", "64")


if __name__ == "__main__":
    sys.exit(main())
