#!/usr/bin/python3
"""A lifecycle stress test of the store's promises (issue 24), with a ledger.

Two replicas, A and B, share one models directory (--keep-versions 3,
--watch-interval 0, so that they scan only when told: at start and on
SIGHUP). Client threads do everything at once for --seconds (bounded by
--max-ops a thread too): synchronous fits, deletes, rollbacks, pinned
(/versions/{v}/predict) and unpinned /v1 predicts, pinned and unpinned /v2
infers, listings of /v1/models/{name}/versions followed by a pinned predict
of each version listed; one more thread sends SIGHUP to each replica in
turn. Four names: a_krr written only through A, b_svc only through B
(their writer serves them as one linearizable store), s_krr and s_svc
written through both (in turns, the last writer wins). Reads of every
name go to both.

Content. Every fit's body is new random data; before it is sent, a third
daemon (the oracle, its own directory, the same binary) fits the same body
and records its exact answers to the probe rows (/v1 predictions, svc's
decision_function and labels, /v2 outputs). So an answer of a replica
names exactly one content, and a content one fit: an answer equal to no
recorded one (to the bit) is a torn answer.

The ledger holds every request: replica, name, what it asked (the
content fitted, the version pinned or restored), the time it was sent and
the time its answer was received (monotonic clock), status, answer.
A write is acknowledged (201 fit, 200 rollback, 204 delete), refused (4xx,
429, 503: it changed nothing) or unknown (no answer, other 5xx: it may
have happened). Nothing waits on a timer: only intervals are compared. A
replica "knows" a write W at time t when it made W and W's answer came
before t, or when W's answer came before a SIGHUP sent to it whose "rescan"
log line was seen before t (that scan started after W). What may be
answered, linearizability-style:

  - Unpinned reads: the answer (a content and its version, or 404) must
    come from a write X that started before the read and is not
    superseded by a write Y the replica knows when the read is sent
    (Y.sent > X.answered); 404 needs such a delete, or no write known. A
    read overlapping a write may so answer either side of it; one sent
    after the replica knows the write may not answer what it replaced.
    For the replica that did not make a write, "knows" waits for its next
    scan, as docs/operations.md says (the other serves its previous state
    until then).
  - Deleted content: a content whose fit was answered before a delete of
    its name was sent belongs to an ended life. Once the replica knows
    the delete, no read of any kind (pinned included) may answer it, and
    no rollback sent after the delete's answer may restore it (rollback
    re-publishes a version of the same life only). A fit overlapping the
    delete may land on either side and may answer after it.
  - Versions: every answer's version must be one its content was
    acknowledged with (a fit's version, or a rollback's new version when it
    restored a version the content held), and a pinned answer names the
    version asked for. No two acknowledged writes of one life of a name
    (no delete can fall between them) share a version number, whichever
    replicas made them: replicas take turns on a name and number a write
    after the file on disk (docs/operations.md, the store's promises).
  - Kept versions: an acknowledged version X must answer, with its content,
    on a replica that knows X, when no delete and at most K-1 writes (of
    any outcome, on either replica) follow or overlap it: the K newest
    acknowledged versions are on disk, also for a name both replicas write.
  - Listing: each version listed answers the pinned predict that follows,
    or is 404 only when a write to the name (any replica, any outcome)
    or a scan of that replica overlapped the time from the listing's
    send to the predict's answer; no entry is an error object.
  - No 5xx but 503, no request left without an answer, no error event
    (quarantine, unreadable or unstored file) in either replica's log.

At the end: a SIGHUP to both; both must answer the same for every name
(the file on disk), and that answer must satisfy the rules above with
every write known; then both restart, and each answers what it answered
before; every version listed answers; every version the ledger says must
still exist answers its content. The analysis first checks itself on small
hand-made ledgers (each rule flags what it should), so a rule that cannot
fail is caught.

Usage, from the project root:
    /usr/bin/python3 tests/integration/lifecycle.py --server build/kmserve
    [--seconds 20] [--threads 6] [--max-ops N] [--seed 1] [--ledger FILE]
Under ThreadSanitizer (.ci/run sets KM_IT_BIG) the defaults are smaller:
12 s, 4 threads. Ends with the line "N passed, N failed"; exits 1 if any
failed.
"""
import argparse
import bisect
import collections
import http.client
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

now = time.monotonic
INF = float("inf")
K = 3  # --keep-versions of the replicas
TIMEOUT = 180  # seconds a request may take (TSan, a loaded machine)

# name: (algorithm, the one replica that writes it, or None: both)
NAMES = {"a_krr": ("krr", "A"), "b_svc": ("svc", "B"),
         "s_krr": ("krr", None), "s_svc": ("svc", None)}
PROBE = [[0.3, -0.2], [1.1, 0.7], [-0.9, 1.4]]

ACKED = {"fit": {201}, "rollback": {200}, "delete": {204}}
REFUSED = {"fit": {400, 404, 409, 413, 415, 422, 429, 503},
           "rollback": {400, 404, 409, 413, 429, 503},
           "delete": {400, 404, 503}}
ALLOWED = {"fit": {201, 429, 503}, "rollback": {200, 404, 409, 413, 429, 503},
           "delete": {204, 404, 503}, "read": {200, 404, 413, 503},
           "list": {200, 404, 503}}

C_STATUS = "every request answered, and no 5xx but 503"
C_TORN = "no torn answer: every 200 answer is exactly one fitted content's"
C_LABEL = ("every answer's version is one its content was acknowledged as; "
           "a pinned answer names the version asked")
