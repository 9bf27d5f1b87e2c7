module github.com/conveyorgo/conveyor/internal/natstest

go 1.26.0

// The conveyor modules this one needs are replaced by the directories of
// this checkout, so that it builds and tests with GOWORK=off against the
// checkout (docs/modules.md); the go.work at the root does the same.
replace github.com/conveyorgo/conveyor => ../..

require github.com/nats-io/nats.go v1.56.0

require (
	github.com/klauspost/compress v1.20.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
