#!/usr/bin/python3
"""The store's promises where two requests, or two replicas, meet (issue 24,
defects 3, 4 and 5).

Races are provoked at the daemon's pause points (server/srv_test.h): the
test arms a point by creating a file in the directory KMSERVE_TEST_PAUSE_DIR
names, waits for the daemon to rename it NAME.paused (it is then held
there), does what must happen in the window, and releases it by removing
the file. Every wait is for an event, never for a time.

  - delete is final: a rollback that read a kept version, then a delete and
    a new fit of the name (once, and up to the same version numbers), then
    the rollback's commit: 404, and the old content never answers again
    (pinned or not, here or after a restart); the same when the rollback
    runs on a replica sharing the directory; a rollback whose version is
    pruned after it read it is 404 too;
  - a version that is gone is a 404: a pinned predict, GET, v2 infer, v2
    metadata and rollback whose version is pruned between finding its
    file and reading it, or between opening it and reading its factor's
    block files (every fit here keeps its factor, in block files), answer
    404, not 500, and log no error; the list of
    versions made while one is pruned shows only versions that exist;
  - replicas fitting one name: fits in turn on two replicas number their
    versions one after the other (never two fits acknowledged as one
    version), keep every one (a kept file holds the version its name
    says, and the content that fit answered), and the last writer wins;
    the same when one replica's fit is held inside its commit while the
    other fits; the same under a bounded hammering of both with SIGHUPs;
  - a writer that takes no lock (an older replica, a hand) replacing or
    removing NAME.kmm while a save is about to keep it: the kept file is
    the file whose version names it, and the fit is 201, not 507;
  - a scan and a listing of the directory at once (GET .../versions) each
    read every entry (they once shared one position in the directory);
  - a scan while the replica's own fit of a name is between its rename and
    its registry swap, after another replica deleted the name: the scan
    never leaves the deleted content served (the store once remembered
    its file before the swap, so the scan neither loaded nor unloaded it);
  - another host's keep link of an old file is not taken for a stale
    temporary file;
  - an update held after it computed, while its name is deleted and fitted
    again (version 1 again): 409, and the new life serves without the
    update's rows (it once compared versions alone and committed them).

Usage, from the project root:
    /usr/bin/python3 tests/integration/store_races.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import signal
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

X = [[0.0, 0.0], [1.0, 1.0], [2.0, 0.5], [0.5, 2.0], [3.0, 1.0], [1.5, 2.5]]
Q = [[0.25, 0.75], [2.5, 1.5]]
WAIT = 120  # seconds: the most any awaited event may take on a loaded machine


def krr(alpha):
    """A fit whose content is told by its alpha (params.alpha); it keeps
    its factor, which the daemons here store in block files."""
    return {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.5},
            "params": {"alpha": alpha, "keep_factor": True}, "X": X,
            "y": [sum(r) for r in X]}


# ---------------------------------------------------------------- pauses

class Pauses:
    """The pause points of one daemon (see server/srv_test.h)."""

    def __init__(self, tmp, name):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)

    def arm(self, point):
        open(os.path.join(self.dir, point), "w").close()

    def wait(self, point, call=None):
        """True once the daemon holds at point; False if call finished
        first (the point was never reached)."""
        paused = os.path.join(self.dir, point + ".paused")
        deadline = time.time() + WAIT
        while time.time() < deadline:
            if os.path.exists(paused):
                return True
            if call is not None and not call.is_alive():
                self.disarm(point)
                return os.path.exists(paused)
            time.sleep(0.005)
        raise RuntimeError(f"pause point {point}: neither reached nor passed")

    def release(self, point):
        try:
            os.remove(os.path.join(self.dir, point + ".paused"))
        except FileNotFoundError:
            pass

    def disarm(self, point):
        try:
            os.remove(os.path.join(self.dir, point))
        except FileNotFoundError:
            pass


def start(d, pauses):
    """Starts d with the pause points of pauses (None: none)."""
    old = os.environ.pop("KMSERVE_TEST_PAUSE_DIR", None)
    if pauses:
        os.environ["KMSERVE_TEST_PAUSE_DIR"] = pauses.dir
    try:
        return d.start()
    finally:
        os.environ.pop("KMSERVE_TEST_PAUSE_DIR", None)
        if old is not None:
            os.environ["KMSERVE_TEST_PAUSE_DIR"] = old


def daemon(binary, models, pauses, *flags):
    """A daemon on models (no scans but on SIGHUP) whose pause points are
    pauses' (None: none)."""
    return start(run.Daemon(binary, models, "--watch-interval", "0",
                            "--factor-files-mib", "0", *flags), pauses)


