#!/usr/bin/python3
"""Import admission: the estimate bounds what an import really holds.

POST /v1/models/{name}/import is admitted against --memory-budget-mb with
an estimate made before the model is built (api_import_bytes: the body,
then the read's peak or the model with the store's file of it). For
every form a model can be imported in (LIBSVM c_svc, in label order and
not, epsilon_svr; kmm files of krr exact, nystrom and rff, svc exact,
screened and nystrom, svr, gpr exact and nystrom with and without its
factors, kpca exact with its inverse map and nystrom, kkmeans, klr binary
and multi-class), a file large enough to dominate the daemon's memory is
imported:
  - under a budget of 1 MiB: refused with 413, whose message gives the
    estimate;
  - by a fresh daemon whose budget is just above that estimate: 201, and
    the daemon's peak resident memory (VmHWM, reset through clear_refs
    once it is idle) grows by no more than the estimate (and NOISE, what
    the request itself touches beside the import's data).
The kmm files are the files of small fits by a daemon, with n_samples and
n_features raised and the payload rewritten to those sizes (valid: the
loader's checks all pass). And the two imports issue 24 found
underestimated, as explicit cases: a LIBSVM file of 4 support vectors
whose largest index is 2^22 (three dense copies) under a budget of 300
MiB, and a 24 MiB gpr file (its triangle made a full matrix) under 60:
each is refused, or admitted and held within the budget. A pinned read
of a kept version loads its file for the request under the same kind of
estimate: kept kkmeans (an n x k matrix from a small file) and gpr files
are read the same two ways.

Under a sanitizer (its runtime in the daemon's maps) resident memory is
not the program's: the imports run, the resident checks are skipped.

Standard library only. Usage (from the project root):
    /usr/bin/python3 tests/integration/hostile_admission.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import array
import math
import os
import re
import shutil
import struct
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (check, Daemon)
from hostile_models import layout, skip_kernel  # noqa: E402  (the format)

check = run.check
MIB = 1048576.0
KMM = [("Content-Type", "application/octet-stream")]
TEXT = [("Content-Type", "text/plain")]
ESTIMATE_RE = re.compile(r"needs an estimated ([0-9.]+) MiB")


def thp_always():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return "[always]" in f.read()
    except OSError:
        return False


# What a daemon's resident memory may grow by beside an import's data:
# the request's connection, its reply, the log line, a thread's stack
# and malloc arena touched for the first time (about 0.3 MiB); with
# transparent huge pages always on, up to 2 MiB more for each large
# array whose last huge page is partly used.
NOISE = (16 if thp_always() else 2) * MIB
# Sizes of the inflated files: the largest array about 32 MiB.
N, D = 4096, 1024

# ------------------------------------------------------------ the format


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


def f64(v):
    return struct.pack("<d", v)


def f64s(count, values=None):
    """An f64s record: its count, then count doubles (zeros unless given
    as bytes)."""
    return u64(count) + (values if values is not None else bytes(8 * count))


def i32s(values):
    return u64(len(values)) + array.array("i", values).tobytes()


def doubles(vals):
    return array.array("d", vals).tobytes()


def tri(n, diag=1.0):
    """The lower triangle of an n x n factor by rows (write_tri), its
    diagonal diag: a valid Cholesky factor."""
    b = bytearray(8 * (n * (n + 1) // 2))
    at = 0
    for i in range(n):
        at += i
        struct.pack_into("<d", b, 8 * at, diag)
        at += 1
    return u64(n * (n + 1) // 2) + bytes(b)


def with_crc(b, *more):
    """b and more joined (one copy of the large arrays), then their CRC."""
    crc = zlib.crc32(b)
    for part in more:
        crc = zlib.crc32(part, crc)
    return b"".join((b,) + more + (struct.pack("<I", crc & 0xFFFFFFFF),))


def inflate(small, n, d, *payload):
    """The small file with n_samples n, n_features d and its payload
    replaced by the parts given (the records before it kept), checksum
    recomputed."""
    o = layout(small)
    head = bytearray(small[:o["payload"]])
    struct.pack_into("<QQ", head, 12, d, n)
    return with_crc(bytes(head), *payload)


def small_payload(small):
    o = layout(small)
    return small[o["payload"]:-4]


def fmt(b):
    return struct.unpack_from("<I", b, 4)[0]


def n_outputs(b):
    return struct.unpack_from("<Q", b, 28)[0]


# ------------------------------------------------------------ payloads


def krr_dual(small, n, d):
    no = n_outputs(small)
    form = u32(0) if fmt(small) >= 3 else b""
    return inflate(small, n, d, form, f64s(n * d), f64s(n * no))


def krr_rff(small, n, d):
    no = n_outputs(small)
    phases = doubles([1.0] * n)
    return inflate(small, n, d, u32(1), f64s(n * d), f64s(n, phases),
                   f64s(n * no))


def svc_dual(small, n, d):
    """Every row a support vector, k classes as the small file's, its
    flags (probability, vote order) kept."""
    p = small_payload(small)
    at = 4 if fmt(small) >= 4 else 0
    k = struct.unpack_from("<Q", p, at)[0]
    q = at + 16
    q += 8 + 4 * k
    for _ in range(4):  # sv_index (i32s), sv, coef, rho (f64s)
        q += 8 + (4 if _ == 0 else 8) * struct.unpack_from("<Q", p, q)[0]
    tail = p[q:]  # flags and what they bring, as the small file has them
    support = [n // k] * k if k else []
    if k:
        support[0] += n - sum(support)
    ncoef = k - 1 if k else 1
    pairs = k * (k - 1) // 2 if k else 1
    rho = f64s(pairs)
    return inflate(small, n, d, p[:at] + u64(k) + u64(n) + i32s(support) +
                   i32s(list(range(n))), f64s(n * d), f64s(n * ncoef),
                   rho + tail)


def svc_nystrom(small, n, d):
    p = small_payload(small)
    k = struct.unpack_from("<Q", p, 4)[0]
    pairs = k * (k - 1) // 2
    return inflate(small, n, d, u32(1) + u64(k) + u64(n), f64s(n * d),
                   f64s(n * pairs), f64s(pairs))


def gpr(small, n, d, factors):
    """The exact form (factors 1) in the small file's format, or the
    nystrom form with both factors (2) or none (0)."""
    nums = f64(1.0) + f64(0.1) + f64(0.0) + f64(1.0)
    if factors == 1:
        form = u32(0) if fmt(small) >= 6 else b""
        return inflate(small, n, d, form + nums, f64s(n * d), f64s(n),
                       tri(n))
    rest = (u32(1), tri(n), tri(n)) if factors == 2 else (u32(0),)
    return inflate(small, n, d, u32(1) + nums, f64s(n * d), f64s(n), *rest)


def kpca(small, n, d):
    """eigval, proj, col_mean, grand_mean, X, and the small file's inverse
    map flag (with its kernel record) if it has one."""
    p = small_payload(small)
    k = n_outputs(small)
    nys = fmt(small) >= 5 and struct.unpack_from("<I", p, 0)[0] == 1
    at = 4 if fmt(small) >= 5 else 0
    q = at
    for _ in range(3):
        q += 8 + 8 * struct.unpack_from("<Q", p, q)[0]
    q += 8
    q += 8 + 8 * struct.unpack_from("<Q", p, q)[0]
    inverse = struct.unpack_from("<I", p, q)[0]
    parts = (p[:at] + f64s(k, doubles([float(k - j) for j in range(k)])),
             f64s(n * k), f64s(n) + f64(0.0), f64s(n * d), u32(inverse))
    if inverse:
        kernel_end = skip_kernel(p, q + 4)
        parts += (p[q + 4:kernel_end], f64s(n * k), f64s(n * d))
    assert not (nys and inverse)
    return inflate(small, n, d, *parts)


def kkmeans(small, n, d, k):
    members = [i % k for i in range(n)]
    return inflate(small, n, d, u64(k) + i32s(members) + f64s(k),
                   f64s(n * d))


def klr(small, n, d):
    p = small_payload(small)
    kind = struct.unpack_from("<I", p, 0)[0]
    q = n_outputs(small)
    return inflate(small, n, d, u32(kind), f64s(n * d), f64s(n * q),
                   f64s(q))


# ------------------------------------------------------------ LIBSVM


def libsvm(kind, n_sv, max_index, every, labels=(1, -1)):
    """A LIBSVM model file: n_sv support vectors, each with a feature every
    `every` indices up to max_index (so a dense copy of the rows touches
    each of its pages), c_svc with the given label order, or
    epsilon_svr."""
    feats = " ".join(f"{j}:0.5" for j in range(every, max_index + 1, every))
    if max_index % every:
        feats += f" {max_index}:0.5"
    lines = ["svm_type c_svc" if kind == "svc" else "svm_type epsilon_svr",
             "kernel_type rbf", "gamma 0.5"]
    if kind == "svc":
        k = len(labels)
        pairs = k * (k - 1) // 2
        support = [n_sv // k] * k
        support[0] += n_sv - sum(support)
        lines += [f"nr_class {k}", f"total_sv {n_sv}",
                  "rho " + " ".join(["0.1"] * pairs),
                  "label " + " ".join(str(v) for v in labels),
                  "nr_sv " + " ".join(str(v) for v in support), "SV"]
        coefs = " ".join(["0.5"] * (k - 1))
    else:
        lines += ["nr_class 2", f"total_sv {n_sv}", "rho 0.1", "SV"]
        coefs = "0.5"
    lines += [f"{coefs} {feats}" for _ in range(n_sv)]
    return ("\n".join(lines) + "\n").encode()


# ------------------------------------------------------------ the small fits

def rows(n, d, seed):
    import random
    rng = random.Random(seed)
    return [[rng.uniform(-1, 1) for _ in range(d)] for _ in range(n)]


def fits():
    X = rows(40, 3, 1)
    y = [x[0] + 0.5 * x[1] for x in X]
    y2 = [0 if x[0] < -0.3 else 1 if x[0] < 0.3 else 2 for x in X]
    yb = [0 if x[0] < 0 else 1 for x in X]
    rbf = {"type": "rbf", "gamma": 0.5}

    def fit(algo, target, **params):
        body = {"algorithm": algo, "kernel": rbf, "X": X, "params": params}
        if target is not None:
            body["y"] = target
        return body
    return {
        "krr": fit("krr", y),
        "krr-nystrom": fit("krr", y, solver="nystrom", n_centres=8),
        "krr-rff": fit("krr", y, solver="rff", n_components=16),
        "svc": fit("svc", y2, probability=True),
        "svc-screened": fit("svc", yb, solver="screened"),
        "svc-nystrom": fit("svc", y2, solver="nystrom", n_centres=8),
        "svr": fit("svr", y),
        "gpr": fit("gpr", y),
        "gpr-nystrom": fit("gpr", y, solver="nystrom", n_centres=8,
                           variance=True),
        "gpr-nystrom-mean": fit("gpr", y, solver="nystrom", n_centres=8),
        "kpca": fit("kpca", None, n_components=4, fit_inverse_transform=True),
        "kpca-nystrom": fit("kpca", None, n_components=4,
                            eigen_solver="nystrom", n_centres=10),
        "kkmeans": fit("kkmeans", None, n_clusters=3),
        "klr": fit("klr", yb),
        "klr-multi": fit("klr", y2),
    }


def without_reference(b):
    """The file b without its drift reference (format version 8): the
    version its payload's layout is, the records and payload unchanged,
    so that a payload can be inflated to other sizes here."""
    if fmt(b) < 8:
        return b
    o = layout(b)
    pf = struct.unpack_from("<I", b, o["reference"])[0]
    head = bytearray(b[:o["reference"]])
    struct.pack_into("<I", head, 4, pf)
    return with_crc(bytes(head), b[o["payload"]:-4])


def make_small(binary, tmp):
    models = os.path.join(tmp, "make", "models")
    os.makedirs(models)
    d = run.Daemon(binary, models)
    files = {}
    try:
        d.start()
        for name, body in fits().items():
            r = d.req("POST", f"/v1/models/{name}/fit", body)
            if check(r.status == 201, f"set-up: fit {name}", r):
                with open(os.path.join(models, name + ".kmm"), "rb") as f:
                    files[name] = without_reference(f.read())
    finally:
        d.stop()
    return files


def cases(small):
    """(what, make, headers) of every import form: make() builds the
    inflated body (one at a time: each is tens of MiB)."""
    makers = {
        "krr": lambda s: krr_dual(s, N, D),
        "krr-nystrom": lambda s: krr_dual(s, N, D),
        "krr-rff": lambda s: krr_rff(s, N, D),
        "svc": lambda s: svc_dual(s, N, D),
        "svc-screened": lambda s: svc_dual(s, N, D),
        "svc-nystrom": lambda s: svc_nystrom(s, N, D),
        "svr": lambda s: svc_dual(s, N, D),
        "gpr": lambda s: gpr(s, 2048, 256, 1),
        "gpr-nystrom": lambda s: gpr(s, 2048, 256, 2),
        "gpr-nystrom-mean": lambda s: gpr(s, N, D, 0),
        "kpca": lambda s: kpca(s, N, D // 2),
        "kpca-nystrom": lambda s: kpca(s, N, D),
        "kkmeans": lambda s: kkmeans(s, N, D // 2, 1024),
        "klr": lambda s: klr(s, N, D),
        "klr-multi": lambda s: klr(s, N, D),
    }
    out = [("kmm " + name, (lambda m=make, f=small[name]: m(f)), KMM)
           for name, make in makers.items() if name in small]
    # LIBSVM: 8 rows of 2^20 features (64 MiB dense), a value every 512
    # (one per page of their dense copy)
    out += [
        ("libsvm c_svc, labels not in order",
         lambda: libsvm("svc", 8, 1 << 20, 512, (1, -1)), TEXT),
        ("libsvm c_svc, 3 labels in order",
         lambda: libsvm("svc", 8, 1 << 20, 512, (1, 2, 3)), TEXT),
        ("libsvm epsilon_svr", lambda: libsvm("svr", 8, 1 << 20, 512), TEXT)]
    return out


# ------------------------------------------------------------ memory


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def sanitized(pid):
    with open(f"/proc/{pid}/maps") as f:
        maps = f.read()
    return "libasan" in maps or "libtsan" in maps or "__asan" in maps


def reset_peak(pid):
    """VmHWM back to the current resident size (Linux 4.0 and later)."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def estimate(d, what, name, body, headers):
    """The estimate, from the 413 of a daemon with a budget of 1 MiB."""
    r = d.req("POST", f"/v1/models/{name}/import", body, headers=headers)
    m = ESTIMATE_RE.search(r.body)
    check(r.status == 413 and m, f"{what}: refused under a 1 MiB budget, "
          "the estimate in the message", r)
    return float(m.group(1)) * MIB if m else None


