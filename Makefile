# kubevirt-imds — GNU Make.  `make help` lists the targets.
#
# Variants (each in its own folder under build/):
#   make            debug, glibc          -> build/debug/imds-server
#   make static     musl, -static -Os, stripped (what the image ships)
#   make asan       ASan + UBSan build of the server and the unit tests
#   make fuzz       libFuzzer targets (clang)
#   make coverage   gcov build, unit and integration suites, lcov per folder
# Third-party code: llhttp's C sources from Debian's node-llhttp, compiled
# here in strict mode; nothing is downloaded at build time.

SHELL := /bin/bash
.DEFAULT_GOAL := all
TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

VARIANT ?= debug
B := build/$(VARIANT)

LLHTTP_DIR ?= /usr/share/llhttp
LLHTTP_INC ?= /usr/share/include/llhttp
LLHTTP_SRC := $(LLHTTP_DIR)/api.c $(LLHTTP_DIR)/http.c $(LLHTTP_DIR)/llhttp.c

# The version every binary prints (--version, its first log line, the
# webhook's imds_webhook_build_info metric): `git describe`, or VERSION=... when
# there is no .git (the image builds pass it in).  A stamp file per build tree
# holds it, so a new commit rebuilds the two main.o and nothing else.
VERSION := $(shell git -C $(TOP) describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION := $(shell git -C $(TOP) rev-parse HEAD 2>/dev/null || echo unknown)

WARN := -Wall -Wextra -Wshadow -Wconversion -Wformat=2 -Wstrict-prototypes \
	-Wmissing-prototypes -Wvla -Werror
CPPFLAGS_COMMON := -D_GNU_SOURCE -DLLHTTP_STRICT_MODE=1 -DIMDS_VERSION='"$(VERSION)"' \
	-Isrc/core -isystem $(LLHTTP_INC)
JSONC_CFLAGS := $(shell pkg-config --cflags json-c 2>/dev/null)
WEBHOOK_LDLIBS := -ljson-c -lssl -lcrypto
# The architecture, enforced by the include path: a file of src/core sees only
# src/core and llhttp (a core file that includes a program's header does not
# compile); a program's file sees src/core, src/net when it touches a pod's
# kernel, and its own folder, never another program's.  Tests and fuzzers see
# the folder of the program they test (docs/design.md, the map).
WH_CPPFLAGS := -Isrc/webhook -isystem $(patsubst -I%,%,$(JSONC_CFLAGS))
# src/net is the network half (plan, plumb, steer, the ARP/NDP responder, raw
# netlink and nf_tables): it sees src/core alone, and is seen by imds-node and
# by imds-server (its pod mode), never by the webhook.
NET_CPPFLAGS := -Isrc/net
SC_CPPFLAGS := -Isrc/sidecar -Isrc/net
NODE_CPPFLAGS := -Isrc/node -Isrc/net
SRC_CPPFLAGS = $(if $(filter src/sidecar/%,$<),$(SC_CPPFLAGS),$(if $(filter src/webhook/%,$<),$(WH_CPPFLAGS),$(if $(filter src/node/%,$<),$(NODE_CPPFLAGS),$(if $(filter src/net/%,$<),$(NET_CPPFLAGS)))))
CFLAGS_COMMON := -std=c17 -pipe -fno-strict-aliasing -MMD -MP

ifeq ($(VARIANT),debug)
CC := gcc
OPT := -g -O2 -fstack-protector-strong
LDFLAGS_V :=
else ifeq ($(VARIANT),asan)
CC := gcc
OPT := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDFLAGS_V := -fsanitize=address,undefined
else ifeq ($(VARIANT),static)
CC := musl-gcc
# musl-gcc sees only musl's headers: give it the kernel's through a folder
# of symlinks (linux/, asm/, asm-generic/) passed with -isystem.
KINC := $(B)/kinc
# -flto: the request path crosses small functions of several files (the
# answer's head, the header lookups, the log line); whole-program inlining
# takes ~20 % of its instructions and makes the binary smaller (issue 34).
# The archives then hold GCC's intermediate code: gcc-ar writes their index.
OPT := -Os -flto -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables \
	-fno-unwind-tables -isystem $(KINC)
LDFLAGS_V := -static -s -flto=auto -Wl,--gc-sections
AR := gcc-ar
else ifeq ($(VARIANT),coverage)
CC := gcc
OPT := -g -O0 --coverage
LDFLAGS_V := --coverage
else ifeq ($(VARIANT),fuzz)
CC := clang
OPT := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=all -DIMDS_FUZZ=1
LDFLAGS_V := -fsanitize=fuzzer,address,undefined
WARN := -Wall -Wextra -Wshadow -Werror -Wno-unused-parameter
else
$(error unknown VARIANT '$(VARIANT)': debug, asan, static, coverage or fuzz)
endif

CFLAGS := $(CFLAGS_COMMON) $(OPT) $(WARN) $(EXTRA_CFLAGS)

CORE_SRC := $(sort $(wildcard src/core/*.c))
SIDECAR_SRC := $(filter-out src/sidecar/main.c,$(sort $(wildcard src/sidecar/*.c)))
WEBHOOK_SRC := $(filter-out src/webhook/main.c,$(sort $(wildcard src/webhook/*.c)))
NODE_SRC := $(filter-out src/node/main.c,$(sort $(wildcard src/node/*.c)))
NET_SRC := $(sort $(wildcard src/net/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/*/test_*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))

CORE_OBJ := $(CORE_SRC:%.c=$(B)/%.o)
SIDECAR_OBJ := $(SIDECAR_SRC:%.c=$(B)/%.o)
WEBHOOK_OBJ := $(WEBHOOK_SRC:%.c=$(B)/%.o)
NODE_OBJ := $(NODE_SRC:%.c=$(B)/%.o)
NET_OBJ := $(NET_SRC:%.c=$(B)/%.o)
LLHTTP_OBJ := $(patsubst $(LLHTTP_DIR)/%.c,$(B)/llhttp/%.o,$(LLHTTP_SRC))
UNIT_BIN := $(addprefix $(B)/tests/,$(notdir $(UNIT_SRC:.c=)))
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(B)/fuzz/%)

