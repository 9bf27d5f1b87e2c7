package relay_test

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/relay"
)

// TestKcatReadsRelayed relays a row of a dbpubsub outbox to a kafkapubsub
// topic and reads the record with kcat (librdkafka), as a consumer that
// is not conveyor would: its value is the row's data, byte for byte, and
// its header conveyor-message-id is the row's message ID, the identity
// such a consumer dedups on; the app's own header travels too.
func TestKcatReadsRelayed(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat is not installed (%v): install Debian's kcat (make packages runs scripts/install-packages.sh)", err)
	}
	t.Parallel()
	_, db := dbpubsubtest.NewStore(t)
	brokers := kafkapubsubtest.Brokers(t)
	src := dbpubsubtest.New(t, db, dbpubsub.Options{Logger: quiet}).Topic("outbox")
	dst, err := kafkapubsub.New(kafkapubsub.Options{Brokers: brokers, Prefix: kafkapubsubtest.Prefix(t, brokers), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dst.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()

	data := []byte("{\"order\":1}\n\x00\xff")
	if err := src.Enqueue(pubsub.WithHeader(ctx, pubsub.Header{"tenant": "acme"}), data); err != nil {
		t.Fatal(err)
	}
	// The row's message ID, as the relay will see it: peek at it through
	// a source that reports each message it hands out.
	ids := make(chan string, 1)
	published := make(chan struct{}, 1)
	to := &signalling{Topic: dst.Topic("orders"), published: published}
	r, err := relay.New(&reporting{Topic: src, ids: ids}, to, relay.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := r.Run(rctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	defer func() { stop(); wg.Wait() }()
	var id string
	select {
	case id = <-ids:
	case <-ctx.Done():
		t.Fatal("the relay took no message")
	}
	select {
	case <-published: // the topic exists, with the record
	case <-ctx.Done():
		t.Fatal("the relay published nothing")
	}
	cmd := exec.CommandContext(ctx, kcat, "-b", strings.Join(brokers, ","), "-C", "-q", "-o", "beginning", "-c", "1",
		"-t", dst.LogTopic("orders"), "-f", "%h\t%S\t%s\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat: %v\n%s", err, stderr.Bytes())
	}
	headers, rest, _ := bytes.Cut(stdout.Bytes(), []byte("\t"))
	_, value, _ := bytes.Cut(rest, []byte("\t"))
	if want := append(append([]byte(nil), data...), '\n'); !bytes.Equal(value, want) {
		t.Errorf("kcat read the value %q, want %q", value, want)
	}
	hs := strings.Split(string(headers), ",")
	for _, want := range []string{pubsub.HeaderMessageID + "=" + id, "Conveyor-H-tenant=acme"} {
		if !slices.Contains(hs, want) {
			t.Errorf("kcat read the headers %q, want %q among them", hs, want)
		}
	}
}

// reporting is a source that sends the ID of each message it hands out
// on ids, while there is room.
type reporting struct {
	pubsub.Topic
	ids chan string
}

func (r *reporting) Unwrap() pubsub.Topic { return r.Topic }

func (r *reporting) Dequeue(ctx context.Context) (pubsub.Message, error) {
	m, err := r.Topic.Dequeue(ctx)
	if err == nil {
		select {
		case r.ids <- m.ID():
		default:
		}
	}
	return m, err
}

// signalling is a destination that sends on published each time the
// topic it wraps has a message, while there is room.
type signalling struct {
	pubsub.Topic
	published chan struct{}
}

func (s *signalling) Unwrap() pubsub.Topic { return s.Topic }

func (s *signalling) Enqueue(ctx context.Context, data []byte) error {
	if err := s.Topic.Enqueue(ctx, data); err != nil {
		return err
	}
	select {
	case s.published <- struct{}{}:
	default:
	}
	return nil
}