def measured(binary, tmp, name, body, headers, budget_mib):
    """A fresh daemon with this budget imports the body: (reply, growth of
    its peak resident bytes, whether it runs under a sanitizer)."""
    models = os.path.join(tmp, "m", "models")
    shutil.rmtree(os.path.dirname(models), ignore_errors=True)
    os.makedirs(models)
    d = run.Daemon(binary, models, "--memory-budget-mb", f"{budget_mib:.3f}",
                   "--max-body-mb", "512")
    try:
        d.start()
        pid = d.proc.pid
        san = sanitized(pid)
        reset_peak(pid)
        before = status_kib(pid, "VmRSS")
        r = d.req("POST", f"/v1/models/{name}/import", body, headers=headers)
        peak = status_kib(pid, "VmHWM")
        return r, (peak - before) * 1024.0, san
    finally:
        d.stop()


def scenario_forms(binary, tmp, small):
    models = os.path.join(tmp, "probe", "models")
    os.makedirs(models)
    probe = run.Daemon(binary, models, "--memory-budget-mb", "1",
                       "--max-body-mb", "512")
    try:
        probe.start()
        for i, (what, make, headers) in enumerate(cases(small)):
            body = make()
            est = estimate(probe, what, f"m{i}", body, headers)
            if est is None:
                continue
            r, grew, san = measured(binary, tmp, f"m{i}", body, headers,
                                    est / MIB + 0.2)
            check(r.status == 201, f"{what} ({len(body) / MIB:.1f} MiB): "
                  f"admitted just above its estimate ({est / MIB:.1f} MiB)",
                  r)
            if not san:
                check(grew <= est + NOISE, f"{what}: peak resident growth "
                      f"{grew / MIB:.1f} MiB within the estimate "
                      f"{est / MIB:.1f} MiB", f"grew {grew / MIB:.1f} MiB")
    finally:
        probe.stop()


