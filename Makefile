# kmserve - build, test, run and benchmark.
#
#   make run       install what building and running need, build, start the
#                  daemon on 127.0.0.1:8080 with ./var/models (PORT=N: on
#                  127.0.0.1:N; LISTEN=HOST:PORT: the whole address)
#   make test      install what the tests need, build, run the unit and
#                  integration tests
#   make           build build/kmserve, build/kmctl and build/libkm.a
#   make install   kmserve and kmctl into $(DESTDIR)$(PREFIX)/bin (/usr/local/bin)
#   make check-deploy  the Dockerfile, deploy/ and the systemd unit, checked
#   make check-fresh   the README's two commands in a fresh Debian 12 chroot
#   make fuzz      the libFuzzer targets of tests/fuzz, FUZZ_SECONDS each
#   make bench     benchmarks against scikit-learn and LIBSVM
#   make clean
#
# SANITIZE=1 builds everything with AddressSanitizer and UBSan into
# build-san/ (SANITIZE=thread: ThreadSanitizer into build-tsan/;
# SANITIZE=fuzz: clang, libFuzzer instrumentation, ASan and UBSan into
# build-fuzz/).

# Debian packages, by what needs them. Each target installs only its own
# list (make deps-X): `make run` what building and running the daemon and
# kmctl need (the compiler, make, pkg-config and five libraries:
# libmicrohttpd, cJSON, OpenBLAS, LAPACKE, libcurl for kmctl; Chart.js,
# which the web console embeds; and curl for the README's examples).
# `make test` adds Check, Python 3 with PyYAML (the integration runner
# reads api/openapi.yaml), NumPy (klr.py checks an optimum from its
# definition) and openssl (TLS tests); the Python client's runner
# (pyclient.py) also needs scikit-learn (its references), venv, pip,
# setuptools and wheel (it installs clients/python into a venv, offline);
# the web console's runner (console.py) drives Debian's headless Chromium
# with Selenium (chromium, chromium-driver, python3-selenium); the
# interchange and coefficients runners (interchange.py, coefficients.py)
# need LIBSVM's tools and python3-libsvm (svm-train writes their models at
# run time); mpi.py needs OpenMPI and ScaLAPACK (below). What `make run`
# and `make test` install on a bare Debian 12 (packages, download and
# installed size, time) is measured by `make check-fresh` and quoted in the
# README's Quick start. The distributed exact fit (build/kmserve-mpi,
# docs/distributed.md) needs OpenMPI and ScaLAPACK (DEPS_MPI, `make
# deps-mpi`): `make test` and `make bench` install them, `make run` does
# not (the build then skips kmserve-mpi with a note). The reference
# fixtures in tests/fixtures are generated once by scripts that need
# scikit-learn and LIBSVM's tools, and R's kernlab for the string kernels'
# (DEPS_REFS); the benchmarks need those too, and wrk, Flask and gunicorn
# for the serving benchmark, R's kernlab for the kernel k-means and string
# ones, Fashion-MNIST for bench_svc_large.py, and the word lists that
# data/words.csv is drawn from (wamerican ... wdutch;
# tests/fixtures/export_words.py; the CSV itself is in the repository, so
# the tests need none of them). The deploy checks need debootstrap
# (chroots that carry out the Dockerfile), systemd-analyze, docker-compose
# (the docker client here has no compose plugin) and shellcheck.
DEPS_RUN := gcc make libc6-dev pkg-config libmicrohttpd-dev libcjson-dev \
            libopenblas-dev liblapacke-dev libcurl4-gnutls-dev curl libjs-chart.js
DEPS_MPI := openmpi-bin libopenmpi-dev libscalapack-openmpi-dev
DEPS_TEST := $(DEPS_RUN) check python3 python3-yaml openssl \
             python3-numpy python3-sklearn python3-venv python3-pip python3-setuptools python3-wheel \
             chromium chromium-driver python3-selenium libsvm-tools python3-libsvm
DEPS_REFS := python3 python3-numpy python3-sklearn libsvm-tools python3-libsvm \
             r-cran-kernlab
