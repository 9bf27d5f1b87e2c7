# conveyor — the two commands a new user needs are `make run` and `make test`.
SHELL := /usr/bin/env bash
GO    ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
# Backend of `make run`: mem (in-process channels) or db (PostgreSQL).
BACKEND ?= mem

.PHONY: run test lint fmt-check vet bench fuzz check-go

## run: the template app on the in-memory backend (BACKEND=db for PostgreSQL)
run: check-go
ifeq ($(BACKEND),db)
	scripts/with-postgres.sh env CONVEYOR_BACKEND=db $(GO) run ./template
else
	$(GO) run ./template
endif

## test: gofmt, go vet, and every test with the race detector, against a real PostgreSQL
test: lint
	scripts/with-postgres.sh $(GO) test -race -count=1 -timeout 9m ./...

## lint: gofmt check and go vet
lint: fmt-check vet

fmt-check: check-go
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change these files (run gofmt -w):"; echo "$$out"; exit 1; fi

vet: check-go
	$(GO) vet ./...

## bench: the benchmarks of the framework's packages
bench: check-go
	scripts/with-postgres.sh $(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: each fuzz target for a while (FUZZTIME, default 30s)
FUZZTIME ?= 30s
fuzz: check-go
	$(GO) test -run '^$$' -fuzz FuzzParseTag -fuzztime $(FUZZTIME) ./di

check-go:
	@command -v $(GO) >/dev/null 2>&1 || { echo "Go is not installed: install Go 1.25 or later (https://go.dev/dl) and put it on PATH."; exit 1; }
