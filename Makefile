# scaleproof — the commands a newcomer needs:
#   make run    builds, runs the five scenarios on local processes (quick profile), prints the table
#   make test   the test suite (vet + go test -race); .ci/run calls exactly this
GO      ?= go
BIN     ?= bin
PROFILE ?= quick
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
GOFLAGS_BUILD := -trimpath -ldflags "$(LDFLAGS)"
TEST_TIMEOUT ?= 50m

.PHONY: all build run run-published test test-short bench fmt vet lint-workflows clean help deps

all: build

help: ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/scaleproof and bin/scaleproof-ref (static, CGO_ENABLED=0)
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o $(BIN)/scaleproof ./cmd/scaleproof
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o $(BIN)/scaleproof-ref ./cmd/scaleproof-ref

run: build ## run the five scenarios on local processes (quick profile) and print the table
	$(BIN)/scaleproof run --platform local --profile $(PROFILE)

run-published: build ## the published load test's settings, from Ramen 0.7.5's autoscaling notes (about 15 minutes on local)
	$(BIN)/scaleproof run --platform local --profile published

deps: deps-chromium deps-prometheus deps-shellcheck ## install what the tests need from Debian (chromium for the HTML report test, prometheus + promtool for the hpa tests, shellcheck for the workflows' scripts)

vet: ## go vet
	$(GO) vet ./...

# actionlint checks the GitHub workflows (.github/workflows: the nightly cloud
# run and the janitor) and the local action they use: syntax, expressions,
# the inputs of every action, job needs, and with shellcheck on the PATH (make
# deps installs Debian's) the scripts of every run: step too; without it
# actionlint skips that part and says nothing. It is built from the Go module
# proxy once into $(BIN)/actionlint-<version>/ (about 10 s cold; the Go build
# cache keeps it for the next clean checkout). v1.7.12 is the newest the proxy
# serves and builds with Go 1.26.
ACTIONLINT_VERSION ?= v1.7.12
ACTIONLINT := $(BIN)/actionlint-$(ACTIONLINT_VERSION)/actionlint

$(ACTIONLINT):
	GOBIN=$(abspath $(dir $@)) $(GO) install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

lint-workflows: $(ACTIONLINT) ## actionlint over .github/workflows (and shellcheck over their scripts when installed)
	@command -v shellcheck >/dev/null 2>&1 || echo "lint-workflows: no shellcheck on the PATH: the run: scripts are not checked (make deps-shellcheck)"
	$(ACTIONLINT) -color=false

# make test lists the tests that skipped (no chromium, no prometheus) at the
# end, before go test's closing line: the tests record why in the file named
# by $SCALEPROOF_SKIP_LOG (internal/skips) and hack/skipped.awk prints it.
test: vet lint-workflows ## the whole suite with the race detector (includes the quick end-to-end run on local); lists skipped tests at the end
	@skips=$$(mktemp) && rcf=$$(mktemp) && trap 'rm -f "$$skips" "$$rcf"' EXIT && \
	echo "$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./..." && \
	{ SCALEPROOF_SKIP_LOG="$$skips" $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./... 2>&1; echo $$? >"$$rcf"; } | \
	awk -v SKIPS="$$skips" -f hack/skipped.awk && exit "$$(cat "$$rcf")"

test-short: ## the suite without the end-to-end run
	$(GO) test -race -count=1 -short ./...

.PHONY: bench-load
bench-load: build ## our engine vs vegeta's library vs wrk on the reference worker (loopback, client and worker pinned to a core each)
	cd bench/loadcmp && $(GO) build -o ../../$(BIN)/loadcmp . && cd ../.. && $(BIN)/loadcmp -ref $(BIN)/scaleproof-ref $(BENCH_LOAD_FLAGS)

bench: ## benchmarks (figures, not assertions)
	$(GO) test -run '^$$' -bench . -benchmem ./autoscaler/... ./scenarios/load/

fmt: ## gofmt
	gofmt -w $$(git ls-files '*.go')

clean: ## remove binaries and artifacts
	rm -rf $(BIN) _artifacts

