# bftlog — see README.md.
BUILD_DIR ?= ./build
GOTEST_FLAGS ?=
# Name, version (git describe) and commit for `bftlogd version` and node_info; defined once in
# scripts/ldflags.sh, which localnet.sh and the test harness (testutil/node) run too.
VERSION_LDFLAGS = $(shell ./scripts/ldflags.sh)

.PHONY: all build install localnet test sim test-race test-faults test-statesync fuzz-smoke fuzz check test-unit bench bench-compare bench-large figures proto-tools proto-gen soak clean

all: build

build:
	go build -ldflags '$(VERSION_LDFLAGS)' -o $(BUILD_DIR)/bftlogd ./cmd/bftlogd

install:
	go install -ldflags '$(VERSION_LDFLAGS)' ./cmd/bftlogd

# README command one: a single-validator local chain in the foreground with a demo topic;
# VALIDATORS=4: four validators from bftlogd testnet and a Kafka gateway (scripts/localnet-net.sh).
VALIDATORS ?= 1
localnet:
	VALIDATORS=$(VALIDATORS) ./scripts/localnet.sh

# README command two: every test, including the in-process network and the end-to-end
# test that builds bftlogd and drives it as a process, then the fuzz smoke and the concurrent
# code under the race detector (test-race), so CI, which runs make test, runs -race too.
test:
	go test $(GOTEST_FLAGS) -count=1 -timeout 30m ./...
	$(MAKE) fuzz-smoke
	$(MAKE) test-race

# The inner loop, a few minutes warm (README): formatting, vet, golangci-lint with .golangci.yml,
# go.mod tidy, and every test that does not start processes (go test -short, with the test
# cache, so unchanged packages are not run again). .ci/run runs it before make test.
GOLANGCI_LINT_VERSION = v2.15.0
GOLANGCI_LINT = $(firstword $(shell command -v golangci-lint) $(wildcard $(shell go env GOPATH)/bin/golangci-lint))
check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt -w needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	@if [ -n "$(GOLANGCI_LINT)" ]; then echo "$(GOLANGCI_LINT) run ./..."; $(GOLANGCI_LINT) run ./...; \
	else echo "golangci-lint not installed: lint SKIPPED (go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION))"; fi
	go mod tidy -diff
	go test $(GOTEST_FLAGS) -short -timeout 20m ./...

# Which tests run where, by one rule:
#   make test         every test (the fault scenarios and attacks included);
#   make check        go test -short: a test that starts processes, a network or a long run
#                     skips itself under testing.Short() (test-unit: the same for x/);
#   make test-faults  the tests named TestFault… (the README's Reliability scenarios, power cuts,
#                     crashes) and TestAttack… (hostile input, floods, hostile accounts, bounds of
#                     the Threat model section), in every package, verbose, with their figures.
# A test joins make test-faults by its name alone; there is no list to keep in step.
test-faults:
	go test $(GOTEST_FLAGS) -count=1 -timeout 30m -v -run '^Test(Fault|Attack)' ./...

# Fuzzing beyond the seed corpora (which run in every go test anyway). A count, not a
# duration: with a duration Go's fuzzer can fail with "context deadline exceeded" when the
# deadline lands while it minimises a new input (seen in CI).
FUZZTIME ?= 10000x
# make test: a few thousand executions of each cheap target (pure functions, microseconds each).
fuzz-smoke:
	go test -run '^$$' -fuzz '^FuzzValidateTopicName$$' -fuzztime $(FUZZTIME) ./x/topics/types/
	go test -run '^$$' -fuzz '^FuzzRecordBatchProto$$' -fuzztime $(FUZZTIME) ./x/topics/types/
	go test -run '^$$' -fuzz '^FuzzCheckRecordBatch$$' -fuzztime $(FUZZTIME) ./x/topics/kbatch/
	go test -run '^$$' -fuzz '^FuzzDecodeRecordBatch$$' -fuzztime $(FUZZTIME) ./x/topics/kbatch/
	go test -run '^$$' -fuzz '^FuzzCompactionRecords$$' -fuzztime $(FUZZTIME) ./x/topics/kbatch/
	go test -run '^$$' -fuzz '^FuzzKeyPartition$$' -fuzztime $(FUZZTIME) ./x/topics/types/

# The long runs, not in make test: FuzzProduce runs a keeper and a block per input (10,000
# executions took 15 of 29 minutes of a CI run), after the cheap targets.
fuzz: fuzz-smoke
	go test -run '^$$' -fuzz '^FuzzProduce$$' -fuzztime $(FUZZTIME) ./x/topics/keeper/
	go test -run '^$$' -fuzz '^FuzzSplitBatches$$' -fuzztime $(FUZZTIME) ./gateway/kafka/

# The side-by-side benchmark (README, Performance): bftlog on 1, 4 and 7 validator processes,
# JSON events compressed by the producer, the one-record-per-transaction design, a Kafka
# client through the gateway and NATS JetStream R1/R3, in one run. Flags via BENCH_FLAGS.
BENCH_FLAGS ?=
# The side-by-side run (N=1, 4, 7, JetStream, the gateway, compressible events), then the
# large-state run: about 30 minutes in all.
bench: bench-compare bench-large

bench-compare:
	go run ./bench/cmd/bftlogbench $(BENCH_FLAGS)
	$(MAKE) figures