def held(pauses, point, call, what):
    """Whether call is held at point: checked, since a call that ran past
    it (answered) never met the window the test is about."""
    paused = pauses.wait(point, call)
    return check(paused, what, None if paused else call.result())


class Call(threading.Thread):
    """One request on its own thread; .reply once joined."""

    def __init__(self, d, method, path, body=None):
        super().__init__(daemon=True)
        self.d, self.args, self.reply = d, (method, path, body), None
        self.start()

    def run(self):
        self.reply = self.d.req(*self.args)

    def result(self):
        self.join(WAIT)
        return self.reply


# ------------------------------------------------------ the store as files

def file_version(path):
    """The version a model file holds (model-format.md: the u64 after the
    36-byte header and the name)."""
    with open(path, "rb") as f:
        head = f.read(36 + 4 + 256 + 8)
    n = struct.unpack_from("<I", head, 36)[0]
    return struct.unpack_from("<Q", head, 40 + n)[0]


def kept_files(models, name):
    """{version in the file's name: path} of name's kept files."""
    out = {}
    for f in os.listdir(models):
        tail = f[len(name) + len(".kmm.v"):]
        if f.startswith(name + ".kmm.v") and tail.isdigit():
            out[int(tail)] = os.path.join(models, f)
    return out


def mislabelled(models, name):
    """Kept files that hold another version than their name says."""
    return {v: file_version(p) for v, p in kept_files(models, name).items()
            if file_version(p) != v}


def fit(d, name, alpha, ledger=None):
    r = d.req("POST", f"/v1/models/{name}/fit", krr(alpha))
    j = r.json() or {}
    if ledger is not None and r.status == 201:
        ledger.append((j["model"]["version"], alpha))
    return r


def alpha_of(d, name, version=None):
    """(status, version, alpha) of name now, or of a pinned version."""
    path = f"/v1/models/{name}" + (f"/versions/{version}" if version else "")
    r = d.req("GET", path)
    j = r.json() or {}
    return r.status, j.get("version"), (j.get("params") or {}).get("alpha")


def rescans(d):
    with open(d.log_path, "rb") as f:
        return f.read().count(b'"event":"rescan"')


def rescan(d, rounds=1):
    """SIGHUP, and wait for the rescan it causes to be logged. With other
    SIGHUPs sent just before (a storm), 2 rounds: the rescan the second
    waits for began after the first ended."""
    for _ in range(rounds):
        seen = rescans(d)
        d.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + WAIT
        while rescans(d) == seen:
            if time.time() > deadline:
                raise RuntimeError("no rescan logged after SIGHUP")
            time.sleep(0.005)


def check_ledger(d, models, name, ledger, keep, what):
    """The replicas' promises for name, from the acknowledged fits (version,
    alpha): no version acknowledged twice; every kept file holds the version
    its name says; the newest `keep` acknowledged versions are all on disk
    with the content those fits answered (no acknowledged version lost but
    by pruning); the last writer wins. d must have rescanned."""
    versions = [v for v, _ in ledger]
    check(len(set(versions)) == len(versions),
          f"{what}: no two fits acknowledged as one version", sorted(ledger))
    bad = mislabelled(models, name)
    check(not bad, f"{what}: every kept file holds the version its name "
          "says", bad)
    newest = sorted(ledger, reverse=True)[:keep]
    s, current, alpha = alpha_of(d, name)
    check(s == 200 and (current, alpha) == newest[0],
          f"{what}: the last writer wins (version {newest[0][0]} is current)",
          (current, alpha, sorted(ledger)))
    found = [(v, alpha_of(d, name, v)) for v, _ in newest]
    check(all(s == 200 and (got, a) == (v, want)
              for (v, want), (_, (s, got, a)) in zip(newest, found)),
          f"{what}: the newest {keep} acknowledged versions are kept with "
          "their content", (newest, found))


# ------------------------------------------------------- delete is final

OLD = (0.11, 0.12, 0.13)  # the first life of the name
NEW = (5.0, 6.0, 7.0)     # the life after the delete


