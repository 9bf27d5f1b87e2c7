package reliability

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/conveyorgo/conveyor/internal/faultproxy"
	"github.com/conveyorgo/conveyor/natspubsub"
)

// natsHostPort returns the host:port of a nats:// URL.
func natsHostPort(url string) string { return strings.TrimPrefix(url, "nats://") }

// Fault (issue 30, item 11): the connection a PubSub has open goes silent
// (a proxy or NAT stops forwarding it and drops what it gets, the socket
// stays open) while new connections work. Enqueue and Dequeue time out at
// first, then work again once the client reconnects: on a connection made
// by Connect because its pings are a fraction of the request timeout; on a
// caller's connection with nats.go's default pings (minutes apart)
// because the PubSub probes it after request timeouts and forces a
// reconnect. The test counts the calls that succeed after the silence,
// each bounded by its ctx, within a bound far below nats.go's default
// stale-connection detection (4 to 6 minutes).
func TestNatsSilentConnection(t *testing.T) {
	srv := startNatsServer(t, 0)
	const requestTimeout = 500 * time.Millisecond
	cases := []struct {
		name string
		open func(t *testing.T, url string, opts natspubsub.Options) *natspubsub.PubSub
	}{
		{"Connect", func(t *testing.T, url string, opts natspubsub.Options) *natspubsub.PubSub {
			return natsConnect(t, url, opts)
		}},
		{"New", func(t *testing.T, url string, opts natspubsub.Options) *natspubsub.PubSub {
			// A caller's connection with nats.go's defaults but for
			// reconnecting for ever.
			nc, err := nats.Connect(url, nats.MaxReconnects(-1))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			ps, err := natspubsub.New(nc, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ps.Close() })
			return ps
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
			defer cancel()
			px := faultproxy.Start(t, natsHostPort(srv.URL))
			ps := tc.open(t, "nats://"+px.Addr(), natspubsub.Options{
				Prefix: "silent" + tc.name, RequestTimeout: requestTimeout, Logger: discard,
			})
			tp := ps.Topic("silent")
			// Before the silence: the topic's stream and consumer exist,
			// a message goes through.
			if err := tp.Enqueue(ctx, []byte("before")); err != nil {
				t.Fatal(err)
			}
			m, err := tp.Dequeue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}

			t.Logf("silenced %d connections", px.Silence())
			const want = 5
			var enqueued, dequeued, failed int
			// The bound of the recovery: well below nats.go's default
			// stale-connection detection, far above the request timeout.
			rctx, rcancel := context.WithTimeout(ctx, patience)
			defer rcancel()
			for enqueued < want || dequeued < want {
				if rctx.Err() != nil {
					t.Fatalf("after the silence: %d of %d enqueues and %d of %d dequeues succeeded (%d calls failed) within %v, request timeout %v",
						enqueued, want, dequeued, want, failed, patience, requestTimeout)
				}
				if enqueued < want {
					cctx, ccancel := context.WithTimeout(rctx, 2*requestTimeout)
					err := tp.Enqueue(cctx, fmt.Appendf(nil, "after-%d", enqueued))
					ccancel()
					if err != nil {
						failed++
						continue
					}
					enqueued++
				}
				if enqueued == 0 {
					continue
				}
				cctx, ccancel := context.WithTimeout(rctx, 4*requestTimeout)
				m, err := tp.Dequeue(cctx)
				if err == nil {
					if bytes.HasPrefix(m.Data(), []byte("after-")) {
						dequeued++
					}
					// An ack lost on the way brings the message back: it
					// counts once more, and the loop ends all the same.
					_ = m.Ack(cctx)
				} else {
					failed++
				}
				ccancel()
			}
			t.Logf("after the silence: %d enqueues and %d dequeues succeeded, %d calls failed", enqueued, dequeued, failed)
		})
	}
}
