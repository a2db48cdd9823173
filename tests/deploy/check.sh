#!/usr/bin/env bash
# Deploy checks (run by `make check-deploy`, part of `make test`): the
# Dockerfile's stages carried out in Debian bookworm chroots, the runtime
# stage's binaries run there, deploy/ validated, the systemd unit verified.
# The work is in check.py (its docstring says what is checked and how);
# this wrapper makes sure the tools are there first and fails loudly if not.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "$(id -u)" != 0 ]; then
  echo "check-deploy: needs root (debootstrap, chroot, mount namespaces)" >&2
  exit 1
fi
# node and npm (for the Kubernetes schema check) come with this project's
# machines; where they do not, Debian's packages serve.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "check-deploy: installing Debian's nodejs and npm" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
missing=""
for tool in debootstrap chroot unshare systemd-analyze docker-compose shellcheck node npm; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
  echo "check-deploy: missing:$missing (make deps-deploy installs them)" >&2
  exit 1
fi
exec /usr/bin/python3 tests/deploy/check.py "$@"
