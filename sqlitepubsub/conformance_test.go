package sqlitepubsub_test

import (
	"testing"

	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
	"github.com/conveyorgo/conveyor/sqlitepubsub/sqlitepubsubtest"
)

// TestConformance runs the suite on sqlitepubsub. Through a wrapping
// Topic (pubsubtest.Wrap) and through otelconveyor it runs in
// otelconveyor's TestConformance.
func TestConformance(t *testing.T) { pubsubtest.Run(t, sqlitepubsubtest.Harness()) }
