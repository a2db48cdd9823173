#!/usr/bin/python3
"""String inputs over HTTP, against the independent references of
tests/strings_ref.py (Lodhi et al.'s recursion for the subsequence
kernel, substring counts for spectrum, boundrange and expdecay), numpy
and scikit-learn.

- strings_ref.py's self-test passes (the references themselves).
- GET /v1's capabilities list the string kernels (input kind "strings"):
  exactly those strings_ref.py has a reference for.
- POST /v1/kernels/gram of every string kernel, plain and normalized, on
  seeded random strings (DNA letters and multibyte UTF-8: the kernels read
  bytes), K(X, Z) and K(X, X), equal the references to 1e-12 relative
  (an entry the reference makes 0 must be 0).
- tests/fixtures/string_kernels.json, kernlab's matrices, when it is
  there: the reference and the server equal them to 1e-12 relative (where
  kernlab's normalized value is NaN, 0/0, kmserve's is 0).
- Fits of every algorithm on a seeded two-class DNA-like set (two Markov
  chains, so the classes differ in k-mer content): krr predictions (two
  kernels) and gpr means equal numpy's solves on the reference Gram to
  1e-9 relative (floor 1e-3); svc labels equal scikit-learn's
  SVC(kernel="precomputed") on the reference Gram (same C); svr
  predictions equal SVR(kernel="precomputed")'s to 1e-4 (two SMO solvers
  at tol 1e-6); kpca projections equal the centred reference Gram's
  eigenvectors (up to sign) to 1e-6; klr and kkmeans answer labels and
  clusters of the right kind. The metadata's input says strings and
  max_length (given, or twice the longest training string, at least 64).
- A krr search (cv "loo") on strings: each candidate's score equals the
  r2 of numpy's leave-one-out predictions to 1e-9; score of krr (r2, mse
  against the reference predictions) and svc (accuracy against
  scikit-learn's labels); v2 infer of BYTES equals /v1 predict.
- Errors, 400 (or 413 for a cap) with a message naming the field: a
  numeric kernel with strings, a string kernel with numbers, strings and
  numbers mixed, a string kernel beside a numeric one in a sum, a string
  over the cap (read from core's header), a length over its cap, a
  predict string longer than the model's max_length (counted in bytes),
  numbers to a string model, strings to a numeric model, krr's rff solver
  with a string kernel. The daemon keeps answering.
- After a restart every string model answers the same, byte for byte.

Needs numpy and scikit-learn. Usage, from the project root:
    /usr/bin/python3 tests/integration/strings.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import random
import re
import sys

import numpy as np
from sklearn.svm import SVC, SVR

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import run  # noqa: E402
import strings_ref as ref  # noqa: E402
from run import check  # noqa: E402

GRAM_TOL = 1e-12   # one kernel value, two summation orders
PRED_TOL = 1e-9    # a Cholesky against numpy's solve
EIG_TOL = 1e-6     # two eigen-solvers
SMO_TOL = 1e-4     # two SMO solvers, each to tol 1e-6
FIXTURE = os.path.join(run.FIXTURES, "string_kernels.json")
HEADER = os.path.join(run.ROOT, "core", "kernels", "km_kernel.h")

# The parameters this test gives each string kernel (its reference is
# strings_ref.LEAVES[type]); GET /v1 must list exactly these types.
SPECS = {
    "spectrum": {"type": "spectrum", "length": 3},
    "boundrange": {"type": "boundrange", "length": 3},
    "expdecay": {"type": "expdecay", "lambda": 1.5},
    "subsequence": {"type": "subsequence", "length": 3, "lambda": 0.6},
}
FIT_KERNEL = {"type": "normalized", "kernels": [{"type": "spectrum", "length": 3}]}
SUB_KERNEL = {"type": "subsequence", "length": 2, "lambda": 0.5}


def err(r):
    return ((r.json() or {}).get("error") or {}).get("message", "")


def rel(a, b, floor=1e-3):
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        return np.inf
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), floor))) if a.size else 0.0


def header_cap(name):
    """A cap's value from core's header (its owner)."""
    with open(HEADER) as f:
        m = re.search(rf"#define\s+{name}\s+\(?(\d+)", f.read())
    return int(m.group(1)) if m else None


def random_strings(rng, n, lo, hi, alphabet="acgt"):
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))
            for _ in range(n)]


def markov(rng, n, lo, hi, sticky, p=0.3):
    """Strings from a chain over acgt that follows each letter in sticky by
    its partner with probability p: the classes differ in 2- and 3-mers
    (enough that svc gets about 80% of the test rows right, so some rows
    lie near the boundary)."""
    out = []
    for _ in range(n):
        s = [rng.choice("acgt")]
        for _ in range(rng.randint(lo, hi) - 1):
            nxt = sticky.get(s[-1])
            s.append(nxt if nxt and rng.random() < p else rng.choice("acgt"))
        out.append("".join(s))
    return out


def dna_set(seed=26):
    """(X, labels, y) for training and test: class A prefers a<->g, B c<->t."""
    rng = random.Random(seed)
    A = markov(rng, 30, 18, 40, {"a": "g", "g": "a"})
    B = markov(rng, 30, 18, 40, {"c": "t", "t": "c"})
    X, lab = [], []
    for i in range(30):
        X += [A[i], B[i]]
        lab += ["A", "B"]
    y = [s.count("ag") + s.count("ga") - s.count("ct") - s.count("tc") + 0.1 * len(s)
         for s in X]
    return (X[:40], lab[:40], y[:40]), (X[40:], lab[40:], y[40:])


def G(spec, X, Z=None):
    return np.array(ref.gram(spec, X, Z), float)


def same_gram(got, want):
    """Entrywise within GRAM_TOL relative; the reference's zeros exact."""
    got = np.asarray(got, float)
    if got.shape != want.shape:
        return False, f"shape {got.shape}, expected {want.shape}"
    e = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
    return bool(np.all(e <= GRAM_TOL)), f"max rel {e.max():.3g}"


