#!/usr/bin/python3
"""Hostile model files: the models directory is an input too.

Valid model files of each algorithm are made by a daemon, then copies are
altered field by field (with the checksum recomputed, so only the
loader's own checks can catch them) and dropped into a models directory,
with special files (a FIFO, a symlink to /dev/zero, a directory) and files
whose names break the model-name rule, before a start and while a daemon
runs. Each time the daemon must become ready, keep serving the good
models, set the bad ones aside or skip them with a log line (once per
file), never crash, and keep GET /v1/models valid JSON. An import is the
same loader from the network: an svc file whose vote order is not a
permutation is a 400 naming it, and the daemon serves on.

Standard library only. Usage (from the project root):
    /usr/bin/python3 tests/integration/hostile_models.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import re
import shutil
import struct
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (check, http, Daemon)

check = run.check
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
WATCH = "0.2"  # seconds between the watcher's scans


# ------------------------------------------------------------ the format

def u32(b, p):
    return struct.unpack_from("<I", b, p)[0]


def u64(b, p):
    return struct.unpack_from("<Q", b, p)[0]


def skip_kernel(b, p):
    n_parts, has_weights = u32(b, p + 24), u32(b, p + 28)
    p += 32
    for _ in range(n_parts):
        p = skip_kernel(b, p)
    if has_weights:
        p += 8 + 8 * u64(b, p)
    return p


def skip_info(b, p):
    count = u64(b, p)
    p += 8
    for _ in range(count):
        p += 4 + u32(b, p)  # key
        p += 8              # kind, is_array
        p += 8 + 8 * u64(b, p)
    return p


def layout(b):
    """Offsets of the fields a test alters (see core/model/km_model.c)."""
    o = {"algo": 8, "n_features": 12, "n_samples": 20, "n_outputs": 28}
    p = 36 + 4 + u32(b, 36)  # past the name
    o["version"], o["created_at"] = p, p + 8
    p = skip_kernel(b, p + 16)
    p = skip_info(b, skip_info(b, p))
    o["labels"] = p
    n = u64(b, p)
    q = p + 12
    for _ in range(n):
        q += 4 + u32(b, q)
    o["pre"] = q  # version 2: the preprocessing and search sections
    if u32(b, 4) >= 2:
        scale, center = u32(b, q), u32(b, q + 4)
        q += 8
        for _ in range(2 if scale else 0):
            q += 8 + 8 * u64(b, q)
        if center:
            q += 8 + 8 * u64(b, q)
        o["search"] = q
        if u32(b, q):
            n_params = u64(b, q + 20)
            q += 28
            for _ in range(n_params):
                q += 4 + u32(b, q)
            q += 8
            for _ in range(4):
                q += 8 + 8 * u64(b, q)
            q += 8
        else:
            q += 4
    if u32(b, 4) >= 8:  # the payload's layout, then the drift reference
        o["reference"] = q
        q += 4 + 8
        q += 8 + 8 * u64(b, q)
    o["payload"] = q
    return o


def with_crc(b):
    b = bytes(b[:-4])
    return b + struct.pack("<I", zlib.crc32(b) & 0xFFFFFFFF)


def set_u64(b, field, value):
    out = bytearray(b)
    struct.pack_into("<Q", out, layout(b)[field], value & (2**64 - 1))
    return with_crc(out)


def set_labels(b, labels, numeric=0):
    o = layout(b)
    sec = struct.pack("<QI", len(labels), numeric)
    for label in labels:
        sec += struct.pack("<I", len(label)) + label
    return with_crc(b[:o["labels"]] + sec + b[o["pre"]:])


def set_f64_at(b, offset, value):
    out = bytearray(b)
    struct.pack_into("<d", out, offset, value)
    return with_crc(out)


# ------------------------------------------------------------ helpers

def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def log_lines(d):
    """The daemon's log lines as dicts (what does not parse is skipped)."""
    d.log.flush()
    out = []
    with open(d.log_path, "rb") as f:
        for raw in f:
            try:
                out.append(json.loads(raw.decode("utf-8")))
            except ValueError:
                pass
    return out


def mentions(d, event, text):
    return [x for x in log_lines(d)
            if x.get("event") == event and text in x.get("msg", "")]


def strict_json(reply):
    """The body as JSON, or None if it is not valid UTF-8 JSON."""
    try:
        return json.loads(reply.raw.decode("utf-8", "strict"))
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None


def raw_get(port, path, timeout=10):
    """GET with the body's bytes kept as they are (.raw)."""
    return run.http(port, "GET", path, timeout=timeout)


