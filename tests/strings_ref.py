#!/usr/bin/python3
"""Reference values of the string kernels, written from their definitions
and independent of kmserve's C code (standard library only; the tests
that import it may bring numpy).

Every kernel works on bytes: a str is read as its UTF-8 encoding.

- subsequence(s, t, k, lam): the gap-weighted subsequence kernel of Lodhi,
  Saunders, Shawe-Taylor, Cristianini and Watkins, "Text classification
  using string kernels", JMLR 2 (2002), section 4.1, by the paper's
  recursion over K'_i and K''_i in O(k |s| |t|):
      K'_0(s, t) = 1
      K'_i(s, t) = K_i(s, t) = 0                 if min(|s|, |t|) < i
      K''_i(sx, ty) = lam K''_i(sx, t) + [x = y] lam^2 K'_{i-1}(s, t)
      K'_i(sx, t) = lam K'_i(s, t) + K''_i(sx, t)
      K_k(sx, t) = K_k(s, t) + sum_{j: t_j = x} lam^2 K'_{k-1}(s, t[1 .. j-1])
  It is kernlab's stringdot(type = "sequence", length = k, lambda = lam,
  normalized = FALSE); no end mark.
- subsequence_brute(s, t, k, lam): the definition itself, by enumeration:
  every pair of index tuples i (of s) and j (of t) of length k with
  s[i] = t[j], weighted lam^(span(i) + span(j)), span(i) = i_k - i_1 + 1.
  For short strings only: it costs C(|s|, k) C(|t|, k).
- spectrum(s, t, k), boundrange(s, t, k), expdecay(s, t, lam): kernlab's
  stringdot types "spectrum", "boundrange" and "exponential"
  (normalized = FALSE), which read every string with an end mark "\\n"
  appended. Each counts the substrings of both strings (Counter) and sums,
  over the substrings u they share, count_s(u) count_t(u) times a weight:
  1 for |u| = k (spectrum); 1 for 1 <= |u| <= k (boundrange); lam^(-|u|)
  for every length (expdecay: every pair of occurrences of a common
  substring weighted lam^(-length); kernlab's closed form of that sum
  divides by 1 - lam, so kernlab itself answers NaN at lam = 1, where
  this sum is the number of such pairs).
- normalized(f, s, t): cosine normalisation f(s, t) / sqrt(f(s, s) f(t, t)),
  0 where f(s, s) f(t, t) is not > 0 (kmserve's "normalized" composite,
  kernlab's normalized = TRUE).
- kernel_fn(spec) and gram(spec, X, Z): the same from a kernel object as
  kmserve's API takes it: {"type": "spectrum", "length": 3},
  {"type": "normalized", "kernels": [...]}, sums and products.

`python3 tests/strings_ref.py --selftest` checks the recursion against the
enumeration on random short strings (to 1e-12 relative), the three
substring kernels against a second count made over pairs of positions
(the longest common extension of s[p:] and t[q:]), and all of them
against values kernlab gives, written below with the R call that made
them. It does not call R.
"""
import argparse
import itertools
import math
import random
import sys
from collections import Counter

END_MARK = b"\n"  # kernlab appends it for spectrum, boundrange, exponential


def as_bytes(s):
    """The bytes a kernel reads: a str's UTF-8 encoding, bytes as they are."""
    if isinstance(s, (bytes, bytearray)):
        return bytes(s)
    if isinstance(s, str):
        return s.encode("utf-8")
    raise TypeError(f"a string kernel takes str or bytes, not {type(s).__name__}")


def _check_k(k):
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"length must be a whole number >= 1, not {k!r}")


# ------------------------------------------------------------ subsequences

def subsequence(s, t, k, lam):
    """Lodhi et al.'s gap-weighted subsequence kernel K_k(s, t), by the
    recursion of K'_i and K''_i (the module's docstring)."""
    _check_k(k)
    s, t = as_bytes(s), as_bytes(t)
    n, m = len(s), len(t)
    if min(n, m) < k:
        return 0.0
    lam2 = lam * lam
    # kp[a][b] = K'_{i}(s[:a], t[:b]), starting from K'_0 = 1
    kp = [[1.0] * (m + 1) for _ in range(n + 1)]
    for _ in range(1, k):
        new = [[0.0] * (m + 1) for _ in range(n + 1)]  # K'_i(empty, .) = 0
        for a in range(1, n + 1):
            x = s[a - 1]
            prev, row, up = kp[a - 1], new[a], new[a - 1]
            kpp = 0.0  # K''_i(s[:a], t[:0]) = 0
            for b in range(1, m + 1):
                kpp = lam * kpp
                if t[b - 1] == x:
                    kpp += lam2 * prev[b - 1]
                row[b] = lam * up[b] + kpp
        kp = new
    total = 0.0
    for a in range(1, n + 1):
        x, prev = s[a - 1], kp[a - 1]
        for b in range(1, m + 1):
            if t[b - 1] == x:
                total += lam2 * prev[b - 1]
    return total