C_DEAD = "no content of a deleted life answers once the replica knows the delete"
C_STALE = ("no unpinned answer older than a write the replica knows "
           "(404 only after a delete)")
C_KEPT = "acknowledged versions within --keep-versions answer with their content"
C_UNIQUE = "no two acknowledged writes of one life of a name share a version"
C_LIST = "the listing shows only versions that exist"
C_ROLLBACK = "no rollback sent after a delete's answer restores the deleted life"
RULES = (C_STATUS, C_TORN, C_LABEL, C_UNIQUE, C_DEAD, C_STALE, C_KEPT,
         C_LIST, C_ROLLBACK)


class Op:
    """One request of the ledger."""
    __slots__ = ("kind", "rep", "name", "send", "recv", "status", "text",
                 "cid", "label", "restored", "pinned", "sig_kind", "sig",
                 "listing", "listed", "errors", "phase", "outcome")

    def __init__(self, kind, rep, name, **kw):
        self.kind, self.rep, self.name = kind, rep, name
        self.send = self.recv = None
        self.status = 0
        self.text = ""
        self.cid = self.label = self.restored = self.pinned = None
        self.sig_kind = self.sig = self.listing = None
        self.listed, self.errors = [], []
        self.phase = "run"
        self.outcome = None
        for k, v in kw.items():
            setattr(self, k, v)

    def __repr__(self):
        what = {"fit": f" content {self.cid}", "rollback": f" to {self.restored}",
                "read": f" pinned {self.pinned}" if self.pinned else " unpinned",
                }.get(self.kind, "")
        ans = ""
        if self.kind == "read" and self.status == 200:
            ans = f" -> content {self.cid} version {self.label}"
        elif self.kind in ("fit", "rollback") and self.label is not None:
            ans = f" -> version {self.label}"
        elif self.kind == "list":
            ans = f" -> {self.listed}"
        return (f"[{self.kind}{what} {self.name} on {self.rep} "
                f"{self.send:.4f}..{self.recv:.4f} {self.status}{ans}]")


def other(rep):
    return "B" if rep == "A" else "A"


def classify(op):
    if op.kind not in ACKED:
        return None
    if op.status in ACKED[op.kind]:
        return "ack"
    if op.status in REFUSED[op.kind]:
        return "refused"
    return "unknown"


# ---------------------------------------------------------------- analysis

