# kmserve - build, test, run and benchmark.
#
#   make deps    install the Debian packages that are missing (no-op if none)
#   make         build build/kmserve, build/kmctl and build/libkm.a
#   make test    unit tests (Check) and integration tests against the daemon
#   make run     start the daemon on 127.0.0.1:8080 with ./var/models
#   make bench   benchmarks against scikit-learn and LIBSVM
#   make clean
#
# SANITIZE=1 builds everything with AddressSanitizer and UBSan into
# build-san/ (SANITIZE=thread: ThreadSanitizer into build-tsan/).

# Build: compiler and libraries (libcurl for kmctl). Tests: Check, the integration runner's
# Python (stdlib, and PyYAML to read api/openapi.yaml), LIBSVM's tools for parity tests, curl for the README.
# Deploy checks (tests/deploy/check.sh): debootstrap for Debian chroots that carry out the
# Dockerfile, systemd-analyze for the unit, docker-compose to validate the compose file
# (the docker client here has no compose plugin), shellcheck for the RUN lines.
# Benchmarks: scikit-learn and GNU time; wrk, Flask and gunicorn for the serving benchmark.
DEPS := gcc make libc6-dev pkg-config libmicrohttpd-dev libcjson-dev \
        libopenblas-dev liblapacke-dev libcurl4-gnutls-dev check python3 python3-numpy \
        libsvm-tools curl openssl python3-yaml python3-sklearn time \
        debootstrap systemd docker-compose shellcheck wrk python3-flask gunicorn

PKGS := libmicrohttpd libcjson openblas lapacke
PYTHON := /usr/bin/python3

ifeq ($(SANITIZE),thread)
  B := build-tsan
  SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer -DKM_NO_CLONES
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
CFLAGS := -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE $(SANFLAGS)
LDFLAGS := $(SANFLAGS)
LIBS = $(PKG_LIBS) -lpthread -lm

CORE_SRC := $(wildcard core/*.c)
API_SRC := $(wildcard api/*.c)
# kmctl (server/kmctl*.c) is a client: it shares no objects with the daemon.
SRV_SRC := $(filter-out server/kmserve.c server/kmctl%.c,$(wildcard server/*.c))
CTL_SRC := $(wildcard server/kmctl*.c)
CTL_OBJ := $(CTL_SRC:%.c=$(B)/%.o)
CTL_LIBS = $(shell pkg-config --libs libcjson libcurl 2>/dev/null)
CORE_OBJ := $(CORE_SRC:%.c=$(B)/%.o)
API_OBJ := $(API_SRC:%.c=$(B)/%.o)
SRV_OBJ := $(SRV_SRC:%.c=$(B)/%.o)
UNIT_SRC := $(wildcard tests/core/test_*.c tests/api/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/%.c=$(B)/tests/%)

.PHONY: all deps test unit integration check-deploy run bench clean

all: $(B)/kmserve $(B)/kmctl $(B)/libkm.a

deps:
	@missing=""; for p in $(DEPS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' \
	    || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# V=1 shows the full commands.
Q := $(if $(V),,@)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

# The elementwise kernel maps must vectorise: -O2 alone uses gcc's
# "very cheap" cost model, which refuses loops with an unknown trip count.
# -fopenmp-simd honours `omp simd` (vectorised reductions) without OpenMP.
$(B)/core/km_vmath.o: CFLAGS += -fvect-cost-model=dynamic -fopenmp-simd

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

$(B)/tests/core/%: tests/core/%.c tests/check_main.h $(B)/libkm.a
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore -o $@ $< $(B)/libkm.a $(CHECK_LIBS) $(LIBS) $(LDFLAGS)

$(B)/tests/api/%: tests/api/%.c tests/check_main.h $(B)/libkmapi.a $(B)/libkm.a
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore -Iapi -o $@ $< $(B)/libkmapi.a $(B)/libkm.a $(CHECK_LIBS) $(LIBS) $(LDFLAGS)

# The deploy checks build and run the plain binaries in Debian chroots, so
# they run in the plain pass only (a sanitizer build needs libasan there).
test: deps
	@$(MAKE) --no-print-directory unit integration $(if $(SANITIZE),,check-deploy)

unit: $(UNIT_BIN)
	@fail=0; for t in $(UNIT_BIN); do \
	  echo "== $$t"; KM_DATA=../shared/data CK_FORK=yes $$t || fail=1; \
	done; exit $$fail

integration: $(B)/kmserve $(B)/kmctl
	$(PYTHON) tests/integration/run.py --server $(B)/kmserve
	$(PYTHON) tests/integration/kmctl_test.py --server $(B)/kmserve --kmctl $(B)/kmctl

# The Dockerfile's build and runtime stages in debootstrap chroots of
# bookworm (cached in build/deploy/), deploy/ manifests, the systemd unit.
check-deploy: $(if $(SANITIZE),,build/kmserve)
	bash tests/deploy/check.sh

run: deps
	@$(MAKE) --no-print-directory all
	@mkdir -p var/models
	./$(B)/kmserve --listen 127.0.0.1:8080 --models-dir ./var/models

BENCH_BIN := $(patsubst bench/%.c,$(B)/%,$(wildcard bench/bench_*.c))

# Each bench/bench_*.py runs ours and the reference side by side and
# prints the ratios; one at a time (flock) so they do not share the cores.
bench: deps
	@$(MAKE) --no-print-directory all $(BENCH_BIN)
	@for d in bench/bench_*.py; do \
	  echo "== $$d"; flock /tmp/kmserve-bench.lock $(PYTHON) $$d --bin $(B) || exit 1; \
	done

$(B)/bench_%: bench/bench_%.c bench/bench_util.h $(B)/libkm.a
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore -o $@ $< $(B)/libkm.a $(LIBS) $(LDFLAGS)

clean:
	rm -rf build build-san build-tsan

-include $(shell find $(B) -name '*.d' 2>/dev/null)