def scenario_triggers(binary, tmp, small):
    """Issue 24's two imports, each under its budget."""
    triggers = [
        ("4 SVs to index 2^22 under 300 MiB",
         libsvm("svc", 4, 1 << 22, 512, (1, -1)), TEXT, 300)]
    if "gpr" in small:
        n = int(math.sqrt(2 * 24 * MIB / 8))  # a 24 MiB triangle
        triggers.append(("a 24 MiB gpr file under 60 MiB",
                         gpr(small["gpr"], n, 2, 1), KMM, 60))
    for what, body, headers, budget in triggers:
        r, grew, san = measured(binary, tmp, "trigger", body, headers, budget)
        if r.status == 413:
            check(True, f"{what}: refused (413)")
            continue
        check(r.status == 201, f"{what}: 413 or 201", r)
        if not san:
            check(grew <= budget * MIB, f"{what}: admitted, peak resident "
                  f"growth {grew / MIB:.1f} MiB within the budget",
                  f"grew {grew / MIB:.1f} MiB")


def with_version(b, version):
    """The file b holding this version, checksum recomputed."""
    out = bytearray(b[:-4])
    struct.pack_into("<Q", out, layout(b)["version"], version)
    return with_crc(bytes(out))


def pinned(binary, tmp, kept, current, row, budget_mib):
    """A fresh daemon (--keep-versions 2) whose models directory holds
    current as k.kmm (version 2) and kept as k.kmm.v1 answers a predict
    pinned to version 1: (reply, growth of its peak resident bytes,
    whether it runs under a sanitizer)."""
    models = os.path.join(tmp, "k", "models")
    shutil.rmtree(os.path.dirname(models), ignore_errors=True)
    os.makedirs(models)
    for name, data in (("k.kmm", with_version(current, 2)),
                       ("k.kmm.v1", with_version(kept, 1))):
        with open(os.path.join(models, name), "wb") as f:
            f.write(data)
    d = run.Daemon(binary, models, "--keep-versions", "2",
                   "--memory-budget-mb", f"{budget_mib:.3f}")
    try:
        d.start()
        pid = d.proc.pid
        san = sanitized(pid)
        reset_peak(pid)
        before = status_kib(pid, "VmRSS")
        r = d.req("POST", "/v1/models/k/versions/1/predict", {"X": [row]})
        peak = status_kib(pid, "VmHWM")
        return r, (peak - before) * 1024.0, san
    finally:
        d.stop()