def input_kind(row):
    """A capabilities kernel row's input kind ("input": "strings" or
    {"kind": "strings"})."""
    v = row.get("input")
    return v.get("kind") if isinstance(v, dict) else v


# ------------------------------------------------------------- kernels

def check_capabilities(d):
    r = d.req("GET", "/v1")
    rows = ((r.json() or {}).get("capabilities") or {}).get("kernels", [])
    listed = sorted(k["name"] for k in rows if input_kind(k) == "strings")
    check(r.status == 200 and listed == sorted(SPECS) == sorted(ref.LEAVES),
          "GET /v1 lists the string kernels (input kind strings): those with "
          "a reference", (listed, sorted(ref.LEAVES)))
    top = {p["name"]: p.get("maximum") for k in rows if k["name"] == "spectrum"
           for p in k.get("params", [])}
    return top.get("length")


def check_grams(d):
    rng = random.Random(12)
    X = random_strings(rng, 14, 0, 25) + ["aé€gt", "ééé", "€"]
    Z = random_strings(rng, 5, 1, 12, "acgté")
    for name, spec in SPECS.items():
        for kern in (spec, {"type": "normalized", "kernels": [spec]}):
            what = name if kern is spec else f"normalized {name}"
            r = d.req("POST", "/v1/kernels/gram", {"kernel": kern, "X": X, "Z": Z})
            ok, why = same_gram((r.json() or {}).get("K", []), G(kern, X, Z))
            check(r.status == 200 and ok, f"gram {what}: K(X, Z) equals the "
                  f"reference to {GRAM_TOL} ({why})", r)
            r = d.req("POST", "/v1/kernels/gram", {"kernel": kern, "X": X})
            ok, why = same_gram((r.json() or {}).get("K", []), G(kern, X))
            check(r.status == 200 and ok, f"gram {what}: K(X, X) equals the "
                  f"reference ({why})", r)


