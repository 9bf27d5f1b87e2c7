package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestSmokeKafka runs the Kafka systems on their scenarios with tiny
// numbers, once, on $KAFKA_BROKERS or else a kfake cluster the run starts
// in this process; every system must handle every message within the
// run cap, and the report must have the Kafka targets and cluster.
func TestSmokeKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("the Kafka smoke run takes ~30 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// for each mode: enqueue, drain and fan-out against the baseline and
	// watermill-kafka, and the latency
	rep := smokeKind(t, ctx, KindKafka, "kafka", 10*time.Second,
		[]string{"conveyor kafkapubsub", "conveyor kafkapubsub (consumer groups)", "watermill-kafka", "baseline: kafka franz-go"}, 14)
	if rep.Kafka["brokers"] == "" {
		t.Errorf("the report does not name the Kafka cluster: %v", rep.Kafka)
	}
	var table bytes.Buffer
	rep.writeTable(&table)
	t.Logf("\n%s", table.String())
}
