// Package natstest gives tests a real NATS server with JetStream, and a
// stream prefix of their own.
//
// The server is $NATS_URL when set, else the one answering on
// 127.0.0.1:4222. When neither answers the test fails, saying to run
// `make test` or scripts/with-nats.sh (which start a throwaway server) or
// to set NATS_URL: NATS tests are never skipped. Only loopback servers are
// used. Tests that stop and restart a server start one of their own with
// Start.
//
//	url := natstest.URL(t)
//	prefix := natstest.Prefix(t, url) // its streams are deleted in t.Cleanup
package natstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// LocalURL is the server tried when NATS_URL is not set.
const LocalURL = "nats://127.0.0.1:4222"

// URL returns the server to test against, or fails t.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("NATS_URL")
	if u == "" {
		u = LocalURL
	}
	if err := checkLoopback(u); err != nil {
		t.Fatalf("natstest: %v", err)
	}
	nc, err := nats.Connect(u, nats.Timeout(5*time.Second), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("natstest: no NATS server answers at %s (%v): run `make test` or scripts/with-nats.sh, "+
			"which start a throwaway one, or set NATS_URL", u, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = js.AccountInfo(ctx)
	}
	if err != nil {
		t.Fatalf("natstest: the NATS server at %s has no JetStream (%v): start it with -js", u, err)
	}
	return u
}

// checkLoopback refuses a server that is not on this machine.
func checkLoopback(raw string) error {
	for _, one := range strings.Split(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil {
			return fmt.Errorf("NATS_URL %q: %v", raw, err)
		}
		host := u.Hostname()
		if host == "localhost" {
			continue
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("NATS_URL %q: tests only use a server on a loopback address", raw)
		}
	}
	return nil
}

// Prefix returns a name prefix of its own for t's streams and consumers
// (letters and digits), and deletes every stream whose name starts with it
// when t ends.
func Prefix(t testing.TB, serverURL string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "t" + hex.EncodeToString(b)
	t.Cleanup(func() {
		if err := DeleteStreams(serverURL, prefix); err != nil {
			t.Errorf("natstest: deleting the streams of prefix %s: %v", prefix, err)
		}
	})
	return prefix
}

// DeleteStreams deletes every stream on the server whose name starts with
// prefix.
func DeleteStreams(serverURL, prefix string) error {
	nc, err := nats.Connect(serverURL, nats.Timeout(5*time.Second), nats.MaxReconnects(0))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := js.StreamNames(ctx)
	var doomed []string
	for name := range names.Name() {
		// A key-value bucket's stream is KV_<bucket>.
		if strings.HasPrefix(name, prefix) || strings.HasPrefix(name, "KV_"+prefix) {
			doomed = append(doomed, name)
		}
	}
	if err := names.Err(); err != nil {
		return err
	}
	for _, name := range doomed {
		if err := js.DeleteStream(ctx, name); err != nil && err != jetstream.ErrStreamNotFound {
			return fmt.Errorf("stream %s: %w", name, err)
		}
	}
	return nil
}