LIBS := $(B)/libsidecar.a $(B)/libnet.a $(B)/libcore.a $(B)/libllhttp.a
NET_LIBS := $(B)/libnet.a $(B)/libcore.a $(B)/libllhttp.a
WH_LIBS := $(B)/libwebhook.a $(B)/libcore.a $(B)/libllhttp.a
WH_FUZZ := $(B)/fuzz/fuzz_admission
CORE_FUZZ := $(B)/fuzz/fuzz_http_parse $(B)/fuzz/fuzz_ifaces $(B)/fuzz/fuzz_nodemsg
NET_FUZZ := $(B)/fuzz/fuzz_arp $(B)/fuzz/fuzz_ndp $(B)/fuzz/fuzz_nl

.PHONY: all server webhook node build-webhook static asan fuzz unit-bins test demo bench clean help deps-build \
	lint build build-server

all: deps-build
	@$(MAKE) --no-print-directory VARIANT=debug server webhook node

build build-server: all
build-webhook: deps-build
	@$(MAKE) --no-print-directory VARIANT=debug webhook

## server / webhook: the binaries of the current VARIANT
server: $(B)/imds-server
webhook: $(B)/imds-webhook
node: $(B)/imds-node

static: deps-build
	@$(MAKE) --no-print-directory VARIANT=static server node
	@ls -l build/static/imds-server build/static/imds-node | awk '{print $$9 ": " $$5 " bytes"}'

asan: deps-build
	@$(MAKE) --no-print-directory VARIANT=asan server webhook node unit-bins

fuzz: deps-build
	@$(MAKE) --no-print-directory VARIANT=fuzz fuzz-bins

