#!/usr/bin/python3
"""Serving benchmark: kmserve against the same models served by
scikit-learn behind Flask on gunicorn, and against a minimal libmicrohttpd
server that answers a fixed body (the transport ceiling).

Load is wrk on loopback, keep-alive, single-row predict requests, for
--duration seconds per run at each of --conns connections, against an rbf
KRR model (1000 training rows, 16 features) and an rbf SVC whose model
keeps about 1000 support vectors. Each point is --reps rounds; in a round
the three servers run back to back, so the ratio of a round compares the
same machine state; the table shows median throughputs (latencies from
the median run) and the median of the rounds' ratios. Then batch predict:
10 000 rows in one request to kmserve, with JSON bodies and with the Open
Inference Protocol's binary tensors (/v2 infer, raw doubles in and out),
against scikit-learn's predict in process, interleaved (medians of 5);
the binary answers are checked equal to the JSON ones to the bit. Then
one batch of 10^6 rows (krr, binary, 122 MiB body) against scikit-learn
predicting the same rows in 10 000-row chunks (a whole 10^6 x 1000
kernel matrix is 8 GB). All servers get the same thread settings as far
as they have them (4 HTTP threads; gunicorn: 2 workers x 4 threads, one
BLAS thread each) and share the machine's cores with wrk.

Targets (issue 28): single-row kmserve >= 85% of the minimal server's
requests/s at 8 and 64 connections, KRR and SVC; the binary batch of
10 000 rows <= 0.3x scikit-learn's in-process time. Each is printed as
"target ...: met" or "target ...: MISSED (why)".

Takes about 5 minutes with the defaults (--duration 4, --reps 3, three
connection counts); --parts load,batch,big runs a subset.
Run it alone: other benchmarks share the machine, so take the lock:
    flock /tmp/kmserve-bench.lock /usr/bin/python3 bench/bench_serving.py --bin build
Prints a Markdown table (for bench/RESULTS.md) and the ratios.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request



import blas_env  # noqa: E402  (first: before numpy)
import numpy as np  # noqa: E402

from daemon import free_port, stop, wait_ready  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
D = 16


def post(port, path, body, timeout=300):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def post_binary(port, path, X, outputs, timeout=600):
    """A /v2 infer with the binary tensor data extension: X's doubles in,
    outputs' values out (FP64 or INT64 by their datatype). Returns
    ({output: ndarray}, body bytes sent)."""
    A = np.ascontiguousarray(X, dtype="<f8")
    head = json.dumps({"inputs": [{"name": "X", "datatype": "FP64", "shape": list(A.shape),
                                   "parameters": {"binary_data_size": A.nbytes}}],
                       "outputs": [{"name": o, "parameters": {"binary_data": True}}
                                   for o in outputs]}).encode()
    body = head + A.tobytes()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, headers={
        "Content-Type": "application/octet-stream",
        "Inference-Header-Content-Length": str(len(head))})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        data = r.read()
        hl = int(r.headers["Inference-Header-Content-Length"])
    at, out = hl, {}
    for o in json.loads(data[:hl])["outputs"]:
        n = o["parameters"]["binary_data_size"]
        out[o["name"]] = np.frombuffer(data[at:at + n],
                                       {"FP64": "<f8", "INT64": "<i8"}[o["datatype"]])
        at += n
    return out, len(body)


def make_data(seed=7):
    rng = np.random.default_rng(seed)
    krr_X = rng.standard_normal((1000, D))
    krr_y = np.sin(krr_X[:, 0]) + 0.5 * krr_X[:, 1] ** 2 + 0.1 * rng.standard_normal(1000)
    # Two overlapping classes: about half of 2000 points end up support vectors.
    n = 2000
    svc_y = (rng.random(n) < 0.5).astype(np.float64)
    svc_X = rng.standard_normal((n, D)) + np.outer(svc_y, np.full(D, 0.5))
    T = rng.standard_normal((10000, D))
    return dict(krr_X=krr_X, krr_y=krr_y, krr_gamma=1.0 / D, krr_alpha=1.0,
                svc_X=svc_X, svc_y=svc_y, svc_gamma=1.0 / D, svc_C=1.0, T=T)


LUA = """wrk.method = "POST"
wrk.body = [==[%s]==]
wrk.headers["Content-Type"] = "application/json"
"""


def to_seconds(text):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m)", text)
    v, u = float(m.group(1)), m.group(2)
    return v * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[u]


def wrk(port, path, script, conns, duration):
    """Runs wrk; returns (requests/s, p50 s, p99 s, requests)."""
    threads = min(2, conns)
    cmd = ["wrk", f"-t{threads}", f"-c{conns}", f"-d{duration}s", "--latency",
           "--timeout", "10s", "-s", script, f"http://127.0.0.1:{port}{path}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60).stdout
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"wrk saw errors against {path}:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
    p50 = to_seconds(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
    p99 = to_seconds(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
    n = int(re.search(r"(\d+) requests in", out).group(1))
    return rps, p50, p99, n


def paired_points(targets, script, conns_list, duration, reps):
    """targets: [(key, port, path)]. For each connection count, `reps`
    rounds; in a round every target runs once, back to back, so all see
    the same state of this shared VM (whose throughput drifts by up to 2x
    over minutes). Returns {key: {conns: [wrk results, one per round]}}."""
    for _, port, path in targets:
        wrk(port, path, script, conns_list[-1], 1)  # warm-up
    out = {key: {c: [] for c in conns_list} for key, _, _ in targets}
    for c in conns_list:
        for _ in range(reps):
            for key, port, path in targets:
                out[key][c].append(wrk(port, path, script, c, duration))
    return out


def median(values):
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def median_run(runs):
    """The run with the median throughput (its latencies go in the table)."""
    return sorted(runs, key=lambda r: r[0])[len(runs) // 2]


CATEGORIES = [  # (label, test on (dso, kernel?, symbol)), first match wins
    ("kernel: TCP, syscalls, scheduling", lambda d, k, s: k),
    ("memset: libmicrohttpd clears the 64 KiB connection pool per request",
     lambda d, k, s: "memset" in s),
    ("model compute: kernel row (norms, exp), GEMM/GEMV",
     lambda d, k, s: "openblas" in d or s.startswith(("km_", "map_row", "row_sqnorms", "cross"))),
    ("JSON: cJSON, strtod, printf",
     lambda d, k, s: "cjson" in d.lower() or s.startswith("api_") or any(
         t in s for t in ("strtod", "printf", "scanf", "str_to_mpn", "localeconv", "_fp",
                          "mpn_", "parse_one_spec", "round_and_return", "hack_digit"))),
    ("malloc/free", lambda d, k, s: any(t in s for t in ("malloc", "free", "_int_", "calloc",
                                                            "realloc", "consolidate"))),
    ("libmicrohttpd", lambda d, k, s: "microhttpd" in d),
    ("kmserve outside the model (body reader, answer, routing, metrics, log)",
     lambda d, k, s: "kmserve" in d),
    ("other", lambda d, k, s: True),
]


def profile(pid, port, path, script, seconds=4):
    """perf record of the server under 8 connections; shares by category."""
    data = os.path.join(tempfile.gettempdir(), f"kmbench-perf-{pid}.data")
    rec = subprocess.Popen(["perf", "record", "-F", "2000", "-g", "-p", str(pid), "-o", data,
                            "--", "sleep", str(seconds + 1)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    wrk(port, path, script, 8, seconds)
    rec.wait()
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,symbol",
                          "-g", "none", "--percent-limit", "0"],
                         capture_output=True, text=True).stdout
    os.remove(data)
    shares, tops = {}, {}
    for line in out.splitlines():
        m = re.match(r"\s+([0-9.]+)%\s+(\S+)\s+\[(.)\]\s+(\S+)", line)
        if not m:
            continue
        pct, dso, kind, sym = float(m.group(1)), m.group(2), m.group(3), m.group(4)
        label = next(lab for lab, test in CATEGORIES if test(dso, kind == "k", sym))
        shares[label] = shares.get(label, 0) + pct
        tops.setdefault(label, []).append((pct, sym))
    return [(lab, shares[lab], sorted(tops[lab], reverse=True)[:3])
            for lab, _ in CATEGORIES if lab in shares]


def cpu_per_request(pid, port, path, script, seconds=4):
    """Server CPU time (user + system) per request under 8 connections."""
    def ticks():
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    t0 = ticks()
    _, _, _, n = wrk(port, path, script, 8, seconds)
    return (ticks() - t0) / os.sysconf("SC_CLK_TCK") / n


def fmt_lat(s):
    return f"{s * 1e6:.0f} µs" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build")
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--conns", default="1,8,64")
    ap.add_argument("--reps", type=int, default=3,
                    help="rounds per point (medians are reported)")
    ap.add_argument("--access-log", default="true", help="kmserve's --access-log")
    ap.add_argument("--profile", action="store_true",
                    help="also perf-profile kmserve and the minimal server under load")
    ap.add_argument("--parts", default="load,batch,big",
                    help="load (single-row wrk), batch (10 000 rows), big (10^6 rows)")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    conns = [int(c) for c in args.conns.split(",")]
    for tool in ("wrk", "gunicorn"):
        if not shutil.which(tool):
            sys.exit(f"bench_serving: {tool} is missing (make deps-bench installs it)")

    tmp = tempfile.mkdtemp(prefix="kmbench-serving-")
    data = make_data()
    npz = os.path.join(tmp, "data.npz")
    np.savez(npz, **data)
    row = [round(float(v), 6) for v in data["T"][0]]
    script = os.path.join(tmp, "post.lua")
    with open(script, "w") as f:
        f.write(LUA % json.dumps({"X": [row]}))

    procs = []
    try:
        # kmserve, with the models fitted over its API.
        kport = free_port()
        kms = subprocess.Popen([os.path.join(args.bin, "kmserve"), "--listen", f"127.0.0.1:{kport}",
                                "--models-dir", os.path.join(tmp, "models"),
                                "--access-log", args.access_log, "--max-body-mb", "256"],
                               stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "kmserve.log"), "w"))
        procs.append(kms)
        wait_ready(kport, kms)
        st, r = post(kport, "/v1/models/krr/fit", {
            "algorithm": "krr", "kernel": {"type": "rbf", "gamma": data["krr_gamma"]},
            "params": {"alpha": data["krr_alpha"]}, "X": data["krr_X"].tolist(),
            "y": data["krr_y"].tolist()})
        assert st == 201, r
        st, r = post(kport, "/v1/models/svc/fit", {
            "algorithm": "svc", "kernel": {"type": "rbf", "gamma": data["svc_gamma"]},
            "params": {"C": data["svc_C"]}, "X": data["svc_X"].tolist(),
            "y": data["svc_y"].tolist()})
        assert st == 201, r
        n_sv = sum(r["model"]["training"]["n_support"])

        # scikit-learn behind Flask on gunicorn, same models.
        pport = free_port()
        # One BLAS thread per worker, as multi-worker Python servers are run
        # (else 2 workers x 4 threads each start OpenBLAS's threads on 2 cores).
        env = dict(os.environ, KM_BENCH_DATA=npz, OPENBLAS_NUM_THREADS="1",
                   OMP_NUM_THREADS="1")
        py = subprocess.Popen(["gunicorn", "--preload", "-w", "2", "-k", "gthread", "--threads", "4",
                               "-b", f"127.0.0.1:{pport}", "--chdir", HERE, "--log-level", "warning",
                               "skl_server:app"], env=env, stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(tmp, "gunicorn.log"), "w"))
        procs.append(py)
        wait_ready(pport, py)

        mport = free_port()
        mini = subprocess.Popen([os.path.join(args.bin, "bench_minimal_server"), "--port", str(mport),
                                 "--threads", "4"], stdout=subprocess.DEVNULL)
        procs.append(mini)
        time.sleep(0.3)

        # Same answers from both model servers (else the comparison is void).
        T = data["T"][:200].tolist()
        for name, tol in (("krr", 1e-8), ("svc", 0)):
            a = post(kport, f"/v1/models/{name}/predict", {"X": T})[1]["predictions"]
            b = post(pport, f"/v1/models/{name}/predict", {"X": T})[1]["predictions"]
            diff = max(abs(x - y) for x, y in zip(a, b))
            assert diff <= tol, f"{name}: kmserve and scikit-learn disagree by {diff}"
        from sklearn.svm import SVC
        skl_sv = int(SVC(kernel="rbf", gamma=data["svc_gamma"], C=data["svc_C"])
                     .fit(data["svc_X"], data["svc_y"]).n_support_.sum())
        print(f"svc: {n_sv} support vectors (scikit-learn: {skl_sv}); krr: 1000 x {D}; "
              f"predictions agree", flush=True)

        results = {}
        for name in (("krr", "svc") if "load" in parts else ()):
            path = f"/v1/models/{name}/predict"
            print(f"load: {name} (kmserve, python, minimal; {args.reps} rounds) ...", flush=True)
            results[name] = paired_points([("ours", kport, path), ("py", pport, path),
                                           ("mini", mport, path)],
                                          script, conns, args.duration, args.reps)

        # Batch: 10 000 rows in one request against scikit-learn in process.
        from sklearn.kernel_ridge import KernelRidge
        skl = {"krr": KernelRidge(kernel="rbf", gamma=data["krr_gamma"], alpha=data["krr_alpha"])
               .fit(data["krr_X"], data["krr_y"]),
               "svc": SVC(kernel="rbf", gamma=data["svc_gamma"], C=data["svc_C"])
               .fit(data["svc_X"], data["svc_y"])}
        body = json.dumps({"X": data["T"].tolist()}).encode()
        batch, big = {}, None
        for name in (("krr", "svc") if "batch" in parts else ()):
            ours, binary, theirs = [], [], []
            for _ in range(5):  # interleaved: the three see the same machine state
                t0 = time.perf_counter()
                st, r = post(kport, f"/v1/models/{name}/predict", body)
                ours.append(time.perf_counter() - t0)
                assert st == 200 and len(r["predictions"]) == 10000
                t0 = time.perf_counter()
                out, _ = post_binary(kport, f"/v2/models/{name}/infer", data["T"],
                                     ["predictions" if name == "krr" else "labels"])
                binary.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                skl[name].predict(data["T"])
                theirs.append(time.perf_counter() - t0)
            got = next(iter(out.values())).astype(np.float64)
            assert np.array_equal(got, np.asarray(r["predictions"], dtype=np.float64)), \
                f"{name}: binary and JSON answers differ"
            batch[name] = (median(ours), median(binary), median(theirs))
        if "big" in parts:  # 10^6 rows, krr, binary in and out
            Tb = np.random.default_rng(11).standard_normal((1000000, D))
            t0 = time.perf_counter()
            out, size = post_binary(kport, "/v2/models/krr/infer", Tb, ["predictions"])
            t_ours = time.perf_counter() - t0
            t0 = time.perf_counter()
            ref = np.concatenate([skl["krr"].predict(Tb[i:i + 10000])
                                  for i in range(0, len(Tb), 10000)])
            t_skl = time.perf_counter() - t0
            diff = float(np.max(np.abs(out["predictions"] - ref) / np.maximum(1, np.abs(ref))))
            assert diff <= 1e-8, f"10^6 rows: kmserve and scikit-learn disagree by {diff}"
            big = (size, t_ours, t_skl, diff)

        prof = None
        if args.profile and shutil.which("perf"):
            path = "/v1/models/krr/predict"
            prof = {"cpu_ours": cpu_per_request(kms.pid, kport, path, script),
                    "cpu_mini": cpu_per_request(mini.pid, mport, path, script),
                    "ours": profile(kms.pid, kport, path, script),
                    "mini": profile(mini.pid, mport, path, script)}
    finally:
        for p in procs:
            stop(p)
        shutil.rmtree(tmp, ignore_errors=True)

    # ------------------------------------------------------------ report
    print(f"OPENBLAS_CORETYPE={blas_env.CORE}")
    if results:
        report_load(results, conns, n_sv)
    if batch:
        report_batch(batch)
    if big:
        size, t_ours, t_skl, diff = big
        print()
        print(f"10^6-row batch (krr, binary in and out): body {size / 2**20:.1f} MiB, "
              f"kmserve {t_ours:.2f} s end to end; scikit-learn in process, 10 000-row "
              f"chunks: {t_skl:.2f} s ({t_ours / t_skl:.2f}x; largest relative "
              f"difference {diff:.1e})")
    if prof:
        print()
        print(f"server CPU per single-row KRR request at 8 connections: kmserve "
              f"{prof['cpu_ours'] * 1e6:.1f} µs, minimal server {prof['cpu_mini'] * 1e6:.1f} µs")
        for who in ("ours", "mini"):
            print(f"perf profile of {'kmserve' if who == 'ours' else 'the minimal server'}:")
            for label, pct, top in prof[who]:
                print(f"  {pct:5.1f}%  {label}  ({', '.join(f'{s} {p:.1f}%' for p, s in top)})")


def report_load(results, conns, n_sv):
    print()
    print("| model | conns | kmserve req/s | p50 | p99 | Flask+gunicorn req/s | p50 | p99 "
          "| minimal req/s | p50 | p99 | ours/python | ours/minimal | minimal/python |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
          "| ---: | ---: |")
    worst_py, worst_min, one, issue28 = 1e9, 1e9, [], []
    for name in ("krr", "svc"):
        for c in conns:
            runs = results[name]
            o, p, m = (median_run(runs[k][c]) for k in ("ours", "py", "mini"))
            # the ratios of each round's back-to-back runs, then the median
            rp = median([a[0] / b[0] for a, b in zip(runs["ours"][c], runs["py"][c])])
            rm = median([a[0] / b[0] for a, b in zip(runs["ours"][c], runs["mini"][c])])
            mp = median([a[0] / b[0] for a, b in zip(runs["mini"][c], runs["py"][c])])
            if c > 1:
                worst_py = min(worst_py, rp)
            else:  # one connection: bound by the round trip (see the last column)
                one.append((rp, mp))
            if c in (8, 64):
                issue28.append((name, c, rm))
            worst_min = min(worst_min, rm)
            label = "KRR rbf (1000×16)" if name == "krr" else f"SVC rbf ({n_sv} SV)"
            print(f"| {label} | {c} | {o[0]:,.0f} | {fmt_lat(o[1])} | {fmt_lat(o[2])} "
                  f"| {p[0]:,.0f} | {fmt_lat(p[1])} | {fmt_lat(p[2])} "
                  f"| {m[0]:,.0f} | {fmt_lat(m[1])} | {fmt_lat(m[2])} | {rp:.1f}× | {rm:.0%} "
                  f"| {mp:.1f}× |")
    print()
    print(f"targets: ours/python >= 10x under concurrency: "
          f"{'met' if worst_py >= 10 else 'MISSED'} (worst {worst_py:.1f}x); "
          f"ours/minimal >= 60%: {'met' if worst_min >= 0.6 else 'MISSED'} "
          f"(worst {worst_min:.0%})")
    for name, c, rm in issue28:
        print(f"target single-row {name} at {c} connections >= 85% of the minimal server: "
              + ("met" if rm >= 0.85 else "MISSED (kmserve's own work per request: routing, "
                 "JSON body and answer, the model; see --profile)") + f" ({rm:.0%})")
    if one:
        print("one connection: ours/python " + ", ".join(f"{a:.1f}x" for a, _ in one) +
              "; the minimal server/python " + ", ".join(f"{b:.1f}x" for _, b in one) +
              " (a round trip at a time: the transport's latency, not the server's "
              "throughput, sets these)")


def report_batch(batch):
    print()
    print("| batch predict, 10 000 rows | kmserve, JSON in and out | kmserve, binary in and out "
          "| scikit-learn in process | JSON / scikit-learn | binary / scikit-learn |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in ("krr", "svc"):
        o, b, s = batch[name]
        print(f"| {name} | {o * 1e3:.1f} ms | {b * 1e3:.1f} ms | {s * 1e3:.1f} ms "
              f"| {o / s:.2f}× | {b / s:.2f}× |")
    for name in ("krr", "svc"):
        o, b, s = batch[name]
        print(f"target batch of 10 000 rows, {name}, binary, <= 0.3x scikit-learn's time: "
              + ("met" if b / s <= 0.3 else "MISSED (the model's own compute over 10 000 "
                 "rows bounds it; see RESULTS.md)") + f" ({b / s:.2f}x)")


if __name__ == "__main__":
    main()
