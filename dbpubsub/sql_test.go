package dbpubsub

import (
	"context"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/pubsub"
)

func TestChannelName(t *testing.T) {
	long := strings.Repeat("x", pubsub.MaxTopicNameLen)
	names := map[string]bool{}
	for _, c := range []struct{ qualified, topic string }{
		{"public.conveyor_events", "orders"},
		{"other.conveyor_events", "orders"}, // another schema: another channel
		{"public.jobs", "orders"},
		{"public.conveyor_events", "refunds"},
		{"public.conveyor_events", long},
	} {
		ch := channelName(c.qualified, c.topic)
		if len(ch) > 63 {
			t.Errorf("channel %q of %+v is %d bytes, PostgreSQL keeps 63", ch, c, len(ch))
		}
		if names[ch] {
			t.Errorf("channel %q given twice", ch)
		}
		names[ch] = true
	}
}

// The rescue statement computes channels in SQL; they must be the ones
// LISTENed to.
func TestChannelNameMatchesSQL(t *testing.T) {
	_, db := pgtest.NewSchema(t)
	for _, topic := range []string{"orders", `o'rders"; --`, "名前"} {
		var got string
		err := db.DB.QueryRowContext(context.Background(), "SELECT $1::text || md5($2::text || ':' || $3::text)",
			channelPrefix, "s.t", topic).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		if want := channelName("s.t", topic); got != want {
			t.Errorf("topic %q: SQL says %q, Go says %q", topic, got, want)
		}
	}
}