unit-bins: $(UNIT_BIN) $(B)/tests/admission_cli $(B)/tests/tapwire $(B)/tests/steer_commit
fuzz-bins: $(FUZZ_BIN)

deps-build:
	@hack/install-deps.sh build

$(B)/kinc:
	@mkdir -p $@
	@arch=$$(gcc -print-multiarch); \
	ln -sfn /usr/include/linux $@/linux; \
	ln -sfn /usr/include/asm-generic $@/asm-generic; \
	ln -sfn /usr/include/$$arch/asm $@/asm

ifeq ($(VARIANT),static)
$(CORE_OBJ) $(SIDECAR_OBJ) $(NET_OBJ) $(NODE_OBJ) $(LLHTTP_OBJ) $(B)/src/sidecar/main.o $(B)/src/node/main.o: | $(B)/kinc
endif

$(B)/version.stamp: FORCE
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = "$(VERSION)" ] || echo "$(VERSION)" >$@
.PHONY: FORCE
FORCE:
$(B)/src/sidecar/main.o $(B)/src/webhook/main.o $(B)/src/node/main.o: $(B)/version.stamp

$(B)/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(CPPFLAGS_COMMON) $(SRC_CPPFLAGS) $(CFLAGS) -c $< -o $@

# llhttp is generated C: compile it as it is, without our warning set.
$(B)/llhttp/%.o: $(LLHTTP_DIR)/%.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(CPPFLAGS_COMMON) $(CFLAGS_COMMON) $(OPT) -w -c $< -o $@

