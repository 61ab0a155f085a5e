# harvester-machine: node driver, bootstrap toolkit and simulated Harvester.
# `make help` lists the targets.

SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin
PRODUCT_BINS := docker-machine-driver-harvester harvester-bootstrap harvester-sim
E2E_PKGS := ./test/e2e/...
MODULE := $(shell $(GO) list -m)
UNIT_PKGS = $$($(GO) list ./... | grep -v /test/e2e/)
GOTEST_FLAGS ?=
# Go's per-package test timeout (its default is 10m), a backstop well past
# what the longest job (test/e2e/driver) takes on a slow, loaded 2-core
# machine. `make soak` runs the long soaks with SOAK_TIMEOUT.
GOTEST_TIMEOUT ?= 60m
SOAK_TIMEOUT ?= 45m
# One set of build flags for every go command here and in the scripts
# (build, test, vet, the test tools, the demo's programs): the Go build cache
# keys on them, so a package the product, the tests and the tools share is
# compiled once.
export GOFLAGS := -trimpath -buildvcs=false $(filter-out -trimpath -buildvcs=false,$(GOFLAGS))

.PHONY: help build tools test soak unit e2e fuzz bench lint demo release clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## build the product binaries into bin/
	@PRODUCT_BINS='$(PRODUCT_BINS)' bash test/tools/build.sh product

tools: ## build the pinned test tools (kube-apiserver, kube-controller-manager, etcd, rancher-machine, kube-vip, virt-api, virt-controller, kubevirt-install, harvester-webhook, harvester, upgradehelper) into bin/, once
	@bash test/tools/build.sh

# `make test` runs the unit packages in one `go test` process and the
# end-to-end packages as a queue of jobs, TEST_JOBS at a time
# (test/gotest-jobs.sh), each job on a simulator of its own: the driver,
# then the chains below. Every simulator alive costs CPU even at rest
# (docs/sim.md#what-it-costs): on 2 cores, more than 4 at once starve each
# other past the tests' deadlines.
# test/e2e/driver, the longest package, is one job with one simulator: its
# sequential tests (faults, maintenance, quotas: what other tests share)
# run first, then those that touch only their own objects together
# (t.Parallel; test/e2e/driver/main_test.go says which are which), at most
# DRIVER_PARALLEL at once. Those mostly wait on the simulator (its
# controllers, a VM's boot, a watch) and spend little CPU meanwhile (a
# machine created and removed costs under 2 CPU-seconds: 50 at once cost
# 87, docs/reliability.md), so more than go test's default of one per
# core (2) keep the simulator busy; many more than 8 only stretch the
# tests' waits towards their deadlines while the cores are shared with
# the other jobs. Nothing is left out but the CPU hog. Patterns hold no
# spaces (the runner splits on them).
DRIVER_E2E := ./test/e2e/driver
DRIVER_PARALLEL := 8
TEST_JOBS ?= 4
# What burns CPU on purpose (every core busy, by design) is `make soak`'s,
# which CI runs after `make test`: left out here.
SOAK_TESTS := ^TestUnderCPUHog$$
# Test binaries are linked without DWARF (-w; a panic's trace reads Go's
# own pclntab): every run links each package's test binary again, and
# DWARF is about half of a link's CPU. go vet runs in `make lint` (all of
# its checks, CI's first step), not again in each test build (-vet=off).
TEST_LDFLAGS := -ldflags=-w
GOTEST := $(GO) test $(TEST_LDFLAGS) $(GOTEST_FLAGS) -timeout $(GOTEST_TIMEOUT) -count=1
# The other end-to-end packages run in chains: one simulator each, the
# packages of a chain one after another on it (test/harness/e2e-chain),
# each leaving it as it found it (the harness checks and says what was
# left). A package that restarts or freezes kube-apiserver comes last in
# its chain: Harvester's API server, losing its leader Lease then, may be
# down for minutes. A package named nowhere runs last, on its own.
E2E_CHAINS := '@chain ./test/e2e/guest ./test/e2e/bootstrap' '@chain ./test/e2e/simctl ./test/e2e/sim'
E2E_CHAINED := guest bootstrap simctl sim
E2E_UNNAMED = $$($(GO) list ./test/e2e/... | grep -vxF $(foreach p,driver $(E2E_CHAINED),-e '$(MODULE)/test/e2e/$(p)'))
E2E_CHAIN := $(CURDIR)/.cache/bin/e2e-chain