def answers_deleted(d, name):
    """Versions of name (current and kept) that answer a deleted alpha."""
    r = d.req("GET", f"/v1/models/{name}/versions")
    out = []
    for entry in (r.json() or {}).get("versions", []):
        s, v, a = alpha_of(d, name, entry.get("version"))
        if a in OLD or (entry.get("params") or {}).get("alpha") in OLD:
            out.append((v, a))
    p = d.req("POST", f"/v1/models/{name}/predict", {"X": Q}).json() or {}
    if (p.get("model") or {}).get("version") is not None:
        s, v, a = alpha_of(d, name)
        if a in OLD:
            out.append(("current", a))
    return out


def rollback_across_delete(d, actor, pauses, name, refits, what):
    """A rollback to version 2 of name's old life is held after it read the
    file; actor deletes name and fits it refits times; the rollback is
    released. It must be 404, and nothing of the old life answer."""
    actor.req("DELETE", f"/v1/models/{name}")
    for a in OLD:
        fit(actor, name, a)
    if actor is not d:
        rescan(d)
    pauses.arm("rollback_loaded")
    call = Call(d, "POST", f"/v1/models/{name}/rollback", {"version": 2})
    if not held(pauses, "rollback_loaded", call,
                f"{what}: the rollback reaches rollback_loaded"):
        return
    r = actor.req("DELETE", f"/v1/models/{name}")
    check(r.status == 204, f"{what}: the delete is 204", r)
    for a in NEW[:refits]:
        check(fit(actor, name, a).status == 201, f"{what}: refit {a} is 201")
    pauses.release("rollback_loaded")
    r = call.result()
    check(r is not None and r.status == 404,
          f"{what}: the rollback to the deleted version 2 is 404", r)
    for x in (actor, d) if actor is not d else (d,):
        rescan(x)
        s, v, a = alpha_of(x, name)
        check((s, v, a) == (200, refits, NEW[refits - 1]),
              f"{what}: the new life is current ({refits}, alpha "
              f"{NEW[refits - 1]})", (s, v, a))
        check(not answers_deleted(x, name),
              f"{what}: no deleted content answers", answers_deleted(x, name))


def scenario_delete_is_final(binary, tmp):
    models = os.path.join(tmp, "final", "models")
    os.makedirs(models)
    pauses = Pauses(tmp, "final-pauses")
    d = daemon(binary, models, pauses, "--keep-versions", "3")
    try:
        rollback_across_delete(d, d, pauses, "m", 1,
                               "rollback across a delete and one refit")
        rollback_across_delete(d, d, pauses, "m", 3,
                               "rollback across a delete and refits to "
                               "version 3")
        d.stop()
        start(d, pauses)
        check(not answers_deleted(d, "m") and alpha_of(d, "m")[2] == NEW[2],
              "after a restart no deleted content answers",
              answers_deleted(d, "m"))

        # a rollback whose version is pruned after it read it
        pauses.arm("rollback_loaded")
        call = Call(d, "POST", "/v1/models/m/rollback", {"version": 1})
        if held(pauses, "rollback_loaded", call,
                "pruned: the rollback reaches rollback_loaded"):
            fit(d, "m", 8.0)  # version 4 keeps 3 and 2: 1 is pruned
            pauses.release("rollback_loaded")
            r = call.result()
            check(r is not None and r.status == 404,
                  "a rollback to a version pruned after it was read is 404", r)
    finally:
        d.stop()


def scenario_delete_is_final_replicas(binary, tmp):
    models = os.path.join(tmp, "final-replicas", "models")
    os.makedirs(models)
    pauses = Pauses(tmp, "final-replicas-pauses")
    a = daemon(binary, models, None, "--keep-versions", "3")
    b = daemon(binary, models, pauses, "--keep-versions", "3")
    try:
        rollback_across_delete(b, a, pauses, "r", 3,
                               "replicas: a rollback on B across a delete "
                               "and refits on A")
    finally:
        a.stop()
        b.stop()


# ---------------------------------------------------------------- gone is 404

INFER = {"inputs": [{"name": "X", "shape": [len(Q), 2], "datatype": "FP64",
                     "data": [x for row in Q for x in row]}]}