$(B)/libcore.a: $(CORE_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^
$(B)/libsidecar.a: $(SIDECAR_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^
$(B)/libnet.a: $(NET_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^
$(B)/libwebhook.a: $(WEBHOOK_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^
$(B)/libllhttp.a: $(LLHTTP_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# imds-server: the sidecar's folder (the HTTP half, its pod mode and agent
# link), then the network half (pod mode), then the core.
$(B)/imds-server: $(B)/src/sidecar/main.o $(LIBS)
	$(CC) $(CFLAGS) $(LDFLAGS_V) -o $@ $< $(LIBS)

# imds-node: its own folder, then the network half, then the core.
$(B)/imds-node: $(B)/src/node/main.o $(NODE_OBJ) $(NET_LIBS)
	$(CC) $(CFLAGS) $(LDFLAGS_V) -o $@ $< $(NODE_OBJ) $(NET_LIBS)

$(B)/imds-webhook: $(B)/src/webhook/main.o $(WH_LIBS)
	$(CC) $(CFLAGS) $(LDFLAGS_V) -o $@ $< $(WH_LIBS) $(WEBHOOK_LDLIBS)

# Unit tests and fuzzers, each rule with its folder's include path: test_wh_*
# and $(WH_FUZZ) belong to the webhook, $(CORE_FUZZ) to the core, $(NET_FUZZ)
# to the network half.
$(B)/tests/test_wh_%: tests/unit/webhook/test_wh_%.c $(WH_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(WH_CPPFLAGS) $(CFLAGS) -Wno-conversion $(LDFLAGS_V) -o $@ $< $(WH_LIBS) $(WEBHOOK_LDLIBS) -lcmocka
$(B)/tests/%: tests/unit/sidecar/%.c $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(SC_CPPFLAGS) $(CFLAGS) -Wno-conversion $(LDFLAGS_V) -o $@ $< $(LIBS) -lcmocka
# The core's tests see the core alone, as the core does.
$(B)/tests/%: tests/unit/core/%.c $(B)/libcore.a $(B)/libllhttp.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(CFLAGS) -Wno-conversion $(LDFLAGS_V) -o $@ $< $(B)/libcore.a $(B)/libllhttp.a -lcmocka

# The network half's tests see it and the core, as the network half does.
$(B)/tests/%: tests/unit/net/%.c $(NET_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(NET_CPPFLAGS) $(CFLAGS) -Wno-conversion $(LDFLAGS_V) -o $@ $< $(NET_LIBS) -lcmocka

# imds-node's tests (tests/unit/node/test_node*.c, named apart from the other
# folders' since all land in $(B)/tests) see its folder, then the network
# half and the core, as imds-node does.
$(B)/tests/%: tests/unit/node/%.c $(NODE_OBJ) $(NET_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(NODE_CPPFLAGS) $(CFLAGS) -Wno-conversion $(LDFLAGS_V) -o $@ $< $(NODE_OBJ) $(NET_LIBS) -lcmocka

# test_jview: the core alone, and json-c as the oracle the reader is held against.
$(B)/tests/test_jview: tests/unit/core/test_jview.c $(B)/libcore.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(CFLAGS) -Wno-conversion $(LDFLAGS_V) -o $@ $< $(B)/libcore.a -ljson-c -lcmocka

# The admission module without TLS, for tests/integration/webhook_patch.sh.
$(B)/tests/admission_cli: tests/lib/admission_cli.c $(WH_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(WH_CPPFLAGS) $(CFLAGS) $(LDFLAGS_V) -o $@ $< $(WH_LIBS) $(WEBHOOK_LDLIBS)

# qemu's part in the network tests: a real tap moved to a guest netns.
$(B)/tests/tapwire: tests/lib/tapwire.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(CFLAGS) $(LDFLAGS_V) -o $@ $<

# tests/fixtures/nft/regen.sh's part: our ruleset for the golden state, committed.
$(B)/tests/steer_commit: tests/lib/steer_commit.c $(NET_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(NET_CPPFLAGS) $(CFLAGS) $(LDFLAGS_V) -o $@ $< $(NET_LIBS)

$(WH_FUZZ): $(B)/fuzz/%: tests/fuzz/%.c $(WH_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(WH_CPPFLAGS) $(CFLAGS) $(LDFLAGS_V) -o $@ $< $(WH_LIBS) $(WEBHOOK_LDLIBS)
$(CORE_FUZZ): $(B)/fuzz/%: tests/fuzz/%.c $(B)/libcore.a $(B)/libllhttp.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(CFLAGS) $(LDFLAGS_V) -o $@ $< $(B)/libcore.a $(B)/libllhttp.a
# The core's JSON reader held against json-c, its oracle (linked only here and
# in test_jview: the core itself needs nothing but libc).
$(NET_FUZZ): $(B)/fuzz/%: tests/fuzz/%.c $(NET_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(NET_CPPFLAGS) $(CFLAGS) $(LDFLAGS_V) -o $@ $< $(NET_LIBS)
$(B)/fuzz/fuzz_jview: tests/fuzz/fuzz_jview.c $(B)/libcore.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(CFLAGS) $(LDFLAGS_V) -o $@ $< $(B)/libcore.a -ljson-c
$(B)/fuzz/%: tests/fuzz/%.c $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_COMMON) $(SC_CPPFLAGS) $(CFLAGS) $(LDFLAGS_V) -o $@ $< $(LIBS)

## test: everything `make test` runs (unit, ASan, integration, fuzz); ends with "N passed, N failed"
test:
	@t0=$$(date +%s); hack/install-deps.sh build test vm kube deploy lint && \
		IMDS_INSTALL_SECONDS=$$(( $$(date +%s) - t0 )) tests/run.sh

## demo: a guest fetching its metadata from the sidecar (agent mode, as installed), shown step by step
demo:
	@hack/install-deps.sh build test
	@hack/demo.sh

## bench: throughput, latency, memory, size and start-up, beside nginx
bench:
	@hack/install-deps.sh build test bench
	@bench/run.sh

## coverage: line and branch coverage per folder (src/core, src/net, src/sidecar, src/webhook)
## over the unit tests and the integration suites that drive the binaries (root)
.PHONY: coverage
coverage: deps-build
	@hack/install-deps.sh test coverage
	@hack/coverage.sh

## debug-curl: on a node, as root: what a launcher pod's sidecar answers its VM, asked the VM's
## way (hack/debug-curl.sh; PID=any process of the pod, URL_PATH=/v1/identity by default)
.PHONY: debug-curl
debug-curl:
	@[ -n "$(PID)" ] || { echo "make debug-curl PID=<a process of the launcher pod> [URL_PATH=/v1/...]" >&2; exit 2; }
	@hack/debug-curl.sh --pid "$(PID)" $(URL_PATH)

## fuzz-long: each fuzz target for FUZZ_LONG_SECONDS (default 600), new coverage merged
## into tests/fuzz/corpus/ (commit what it adds)
.PHONY: fuzz-long
fuzz-long: deps-build
	@hack/fuzz-long.sh

## soak: both servers under a mixed load with rotations, bridge removals, ARP
## floods and slow clients for SOAK_SECONDS (default 600); growth checked (root)
SOAK_SECONDS ?= 600
.PHONY: soak
soak: deps-build
	@hack/install-deps.sh test
	@$(MAKE) --no-print-directory VARIANT=debug server webhook
	@SOAK_SECONDS=$(SOAK_SECONDS) IMDS_VARIANT=debug IMDS_SERVER=$(CURDIR)/build/debug/imds-server \
		tests/integration/soak.sh

lint:
	@hack/install-deps.sh build lint
	shellcheck -x -P SCRIPTDIR hack/*.sh tests/*.sh tests/lib/*.sh tests/integration/*.sh bench/*.sh \
		tests/e2e/*.sh .ci/run
	hack/check-context.sh
	hack/static-analysis.sh

clean:
	rm -rf build

help:
	@echo "kubevirt-imds make targets:"
	@echo "  all (default)  debug build: build/debug/imds-server, build/debug/imds-webhook, build/debug/imds-node"
	@echo "  static         static musl binaries: build/static/imds-server, build/static/imds-node"
	@echo "  asan           ASan+UBSan build and unit tests"
	@echo "  fuzz           libFuzzer targets"
	@echo "  test           the whole suite (root: network namespaces); ends 'N passed, N failed'"
	@echo "  demo           the sidecar serving a guest, with Debian's cloud-init as the client"
	@echo "  bench          benchmarks beside nginx"
	@echo "  soak           a long mixed load on both servers, growth checked (SOAK_SECONDS=600; root)"
	@echo "  fuzz-long      every fuzz target for 10 min, new coverage merged into the corpora"
	@echo "  coverage       gcov/lcov: line and branch coverage per folder (root)"
	@echo "  lint           shellcheck, cppcheck and clang-tidy (.clang-tidy) on src/"
	@echo "  e2e-vm         the VM stage alone (root; VARIANT=asan for the ASan server)"
	@echo "  debug-curl     on a node: PID=<a launcher pod process> [URL_PATH=/v1/...]"
	@echo "  unit-bins      the unit tests and test helpers of VARIANT (default debug)"
	@echo "  clean          remove build/"

# The dependency files of the tree being built ($(B): static-webhook has its own).
# One whose source is gone (moved or removed, as the network half moved to
# src/net) would stop make at "No rule to make target": it is dropped with
# what it built and the archives, which would still hold the old object, so
# make builds them again from where the sources are now.
DEPFILES := $(shell find $(B) -name '*.d' 2>/dev/null)
GONE := $(if $(DEPFILES),$(shell awk 'FNR == 1 { sub(/^[^:]*:[ \t]*/, ""); split($$0, a, /[ \t\\]+/); print FILENAME, a[1] }' $(DEPFILES) | \
	while read -r d s; do [ -z "$$s" ] || [ -e "$$s" ] || echo "$$d"; done))
ifneq ($(GONE),)
$(shell rm -f $(GONE) $(GONE:.d=) $(GONE:.d=.o) $(B)/*.a)
endif
-include $(filter-out $(GONE),$(DEPFILES))

# ==== deployment (issue 5): images, kind, manifests, certificates, e2e ========
# Every kubectl call names its context (KUBE_CONTEXT), every kind call its
# cluster (KIND_CLUSTER_NAME); see hack/check-context.sh.
#   make docker-build-all kind-load-all deploy KIND_CLUSTER_NAME=imds
KIND_CLUSTER_NAME ?= kind
KUBE_CONTEXT ?= kind-$(KIND_CLUSTER_NAME)
IMAGE_TAG ?= dev
# Not "latest": kubelet would always pull it, and a kind-loaded image is local.
SERVER_IMAGE ?= kubevirt-imds-server:$(IMAGE_TAG)
WEBHOOK_IMAGE ?= kubevirt-imds-webhook:$(IMAGE_TAG)
NODE_IMAGE ?= kubevirt-imds-node:$(IMAGE_TAG)
DOCKER ?= docker
KIND ?= kind
KUBECTL ?= kubectl
# manual: hack/generate-certs.sh; cert-manager: cert-manager must be installed;
# both with the node agent imds-node (the webhook's default --network-mode
# agent); pod-mode (certificates as manual): no agent, privileged launcher pods
OVERLAY ?= manual

.PHONY: static-webhook static-webhook-bin docker-build docker-build-server docker-build-webhook docker-build-node docker-build-all \
	kind-load kind-load-all deploy deploy-webhook generate-certs undeploy test-e2e

## static-webhook: imds-webhook linked statically (glibc, json-c, OpenSSL) for the distroless image
# static-webhook-bin: the same without the package check (Dockerfile.webhook).
# glibc's static libc: the warnings about dlopen/getaddrinfo come from OpenSSL
# code paths (engines, BIO_lookup) the webhook never takes.
static-webhook: deps-build
	@$(MAKE) --no-print-directory static-webhook-bin
static-webhook-bin:
	@$(MAKE) --no-print-directory VARIANT=debug B=build/static-webhook \
		OPT='-O2 -fstack-protector-strong' LDFLAGS_V='-static -s' build/static-webhook/imds-webhook
	@build/static-webhook/imds-webhook --version

docker-build: docker-build-server docker-build-webhook docker-build-node
docker-build-all: docker-build
docker-build-server:
	$(DOCKER) build -f Dockerfile -t $(SERVER_IMAGE) --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) .
docker-build-webhook:
	$(DOCKER) build -f Dockerfile.webhook -t $(WEBHOOK_IMAGE) --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) .
docker-build-node:
	$(DOCKER) build -f Dockerfile.node -t $(NODE_IMAGE) --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) .

kind-load: kind-load-all
kind-load-all:
	$(KIND) load docker-image $(SERVER_IMAGE) --name $(KIND_CLUSTER_NAME)
	$(KIND) load docker-image $(WEBHOOK_IMAGE) --name $(KIND_CLUSTER_NAME)
	$(KIND) load docker-image $(NODE_IMAGE) --name $(KIND_CLUSTER_NAME)

deploy-webhook:
	$(KUBECTL) --context $(KUBE_CONTEXT) apply -k deploy/overlays/$(OVERLAY)

deploy:
	@$(MAKE) --no-print-directory deploy-webhook
ifneq ($(OVERLAY),cert-manager)
	@$(MAKE) --no-print-directory generate-certs
endif
	$(KUBECTL) --context $(KUBE_CONTEXT) -n kubevirt-imds rollout status deployment/imds-webhook --timeout=180s
ifneq ($(OVERLAY),pod-mode)
	$(KUBECTL) --context $(KUBE_CONTEXT) -n kubevirt-imds-node rollout status daemonset/imds-node --timeout=180s
endif

generate-certs:
	KUBECTL=$(KUBECTL) hack/generate-certs.sh --context $(KUBE_CONTEXT)

undeploy:
	$(KUBECTL) --context $(KUBE_CONTEXT) delete -k deploy/overlays/$(OVERLAY) --ignore-not-found

## release: versioned manifests (manual, cert-manager, pod-mode) with every image pinned, in
## RELEASE_DIR/kubevirt-imds-VERSION/ (RELEASE_REGISTRY=quay.io/you required;
## SERVER_DIGEST/WEBHOOK_DIGEST/NODE_DIGEST=sha256:... pin by digest)
RELEASE_REGISTRY ?=
RELEASE_DIR ?= dist
.PHONY: release
release:
	@KUBECTL=$(KUBECTL) hack/release.sh --version "$(VERSION)" --registry "$(RELEASE_REGISTRY)" \
		--out "$(RELEASE_DIR)" $(if $(SERVER_DIGEST),--server-digest $(SERVER_DIGEST)) \
		$(if $(WEBHOOK_DIGEST),--webhook-digest $(WEBHOOK_DIGEST)) \
		$(if $(NODE_DIGEST),--node-digest $(NODE_DIGEST))

## test-e2e: kind + KubeVirt + the images + VMs from deploy/test (needs docker, kind, network)
test-e2e:
	KIND_CLUSTER_NAME=$(KIND_CLUSTER_NAME) KUBE_CONTEXT=$(KUBE_CONTEXT) tests/e2e/run.sh

help: help-deploy
.PHONY: help-deploy
help-deploy:
	@echo "kubevirt-imds deployment targets (KUBE_CONTEXT, KIND_CLUSTER_NAME honoured):"
	@echo "  build          = all; build-server = all; build-webhook: the debug webhook only"
	@echo "  static-webhook static imds-webhook for the distroless image: build/static-webhook/imds-webhook"
	@echo "  docker-build   docker-build-server + docker-build-webhook + docker-build-node (docker-build-all: the same)"
	@echo "                 images $(SERVER_IMAGE), $(WEBHOOK_IMAGE), $(NODE_IMAGE) (IMAGE_TAG=$(IMAGE_TAG))"
	@echo "  kind-load      kind-load-all: the three images into kind cluster KIND_CLUSTER_NAME=$(KIND_CLUSTER_NAME)"
	@echo "  deploy         deploy-webhook, then generate-certs (but OVERLAY=cert-manager), then wait for the rollouts"
	@echo "  deploy-webhook kubectl --context KUBE_CONTEXT apply -k deploy/overlays/OVERLAY (manual|cert-manager|pod-mode)"
	@echo "  generate-certs hack/generate-certs.sh --context KUBE_CONTEXT (CA, Secret, caBundle)"
	@echo "  undeploy       delete what deploy-webhook applied"
	@echo "  test-e2e       tests/e2e/run.sh: kind + KubeVirt + VMs from deploy/test"
	@echo "                 KUBE_CONTEXT=$(KUBE_CONTEXT)"
	@echo "  release        versioned manifests, images pinned: RELEASE_REGISTRY=R [RELEASE_DIR=dist]"
	@echo "                 [SERVER_DIGEST=sha256:.. WEBHOOK_DIGEST=sha256:.. NODE_DIGEST=sha256:..]"
	@echo "                 -> dist/kubevirt-imds-VERSION/ (manual, cert-manager, agent)"
	@echo

## e2e-vm: the VM stage alone (root): a Debian 12 guest under qemu (TCG)
## boots against `imds-server run` as the webhook injects it (masquerade with
## a reboot, then link-local); VARIANT=asan runs it against the ASan server
.PHONY: e2e-vm
e2e-vm:
	@hack/install-deps.sh build test vm
	@$(MAKE) --no-print-directory VARIANT=debug server unit-bins
	@$(if $(filter asan,$(VARIANT)),$(MAKE) --no-print-directory VARIANT=asan server,true)
	@IMDS_VARIANT=$(VARIANT) IMDS_SERVER=$(CURDIR)/build/$(VARIANT)/imds-server tests/integration/vm_boot.sh
