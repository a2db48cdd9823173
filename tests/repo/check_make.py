#!/usr/bin/python3
"""The Makefile's first command, as a dry run: what `make run` would
install and the address it would serve on, without installing, building
or starting anything.

`make -n` prints the recipes instead of running them (only the recursive
$(MAKE) lines run, themselves with -n), into a build folder that does not
exist: the check fails if it appears afterwards, or if var/ appears where
it was not. It checks that
- `make run` serves on 127.0.0.1:8080, `make run PORT=9090` on
  127.0.0.1:9090, `make run LISTEN=0.0.0.0:9091` on 0.0.0.0:9091 (LISTEN
  wins over PORT), and a PORT in the environment changes nothing;
- `make deps` (which `make run` uses) installs no package of DEPS_MPI
  (OpenMPI and ScaLAPACK), `make deps-mpi` installs DEPS_RUN and DEPS_MPI,
  `make deps-test` installs DEPS_MPI (mpi.py is part of `make test`), and
  without mpicc the build's note names `make deps-mpi`.
The lists are read from make itself (--eval), not written here again.
Ends with "N passed, N failed" as the other repository checks.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
B = "build-check-make"  # a build folder that must not come to exist

sys.path.insert(0, os.path.join(ROOT, "tests"))
from tally import check, summary  # noqa: E402


def make(args, env_extra=None):
    """make in the project root, free of any calling make's flags and
    variables (check-docs runs this under make)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "PORT", "LISTEN")}
    env.update(env_extra or {})
    p = subprocess.run(["make", "--no-print-directory", f"B={B}"] + args, cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def variable(name):
    rc, out = make(["-s", "--eval", f"km-check-print: ; @echo $({name})", "km-check-print"])
    if rc:
        raise RuntimeError(f"make: printing {name}: {out}")
    return out.split()


def listen(args, env_extra=None):
    """The --listen of the kmserve line `make -n run ARGS` prints."""
    rc, out = make(["-n", "run"] + args, env_extra)
    lines = [ln for ln in out.splitlines() if re.search(rf"{B}/kmserve\b.*--listen", ln)]
    if rc or len(lines) != 1:
        return None, out
    m = re.search(r"--listen (\S+)", lines[0])
    return m.group(1), out


def installs(target):
    """The packages `make -n TARGET` would check for and install."""
    rc, out = make(["-n", target])
    m = re.search(r"for p in ([^;]*); do", out)
    return (m.group(1).split() if m and rc == 0 else None), out


def main():
    var = os.path.join(ROOT, "var")
    had_var = os.path.exists(var)

    for args, env, want in [([], None, "127.0.0.1:8080"),
                            (["PORT=9090"], None, "127.0.0.1:9090"),
                            (["LISTEN=0.0.0.0:9091"], None, "0.0.0.0:9091"),
                            (["PORT=9090", "LISTEN=[::1]:9092"], None, "[::1]:9092"),
                            ([], {"PORT": "7070", "LISTEN": "0.0.0.0:7071"}, "127.0.0.1:8080")]:
        got, out = listen(args, env)
        what = " ".join(["make run"] + args) + (f" (with {env} in the environment)" if env else "")
        check(got == want, f"{what} serves on {want}", f"got {got}: " + "\n".join(out.splitlines()[-3:]))

    run, mpi, test = variable("DEPS_RUN"), variable("DEPS_MPI"), variable("DEPS_TEST")
    check(run and mpi and test, "DEPS_RUN, DEPS_MPI and DEPS_TEST are lists", (run, mpi, test))
    deps, out = installs("deps")
    check(deps is not None and set(run) <= set(deps) and not set(mpi) & set(deps),
          "make deps installs DEPS_RUN and nothing of DEPS_MPI", deps or out)
    deps, out = installs("deps-mpi")
    check(deps is not None and set(run) | set(mpi) <= set(deps), "make deps-mpi installs "
          "DEPS_RUN and DEPS_MPI", deps or out)
    deps, out = installs("deps-test")
    check(deps is not None and set(test) | set(mpi) <= set(deps),
          "make deps-test installs DEPS_TEST and DEPS_MPI", deps or out)
    rc, out = make(["-n", "mpi", "MPICC=false"])
    check(rc == 0 and "note: kmserve-mpi not built" in out and "make deps-mpi installs" in out,
          "without mpicc the build skips kmserve-mpi with a note naming make deps-mpi", out)

    check(not os.path.exists(os.path.join(ROOT, B)) and os.path.exists(var) == had_var,
          f"the dry runs made neither {B}/ nor var/", os.listdir(ROOT))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