test: build tools ## unit and end-to-end tests (the simulator is started by the tests; the soak is the short one, 10 machines x 2; the CPU-hog runs are `make soak`'s)
	@$(GO) build -o $(E2E_CHAIN) ./test/harness/e2e-chain
	@E2E_CHAIN=$(E2E_CHAIN) GOTEST='$(GOTEST) -vet=off' TEST_JOBS=$(TEST_JOBS) bash test/gotest-jobs.sh \
	  $(UNIT_PKGS) -- \
	  '-parallel $(DRIVER_PARALLEL) -skip $(SOAK_TESTS) $(DRIVER_E2E)' \
	  $(E2E_CHAINS) $(E2E_UNNAMED)

# The long soaks run one after another (-parallel 1): TestConcurrentMachines
# and TestStaticAddressPool are parallel tests, and their 50 machines each
# (4 GiB, about 3 GiB requested at Harvester's 150% memory overcommit) do
# not fit the simulator's three 62 GiB hosts at once.
soak: build tools ## the long soaks: 50 machines x 3 rounds through rancher-machine, then again with every core busy, with the API-server faults at every moment; 50 machines on a 50-address static range (CI runs it after `make test`)
	HARVESTER_E2E_SOAK=long $(GO) test $(TEST_LDFLAGS) $(GOTEST_FLAGS) -timeout $(SOAK_TIMEOUT) -count=1 -v -parallel 1 \
	  -run '^(TestConcurrentMachines|TestUnderCPUHog|TestStaticAddressPool)$$' ./test/e2e/driver

unit: ## unit tests only
	$(GOTEST) $(UNIT_PKGS)

e2e: build tools ## end-to-end tests against the simulated Harvester
	$(GOTEST) $(E2E_PKGS)

# Every `func FuzzX(f *testing.F)` in a tracked test file is a fuzz target.
# A count of inputs, not a duration: with a duration, Go's fuzzing engine
# can fail with "context deadline exceeded" when gathering the corpus's
# baseline coverage outlasts it on a loaded machine.
FUZZTIME ?= 4000x
FUZZ_PARALLEL ?= 2
FUZZ_DIRS = $$(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | xargs -n1 dirname | sort -u)

fuzz: ## run every fuzz target for FUZZTIME each (4000 inputs; `go test` alone runs their seed corpora)
	@set -e; for dir in $(FUZZ_DIRS); do \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$dir/*_test.go); do \
	    echo "fuzz ./$$dir $$t ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -parallel $(FUZZ_PARALLEL) ./$$dir; \
	  done; \
	done

bench: build tools ## benchmarks: the driver's cost per machine against the simulator (table; docs/benchmarks.md), then the Go benchmarks
	$(GO) run ./test/bench/harvester-bench
	$(GO) test -run '^$$' -bench . -benchmem ./...

# deadcode starts from every main package and every test but sim/'s own:
# a function under sim/ that only its unit test calls is unused.
lint: ## go vet, gofmt, golangci-lint and deadcode (pinned in test/tools/lint, built into bin/ once)
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@bash test/tools/build.sh lint
	$(BIN)/golangci-lint run ./...
	@out=$$($(BIN)/deadcode -test -filter '^$(MODULE)/sim(/|$$)' $$($(GO) list ./... | grep -v '^$(MODULE)/sim\(/\|$$\)')) || exit 1; \
	  if [ -n "$$out" ]; then echo "unused under sim/ (deadcode):"; echo "$$out"; exit 1; fi

demo: build tools ## run the whole flow against a simulated Harvester, then clean up
	@bash test/demo/demo.sh

release: ## release archives, SHA256SUMS and NodeDriver manifest in dist/ (VERSION=..., RELEASE_URL=...), built twice to check they are reproducible
	@bash test/release/release.sh --verify

clean: ## remove binaries, build stamps and dist/
	rm -rf $(BIN) .cache dist
