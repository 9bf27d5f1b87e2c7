package natspubsub_test

import (
	"testing"

	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/natspubsub/natspubsubtest"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
)

// TestConformance runs the contract's suite on the backend. Its run
// through a wrapper is otelconveyor's TestConformance (the engine's own
// test runs pubsubtest.Wrap), so it is not repeated here.
func TestConformance(t *testing.T) {
	pubsubtest.Run(t, natspubsubtest.Harness(t, natspubsub.Options{}))
}

// TestConformanceConfirmAck runs the suite with acks the server confirms
// before Ack returns.
func TestConformanceConfirmAck(t *testing.T) {
	pubsubtest.Run(t, natspubsubtest.Harness(t, natspubsub.Options{ConfirmAck: true}))
}