class Analysis:
    """The rules of the docstring over a finished ledger. ops: every Op;
    scans: {rep: [(sent, seen done)]}; table: {(sig_kind, sig): cid};
    fit_of: {cid: the fit Op}. failures: {rule: [text]}."""

    def __init__(self, ops, scans, table, fit_of, keep=K):
        self.ops, self.table, self.fit_of, self.keep = ops, table, fit_of, keep
        self.failures = {r: [] for r in RULES}
        self.counts = collections.Counter()
        for op in ops:
            op.outcome = classify(op)
            if op.recv is None:
                op.recv = INF
        # scans of each replica, by the time they were seen done
        self.scans = {r: sorted(scans.get(r, []), key=lambda s: s[1])
                      for r in ("A", "B")}
        self.scan_done, self.scan_pmax = {}, {}
        for rep in ("A", "B"):
            ss = sorted(scans.get(rep, []), key=lambda s: s[1])
            self.scan_done[rep] = [s[1] for s in ss]
            pm, m = [], -INF
            for s in ss:
                m = max(m, s[0])
                pm.append(m)
            self.scan_pmax[rep] = pm
        self.by_name = {}
        for name in {op.name for op in ops}:
            self.by_name[name] = self._index(name)

    def fail(self, rule, text):
        self.failures[rule].append(text)

    # -- indexes
    def _index(self, name):
        ix = {}
        ops = [op for op in self.ops if op.name == name]
        writes = [op for op in ops if op.outcome in ("ack", "unknown")]
        writes.sort(key=lambda op: op.send)
        ix["writes"] = writes
        ix["deletes"] = [w for w in writes if w.kind == "delete"]
        ix["write_send"] = [w.send for w in writes]
        durations = [w.recv - w.send for w in writes]
        ix["maxdur"] = max(durations) if durations else 0.0
        # acknowledged writes of each replica by answer time, with the
        # latest send among them so far (what supersedes)
        ix["acked"] = {}
        for rep in ("A", "B"):
            ws = sorted((w for w in writes if w.outcome == "ack" and
                         w.rep == rep), key=lambda w: w.recv)
            pm, m = [], -INF
            for w in ws:
                m = max(m, w.send)
                pm.append(m)
            ix["acked"][rep] = ([w.recv for w in ws], pm)
        # acknowledged deletes by send, with the earliest answer from there
        # on, for each replica (deleted content)
        dels = sorted((w for w in writes if w.kind == "delete" and
                       w.outcome == "ack"), key=lambda w: w.send)
        ix["del_send"] = [d.send for d in dels]
        ix["del_sufmin"] = {}
        for rep in ("A", "B", None):
            suf, m = [INF] * (len(dels) + 1), INF
            for i in range(len(dels) - 1, -1, -1):
                if rep is None or dels[i].rep == rep:
                    m = min(m, dels[i].recv)
                suf[i] = m
            ix["del_sufmin"][rep] = suf
        # labels: which contents a version number may hold
        fits = [op for op in ops if op.kind == "fit" and op.outcome != "refused"]
        any_label = {f.cid for f in fits if f.label is None}
        label_cids = collections.defaultdict(set)
        for f in fits:
            if f.label is not None:
                label_cids[f.label].add(f.cid)
        rbs = sorted((op for op in writes if op.kind == "rollback"),
                     key=lambda op: op.send)
        changed = True
        while changed:
            changed = False
            for rb in rbs:
                src = label_cids.get(rb.restored, set())
                if rb.label is None:
                    new = src - any_label
                    if new:
                        any_label |= new
                        changed = True
                else:
                    new = src - label_cids[rb.label]
                    if new:
                        label_cids[rb.label] |= new
                        changed = True
        ix["any_label"], ix["label_cids"] = any_label, label_cids

        def by_send(cids):
            """The fits of cids by send, with the latest answer so far."""
            fs = sorted((self.fit_of[c] for c in cids), key=lambda f: f.send)
            pm, m = [], -INF
            for f in fs:
                m = max(m, f.recv)
                pm.append(m)
            return [f.send for f in fs], pm
        ix["label_by_send"] = {lab: by_send(cs) for lab, cs in
                               label_cids.items()}
        ix["any_by_send"] = by_send(any_label)
        acked_dels = sorted((w for w in writes if w.kind == "delete" and
                             w.outcome == "ack"), key=lambda w: w.recv)
        pm, m = [], -INF
        for d in acked_dels:
            m = max(m, d.send)
            pm.append(m)
        ix["dels_by_recv"] = [d.recv for d in acked_dels]
        ix["dels_pmax_send"] = pm
        ix["rb_by_label"] = collections.defaultdict(list)
        for rb in rbs:
            ix["rb_by_label"][rb.label].append(rb)
        by_label = collections.defaultdict(list)
        for w in sorted(writes, key=lambda w: w.recv):
            if w.outcome == "ack" and w.kind in ("fit", "rollback"):
                by_label[w.label].append(w)
        ix["acked_by_label"] = {lab: ([w.recv for w in ws], ws)
                                for lab, ws in by_label.items()}
        # deletes that may have happened by send, the latest answer so far
        pm, m = [], -INF
        for w in ix["deletes"]:
            m = max(m, w.recv)
            pm.append(m)
        ix["del_send_all"] = [w.send for w in ix["deletes"]]
        ix["del_pmax_recv"] = pm
        return ix

    def bound(self, rep, t):
        """The latest send of a scan of rep seen done before t."""
        i = bisect.bisect_left(self.scan_done[rep], t)
        return self.scan_pmax[rep][i - 1] if i else -INF

    def knows(self, w, rep, t):
        return (w.rep == rep and w.recv < t) or w.recv < self.bound(rep, t)

    def superseding(self, ix, rep, t):
        """The latest send among the acknowledged writes rep knows at t."""
        m = -INF
        for r, lim in ((rep, t), (other(rep), self.bound(rep, t))):
            recvs, pm = ix["acked"][r]
            i = bisect.bisect_left(recvs, lim)
            if i:
                m = max(m, pm[i - 1])
        return m

    def holds(self, ix, cid, label):
        return cid in ix["any_label"] or cid in ix["label_cids"].get(label, ())

    def producers(self, ix, cid, label):
        """Writes that may have made content cid current as version label."""
        f = self.fit_of.get(cid)
        if f and f.outcome != "refused" and f.label in (label, None):
            yield f
        for lab in (label, None):
            for rb in ix["rb_by_label"].get(lab, ()):
                if self.holds(ix, cid, rb.restored):
                    yield rb

    def dead(self, ix, cid, rep, t):
        """The acknowledged delete that ended cid's life and that rep knows
        at t (rep None: any delete answered before t), or None."""
        f = self.fit_of[cid]
        i = bisect.bisect_right(ix["del_send"], f.recv)
        if rep is None:
            return ix["del_sufmin"][None][i] < t
        return (ix["del_sufmin"][rep][i] < t or
                ix["del_sufmin"][other(rep)][i] < self.bound(rep, t))

    def must_exist(self, ix, rep, label, ts, tr):
        """The acknowledged writes of version label that must still be
        there, on rep, for a request sent at ts and answered at tr."""
        out = []
        recvs, xs = ix["acked_by_label"].get(label, ((), ()))
        # At most keep - 1 writes may be sent between X's answer and tr.
        n = bisect.bisect_left(ix["write_send"], tr)
        lo = ix["write_send"][n - self.keep] if n >= self.keep else -INF
        for i in range(bisect.bisect_left(recvs, lo),
                       bisect.bisect_left(recvs, ts)):
            x = xs[i]
            if not self.knows(x, rep, ts):
                continue
            j = bisect.bisect_left(ix["write_send"], x.send - ix["maxdur"])
            later, ok, writes = 0, True, ix["writes"]
            for k in range(j, len(writes)):
                w = writes[k]
                if w.send >= tr:
                    break
                if w is x or w.recv <= x.send:
                    continue
                later += 1
                if w.kind == "delete" or later > self.keep - 1:
                    ok = False
                    break
            if ok:
                out.append(x)
        return out

    def content_of(self, ix, x, cid):
        """Whether write x may have made content cid current."""
        return cid == x.cid if x.kind == "fit" else self.holds(ix, cid,
                                                                x.restored)

    def latest_delete(self, ix, t):
        """The latest send among the acknowledged deletes answered before
        t: a content whose fit was answered before it is deleted at t."""
        i = bisect.bisect_left(ix["dels_by_recv"], t)
        return ix["dels_pmax_send"][i - 1] if i else -INF

    # -- the rules
    def run(self):
        for op in self.ops:
            self.counts[f"{op.kind} {op.status}"] += 1
            if op.status not in ALLOWED[op.kind]:
                self.fail(C_STATUS, f"{op!r}: {op.text[:300]}")
        for op in self.ops:
            ix = self.by_name[op.name]
            if op.kind == "read":
                self.read(ix, op)
            elif op.kind == "rollback":
                self.rollback(ix, op)
            elif op.kind == "list" and op.status == 200 and op.errors:
                self.fail(C_LIST, f"{op!r} lists error entries {op.errors}")
        for ix in self.by_name.values():
            self.unique(ix)
        return self

    def between(self, ix, x, y):
        """Whether a delete (of any outcome) may have come after x's commit
        and before y's: answered after x was sent, sent before y's answer."""
        i = bisect.bisect_left(ix["del_send_all"], y.recv)
        return i > 0 and ix["del_pmax_recv"][i - 1] > x.send

    def unique(self, ix):
        """Two acknowledged writes of one version number with no delete
        that could fall between their commits, in either order."""
        for label, (_, xs) in ix["acked_by_label"].items():
            xs = sorted(xs, key=lambda w: w.send)
            for x, y in zip(xs, xs[1:]):
                if not self.between(ix, x, y) and not self.between(ix, y, x):
                    self.fail(C_UNIQUE, f"{x!r} and {y!r}")

    def read(self, ix, op):
        if op.status == 200:
            cid = self.table.get((op.sig_kind, op.sig))
            op.cid = cid
            if cid is None or self.fit_of[cid].name != op.name:
                self.fail(C_TORN, f"{op!r}: {op.text[:300]}")
                return
            f = self.fit_of[cid]
            if f.outcome == "refused":
                self.fail(C_TORN, f"{op!r}: the content of a refused fit {f!r}")
                return
            if op.pinned is not None and op.label != op.pinned:
                self.fail(C_LABEL, f"{op!r}: asked for version {op.pinned}")
            if not any(x.send < op.recv for x in
                       self.producers(ix, cid, op.label)):
                self.fail(C_LABEL, f"{op!r}: content {cid} was never "
                          f"acknowledged as version {op.label} ({f!r})")
            if self.dead(ix, cid, op.rep, op.send):
                self.fail(C_DEAD, f"{op!r}: content {cid} of {f!r} was "
                          "deleted")
        if op.pinned is None and op.status in (200, 404):
            m = self.superseding(ix, op.rep, op.send)
            if op.status == 200:
                ok = any(x.recv >= m and x.send < op.recv for x in
                         self.producers(ix, op.cid, op.label))
            else:
                i = bisect.bisect_left(ix["del_send_all"], op.recv)
                ok = m == -INF or (i and ix["del_pmax_recv"][i - 1] >= m)
            if not ok:
                known = [w for w in ix["writes"] if w.outcome == "ack" and
                         w.send == m]
                self.fail(C_STALE, f"{op!r} though {op.rep} knows {known}")
        if op.pinned is not None and op.status in (200, 404):
            need = self.must_exist(ix, op.rep, op.pinned, op.send, op.recv)
            if need:
                self.counts["pinned reads of versions that must answer"] += 1
                if op.status != 200 or not any(
                        self.content_of(ix, x, op.cid) for x in need):
                    self.fail(C_KEPT, f"{op!r} though {need} must be there")
            elif op.status == 404 and op.listing is not None:
                ls = op.listing
                ws = ix["writes"]
                moved = any(
                    ws[k].recv > ls.send for k in range(
                        bisect.bisect_left(ix["write_send"],
                                           ls.send - ix["maxdur"]),
                        bisect.bisect_left(ix["write_send"], op.recv)))
                # scans of one replica are one after another: the first
                # done after the listing was sent is the one to look at
                k = bisect.bisect_right(self.scan_done[op.rep], ls.send)
                scanned = (k < len(self.scans[op.rep]) and
                           self.scans[op.rep][k][0] < op.recv)
                if not moved and not scanned:
                    self.fail(C_LIST, f"{ls!r} then {op!r}, nothing between")

    def rollback(self, ix, op):
        if op.status == 404:
            need = self.must_exist(ix, op.rep, op.restored, op.send, op.recv)
            if need:
                self.fail(C_KEPT, f"{op!r} though {need} must be there")
        if op.status != 200:
            return
        # the contents that may have been that version (fitted before the
        # rollback's answer): all deleted when the latest answered is
        ended = self.latest_delete(ix, op.send)
        seen, alive = False, False
        for sends, pm in (ix["label_by_send"].get(op.restored, ((), ())),
                          ix["any_by_send"]):
            i = bisect.bisect_left(sends, op.recv)
            seen = seen or i > 0
            alive = alive or (i > 0 and pm[i - 1] >= ended)
        if not seen:
            self.fail(C_LABEL, f"{op!r}: no content was ever version "
                      f"{op.restored}")
        elif not alive:
            self.fail(C_ROLLBACK, f"{op!r} restored deleted content")


