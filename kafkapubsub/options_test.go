package kafkapubsub_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/kafkapubsub"
)

// A bad option is an error from New wrapping ErrInvalidConfig, naming the
// field.
func TestNewRefusesBadOptions(t *testing.T) {
	t.Setenv("KAFKA_BROKERS", "")
	brokers := []string{"127.0.0.1:1"}
	for _, c := range []struct {
		name  string
		opts  kafkapubsub.Options
		field string
	}{
		{"no brokers", kafkapubsub.Options{}, "Brokers"},
		{"negative lease", kafkapubsub.Options{Brokers: brokers, Lease: -time.Second}, "Lease"},
		{"negative request timeout", kafkapubsub.Options{Brokers: brokers, RequestTimeout: -1}, "RequestTimeout"},
		{"negative partitions", kafkapubsub.Options{Brokers: brokers, Partitions: -1}, "Partitions"},
		{"delivery limit of one", kafkapubsub.Options{Brokers: brokers, DeliveryLimit: 1}, "DeliveryLimit"},
		{"negative session timeout", kafkapubsub.Options{Brokers: brokers, SessionTimeout: -time.Second}, "SessionTimeout"},
		{"prefix with a dot", kafkapubsub.Options{Brokers: brokers, Prefix: "a.b"}, "Prefix"},
		// A prefix starts every Kafka name of the PubSub as it is: what
		// Kafka refuses in a topic's or a group's name is refused.
		{"prefix too long", kafkapubsub.Options{Brokers: brokers, Prefix: strings.Repeat("p", 33)}, "Prefix"},
		{"prefix with a space", kafkapubsub.Options{Brokers: brokers, Prefix: "a b"}, "Prefix"},
		{"prefix with a slash", kafkapubsub.Options{Brokers: brokers, Prefix: "a/b"}, "Prefix"},
		{"prefix not ASCII", kafkapubsub.Options{Brokers: brokers, Prefix: "ü"}, "Prefix"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps, err := kafkapubsub.New(c.opts)
			if err == nil {
				_ = ps.Close()
				t.Fatal("New accepted it")
			}
			if !errors.Is(err, kafkapubsub.ErrInvalidConfig) || !strings.Contains(err.Error(), "Options."+c.field) {
				t.Fatalf("New: %v, want an error wrapping ErrInvalidConfig naming Options.%s", err, c.field)
			}
		})
	}
}