def scenario_kept(binary, tmp, small):
    """A pinned read loads a kept version's file for the request: held
    against the budget by the same estimate (the file, and what loading
    it takes), so a kept file whose model is far larger than the file
    (kkmeans' n x k matrix, gpr's full factor) is refused or held."""
    kept = []
    if "kkmeans" in small:
        kept.append(("kkmeans of 1024 clusters", small["kkmeans"],
                     kkmeans(small["kkmeans"], N, 16, 1024), 16))
    if "gpr" in small:
        kept.append(("gpr of 2048 rows", small["gpr"],
                     gpr(small["gpr"], 2048, 256, 1), 256))
    for what, current, file, d in kept:
        row = [0.0] * d
        r, _, _ = pinned(binary, tmp, file, current, row, 1)
        m = ESTIMATE_RE.search(r.body)
        if not check(r.status == 413 and m, f"kept {what}: a pinned predict "
                     "refused under a 1 MiB budget, the estimate in the "
                     "message", r):
            continue
        est = float(m.group(1)) * MIB
        # the predict's own reservation: the body, a row's answer and
        # kernel values, well within a MiB
        r, grew, san = pinned(binary, tmp, file, current, row,
                              est / MIB + 1)
        check(r.status == 200, f"kept {what} ({len(file) / MIB:.1f} MiB): "
              f"a pinned predict admitted just above its estimate "
              f"({est / MIB:.1f} MiB)", r)
        if not san:
            check(grew <= est + MIB + NOISE, f"kept {what}: peak resident "
                  f"growth {grew / MIB:.1f} MiB within the estimate",
                  f"grew {grew / MIB:.1f} MiB")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    binary = os.path.abspath(args.server)
    tmp = tempfile.mkdtemp(prefix="kmserve-hostile-admission-")
    try:
        small = make_small(binary, tmp)
        scenario_triggers(binary, tmp, small)
        scenario_forms(binary, tmp, small)
        scenario_kept(binary, tmp, small)
    except Exception as e:  # a crash of the runner is a failure, not a pass
        check(False, "runner", repr(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return run.tally.summary()


if __name__ == "__main__":
    sys.exit(main())
