# scaleproof — the two commands a newcomer needs:
#   make run    builds, runs the five scenarios on local processes (quick profile), prints the table
#   make test   the test suite (vet + go test -race); .ci/run calls exactly this
GO      ?= go
BIN     ?= bin
PROFILE ?= quick
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
GOFLAGS_BUILD := -trimpath -ldflags "$(LDFLAGS)"
TEST_TIMEOUT ?= 30m

.PHONY: all build run run-published test test-short bench fmt vet clean help deps

all: build

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/scaleproof and bin/scaleproof-ref (static, CGO_ENABLED=0)
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o $(BIN)/scaleproof ./cmd/scaleproof
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o $(BIN)/scaleproof-ref ./cmd/scaleproof-ref

run: build ## run the five scenarios on local processes (quick profile) and print the table
	$(BIN)/scaleproof run --platform local --profile $(PROFILE)

run-published: build ## the seed's own settings (about 15 minutes on local)
	$(BIN)/scaleproof run --platform local --profile published

deps: deps-chromium deps-prometheus ## install what the tests need from Debian (chromium for the HTML report test, prometheus + promtool for the hpa tests)

vet: ## go vet
	$(GO) vet ./...

test: vet ## the whole suite with the race detector (includes the quick end-to-end run on local)
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

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

.PHONY: deps-prometheus
deps-prometheus: ## install Debian's prometheus + promtool (hpa policy, spike scenario, alert rules; needs root; no-op when present)
	command -v prometheus || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus)