def listed(d):
    """Names in GET /v1/models, or None if the answer is not valid JSON."""
    doc = strict_json(raw_get(d.port, "/v1/models"))
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), list):
        return None
    return sorted(m.get("name") for m in doc["models"])


def times_ok(d):
    doc = strict_json(raw_get(d.port, "/v1/models")) or {}
    return [m.get("created_at") for m in doc.get("models", [])
            if not TIME_RE.match(str(m.get("created_at")))]


def unblock_fifo(path):
    """Releases a daemon blocked opening a FIFO for reading (as the daemon
    before the fix was), so teardown does not hang."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


# ------------------------------------------------------------ valid files

FITS = {
    "krr": {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.5},
            "X": [[0, 0], [1, 0], [0, 1], [1, 1]], "y": [0, 1, 1, 0]},
    "svc": {"algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.5},
            "X": [[0, 0], [0, 1], [3, 3], [3, 4]], "y": ["a", "a", "b", "b"]},
    "svr": {"algorithm": "svr", "kernel": {"type": "linear"},
            "params": {"epsilon": 0.01},
            "X": [[0], [1], [2], [3]], "y": [0, 1, 2, 3.5]},
    "kpca": {"algorithm": "kpca", "kernel": {"type": "rbf", "gamma": 0.5},
             "params": {"n_components": 2},
             "X": [[0, 0], [1, 0], [0, 1], [2, 2]]},
}
ROW = {"krr": [[0.5, 0.5]], "svc": [[3, 3]], "svr": [[1.5]], "kpca": [[0.5, 0.5]]}


def make_valid(binary, tmp):
    """One valid file per algorithm, written by a daemon."""
    models = os.path.join(tmp, "make", "models")
    os.makedirs(models)
    d = run.Daemon(binary, models)
    files = {}
    try:
        d.start()
        for algo, body in FITS.items():
            r = d.req("POST", f"/v1/models/{algo}/fit", body)
            check(r.status == 201, f"set-up: fit {algo}", r)
    finally:
        d.stop()
    for algo in FITS:
        with open(os.path.join(models, algo + ".kmm"), "rb") as f:
            files[algo] = f.read()
    return files


def predict_path(name, algo):
    return f"/v1/models/{name}/" + ("project" if algo == "kpca" else "predict")


# ------------------------------------------------------------ scenarios

def crafted(files):
    """name -> (bytes, what is wrong), each with a valid checksum."""
    svc, krr, kpca = files["svc"], files["krr"], files["kpca"]
    o = layout(krr)
    # krr payload: u64 count, then X (4 x 2)
    x0 = o["payload"] + 8
    return {
        "fewlabels": (set_labels(svc, [b"a"]), "svc with 1 label for 2 classes"),
        "nolabels": (set_labels(svc, []), "svc without labels"),
        "duplabels": (set_labels(svc, [b"a", b"a"]), "svc with equal labels"),
        "badutf8": (set_labels(svc, [b"a", b"\xff\xfe"]), "a label not UTF-8"),
        "outputs": (set_u64(svc, "n_outputs", 2**32), "svc with 2^32 outputs"),
        "krrout": (set_u64(krr, "n_outputs", 2**40), "krr with 2^40 outputs"),
        "features": (set_u64(krr, "n_features", 2**40), "2^40 features"),
        "samples": (set_u64(svc, "n_samples", 2**62), "2^62 samples"),
        "future": (set_u64(krr, "created_at", 2**62), "created_at 2^62 ms"),
        "past": (set_u64(krr, "created_at", -500), "created_at before 1970"),
        "maxver": (set_u64(krr, "version", 2**64 - 1), "version 2^64-1"),
        "nan": (set_f64_at(krr, x0, float("nan")), "a NaN training value"),
        "kpcak": (set_u64(kpca, "n_outputs", 4), "kpca with n_components = n"),
        "algo": (set_u64(krr, "algo", 7), "an unknown algorithm"),
    }


def scenario_contents(binary, tmp, files):
    """Crafted contents before start: set aside, the good ones served."""
    models = os.path.join(tmp, "contents", "models")
    os.makedirs(models)
    for algo, data in files.items():
        write(os.path.join(models, f"good_{algo}.kmm"), data)
    bad = crafted(files)
    for name, (data, _) in bad.items():
        write(os.path.join(models, name + ".kmm"), data)
    d = run.Daemon(binary, models)
    try:
        d.start()
        check(True, "contents: the daemon becomes ready")
        good = sorted(f"good_{a}" for a in files)
        names = listed(d)
        check(names == good, "contents: GET /v1/models is valid JSON and "
              "lists the valid files only", names)
        check(not times_ok(d), "contents: every created_at is RFC 3339",
              times_ok(d))
        for name, (_, what) in bad.items():
            aside = [f for f in os.listdir(models)
                     if f.startswith(name + ".kmm.corrupt-")]
            logged = mentions(d, "model_quarantined", f"/{name}.kmm ")
            r = d.req("POST", f"/v1/models/{name}/predict", {"X": [[0, 0]]},
                      timeout=10)
            check(aside and logged and r.status == 404,
                  f"contents: {what}: set aside with a log line, not served",
                  (aside, len(logged), r))
        for algo in files:
            r = d.req("POST", predict_path(f"good_{algo}", algo),
                      {"X": ROW[algo]}, timeout=10)
            check(r.status == 200, f"contents: good {algo} predicts", r)
        check(d.req("GET", "/livez", timeout=5).status == 200,
              "contents: alive at the end")
    except Exception as e:
        check(False, "contents: runner", repr(e))
    finally:
        alive = d.proc is not None and d.proc.poll() is None
        rc = d.stop()
        check(alive and rc == 0, "contents: no crash; SIGTERM exits 0", rc)


BAD_NAMES = [b"\xff\xfe", b"a b", b"a\nb", b"-lead", b"x" * 65, b"caf\xc3\xa9"]


def shown(name):
    """How the daemon names a file in its log: bytes outside printable
    ASCII as \\xNN."""
    return "".join(chr(c) if 0x20 <= c < 0x7f and c != 0x5c else f"\\x{c:02x}"
                   for c in name)


def scenario_names(binary, tmp, files):
    """Files whose names break the model-name rule are skipped, logged once,
    and GET /v1/models stays valid JSON, at start and while running."""
    models = os.path.join(tmp, "names", "models")
    os.makedirs(models)
    bmodels = os.fsencode(models)
    write(os.path.join(models, "ok.kmm"), files["krr"])
    for n in BAD_NAMES[:3]:
        write(os.path.join(bmodels, n + b".kmm"), files["krr"])
    d = run.Daemon(binary, models, "--watch-interval", WATCH)
    try:
        d.start()
        for n in BAD_NAMES[3:]:
            write(os.path.join(bmodels, n + b".kmm"), files["krr"])
        time.sleep(1.5)  # several scans
        names = listed(d)
        check(names == ["ok"], "names: GET /v1/models is valid JSON and lists "
              "only the validly named file", names)
        for n in BAD_NAMES:
            at = "at start" if n in BAD_NAMES[:3] else "while running"
            lines = mentions(d, "model_file_skipped", shown(n + b".kmm"))
            check(len(lines) == 1, f"names: {shown(n)!r} ({at}) skipped with "
                  "one log line", len(lines))
            check(os.path.exists(os.path.join(bmodels, n + b".kmm")),
                  f"names: {shown(n)!r} left in place")
        r = d.req("POST", "/v1/models/ok/predict", {"X": ROW["krr"]}, timeout=10)
        check(r.status == 200, "names: the valid file predicts", r)
    except Exception as e:
        check(False, "names: runner", repr(e))
    finally:
        alive = d.proc is not None and d.proc.poll() is None
        rc = d.stop()
        check(alive and rc == 0, "names: no crash; SIGTERM exits 0", rc)


def scenario_special_at_start(binary, tmp, files):
    """A FIFO, a symlink to /dev/zero and a directory named *.kmm before
    start: the daemon becomes ready and serves the rest."""
    models = os.path.join(tmp, "special", "models")
    os.makedirs(models)
    write(os.path.join(models, "ok.kmm"), files["svc"])
    fifo = os.path.join(models, "fifo.kmm")
    os.mkfifo(fifo)
    os.symlink("/dev/zero", os.path.join(models, "zero.kmm"))
    os.mkdir(os.path.join(models, "dir.kmm"))
    d = run.Daemon(binary, models, "--watch-interval", WATCH)
    try:
        t0 = time.time()
        d.start()
        check(time.time() - t0 < 15, "special at start: ready",
              time.time() - t0)
        time.sleep(1.0)  # several scans
        check(listed(d) == ["ok"], "special at start: only the model file is "
              "served", listed(d))
        for f in ("fifo.kmm", "zero.kmm", "dir.kmm"):
            lines = mentions(d, "model_file_skipped", f"/{f}")
            check(len(lines) == 1, f"special at start: {f} skipped with one "
                  "log line", len(lines))
        check(os.path.islink(os.path.join(models, "zero.kmm")) and
              os.path.exists(fifo), "special at start: special files left "
              "in place")
    except Exception as e:
        check(False, "special at start: runner", repr(e))
    finally:
        unblock_fifo(fifo)
        alive = d.proc is not None and d.proc.poll() is None
        rc = d.stop()
        check(alive and rc == 0, "special at start: SIGTERM exits 0", rc)


def scenario_special_running(binary, tmp, files):
    """A FIFO and a /dev/zero symlink appear while the daemon runs: the
    watcher skips them, and fits and deletes still complete."""
    models = os.path.join(tmp, "running", "models")
    os.makedirs(models)
    d = run.Daemon(binary, models, "--watch-interval", WATCH)
    fifo = os.path.join(models, "fifo.kmm")
    try:
        d.start()
        os.mkfifo(fifo)
        os.symlink("/dev/zero", os.path.join(models, "zero.kmm"))
        time.sleep(1.0)  # several scans
        try:
            r = d.req("POST", "/v1/models/m/fit", FITS["krr"], timeout=10)
        except OSError as e:
            r = e
        check(getattr(r, "status", 0) == 201, "special while running: a fit "
              "completes", r)
        try:
            r = d.req("DELETE", "/v1/models/m", timeout=10)
        except OSError as e:
            r = e
        check(getattr(r, "status", 0) == 204, "special while running: a "
              "delete completes", r)
        check(d.req("GET", "/readyz", timeout=5).status == 200,
              "special while running: still ready")
        for f in ("fifo.kmm", "zero.kmm"):
            lines = mentions(d, "model_file_skipped", f"/{f}")
            check(len(lines) == 1, f"special while running: {f} skipped "
                  "with one log line", len(lines))
    except Exception as e:
        check(False, "special while running: runner", repr(e))
    finally:
        unblock_fifo(fifo)
        alive = d.proc is not None and d.proc.poll() is None
        rc = d.stop()
        check(alive and rc == 0, "special while running: SIGTERM exits 0", rc)


def scenario_size(binary, tmp, files):
    """A regular file far larger than its header allows is set aside
    without being read whole (a sparse file: no disk is used)."""
    models = os.path.join(tmp, "size", "models")
    os.makedirs(models)
    big = os.path.join(models, "big.kmm")
    with open(big, "wb") as f:
        f.write(files["krr"])
        f.truncate(8 << 30)  # 8 GiB, sparse
    d = run.Daemon(binary, models)
    try:
        t0 = time.time()
        d.start()
        check(time.time() - t0 < 10, "size: ready at once", time.time() - t0)
        lines = mentions(d, "model_quarantined", "/big.kmm ")
        check(len(lines) == 1 and "header" in lines[0].get("msg", ""),
              "size: set aside, the log names the size", lines)
        check(listed(d) == [], "size: not served", listed(d))
    except Exception as e:
        check(False, "size: runner", repr(e))
    finally:
        alive = d.proc is not None and d.proc.poll() is None
        rc = d.stop()
        check(alive and rc == 0, "size: SIGTERM exits 0", rc)


def scenario_fit_labels(binary, tmp):
    """A fit whose string labels are not UTF-8 is refused (its file would
    not load, and its metadata would not be JSON)."""
    models = os.path.join(tmp, "labels", "models")
    os.makedirs(models)
    d = run.Daemon(binary, models)
    try:
        d.start()
        body = (b'{"algorithm":"svc","kernel":{"type":"linear"},'
                b'"X":[[0],[1],[2],[3]],"y":["a","a","\xff","\xff"]}')
        r = d.req("POST", "/v1/models/u/fit", body,
                  headers=[("Content-Type", "application/json")], timeout=10)
        check(r.status == 400 and "not valid UTF-8" in r.body,
              "fit labels: a label that is not UTF-8 is a 400", r)
        check(listed(d) == [], "fit labels: nothing stored", listed(d))
    except Exception as e:
        check(False, "fit labels: runner", repr(e))
    finally:
        d.stop()


def scenario_last_version(binary, tmp, files):
    """A model at the last version a file can hold (2^53) is served, and a
    refit is refused with 409 rather than writing a file the next start
    would set aside; the model stays as it was."""
    models = os.path.join(tmp, "lastver", "models")
    os.makedirs(models)
    write(os.path.join(models, "top.kmm"), set_u64(files["krr"], "version", 2**53))
    d = run.Daemon(binary, models)
    try:
        d.start()
        r = d.req("GET", "/v1/models/top", timeout=10)
        check(r.status == 200 and (r.json() or {}).get("version") == 2**53,
              "last version: a model at version 2^53 is served", r)
        r = d.req("POST", "/v1/models/top/fit", FITS["krr"], timeout=10)
        check(r.status == 409 and "9007199254740992" in r.body,
              "last version: a refit is 409 naming the version", r)
        r = d.req("GET", "/v1/models/top", timeout=10)
        check(r.status == 200 and (r.json() or {}).get("version") == 2**53,
              "last version: the model stays at 2^53", r)
    except Exception as e:
        check(False, "last version: runner", repr(e))
    finally:
        d.stop()
    d = run.Daemon(binary, models)
    try:
        d.start()
        check(listed(d) == ["top"], "last version: it loads again at the next start",
              listed(d))
    except Exception as e:
        check(False, "last version: restart", repr(e))
    finally:
        d.stop()


LIBSVM_213 = (b"svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 3\n"
              b"total_sv 3\nrho 0.1 0.2 0.3\nlabel 2 1 3\nnr_sv 1 1 1\nSV\n"
              b"1 1 1:1\n-1 1 1:2\n-1 -1 1:3\n")


def scenario_vote_order(binary, tmp):
    """An svc file of format 3 (LIBSVM's label order kept as the vote
    order; the payload ends with it) whose vote order is not a
    permutation, imported with a valid checksum: 400 naming the vote order
    and the class count (the loader once freed the payload and then read
    the count from it: a use after free), nothing stored, the daemon
    serving on."""
    models = os.path.join(tmp, "vote", "models")
    os.makedirs(models)
    d = run.Daemon(binary, models)
    octet = [("Content-Type", "application/octet-stream")]
    try:
        d.start()
        r = d.req("POST", "/v1/models/lib/import", LIBSVM_213,
                  headers=[("Content-Type", "text/plain")], timeout=10)
        check(r.status == 201, "vote order: LIBSVM labels 2 1 3 import", r)
        r = d.req("GET", "/v1/models/lib/export?format=kmm", timeout=10)
        kmm = r.raw
        vote = len(kmm) - 4 - 12
        ok = (r.status == 200 and u32(kmm, 4) == 3 and
              u64(kmm, vote - 8) == 3 and
              struct.unpack_from("<3i", kmm, vote) == (1, 0, 2))
        check(ok, "vote order: its kmm is format 3 ending with the vote "
              "order 1 0 2", (r.status, kmm[:8]))
        if ok:
            r = d.req("POST", "/v1/models/same/import", kmm, headers=octet,
                      timeout=10)
            check(r.status == 201, "vote order: the kmm imports back", r)
            for bad in ((0, 0, 1), (2, 1, 3), (0, 1, -1)):
                data = bytearray(kmm)
                struct.pack_into("<3i", data, vote, *bad)
                r = d.req("POST", "/v1/models/bad/import", with_crc(data),
                          headers=octet, timeout=10)
                check(r.status == 400 and "vote order is not a permutation "
                      "of the 3 classes" in r.body,
                      f"vote order: {list(bad)} is a 400 naming it", r)
            check(d.req("GET", "/v1/models/bad", timeout=10).status == 404,
                  "vote order: nothing stored")
        check(d.req("GET", "/livez", timeout=5).status == 200 and
              d.req("POST", "/v1/models/lib/predict", {"X": [[2]]},
                    timeout=10).status == 200,
              "vote order: the daemon keeps serving")
    except Exception as e:
        check(False, "vote order: runner", repr(e))
    finally:
        alive = d.proc is not None and d.proc.poll() is None
        rc = d.stop()
        check(alive and rc == 0, "vote order: no crash; SIGTERM exits 0", rc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    binary = os.path.abspath(args.server)
    tmp = tempfile.mkdtemp(prefix="kmserve-hostile-models-")
    try:
        files = make_valid(binary, tmp)
        scenario_contents(binary, tmp, files)
        scenario_names(binary, tmp, files)
        scenario_special_at_start(binary, tmp, files)
        scenario_special_running(binary, tmp, files)
        scenario_size(binary, tmp, files)
        scenario_fit_labels(binary, tmp)
        scenario_last_version(binary, tmp, files)
        scenario_vote_order(binary, tmp)
    except Exception as e:  # a crash of the runner is a failure, not a pass
        check(False, "runner", repr(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return run.tally.summary()


if __name__ == "__main__":
    sys.exit(main())