DEPS_BENCH := $(DEPS_RUN) $(DEPS_MPI) $(DEPS_REFS) time wrk python3-flask gunicorn \
              dataset-fashion-mnist wamerican wngerman wfrench wspanish witalian wdutch
DEPS_DEPLOY := $(DEPS_RUN) debootstrap systemd docker-compose shellcheck
DEPS_FUZZ := $(DEPS_RUN) clang libclang-rt-14-dev
DEPS_FRESH := debootstrap git

PKGS := libmicrohttpd libcjson openblas lapacke
PYTHON := /usr/bin/python3

ifeq ($(SANITIZE),thread)
  B := build-tsan
  SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer -DKM_NO_CLONES
else ifeq ($(SANITIZE),fuzz)
  B := build-fuzz
  CC := clang
  # (sanitizer instrumentation can keep `omp simd` loops from vectorising)
  SANFLAGS := -Wno-pass-failed -fsanitize=fuzzer-no-link,address,undefined \
              -fno-sanitize-recover=undefined -fno-omit-frame-pointer -DKM_NO_CLONES
else ifneq ($(SANITIZE),)
  B := build-san
  SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
              -fno-omit-frame-pointer -DKM_NO_CLONES
else
  B := build
  SANFLAGS :=
endif

CC ?= cc
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)
# -Wno-psabi: gcc notes that passing 64-byte vectors by value changed ABI
# in gcc 4.6; km_vmath.c does so only between its own static functions.
# -Wno-missing-field-initializers: public structs grow at their end
# (km_fit_control.threads, km_search_spec.threads), and a positional
# initialiser of the earlier members ({progress, ctx}) leaves the new ones
# 0 by design (C11 6.7.9), which must keep compiling.
CFLAGS := -std=c11 -O2 -g -Wall -Wextra -Wno-missing-field-initializers \
          -Werror -D_GNU_SOURCE $(SANFLAGS)
ifneq ($(CC),clang)
  CFLAGS += -Wno-psabi
endif
LDFLAGS := $(SANFLAGS)
LIBS = $(PKG_LIBS) -lpthread -lm

