module github.com/conveyorgo/conveyor/interop

go 1.26.0

require (
	github.com/cloudevents/sdk-go/v2 v2.16.2
	github.com/conveyorgo/conveyor v0.0.0
)

require (
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/samber/do/v2 v2.0.0 // indirect
	github.com/samber/go-type-to-string v1.8.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)

replace github.com/conveyorgo/conveyor => ../

replace (
	github.com/conveyorgo/conveyor/internal/natstest => ../internal/natstest
	github.com/conveyorgo/conveyor/natspubsub => ../natspubsub
	github.com/conveyorgo/conveyor/otelconveyor => ../otelconveyor
)
