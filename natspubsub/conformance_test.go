package natspubsub_test

import (
	"testing"

	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/natspubsub/natspubsubtest"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
)

func TestConformance(t *testing.T) {
	pubsubtest.Run(t, natspubsubtest.Harness(t, natspubsub.Options{}))
}

// TestConformanceWrapped runs the suite through a wrapping Topic: every
// ability stays reachable.
func TestConformanceWrapped(t *testing.T) {
	pubsubtest.Run(t, pubsubtest.Wrap(natspubsubtest.Harness(t, natspubsub.Options{})))
}

// TestConformanceConfirmAck runs the suite with acks the server confirms
// before Ack returns.
func TestConformanceConfirmAck(t *testing.T) {
	pubsubtest.Run(t, natspubsubtest.Harness(t, natspubsub.Options{ConfirmAck: true}))
}