# The requests that name a kept version v: (what, method, path, body)
PINNED = [
    ("pinned predict", "POST", "/v1/models/p/versions/{v}/predict",
     lambda v: {"X": Q}),
    ("pinned GET", "GET", "/v1/models/p/versions/{v}", lambda v: None),
    ("v2 pinned infer", "POST", "/v2/models/p/versions/{v}/infer",
     lambda v: INFER),
    ("v2 pinned metadata", "GET", "/v2/models/p/versions/{v}",
     lambda v: None),
    ("rollback", "POST", "/v1/models/p/rollback", lambda v: {"version": v})]


def scenario_gone_is_404(binary, tmp):
    models = os.path.join(tmp, "gone", "models")
    os.makedirs(models)
    pauses = Pauses(tmp, "gone-pauses")
    d = daemon(binary, models, pauses, "--keep-versions", "2")
    try:
        alpha = 1.0
        fit(d, "p", alpha)
        # kept_opened: the file open, its factor's block files not yet:
        # the prune removes them with the file
        for point in ("kept_sized", "kept_opened"):
            for what, method, path, body in PINNED:
                alpha += 1
                v = fit(d, "p", alpha).json()["model"]["version"] - 1
                pauses.arm(point)
                call = Call(d, method, path.format(v=v), body(v))
                if not held(pauses, point, call,
                            f"{what}: reaches {point}"):
                    continue
                alpha += 1
                fit(d, "p", alpha)  # keeps the current, prunes version v
                pauses.release(point)
                r = call.result()
                check(r is not None and r.status == 404,
                      f"{what} of a version pruned meanwhile ({point}) is "
                      "404, not 500", r)

        alpha += 1
        v = fit(d, "p", alpha).json()["model"]["version"]
        pauses.arm("versions_listed")
        call = Call(d, "GET", "/v1/models/p/versions")
        if held(pauses, "versions_listed", call,
                "list: reaches versions_listed"):
            fit(d, "p", alpha + 1)  # prunes version v - 1
            pauses.release("versions_listed")
            r = call.result()
            listed = (r.json() or {}).get("versions", []) if r else []
            check(r is not None and r.status == 200 and
                  [x.get("version") for x in listed] == [v] and
                  not any("error" in x for x in listed),
                  "the list made while a version is pruned shows only "
                  f"versions that exist ([{v}]), no error object", r)
        with open(d.log_path, "rb") as f:
            log = f.read().decode("utf-8", "replace")
        check('"version_unreadable"' not in log,
              "no false error logged for a pruned version",
              [x for x in log.splitlines() if "version_unreadable" in x][:3])
    finally:
        d.stop()


# ---------------------------------------------------------------- replicas

def two_replicas(binary, tmp, label, pauses_a=None, pauses_b=None):
    models = os.path.join(tmp, label, "models")
    os.makedirs(models)
    a = daemon(binary, models, pauses_a, "--keep-versions", "3")
    b = daemon(binary, models, pauses_b, "--keep-versions", "3")
    return models, a, b


def scenario_replicas_in_turn(binary, tmp):
    models, a, b = two_replicas(binary, tmp, "turns")
    ledger = []
    try:
        for d, alpha in ((a, 1.0), (b, 2.0), (a, 3.0), (b, 4.0)):
            r = fit(d, "s", alpha, ledger)
            check(r.status == 201, f"in turn: fit {alpha} is 201", r)
        check([v for v, _ in ledger] == [1, 2, 3, 4],
              "in turn: each fit numbers its version after the other "
              "replica's", ledger)
        for d in (a, b):
            rescan(d)
            check_ledger(d, models, "s", ledger, 3, "in turn")
    finally:
        a.stop()
        b.stop()


