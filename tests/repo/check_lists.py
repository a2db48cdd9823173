#!/usr/bin/python3
"""Lists written outside core's tables agree with them.

core/km_maps.h holds the one list of algorithms (KM_ALGO_MAP) and the one
list of kernels (KM_KERNEL_MAP). Prose cannot be generated from them, so
this checks what the documents (docs/*.md, README.md), the contract
(api/openapi.yaml) and core's headers write:

  - every enumeration of algorithms or kernels names exactly the map's
    entries. An enumeration is: three or more names of one family in a
    row, joined by ",", "or", "and" or "/", each `quoted` or "quoted"
    (how the documents write a list of values); such a run in prose
    (krr, svr and gpr) only when it lacks at most two names (a prose list
    states a property of some); a table keyed by the family's names (its
    rows' first cells, "| svc, klr | ...", or " *   name  text" in a
    comment); an openapi `enum: [...]` holding any name, which must also
    keep the map's order; a table of stored ids, "`0` krr, `1` svc, ...",
    whose ids must be the map's. A list meant to be a part (the
    algorithms that answer values, the kernels LIBSVM has) is named in
    PARTS below with the reason, as the names it leaves out, the names it
    keeps, or a function of core's tables; so a new entry in a map fails
    every list that must grow with it;
  - counts written in words ("seven algorithms", "the four fits", "ten
    kernels") are the maps' counts (a part's count: COUNT_PARTS);
  - every /v1 and /v2 path the documents name is a route of the server's
    table (server/srv_routes.c), and api/openapi.yaml's paths are exactly
    that table;
  - every repository path the documents and core's headers name
    (`core/model/km_fit.c`, tests/...) exists, and every project file named
    by itself (`km_model.c`, srv_jobs.c) exists somewhere in the tree.

Usage, from the project root:
    /usr/bin/python3 tests/repo/check_lists.py
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tally import check, summary  # noqa: E402


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def maps():
    """{family: [(id, name), ...]} from core/km_maps.h, in list order."""
    text = read("core/km_maps.h")
    out = {}
    for family, macro in (("algorithm", "KM_ALGO_MAP"), ("kernel", "KM_KERNEL_MAP")):
        m = re.search(r"#define " + macro + r"\(X\)(.*?)(?:\n\s*\n|#define|#endif)", text, re.S)
        out[family] = [(int(i), n) for i, n in
                       re.findall(r"X\(\s*\w+\s*,\s*(\d+)\s*,\s*\"(\w+)\"", m.group(1))]
    return out


def composites():
    """The kernels whose descriptor in core/kernels/km_kernel.c is of the
    composite family (they take parts)."""
    text = read("core/kernels/km_kernel.c")
    return {n for n in re.findall(r"km_kernel_desc km_kernel_(\w+)\s*=\s*\{\s*\{\s*"
                                  r"KM_KFAMILY_COMPOSITE", text)}


# Lists that are meant to be a part of a family: (file, family, rule,
# names, why). rule "except": the list is every entry but these (so a new
# entry belongs in it); "only": exactly these, whatever the map grows to;
# "derived": the set a function of core's tables gives. A list passes when
# some rule of its file and family gives its names.
PARTS = [
    ("docs/api.md", "algorithm", "except", {"kpca"},
     "predict's algorithms: every one but kpca, which projects"),
    ("docs/api.md", "algorithm", "except", {"kpca", "kkmeans"},
     "the algorithms whose fit (and score) needs y"),
    ("docs/api.md", "kernel", "derived", composites,
     "the composite kernels, which take parts"),
    ("docs/extending.md", "kernel", "derived", composites,
     "the composite kernels, which take parts"),
    ("docs/api.md", "kernel", "only", {"rbf", "laplacian", "laplacian_l2"},
     "the kernels krr's rff solver draws features for"),
    ("docs/api.md", "kernel", "only", {"rbf", "laplacian", "laplacian_l2", "exponential"},
     "the kernels whose gamma gpr's lbfgs tunes"),
    ("docs/api.md", "kernel", "only", {"linear", "polynomial", "rbf", "sigmoid", "precomputed"},
     "LIBSVM's kernels"),
    ("docs/extending.md", "kernel", "only", {"laplacian_l2", "exponential", "normalized"},
     "the kernels added by the recipe, as examples"),
]


def part_names(rule, names):
    return set(names()) if rule == "derived" else set(names)


# What joins the names of a list: ", ", ", and ", " or ", " and ", "/".
# A run counts only with three names, so that a word that is also a name
# ("sum", "linear") in a sentence is not taken for a list.
SEP = r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+|\s*/\s*)"


def runs(text, names):
    """(start offset, [names], styled) of each run of >= 3 names of one
    family; styled when every name is `quoted` or "quoted" (how the
    documents write a list of values)."""
    alt = "|".join(sorted((re.escape(n) for n in names), key=len, reverse=True))
    item = r"[`\"']?(?:" + alt + r")[`\"']?(?![\w-])"
    pat = re.compile(r"(?<![\w/.-])" + item + r"(?:" + SEP + item + r")+")
    for m in pat.finditer(text):
        found = re.findall(r"(?<![\w-])(" + alt + r")(?![\w-])", m.group(0))
        quoted = re.findall(r"([`\"'])(?:" + alt + r")\1", m.group(0))
        if len(found) >= 3:
            yield m.start(), found, len(quoted) == len(found)


def keyed_rows(text, names):
    """(start offset, [names], True) of each table keyed by a family's
    names: three or more consecutive Markdown table rows whose first cell
    holds only names of the family ("| svc, klr | ..."), or comment lines
    " *   name   text" at one indentation (deeper lines continue an entry).
    Such a table (targets by algorithm, formulas by kernel) covers the
    family: the names of all its rows together are the list, and of all
    such tables of one Markdown section (a table may be cut by a
    paragraph)."""
    alt = "|".join(sorted((re.escape(n) for n in names), key=len, reverse=True))
    only = re.compile(r"[`\"]?(?:" + alt + r")[`\"]?(?:" + SEP + r"[`\"]?(?:" + alt +
                      r")[`\"]?)*")
    comment = re.compile(r"( \*\s+)(" + alt + r")(?::|\s+|$)")
    groups, cur, indent, offset = [], [], None, 0
    section = 0
    for line in text.split("\n"):
        start, offset = offset, offset + len(line) + 1
        if line.startswith("#"):
            section += 1
        if re.fullmatch(r"\|(\s*:?-+:?\s*\|)+\s*", line):
            continue
        cell = re.match(r"\|([^|]*)\|", line)
        com = comment.match(line)
        key = None
        if cell and only.fullmatch(cell.group(1).strip()):
            key = ("md", re.findall(r"(?<![\w-])(" + alt + r")(?![\w-])", cell.group(1)))
        elif com and (indent is None or len(com.group(1)) == indent):
            key = ("c", [com.group(2)])
            indent = len(com.group(1))
        elif cur and cur[0][2] == "c" and re.match(r" \*\s{%d,}\S" % (indent or 0), line):
            continue
        if key and (not cur or cur[0][2] == key[0]):
            cur.append((start, key[1], key[0], section))
            continue
        if len(cur) >= 3:
            groups.append(cur)
        cur, indent = [], None
        if key:
            cur = [(start, key[1], key[0], section)]
            indent = len(com.group(1)) if key[0] == "c" else None
    if len(cur) >= 3:
        groups.append(cur)
    merged = []
    for g in groups:
        if merged and g[0][2] == "md" and merged[-1][0][2] == "md" and \
                merged[-1][0][3] == g[0][3]:
            merged[-1] = merged[-1] + g
        else:
            merged.append(g)
    for g in merged:
        found = list(dict.fromkeys(n for _, ns, _, _ in g for n in ns))
        if len(found) >= 3:
            yield g[0][0], found, True


def scanned_files():
    files = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    files += [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "api", "openapi.yaml")]
    files += sorted(glob.glob(os.path.join(ROOT, "core", "*.h")))
    files += sorted(glob.glob(os.path.join(ROOT, "core", "*", "*.h")))
    return [os.path.relpath(f, ROOT) for f in files]


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def check_enumerations(families):
    for family, entries in families.items():
        full = [n for _, n in entries]
        bad, count, used = [], 0, set()
        for rel in scanned_files():
            text = read(rel)
            for start, found, styled in list(runs(text, full)) + list(keyed_rows(text, full)):
                got = set(found)
                # A list of values (`krr`, `svc`, ...) claims to be the
                # family or a named part; a prose list (krr, svr and gpr)
                # states a property of some, and counts only when it
                # lacks at most two: the lists a new entry is likely to
                # belong in.
                if not styled and len(got) < len(full) - 2:
                    continue
                count += 1
                where = f"{rel}:{line_of(text, start)}"
                if len(found) != len(got):
                    bad.append(f"{where}: names one twice: {', '.join(found)}")
                    continue
                if got == set(full):
                    continue
                ok = False
                for i, (f, fam, rule, names, _why) in enumerate(PARTS):
                    if f != rel or fam != family:
                        continue
                    want = (set(full) - set(names) if rule == "except"
                            else part_names(rule, names))
                    if got == want:
                        ok = True
                        used.add(i)
                        break
                if not ok:
                    missing = [n for n in full if n not in got]
                    bad.append(f"{where}: {', '.join(found)} (lacks {', '.join(missing)};"
                               f" a part? add it to PARTS with why)")
        check(not bad, f"every enumeration of {family}s names the {len(full)} of "
              f"KM_{'ALGO' if family == 'algorithm' else 'KERNEL'}_MAP or a named part "
              f"({count} enumerations)", "\n  " + "\n  ".join(bad))
        stale = [f"{p[0]}: {p[2]} {sorted(part_names(p[2], p[3]))} ({p[4]})"
                 for i, p in enumerate(PARTS)
                 if p[1] == family and i not in used]
        check(not stale, f"every part of PARTS ({family}s) is still written somewhere",
              "\n  " + "\n  ".join(stale))


def check_openapi_enums(families):
    text = read("api/openapi.yaml")
    bad, count = [], 0
    for m in re.finditer(r"enum:\s*\[([^\]]*)\]", text):
        vals = [v.strip().strip("'\"") for v in m.group(1).split(",")]
        for family, entries in families.items():
            full = [n for _, n in entries]
            if set(vals) & set(full) and len(vals) >= 2:
                count += 1
                if vals != full:
                    bad.append(f"api/openapi.yaml:{line_of(text, m.start())}: "
                               f"[{', '.join(vals)}] is not the {family}s in map order")
    check(count >= 2 and not bad, f"api/openapi.yaml's enums of algorithms and kernels are "
          f"the maps' ({count} enums)", "\n  " + "\n  ".join(bad) if bad else "none found")


def check_id_tables(families):
    """ "`0` krr, `1` svc, ..." : each id names the map's entry of that id."""
    bad, count = [], 0
    for rel in scanned_files():
        text = read(rel)
        for family, entries in families.items():
            by_name = {n: i for i, n in entries}
            alt = "|".join(sorted(by_name, key=len, reverse=True))
            pat = re.compile(r"`(\d+)`\s+(" + alt + r")(?![\w-])")
            for line_no, line in enumerate(text.split("\n"), 1):
                pairs = pat.findall(line)
                if len(pairs) < 3:
                    continue
                count += 1
                got = [(int(i), n) for i, n in pairs]
                if got != entries:
                    bad.append(f"{rel}:{line_no}: {got} is not {entries}")
    check(not bad, f"every table of stored ids is the maps' ({count} tables)",
          "\n  " + "\n  ".join(bad))