def fixture_cases(data):
    """The fixture's cases as (name, kernel, X, K), K(X, X) of the strings
    of the case's set: {"sets": {name: {"strings": [...]}}, "cases":
    [{"name", "set", "kernel", "K"}]} (tests/fixtures/gen_string_refs.R).
    kernlab's NaN is null: a normalized value where k(x, x) k(z, z) is 0,
    which kmserve's normalized kernel defines as 0. A case that does not
    read so is (name, None, None, its keys)."""
    sets = data.get("sets", {}) if isinstance(data, dict) else {}
    out = []
    for i, c in enumerate(data.get("cases", []) if isinstance(data, dict) else []):
        X = (sets.get(c.get("set")) or {}).get("strings")
        name = c.get("name", f"case {i}")
        if isinstance(c.get("kernel"), dict) and X is not None and "K" in c:
            K = [[0.0 if v is None else v for v in row] for row in c["K"]]
            out.append((name, c["kernel"], X, K))
        else:
            out.append((name, None, None, sorted(c)))
    return out


def check_fixture(d):
    if not os.path.exists(FIXTURE):
        run.tally.note(f"skipped: {os.path.relpath(FIXTURE, run.ROOT)} is not "
                       "there (kernlab's values; made by its generator)")
        return
    with open(FIXTURE) as f:
        cases = fixture_cases(json.load(f))
    if not check(bool(cases), "fixture: kernlab's cases read", FIXTURE):
        return
    for name, kern, X, K in cases:
        if not check(kern is not None, f"fixture {name}: a kernel, a set and K "
                     "(the layout understood)", K):
            continue
        want = np.array(K, float)
        ok, why = same_gram(G(kern, X), want)
        check(ok, f"fixture {name}: the reference equals kernlab ({why})")
        r = d.req("POST", "/v1/kernels/gram", {"kernel": kern, "X": X})
        ok, why = same_gram((r.json() or {}).get("K", []), want)
        check(r.status == 200 and ok, f"fixture {name}: the server equals "
              f"kernlab ({why})", r)


# ------------------------------------------------------------- models

def fit(d, name, body):
    r = d.req("POST", f"/v1/models/{name}/fit", body)
    check(r.status == 201, f"{name}: fit on strings 201", r)
    return (r.json() or {}).get("model", {})


def predict(d, name, X, output=None):
    body = {"X": X} if output is None else {"X": X, "output": output}
    r = d.req("POST", f"/v1/models/{name}/predict", body)
    check(r.status == 200, f"{name}: predict strings {output or ''}", r)
    return (r.json() or {}).get("predictions", [])


