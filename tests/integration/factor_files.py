#!/usr/bin/python3
"""Factor block files (docs/model-format.md "Factor blocks"): the Cholesky
factor of an exact gpr model and of a krr model fitted with
params.keep_factor, stored beside the model file as row blocks that the
versions share, so that an update writes its new rows only.

With --factor-files-mib 0 --keep-versions 3: a gpr fit writes a format 12
model file and one block link .g.kmm.b1-ID; each update adds one new block
and links the old ones (the same inode, one more link), so the directory
holds a block once however many versions hold it; the version a prune
drops loses its links, and the blocks the kept versions share stay. After
a restart the current version and a kept one (/versions/{v}/predict)
answer bit for bit as before, and agree with a refit on all the rows to
1e-9 (mean and std); a rollback links the version's blocks under the new
version. A block file altered by one byte, or removed, makes its model
file quarantined at the next start (model_quarantined in the log, the
model 404), while a model beside it still answers; DELETE removes every
block link of the name, and the name stays gone after a restart. krr with
keep_factor does the same through two updates and a restart, and an
update of the model loaded after it links the loaded blocks. The export
of a blocks-stored model holds the factor's rows: another daemon imports
it and answers bit for bit the same; the raw format 12 file itself is
refused by import (400 naming the block files). Under the default
(16 MiB) a small factor stays in the model file: no block links, a
fitted model's file below format 12, an updated one's format 12 with its
blocks' rows in it, answering bit for bit after a restart. Where hard
links fail (EPERM from linkat and link, by an LD_PRELOAD shim: vfat's
behaviour), each version's blocks are written as files of their own and
kept versions are copies, answering bit for bit after a restart.

Standard library only. Usage, from the project root:
    /usr/bin/python3 tests/integration/factor_files.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

TOL = 1e-9
DIM = 3
FLAGS = ("--factor-files-mib", "0", "--keep-versions", "3")


def data(n, seed):
    rng = random.Random(seed)
    X = [[rng.uniform(-2, 2) for _ in range(DIM)] for _ in range(n)]
    return X, [sum(r) + 1 + rng.gauss(0, 0.1) for r in X]


def fit(d, name, algorithm, params, X, y):
    return d.req("POST", f"/v1/models/{name}/fit",
                 {"algorithm": algorithm, "kernel": {"type": "rbf",
                                                     "gamma": 0.4},
                  "params": params, "X": X, "y": y})


def answer(d, name, X, path=""):
    """Predictions; for gpr the mean and the std."""
    got = []
    for out in (("mean", "std") if name.startswith("g") else (None,)):
        body = {"X": X, "output": out} if out else {"X": X}
        r = d.req("POST", f"/v1/models/{name}{path}/predict", body)
        got.append((r.json() or {}).get("predictions") if r.status == 200
                   else r.status)
    return got


def flat(v):
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in flat(v[k])]
    if isinstance(v, list):
        return [x for e in v for x in flat(e)]
    return [v]


def close(a, b, tol=TOL):
    a, b = flat(a), flat(b)
    return len(a) == len(b) > 0 and all(
        isinstance(x, float) and abs(x - y) <= tol * max(1.0, abs(y))
        for x, y in zip(a, b))


def links(models, name):
    """{version: {id: inode}} of name's block links."""
    out = {}
    link = re.compile(r"\.%s\.kmm\.b([1-9][0-9]*)-([0-9a-f]{16})$" %
                      re.escape(name))
    for f in os.listdir(models):
        m = link.match(f)
        if m:
            out.setdefault(int(m.group(1)), {})[m.group(2)] = os.stat(
                os.path.join(models, f)).st_ino
    return out


def fmt(models, file):
    with open(os.path.join(models, file), "rb") as f:
        return struct.unpack("<I", f.read(8)[4:8])[0]


def restart(d):
    d.stop()
    d.start()


