#!/usr/bin/python3
"""Distributed exact fits: kmserve-mpi under mpirun, and through the daemon.

Worker: mpi_check writes a staging file (krr n 600 d 3; gpr n 517 d 4,
standardize + center_y), mpirun --oversubscribe -np 1, 2, 3 and 4 (grids
1x1, 1x2, 1x3, 2x2) with block 64 runs kmserve-mpi on it, and mpi_check
compares the model with core's single-process fit of the same request
(itself checked against scikit-learn in tests/core): krr coefficients and
predictions, gpr predictions and variances, within 1e-9 relative. A
per-rank budget too small for the share fails with its message.

Daemon (--mpi-launch "mpirun --oversubscribe -np 2 ..."): a distributed
krr fit predicts what the local fit predicts (1e-9); under
--memory-budget-mb 40 a 2500-row exact fit is 413 locally and 201 with
"distributed": true; solver auto goes distributed (2500 samples, not
nystrom's centres); nystrom distributed is 400; without --mpi-launch
"distributed" is 400. Faults: kill -9 of one rank mid-fit fails the job
within seconds with no rank or staging file left and the old version
served; DELETE during the factorisation ends every rank.

Skipped (with a note) when kmserve-mpi was not built or mpirun is absent.
Usage, from the project root:
    /usr/bin/python3 tests/integration/mpi.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
import tally  # noqa: E402

ROOT = run.ROOT
TOL = 1e-9


def mpirun(np):
    cmd = ["mpirun", "--oversubscribe", "-np", str(np), "--mca", "btl",
           "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return cmd


def worker_cases(build):
    check_bin = os.path.join(build, "tests", "mpi_check")
    worker = os.path.join(build, "kmserve-mpi")
    tmp = tempfile.mkdtemp(prefix="kmserve-mpi-")
    try:
        for algo, n, d in (("krr", 600, 3), ("gpr", 517, 4)):
            req = os.path.join(tmp, algo + ".req")
            subprocess.run([check_bin, "write", req, algo, str(n), str(d), "7"],
                           check=True)
            for np in (1, 2, 3, 4):
                out = os.path.join(tmp, f"{algo}{np}.kmm")
                files = ["--request", req, "--output", out,
                         "--status", out + ".status", "--error", out + ".err",
                         "--block", "64"]
                p = subprocess.run(mpirun(np) + [worker] + files,
                                   capture_output=True, text=True, timeout=120)
                if p.returncode != 0:
                    run.check(False, f"{algo} on {np} ranks runs", p.stdout[-2000:])
                    continue
                c = subprocess.run([check_bin, "compare", req, out],
                                   capture_output=True, text=True, timeout=120)
                diffs = dict(line.split() for line in c.stdout.split("\n") if line)
                worst = max(float(v) for v in diffs.values()) if diffs else 1
                run.check(c.returncode == 0 and worst <= TOL,
                          f"{algo} on {np} ranks equals the single-process fit "
                          f"({', '.join(f'{k} {v}' for k, v in diffs.items())})",
                          c.stdout + c.stderr)
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


def ranks_of(tag):
    """pids of kmserve-mpi processes whose command line names tag."""
    p = subprocess.run(["pgrep", "-f", f"kmserve-mpi --request {tag}"],
                       capture_output=True, text=True)
    return [int(x) for x in p.stdout.split()]


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


def wait_gone(tag, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline and ranks_of(tag):
        time.sleep(0.1)
    return not ranks_of(tag)


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

    X2, y2 = run.synthetic(2500, 3, 23)
    r = fit(d, "big", X2, y2, {"alpha": 0.5})
    run.check(r.status == 413, "2500 rows exact: 413 under the local budget", r)
    r = fit(d, "big", X2, y2, {"alpha": 0.5}, distributed=True)
    meta = (r.json() or {}).get("model", {})
    run.check(r.status == 201 and meta.get("n_samples") == 2500,
              "the same fit distributed: 201", r)
    r = fit(d, "bigauto", X2, y2, {"alpha": 0.5, "solver": "auto"})
    meta = (r.json() or {}).get("model", {})
    run.check(r.status == 201 and meta.get("n_samples") == 2500,
              "solver auto above the local budget runs exact on the cluster",
              meta)
    r = fit(d, "bad", X, y, {"alpha": 0.5, "solver": "nystrom"},
            distributed=True)
    run.check(r.status == 400 and "nystrom" in r.body,
              "nystrom distributed: 400", r)

    # kill -9 of one rank mid-fit: the job fails, the old version serves
    before = predict(d, "big", T)
    r = fit(d, "big", X2, [v * 2 for v in y2], {"alpha": 0.5},
            distributed=True, **{"async": True})
    job = (r.json() or {}).get("job", {}).get("id")
    tag = models
    deadline = time.time() + 30
    while time.time() < deadline and len(ranks_of(tag)) < 2:
        time.sleep(0.05)
    pids = ranks_of(tag)
    if pids:
        os.kill(pids[-1], signal.SIGKILL)
    t0 = time.time()
    j = run.wait_job(d, job, ("failed", "succeeded"), timeout=30)
    took = time.time() - t0
    run.check(len(pids) >= 2 and j and j.get("status") == "failed" and took < 15,
              f"kill -9 of a rank fails the job ({took:.1f} s)", j)
    run.check(wait_gone(tag, 10) and staging(models) == [],
              "no rank and no staging file left", (ranks_of(tag), staging(models)))
    run.check(predict(d, "big", T) == before, "the old version still serves")

    # cancel during the factorisation
    X3, y3 = run.synthetic(4500, 3, 24)
    r = fit(d, "cancel", X3, y3, {"alpha": 0.5}, distributed=True,
            **{"async": True})
    job = (r.json() or {}).get("job", {}).get("id")
    deadline = time.time() + 60
    j = {}
    while time.time() < deadline:
        j = d.req("GET", f"/v1/jobs/{job}").json() or {}
        if j.get("progress", 0) >= 0.1 or j.get("status") != "running" and \
                j.get("status") != "queued":
            break
        time.sleep(0.02)
    phase = j.get("progress")
    d.req("DELETE", f"/v1/jobs/{job}")
    j = run.wait_job(d, job, ("cancelled", "failed", "succeeded"), timeout=20)
    run.check(j and j.get("status") == "cancelled" and wait_gone(tag, 10),
              f"cancel at progress {phase} ends every rank", j)
    run.check(staging(models) == [], "no staging file after the cancel",
              staging(models))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(ROOT, "build", "kmserve"))
    args = ap.parse_args()
    build = os.path.dirname(os.path.abspath(args.server))
    if not os.path.exists(os.path.join(build, "kmserve-mpi")) or \
            not shutil.which("mpirun"):
        print("mpi.py: skipped: kmserve-mpi not built or no mpirun "
              "(make deps installs OpenMPI and ScaLAPACK)")
        return 0
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # 4 ranks on 2 shared cores
    worker_cases(build)
    with run.temp_daemon(args.server, "kmserve-nompi-") as d:
        X, y = run.synthetic(50, 3, 1)
        r = fit(d, "m", X, y, {"alpha": 1.0}, distributed=True)
        run.check(r.status == 400 and "--mpi-launch" in r.body,
                  "distributed without --mpi-launch: 400", r)
    launch = " ".join(mpirun(2))
    return run.with_daemon(args.server, "kmserve-mpi-", daemon_cases,
                           "--mpi-launch", launch, "--memory-budget-mb", "40",
                           "--mpi-memory-budget-mb", "200", "--mpi-block", "64")


if __name__ == "__main__":
    sys.exit(main())