def check_models(d, train, test):
    X, lab, y = train
    T, tlab, _ = test
    K, Kt = G(FIT_KERNEL, X), G(FIT_KERNEL, T, X)
    n = len(X)
    for name, kern in (("s-krr", FIT_KERNEL), ("s-krr-sub", SUB_KERNEL)):
        m = fit(d, name, {"algorithm": "krr", "kernel": kern, "params": {"alpha": 0.5},
                          "X": X, "y": y})
        Kk, Kkt = (K, Kt) if kern is FIT_KERNEL else (G(kern, X), G(kern, T, X))
        want = Kkt @ np.linalg.solve(Kk + 0.5 * np.eye(n), y)
        e = rel(predict(d, name, T), want)
        check(e <= PRED_TOL, f"{name}: predictions equal numpy's solve on the "
              f"reference Gram (max rel {e:.2g})", e)
    longest = max(len(s.encode()) for s in X)
    inp = m.get("input", {})
    check(inp == {"kind": "strings", "max_length": max(2 * longest, 64)},
          f"s-krr-sub: metadata input is strings, max_length 2 x {longest}", inp)

    m = fit(d, "s-svc", {"algorithm": "svc", "kernel": FIT_KERNEL, "params": {"C": 1.0},
                         "X": X, "y": lab, "max_length": 100})
    check(m.get("input") == {"kind": "strings", "max_length": 100},
          "s-svc: a max_length given is the model's", m.get("input"))
    sk = SVC(kernel="precomputed", C=1.0).fit(K, lab)
    want = list(sk.predict(Kt))
    got = predict(d, "s-svc", T)
    check(got == want, "s-svc: labels equal SVC(kernel='precomputed') on the "
          "reference Gram", (got, want))
    acc = float(np.mean(np.array(want) == np.array(tlab)))
    run.tally.note(f"svc test accuracy {acc:.2f} (the classes differ in k-mers)")

    fit(d, "s-svr", {"algorithm": "svr", "kernel": FIT_KERNEL,
                     "params": {"C": 1.0, "epsilon": 0.1, "tol": 1e-6}, "X": X, "y": y})
    want = SVR(kernel="precomputed", C=1.0, epsilon=0.1, tol=1e-6).fit(K, y).predict(Kt)
    got = np.array(predict(d, "s-svr", T), float)
    e = float(np.max(np.abs(got - want))) if got.shape == want.shape else np.inf
    check(e <= SMO_TOL, f"s-svr: predictions equal SVR(kernel='precomputed')'s "
          f"(max abs {e:.2g})", e)

    fit(d, "s-gpr", {"algorithm": "gpr", "kernel": FIT_KERNEL,
                     "params": {"noise": 0.1, "signal_variance": 2.0}, "X": X, "y": y})
    want = 2.0 * Kt @ np.linalg.solve(2.0 * K + 0.1 * np.eye(n), y)
    e = rel(predict(d, "s-gpr", T), want)
    check(e <= PRED_TOL, f"s-gpr: means equal numpy's solve (max rel {e:.2g})", e)

    check_kpca(d, X, T, K, Kt)
    fit(d, "s-klr", {"algorithm": "klr", "kernel": FIT_KERNEL, "X": X, "y": lab})
    p = predict(d, "s-klr", T, "probability")
    labels = predict(d, "s-klr", T)
    check(len(p) == len(T) and all(abs(sum(r) - 1) < 1e-12 for r in p) and
          labels == [("A", "B")[int(r[1] > r[0])] for r in p],
          "s-klr: probabilities sum to 1, labels their argmax", (p[:2], labels))
    fit(d, "s-kkm", {"algorithm": "kkmeans", "kernel": FIT_KERNEL,
                     "params": {"n_clusters": 2, "seed": 1}, "X": X})
    c = predict(d, "s-kkm", T)
    check(len(c) == len(T) and set(c) <= {0, 1}, "s-kkm: a cluster 0 or 1 per row", c)


def check_kpca(d, X, T, K, Kt):
    r = d.req("POST", "/v1/models/s-kpca/fit", {
        "algorithm": "kpca", "kernel": FIT_KERNEL, "X": X,
        "params": {"n_components": 3, "eigen_solver": "dense"}})
    check(r.status == 201, "s-kpca: fit on strings 201", r)
    r = d.req("POST", "/v1/models/s-kpca/project", {"X": T})
    got = np.array((r.json() or {}).get("projections", []), float)
    n = len(X)
    H = np.eye(n) - 1.0 / n
    s, V = np.linalg.eigh(H @ K @ H)
    s, V = s[::-1][:3], V[:, ::-1][:, :3]
    Kc = (Kt - Kt.mean(1, keepdims=True) - K.mean(0) + K.mean())
    want = Kc @ V / np.sqrt(s)
    if got.shape == want.shape:
        got = got * np.sign(np.sum(got * want, 0))  # each column's sign
    e = rel(got, want)
    check(r.status == 200 and e <= EIG_TOL, f"s-kpca: projections equal the "
          f"centred reference Gram's eigenvectors, up to sign (max rel {e:.2g})", r)