def scenario_replicas_held_commit(binary, tmp):
    pa, pb = Pauses(tmp, "held-a"), Pauses(tmp, "held-b")
    models, a, b = two_replicas(binary, tmp, "held", pa, pb)
    ledger = []
    try:
        fit(a, "s", 1.0, ledger)
        rescan(b)
        pa.arm("keep_link")
        fa = Call(a, "POST", "/v1/models/s/fit", krr(3.0))
        if not held(pa, "keep_link", fa,
                    "held: A's fit reaches keep_link"):
            return
        pb.arm("name_lock")
        fb = Call(b, "POST", "/v1/models/s/fit", krr(2.0))
        # B waits for A's commit (the name's lock), or, without it, is done
        if pb.wait("name_lock", fb):
            pb.release("name_lock")
        pa.release("keep_link")
        for call, alpha in ((fa, 3.0), (fb, 2.0)):
            r = call.result()
            check(r is not None and r.status == 201,
                  f"held: fit {alpha} is 201", r)
            if r is not None and r.status == 201:
                ledger.append((r.json()["model"]["version"], alpha))
        for d in (a, b):
            rescan(d)
            check_ledger(d, models, "s", ledger, 3, "held")
        s, _, _ = alpha_of(a, "s", 1)
        check(s == 200, "held: a pinned GET of version 1 is 200 (its file "
              "holds version 1)", alpha_of(a, "s", 1))
    finally:
        pa.release("keep_link")
        pb.release("name_lock")
        a.stop()
        b.stop()


def scenario_replicas_hammer(binary, tmp):
    """Two clients on each replica fit one name 8 times each, while both
    replicas rescan; a bounded ledger of every acknowledged fit."""
    models, a, b = two_replicas(binary, tmp, "hammer")
    ledger, failures, lock = [], [], threading.Lock()
    stop = threading.Event()

    def client(d, base):
        for i in range(8):
            alpha = base + i / 100.0
            r = d.req("POST", "/v1/models/h/fit", krr(alpha))
            with lock:
                if r.status == 201:
                    ledger.append((r.json()["model"]["version"], alpha))
                else:
                    failures.append(r)

    def storm():
        while not stop.is_set():
            for d in (a, b):
                d.proc.send_signal(signal.SIGHUP)
            stop.wait(0.02)

    try:
        threads = [threading.Thread(target=client, args=(d, base))
                   for d, base in ((a, 1.0), (a, 2.0), (b, 3.0), (b, 4.0))]
        hup = threading.Thread(target=storm)
        hup.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT * 4)
        stop.set()
        hup.join()
        check(not failures and len(ledger) == 32,
              "hammer: every fit is 201", failures[:3])
        for d in (a, b):
            rescan(d, rounds=2)
            check_ledger(d, models, "h", ledger, 3, "hammer")
    finally:
        stop.set()
        a.stop()
        b.stop()


def foreign_file(binary, tmp, fits):
    """The bytes of a model file holding version `fits` (alpha 9.0), as
    another writer would put it."""
    with run.temp_daemon(binary, "kmserve-races-foreign-") as f:
        for _ in range(fits):
            fit(f, "w", 9.0)
        with open(os.path.join(f.models, "w.kmm"), "rb") as g:
            return g.read()


def scenario_lockless_writer(binary, tmp):
    models = os.path.join(tmp, "lockless", "models")
    os.makedirs(models)
    pauses = Pauses(tmp, "lockless-pauses")
    d = daemon(binary, models, pauses, "--keep-versions", "3")
    foreign = foreign_file(binary, tmp, 1)
    try:
        for alpha in (1.0, 1.5, 1.6):
            fit(d, "m", alpha)
        # a file holding version 1 replaces version 3 while the save of
        # version 4 is about to keep it
        pauses.arm("keep_link")
        call = Call(d, "POST", "/v1/models/m/fit", krr(2.0))
        if held(pauses, "keep_link", call,
                "lockless: the fit reaches keep_link"):
            with open(os.path.join(models, ".foreign"), "wb") as f:
                f.write(foreign)
            os.rename(os.path.join(models, ".foreign"),
                      os.path.join(models, "m.kmm"))
            pauses.release("keep_link")
            r = call.result()
            check(r is not None and r.status == 201,
                  "lockless: the fit is 201", r)
            bad = mislabelled(models, "m")
            check(not bad and kept_files(models, "m"),
                  "lockless: the kept file is the file whose version names "
                  "it (no kept file holds another version)", bad)
            s, v, a = alpha_of(d, "m", 1)
            check((s, v, a) == (200, 1, 9.0),
                  "lockless: version 1 is the file that held it", (s, v, a))
        # NAME.kmm removed while the save is about to keep it
        pauses.arm("keep_link")
        call = Call(d, "POST", "/v1/models/m/fit", krr(3.0))
        if held(pauses, "keep_link", call,
                "lockless removal: the fit reaches keep_link"):
            os.remove(os.path.join(models, "m.kmm"))
            pauses.release("keep_link")
            r = call.result()
            check(r is not None and r.status == 201,
                  "lockless removal: the fit is 201, not 507", r)
    finally:
        pauses.release("keep_link")
        d.stop()


