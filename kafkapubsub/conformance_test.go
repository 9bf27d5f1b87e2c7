package kafkapubsub_test

import (
	"testing"

	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
)

// TestConformance runs the contract's suite on the backend. Its run
// through a wrapper is otelconveyor's TestConformance (the engine's own
// test runs pubsubtest.Wrap), so it is not repeated here.
func TestConformance(t *testing.T) {
	pubsubtest.Run(t, kafkapubsubtest.Harness(t, kafkapubsub.Options{}))
}

// TestConformanceGroups runs the suite in consumer-group mode: every
// difference from share-group mode is declared
// (kafkapubsubtest.GroupAbilities).
func TestConformanceGroups(t *testing.T) {
	pubsubtest.Run(t, kafkapubsubtest.Harness(t, kafkapubsub.Options{ConsumerGroups: true}))
}
