package dbpubsub_test

import (
	"testing"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
)

// TestConformance runs the contract's suite on the backend. Its run
// through a wrapper is otelconveyor's TestConformance (the engine's own
// test runs pubsubtest.Wrap), so it is not repeated here.
func TestConformance(t *testing.T) { pubsubtest.Run(t, dbpubsubtest.Harness(dbpubsub.Options{})) }

// TestConformanceConfirmAck runs the suite with Acks that return once
// committed.
func TestConformanceConfirmAck(t *testing.T) {
	pubsubtest.Run(t, dbpubsubtest.Harness(dbpubsub.Options{ConfirmAck: true}))
}
