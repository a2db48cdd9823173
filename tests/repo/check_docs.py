#!/usr/bin/python3
"""The repository stands alone: nothing in it refers to the folder that
sat beside it during development, and every link in its Markdown resolves
inside the repository (files, and #anchors to headings).

Reads the files git tracks (or, outside a git checkout, every file under
the project root but build folders). Usage, from the project root:
    /usr/bin/python3 tests/repo/check_docs.py
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Spelt in two pieces so that this file does not match itself.
OUTSIDE = "../" + "shared"
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tally import check, summary  # noqa: E402

SKIP_DIRS = {".git", "build", "build-san", "build-tsan", "build-fuzz", "var", "node_modules"}

def tracked_files():
    p = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True)
    if p.returncode == 0 and p.stdout:
        return [f for f in p.stdout.decode().split("\0") if f]
    out = []
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        out += [os.path.relpath(os.path.join(top, f), ROOT) for f in files]
    return out


def anchors(path):
    """GitHub-style anchors of a Markdown file's headings."""
    out = set()
    with open(path, encoding="utf-8") as f:
        in_code = False
        for line in f:
            if line.startswith("```"):
                in_code = not in_code
            if in_code or not line.startswith("#"):
                continue
            text = line.lstrip("#").strip().lower()
            text = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
            base, n = text, 1
            while text in out:
                text = f"{base}-{n}"
                n += 1
            out.add(text)
    return out


def links(path):
    """(target, line number) of every inline Markdown link outside code."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        yield m.group(1), text.count("\n", 0, m.start()) + 1


def main():
    files = tracked_files()
    hits = []
    for rel in files:
        path = os.path.join(ROOT, rel)
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        for n, line in enumerate(data.split(b"\n"), 1):
            if OUTSIDE.encode() in line:
                hits.append(f"{rel}:{n}")
    check(not hits, f"no file refers to {OUTSIDE} ({len(files)} files)", ", ".join(hits[:20]))

    bad, count = [], 0
    for rel in files:
        if not rel.endswith(".md"):
            continue
        src = os.path.join(ROOT, rel)
        for target, line in links(src):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):   # http:, https:, mailto:
                bad.append(f"{rel}:{line}: {target} leaves the repository")
                continue
            count += 1
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(src), file_part)) if file_part else src
            if not dest.startswith(ROOT + os.sep) and dest != ROOT:
                bad.append(f"{rel}:{line}: {target} points outside the repository")
            elif not os.path.exists(dest):
                bad.append(f"{rel}:{line}: {target} does not exist")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                bad.append(f"{rel}:{line}: {target}: no heading #{anchor}")
    check(not bad, f"every Markdown link resolves inside the repository ({count} links)",
          "\n  " + "\n  ".join(bad))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
