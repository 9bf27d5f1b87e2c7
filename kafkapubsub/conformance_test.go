package kafkapubsub_test

import (
	"testing"

	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
)

func TestConformance(t *testing.T) {
	pubsubtest.Run(t, kafkapubsubtest.Harness(t, kafkapubsub.Options{}))
}

// TestConformanceWrapped runs the suite through a wrapping Topic: every
// ability stays reachable.
func TestConformanceWrapped(t *testing.T) {
	pubsubtest.Run(t, pubsubtest.Wrap(kafkapubsubtest.Harness(t, kafkapubsub.Options{})))
}

// TestConformanceGroups runs the suite in consumer-group mode: every
// difference from share-group mode is declared
// (kafkapubsubtest.GroupAbilities).
func TestConformanceGroups(t *testing.T) {
	pubsubtest.Run(t, kafkapubsubtest.Harness(t, kafkapubsub.Options{ConsumerGroups: true}))
}