def check_search_score(d, train, test):
    X, lab, y = train
    T, tlab, ty = test
    alphas = [0.1, 1.0, 10.0]
    m = fit(d, "s-search", {"algorithm": "krr", "kernel": FIT_KERNEL, "X": X, "y": y,
                            "search": {"params": {"alpha": alphas}, "cv": "loo"}})
    rows = (m.get("search") or {}).get("results", [])
    K, yv = G(FIT_KERNEL, X), np.array(y)
    want = []
    for a in alphas:
        Hm = K @ np.linalg.inv(K + a * np.eye(len(X)))
        loo = yv - (yv - Hm @ yv) / (1 - np.diag(Hm))
        want.append(1 - np.sum((yv - loo) ** 2) / np.sum((yv - yv.mean()) ** 2))
    got = [row.get("mean_score") for row in rows]
    check(len(got) == 3 and rel(got, want) <= PRED_TOL and
          m["search"]["best_index"] == int(np.argmax(want)),
          "search krr cv loo on strings: scores are numpy's leave-one-out r2, "
          "the best chosen", (got, want))

    r = d.req("POST", "/v1/models/s-krr/score", {"X": T, "y": ty})
    sc = (r.json() or {}).get("scoring", {})
    p = G(FIT_KERNEL, T, X) @ np.linalg.solve(K + 0.5 * np.eye(len(X)), y)
    tyv = np.array(ty)
    r2 = 1 - np.sum((tyv - p) ** 2) / np.sum((tyv - tyv.mean()) ** 2)
    check(r.status == 200 and rel([sc.get("r2"), sc.get("mse")],
                                  [r2, np.mean((tyv - p) ** 2)]) <= PRED_TOL,
          "score krr on strings: r2 and mse of the reference predictions", r)
    r = d.req("POST", "/v1/models/s-svc/score", {"X": T, "y": tlab})
    want = SVC(kernel="precomputed", C=1.0).fit(K, lab).predict(G(FIT_KERNEL, T, X))
    acc = float(np.mean(want == np.array(tlab)))
    check(r.status == 200 and (r.json() or {}).get("scoring", {}).get("accuracy") == acc,
          f"score svc on strings: accuracy {acc:.3f} as scikit-learn's labels", r)

    r = d.req("POST", "/v2/models/s-krr/infer", {"inputs": [
        {"name": "X", "datatype": "BYTES", "shape": [len(T)], "data": T}]})
    out = ((r.json() or {}).get("outputs") or [{}])[0].get("data")
    v1 = d.req("POST", "/v1/models/s-krr/predict", {"X": T}).json() or {}
    check(r.status == 200 and out == v1.get("predictions"),
          "v2 infer of BYTES equals /v1 predict", r)


# ------------------------------------------------------------- errors

def expect_400(d, path, body, names, what, statuses=(400,)):
    r = d.req("POST", path, body)
    msg = err(r)
    check(r.status in statuses and all(n in msg for n in names),
          f"{what}: {'/'.join(map(str, statuses))} naming {', '.join(names)}", r)