def scenario_scan_beside_listing(binary, tmp):
    """A scan and a listing of the directory at once (GET .../versions reads
    it for the kept files): each must read every entry. A directory of
    3000 entries takes several reads of the kernel's listing; the scan is
    held after its first entry while a listing runs, then released: every
    model file put there before the scan must be loaded by it."""
    models = os.path.join(tmp, "listing", "models")
    os.makedirs(models)
    for i in range(3000):  # hidden: not model files, passed over
        open(os.path.join(models, f".filler-{i:06d}-" + "x" * 32), "w").close()
    pauses = Pauses(tmp, "listing-pauses")
    d = daemon(binary, models, pauses, "--keep-versions", "3")
    try:
        for a in (1.0, 2.0):
            fit(d, "x", a)
        with open(os.path.join(models, "x.kmm"), "rb") as f:
            content = f.read()
        names = [f"copy{i}" for i in range(12)]
        blocks = [f for f in os.listdir(models) if f.startswith(".x.kmm.b")]
        for n in names:  # files another replica (or a hand) put there,
            # the factor's block files first (docs/model-format.md)
            for b in blocks:
                os.link(os.path.join(models, b),
                        os.path.join(models, f".{n}" + b[len(".x"):]))
            with open(os.path.join(models, f".{n}"), "wb") as f:
                f.write(content)
            os.rename(os.path.join(models, f".{n}"),
                      os.path.join(models, f"{n}.kmm"))
        seen = rescans(d)
        pauses.arm("scan_listing")
        d.proc.send_signal(signal.SIGHUP)
        if not check(pauses.wait("scan_listing"),
                     "listing: the scan reaches scan_listing"):
            return
        r = d.req("GET", "/v1/models/x/versions")
        listed = [x.get("version") for x in (r.json() or {}).get("versions",
                                                                  [])]
        check(r.status == 200 and listed == [2, 1],
              "listing: GET .../versions during a scan lists every version",
              r)
        pauses.release("scan_listing")
        deadline = time.time() + WAIT
        while rescans(d) == seen and time.time() < deadline:
            time.sleep(0.005)
        served = [n for n in names
                  if d.req("GET", f"/v1/models/{n}").status == 200]
        check(served == names, "listing: the scan loaded every model file "
              "there before it began, a listing beside it notwithstanding",
              sorted(set(names) - set(served)))
    finally:
        pauses.release("scan_listing")
        d.stop()


def predictions(d, name):
    """(status, predictions) of an unpinned predict of name on Q."""
    r = d.req("POST", f"/v1/models/{name}/predict", {"X": Q})
    return r.status, (r.json() or {}).get("predictions")


def scenario_scan_beside_commit(binary, tmp):
    """A scan while the replica's own fit of a name is committing. B serves
    s (alpha 0.31); A deletes s (B does not know yet); B's fit of s (alpha
    0.32) is held after its file is renamed into place, before its registry
    serves it; B rescans. The scan must not end with B serving the deleted
    content: once found the file known (the store once remembered its own
    file before the registry swap), it neither loaded nor unloaded s. Either
    the scan completes while the fit is held and s answers 404, or it waits
    for the commit (it is held at scan_load first), and s then answers the
    new fit."""
    pa, pb = Pauses(tmp, "commit-scan-a"), Pauses(tmp, "commit-scan-b")
    models, a, b = two_replicas(binary, tmp, "commit-scan", pa, pb)
    try:
        check(fit(b, "s", 0.31).status == 201, "commit scan: B fits s (0.31)")
        deleted = predictions(b, "s")
        rescan(a)
        r = a.req("DELETE", "/v1/models/s")
        check(r.status == 204, "commit scan: A deletes s", r)
        pb.arm("commit_stored")
        call = Call(b, "POST", "/v1/models/s/fit", krr(0.32))
        if not held(pb, "commit_stored", call,
                    "commit scan: B's fit reaches commit_stored"):
            return
        seen = rescans(b)
        pb.arm("scan_load")
        b.proc.send_signal(signal.SIGHUP)
        load = os.path.join(pb.dir, "scan_load.paused")
        deadline = time.time() + WAIT
        while rescans(b) == seen and not os.path.exists(load):
            if time.time() > deadline:
                raise RuntimeError("the scan neither ended nor reached "
                                   "scan_load")
            time.sleep(0.005)
        if rescans(b) != seen:  # the scan ended while the fit was held
            got = predictions(b, "s")
            check(got[0] == 404 and got != deleted,
                  "commit scan: after a scan during B's commit, s is not "
                  "the deleted content (404 until the fit is served)",
                  (got, deleted))
            pb.disarm("scan_load")
            pb.release("commit_stored")
            r = call.result()
        else:  # the scan waits for the commit
            pb.release("scan_load")
            pb.release("commit_stored")
            r = call.result()
            while rescans(b) == seen:
                if time.time() > deadline:
                    raise RuntimeError("no rescan logged after SIGHUP")
                time.sleep(0.005)
        check(r is not None and r.status == 201,
              "commit scan: B's fit (0.32) is 201", r)
        got = predictions(b, "s")
        check(got[0] == 200 and got != deleted and
              alpha_of(b, "s")[2] == 0.32,
              "commit scan: B then serves its new fit, not the deleted "
              "content", (got, deleted, alpha_of(b, "s")))
    finally:
        pb.release("commit_stored")
        pb.release("scan_load")
        pb.disarm("scan_load")
        a.stop()
        b.stop()