def self_test():
    """Each rule flags a hand-made ledger that breaks it, and passes one
    that keeps it: the analysis can fail."""
    def fit(cid, rep, name, s, r, label, status=201):
        op = Op("fit", rep, name, cid=cid, label=label)
        op.send, op.recv, op.status = s, r, status
        return op

    def op(kind, rep, name, s, r, status, **kw):
        o = Op(kind, rep, name, **kw)
        o.send, o.recv, o.status = s, r, status
        return o

    def read(rep, name, s, r, status, cid=None, label=None, pinned=None,
             listing=None):
        o = op("read", rep, name, s, r, status, pinned=pinned,
               listing=listing, sig_kind="k", sig=str(cid), label=label)
        return o

    def analyse(ops, scans=None):
        fits = [o for o in ops if o.kind == "fit"]
        table = {("k", str(f.cid)): f.cid for f in fits}
        fit_of = {f.cid: f for f in fits}
        a = Analysis(ops, scans or {}, table, fit_of).run()
        return {r for r, v in a.failures.items() if v}

    n = "s_krr"
    f1, f2, f3 = (fit(1, "A", n, 0, 1, 1), fit(2, "A", n, 2, 3, 2),
                  fit(3, "A", n, 4, 5, 3))
    d = op("delete", "A", n, 6, 7, 204)
    cases = [
        ("a read after its replica's delete answering the deleted content",
         [f1, d, read("A", n, 8, 9, 200, 1, 1)], None, {C_DEAD, C_STALE}),
        ("the same read overlapping the delete", [f1, d, read("A", n, 6.5, 9,
                                                              200, 1, 1)],
         None, set()),
        ("the other replica before its scan",
         [f1, d, read("B", n, 8, 9, 200, 1, 1)], None, set()),
        ("the other replica after a scan sent after the delete",
         [f1, d, read("B", n, 9, 10, 200, 1, 1)], {"B": [(7.5, 8.5)]},
         {C_DEAD, C_STALE}),
        ("an answer that is no content", [f1, read("A", n, 2, 3, 200, 99, 1)],
         None, {C_TORN}),
        ("an answer with another content's version",
         [f1, f2, read("A", n, 4, 5, 200, 1, 2)], None, {C_LABEL, C_STALE}),
        ("an older content after a newer fit's answer",
         [f1, f2, read("A", n, 4, 5, 200, 1, 1)], None, {C_STALE}),
        ("a pinned read of a kept version answering 404",
         [f1, f2, f3, read("A", n, 6, 7, 404, pinned=1)], None, {C_KEPT}),
        ("a pinned read of a pruned version answering 404",
         [f1, f2, f3, fit(4, "A", n, 6, 7, 4),
          read("A", n, 8, 9, 404, pinned=1)], None, set()),
        ("a rollback restoring a deleted version",
         [f1, f2, d, fit(4, "A", n, 8, 9, 1),
          op("rollback", "A", n, 10, 11, 200, restored=2, label=2)], None,
         {C_ROLLBACK}),
        ("a pinned read answered by another version",
         [f1, f2, read("A", n, 4, 5, 200, 2, 2, pinned=1)], None,
         {C_LABEL, C_KEPT}),
        ("a pinned read of another replica's unknown version answering 404",
         [f1, f2, read("B", n, 4, 5, 404, pinned=1)], None, set()),
        ("a 500", [f1, read("A", n, 2, 3, 500, pinned=1)], None, {C_STATUS}),
        ("two fits of one life acknowledged as one version",
         [f1, fit(2, "B", n, 2, 3, 1)], None, {C_UNIQUE}),
        ("two fits of one version with a delete between",
         [f1, op("delete", "B", n, 1.5, 1.8, 204), fit(2, "B", n, 2, 3, 1)],
         None, set()),
        ("two overlapping fits of one version, the later sent answered "
         "first, a delete between", [fit(1, "A", n, 0, 5, 1),
                                     fit(2, "A", n, 1, 2, 1),
                                     op("delete", "A", n, 3, 4, 204)],
         None, set()),
    ]
    ls = op("list", "B", n, 6, 7, 200, listed=[2, 1])
    cases.append(("a listed version that is 404 with nothing between",
                  [f1, f2, ls, read("B", n, 8, 9, 404, pinned=1, listing=ls)],
                  None, {C_LIST}))
    cases.append(("a listed version that is 404 after a write",
                  [f1, f2, ls, fit(3, "A", n, 7.5, 8.5, 3),
                   read("B", n, 8, 9, 404, pinned=1, listing=ls)],
                  None, set()))
    for title, ops, scans, want in cases:
        got = analyse([copy_op(o) for o in ops], scans)
        check(got == want, f"analysis self-test: {title} flags "
              f"{sorted(want) or 'nothing'}", sorted(got))


