package kafkapubsub_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/kafkapubsub"
)

func TestParseBrokers(t *testing.T) {
	t.Parallel()
	got, err := kafkapubsub.ParseBrokers(" 127.0.0.1:9092, kafka-1:9093 ,[::1]:9094")
	if want := []string{"127.0.0.1:9092", "kafka-1:9093", "[::1]:9094"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseBrokers = %q, %v, want %q", got, err, want)
	}
	for _, bad := range []string{"", " ", "kafka", "127.0.0.1:9092,,kafka:9093", ":9092", "kafka:"} {
		_, err := kafkapubsub.ParseBrokers(bad)
		if !errors.Is(err, kafkapubsub.ErrInvalidConfig) || !strings.Contains(err.Error(), "want host:port of each broker") {
			t.Errorf("ParseBrokers(%q): %v, want ErrInvalidConfig saying what a broker is", bad, err)
		}
	}
}