def routes():
    text = read("server/srv_routes.c")
    # the rows of the SRV_ROUTES X-macro list: X(ID, "/path", ...)
    return re.findall(r"^\s*X\(\w+,\s*\"([^\"]+)\"", text, re.M)


def route_re(route):
    parts = [r"[^/]+" if re.fullmatch(r"\{\w+\}", s) else re.escape(s)
             for s in route.split("/")]
    return re.compile("/".join(parts) + r"\Z")


# Paths the documents give as examples of what matches no route.
NOT_ROUTES = {"/v1/models/x/foo", "/v1/models/x/", "/v1/models/../x"}
# The toy additions docs/extending.md records: made on scratch branches to
# prove its recipes, then dropped, so named there but not in the tree.
TOYS = {"docs/extending.md": {"/v1/models/{name}/outputs", "core/algorithms/km_nwr.c",
                              "tests/core/test_km_nwr.c"}}


def check_routes():
    table = routes()
    check(len(table) >= 10, f"the route table of server/srv_routes.c read ({len(table)} routes)")
    res = [route_re(r) for r in table]
    api = read("api/openapi.yaml")
    spec = re.findall(r"(?m)^  (/\S*):\s*$", api)
    missing = [r for r in table if r not in spec]
    extra = [p for p in spec if p not in table]
    check(not missing and not extra, f"api/openapi.yaml's paths are the route table "
          f"({len(spec)} paths)", f"not in openapi.yaml: {missing}; not routes: {extra}")

    bad, count = [], 0
    for rel in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [
            os.path.join(ROOT, "README.md")]:
        rel = os.path.relpath(rel, ROOT)
        text = read(rel)
        for m in re.finditer(r"`(?:(?:GET|POST|DELETE|HEAD|PUT)\s+)?(/v[12](?:/[^`\s?#]*)?)", text):
            path = re.sub(r"(\.\.\.|…)$", "", m.group(1))
            if path in NOT_ROUTES or path in TOYS.get(rel, ()) or "*" in path:
                continue
            count += 1
            if path.endswith("/"):
                # A path ending in "/" names the routes under it.
                ok = any(r.startswith(path) for r in table)
            else:
                # [/optional part]: both spellings; {x}, UPPER and an
                # empty name stand for any name.
                spellings = {re.sub(r"\[([^\]]*)\]", g, path) for g in ("", r"\1")}
                ok = True
                for sp in spellings:
                    probe = "/".join(["x" if re.fullmatch(r"\{\w+\}|[A-Z][A-Z_]*|", seg)
                                      else seg for seg in sp.split("/")[1:]])
                    ok = ok and any(r.match("/" + probe) for r in res)
            if not ok:
                bad.append(f"{rel}:{line_of(text, m.start())}: {m.group(1)}")
    check(not bad, f"every /v1 and /v2 path the documents name is a route ({count} paths)",
          "\n  " + "\n  ".join(bad))