def check_errors(d, kmax):
    fitp = "/v1/models/s-bad/fit"
    dna = ["acgt", "ggca", "ttag"]
    spec = SPECS["spectrum"]
    expect_400(d, fitp, {"algorithm": "krr", "kernel": {"type": "rbf"}, "X": dna,
                         "y": [1, 0, 1]}, ["X[0]"], "fit, a numeric kernel with strings")
    expect_400(d, "/v1/kernels/gram", {"kernel": {"type": "linear"}, "X": dna},
               ["X[0]"], "gram, a numeric kernel with strings")
    expect_400(d, fitp, {"algorithm": "krr", "kernel": spec, "X": [[1.0, 2.0], [3.0, 4.0]],
                         "y": [1, 0]}, ["X", "strings"], "fit, a string kernel with numbers")
    expect_400(d, "/v1/kernels/gram", {"kernel": spec, "X": dna, "Z": [[1.0]]},
               ["Z", "strings"], "gram, a string kernel with numbers in Z")
    expect_400(d, fitp, {"algorithm": "krr", "kernel": spec, "X": ["acgt", 3.0],
                         "y": [1, 0]}, ["X[1]"], "fit, strings and numbers mixed")
    expect_400(d, fitp, {"algorithm": "krr", "kernel": {"type": "sum", "kernels": [
        spec, {"type": "rbf"}]}, "X": dna, "y": [1, 0, 1]}, ["kernel.kernels[1]"],
               "fit, a string kernel beside a numeric one")
    cap = header_cap("KM_STRING_MAX_BYTES")
    if check(cap is not None, "KM_STRING_MAX_BYTES read from core's header", HEADER):
        expect_400(d, fitp, {"algorithm": "krr", "kernel": spec,
                             "X": ["acgt", "a" * (cap + 1)], "y": [1, 0]},
                   ["X[1]", str(cap)], f"fit, a string of {cap + 1} bytes", (400, 413))
        expect_400(d, "/v1/kernels/gram", {"kernel": spec, "X": ["a" * (cap + 1)]},
                   ["X[0]", str(cap)], "gram, a string over the cap", (400, 413))
    kcap = header_cap("KM_STRING_MAX_K")
    check(kcap is not None and kmax == kcap,
          "capabilities' maximum length is KM_STRING_MAX_K", (kmax, kcap))
    expect_400(d, fitp, {"algorithm": "krr", "kernel": dict(spec, length=(kcap or 32) + 1),
                         "X": dna, "y": [1, 0, 1]}, ["kernel.length", str(kcap)],
               "fit, a length over its cap")
    expect_400(d, fitp, {"algorithm": "krr", "kernel": SPECS["subsequence"],
                         "params": {"solver": "rff"}, "X": dna, "y": [1, 0, 1]},
               ["params.solver"], "fit, krr rff with a string kernel")
    # s-svc's max_length is 100 bytes: 50 two-byte letters pass, one more byte not
    ok = d.req("POST", "/v1/models/s-svc/predict", {"X": ["acgt", "é" * 50]})
    check(ok.status == 200, "predict, a string of exactly max_length bytes: 200", ok)
    expect_400(d, "/v1/models/s-svc/predict", {"X": ["acgt", "é" * 50 + "a"]},
               ["X[1]", "100"], "predict, 101 bytes over max_length 100")
    expect_400(d, "/v1/models/s-svc/score", {"X": ["a" * 101], "y": ["A"]},
               ["X[0]", "100"], "score, a string over max_length")
    expect_400(d, "/v1/models/s-krr/predict", {"X": [[1.0, 2.0]]}, ["X", "strings"],
               "predict, numbers to a string model")
    d.req("POST", "/v1/models/s-num/fit", run.fit_body([[1.0, 2.0], [2.0, 0.5]], [1.0, 2.0]))
    expect_400(d, "/v1/models/s-num/predict", {"X": ["acgt"]}, ["X[0]"],
               "predict, strings to a numeric model")
    check(d.req("GET", "/livez").status == 200 and
          d.req("POST", "/v1/models/s-krr/predict", {"X": dna}).status == 200,
          "after the errors the daemon answers")


# ------------------------------------------------------------- restart

def answers(d, T):
    out = {}
    for name, outputs in (("s-krr", [None]), ("s-krr-sub", [None]), ("s-svr", [None]),
                          ("s-svc", [None, "decision_function"]), ("s-gpr", ["mean", "std"]),
                          ("s-klr", [None, "probability"]), ("s-kkm", [None]),
                          ("s-search", [None])):
        out[(name, "meta")] = d.req("GET", f"/v1/models/{name}").body
        for o in outputs:
            body = {"X": T} if o is None else {"X": T, "output": o}
            r = d.req("POST", f"/v1/models/{name}/predict", body)
            out[(name, o)] = (r.status, r.body)
    r = d.req("POST", "/v1/models/s-kpca/project", {"X": T})
    out[("s-kpca", "project")] = (r.status, r.body)
    return out


def check_restart(d, T):
    before = answers(d, T)
    d.stop()
    d.start()
    after = answers(d, T)
    differ = [k for k in before if before[k] != after.get(k)]
    failed = [(k, v) for k, v in before.items() if k[1] != "meta" and v[0] != 200]
    check(not differ and not failed, f"after a restart {len(before)} answers of the "
          "string models are the same, byte for byte", (differ, failed))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    train, test = dna_set()

    def body(d):
        check(ref.selftest(rounds=100) == 0, "strings_ref.py's self-test: the "
              "references agree with their second counts and kernlab's values")
        kmax = check_capabilities(d)
        check_grams(d)
        check_fixture(d)
        check_models(d, train, test)
        check_search_score(d, train, test)
        check_errors(d, kmax)
        check_restart(d, test[0])

    return run.with_daemon(args.server, "kmserve-strings-", body, "--blas-threads", "1")


if __name__ == "__main__":
    sys.exit(main())