# The README's headline table, written from the latest results files (bench/results/latest*.json);
# TestREADMEHeadlineIsTheLatestResults fails when the README and those files disagree.
figures:
	go run ./bench/cmd/bftlogbench -figures README.md

# One validator measured empty, filled with BENCH_LARGE_GB of log, measured again.
BENCH_LARGE_GB ?= 5
bench-large:
	go run ./bench/cmd/bftlogbench -large-gb $(BENCH_LARGE_GB) $(BENCH_FLAGS)
	$(MAKE) figures

# The data plane's two ways to authenticate peers by their keys, side by side on loopback:
# signed requests (as it is) and mutual TLS; both answer with a signed receipt (about 20 s).
.PHONY: bench-transport
bench-transport:
	BFTLOG_TRANSPORT_SECONDS=3 go test -count=1 -run TestTransport -v ./bench/transport/

# 4 validators with 0, 20, 50 and 100 ms round trip between every two (per-pair delaying
# proxies), each with its recommended block timing: about 9 minutes.
.PHONY: bench-regions
bench-regions:
	go run ./bench/cmd/bftlogbench -regions 0,20,50,100 $(BENCH_FLAGS)
	$(MAKE) figures

# A new node joining a four-validator chain holding 1 GB of log by state sync, against one
# block-syncing from genesis (README, Operations); make test runs it with 16 MB.
BFTLOG_STATESYNC_MB ?= 1024
test-statesync:
	BFTLOG_STATESYNC_MB=$(BFTLOG_STATESYNC_MB) BFTLOG_STATESYNC_INTERVAL=500 go test $(GOTEST_FLAGS) -count=1 -timeout 60m -v -run 'TestStateSyncJoinsWithTheLog' ./tests/e2e/

# The randomized simulation of the state machine (testutil/sim; make test runs 500 blocks of
# seed 27): SIM_BLOCKS blocks of seed SIM_SEED, or of SIM_SEEDS seeds from SIM_SEED on. A
# failure prints the seed, the height and the message log (kept in SIM_DIR).
SIM_SEED ?= 1
SIM_SEEDS ?= 1
SIM_BLOCKS ?= 2000
sim:
	@dir=$${SIM_DIR:-$$(mktemp -d /tmp/bftlog-sim.XXXXXX)}; \
	for s in $$(seq $(SIM_SEED) $$(($(SIM_SEED) + $(SIM_SEEDS) - 1))); do \
		mkdir -p $$dir/$$s && \
		SIM_SEED=$$s SIM_BLOCKS=$(SIM_BLOCKS) SIM_DIR=$$dir/$$s go test $(GOTEST_FLAGS) -count=1 -timeout 0 -v -run '^TestSimulation$$' ./app/ || exit 1; \
	done

# The concurrent code under the race detector: the record store (in x/topics/keeper, or its own
# package under x/topics once it has one), the state-sync snapshotter and queries beside commits
# (app), the Kafka gateway and the transaction client, with -short. Part of make test (so of CI):
# 76 s with a warm build cache (2026-12-04; a cold one adds the -race build of the SDK, minutes).
# RACE_SKIP leaves out single-goroutine tests the detector cannot add to, which make test runs
# without it: the keeper's 4 GiB decompression bound took 68 of 142 s under -race.
RACE_PKGS = $(shell go list ./x/topics/... | grep -E '/keeper$$|/recordstore$$|/client/txclient$$') ./gateway/kafka/ ./app/dataplane/
RACE_SKIP = ^TestAttackFetchRecordsDecompressionIsBounded$$
test-race:
	go test $(GOTEST_FLAGS) -race -short -count=1 -skip '$(RACE_SKIP)' $(RACE_PKGS)
	go test $(GOTEST_FLAGS) -race -short -count=1 -run 'TestQueriesBesideCommitsDoNotRace|Snapshot|StateSync' ./app/

test-unit:
	go test -count=1 -short ./x/...

proto-tools:
	go install github.com/cosmos/gogoproto/protoc-gen-gocosmos@v1.7.2
	go install github.com/grpc-ecosystem/grpc-gateway/protoc-gen-grpc-gateway@v1.16.0
	go install github.com/grpc-ecosystem/grpc-gateway/protoc-gen-swagger@v1.16.0
	@command -v protoc >/dev/null || { echo "protoc missing: apt-get install protobuf-compiler" >&2; exit 1; }
	@command -v jq >/dev/null || { echo "jq missing: apt-get install jq" >&2; exit 1; }

# Regenerates the committed *.pb.go, *.pb.gw.go and x/topics/client/docs/openapi.json from proto/ exactly.
proto-gen: proto-tools
	./scripts/protocgen.sh

clean:
	rm -rf $(BUILD_DIR) .localnet

# The long run under random faults (tests/soak, not in make test): 4 validators, producers and a
# consumer group at BFTLOG_SOAK_RATE records/s (default 4,000; 11,400, half the N=4 peak, saturates this machine) for
# BFTLOG_SOAK_DURATION (default 30m) under a seeded nemesis (BFTLOG_SOAK_SEED), then the whole
# history checked; chart and figures in tests/soak/results/.
soak:
	go test -tags soak -count=1 -timeout 0 -v ./tests/soak/
