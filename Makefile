# conveyor — the two commands a new user needs are `make run` and `make test`.
SHELL := /usr/bin/env bash
GO    ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
# Backend of `make run`: mem (in-process channels), db (PostgreSQL), nats
# (NATS JetStream), sqlite (a SQLite file) or kafka (Apache Kafka).
BACKEND ?= mem
# The modules of the repository (docs/modules.md; go.work lists them). In
# workspace mode a pattern ./... at the root does not cross into a nested
# module, so the recipes name each module's ./dir/... (one go command for
# all: its packages build and test in parallel). bench and interop run
# apart (bench without -race, interop against the CloudEvents SDK).
# internal/reliability comes first: its tests run one after another (they
# time leases and storms, which a machine loaded by more of them at once
# stretches), the longest package, so go test starts it first and runs the
# others beside it.
SUBMODULES := internal/reliability internal/natstest natspubsub kafkapubsub sqlitepubsub otelconveyor relay/natstests relay/kafkatests relay/cmd template cmd
PATTERNS   := $(addsuffix /...,$(addprefix ./,$(SUBMODULES))) ./...

.PHONY: run test packages lint fmt-check vet tidy-check base-deps bench bench-nats bench-kafka bench-micro fuzz check-go

## run: the template app on the in-memory backend (BACKEND=db for PostgreSQL, BACKEND=nats for NATS, BACKEND=sqlite for a SQLite file, BACKEND=kafka for Kafka)
# Ctrl-C stops it cleanly. Its settings are environment variables
# (CONVEYOR_ADDR, CONVEYOR_WORKERS, ...; see template/app/config.go). On
# PostgreSQL its tables are in the schema conveyor_template, created if missing;
# on NATS its streams are named conveyor_template_..., on $NATS_URL, else the
# server on 127.0.0.1:4222, else a throwaway one (scripts/with-nats.sh); on
# sqlite they are in the file $CONVEYOR_SQLITE_PATH, else
# $TMPDIR/conveyor-template.db, which the run prints and keeps: the orders
# waiting there survive a restart of the app; on kafka its topics and share
# groups are named conveyor_template..., on $KAFKA_BROKERS, else a throwaway
# in-memory kfake cluster of three brokers (scripts/with-kafka.sh).
# The app is built into a temporary directory, removed when it exits, and run
# as the recipe's own child (not by go run, which exits 1 on a signal): a clean
# stop on Ctrl-C is a success. On db, nats and kafka, the shell and the with- script
# ignore SIGINT (a throwaway server's trap would exit 130 after the app's clean
# stop): the app still gets it, and the script still removes its server
# afterwards.
run: check-go
ifeq ($(filter $(BACKEND),mem db nats sqlite kafka),)
	@echo "BACKEND=$(BACKEND): want mem (the default, in memory), db (PostgreSQL), nats (NATS JetStream), sqlite (a SQLite file) or kafka (Apache Kafka)"; exit 2
else
	@set -e; dir=$$(mktemp -d "$${TMPDIR:-/tmp}/conveyor-run.XXXXXX"); trap 'rm -rf "$$dir"' EXIT; \
	$(GO) build -o "$$dir/app" ./template/app; \
	if [ "$(BACKEND)" = db ]; then \
		trap '' INT; \
		scripts/with-postgres.sh env CONVEYOR_BACKEND=db CONVEYOR_DB_SCHEMA=conveyor_template "$$dir/app"; \
	elif [ "$(BACKEND)" = nats ]; then \
		trap '' INT; \
		scripts/with-nats.sh env CONVEYOR_BACKEND=nats CONVEYOR_NATS_PREFIX=conveyor_template "$$dir/app"; \
	elif [ "$(BACKEND)" = kafka ]; then \
		trap '' INT; \
		GO="$(GO)" scripts/with-kafka.sh env CONVEYOR_BACKEND=kafka CONVEYOR_KAFKA_PREFIX=conveyor_template "$$dir/app"; \
	elif [ "$(BACKEND)" = sqlite ]; then \
		file="$${CONVEYOR_SQLITE_PATH:-$${TMPDIR:-/tmp}/conveyor-template.db}"; \
		echo "messages in the SQLite file $$file (CONVEYOR_SQLITE_PATH)" >&2; \
		CONVEYOR_BACKEND=sqlite CONVEYOR_SQLITE_PATH="$$file" "$$dir/app"; \
	else \
		CONVEYOR_BACKEND=mem "$$dir/app"; \
	fi
endif

