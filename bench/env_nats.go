package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSEnv is the NATS server every NATS system of the run shares; each
// instance names its streams and subjects with a prefix of its own
// (NewPrefix) and deletes them when it closes (DeleteStreams).
type NATSEnv struct {
	URL    string
	Prefix string     // of every stream of the run: bench_<random>_
	nc     *nats.Conn // for looking up and deleting streams
	js     jetstream.JetStream
}

// localNATSURL is tried when NATS_URL is not set, as scripts/with-nats.sh does.
const localNATSURL = "nats://127.0.0.1:4222"

// connectNATS connects to $NATS_URL (or the local server), refusing any
// host that is not a loopback address and a server without JetStream.
func connectNATS(ctx context.Context) (*NATSEnv, error) {
	u := os.Getenv("NATS_URL")
	if u == "" {
		u = localNATSURL
	}
	if err := natsLoopback(u); err != nil {
		return nil, err
	}
	nc, err := nats.Connect(u, nats.Name("conveyor-bench"), nats.Timeout(5*time.Second), nats.MaxReconnects(0))
	if err != nil {
		return nil, fmt.Errorf("no NATS server answers at %s (%v); run through scripts/with-nats.sh, which starts one, or set NATS_URL", u, err)
	}
	js, err := jetstream.New(nc)
	if err == nil {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = js.AccountInfo(actx)
		cancel()
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("the NATS server at %s has no JetStream (%v): start it with -js", u, err)
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return &NATSEnv{URL: u, Prefix: "bench_" + hex.EncodeToString(b[:]) + "_", nc: nc, js: js}, nil
}

// natsLoopback refuses a server list with a host not on this machine.
func natsLoopback(raw string) error {
	for _, one := range strings.Split(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil {
			return fmt.Errorf("NATS_URL %q: %v", raw, err)
		}
		if h := u.Hostname(); h != "localhost" {
			if ip := net.ParseIP(h); ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("refusing NATS_URL %q: the benchmark only talks to a server on 127.0.0.1 (run it with scripts/with-nats.sh)", raw)
			}
		}
	}
	return nil
}

func (n *NATSEnv) Close() { n.nc.Close() }

// NewPrefix returns a fresh name prefix for an instance of system, under
// the run's: bench_<run>_<system>_<random>, letters, digits and '_', valid
// in stream names, subjects and natspubsub's Options.Prefix (at most 32
// bytes).
func (n *NATSEnv) NewPrefix(system string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return n.Prefix + system + "_" + hex.EncodeToString(b[:])
}

// DeleteStreams deletes every stream whose name starts with prefix.
func (n *NATSEnv) DeleteStreams(prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	names := n.js.StreamNames(ctx)
	var doomed []string
	for name := range names.Name() {
		if strings.HasPrefix(name, prefix) {
			doomed = append(doomed, name)
		}
	}
	if err := names.Err(); err != nil {
		return fmt.Errorf("listing the streams of %s: %w", prefix, err)
	}
	var errs []error
	for _, name := range doomed {
		if err := n.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			errs = append(errs, fmt.Errorf("deleting stream %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// settings returns what a client sees of the server: its version, limits
// and JetStream account.
func (n *NATSEnv) settings(ctx context.Context) (map[string]string, error) {
	out := map[string]string{
		"server_version":            n.nc.ConnectedServerVersion(),
		"server_name":               n.nc.ConnectedServerName(),
		"url":                       n.nc.ConnectedUrlRedacted(),
		"max_payload":               fmt.Sprint(n.nc.MaxPayload()),
		"headers":                   fmt.Sprint(n.nc.HeadersSupported()),
		"stream prefix of this run": n.Prefix,
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ai, err := n.js.AccountInfo(actx)
	if err != nil {
		return nil, err
	}
	limit := func(v int64) string {
		if v < 0 {
			return "unlimited"
		}
		return fmt.Sprint(v)
	}
	out["jetstream domain"] = ai.Domain
	if ai.Domain == "" {
		out["jetstream domain"] = "(none)"
	}
	if ai.API.Level > 0 { // servers before 2.11 do not say
		out["jetstream api level"] = fmt.Sprint(ai.API.Level)
	}
	out["jetstream account max_memory"] = limit(ai.Limits.MaxMemory)
	out["jetstream account max_storage"] = limit(ai.Limits.MaxStore)
	out["jetstream account max_streams"] = limit(int64(ai.Limits.MaxStreams))
	out["jetstream streams at start (all prefixes)"] = fmt.Sprint(ai.Streams)
	return out, nil
}
