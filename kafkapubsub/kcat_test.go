package kafkapubsub_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
)

// kcatRecord is a record as kcat printed it.
type kcatRecord struct {
	headers []string // "key=value", in the record's order
	value   []byte
}

// kcatFormat makes kcat print each record as its headers, a tab, its
// value's length, a tab, its value and a line end, so that a value of any
// bytes is read back exactly.
const kcatFormat = "%h\t%S\t%s\n"

// TestKcat checks kafkapubsub against a Kafka client nobody here wrote:
// kcat (librdkafka). kcat reads what Enqueue published, data byte for
// byte and headers, the identity (pubsub.HeaderMessageID) as a plain
// record header; and a subscription consumes what kcat produced, with
// its headers: the identity header gives the message its identity, a
// "Conveyor-H-" header a key of its header.
func TestKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat is not installed (%v): install Debian's kcat (make packages runs scripts/install-packages.sh)", err)
	}
	t.Parallel()
	brokers := kafkapubsubtest.Brokers(t)
	ps, err := kafkapubsub.New(kafkapubsub.Options{Brokers: brokers, Prefix: kafkapubsubtest.Prefix(t, brokers)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	orders := ps.Topic("orders")
	log := ps.LogTopic("orders")
	run := func(stdin []byte, args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(ctx, kcat, append([]string{"-b", strings.Join(brokers, ",")}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return stdout.Bytes()
	}

	// Published by conveyor, read by kcat.
	data := []byte("\x00\xff bytes\nof any\tkind\r\n\x00")
	h := pubsub.Header{pubsub.HeaderMessageID: "order-42", "tenant": "acme", "note": " padded "}
	if err := orders.Enqueue(pubsub.WithHeader(ctx, h), data); err != nil {
		t.Fatal(err)
	}
	m, err := orders.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	recs := parseKcat(t, run(nil, "-C", "-q", "-e", "-o", "beginning", "-t", log, "-f", kcatFormat))
	if len(recs) != 1 {
		t.Fatalf("kcat read %d records of %s, want 1: %+v", len(recs), log, recs)
	}
	if !bytes.Equal(recs[0].value, data) {
		t.Errorf("kcat read the value %q, want %q", recs[0].value, data)
	}
	for _, want := range []string{
		pubsub.HeaderMessageID + "=order-42", // the identity, plain
		"Conveyor-H-tenant=acme",
		"Conveyor-HP-note=| padded |",
		"Conveyor-Id=" + m.ID(),
	} {
		if !slices.Contains(recs[0].headers, want) {
			t.Errorf("kcat read the headers %q, want %q among them", recs[0].headers, want)
		}
	}

	// Produced by kcat (each file one record, its bytes as they are),
	// consumed by the default subscription, declared by the Dequeue above.
	dir := t.TempDir()
	produced := map[string][]byte{}
	for i, d := range [][]byte{[]byte("from kcat\x00\xfe\n"), []byte(`{"id":7}`)} {
		f := filepath.Join(dir, "r"+strconv.Itoa(i))
		if err := os.WriteFile(f, d, 0o600); err != nil {
			t.Fatal(err)
		}
		produced[string(d)] = d
		run(nil, "-P", "-t", log, "-H", pubsub.HeaderMessageID+"=kcat-"+strconv.Itoa(i), "-H", "Conveyor-H-tenant=globex", f)
	}
	for range len(produced) {
		m, err := orders.Dequeue(ctx)
		if err != nil {
			t.Fatalf("Dequeue of what kcat produced: %v", err)
		}
		d, ok := produced[string(m.Data())]
		if !ok {
			t.Fatalf("Dequeue gave %q, not a record kcat produced", m.Data())
		}
		delete(produced, string(d))
		i := strconv.Itoa(slices.Index([]string{"from kcat\x00\xfe\n", `{"id":7}`}, string(d)))
		if id := pubsub.Identity(m); id != "kcat-"+i {
			t.Errorf("the identity of kcat's record %q is %q, want %q (its %s header)", d, id, "kcat-"+i, pubsub.HeaderMessageID)
		}
		if got := pubsub.MessageHeader(m)["tenant"]; got != "globex" {
			t.Errorf("the header tenant of kcat's record %q is %q, want globex", d, got)
		}
		if m.ID() == "" {
			t.Errorf("kcat's record %q has no ID", d)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// parseKcat reads the records kcat printed with kcatFormat.
func parseKcat(t *testing.T, out []byte) []kcatRecord {
	t.Helper()
	var recs []kcatRecord
	for len(out) > 0 {
		hs, rest, ok := bytes.Cut(out, []byte("\t"))
		size, rest2, ok2 := bytes.Cut(rest, []byte("\t"))
		n, err := strconv.Atoi(string(size))
		if !ok || !ok2 || err != nil || len(rest2) < n+1 || rest2[n] != '\n' {
			t.Fatalf("kcat's output is not in the format %q: %q", kcatFormat, out)
		}
		var headers []string
		if len(hs) > 0 {
			headers = strings.Split(string(hs), ",")
		}
		recs = append(recs, kcatRecord{headers: headers, value: rest2[:n]})
		out = rest2[n+1:]
	}
	return recs
}
