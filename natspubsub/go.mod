module github.com/conveyorgo/conveyor/natspubsub

go 1.26.0

// The conveyor modules this one needs are replaced by the directories of
// this checkout, so that it builds and tests with GOWORK=off against the
// checkout (docs/modules.md); the go.work at the root does the same.
replace github.com/conveyorgo/conveyor => ..

replace github.com/conveyorgo/conveyor/internal/natstest => ../internal/natstest

require github.com/conveyorgo/conveyor v0.0.0-00010101000000-000000000000

require (
	github.com/conveyorgo/conveyor/internal/natstest v0.0.0-00010101000000-000000000000
	github.com/nats-io/nats.go v1.56.0
	github.com/nats-io/nuid v1.0.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/klauspost/compress v1.20.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/samber/do/v2 v2.0.0 // indirect
	github.com/samber/go-type-to-string v1.8.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