def copy_op(o):
    c = Op(o.kind, o.rep, o.name)
    for k in Op.__slots__:
        setattr(c, k, getattr(o, k))
    c.recv = o.recv
    return c


# ---------------------------------------------------------------- the world

def body_of(algo, cid, rng):
    if algo == "krr":
        X = [[rng.uniform(-2, 2), rng.uniform(-2, 2)] for _ in range(8)]
        return {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.5},
                "params": {"alpha": 0.1, "keep_factor": True}, "X": X,
                "y": [rng.uniform(-3, 3) for _ in X]}
    X = ([[rng.gauss(-1, 0.7), rng.gauss(0, 0.7)] for _ in range(6)] +
         [[rng.gauss(1, 0.7), rng.gauss(0, 0.7)] for _ in range(6)])
    return {"algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.5},
            "params": {"C": 2.0}, "X": X,
            "y": [f"p{cid}"] * 6 + [f"q{cid}"] * 6}


def read_kinds(algo):
    """(sig_kind, api, v1 output) of the reads a name of algo gets."""
    if algo == "krr":
        return [("v1", "v1", None), ("v2", "v2", None)]
    return [("v1-label", "v1", None), ("v1-df", "v1", "decision_function"),
            ("v2", "v2", None)]


def read_request(name, algo, api, output, pinned):
    at = f"/versions/{pinned}" if pinned else ""
    if api == "v1":
        body = {"X": PROBE}
        if output:
            body["output"] = output
        return f"/v1/models/{name}{at}/predict", body
    body = {"inputs": [{"name": "X", "datatype": "FP64", "shape": [3, 2],
                        "data": [v for r in PROBE for v in r]}]}
    if algo == "svc":
        body["outputs"] = [{"name": "labels"}, {"name": "decision_values"}]
    return f"/v2/models/{name}{at}/infer", body


