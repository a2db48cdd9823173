"""OpenBLAS's kernels for the benchmarks. Ours and the references load the
same OpenBLAS and must run the same kernels: unless OPENBLAS_CORETYPE is
set, this sets it to the kernels kmserve itself runs on this CPU (the
second line of `kmserve --version`; core/base/km_blas.c) and re-executes
the script, so that numpy, scipy and scikit-learn in this process and every
child get them too. Import it first, before numpy. CORE names them."""
import os
import subprocess
import sys


def _bin_dir(argv):
    for i, a in enumerate(argv):
        if a == "--bin" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--bin="):
            return a[len("--bin="):]
    return "build"


if "OPENBLAS_CORETYPE" not in os.environ:
    try:
        out = subprocess.run([os.path.join(_bin_dir(sys.argv), "kmserve"), "--version"],
                             capture_output=True, text=True, timeout=60).stdout
    except OSError:
        out = ""
    core = next((line.split(":", 1)[1].strip() for line in out.splitlines()
                 if line.startswith("OpenBLAS kernels:")), None)
    if core:
        os.environ["OPENBLAS_CORETYPE"] = core
        os.execv(sys.executable, [sys.executable] + sys.argv)

CORE = os.environ.get("OPENBLAS_CORETYPE", "OpenBLAS's own choice")