def subsequence_brute(s, t, k, lam):
    """The same kernel by its definition: every pair of index tuples."""
    _check_k(k)
    s, t = as_bytes(s), as_bytes(t)
    total = 0.0
    for i in itertools.combinations(range(len(s)), k):
        u = bytes(s[p] for p in i)
        for j in itertools.combinations(range(len(t)), k):
            if bytes(t[q] for q in j) == u:
                total += lam ** ((i[-1] - i[0] + 1) + (j[-1] - j[0] + 1))
    return total


# ------------------------------------------------------------ substrings

def substrings(s, lengths, end_mark=True):
    """Counter of the substrings of s (bytes, end mark appended) whose
    length is in lengths (None: every length)."""
    b = as_bytes(s) + (END_MARK if end_mark else b"")
    c = Counter()
    for i in range(len(b)):
        top = len(b) - i
        for L in range(1, top + 1):
            if lengths is None or L in lengths:
                c[b[i:i + L]] += 1
    return c


def _shared(s, t, lengths, weight):
    cs, ct = substrings(s, lengths), substrings(t, lengths)
    if len(cs) > len(ct):
        cs, ct = ct, cs
    return math.fsum(n * ct[u] * weight(len(u)) for u, n in cs.items() if u in ct)


def spectrum(s, t, k):
    """kernlab's spectrum kernel: shared substrings of length k (end mark)."""
    _check_k(k)
    return _shared(s, t, {k}, lambda L: 1.0)


def boundrange(s, t, k):
    """kernlab's boundrange kernel: shared substrings of length 1 .. k."""
    _check_k(k)
    return _shared(s, t, set(range(1, k + 1)), lambda L: 1.0)


def expdecay(s, t, lam):
    """kernlab's exponential kernel: shared substrings of every length,
    each pair of occurrences weighted lam^(-length)."""
    if not lam > 0:
        raise ValueError(f"lambda must be > 0, not {lam!r}")
    return _shared(s, t, None, lambda L: lam ** -L)


# ------------------------------------------------------------ by pairs of positions

def _extension(a, b, p, q):
    """Length of the longest common prefix of a[p:] and b[q:]."""
    L = 0
    while p + L < len(a) and q + L < len(b) and a[p + L] == b[q + L]:
        L += 1
    return L


def _by_positions(s, t, weight_upto):
    """Sum over pairs of positions (p, q) of weight_upto(the longest common
    extension of s[p:] and t[q:]), end marks appended: a second count of
    the substring kernels, for the self-test."""
    a, b = as_bytes(s) + END_MARK, as_bytes(t) + END_MARK
    return math.fsum(weight_upto(_extension(a, b, p, q))
                     for p in range(len(a)) for q in range(len(b)))


def spectrum_by_positions(s, t, k):
    return _by_positions(s, t, lambda e: 1.0 if e >= k else 0.0)


def boundrange_by_positions(s, t, k):
    return _by_positions(s, t, lambda e: float(min(e, k)))


def expdecay_by_positions(s, t, lam):
    return _by_positions(s, t, lambda e: math.fsum(lam ** -L for L in range(1, e + 1)))


# ------------------------------------------------------------ kernel objects

def normalized(f, s, t):
    """Cosine normalisation of f; 0 where f(s, s) f(t, t) is not > 0."""
    den = f(s, s) * f(t, t)
    return f(s, t) / math.sqrt(den) if den > 0 else 0.0


# A leaf's reference from its kernel object (the members kmserve takes).
LEAVES = {
    "spectrum": lambda o: lambda s, t: spectrum(s, t, o["length"]),
    "boundrange": lambda o: lambda s, t: boundrange(s, t, o["length"]),
    "expdecay": lambda o: lambda s, t: expdecay(s, t, o["lambda"]),
    "subsequence": lambda o: lambda s, t: subsequence(s, t, o["length"], o["lambda"]),
}


def kernel_fn(spec):
    """f(s, t) for a kernel object: a string leaf, or a normalized, sum or
    product of them."""
    kind = spec["type"]
    if kind in LEAVES:
        return LEAVES[kind](spec)
    parts = [kernel_fn(p) for p in spec.get("kernels", [])]
    if kind == "normalized":
        if len(parts) != 1:
            raise ValueError("normalized takes exactly one kernel")
        return lambda s, t: normalized(parts[0], s, t)
    if kind == "sum":
        w = spec.get("weights") or [1.0] * len(parts)
        return lambda s, t: math.fsum(wi * f(s, t) for wi, f in zip(w, parts))
    if kind == "product":
        return lambda s, t: math.prod(f(s, t) for f in parts)
    raise ValueError(f"no string reference for kernel type {kind!r}")


def gram(spec, X, Z=None):
    """K[i][j] = k(X[i], Z[j]) as lists of floats (Z None: X, and K is
    computed once per pair and mirrored)."""
    f = kernel_fn(spec)
    if Z is None:
        n = len(X)
        K = [[0.0] * n for _ in range(n)]
        for i in range(n):
            for j in range(i, n):
                K[i][j] = K[j][i] = f(X[i], X[j])
        return K
    return [[f(x, z) for z in Z] for x in X]


# ------------------------------------------------------------ self-test