def signature(api, reply):
    """(the answer's values as exact text, its version), or (None, None)."""
    j = reply.json() or {}
    try:
        if api == "v1":
            return json.dumps(j["predictions"]), int(j["model"]["version"])
        return (json.dumps([o["data"] for o in j["outputs"]]),
                int(j["model_version"]))
    except (KeyError, TypeError, ValueError):
        return None, None


class Client:
    """One thread's keep-alive connections, one per port (the daemons run
    with long header and connection timeouts, so they never close an idle
    one: no connection is lost between requests, and no port is spent on
    each)."""

    def __init__(self):
        self.conns = {}

    def call(self, port, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data else {}
        conn = self.conns.get(port)
        if conn is None:
            conn = self.conns[port] = http.client.HTTPConnection(
                "127.0.0.1", port, timeout=TIMEOUT)
        try:
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            raw = r.read()
            if (r.getheader("Connection") or "").lower() == "close":
                conn.close()
                del self.conns[port]
            return run.Reply(r.status, {k.lower(): v for k, v in
                                        r.getheaders()},
                             raw.decode("utf-8", "replace"), raw)
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            del self.conns[port]
            return run.Reply(0, {}, f"no answer: {e!r}")


class Replica:
    def __init__(self, tag, binary, models, base, *flags):
        self.tag = tag
        self.d = run.Daemon(binary, models, *flags)
        self.d.log.close()
        self.d.log_path = os.path.join(base, f"replica-{tag}.log")
        self.d.log = open(self.d.log_path, "ab")
        self.log_at, self.rescans = 0, 0

    def start(self, scans):
        t0 = now()
        self.d.start()
        scans.setdefault(self.tag, []).append((t0, now()))
        return self

    def count_rescans(self):
        with open(self.d.log_path, "rb") as f:
            f.seek(self.log_at)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.rescans += data[:end].count(b'"event":"rescan"')
        self.log_at += end
        return self.rescans

    def rescan(self, scans):
        """SIGHUP, then wait for the rescan's log line: the scan started
        after the signal and ended before this returns. Only one thread
        sends SIGHUP, after the previous one's line, so no signal is
        merged into a scan already running."""
        n = self.count_rescans()
        t0 = now()
        self.d.proc.send_signal(signal.SIGHUP)
        while self.count_rescans() <= n:
            if now() - t0 > TIMEOUT or self.d.proc.poll() is not None:
                return False
            time.sleep(0.002)
        scans.setdefault(self.tag, []).append((t0, now()))
        return True


class World:
    def __init__(self, reps, oracle, seed):
        self.reps, self.oracle = reps, oracle
        self.lock = threading.Lock()
        self.local = threading.local()
        self.ops, self.table, self.fit_of = [], {}, {}
        self.scans = {}
        self.cid = 0
        self.top = {n: 0 for n in NAMES}
        self.collisions = []
        self.oracle_failures = []
        self.seed = seed

    def call(self, port, method, path, body=None):
        c = getattr(self.local, "client", None)
        if c is None:
            c = self.local.client = Client()
        return c.call(port, method, path, body)

    def request(self, op, method, path, body=None):
        port = self.reps[op.rep].d.port
        op.send = now()
        r = self.call(port, method, path, body)
        op.recv = now() if r.status else INF
        op.status = r.status
        if not 200 <= r.status < 300:
            op.text = r.body[:600]
        with self.lock:
            self.ops.append(op)
        return r

    def saw(self, name, label):
        """The name's version as the latest answer of a write or listing
        gave it (0 after a delete), around which pinned reads and rollbacks
        pick theirs: so they follow the name's life."""
        if isinstance(label, int):
            self.top[name] = label

    def learn(self, tid, name, algo, rng):
        """A new content for name: the oracle's exact answers first."""
        with self.lock:
            self.cid += 1
            cid = self.cid
        body = body_of(algo, cid, rng)
        oname = f"o{tid}"
        r = self.call(self.oracle.port, "POST", f"/v1/models/{oname}/fit",
                      body)
        if r.status != 201:
            self.oracle_failures.append(r)
            return None, None
        sigs = []
        for kind, api, output in read_kinds(algo):
            path, b = read_request(oname, algo, api, output, None)
            a = self.call(self.oracle.port, "POST", path, b)
            sig, _ = signature(api, a)
            if a.status != 200 or sig is None:
                self.oracle_failures.append(a)
                return None, None
            sigs.append((kind, sig))
        with self.lock:
            if any(s in self.table for s in sigs):
                self.collisions.append(cid)
                return None, None
            for s in sigs:
                self.table[s] = cid
        return cid, body

    # -- the operations
    def fit(self, tid, rng, name):
        algo, owner = NAMES[name]
        cid, body = self.learn(tid, name, algo, rng)
        if cid is None:
            return
        op = Op("fit", owner or rng.choice("AB"), name, cid=cid)
        with self.lock:
            self.fit_of[cid] = op
        r = self.request(op, "POST", f"/v1/models/{name}/fit", body)
        if r.status == 201:
            op.label = (r.json() or {}).get("model", {}).get("version")
            self.saw(name, op.label)

    def version(self, rng, name):
        return max(1, self.top[name] - rng.randint(-1, K))

    def rollback(self, rng, name):
        _, owner = NAMES[name]
        v = self.version(rng, name)
        op = Op("rollback", owner or rng.choice("AB"), name, restored=v)
        r = self.request(op, "POST", f"/v1/models/{name}/rollback",
                         {"version": v})
        if r.status == 200:
            j = r.json() or {}
            op.label = j.get("model", {}).get("version")
            if j.get("restored_version") != v:
                op.status = -200  # reported as a wrong answer
            self.saw(name, op.label)
            # what it restored, as a read of its new version
            self.read(rng, name, op.rep, pinned=op.label)

    def delete(self, rng, name):
        _, owner = NAMES[name]
        op = Op("delete", owner or rng.choice("AB"), name)
        if self.request(op, "DELETE", f"/v1/models/{name}").status == 204:
            self.saw(name, 0)

    def read(self, rng, name, rep=None, pinned=None, listing=None,
             kind=None):
        algo = NAMES[name][0]
        sig_kind, api, output = kind or rng.choice(read_kinds(algo))
        op = Op("read", rep or rng.choice("AB"), name, pinned=pinned,
                listing=listing, sig_kind=sig_kind)
        path, body = read_request(name, algo, api, output, pinned)
        r = self.request(op, "POST", path, body)
        if r.status == 200:
            op.sig, op.label = signature(api, r)
        return op

    def listing(self, rng, name, rep=None):
        op = Op("list", rep or rng.choice("AB"), name)
        r = self.request(op, "GET", f"/v1/models/{name}/versions")
        if r.status == 200:
            vs = (r.json() or {}).get("versions") or []
            op.listed = [e.get("version") for e in vs]
            op.errors = [e for e in vs if "error" in e]
            if op.listed:
                self.saw(name, op.listed[0])
            for v in op.listed:
                if isinstance(v, int):
                    self.read(rng, name, op.rep, pinned=v, listing=op,
                              kind=read_kinds(NAMES[name][0])[0])
        return op

    def client(self, tid, deadline, max_ops):
        rng = random.Random(self.seed * 1000 + tid)
        choices = [("fit", 3.0), ("delete", 0.35), ("rollback", 1.2),
                   ("unpinned", 3.5), ("pinned", 2.5), ("list", 0.8)]
        total = sum(w for _, w in choices)
        for _ in range(max_ops):
            if now() >= deadline:
                break
            name = rng.choice(sorted(NAMES))
            x, what = rng.uniform(0, total), choices[-1][0]
            for c, w in choices:
                if x < w:
                    what = c
                    break
                x -= w
            if what == "fit":
                self.fit(tid, rng, name)
            elif what == "delete":
                self.delete(rng, name)
            elif what == "rollback":
                self.rollback(rng, name)
            elif what == "unpinned":
                self.read(rng, name)
            elif what == "pinned":
                self.read(rng, name, pinned=self.version(rng, name))
            else:
                self.listing(rng, name)

    def hup(self, stop, rng, lost):
        i = 0
        while not stop.is_set():
            rep = self.reps["AB"[i % 2]]
            i += 1
            if not rep.rescan(self.scans):
                lost.append(rep.tag)
                return
            time.sleep(rng.uniform(0, 0.03))  # pacing only: staleness windows


def final_reads(world, phase):
    """Each name's unpinned answer on each replica: {(name, rep): (status,
    sig_kind, sig, version)}."""
    rng = random.Random(7)
    out = {}
    for name in sorted(NAMES):
        for rep in "AB":
            op = world.read(rng, name, rep,
                            kind=read_kinds(NAMES[name][0])[0])
            op.phase = phase
            out[(name, rep)] = (op.status, op.sig, op.label)
    return out


def write_ledger(path, world):
    """The ledger and the scans as JSON lines, times on the wall clock."""
    shift = time.time() - now()
    with open(path, "w") as f:
        for op in world.ops:
            rec = {k: getattr(op, k) for k in Op.__slots__
                   if k not in ("listing", "text")}
            rec["send"] += shift
            rec["recv"] = rec["recv"] + shift if rec["recv"] != INF else None
            if op.status != 200:
                rec["text"] = op.text[:300]
            f.write(json.dumps(rec) + "\n")
        for rep, ss in world.scans.items():
            for s, d in ss:
                f.write(json.dumps({"kind": "scan", "rep": rep,
                                    "send": s + shift, "recv": d + shift})
                        + "\n")


def error_events(path):
    bad = []
    with open(path, "rb") as f:
        for line in f.read().decode("utf-8", "replace").splitlines():
            if '"level":"error"' in line:
                bad.append(line)
    return bad


def main():
    big = bool(os.environ.get("KM_IT_BIG"))  # ThreadSanitizer (.ci/run)
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build",
                                                     "kmserve"))
    ap.add_argument("--seconds", type=float, default=12 if big else 20)
    ap.add_argument("--threads", type=int, default=4 if big else 6)
    ap.add_argument("--max-ops", type=int, default=0,
                    help="operations a client thread makes at most (default "
                    "300 a second of --seconds)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep-dir", action="store_true",
                    help="leave the models directory and logs for a look")
    ap.add_argument("--ledger", default="",
                    help="write the ledger there, one JSON line a request "
                    "(times: seconds of the wall clock)")
    args = ap.parse_args()
    binary = os.path.abspath(args.server)
    max_ops = args.max_ops or int(300 * args.seconds) + 1

    self_test()

    tmp = tempfile.mkdtemp(prefix="kmserve-life-")
    models = os.path.join(tmp, "models")
    os.makedirs(models)
    # krr keeps its factor, in block files (--factor-files-mib 0), so that
    # the versions' shared block links go through the same races
    flags = ("--keep-versions", str(K), "--watch-interval", "0",
             "--factor-files-mib", "0", "--workers", "2", "--header-timeout", "86400",
             "--connection-timeout", "86400")
    oracle_models = os.path.join(tmp, "oracle", "models")
    os.makedirs(oracle_models)
    oracle = run.Daemon(binary, oracle_models, *flags)
    reps = {t: Replica(t, binary, models, tmp, *flags) for t in "AB"}
    world = World(reps, oracle, args.seed)
    try:
        oracle.start()
        for rep in reps.values():
            rep.start(world.scans)
        run.tally.note(f"replicas A :{reps['A'].d.port}, B :{reps['B'].d.port} "
                       f"on {models}; oracle :{oracle.port}; {args.threads} "
                       f"clients for {args.seconds:g} s")
        stop, lost = threading.Event(), []
        deadline = now() + args.seconds
        hup = threading.Thread(target=world.hup,
                               args=(stop, random.Random(args.seed), lost))
        clients = [threading.Thread(target=world.client,
                                    args=(i, deadline, max_ops))
                   for i in range(args.threads)]
        hup.start()
        for t in clients:
            t.start()
        for t in clients:
            t.join()
        stop.set()
        hup.join()
        check(not lost, "every SIGHUP was followed by its rescan line", lost)
        check(not world.oracle_failures and not world.collisions,
              "the oracle answered every content, no two alike",
              (world.oracle_failures[:3], world.collisions[:3]))

        # Quiet: both rescan, then must agree (the files on disk).
        for rep in reps.values():
            check(rep.rescan(world.scans), f"final rescan of {rep.tag}")
        before = final_reads(world, "final")
        diverged = {n: (before[(n, "A")], before[(n, "B")]) for n in NAMES
                    if before[(n, "A")] != before[(n, "B")]}
        check(not diverged, "after a rescan both replicas answer the same "
              "for every name", diverged)

        for rep in reps.values():
            rc = rep.d.stop()
            check(rc == 0, f"replica {rep.tag} drains and exits 0", rc)
        for rep in reps.values():
            rep.start(world.scans)
        after = final_reads(world, "restart")
        changed = {k: (before[k], after[k]) for k in before
                   if before[k] != after[k]}
        check(not changed, "after a restart each replica answers what it "
              "answered before", changed)
        # Every version listed, and the newest versions acknowledged since
        # the name's last delete: the analysis says which must answer.
        rng = random.Random(11)
        for name in sorted(NAMES):
            ops = [op for op in world.ops if op.name == name and
                   op.kind in ACKED and classify(op) != "refused"]
            last = max([op.recv if op.status else INF for op in ops
                        if op.kind == "delete"] + [-INF])
            labels = sorted({op.label for op in ops if op.kind != "delete" and
                             op.label and op.send > last})[-(K + 2):]
            for rep in "AB":
                world.listing(rng, name, rep)
                for v in labels:
                    world.read(rng, name, rep, pinned=v)

        a = Analysis(world.ops, world.scans, world.table, world.fit_of).run()
        if args.ledger:
            write_ledger(args.ledger, world)
        c = a.counts
        kinds = collections.Counter(
            (op.kind + (" pinned" if op.pinned else "") +
             (" " + op.sig_kind if op.sig_kind else "")) for op in world.ops)
        run.tally.note("requests: " + ", ".join(
            f"{k} {v}" for k, v in sorted(kinds.items())))
        run.tally.note("outcomes: " + ", ".join(
            f"{k}: {v}" for k, v in sorted(c.items())))
        run.tally.note(f"rescans: A {len(world.scans.get('A', []))}, "
                       f"B {len(world.scans.get('B', []))}")
        for rule in RULES:
            f = a.failures[rule]
            check(not f, rule, f"{len(f)} times; first: " + "\n  ".join(f[:6]))
        # The run did exercise what it claims to.
        check(c["fit 201"] >= 8 and c["delete 204"] >= 1 and
              c["rollback 200"] >= 1 and c["read 200"] >= 20 and
              c["pinned reads of versions that must answer"] >= 5 and
              sum(1 for op in world.ops if op.kind == "read" and op.pinned and
                  op.status == 200 and op.send < deadline) >= 5,
              "the run fitted, deleted, rolled back and read (pinned too)",
              dict(c))
        for rep in reps.values():
            bad = error_events(rep.d.log_path)
            check(not bad, f"replica {rep.tag}: no error event in its log",
                  "\n".join(bad[:6]))
    except Exception as e:  # a crash of the runner is a failure
        import traceback
        check(False, "lifecycle: runner", traceback.format_exc()[-3000:] or
              repr(e))
    finally:
        for rep in reps.values():
            rep.d.stop()
        oracle.stop()
        if args.keep_dir:
            run.tally.note(f"left {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return run.tally.summary()


if __name__ == "__main__":
    sys.exit(main())
