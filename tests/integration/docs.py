#!/usr/bin/python3
"""The documents' shell examples, run against the real daemon and their
shown answers compared with the real ones.

Which blocks run. Every fenced block labelled sh, bash, shell or console
in README.md, docs/*.md and clients/python/README.md, in document order;
per file a fresh daemon (this runner's --server, as `make run` starts it,
on a free loopback port) with a fresh models directory, so each example
builds on the ones before it. A block whose first line is exactly

    # (not run by the docs test: REASON)

is skipped (it needs a Docker engine, Kubernetes, systemd as PID 1 or a
second machine, changes the machine, is a long benchmark, or is the quick
start's serve or test command, which `make check-fresh` runs); the skips
and their reasons are listed at the end. A block with no
label is text (output, a file, a diagram) and is not run; an unlabelled
block that starts like a command (`$ `, curl, kmctl, make, ...) fails, so
a shell example cannot hide from the run by losing its label.

How a block runs. All its commands in one bash, in a folder of their own
(the file's), holding `data`, `tests` and the other top-level folders of
the repository as links (`clients` as a copy, as pip writes into it),
`build/kmserve` and `build/kmctl` (this runner's --server and
$KM_KMCTL), and a `bin` first on PATH with those two and python3 as
/usr/bin/python3; HOME is a folder of the run's. Addresses
localhost:PORT, 127.0.0.1:PORT and 0.0.0.0:PORT are rewritten to
127.0.0.1 and a free port (8080 is the file's daemon; KMSERVE_URL points
kmctl at it). A command that starts kmserve (anything but --help or
--version) runs in the background; the block waits until its port takes
connections and stops it (SIGTERM) when the block ends. Every command
must exit 0 (an example of a failing command shows it with
`; echo "exit $?"`).

Shown answers. In sh blocks, the comment lines right after a command
(no blank line between) are its answer: "# " starts a line of the
answer, "#  " (two spaces) continues the line before (the text after
"#  " is appended as it is, so a long JSON line may be wrapped anywhere
JSON allows white space). A comment at the end of a command line is its
answer when it starts with "{" or "[" or is a number (`# 204`);
other trailing comments and comment lines after a blank line are prose.
In console blocks, a line starting "$ " is a command and the lines up to
the next one are its answer (stdout and stderr, as a terminal shows
them). A command without a shown answer is only run.

Matching. The answer's lines and the real output's lines (trailing white
space and a final empty line dropped) are matched in order; a shown line
that is just "…" matches any number of lines (none too). A shown line
starting with "{" or "[" that parses as JSON-with-… is compared as JSON
with the real line; other lines as text where "…" matches any run of
characters. JSON-with-… is JSON where "…":
  - as a value matches any value;
  - as a member of an object (`{"a":1,…}`) allows members not shown;
    without it the object's members are exactly the shown ones (in any
    order);
  - as an element of an array matches any number of elements (none too);
  - inside a string matches any run of characters (`"j-…"`);
  - right after a number's digits (`0.99462…`) matches a number that
    differs from the shown one by less than one unit of its last shown
    digit.
Strings, booleans, null and structure compare exactly; numbers match
when |shown - real| <= 1e-6 * max(|shown|, |real|) (relative 1e-6), or
when both are at most 1e-12 in magnitude (rounding noise of a zero).
Each command is one check named FILE:LINE; a failure says what differs
(the JSON path, or the first line that does not match). A block holding a
command that installs, builds or deploys (apt-get, make, sudo, docker,
kubectl, systemctl) must be marked and is never run.

Besides: every "about N MB" the documents say of the Docker image is the
Dockerfile's "Expected size" (the figure tests/deploy/check.py measures).

Usage, from the project root:
    KM_KMCTL=build/kmctl /usr/bin/python3 tests/integration/docs.py --server build/kmserve
    (--only FILE[,FILE]: only those documents, as named in the results;
    --show: every command's real output too, for writing the answers)
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import contextlib
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (the daemon harness of run.py)
from run import Daemon, check  # noqa: E402
from tally import note  # noqa: E402

ROOT = run.ROOT
REL_TOL = 1e-6
ZERO = 1e-12
ELL = "…"
SHOW = False
SKIP_RE = re.compile(r"^# \(not run by the docs test: (.+)\)$")
LABELS = ("sh", "bash", "shell", "console")
BLOCK_TIMEOUT = 900   # seconds for one block (a loaded machine, sanitizers)
# Commands that change the machine (install, build, deploy): a block holding
# one must be marked, and is never run.
RISKY = re.compile(r"^(sudo |apt-get |apt |make\b|docker |kubectl |systemctl |\S*/?make )", re.M)
COMMAND_LIKE = re.compile(r"^(\$ |curl |kmctl |kmserve |build/|make |svm-|python3? |docker |kubectl |sudo )")


def documents():
    return (["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
            + ["clients/python/README.md"])


# ---------------------------------------------------------------- blocks

def blocks(rel):
    """[(label, first line number of the body, [lines])] of a document's
    fenced blocks; unlabelled blocks that look like commands are reported."""
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        label, start = m.group(1), i + 1
        j = start
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body = lines[start:j]
        if label in LABELS:
            out.append((label, start + 1, body))
        elif label == "" and body and COMMAND_LIKE.match(body[0]):
            check(False, f"{rel}:{start + 1}: a block that starts like a command is labelled sh or console",
                  body[0])
        i = j + 1
    return out


def open_state(text):
    """True while text (a command's lines so far) ends inside quotes or
    with a backslash; also returns where a trailing comment starts."""
    q, i, comment = None, 0, None
    while i < len(text):
        c = text[i]
        if q == "'":
            if c == "'":
                q = None
        elif q == '"':
            if c == "\\":
                i += 1
            elif c == '"':
                q = None
        else:
            if c == "\\":
                if i + 1 == len(text):
                    return True, comment
                i += 1
            elif c in "'\"":
                q = c
            elif c == "#" and (i == 0 or text[i - 1] in " \t;|&("):
                end = text.find("\n", i)
                if end < 0:
                    comment = i
                    break
                i = end
                continue
        i += 1
    return q is not None, comment


def is_answer_comment(c):
    return c.startswith("{") or c.startswith("[") or re.fullmatch(r"-?\d+(\.\d+)?", c) is not None


def sh_steps(start, body):
    """[(line, command, answer lines or None, answer's first line)]."""
    steps, i = [], 0
    while i < len(body):
        ln = body[i]
        if not ln.strip() or ln.startswith("#"):
            i += 1
            continue
        first = start + i
        cmd = [ln]
        i += 1
        while open_state("\n".join(cmd))[0] and i < len(body):
            cmd.append(body[i])
            i += 1
        text = "\n".join(cmd)
        answer, at = None, None
        _, c = open_state(text)
        if c is not None:
            trailing = text[c + 1:].strip()
            if is_answer_comment(trailing):
                answer, at = [trailing], first + len(cmd) - 1
        if i < len(body) and body[i].startswith("#"):
            answer, at = [], start + i
            while i < len(body) and body[i].startswith("#"):
                ln = body[i]
                if ln.startswith("#  ") and answer:
                    answer[-1] += ln[3:]
                else:
                    answer.append(ln[2:] if ln.startswith("# ") else ln[1:])
                i += 1
        steps.append((first, text, answer, at))
    return steps


def console_steps(start, body):
    steps, i = [], 0
    while i < len(body):
        if not body[i].startswith("$ "):
            check(False, f"line {start + i}: console output before any command", body[i])
            i += 1
            continue
        first = start + i
        cmd = [body[i][2:]]
        i += 1
        while open_state("\n".join(cmd))[0] and i < len(body):
            cmd.append(body[i][2:] if body[i].startswith("> ") else body[i])
            i += 1
        answer = []
        while i < len(body) and not body[i].startswith("$ "):
            answer.append(body[i])
            i += 1
        steps.append((first, "\n".join(cmd), answer, first + 1))
    return steps


# ---------------------------------------------------------------- JSON with …

class Wild:
    """… as a value, an array element or an object member."""

    def __repr__(self):
        return ELL


WILD = Wild()


class Pattern(str):
    """A string holding …: any run of characters where … stands."""


class Approx:
    """A number shown with a … tail: within one unit of its last digit."""

    def __init__(self, text):
        self.value = float(text)
        frac = text.split("e")[0].split("E")[0]
        digits = len(frac.split(".")[1]) if "." in frac else 0
        exp = int(re.split("[eE]", text)[1]) if re.search("[eE]", text) else 0
        self.unit = 10.0 ** (exp - digits)
        self.text = text

    def __repr__(self):
        return self.text + ELL


class OpenObject(dict):
    """An object shown with a … member: may hold more members."""


class ShownParser:
    """JSON where … may stand for a value, an element, a member, a run of a
    string's characters or a number's further digits."""

    def __init__(self, text):
        self.s, self.i = text, 0

    def fail(self, what):
        raise ValueError(f"{what} at offset {self.i}")

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def parse(self):
        v = self.value()
        self.ws()
        if self.i != len(self.s):
            self.fail("text after the value")
        return v

    def value(self):
        self.ws()
        if self.i >= len(self.s):
            self.fail("end of text")
        c = self.s[self.i]
        if c == ELL:
            self.i += 1
            return WILD
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c == '"':
            return self.string()
        for word, v in (("true", True), ("false", False), ("null", None)):
            if self.s.startswith(word, self.i):
                self.i += len(word)
                return v
        m = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?").match(self.s, self.i)
        if not m:
            self.fail("not a value")
        self.i = m.end()
        if self.s.startswith(ELL, self.i):
            self.i += 1
            return Approx(m.group(0))
        t = m.group(0)
        return float(t) if re.search(r"[.eE]", t) else int(t)

    def string(self):
        end = self.i + 1
        while True:
            if end >= len(self.s):
                self.fail("unterminated string")
            if self.s[end] == "\\":
                end += 2
                continue
            if self.s[end] == '"':
                break
            end += 1
        v = json.loads(self.s[self.i:end + 1])
        self.i = end + 1
        return Pattern(v) if ELL in v else v

    def obj(self):
        self.i += 1
        members, open_ = {}, False
        self.ws()
        if self.s.startswith("}", self.i):
            self.i += 1
            return members
        while True:
            self.ws()
            if self.s.startswith(ELL, self.i):
                self.i += 1
                open_ = True
            else:
                k = self.string()
                if isinstance(k, Pattern):
                    self.fail("… in a member's name")
                self.ws()
                if not self.s.startswith(":", self.i):
                    self.fail("':' expected")
                self.i += 1
                members[k] = self.value()
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                continue
            if self.s.startswith("}", self.i):
                self.i += 1
                return OpenObject(members) if open_ else members
            self.fail("',' or '}' expected")

    def arr(self):
        self.i += 1
        items = []
        self.ws()
        if self.s.startswith("]", self.i):
            self.i += 1
            return items
        while True:
            items.append(self.value())
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                continue
            if self.s.startswith("]", self.i):
                self.i += 1
                return items
            self.fail("',' or ']' expected")


def glob_match(pattern, text):
    parts = pattern.split(ELL)
    rx = ".*".join(re.escape(p) for p in parts)
    return re.fullmatch(rx, text, re.S) is not None


NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"


def text_match(shown, real):
    """A text line: … matches any run of characters, numbers compare as
    in JSON (a number with a … tail: within a unit of its last digit)."""
    rx, nums, i = [], [], 0
    for m in re.finditer(NUMBER + "(…)?|…", shown):
        rx.append(re.escape(shown[i:m.start()]))
        if m.group(0) == ELL:
            rx.append(".*?")
        else:
            t = m.group(0)
            nums.append(Approx(t[:-1]) if t.endswith(ELL) else (float(t) if re.search(r"[.eE]", t) else int(t)))
            rx.append("(" + NUMBER + ")")
        i = m.end()
    rx.append(re.escape(shown[i:]))
    m = re.fullmatch("".join(rx), real, re.S)
    if not m:
        return False
    for want, got in zip(nums, m.groups()):
        got = float(got) if re.search(r"[.eE]", got) else int(got)
        if json_diff(want, got) is not None:
            return False
    return True


def short(v):
    t = repr(v) if isinstance(v, (Wild, Approx)) else json.dumps(v, ensure_ascii=False, default=repr)
    return t if len(t) <= 120 else t[:117] + "..."


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def json_diff(shown, real, path="$"):
    """None when real matches shown, else a sentence saying where not."""
    if shown is WILD:
        return None
    if isinstance(shown, Approx):
        if number(real) and abs(real - shown.value) < shown.unit:
            return None
        return f"{path}: shown {shown!r} (within {shown.unit:g}), real {short(real)}"
    if number(shown):
        if number(real):
            a, b = float(shown), float(real)
            if abs(a - b) <= REL_TOL * max(abs(a), abs(b)) or (abs(a) <= ZERO and abs(b) <= ZERO):
                return None
        return f"{path}: shown {short(shown)}, real {short(real)}"
    if isinstance(shown, Pattern):
        if isinstance(real, str) and glob_match(shown, real):
            return None
        return f"{path}: shown {shown!r}, real {short(real)}"
    if isinstance(shown, (str, bool)) or shown is None:
        if type(real) is type(shown) and real == shown:
            return None
        return f"{path}: shown {short(shown)}, real {short(real)}"
    if isinstance(shown, dict):
        if not isinstance(real, dict):
            return f"{path}: shown an object, real {short(real)}"
        for k, v in shown.items():
            if k not in real:
                return f"{path}: shown member {k!r}, which the real answer lacks"
            d = json_diff(v, real[k], f"{path}.{k}")
            if d:
                return d
        if not isinstance(shown, OpenObject):
            extra = [k for k in real if k not in shown]
            if extra:
                return f"{path}: real members not shown (and no …): {', '.join(extra)}"
        return None
    if isinstance(shown, list):
        if not isinstance(real, list):
            return f"{path}: shown an array, real {short(real)}"
        if list_match(shown, real, path):
            return None
        if WILD not in shown and len(shown) != len(real):
            return f"{path}: shown {len(shown)} elements, real {len(real)}: {short(real)}"
        if WILD not in shown:
            for k, (a, b) in enumerate(zip(shown, real)):
                d = json_diff(a, b, f"{path}[{k}]")
                if d:
                    return d
        return f"{path}: shown {short(shown)}, real {short(real)}"
    return f"{path}: cannot compare {short(shown)}"


def list_match(shown, real, path):
    if not shown:
        return not real
    if shown[0] is WILD:
        return any(list_match(shown[1:], real[k:], path) for k in range(len(real) + 1))
    return bool(real) and json_diff(shown[0], real[0], path) is None and list_match(shown[1:], real[1:], path)


def shown_json(line):
    if not line.startswith(("{", "[")):
        return None, False
    try:
        return ShownParser(line).parse(), True
    except ValueError:
        return None, False


def line_diff(shown, real):
    """None when the real line matches the shown one, else why not."""
    v, ok = shown_json(shown)
    if shown.startswith(("{", "[")) and not ok:
        try:
            ShownParser(shown).parse()
        except ValueError as e:
            return f"the shown line is not JSON (with …): {e}"
    if ok:
        try:
            r = json.loads(real)
        except ValueError:
            return f"shown JSON, real text {real[:300]!r}"
        return json_diff(v, r)
    if text_match(shown, real):
        return None
    return f"shown {shown[:300]!r}, real {real[:300]!r}"


def answer_diff(shown, real_text):
    """Matches the shown lines against the real output's lines."""
    real = [ln.rstrip() for ln in real_text.replace("\r\n", "\n").split("\n")]
    while real and real[-1] == "":
        real.pop()
    shown = [ln.rstrip() for ln in shown]
    while shown and shown[-1] == "":
        shown.pop()
    best = [None]

    def walk(i, j):
        if i == len(shown):
            if j == len(real):
                return True
            best[0] = best[0] or f"real output goes on after the shown answer: {real[j][:300]!r}"
            return False
        if shown[i] == ELL:
            return any(walk(i + 1, k) for k in range(j, len(real) + 1))
        if j == len(real):
            best[0] = best[0] or f"shown line {i + 1} {shown[i][:300]!r}, the real output has ended"
            return False
        d = line_diff(shown[i], real[j])
        if d:
            best[0] = best[0] or f"line {i + 1} of the answer: {d}"
            return False
        return walk(i + 1, j + 1)
    return None if walk(0, 0) else best[0]


# ---------------------------------------------------------------- running

def free_port():
    return run.free_port()


class Place:
    """A document's folder: the repository's folders as links, its build
    as this run's binaries, a bin first on PATH, and the port map."""

    def __init__(self, tmp, server, kmctl, port):
        self.dir = os.path.join(tmp, "work")
        os.makedirs(os.path.join(self.dir, "build"))
        for name in os.listdir(ROOT):
            if name.startswith((".", "build", "var")) or name == "clients":
                continue
            os.symlink(os.path.join(ROOT, name), os.path.join(self.dir, name))
        shutil.copytree(os.path.join(ROOT, "clients"), os.path.join(self.dir, "clients"),
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        bindir = os.path.join(tmp, "bin")
        os.makedirs(bindir)
        for d in (os.path.join(self.dir, "build"), bindir):
            os.symlink(server, os.path.join(d, "kmserve"))
            os.symlink(kmctl, os.path.join(d, "kmctl"))
        os.symlink("/usr/bin/python3", os.path.join(bindir, "python3"))
        self.home = os.path.join(tmp, "home")
        os.makedirs(self.home)
        self.ports = {8080: port}
        self.env = dict(os.environ)
        for k in ("KMSERVE_TOKEN", "KMSERVE_CACERT", "KMSERVE_URL", "PYTHONPATH", "VIRTUAL_ENV"):
            self.env.pop(k, None)
        self.env.update(PATH=bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                        HOME=self.home, TERM="dumb", KMSERVE_URL=f"http://127.0.0.1:{port}")

    def rewrite(self, cmd):
        def port(m):
            p = int(m.group(2))
            if p not in self.ports:
                self.ports[p] = free_port()
            host = "127.0.0.1" if m.group(1) == "0.0.0.0" else m.group(1)
            return f"{host}:{self.ports[p]}"
        return re.sub(r"\b(localhost|127\.0\.0\.1|0\.0\.0\.0):(\d{2,5})\b", port, cmd)


def daemon_start(cmd):
    """The port a command that starts kmserve listens on, or None."""
    first = cmd.split("\n")[0].split()
    words = [w for w in first if "=" not in w or w.startswith("-")]
    if not words or os.path.basename(words[0]) != "kmserve":
        return None
    if any(w in ("--help", "-h", "--version") for w in words):
        return None
    m = re.search(r"--listen[ =]\S*:(\d+)", cmd)
    return int(m.group(1)) if m else 8080


def script(place, steps, out):
    """The bash text that runs a block's steps, each into out/N.out with
    its status in out/N.rc."""
    lines = ["cd " + sh_quote(place.dir), "exec </dev/null", "kmd_pids=",
             "trap 'for p in $kmd_pids; do kill -TERM $p 2>/dev/null; done; wait' EXIT"]
    for n, (_, cmd, _, _) in enumerate(steps):
        cmd = place.rewrite(cmd)
        o = sh_quote(os.path.join(out, str(n)))
        p = daemon_start(cmd)
        if p is not None:
            cmd = re.sub(r"\s*&\s*$", "", cmd)
            lines.append(f"{{ {cmd}\n}} >{o}.out 2>&1 &")
            lines.append(f"kmd_pids=\"$kmd_pids $!\"; kmd_n=0; "
                         f"until (exec 3<>/dev/tcp/127.0.0.1/{p}) 2>/dev/null; do "
                         f"kill -0 $! 2>/dev/null || break; kmd_n=$((kmd_n+1)); "
                         f"[ $kmd_n -lt 1200 ] || break; sleep 0.1; done; "
                         f"if kill -0 $! 2>/dev/null; then echo 0; else echo 1; fi >{o}.rc")
        else:
            lines.append(f"{{ {cmd}\n}} >{o}.out 2>&1; echo $? >{o}.rc")
    return "\n".join(lines) + "\n"


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def run_block(rel, place, label, start, body, tmp):
    steps = sh_steps(start, body) if label != "console" else console_steps(start, body)
    out = tempfile.mkdtemp(prefix="block-", dir=tmp)
    text = script(place, steps, out)
    risky = [c for _, c, _, _ in steps if RISKY.match(c)]
    if risky:
        check(False, f"{rel}:{start}: a block that installs, builds or deploys is marked "
              "\"# (not run by the docs test: REASON)\"", risky[0].splitlines()[0])
        return
    proc = subprocess.Popen(["/bin/bash", "-c", text], env=place.env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        pass
    finally:
        # the block's session: its background daemons and anything left
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for n, (line, cmd, answer, at) in enumerate(steps):
        name = f"{rel}:{line}: {cmd.splitlines()[0][:70]}"
        base = os.path.join(out, str(n))
        try:
            with open(base + ".rc") as f:
                rc = int(f.read().strip() or "1")
        except (OSError, ValueError):
            check(False, name, f"did not finish within {BLOCK_TIMEOUT} s (or an earlier command hung)")
            continue
        try:
            with open(base + ".out", encoding="utf-8", errors="replace") as f:
                real = f.read()
        except OSError:
            real = ""
        if SHOW:
            note(f"{rel}:{line} real output:\n" + real.rstrip("\n"))
        if rc != 0:
            check(False, name, f"exit status {rc}; output: {real[-1500:]}")
            continue
        if answer is None:
            check(True, name)
            continue
        d = answer_diff(answer, real)
        check(d is None, name, f"{rel}:{at}: {d}")


def run_document(rel, server, kmctl, skipped):
    found = blocks(rel)
    runnable = []
    for label, start, body in found:
        m = SKIP_RE.match(body[0]) if body else None
        if m:
            skipped.append((f"{rel}:{start}", m.group(1)))
        else:
            runnable.append((label, start, body))
    if not runnable:
        return
    tmp = tempfile.mkdtemp(prefix="kmserve-docs-")
    models = os.path.join(tmp, "work", "var", "models")
    d = None
    try:
        port = free_port()
        place = Place(tmp, server, kmctl, port)
        os.makedirs(models)
        d = Daemon(server, models)
        d.start()
        place.ports[8080] = d.port
        place.env["KMSERVE_URL"] = f"http://127.0.0.1:{d.port}"
        for label, start, body in runnable:
            run_block(rel, place, label, start, body, tmp)
    except Exception as e:  # a crash of the runner is a failure, not a pass
        check(False, f"{rel}: runner", repr(e))
    finally:
        if d:
            check(d.stop() == 0, f"{rel}: the daemon exits 0 on SIGTERM after the examples")
        shutil.rmtree(tmp, ignore_errors=True)


def matcher_checks():
    """The matcher refuses what differs and takes what … allows (so a
    matcher that took anything would fail here)."""
    cases = [  # (shown lines, real output, matches)
        (['{"a":480}'], '{"a":1264}', False),
        (['{"a":1}'], '{"a":1,"b":2}', False),
        (['{"a":1,…}'], '{"a":1,"b":2}', True),
        (['{"a":1,"b":2}'], '{"b":2.0000000001,"a":1}', True),
        (['{"a":1.0}'], '{"a":1.00001}', False),
        (['{"a":true}'], '{"a":1}', False),
        (['{"a":"x"}'], '{"a":"y"}', False),
        (['{"a":[1,…]}'], '{"a":[1,2,3]}', True),
        (['{"a":[…,3]}'], '{"a":[1,2]}', False),
        (['{"a":…}'], '{"a":{"b":[1]}}', True),
        (['{"id":"j-…"}'], '{"id":"j-12ab"}', True),
        (['{"id":"j-…"}'], '{"id":"x-12ab"}', False),
        (['{"s":0.99462…}'], '{"s":0.994629}', True),
        (['{"s":0.99462…}'], '{"s":0.99472}', False),
        (["HTTP/1.1 202 Accepted", "…", "Location: /v1/jobs/j-…"],
         "HTTP/1.1 202 Accepted\r\nDate: x\r\nLocation: /v1/jobs/j-1\r\n", True),
        (["HTTP/1.1 202 Accepted"], "HTTP/1.1 201 Created\n", False),
        (["a", "b"], "a\n", False),
        (["a"], "a\nb\n", False),
        (["0.981…,0.018…"], "0.9815885547066432,0.01841144529335681", True),
        (["569 rows"], "570 rows", False),
    ]
    bad = [(sh, real) for sh, real, ok in cases if (answer_diff(sh, real) is None) != ok]
    check(not bad, f"the answer matcher decides {len(cases)} known cases right", bad)


def image_size_quotes():
    """The documents quote the Docker image's size as the Dockerfile states
    it (the figure `make check-deploy` measures and holds within 15 %)."""
    with open(os.path.join(ROOT, "Dockerfile"), encoding="utf-8") as f:
        m = re.search(r"Expected size: about (\d+) MB", f.read())
    if not check(m is not None, "the Dockerfile states the image's size"):
        return
    for rel in documents():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            text = f.read()
        for q in re.finditer(r"[Aa]bout (\d+) MB\b", text):
            line = text.count("\n", 0, q.start()) + 1
            around = text[max(0, q.start() - 800):q.end()]
            if "runtime stage" not in around:
                continue
            check(q.group(1) == m.group(1), f"{rel}:{line}: the image's size as the Dockerfile states it",
                  f"{rel} says about {q.group(1)} MB, the Dockerfile about {m.group(1)} MB")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default="build/kmserve")
    ap.add_argument("--kmctl", default=os.environ.get("KM_KMCTL", "build/kmctl"))
    ap.add_argument("--only", default="")
    ap.add_argument("--show", action="store_true", help="print every command's real output")
    args = ap.parse_args()
    global SHOW
    SHOW = args.show
    server, kmctl = os.path.abspath(args.server), os.path.abspath(args.kmctl)
    only = [s for s in args.only.split(",") if s]
    skipped = []
    matcher_checks()
    if not only:
        image_size_quotes()
    for rel in documents():
        if only and rel not in only:
            continue
        run_document(rel, server, kmctl, skipped)
    for where, why in skipped:
        note(f"skipped {where}: {why}")
    reasons = {}
    for _, why in skipped:
        reasons[why] = reasons.get(why, 0) + 1
    for why, n in sorted(reasons.items()):
        note(f"{n} skipped: {why}")
    note(f"{len(skipped)} blocks skipped in all")
    return run.tally.summary()


if __name__ == "__main__":
    sys.exit(main())
