package dbpubsub_test

import (
	"testing"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
)

func TestConformance(t *testing.T) { pubsubtest.Run(t, dbpubsubtest.Harness(dbpubsub.Options{})) }

// TestConformanceConfirmAck runs the suite with Acks that return once
// committed.
func TestConformanceConfirmAck(t *testing.T) {
	pubsubtest.Run(t, dbpubsubtest.Harness(dbpubsub.Options{ConfirmAck: true}))
}

// TestConformanceWrapped runs the suite through a wrapping Topic: every
// ability stays reachable.
func TestConformanceWrapped(t *testing.T) {
	pubsubtest.Run(t, pubsubtest.Wrap(dbpubsubtest.Harness(dbpubsub.Options{})))
}
