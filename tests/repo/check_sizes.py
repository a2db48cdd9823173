#!/usr/bin/python3
"""The sizes a reader can hold: no source file of kmserve's C tree over
MAX_FILE lines and no C function over MAX_FUNCTION lines, unless the
comment that opens the file (or stands right above the function) says
why, in a sentence beginning "Long:".

It reads core/, api/, server/, common/, mpi/ and cli/ (*.c, *.h). A
function is found as a line at column 0 that opens a definition (a name
and its parameters, then "{" at column 0 or at the line's end) and runs
to the "}" at column 0 that closes it. Ends with "N passed, N failed"
as the other repository checks.
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DIRS = ["core", "api", "server", "common", "mpi", "cli"]
MAX_FILE = 1200
MAX_FUNCTION = 150
WHY = "Long:"

sys.path.insert(0, os.path.join(ROOT, "tests"))
from tally import check, summary  # noqa: E402


def sources():
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, f), ROOT)


def opening_comment(lines):
    if not lines or not lines[0].startswith("/*"):
        return ""
    out = []
    for l in lines:
        out.append(l)
        if "*/" in l:
            break
    return "\n".join(out)


def comment_above(lines, i):
    """The block comment ending right above line i (skipping nothing)."""
    j = i - 1
    if j < 0 or not lines[j].rstrip().endswith("*/"):
        return ""
    k = j
    while k >= 0 and "/*" not in lines[k]:
        k -= 1
    return "\n".join(lines[max(k, 0):j + 1])


HEAD = re.compile(r"^[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(")


def functions(lines):
    """(name, first line index, line count) of each function definition."""
    i = 0
    n = len(lines)
    while i < n:
        m = HEAD.match(lines[i])
        if not m or lines[i].startswith(("typedef", "struct", "enum", "union", "#")) \
                or lines[i].rstrip().endswith(";"):
            i += 1
            continue
        # the parameters may run over several lines; the body opens with
        # "{" at the end of the header or alone at column 0
        j = i
        while j < n and not lines[j].rstrip().endswith(("{", ";", ")")):
            j += 1
        k = j
        while k < n and lines[k].strip() == "" :
            k += 1
        if j < n and lines[j].rstrip().endswith(")") and k + 1 < n and lines[j + 1].startswith("{"):
            j += 1
        if j >= n or not lines[j].rstrip().endswith("{"):
            i = j + 1
            continue
        end = j + 1
        while end < n and not lines[end].startswith("}"):
            end += 1
        yield m.group(1), i, end - i + 1
        i = end + 1


def main():
    big_files, big_funcs, nfiles, nfuncs = [], [], 0, 0
    for rel in sources():
        lines = open(os.path.join(ROOT, rel), encoding="utf-8").read().split("\n")
        nfiles += 1
        if len(lines) > MAX_FILE and WHY not in opening_comment(lines):
            big_files.append(f"{rel}: {len(lines)} lines")
        if rel.endswith(".c"):
            for name, i, count in functions(lines):
                nfuncs += 1
                if count > MAX_FUNCTION and WHY not in comment_above(lines, i):
                    big_funcs.append(f"{rel}:{i + 1}: {name}, {count} lines")
    check(nfiles > 50, f"the C tree read ({nfiles} files)")
    check(nfuncs > 500, f"its function definitions found ({nfuncs})")
    check(not big_files, f"no file over {MAX_FILE} lines without a \"{WHY}\" in its "
          "opening comment", "\n  " + "\n  ".join(big_files))
    check(not big_funcs, f"no function over {MAX_FUNCTION} lines without a \"{WHY}\" "
          "in the comment above it", "\n  " + "\n  ".join(big_funcs))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
