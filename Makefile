# flowgate — the commands a newcomer and CI run. `make demo` needs nothing but Go;
# `make test` installs what the tests need (redis-server, prometheus with promtool, etcd, chromium)
# when it can.

GO      ?= go
PKGS    ?= ./...
export FLOWGATE_REQUIRE_REDIS ?=
export FLOWGATE_REQUIRE_PROMETHEUS ?=
export FLOWGATE_REQUIRE_ETCD ?=
export FLOWGATE_REQUIRE_BROWSER ?=
# The go.work at the root ties the modules together for development; the core's
# own commands run without it (CORE), so the core is built as a user gets it:
# with its own go.mod's versions, and ./... its packages alone.
CORE    ?= GOWORK=off $(GO)
# Modules of their own beside the core, tested by make test (scripts/modules.sh).
MODULES ?= contrib/gin contrib/echo bench
# Every module of its own, checked by make lint.
LINT_MODULES ?= bench contrib/gin contrib/echo compat/sentinel

.PHONY: all demo test test-norace fuzz test-modules soak bench bench-peers bench-floor bench-accuracy lint deps examples compat proto

all: lint test

## demo: the main show: an HTTP service under 20 s of real load over loopback, live table, hot reload,
## alert; no Redis. Flags: make demo ARGS='-addr 127.0.0.1:9464 -duration 2m'.
demo:
	$(GO) run ./examples/demo $(ARGS)

## test: vet + race-enabled tests with a real redis-server, prometheus, etcd and chromium (installed
## by deps when missing); a test that needs one fails instead of skipping. Then the modules of their
## own (MODULES) and the examples. The checks -race distorts run again without it (test-norace).
## Then each reader of outside input is fuzzed for a few seconds (fuzz).
test: deps
	$(CORE) vet $(PKGS)
	FLOWGATE_REQUIRE_REDIS=1 FLOWGATE_REQUIRE_PROMETHEUS=1 FLOWGATE_REQUIRE_ETCD=1 FLOWGATE_REQUIRE_BROWSER=1 $(CORE) test -race -count=1 -timeout 20m $(PKGS)
	@$(MAKE) --no-print-directory test-norace
	@$(MAKE) --no-print-directory fuzz
	@$(MAKE) --no-print-directory test-modules
	@$(MAKE) --no-print-directory compat
	@$(MAKE) --no-print-directory examples

## test-norace: the checks the race detector distorts, without it: every zero-allocation check, the
## adaptive_concurrency band for C = 50 and 500, and the cluster's bounds on real time (Redis killed,
## recovery within 1 s) on a real redis-server.
## Prints each test that ran; a skipped test, or none, fails it (scripts/test-norace.sh).
test-norace: deps
	@GOWORK=off GO=$(GO) sh scripts/test-norace.sh

## fuzz: each reader of outside input fuzzed for FUZZTIME (default 20000x, 2-4 s here): the rules
## document parser (also what the watcher, etcd source and admin PUT read) and the Sentinel importer,
## JSON and YAML. The seed corpora are the f.Add lines and testdata/fuzz/; a failing input is written
## there. The default is a count of executions, not a duration: with a duration, Go 1.26's fuzzing
## coordinator can report "context deadline exceeded" as a failure when its time runs out while a
## worker is busy (golang/go#75804, fixed in Go 1.27), as a CI run did on 2026-11-28 with no input
## found. A count has no deadline to race.
FUZZTIME ?= 20000x
fuzz:
	$(CORE) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./rules/
	$(CORE) test -run '^$$' -fuzz '^FuzzImport$$' -fuzztime $(FUZZTIME) ./rules/sentinel/
	$(CORE) test -run '^$$' -fuzz '^FuzzImportYAML$$' -fuzztime $(FUZZTIME) ./rules/sentinel/

## test-modules: vet and race-enabled tests of each module of its own (contrib/gin, contrib/echo, and
## bench: its workload and table code; the timings and the accuracy table run under bench-*).
test-modules:
	@GO=$(GO) sh scripts/modules.sh $(MODULES)

## compat: the side-by-side tests against sentinel-golang (module compat/sentinel), -v so that
## its table (the README's "Side by side with sentinel-golang") is printed.
compat:
	cd compat/sentinel && $(GO) vet ./... && $(GO) test -race -count=1 -v ./...

## soak: the cluster chaos soak, 60 s per policy x algorithm on one Redis (6 min), then a Redis
## Cluster run (6 nodes; kill -9 of a master, CLUSTER FAILOVER, a lost shard) of 30 s per algorithm,
## with their figures (make test runs a 4 s version of the first, race-enabled; these are not).
soak: deps
	FLOWGATE_REQUIRE_REDIS=1 FLOWGATE_SOAK=$${FLOWGATE_SOAK:-60s} FLOWGATE_SOAK_CLUSTER=$${FLOWGATE_SOAK_CLUSTER:-30s} \
		$(CORE) test -count=1 -timeout 30m -run '^TestChaosSoak(Cluster)?$$' -v ./cluster/

## examples: build every example and run each short-lived one with a time limit.
examples:
	@GO=$(GO) sh scripts/examples.sh

## bench: every benchmark, with allocation counts.
bench:
	$(CORE) test -run '^$$' -bench . -benchmem $(PKGS)

## bench-peers: flowgate against x/time/rate, uber ratelimit and redis_rate (module bench/),
## in one run; writes bench/results.txt and the table in bench/README.md.
bench-peers: deps
	@sh scripts/bench-peers.sh

## bench-floor: the core's speed floor (one rule, parallel, refusal, three levels, a million users)
## for BASE (default HEAD~1) and the work tree in one interleaved run; writes bench/floor.txt.
bench-floor:
	@sh scripts/bench-floor.sh

## bench-accuracy: how closely cluster rules hold their limit with N instances on one Redis, leasing
## off/on, beside redis_rate and a local split (module bench/); writes the table and pictures into
## bench/README.md and prints the table. The full grid takes about 32 min; ACC_* env vars take a subset
## (see scripts/bench-accuracy.sh). Not part of make test.
bench-accuracy: deps
	@sh scripts/bench-accuracy.sh

## proto: regenerate cluster/tokenpb from token.proto with the pinned generators (protoc 3.21.12,
## protoc-gen-go v1.36.12, protoc-gen-go-grpc v1.6.2; installed into a temporary GOBIN, not go.mod).
## Not part of make test: the generated code is committed.
proto:
	@GO=$(GO) sh scripts/gen-proto.sh

## lint: gofmt has nothing to change, and go vet and staticcheck (pinned in scripts/lint.sh,
## installed into a temporary GOBIN) find nothing, in the core and in every module of its own
## (LINT_MODULES).
lint:
	@GO=$(GO) sh scripts/lint.sh $(LINT_MODULES)

## deps: make sure what the tests need is present.
deps:
	@sh scripts/deps.sh
