package natspubsub

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnectOptions returns the nats.go options Connect gives the connection
// it makes, derived from opts.RequestTimeout, for a caller who brings a
// connection of their own to New:
//
//	nc, err := nats.Connect(url, natspubsub.ConnectOptions(opts)...)
//	ps, err := natspubsub.New(nc, opts)
//
// They are: a ping every half request timeout and at most 2 unanswered
// (nats.PingInterval, nats.MaxPingsOutstanding), so that a connection that
// went silent is declared stale and replaced within about one and a half
// request timeouts instead of nats.go's 4 to 6 minutes; a write to the
// socket bounded by the request timeout (nats.FlusherTimeout, 1 minute in
// nats.go), after which the client reconnects
// (nats.ReconnectOnFlusherError), so that a full socket buffer blocks the
// connection's writers for that long at most. A bad opts gives none of
// them (New reports it).
func ConnectOptions(opts Options) []nats.Option {
	o, err := opts.resolve(0)
	if err != nil {
		return nil
	}
	return []nats.Option{
		nats.PingInterval(pingInterval(o.RequestTimeout)),
		nats.MaxPingsOutstanding(maxPingsOut),
		nats.FlusherTimeout(o.RequestTimeout),
		nats.ReconnectOnFlusherError(),
	}
}

// maxPingsOut is how many pings may go unanswered before the connection is
// stale (nats.MaxPingsOutstanding).
const maxPingsOut = 2

// pingInterval is how often a connection made by Connect pings the server:
// half the request timeout, so that a silent connection is stale after at
// most maxPingsOut+1 intervals.
func pingInterval(requestTimeout time.Duration) time.Duration {
	return max(requestTimeout/2, 10*time.Millisecond)
}

// reconnectAfter is how many request timeouts in a row make the PubSub
// ping the server itself (probe).
const reconnectAfter = 2

// connWatch notices a connection that went silent whatever its ping
// settings (a caller's connection keeps nats.go's, minutes apart): after
// reconnectAfter request timeouts in a row, a ping the server does not
// answer within the request timeout makes the client reconnect.
type connWatch struct {
	timeouts atomic.Int32 // request timeouts since the last success or probe
	probing  atomic.Bool  // a probe runs
}

// isTimeout reports whether err is a request that got no answer in time.
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// answered records a request the server answered.
func (ps *PubSub) answered() {
	if ps.watch.timeouts.Load() != 0 {
		ps.watch.timeouts.Store(0)
	}
}

// requestFailed records a request that failed with err: the
// reconnectAfter-th timeout in a row starts a probe.
func (ps *PubSub) requestFailed(err error) {
	if !isTimeout(err) || ps.watch.timeouts.Add(1) < reconnectAfter {
		return
	}
	if !ps.watch.probing.CompareAndSwap(false, true) {
		return
	}
	if !ps.goBackground(ps.probe) {
		ps.watch.probing.Store(false)
	}
}

// probe pings the server; when no answer comes within the request
// timeout on a connection that still counts as connected, it forces a
// reconnect: the connection went silent, and a new one may work.
func (ps *PubSub) probe() {
	defer ps.watch.probing.Store(false)
	defer ps.watch.timeouts.Store(0)
	if ps.nc.Status() != nats.CONNECTED {
		return // reconnecting already, or closed
	}
	ctx, cancel := ps.request(context.Background())
	defer cancel()
	err := ps.nc.FlushWithContext(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || ps.ctx.Err() != nil || ps.nc.Status() != nats.CONNECTED {
		return
	}
	ps.opts.Logger.Warn("natspubsub: the connection stopped answering (requests and a ping timed out); reconnecting",
		"server", ps.nc.ConnectedUrlRedacted(), "request_timeout", ps.opts.RequestTimeout)
	if err := ps.nc.ForceReconnect(); err != nil {
		ps.opts.Logger.Warn("natspubsub: reconnecting failed", "error", err)
	}
}
