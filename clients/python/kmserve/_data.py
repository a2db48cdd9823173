"""kmserve._data - request bodies to JSON and answers back, numpy optional.

Numbers go to JSON with Python's shortest repr of each double, so the
server reads back exactly the doubles given (docs/api.md, numbers); NaN
and infinity, which JSON has no spelling for, are refused here with the
path of the first one (X[3][1]). numpy arrays and scalars anywhere in a
body are written through tolist(), pandas objects through to_numpy().
Strings (X of a string kernel: a list of str, or a numpy array of str)
go as JSON strings, unconverted.

Thread-safety: stateless.
"""
import json
import math
import struct

try:
    import numpy as np
except ImportError:  # numpy is optional
    np = None


def is_numpy(x):
    return np is not None and isinstance(x, np.ndarray)


def _plain(o):
    """json.dumps' hook for what it does not know: numpy and pandas."""
    if hasattr(o, "to_numpy"):
        return o.to_numpy().tolist()
    if hasattr(o, "tolist"):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not a JSON value (give numbers, "
                    "strings, lists or numpy arrays)")


def _first_nonfinite(v, path):
    if isinstance(v, float) and not math.isfinite(v):
        return path
    if isinstance(v, dict):
        for k, x in v.items():
            p = _first_nonfinite(x, f"{path}.{k}" if path else str(k))
            if p:
                return p
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            p = _first_nonfinite(x, f"{path}[{i}]")
            if p:
                return p
    return None


def dumps(body):
    """The body as compact JSON bytes; ValueError naming the first number
    that is NaN or infinite."""
    try:
        return json.dumps(body, allow_nan=False, separators=(",", ":"),
                          default=_plain).encode()
    except ValueError:
        plain = json.loads(json.dumps(body, default=_plain))
        path = _first_nonfinite(plain, "") or "the body"
        raise ValueError(f"{path} is not a finite number (JSON has no NaN or "
                         "infinity)") from None


def rows(X):
    """X as something sliceable by rows (a list or an ndarray) and its
    row count. A list of str is rows too: one string per row."""
    if isinstance(X, (str, bytes)):
        raise TypeError("X must be rows (a list of strings for a kernel that "
                        "takes strings), not one string: give [X]")
    if isinstance(X, list) or is_numpy(X):
        return X, len(X)
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
        return X, len(X)
    X = list(X)
    return X, len(X)


def to_numpy(values):
    """An answer's values as an ndarray (labels keep their type)."""
    return np.asarray(values)


def n_features(X):
    """Columns of the first row of X."""
    if is_numpy(X):
        return X.shape[1] if X.ndim == 2 else 0
    X, n = rows(X)
    return len(X[0]) if n else 0


def scaled_variance(X, scale):
    """The variance of every entry of X after the server's preprocessing
    `scale` (none, standardize or minmax, as docs/api.md defines them),
    for scikit-learn's gamma="scale" = 1 / (n_features * X.var())."""
    if np is not None:
        A = np.asarray(X, dtype=np.float64)
        if scale == "standardize":
            std = A.std(axis=0)
            A = (A - A.mean(axis=0)) / np.where(std > 0, std, 1.0)
        elif scale == "minmax":
            lo, hi = A.min(axis=0), A.max(axis=0)
            span = np.where(hi > lo, hi - lo, 1.0)
            A = np.where(hi > lo, 2.0 * (A - lo) / span - 1.0, -1.0)
        return float(A.var())
    X, n = rows(X)
    cols = list(zip(*[[float(v) for v in r] for r in X]))
    out = []
    for c in cols:
        if scale == "standardize":
            m = sum(c) / n
            s = math.sqrt(sum((v - m) ** 2 for v in c) / n)
            c = [(v - m) / (s if s > 0 else 1.0) for v in c]
        elif scale == "minmax":
            lo, hi = min(c), max(c)
            c = [2.0 * (v - lo) / (hi - lo) - 1.0 if hi > lo else -1.0 for v in c]
        out.extend(c)
    m = sum(out) / len(out)
    return sum((v - m) ** 2 for v in out) / len(out)


# The binary tensor data extension's numbers: little-endian, row-major.
BINARY_TYPES = {"FP64": ("<f8", "d"), "FP32": ("<f4", "f"), "INT64": ("<i8", "q")}


def pack(X, datatype, name="X"):
    """Rows of numbers (or, one dimension, numbers) as datatype's
    little-endian bytes, row-major; ValueError naming the first value
    that is NaN or infinite (as JSON's), name[i][j]."""
    dt, code = BINARY_TYPES[datatype]
    if np is not None:
        A = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
        bad = ~np.isfinite(A)
        if bad.any():
            i = np.argwhere(bad)[0]
            raise ValueError(f"{name}{''.join(f'[{k}]' for k in i)} is not a finite number")
        return A.astype(dt).tobytes()
    flat = []
    for i, r in enumerate(X):
        for j, v in enumerate(r) if isinstance(r, (list, tuple)) else ((None, r),):
            if not math.isfinite(float(v)):
                at = f"[{i}]" if j is None else f"[{i}][{j}]"
                raise ValueError(f"{name}{at} is not a finite number")
            flat.append(float(v))
    return struct.pack(f"<{len(flat)}{code}", *flat)


def numeric_shape(v):
    """The shape ([n] or [n, d]) of numbers v (a numpy array of a number
    type, or a list of numbers or of equal rows of numbers), or None when
    v is anything else (strings, labels that are not numbers, ragged)."""
    if hasattr(v, "to_numpy"):
        v = v.to_numpy()
    if is_numpy(v):
        ok = v.ndim in (1, 2) and v.dtype.kind in "fiu" and len(v) > 0
        return list(v.shape) if ok else None
    if not isinstance(v, (list, tuple)) or not v:
        return None

    def number(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool)
    if all(number(x) for x in v):
        return [len(v)]
    if all(isinstance(r, (list, tuple)) for r in v):
        w = len(v[0])
        if w and all(len(r) == w and all(number(x) for x in r) for r in v):
            return [len(v), w]
    return None


def unpack(data, datatype):
    """A binary output's values: numbers of its datatype (FP64, INT64),
    or BYTES: each a 4-byte little-endian length and UTF-8 text."""
    if datatype == "BYTES":
        out, at = [], 0
        while at < len(data):
            (n,) = struct.unpack_from("<I", data, at)
            out.append(data[at + 4:at + 4 + n].decode("utf-8"))
            at += 4 + n
        return out
    dt, code = BINARY_TYPES[datatype]
    if np is not None:
        return np.frombuffer(data, dtype=dt).astype(dt[1:])
    return list(struct.unpack(f"<{len(data) // struct.calcsize(code)}{code}", data))


def reshape(values, width):
    """Flat values as rows of width."""
    if np is not None and isinstance(values, np.ndarray):
        return values.reshape(-1, width)
    return [values[k:k + width] for k in range(0, len(values), width)]


def concat(parts):
    """The batches' values as one (an ndarray when they are)."""
    if len(parts) == 1:
        return parts[0]
    if np is not None and all(isinstance(p, np.ndarray) for p in parts):
        return np.concatenate(parts)
    out = []
    for p in parts:
        out.extend(p.tolist() if hasattr(p, "tolist") else p)
    return out
