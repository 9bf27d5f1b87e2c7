package natspubsub_test

import (
	"testing"

	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
)

// connect returns a PubSub on the test server with a prefix of its own.
func connect(t testing.TB, o natspubsub.Options) *natspubsub.PubSub {
	t.Helper()
	url := natstest.URL(t)
	o.Prefix = natstest.Prefix(t, url)
	return connectTo(t, url, o)
}

// connectTo returns a PubSub on the server at url with o, closed when t
// ends.
func connectTo(t testing.TB, url string, o natspubsub.Options) *natspubsub.PubSub {
	t.Helper()
	ps, err := natspubsub.Connect(url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps
}