.PHONY: deps-chromium
deps-chromium: ## install Debian's chromium for the HTML report's browser test (needs root; no-op when present)
	@command -v chromium >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }

.PHONY: deps-shellcheck
deps-shellcheck: ## install Debian's shellcheck, which actionlint runs over the workflows' scripts (needs root; no-op when present; make lint-workflows works without it)
	@command -v shellcheck >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends shellcheck; }

.PHONY: deps-prometheus
# Debian's package also installs prometheus.service, which a systemd host would
# start as a system-wide Prometheus on :9090. The tests and the local platform
# start their own (free port, generated config), so the unit is stopped and
# disabled right after an install made here; an existing install is left alone.
deps-prometheus: ## install Debian's prometheus + promtool (hpa policy, spike scenario, alert rules; needs root; no-op when present; disables the package's system service)
	@if command -v prometheus >/dev/null 2>&1; then echo "deps-prometheus: prometheus already installed: $$(command -v prometheus)"; else \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus && \
	  if [ -d /run/systemd/system ]; then systemctl disable --now prometheus.service && \
	    echo "deps-prometheus: stopped and disabled prometheus.service (Debian starts it system-wide; scaleproof runs its own)"; \
	  else echo "deps-prometheus: no systemd running: Debian's prometheus.service was not started"; fi; fi

.PHONY: deps-kind kind-node-image
deps-kind: build ## host setup for kind's podman provider: apt packages, /etc/containers/containers.conf, /lib/modules (needs root; idempotent)
	$(BIN)/scaleproof kind host-setup

KIND_CACHE_DIR ?=
kind-node-image: build ## build the kind node image offline, or load it from $(KIND_CACHE_DIR); nothing when podman has it
	$(BIN)/scaleproof kind node-image $(if $(KIND_CACHE_DIR),--cache-dir $(KIND_CACHE_DIR))

# KEDA v2.21.0's operator, metrics API server and webhooks and metrics-server v0.8.0 built static
# from the module proxy, and Debian's prometheus with its libraries, as docker-archive images in
# $(KEDA_CACHE_DIR) tagged by the hash of their inputs (one tag per set); nothing when the cache
# holds them. The first build is long (KEDA's whole module graph; metrics-server's a few minutes),
# so go runs under nice. make e2e needs them (its target part runs KEDA and metrics-server).
KEDA_CACHE_DIR ?=
.PHONY: keda-images
keda-images: build ## build KEDA's operator, metrics API server and webhooks, metrics-server and Prometheus as image archives offline, cached by inputs in $(KEDA_CACHE_DIR) (default ~/.cache/scaleproof/kedaimage; needs make deps-prometheus)
	$(BIN)/scaleproof kind keda-images --nice 19 $(if $(KEDA_CACHE_DIR),--cache-dir $(KEDA_CACHE_DIR))

# e2e writes into $(E2E_DIR): run/ (the five scenarios on kind: results, table, junit_runner.xml,
# kubeconfig, kind's logs) and specs/ (the ginkgo specs: junit_e2e.xml). Each part makes its own
# cluster and deletes it, also on failure; both run, and e2e fails when either does.
# The scenarios' run spreads each load over $(E2E_LOAD_SHARDS) pods (an Indexed Job running
# `scaleproof load-shard`), so the distributed load and its merge are judged by the very facts
# that judge a local load, at no extra cluster; each load's "load over N shards" fact checks
# that every shard reported and that the merged counts are the shards' sum.
# canary/ is the sustained scenario again with a canary Deployment per zone (--canary): it
# counts as capacity, is never scaled or deleted, and its share of the calls is a fact.
# cloud/ is `run --platform gke` through the real GKE provider and cloud platform against the
# GKE fake, whose cluster is a kind cluster (its endpoint and CA, a ServiceAccount token as the
# OAuth2 token): the handoff from "a cluster exists" to "the scenarios run" on a real cluster.
# hpa/ and keda-queue/ (also alone: make e2e-targets) are the target scenarios judging the cluster's own HPA (CPU from
# metrics-server) on the worker workload and KEDA (the post's Prometheus trigger) on the queue
# workload, each on the contract it promises; targets/ are their e2e-framework specs. Their
# add-on images come from `make keda-images` (cached by inputs; the first build is long).
E2E_DIR ?= $(or $(ARTIFACTS),$(CURDIR)/_artifacts/e2e)
E2E_TIMEOUT ?= 30m
E2E_LOAD_SHARDS ?= 3

