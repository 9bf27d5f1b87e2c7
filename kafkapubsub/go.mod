module github.com/conveyorgo/conveyor/kafkapubsub

go 1.26.0

// The conveyor modules this one needs are replaced by the directories of
// this checkout, so that it builds and tests with GOWORK=off against the
// checkout (docs/modules.md); the go.work at the root does the same.
replace github.com/conveyorgo/conveyor => ..

require (
	github.com/conveyorgo/conveyor v0.0.0-00010101000000-000000000000
	github.com/twmb/franz-go v1.22.3
	github.com/twmb/franz-go/pkg/kadm v1.20.0
	github.com/twmb/franz-go/pkg/kfake v0.0.0-20260918054303-01f206a7e32c
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/samber/do/v2 v2.0.0 // indirect
	github.com/samber/go-type-to-string v1.8.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)
