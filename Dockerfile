# kmserve and kmctl on Debian 12 (bookworm), in two stages.
#
#   docker build -t kmserve .
#   docker run -p 8080:8080 -v kmserve-models:/var/lib/kmserve/models kmserve
#
# The build stage has the compilers and -dev packages and runs `make all`;
# the runtime stage has only the shared libraries the two binaries load,
# runs as an unprivileged user, listens on 0.0.0.0:8080 and keeps models in
# a volume. Expected size: about 134 MB: debian:bookworm-slim (75 MB), the
# runtime packages (59 MiB installed, 42 of them OpenBLAS with kernels for
# every x86-64 CPU) and the stripped binaries (0.25 MiB), as measured by
# tests/deploy/check.sh, which carries out both stages in Debian chroots.
#
# Every setting is an environment variable (KMSERVE_*, see `kmserve --help`);
# e.g. -e KMSERVE_TOKEN_FILE=/run/secrets/tokens.

FROM debian:bookworm-slim AS build
# Package versions are not pinned: they follow bookworm's point releases.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc make libc6-dev pkg-config libmicrohttpd-dev libcjson-dev \
      libopenblas-dev liblapacke-dev libcurl4-gnutls-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY core/ core/
COPY api/ api/
COPY server/ server/
COPY cli/ cli/
RUN make -j"$(nproc)" all \
 && strip build/kmserve build/kmctl

FROM debian:bookworm-slim
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmicrohttpd12 libcjson1 libopenblas0-pthread liblapacke libcurl3-gnutls \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 kmserve \
 && useradd --system --uid 10001 --gid kmserve --home-dir /var/lib/kmserve \
      --shell /usr/sbin/nologin kmserve \
 && install -d -o kmserve -g kmserve -m 0750 /var/lib/kmserve /var/lib/kmserve/models
COPY --from=build /src/build/kmserve /src/build/kmctl /usr/local/bin/
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
