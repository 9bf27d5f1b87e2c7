package natspubsub_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/conveyorgo/conveyor/natspubsub"
)

// ConnectOptions derives the connection's pings and write timeout from the
// request timeout (docs/natspubsub.md, "Connections and deadlines").
func TestConnectOptions(t *testing.T) {
	cases := []struct {
		name    string
		opts    natspubsub.Options
		timeout time.Duration
	}{
		{"default", natspubsub.Options{}, natspubsub.DefaultRequestTimeout},
		{"short", natspubsub.Options{RequestTimeout: 500 * time.Millisecond}, 500 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := nats.GetDefaultOptions()
			for _, opt := range natspubsub.ConnectOptions(tc.opts) {
				if err := opt(&o); err != nil {
					t.Fatal(err)
				}
			}
			if o.PingInterval != tc.timeout/2 || o.MaxPingsOut != 2 {
				t.Errorf("pings every %v, %d outstanding; want every %v, 2", o.PingInterval, o.MaxPingsOut, tc.timeout/2)
			}
			if o.CustomDialer == nil {
				t.Error("no dialer that resets a connection at a write that timed out")
			}
			if o.FlusherTimeout != tc.timeout || !o.ReconnectOnFlusherError {
				t.Errorf("write timeout %v, reconnect on its error %v; want %v, true", o.FlusherTimeout, o.ReconnectOnFlusherError, tc.timeout)
			}
		})
	}
	if got := natspubsub.ConnectOptions(natspubsub.Options{RequestTimeout: -time.Second}); got != nil {
		t.Errorf("ConnectOptions of a bad Options = %d options, want none", len(got))
	}
}
