#!/usr/bin/env bash
# check-lean-app.sh: builds a throwaway app outside the tree that imports only
# channelpubsub, dbpubsub and event, with a go.mod replacing
# github.com/conveyorgo/conveyor by this checkout, and fails, naming them,
# when its `go list -m all` has a nats-io, go.opentelemetry.io, prometheus,
# google.golang.org/grpc or protobuf module (issue 31's "Done when").
# Needs the Go module proxy (or a module cache holding what go mod tidy wants).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/conveyor-leanapp.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat >"$dir/go.mod" <<MOD
module example.com/leanapp

go 1.26.0

require github.com/conveyorgo/conveyor v0.0.0

replace github.com/conveyorgo/conveyor => $root
MOD
cat >"$dir/main.go" <<'GO'
package main

import (
	"fmt"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/event"
)

var (
	_ = channelpubsub.New
	_ = dbpubsub.New
	_ event.Event
)

func main() { fmt.Println("lean") }
GO
cd "$dir"
export GOWORK=off GOFLAGS=-mod=mod
go mod tidy
go build ./...
heavy=$(go list -m -f '{{.Path}}' all | grep -E 'nats-io|^go\.opentelemetry\.io|prometheus|^google\.golang\.org/grpc|protobuf' || true)
if [ -n "$heavy" ]; then
	echo "an app importing only channelpubsub, dbpubsub and event gets heavy modules:"
	printf '  %s\n' $heavy
	exit 1
fi
echo "lean app: no nats-io, go.opentelemetry.io, prometheus, grpc or protobuf module in go list -m all"
