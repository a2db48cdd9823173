"""Debian bookworm chroots for the deploy checks (check.py) and the
fresh-machine check (fresh.py), and the pass/fail tally both print.

make_base() makes (once a week; cached in build/deploy/) a debootstrap
minbase of bookworm with the sources, updates and security fixes of the
debian:bookworm-slim image, as a tar; fresh_root() unpacks it into a new
folder; in_root() runs a command there in its own mount namespace with /proc.
Needs root.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tally  # noqa: E402,F401  (check, note and the closing line)
from tally import check, note  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "deploy")
CACHE = os.path.join(ROOT, "build", "deploy")
BASE_IMAGE = "debian:bookworm-slim"
BASE_TAR = os.path.join(CACHE, "bookworm-minbase.tar")
BASE_MAX_AGE = 7 * 86400  # refresh the base (security updates) weekly
MIRROR = "http://deb.debian.org/debian"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

def sh(argv, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run(argv, **kw)


def make_base():
    """debootstrap's minbase of bookworm with the sources, updates and
    security fixes of the debian:bookworm-slim image, as a tar."""
    if os.path.exists(BASE_TAR) and time.time() - os.path.getmtime(BASE_TAR) < BASE_MAX_AGE:
        note(f"base: cached {os.path.relpath(BASE_TAR, ROOT)}")
        return True
    os.makedirs(CACHE, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="base-", dir=CACHE)
    try:
        t0 = time.time()
        p = sh(["debootstrap", "--variant=minbase", "bookworm", tmp, MIRROR])
        if not check(p.returncode == 0, "debootstrap bookworm (minbase)", p.stdout[-1500:] + p.stderr[-1500:]):
            return False
        os.remove(os.path.join(tmp, "etc", "apt", "sources.list"))
        with open(os.path.join(tmp, "etc", "apt", "sources.list.d", "debian.sources"), "w") as f:
            f.write("Types: deb\nURIs: http://deb.debian.org/debian\n"
                    "Suites: bookworm bookworm-updates\nComponents: main\n"
                    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
                    "Types: deb\nURIs: http://deb.debian.org/debian-security\n"
                    "Suites: bookworm-security\nComponents: main\n"
                    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
        shutil.copy("/etc/resolv.conf", os.path.join(tmp, "etc", "resolv.conf"))
        p = in_root(tmp, ["/bin/sh", "-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive "
                          "apt-get -y -qq upgrade && apt-get clean && rm -rf /var/lib/apt/lists/*"],
                    {"PATH": DEFAULT_PATH, "HOME": "/root"})
        if not check(p.returncode == 0, "base: bookworm updates and security fixes applied",
                     p.stdout[-1500:] + p.stderr[-1500:]):
            return False
        os.chmod(tmp, 0o755)  # mkdtemp made it 0700: the image's / is 0755
        p = sh(["tar", "-C", tmp, "-cf", BASE_TAR + ".part", "."])
        if p.returncode:
            check(False, "base: tar", p.stderr)
            return False
        os.replace(BASE_TAR + ".part", BASE_TAR)
        note(f"base: made in {time.time() - t0:.0f} s")
        return True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fresh_root(name):
    root = os.path.join(CACHE, f"root-{name}")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    p = sh(["tar", "-C", root, "-xf", BASE_TAR])
    if p.returncode:
        raise RuntimeError(f"untar base: {p.stderr}")
    os.chmod(root, 0o755)
    shutil.copy("/etc/resolv.conf", os.path.join(root, "etc", "resolv.conf"))
    # debootstrap's minbase has no /etc/hosts, which every installed Debian
    # has (the installer writes it): without it "localhost" does not
    # resolve, and Selenium reaches chromedriver by that name
    hosts = os.path.join(root, "etc", "hosts")
    if not os.path.exists(hosts):
        with open(hosts, "w") as f:
            f.write("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
    return root


def in_root_argv(root, argv, env, user=None, cwd="/", machine=False):
    """argv run in root: its own mount namespace with /proc (gone when it
    ends), chroot, only `env`, as `user` (uid, gid), in cwd. The process
    execs down to argv[0], so its pid is the command's. machine=True also
    mounts /sys, a tmpfs on /dev/shm and a devpts of its own (terminals),
    as a booted machine has them."""
    spec = [f"--userspec={user[0]}:{user[1]}", f"--groups={user[1]}"] if user else []
    mounts = 'mount -t proc proc "$0/proc" || exit 125; '
    if machine:
        mounts += ('mount -t sysfs sys "$0/sys" || exit 125; mkdir -p "$0/dev/shm"; '
                   'mount -t tmpfs shm "$0/dev/shm" || exit 125; mkdir -p "$0/dev/pts"; '
                   'mount -t devpts -o newinstance,ptmxmode=0666 devpts "$0/dev/pts" '
                   '|| exit 125; touch "$0/dev/ptmx"; '
                   'mount --bind "$0/dev/pts/ptmx" "$0/dev/ptmx" || exit 125; ')
    return (["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
             mounts + 'exec chroot "$@"', root]
            + spec + [root, "/usr/bin/env", "-i"] + [f"{k}={v}" for k, v in env.items()]
            + ["/bin/sh", "-c", 'cd "$0" || exit 125; exec "$@"', cwd] + list(argv))


def in_root(root, argv, env, user=None, cwd="/", machine=False, **kw):
    return sh(in_root_argv(root, argv, env, user, cwd, machine), **kw)
