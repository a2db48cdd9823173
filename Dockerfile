# kmserve, kmctl and kmserve-mpi on Debian 12 (bookworm), in two stages.
#
#   docker build -t kmserve .
#   docker run -p 8080:8080 -v kmserve-models:/var/lib/kmserve/models kmserve
#
# The build stage has the compilers and -dev packages and runs `make all`
# (kmserve, kmctl and, with OpenMPI and ScaLAPACK there, kmserve-mpi); the
# runtime stage has only the shared libraries the binaries load, OpenMPI's
# mpirun with ScaLAPACK for distributed fits, and ssh (client and server)
# for mpirun's launch across pods (deploy/mpi/mpijob.yaml); it runs as an
# unprivileged user, listens on 0.0.0.0:8080 and keeps models in a volume.
# Expected size: about 215 MB: debian:bookworm-slim (75 MB), the runtime
# packages (139 MiB installed: 42 of them OpenBLAS with kernels for every
# x86-64 CPU, 35 ICU, which OpenMPI's hwloc plugins pull in through
# libxml2, 9 OpenMPI, the rest its transports, ScaLAPACK, ssh and the
# daemon's libraries) and the stripped binaries (1 MiB), as measured by
# tests/deploy/check.sh, which carries out both stages in Debian chroots.
#
# Every setting is an environment variable (KMSERVE_*, see `kmserve --help`);
# e.g. -e KMSERVE_TOKEN_FILE=/run/secrets/tokens. Distributed fits are off
# until KMSERVE_MPI_LAUNCH is set (docs/distributed.md); the worker is
# /usr/local/bin/kmserve-mpi, beside kmserve, where the daemon looks.

FROM debian:bookworm-slim AS build
# Package versions are not pinned: they follow bookworm's point releases.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc make libc6-dev pkg-config libmicrohttpd-dev libcjson-dev \
      libopenblas-dev liblapacke-dev libcurl4-gnutls-dev libjs-chart.js \
      libopenmpi-dev libscalapack-openmpi-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY core/ core/
COPY common/ common/
COPY api/ api/
COPY server/ server/
COPY cli/ cli/
COPY mpi/ mpi/
RUN make -j"$(nproc)" all \
 && test -x build/kmserve-mpi \
 && strip build/kmserve build/kmctl build/kmserve-mpi

FROM debian:bookworm-slim
# mpirun reaches the MPIJob's worker pods by ssh on port 2222 (the Kubeflow
# MPI operator's convention for non-root pods): no host key prompts and no
# known_hosts file (its .ssh is a read-only Secret); a worker runs
# `sshd -De -f /var/lib/kmserve/.sshd_config` as the image's user, with the
# host key the operator mounts in /var/lib/kmserve/.ssh. The user has a
# shell (/bin/sh, not nologin): sshd runs mpirun's orted through it.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmicrohttpd12 libcjson1 libopenblas0-pthread liblapacke libcurl3-gnutls \
      openmpi-bin libscalapack-openmpi2.2 openssh-client openssh-server \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 kmserve \
 && useradd --system --uid 10001 --gid kmserve --home-dir /var/lib/kmserve \
      --shell /bin/sh kmserve \
 && install -d -o kmserve -g kmserve -m 0750 /var/lib/kmserve /var/lib/kmserve/models \
 && install -d -m 0755 /run/sshd \
 && printf '%s\n' 'Host *' '    Port 2222' '    StrictHostKeyChecking no' \
      '    UserKnownHostsFile /dev/null' > /etc/ssh/ssh_config.d/kmserve-mpi.conf \
 && printf '%s\n' 'Port 2222' 'PidFile /var/lib/kmserve/.sshd.pid' \
      'HostKey /var/lib/kmserve/.ssh/id_rsa' 'StrictModes no' \
      'AuthorizedKeysFile /var/lib/kmserve/.ssh/authorized_keys' \
      'PasswordAuthentication no' 'UsePAM no' > /var/lib/kmserve/.sshd_config \
 && chown kmserve:kmserve /var/lib/kmserve/.sshd_config
COPY --from=build /src/build/kmserve /src/build/kmctl /src/build/kmserve-mpi /usr/local/bin/
USER kmserve:kmserve
WORKDIR /var/lib/kmserve
ENV KMSERVE_LISTEN=0.0.0.0:8080 \
    KMSERVE_MODELS_DIR=/var/lib/kmserve/models \
    KMSERVE_URL=http://127.0.0.1:8080
VOLUME ["/var/lib/kmserve/models"]
EXPOSE 8080
# kmctl health: exit 0 iff GET /readyz answers 200 (KMSERVE_URL above).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["kmctl", "health"]
# SIGTERM drains: running fits get KMSERVE_SHUTDOWN_TIMEOUT (30 s) to end;
# give `docker stop` a longer --time (or stop_grace_period in compose).
STOPSIGNAL SIGTERM
ENTRYPOINT ["kmserve"]