# Top folders whose paths documents name; a path is checked when it starts
# with one of these and names a file (has an extension) or ends with "/".
TOPS = ("core", "api", "server", "cli", "mpi", "tests", "clients", "deploy",
        "bench", "docs", "data")


def check_paths():
    bad, count = [], 0
    files = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    files += [os.path.join(ROOT, "README.md")]
    files += sorted(glob.glob(os.path.join(ROOT, "core", "*.h")))
    files += sorted(glob.glob(os.path.join(ROOT, "core", "*", "*.h")))
    pat = re.compile(r"(?<![\w./-])((?:" + "|".join(TOPS) +
                     r")/[\w./-]*?(?:\.\w+|/))(?=[`)\s:;,]|$)")
    for path in files:
        rel = os.path.relpath(path, ROOT)
        text = read(rel)
        for m in pat.finditer(text):
            p = m.group(1).rstrip(".")
            if "*" in p or "%" in p or "<" in p or p in TOYS.get(rel, ()):
                continue
            count += 1
            if not os.path.exists(os.path.join(ROOT, p)):
                bad.append(f"{rel}:{line_of(text, m.start())}: {p}")
    check(not bad, f"every repository path the documents name exists ({count} paths)",
          "\n  " + "\n  ".join(bad))


NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty".split())}

