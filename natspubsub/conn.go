package natspubsub

import (
	"context"
	"errors"
	"net"
	"os"
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
// nats.go), so that a full socket buffer blocks the connection's writers
// for that long at most; and a dialer (nats.SetCustomDialer) whose
// connections are reset at a write that timed out, after which the client
// reconnects at once (nats.ReconnectOnFlusherError). A write cut by its
// timeout leaves part of a message on the wire, and nats.go would write
// the next one after it: the server then answers "Unknown Protocol
// Operation" and nats.go closes the connection for good. The dialer
// waits nats.DefaultTimeout (2s) for a TCP connection; a dialer of the
// caller's given after these options replaces it, and should reset its
// connections likewise. A bad opts gives none of them (New reports it).
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
		nats.SetCustomDialer(cutDialer{net.Dialer{Timeout: nats.DefaultTimeout}}),
	}
}

// cutDialer dials TCP connections that are reset at a write that timed
// out (cutConn).
type cutDialer struct{ d net.Dialer }

// Dial implements nats.CustomDialer.
func (d cutDialer) Dial(network, address string) (net.Conn, error) {
	c, err := d.d.Dial(network, address)
	if err != nil {
		return nil, err
	}
	return cutConn{c}, nil
}

// cutConn is a connection that a write past its deadline resets (SO_LINGER
// 0: what is still unsent is dropped), so that nothing is written after a
// message cut short and the client reconnects.
type cutConn struct{ net.Conn }

// Write implements net.Conn.
func (c cutConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		if tc, ok := c.Conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Conn.Close()
	}
	return n, err
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
func (ps *store) answered() {
	if ps.watch.timeouts.Load() != 0 {
		ps.watch.timeouts.Store(0)
	}
}

// requestFailed records a request that failed with err: the
// reconnectAfter-th timeout in a row starts a probe.
func (ps *store) requestFailed(err error) {
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
func (ps *store) probe() {
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