def gpr_chain(d, models, T):
    X, y = data(90, 1)
    params = {"noise": 0.05, "signal_variance": 1.5}
    r = fit(d, "g", "gpr", params, X[:60], y[:60])
    b = links(models, "g")
    run.check(r.status == 201 and fmt(models, "g.kmm") == 12 and
              list(b) == [1] and len(b[1]) == 1,
              "gpr fit: a format 12 model file and one block link "
              ".g.kmm.b1-ID", (r, b))
    for v, (lo, hi) in enumerate(((60, 70), (70, 75), (75, 90)), start=2):
        r = d.req("POST", "/v1/models/g/update", {"X": X[lo:hi],
                                                  "y": y[lo:hi]})
        b = links(models, "g")
        old = b.get(v - 1, {})
        run.check(r.status == 201 and len(b.get(v, {})) == v and
                  all(b[v].get(i) == ino for i, ino in old.items()),
                  f"update to version {v}: {v} blocks, the {v - 1} old ones "
                  f"the same files as version {v - 1}'s (links)", (r, b))
    b = links(models, "g")
    run.check(sorted(b) == [2, 3, 4],
              "--keep-versions 3: version 1's link is pruned, 2 to 4 kept",
              sorted(b))
    first = next(i for i in b[4] if i in b[2])
    st = os.stat(os.path.join(models, f".g.kmm.b4-{first}"))
    run.check(st.st_nlink == 3, "the first block: one file, three links "
              "(versions 2 to 4)", st.st_nlink)
    fit(d, "g-ref", "gpr", params, X, y)
    now, kept = answer(d, "g", T), answer(d, "g", T, "/versions/2")
    run.check(close(now, answer(d, "g-ref", T)),
              "after three updates: mean and std of a refit on all 90 rows "
              "(1e-9)", (now, answer(d, "g-ref", T)))
    restart(d)
    run.check(answer(d, "g", T) == now and
              answer(d, "g", T, "/versions/2") == kept,
              "after a restart: the current version and kept version 2 "
              "answer bit for bit as before")
    r = d.req("POST", "/v1/models/g/rollback", {"version": 3})
    b = links(models, "g")
    run.check(r.status == 200 and (r.json() or {}).get("model", {}).get(
        "version") == 5 and sorted(b) == [3, 4, 5] and
        b[5] == b[3],
        "rollback to 3: version 5 links version 3's blocks", (r, b))
    v3 = answer(d, "g", T)
    restart(d)
    run.check(answer(d, "g", T) == v3, "version 5 after a restart: as "
              "before")


def damaged(d, models, T):
    X, y = data(50, 2)
    params = {"noise": 0.1}
    for name in ("ga", "gm", "gok"):
        fit(d, name, "gpr", params, X[:40], y[:40])
        d.req("POST", f"/v1/models/{name}/update", {"X": X[40:],
                                                    "y": y[40:]})
    ok = answer(d, "gok", T)
    new = lambda name: max(links(models, name)[2],
                           key=lambda i: i not in links(models, name)[1])
    path = os.path.join(models, f".ga.kmm.b2-{new('ga')}")
    with open(path, "r+b") as f:
        f.seek(40)
        c = f.read(1)
        f.seek(40)
        f.write(bytes([c[0] ^ 1]))
    os.unlink(os.path.join(models, f".gm.kmm.b2-{new('gm')}"))
    d.stop()
    log_from = os.path.getsize(d.log_path)
    d.start()
    with open(d.log_path, "rb") as f:
        f.seek(log_from)
        log = f.read().decode("utf-8", "replace")
    for name, what in (("ga", "checksum"), ("gm", "cannot be opened")):
        r = d.req("GET", f"/v1/models/{name}")
        run.check(r.status == 404 and "model_quarantined" in log and
                  f"{name}.kmm" in log and what in log,
                  f"a block of {name} {'altered' if name == 'ga' else 'removed'}"
                  f": its model file is quarantined ({what}), 404", r)
    run.check(answer(d, "gok", T) == ok, "the model beside them answers as "
              "before")


def delete(d, models):
    r = d.req("DELETE", "/v1/models/g")
    left = [f for f in os.listdir(models) if f.startswith((".g.kmm", "g.kmm"))
            and not f.endswith(".lock")]
    run.check(r.status in (200, 204) and left == [],
              "DELETE: no block link nor file of g is left", (r, left))
    restart(d)
    r = d.req("GET", "/v1/models/g")
    run.check(r.status == 404, "after a restart g stays deleted", r)


def krr(d, models, T):
    X, y = data(80, 3)
    params = {"alpha": 0.1, "keep_factor": True}
    r = fit(d, "k", "krr", params, X[:50], y[:50])
    for lo, hi in ((50, 65), (65, 80)):
        d.req("POST", "/v1/models/k/update", {"X": X[lo:hi], "y": y[lo:hi]})
    fit(d, "k-ref", "krr", params, X, y)
    b = links(models, "k")
    now = answer(d, "k", T)
    run.check(r.status == 201 and len(b.get(3, {})) == 3 and
              fmt(models, "k.kmm") == 12 and
              close(now, answer(d, "k-ref", T)),
              "krr keep_factor: three blocks after two updates, a refit's "
              "predictions (1e-9)", (r, b))
    restart(d)
    run.check(answer(d, "k", T) == now, "krr after a restart: bit for bit")
    Xn, yn = data(5, 5)
    r = d.req("POST", "/v1/models/k/update", {"X": Xn, "y": yn})
    b = links(models, "k")
    run.check(r.status == 201 and len(b.get(4, {})) == 4 and
              all(b[4].get(i) == ino for i, ino in b[3].items()),
              "an update of the loaded model links its three blocks and "
              "adds one", (r, b))
    d.req("POST", "/v1/models/k/rollback", {"version": 3})
    run.check(answer(d, "k", T) == now, "rolled back to version 3: its "
              "answers")
    return now