def scenario_scan_beside_refused_commit(binary, tmp):
    """A commit that is refused does not mark its name seen by a scan. B
    serves s at version 2 (alpha 0.42; 0.41 kept as version 1); B's
    rollback to version 1 is held after it read the kept file; A deletes s;
    B's scan is held after its listing (which has no s.kmm); A fits s anew
    (0.43, version 1); B's rollback is released and refused (s is at
    version 1 already), then the scan. The scan began after the delete, so
    it must end with s unloaded or A's new file loaded, never the deleted
    content: the rollback's read of the file once marked s seen, and the
    scan's unload loop passed it over."""
    pa, pb = Pauses(tmp, "refused-scan-a"), Pauses(tmp, "refused-scan-b")
    models, a, b = two_replicas(binary, tmp, "refused-scan", pa, pb)
    try:
        for alpha in (0.41, 0.42):
            fit(b, "s", alpha)
        deleted = predictions(b, "s")
        rescan(a)
        pb.arm("rollback_loaded")
        call = Call(b, "POST", "/v1/models/s/rollback", {"version": 1})
        if not held(pb, "rollback_loaded", call,
                    "refused scan: B's rollback reaches rollback_loaded"):
            return
        r = a.req("DELETE", "/v1/models/s")
        check(r.status == 204, "refused scan: A deletes s", r)
        seen = rescans(b)
        pb.arm("scan_listing")
        b.proc.send_signal(signal.SIGHUP)
        if not check(pb.wait("scan_listing"),
                     "refused scan: B's scan reaches scan_listing"):
            return
        check(fit(a, "s", 0.43).status == 201, "refused scan: A fits s anew")
        pb.release("rollback_loaded")
        r = call.result()
        check(r is not None and r.status == 409,
              "refused scan: B's rollback is refused (s is at version 1)", r)
        pb.release("scan_listing")
        deadline = time.time() + WAIT
        while rescans(b) == seen:
            if time.time() > deadline:
                raise RuntimeError("no rescan logged after SIGHUP")
            time.sleep(0.005)
        got = predictions(b, "s")
        check(got != deleted and (got[0] == 404 or
                                  alpha_of(b, "s")[2] == 0.43),
              "refused scan: after the scan s is not the deleted content "
              "(404, or A's new fit)", (got, deleted, alpha_of(b, "s")))
    finally:
        pb.release("rollback_loaded")
        pb.release("scan_listing")
        a.stop()
        b.stop()


