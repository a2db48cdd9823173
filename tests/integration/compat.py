#!/usr/bin/python3
"""Model files written by an earlier server load and answer the same, bit
for bit: the compatibility promise of docs/model-format.md.

tests/fixtures/models/ holds model files of every algorithm and kernel and
the answers the server that wrote them gave (gen_model_files.py made them).
They are copied into a fresh models directory, the daemon starts on it, and
each model must be listed with its algorithm and answer the same request
with the same labels and numbers: within 1e-12 relative of the recorded
ones (relative to the answer's largest number where that is larger: a
sum whose terms cancel keeps their rounding). On the machine and BLAS that wrote the fixtures the
numbers are the same doubles, bit for bit; another OpenBLAS core kernel
(a CPU, or OPENBLAS_CORETYPE) rounds its sums differently in the last
bits, which is not a change of the model. The runner says how many answers
were bit-identical; --exact makes any other a failure.

--against OLD runs the same requests on the daemon OLD first (a build of
an earlier commit, on this machine) and requires every answer of --server
to be the same bytes as OLD's: the proof that a change of the code (a
refactoring) left every stored model answering as before. Usage, from the
project root:
    /usr/bin/python3 tests/integration/compat.py --server build/kmserve [--exact]
        [--against /tmp/before/build/kmserve]
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

FIXTURES = os.path.join(run.ROOT, "tests", "fixtures", "models")


def largest(v):
    """The largest magnitude among the numbers of an answer."""
    if isinstance(v, list):
        return max((largest(x) for x in v), default=0.0)
    if isinstance(v, dict):
        return max((largest(x) for x in v.values()), default=0.0)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return abs(float(v))
    return 0.0


def same(a, b, rel=0.0, scale=None):
    """Equal structure and labels, every number within rel of the other
    (rel = 0: the same double), relative to the larger of itself and the
    answer's largest number (floor 1e-12): a prediction is a sum of
    terms of about the answer's scale, whose rounding another BLAS core
    changes by that much, also where the terms cancel to a small value."""
    if scale is None:
        scale = largest(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, rel, scale)
                                        for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], rel, scale)
                                            for k in a)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            not isinstance(a, bool) and not isinstance(b, bool):
        return abs(float(a) - float(b)) <= rel * max(abs(float(b)), scale,
                                                     1e-12)
    return a == b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    ap.add_argument("--exact", action="store_true",
                    help="every number must be the same double")
    ap.add_argument("--against", metavar="OLD",
                    help="an earlier build's kmserve: every answer must be its bytes")
    args = ap.parse_args()
    with open(os.path.join(FIXTURES, "expected.json")) as f:
        expected = json.load(f)

    def setup(models):
        for name in expected:
            shutil.copy(os.path.join(FIXTURES, f"{name}.kmm"), models)

    before = {}

    def record():
        """OLD's answers, from its own daemon on its own copy of the files."""
        tmp = tempfile.mkdtemp(prefix="kmserve-compat-old-")
        models = os.path.join(tmp, "models")
        os.makedirs(models)
        setup(models)
        d = run.Daemon(os.path.abspath(args.against), models)
        try:
            d.start()
            for name, case in sorted(expected.items()):
                r = d.req("POST", f"/v1/models/{name}/{case['route']}", case["body"])
                before[name] = (r.status, r.body)
        finally:
            d.stop()
            shutil.rmtree(tmp, ignore_errors=True)

    def body(d):
        if args.against:
            record()
        exact = 0
        listed = {m["name"]: m for m in d.req("GET", "/v1/models").json()["models"]}
        run.check(sorted(listed) == sorted(expected),
                  f"all {len(expected)} fixture model files load", sorted(listed))
        for name, case in sorted(expected.items()):
            r = d.req("POST", f"/v1/models/{name}/{case['route']}", case["body"])
            want = json.loads(case["answer"])
            bits = r.status == 200 and same(r.json(), want)
            exact += bits
            run.check(bits or (not args.exact and r.status == 200 and
                               same(r.json(), want, 1e-12)),
                      f"{name}: {case['route']} answers as the server that wrote it",
                      f"{r.status} {r.body[:300]} != {case['answer'][:300]}")
            if args.against:
                run.check((r.status, r.body) == before.get(name),
                          f"{name}: the same bytes as the earlier build's answer",
                          f"{r.status} {r.body[:200]} != {before.get(name)}")
            alg = name.split("-")[0]
            run.check(listed.get(name, {}).get("algorithm") == alg,
                      f"{name}: metadata says {alg}", listed.get(name))
        run.tally.note(f"bit-identical answers: {exact} of {len(expected)}")

    return run.with_daemon(args.server, "kmserve-compat-", body, setup=setup)


if __name__ == "__main__":
    sys.exit(main())
