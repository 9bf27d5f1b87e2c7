package kafkapubsub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
)

// HasTopic finds a topic once a PubSub made it, under its prefix only,
// and makes none; a cluster that cannot be reached is ErrUnavailable.
func TestHasTopic(t *testing.T) {
	t.Parallel()
	brokers := kafkapubsubtest.Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func(prefix string) *kafkapubsub.PubSub {
		ps, err := kafkapubsub.New(kafkapubsub.Options{Brokers: brokers, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ps.Close() })
		return ps
	}
	ps := open(kafkapubsubtest.Prefix(t, brokers))
	other := open(kafkapubsubtest.Prefix(t, brokers))
	has := func(ps *kafkapubsub.PubSub, topic string, want bool) {
		t.Helper()
		got, err := ps.HasTopic(ctx, topic)
		if err != nil || got != want {
			t.Errorf("HasTopic(%q) = %v, %v, want %v", topic, got, err, want)
		}
	}
	has(ps, "orders", false)
	has(ps, "orders", false) // the first look made nothing
	if err := ps.Topic("orders").Enqueue(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	has(ps, "orders", true)
	has(ps, "invoices", false)
	has(other, "orders", false) // another prefix

	down, err := kafkapubsub.New(kafkapubsub.Options{Brokers: []string{"127.0.0.1:1"}, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	if _, err := down.HasTopic(ctx, "orders"); !errors.Is(err, kafkapubsub.ErrUnavailable) {
		t.Errorf("HasTopic on a cluster nobody serves: %v, want ErrUnavailable", err)
	}
}