def transfer(server, d, models, T, want):
    r = d.req("GET", "/v1/models/k/export?format=kmm")
    blob = r.raw or r.body.encode("latin-1")
    with open(os.path.join(models, "k.kmm"), "rb") as f:
        raw = f.read()
    with run.temp_daemon(server, "kmserve-factor-imp-") as e:
        ok = e.req("POST", "/v1/models/k/import", blob,
                   headers=[("Content-Type", "application/octet-stream")])
        bad = e.req("POST", "/v1/models/k12/import", raw,
                    headers=[("Content-Type", "application/octet-stream")])
        run.check(r.status == 200 and len(blob) > len(raw) and
                  ok.status == 201 and answer(e, "k", T) == want and
                  links(e.models, "k") == {},
                  "the export of a blocks-stored model holds the factor's "
                  "rows: another daemon imports it (no block files) and "
                  "answers bit for bit the same", (r.status, ok))
        run.check(bad.status == 400 and "block files" in bad.body,
                  "the raw format 12 file is refused by import, naming the "
                  "block files", bad)


def threshold(server, T):
    with run.temp_daemon(server, "kmserve-factor-default-") as d:
        X, y = data(40, 4)
        r = fit(d, "g", "gpr", {"noise": 0.1}, X, y)
        fitted = fmt(d.models, "g.kmm")
        before = answer(d, "g", T)
        u = d.req("POST", "/v1/models/g/update", {"X": X[:3], "y": y[:3]})
        updated = answer(d, "g", T)
        run.check(r.status == 201 and u.status == 201 and fitted < 12 and
                  fmt(d.models, "g.kmm") == 12 and
                  links(d.models, "g") == {},
                  "default --factor-files-mib 16: a small factor stays in "
                  "the model file (the fit's one block in a format below "
                  "12, the update's two listed with their rows in a "
                  "format 12 file)", (r, u, fitted, links(d.models, "g")))
        d.stop()
        d.start()
        run.check(answer(d, "g", T) == updated and updated != before,
                  "the updated small model after a restart: bit for bit")


# linkat(2) and link(2) failing with EPERM, as on a file system without
# hard links (vfat), for the daemon by LD_PRELOAD
NO_LINKS = r"""
#include <errno.h>
int linkat(int a, const char *b, int c, const char *d, int e)
{ (void)a; (void)b; (void)c; (void)d; (void)e; errno = EPERM; return -1; }
int link(const char *a, const char *b)
{ (void)a; (void)b; errno = EPERM; return -1; }
"""


def no_hard_links(server, T):
    tmp = tempfile.mkdtemp(prefix="kmserve-factor-nolinks-")
    try:
        src, shim = os.path.join(tmp, "nolinks.c"), os.path.join(tmp, "nl.so")
        with open(src, "w") as f:
            f.write(NO_LINKS)
        subprocess.run(["cc", "-shared", "-fPIC", "-o", shim, src],
                       check=True)
        models = os.path.join(tmp, "models")
        os.makedirs(models)
        # an AddressSanitizer build wants its runtime first: told not to
        # mind the shim before it
        asan = os.environ.get("ASAN_OPTIONS", "")
        d = run.Daemon(os.path.abspath(server), models, *FLAGS,
                       env=dict(os.environ, LD_PRELOAD=shim,
                                ASAN_OPTIONS=(asan + ":" if asan else "") +
                                "verify_asan_link_order=0"))
        d.start()
        try:
            X, y = data(70, 6)
            params = {"noise": 0.05}
            fit(d, "g", "gpr", params, X[:50], y[:50])
            for lo, hi in ((50, 60), (60, 70)):
                d.req("POST", "/v1/models/g/update", {"X": X[lo:hi],
                                                      "y": y[lo:hi]})
            now, v2 = answer(d, "g", T), answer(d, "g", T, "/versions/2")
            b = links(models, "g")
            inodes = [ino for v in b.values() for ino in v.values()]
            run.check(sorted(b) == [1, 2, 3] and len(b[3]) == 3 and
                      len(set(inodes)) == len(inodes) and
                      os.path.exists(os.path.join(models, "g.kmm.v2")),
                      "no hard links: each version's blocks are files of "
                      "their own, the kept versions copies", b)
            d.stop()
            d.start()
            run.check(answer(d, "g", T) == now and
                      answer(d, "g", T, "/versions/2") == v2,
                      "no hard links, after a restart: the current and a "
                      "kept version answer bit for bit as before")
        finally:
            d.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default="build/kmserve")
    a = ap.parse_args()
    T, _ = data(12, 9)

    def body(d):
        gpr_chain(d, d.models, T)
        damaged(d, d.models, T)
        delete(d, d.models)
        want = krr(d, d.models, T)
        transfer(a.server, d, d.models, T, want)
        threshold(a.server, T)
        no_hard_links(a.server, T)

    return run.with_daemon(a.server, "kmserve-factor-", body, *FLAGS)


if __name__ == "__main__":
    sys.exit(main())