# Ctrl-C during make e2e (or e2e-console, e2e-targets): the recipe's shell
# waits for the step under way to tear down, runs no further step and exits
# 130. Only INT: a TERM sent to make alone reaches only this shell, and
# trapping it would wait out a step never asked to stop.
E2E_TRAP = trap 'echo "make $@: interrupted (artifacts in $(E2E_DIR))"; exit 130' INT;
# The two halves of make e2e, as shell lines that add to $$rc (the first failure's exit code wins;
# every part runs, so a failed part still leaves the others' results).
E2E_CONSOLE = \
	$(BIN)/scaleproof run --platform kind --profile $(PROFILE) --load-shards $(E2E_LOAD_SHARDS) --artifacts $(E2E_DIR)/run || rc=$$((rc ? rc : $$?)); \
	$(BIN)/scaleproof run --platform kind --profile $(PROFILE) --canary --scenarios sustained --artifacts $(E2E_DIR)/canary || rc=$$((rc ? rc : $$?)); \
	SCALEPROOF_E2E_KIND=1 ARTIFACTS=$(E2E_DIR)/specs $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) ./e2e/ || rc=$$((rc ? rc : 1)); \
	SCALEPROOF_E2E_KIND=1 ARTIFACTS=$(E2E_DIR)/cloud $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) ./e2e/cloudkind/ || rc=$$((rc ? rc : 1));
E2E_TARGETS = \
	$(BIN)/scaleproof run --platform kind --profile $(PROFILE) --target hpa --artifacts $(E2E_DIR)/hpa || rc=$$((rc ? rc : $$?)); \
	$(BIN)/scaleproof run --platform kind --profile $(PROFILE) --target keda --workload queue --artifacts $(E2E_DIR)/keda-queue || rc=$$((rc ? rc : $$?)); \
	SCALEPROOF_E2E_KIND=1 ARTIFACTS=$(E2E_DIR)/targets $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v ./e2e/targets/ || rc=$$((rc ? rc : 1));

.PHONY: e2e
e2e: deps-kind kind-node-image keda-images ## on kind: the five scenarios (run --platform kind --load-shards 3: each load over 3 pods), sustained with a canary, the ginkgo specs (./e2e/), a run through each of the GKE, EKS and AKS platforms against its fake on kind (./e2e/cloudkind/), then the target scenarios on the cluster's HPA and on KEDA with the queue workload and their specs (./e2e/targets/); JUnit in $(E2E_DIR) (root; podman or a Docker that runs privileged containers)
	@rc=0; $(E2E_TRAP) $(E2E_CONSOLE) $(E2E_TARGETS) \
	echo "make e2e: exit $$rc (artifacts in $(E2E_DIR))"; exit $$rc

.PHONY: e2e-console
e2e-console: deps-kind kind-node-image ## on kind: only the console part of make e2e: the five scenarios over 3 load pods, sustained with a canary, the ginkgo specs and the clouds on kind (needs no add-on images)
	@rc=0; $(E2E_TRAP) $(E2E_CONSOLE) \
	echo "make e2e-console: exit $$rc (artifacts in $(E2E_DIR))"; exit $$rc

.PHONY: e2e-targets
e2e-targets: deps-kind kind-node-image keda-images ## on kind: only the target part of make e2e: --target hpa, --target keda --workload queue, and their e2e-framework specs (./e2e/targets/)
	@rc=0; $(E2E_TRAP) $(E2E_TARGETS) \
	echo "make e2e-targets: exit $$rc (artifacts in $(E2E_DIR))"; exit $$rc