def scenario_foreign_keep_link(binary, tmp):
    """Another host's keep link (.NAME.kmm.keep-..., made by a save just
    before it renames it to NAME.kmm.vV) links a model file whose mtime
    may be days old: a scan judges it by its ctime, which the link set, and
    leaves it; an hour-old temporary file is removed, as before."""
    models = os.path.join(tmp, "keep-link", "models")
    os.makedirs(models)
    old_model = os.path.join(models, "old-model")
    with open(old_model, "wb") as f:
        f.write(b"a model file written long ago")
    two_hours_ago = time.time() - 7200
    os.utime(old_model, (two_hours_ago, two_hours_ago))
    link = os.path.join(models, ".m.kmm.keep-otherhost-1-1-0000abcd-0")
    os.link(old_model, link)
    stale = os.path.join(models, ".m.kmm.tmp-otherhost-1-1-0000abcd-1")
    with open(stale, "wb") as f:
        f.write(b"partial")
    os.utime(stale, (two_hours_ago, two_hours_ago))
    d = daemon(binary, models, None)
    try:
        rescan(d)
        check(os.path.exists(link) and not os.path.exists(stale),
              "another host's keep link of an old file is kept (its ctime "
              "is the link's); an hour-old temporary file is removed",
              sorted(os.listdir(models)))
    finally:
        d.stop()


def keep(alpha, rows):
    """A krr fit that can be updated (params.keep_factor)."""
    return {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.5},
            "params": {"alpha": alpha, "keep_factor": True}, "X": rows,
            "y": [sum(r) for r in rows]}


def scenario_update_across_delete(binary, tmp):
    models = os.path.join(tmp, "upd", "models")
    os.makedirs(models)
    pauses = Pauses(tmp, "upd-pauses")
    # two workers: the refit runs while the update holds one
    d = daemon(binary, models, pauses, "--workers", "2")
    more = [[4.0, 0.0], [0.0, 4.0]]
    try:
        # the control: held and released, the update commits as version 2
        check(d.req("POST", "/v1/models/u/fit", keep(1.0, X)).status == 201,
              "update across a delete: fit u (keep_factor)")
        pauses.arm("update_computed")
        call = Call(d, "POST", "/v1/models/u/update",
                    {"X": more, "y": [sum(r) for r in more]})
        if held(pauses, "update_computed", call,
                "update (control): held at update_computed"):
            pauses.release("update_computed")
            r = call.result()
            m = (r.json() or {}).get("model", {}) if r else {}
            check(r is not None and r.status == 201 and m.get("version") == 2 and
                  m.get("n_samples") == len(X) + len(more),
                  "update (control): released, it is version 2 with the rows", r)
        # across a delete and a fit of the same name
        check(d.req("DELETE", "/v1/models/u").status == 204, "u deleted")
        check(d.req("POST", "/v1/models/u/fit", keep(1.0, X)).status == 201,
              "u fitted again (version 1)")
        pauses.arm("update_computed")
        call = Call(d, "POST", "/v1/models/u/update",
                    {"X": more, "y": [sum(r) for r in more]})
        if held(pauses, "update_computed", call,
                "update across a delete: held at update_computed"):
            check(d.req("DELETE", "/v1/models/u").status == 204,
                  "update across a delete: u deleted while it is held")
            check(d.req("POST", "/v1/models/u/fit", keep(2.0, X)).status == 201,
                  "update across a delete: u fitted again (version 1, alpha 2)")
            pauses.release("update_computed")
            r = call.result()
            check(r is not None and r.status == 409 and
                  "deleted and fitted again" in r.body,
                  "update across a delete: 409 naming it", r)
            for when in ("now", "after a restart"):
                m = d.req("GET", "/v1/models/u").json() or {}
                check(m.get("version") == 1 and m.get("n_samples") == len(X) and
                      (m.get("params") or {}).get("alpha") == 2.0,
                      f"update across a delete ({when}): the new life's version "
                      f"1 serves, without the update's rows", m)
                if when == "now":
                    d.stop()
                    start(d, pauses)
    finally:
        d.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build",
                                                     "kmserve"))
    ap.add_argument("--only", default="", help="comma-separated scenarios")
    args = ap.parse_args()
    binary = os.path.abspath(args.server)
    scenarios = [scenario_delete_is_final, scenario_delete_is_final_replicas,
                 scenario_gone_is_404, scenario_replicas_in_turn,
                 scenario_replicas_held_commit, scenario_replicas_hammer,
                 scenario_lockless_writer, scenario_scan_beside_listing,
                 scenario_scan_beside_commit,
                 scenario_scan_beside_refused_commit,
                 scenario_foreign_keep_link, scenario_update_across_delete]
    return run.run_scenarios(scenarios, binary, "kmserve-races-", args.only)


if __name__ == "__main__":
    sys.exit(main())