## test: gofmt, go vet, and every test with the race detector, against a real PostgreSQL
## and a real NATS server with JetStream (scripts/with-nats.sh),
## then a smoke run of the benchmark harness (bench/, its own module) and the tests
## against the official CloudEvents SDK (interop/, its own module)
# go test -json goes through internal/testprogress: a line per package as it
# finishes, the packages still running after 20 s of quiet, the full output of
# failing tests, and last a line per failed package naming its failed tests
# (what a report cut to its tail still shows). With pipefail the recipe's
# status is go test's. -parallel 6: the parallel tests (the conformance
# suite's cases, the reliability tests) mostly wait on leases, backoffs,
# restarts and children, so more of them at once than the default
# GOMAXPROCS (2 here) take less time, not more CPU.
test: lint packages
	@set -o pipefail; dir=$$(mktemp -d "$${TMPDIR:-/tmp}/conveyor-test.XXXXXX"); trap 'rm -rf "$$dir"' EXIT; \
	$(GO) build -o "$$dir/testprogress" ./internal/testprogress || exit; \
	echo "go test -race of every module but bench and interop (against PostgreSQL and NATS)"; \
	scripts/with-postgres.sh scripts/with-nats.sh $(GO) test -json -race -count=1 -parallel 6 -timeout 9m $(PATTERNS) | "$$dir/testprogress" || exit; \
	echo "a throwaway app importing only channelpubsub, dbpubsub and event has no heavy module (scripts/check-lean-app.sh)"; \
	scripts/check-lean-app.sh || exit; \
	echo "go test ./... in bench/ (against PostgreSQL and NATS)"; \
	(cd bench && ../scripts/with-postgres.sh ../scripts/with-nats.sh $(GO) test -json -count=1 -timeout 5m ./...) | "$$dir/testprogress" || exit; \
	echo "go test -race ./... in interop/ (against the CloudEvents SDK)"; \
	(cd interop && $(GO) test -json -race -count=1 -timeout 5m ./...) | "$$dir/testprogress"

## packages: the Debian packages the tests need (PostgreSQL's binaries, nats-server,
## chromium, kcat), installed with apt-get when missing (scripts/install-packages.sh)
packages:
	@scripts/install-packages.sh

## lint: gofmt check, go vet, go mod tidy leaving every go.mod and go.sum unchanged,
## and the base module's graph inside scripts/base-allowlist.txt
lint: fmt-check vet tidy-check base-deps

base-deps: check-go
	@scripts/check-base-deps.sh

fmt-check: check-go
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change these files (run gofmt -w):"; echo "$$out"; exit 1; fi

vet: check-go
	$(GO) vet $(PATTERNS)
	cd bench && $(GO) vet ./...
	cd interop && $(GO) vet ./...

## bench: conveyor against its peers, side by side (bench/, ~20 min); writes BENCHMARKS.md
## and bench/results/. BENCH_FLAGS passes flags (cd bench && go run . -h lists them).
## A throwaway PostgreSQL is started for it unless DATABASE_URL is set; the NATS server
## is the one scripts/with-nats.sh gives ($NATS_URL, 127.0.0.1:4222, else a throwaway one).
BENCH_FLAGS ?=
bench: check-go
	cd bench && export CONVEYOR_BENCH_COMMAND="make bench$(if $(BENCH_FLAGS), BENCH_FLAGS='$(BENCH_FLAGS)')"; \
	if [ -n "$${DATABASE_URL:-}" ]; then \
		../scripts/with-postgres.sh ../scripts/with-nats.sh $(GO) run . -md ../BENCHMARKS.md $(BENCH_FLAGS); \
	else \
		PG_DURABLE=1 PGPORT_FORCE_THROWAWAY=1 ../scripts/with-postgres.sh ../scripts/with-nats.sh $(GO) run . -md ../BENCHMARKS.md $(BENCH_FLAGS); \
	fi

## bench-nats: the NATS systems only (~5 min), on the server scripts/with-nats.sh gives;
## rewrites the NATS section of BENCHMARKS.md and keeps the others from bench/results/
bench-nats: check-go
	cd bench && CONVEYOR_BENCH_COMMAND="make bench-nats$(if $(BENCH_FLAGS), BENCH_FLAGS='$(BENCH_FLAGS)')" \
		../scripts/with-nats.sh $(GO) run . -systems nats -md ../BENCHMARKS.md $(BENCH_FLAGS)

## bench-kafka: the Kafka systems only (~4 min), on $KAFKA_BROKERS or a kfake cluster the
## benchmark starts in its process; rewrites the Kafka section of BENCHMARKS.md
bench-kafka: check-go
	cd bench && CONVEYOR_BENCH_COMMAND="make bench-kafka$(if $(BENCH_FLAGS), BENCH_FLAGS='$(BENCH_FLAGS)')" \
		$(GO) run . -systems kafka -md ../BENCHMARKS.md $(BENCH_FLAGS)

## bench-micro: the Go benchmarks of the framework's packages
bench-micro: check-go
	scripts/with-postgres.sh $(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: each fuzz target for a while (FUZZTIME, default 30s)
FUZZTIME ?= 30s
fuzz: check-go
	$(GO) test -run '^$$' -fuzz '^FuzzParseTag$$' -fuzztime $(FUZZTIME) ./di
	$(GO) test -run '^$$' -fuzz '^FuzzValidateTopicName$$' -fuzztime $(FUZZTIME) ./pubsub
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./event

tidy-check: check-go
	@for m in . $(SUBMODULES) bench interop; do \
		if ! out=$$(cd $$m && $(GO) mod tidy -diff 2>&1); then \
			echo "go mod tidy would change $$m/go.mod or go.sum (run it there):"; echo "$$out"; exit 1; \
		fi; \
	done

check-go:
	@command -v $(GO) >/dev/null 2>&1 || { echo "Go is not installed: install Go 1.25 or later (https://go.dev/dl) and put it on PATH."; exit 1; }