# Counts of a part, not of the family: (file, words).
COUNT_PARTS = [
    ("docs/solvers.md", "three kernels"),   # the kernels rff draws for
]


def check_counts(families):
    """ "seven algorithms", "the four fits", "ten kernels": a count of a
    family is its map's count (a part's count is named in COUNT_PARTS)."""
    nouns = {"algorithm": r"algorithms|estimators|model families|(?<=the )fits",
             "kernel": r"kernels|kernel types"}
    bad, count = [], 0
    for rel in scanned_files():
        text = read(rel)
        for family, noun in nouns.items():
            want = len(families[family])
            # Counts in words: a figure in digits is a quantity (16
            # kernels of a sum), not the family's size.
            pat = re.compile(r"\b(?:(the)\s+)?(" + "|".join(NUMBERS) +
                             r")\s+(?:[a-z-]+\s+)??(" + noun.replace("(?<=the )", "") +
                             r")\b", re.I)
            for m in pat.finditer(text):
                word = m.group(2).lower()
                n = NUMBERS[word]
                # "fits" counts the family only as "the N fits"
                # ("two kernels" is a pair of kernels, not the family)
                if n < 3 or (m.group(3).lower() == "fits" and not m.group(1)):
                    continue
                count += 1
                phrase = re.sub(r"\s+", " ", m.group(0)).lower()
                if n != want and not any(f == rel and phrase.endswith(w)
                                         for f, w in COUNT_PARTS):
                    bad.append(f"{rel}:{line_of(text, m.start())}: \"{m.group(0)}\" "
                               f"(KM_..._MAP has {want})")
    check(not bad, f"every count of algorithms or kernels is the maps' ({count} counts)",
          "\n  " + "\n  ".join(bad))


def tracked_names():
    """Base names of the repository's files (git's list, else a walk)."""
    p = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True)
    if p.returncode == 0 and p.stdout:
        files = [f for f in p.stdout.decode().split("\0") if f]
    else:
        files = [os.path.relpath(os.path.join(t, f), ROOT) for t, _, fs in os.walk(ROOT)
                 for f in fs]
    return {os.path.basename(f) for f in files}


def check_file_names():
    """A project file named without its folder (`km_model.c`, srv_jobs.c)
    in a document or a core header exists somewhere in the repository."""
    names = tracked_names()
    pat = re.compile(r"(?<![\w./-])((?:km|srv|api|kmctl|test|gen|fuzz|bench)_\w+\.(?:c|h|py))\b")
    bad, count = [], 0
    for rel in scanned_files():
        text = read(rel)
        for m in pat.finditer(text):
            count += 1
            if m.group(1) not in names:
                bad.append(f"{rel}:{line_of(text, m.start())}: {m.group(1)}")
    check(not bad, f"every project file the documents name by itself exists ({count} names)",
          "\n  " + "\n  ".join(bad))


def main():
    families = maps()
    check(len(families["algorithm"]) >= 2 and len(families["kernel"]) >= 2,
          f"core/km_maps.h read: {len(families['algorithm'])} algorithms, "
          f"{len(families['kernel'])} kernels")
    check_enumerations(families)
    check_openapi_enums(families)
    check_id_tables(families)
    check_routes()
    check_paths()
    check_file_names()
    check_counts(families)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