# kernlab 0.9 (R), k <- stringdot(type, ..., normalized = FALSE); k(s, t):
KERNLAB = [
    # (kernel object, s, t, kernlab's value)
    ({"type": "subsequence", "length": 2, "lambda": 0.5}, "cat", "cart", 0.1015625),
    ({"type": "subsequence", "length": 3, "lambda": 1.0}, "abcd", "abdc", 2.0),
    ({"type": "spectrum", "length": 2}, "ab", "ab", 2.0),
    ({"type": "spectrum", "length": 2}, "cat", "cart", 2.0),
    ({"type": "spectrum", "length": 2}, "a", "a", 1.0),
    ({"type": "boundrange", "length": 2}, "ab", "ab", 5.0),
    ({"type": "boundrange", "length": 2}, "cat", "cart", 6.0),
    ({"type": "boundrange", "length": 2}, "a", "a", 3.0),
    # type = "exponential", lambda = 2: "a" "a", "ab" "ab", "a" "b", "aa" "aa", "abc" "abc"
    ({"type": "expdecay", "lambda": 2.0}, "a", "a", 1.25),
    ({"type": "expdecay", "lambda": 2.0}, "ab", "ab", 2.125),
    ({"type": "expdecay", "lambda": 2.0}, "a", "b", 0.5),
    ({"type": "expdecay", "lambda": 2.0}, "aa", "aa", 3.125),
    ({"type": "expdecay", "lambda": 2.0}, "abc", "abc", 3.0625),
    # lambda = 1.1 (kernlab's default), printed to 7 digits
    ({"type": "expdecay", "lambda": 1.1}, "aa", "aa", 6.949662),
    ({"type": "expdecay", "lambda": 1.1}, "abc", "abc", 8.301346),
]


def rel_err(a, b):
    """|a - b| relative to |b|; a zero b must be met exactly."""
    if b == 0:
        return 0.0 if a == 0 else math.inf
    return abs(a - b) / abs(b)


def selftest(seed=2002, rounds=400):
    rng = random.Random(seed)
    bad = []

    def word(alphabet, lo, hi):
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))

    alphabets = ["ab", "acgt", "abcdefgh", "aé€"]  # the last: multibyte UTF-8
    worst = 0.0
    for r in range(rounds):
        alpha = alphabets[r % len(alphabets)]
        s, t = word(alpha, 0, 8), word(alpha, 0, 8)
        k = rng.randint(1, 4)
        lam = rng.choice([1.0, rng.uniform(0.05, 1.0)])
        got, want = subsequence(s, t, k, lam), subsequence_brute(s, t, k, lam)
        e = rel_err(got, want)
        worst = max(worst, e)
        if e > 1e-12:
            bad.append(("subsequence", s, t, k, lam, got, want))
        if abs(subsequence(t, s, k, lam) - got) > 1e-12 * abs(got):
            bad.append(("subsequence symmetric", s, t, k, lam))
        lam_e = rng.choice([1.0, 1.1, rng.uniform(0.3, 3.0)])
        for name, a, b in (
                ("spectrum", spectrum(s, t, k), spectrum_by_positions(s, t, k)),
                ("boundrange", boundrange(s, t, k), boundrange_by_positions(s, t, k)),
                ("expdecay", expdecay(s, t, lam_e), expdecay_by_positions(s, t, lam_e))):
            e = rel_err(a, b)
            worst = max(worst, e)
            if e > 1e-12:
                bad.append((name, s, t, k, lam_e, a, b))
    print(f"# {rounds} random pairs: recursion against enumeration, substring "
          f"counts against position pairs: max rel {worst:.3g}")
    # boundrange is the sum of spectra 1 .. k; normalisation gives 1 on the diagonal
    for s, t in (("gattaca", "tacatac"), ("", "abc"), ("aaaa", "aa")):
        for k in (1, 2, 3, 5):
            a = boundrange(s, t, k)
            b = math.fsum(spectrum(s, t, L) for L in range(1, k + 1))
            if rel_err(a, b) > 1e-12:
                bad.append(("boundrange = sum of spectra", s, t, k, a, b))
            f = kernel_fn({"type": "normalized",
                           "kernels": [{"type": "subsequence", "length": k, "lambda": 0.7}]})
            v = f(s, s)
            if len(s) >= k and abs(v - 1) > 1e-15 or len(s) < k and v != 0:
                bad.append(("normalized diagonal", s, k, v))
    # kernlab's values (printed to 7 significant digits where not exact)
    for spec, s, t, want in KERNLAB:
        got = kernel_fn(spec)(s, t)
        if rel_err(got, want) > 1e-6:
            bad.append(("kernlab", spec, s, t, got, want))
    K = gram({"type": "spectrum", "length": 2}, ["ab", "cb"], ["ab"])
    if K != [[2.0], [1.0]]:  # "ab\n" with "ab\n": "ab", "b\n"; "cb\n": "b\n"
        bad.append(("gram", K))
    for b in bad:
        print("FAIL -", b)
    print(f"# selftest: {'FAILED' if bad else 'ok'} ({len(bad)} failures)")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("--seed", type=int, default=2002)
    args = ap.parse_args()
    if args.selftest:
        return selftest(args.seed)
    ap.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