CORE_SRC := $(wildcard core/*/*.c)
API_SRC := $(wildcard api/*.c)
SRV_SRC := $(filter-out server/kmserve.c,$(wildcard server/*.c))
# common/: what the daemon and the MPI worker (mpi/) share, below both
# (whole-file reads and writes, a rank's liveness record): the worker
# links these objects and nothing of server/.
COMMON_SRC := $(wildcard common/*.c)
COMMON_OBJ := $(COMMON_SRC:%.c=$(B)/%.o)
# kmctl (cli/) is a client: it shares no objects with the daemon, and of
# the library it includes only headers.
CTL_SRC := $(wildcard cli/*.c)
CTL_OBJ := $(CTL_SRC:%.c=$(B)/%.o)
CTL_LIBS = $(shell pkg-config --libs libcjson libcurl 2>/dev/null)
CORE_OBJ := $(CORE_SRC:%.c=$(B)/%.o)
API_OBJ := $(API_SRC:%.c=$(B)/%.o)
# The web console and the API spec are built into kmserve
# (server/srv_assets.h): server/console/embed.sh writes their bytes as a C
# source with od and sed, so the build needs nothing beyond a base system.
# The console's charts are drawn by Chart.js 3.9, as Debian ships it
# (libjs-chart.js, 200 KB minified): embedded like the console's own files,
# so the page fetches nothing from elsewhere.
CHARTJS := /usr/share/javascript/chart.js/chart.min.js
ASSETS := server/console/index.html server/console/console.css \
          server/console/console.js server/console/model.js $(CHARTJS) \
          api/openapi.yaml
SRV_OBJ := $(SRV_SRC:%.c=$(B)/%.o) $(COMMON_OBJ) $(B)/gen/srv_assets.o
UNIT_SRC := $(wildcard tests/core/test_*.c tests/api/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/%.c=$(B)/tests/%)

.PHONY: all bench-limits mpi deps deps-mpi deps-test deps-refs deps-bench deps-deploy deps-fuzz deps-fresh \
        test check-docs unit integration check-deploy check-fresh fuzz run install bench clean

all: $(B)/kmserve $(B)/kmctl $(B)/libkm.a mpi

# kmserve-mpi, the MPI worker (mpi/): built when mpicc links Debian's
# ScaLAPACK (-lscalapack-openmpi), skipped with a note otherwise.
MPICC ?= mpicc
SCALAPACK_LIBS ?= -lscalapack-openmpi
HAVE_MPI := $(shell printf 'int main(void){return 0;}' | \
              $(MPICC) -x c - -o /dev/null $(SCALAPACK_LIBS) >/dev/null 2>&1 && echo 1)
ifeq ($(HAVE_MPI),1)
mpi: $(B)/kmserve-mpi
else
mpi:
	@echo "note: kmserve-mpi not built: no mpicc linking $(SCALAPACK_LIBS) (make deps-mpi installs $(DEPS_MPI))"
endif

MPI_SRC := $(wildcard mpi/*.c)
$(B)/kmserve-mpi: $(MPI_SRC) $(wildcard mpi/*.h) $(COMMON_OBJ) $(B)/libkm.a
	@$(if $(V),,echo "  MPICC   $@")
	$(Q)OMPI_CC=$(CC) $(MPICC) $(CFLAGS) $(PKG_CFLAGS) -Icore -o $@ $(MPI_SRC) \
	    $(COMMON_OBJ) $(B)/libkm.a $(SCALAPACK_LIBS) $(LIBS) $(LDFLAGS)

$(B)/tests/mpi_check: tests/mpi/mpi_check.c $(B)/libkm.a
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore -o $@ $< $(B)/libkm.a $(LIBS) $(LDFLAGS)

# $(call install_missing,PACKAGES): apt-get install those not installed.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' \
	    || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps: ; $(call install_missing,$(DEPS_RUN))
deps-mpi: ; $(call install_missing,$(DEPS_RUN) $(DEPS_MPI))
deps-test: ; $(call install_missing,$(DEPS_TEST) $(DEPS_MPI))
deps-refs: ; $(call install_missing,$(DEPS_REFS))
deps-bench: ; $(call install_missing,$(DEPS_BENCH))
deps-deploy: ; $(call install_missing,$(DEPS_DEPLOY))
deps-fuzz: ; $(call install_missing,$(DEPS_FUZZ))
deps-fresh: ; $(call install_missing,$(DEPS_FRESH))

# V=1 shows the full commands.
Q := $(if $(V),,@)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

# The elementwise kernel maps must vectorise: -O2 alone uses gcc's
# "very cheap" cost model, which refuses loops with an unknown trip count.
# -fopenmp-simd honours `omp simd` (vectorised reductions) without OpenMP.
$(B)/core/base/km_vmath.o: CFLAGS += $(if $(filter clang,$(CC)),,-fvect-cost-model=dynamic) -fopenmp-simd

$(B)/gen/srv_assets.c: server/console/embed.sh $(ASSETS)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  EMBED   $@")
	$(Q)sh server/console/embed.sh $(ASSETS) > $@.tmp && mv $@.tmp $@

$(B)/gen/srv_assets.o: $(B)/gen/srv_assets.c server/srv_assets.h
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -Iserver -c $< -o $@

$(B)/libkm.a: $(CORE_OBJ)
	$(Q)ar rcs $@ $^

$(B)/libkmapi.a: $(API_OBJ)
	$(Q)ar rcs $@ $^

$(B)/kmserve: $(B)/server/kmserve.o $(SRV_OBJ) $(B)/libkmapi.a $(B)/libkm.a
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(CTL_OBJ): PKG_CFLAGS += $(shell pkg-config --cflags libcurl 2>/dev/null)

$(B)/kmctl: $(CTL_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CTL_LIBS)

$(B)/tests/core/%: tests/core/%.c tests/check_main.h tests/core/model_bytes.h tests/core/svm_data.h $(B)/libkm.a
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore -o $@ $< $(B)/libkm.a $(CHECK_LIBS) $(LIBS) $(LDFLAGS)

$(B)/tests/api/%: tests/api/%.c tests/check_main.h $(B)/libkmapi.a $(B)/libkm.a
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore -Iapi -o $@ $< $(B)/libkmapi.a $(B)/libkm.a $(CHECK_LIBS) $(LIBS) $(LDFLAGS)

test: deps-test
	@$(MAKE) --no-print-directory check-docs unit integration

# Nothing refers outside the repository; every Markdown link resolves;
# lists of algorithms and kernels, routes and paths in the docs agree
# with core/km_maps.h, server/srv_routes.c and the tree; `make run`'s
# address and packages, as a dry run (nothing installed or built).
check-docs:
	$(PYTHON) tests/repo/check_docs.py
	$(PYTHON) tests/repo/check_lists.py
	$(PYTHON) tests/repo/check_sizes.py
	$(PYTHON) tests/repo/check_make.py

# The data sets are in data/; KM_DATA set in the environment wins.
KM_DATA ?= $(CURDIR)/data
export KM_DATA

# The tests run BLAS on one thread unless told otherwise (OPENBLAS_NUM_THREADS,
# KMSERVE_BLAS_THREADS in the environment win): OpenBLAS's threads wait for
# each other by spinning and yielding, and on a machine whose cores are busy
# with other work a two-thread call then crawls (a klr unit test took more
# than its 300 s beside two CPU-burning processes; its whole suite took 33 s
# on one thread).
# What the tests check does not depend on BLAS's threads; the tests that are
# about them (test_km_svc_screened's) set the count themselves.
unit integration: export OPENBLAS_NUM_THREADS ?= 1
unit integration: export KMSERVE_BLAS_THREADS ?= 1

# OpenBLAS's kernels for this CPU as the daemon chooses them at start-up
# (core/base/km_blas.c; `kmserve --version` names them). The unit tests and
# the benchmarks load libkm without the daemon's re-execution, so they are
# given the same choice; OPENBLAS_CORETYPE in the environment wins.
BLAS_CORE = $${OPENBLAS_CORETYPE:-$$(./$(B)/kmserve --version | sed -n 's/^OpenBLAS kernels: //p')}

unit: $(UNIT_BIN) $(B)/kmserve
	@export OPENBLAS_CORETYPE=$(BLAS_CORE); fail=0; for t in $(UNIT_BIN); do \
	  echo "== $$t"; CK_FORK=yes $$t || fail=1; \
	done; exit $$fail

# Every tests/integration/*.py is a runner, run in name order with the
# daemon to test (--server); kmctl's path is in KM_KMCTL. A runner's
# docstring says what it checks. Each ends with "N passed, N failed".
# A new runner is a new file: nothing here lists them.
IT_RUNNERS := $(sort $(wildcard tests/integration/*.py))
integration: $(B)/kmserve $(B)/kmctl mpi $(if $(HAVE_MPI),$(B)/tests/mpi_check)
	@fail=0; for t in $(IT_RUNNERS); do \
	  echo "== $$t"; \
	  KM_KMCTL=$(B)/kmctl $(PYTHON) $$t --server $(B)/kmserve || fail=1; \
	done; exit $$fail

# The Dockerfile's build and runtime stages in debootstrap chroots of
# bookworm (cached in build/deploy/), deploy/ manifests, the systemd unit.
# Needs root.
check-deploy: deps-deploy
	@$(MAKE) --no-print-directory build/kmserve build/kmctl SANITIZE=
	bash tests/deploy/check.sh

# The README's two commands and curl examples in a fresh Debian 12 chroot
# (minbase plus git) holding a clone of HEAD. Needs root; binds 8080.
check-fresh: deps-fresh
	$(PYTHON) tests/deploy/fresh.py

# The fuzz targets (tests/fuzz/fuzz_*.c, libFuzzer) run FUZZ_SECONDS each
# from their seed corpus (tests/fuzz/corpus/NAME/, copied: the run's finds
# stay in build-fuzz/). Any crash, leak, timeout or out-of-memory fails.
FUZZ_SECONDS ?= 60
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/fuzz/%)

fuzz: deps-fuzz
	@$(MAKE) --no-print-directory SANITIZE=fuzz $(FUZZ_BIN)
	@fail=0; for f in $(FUZZ_BIN); do \
	  n=$$(basename $$f); corpus=build-fuzz/corpus/$$n; \
	  rm -rf $$corpus; mkdir -p $$corpus; \
	  [ -d tests/fuzz/corpus/$$n ] && cp -r tests/fuzz/corpus/$$n/. $$corpus/; \
	  echo "== $$n ($(FUZZ_SECONDS) s)"; \
	  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	  $$f -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 \
	      -print_final_stats=1 -artifact_prefix=build-fuzz/ $$corpus \
	      > build-fuzz/$$n.log 2>&1 || { fail=1; tail -60 build-fuzz/$$n.log; }; \
	  grep -E '^stat::number_of_executed_units|^Done' build-fuzz/$$n.log || true; \
	done; exit $$fail

build-fuzz/fuzz/%: tests/fuzz/%.c $(SRV_OBJ) $(B)/libkmapi.a $(B)/libkm.a
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer $(PKG_CFLAGS) -Icore -Iapi -Iserver \
	    -o $@ $^ $(LIBS)

PREFIX ?= /usr/local
install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(B)/kmserve $(B)/kmctl $(DESTDIR)$(PREFIX)/bin/

# The daemon's address: PORT=N on the command line serves on 127.0.0.1:N,
# LISTEN=HOST:PORT sets the whole address (kmserve's --listen). Only the
# command line sets them (a PORT in the environment does not: a variable
# by that name is often set for other programs).
PORT := 8080
LISTEN := 127.0.0.1:$(PORT)

run: deps
	@$(MAKE) --no-print-directory all
	@mkdir -p var/models
	./$(B)/kmserve --listen $(LISTEN) --models-dir ./var/models

BENCH_BIN := $(patsubst bench/%.c,$(B)/%,$(wildcard bench/bench_*.c))

# Each bench/bench_*.py runs ours and the reference side by side and
# prints the ratios; one at a time (flock) so they do not share the cores.
# Both sides load the same OpenBLAS with the same kernels (BLAS_CORE).
# BENCH picks scripts by the name after bench_, each optionally followed
# by its own arguments after a colon, commas for spaces:
#   make bench BENCH="routines krr search:--only,loo"
# LIMITS is the set issue 28's table in bench/RESULTS.md comes from.
BENCH := $(patsubst bench/bench_%.py,%,$(wildcard bench/bench_*.py))
LIMITS := routines krr svm kpca search:--only,loo serving svc_large

bench: deps-bench
	@$(MAKE) --no-print-directory all $(BENCH_BIN)
	@export OPENBLAS_CORETYPE=$(BLAS_CORE); \
	echo "OpenBLAS kernels: $$OPENBLAS_CORETYPE (ours and the references)"; \
	for s in $(BENCH); do \
	  d=bench/bench_$${s%%:*}.py; a=$$(echo "$$s" | sed -n 's/^[^:]*://p' | tr ',' ' '); \
	  test -f $$d || { echo "make bench: no script $$d" >&2; exit 1; }; \
	  echo "== $$d $$a"; flock /tmp/kmserve-bench.lock $(PYTHON) $$d --bin $(B) $$a || exit 1; \
	done

bench-limits:
	@$(MAKE) --no-print-directory bench BENCH="$(LIMITS)"

$(B)/bench_%: bench/bench_%.c bench/bench_util.h $(B)/libkm.a
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore -o $@ $< $(B)/libkm.a $(LIBS) $(LDFLAGS)

clean:
	rm -rf build build-san build-tsan build-fuzz

-include $(shell find $(B) -path $(B)/deploy -prune -o -name '*.d' -type f -print 2>/dev/null)
