package kafkapubsub

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// topicState is what the store knows of one topic: its names on the
// cluster, whether its log and registry were made, and its
// subscriptions.
type topicState struct {
	s    *store
	name string
	n    names

	regMu sync.Mutex // serializes this process's writes of the registry

	// maxBytes is the log's max.message.bytes, stored before ready is
	// set, read by every publish without the lock.
	maxBytes atomic.Int64
	// parts is the log's partition count, stored before ready is set.
	parts atomic.Int32

	mu          sync.Mutex
	ready       bool // its log and registry were made (or found, with Options.Bind)
	publishable bool // it was seen with a subscription (ensurePublishable)
	moving      bool // this store runs its mover (delay.go)
	starting    bool // startMoverAsync was called
	subs        map[string]*subState
}

var _ driver.Topic = (*topicState)(nil)

// Subscription returns the state of subscription name of the topic.
func (st *topicState) Subscription(name string) driver.Subscription { return st.sub(name) }

// ensure makes the topic's log and its registry (compacted), once per
// store, with Options.Bind looks them and the delay log up instead
// (provision.go), until found; and reads the log's max.message.bytes: the
// log may have been made by the operator, or by a PubSub with a smaller
// Options.MaxDataSize.
func (st *topicState) ensure(ctx context.Context) error {
	st.mu.Lock()
	ready := st.ready
	st.mu.Unlock()
	if ready {
		return nil
	}
	s := st.s
	if s.opts.Bind {
		if err := s.lookUp(ctx, fmt.Sprintf("topic %q", st.name), st.name, pubsub.DefaultSubscription, st.kafkaTopics()); err != nil {
			return err
		}
	} else {
		for _, k := range []kafkaTopic{st.logTopic(), st.registryTopic()} {
			if _, err := s.createTopic(ctx, k); err != nil {
				return err
			}
		}
	}
	return st.markReady(ctx)
}

// markReady reads the log's max.message.bytes, which every publish checks
// against (fits), and its partition count, and marks the topic ready: its
// Kafka topics exist.
func (st *topicState) markReady(ctx context.Context) error {
	maxBytes, err := st.s.maxMessageBytes(ctx, st.n.log)
	if err != nil {
		return err
	}
	parts, err := st.s.partitionCount(ctx, st.n.log)
	if err != nil {
		return err
	}
	st.mu.Lock()
	st.parts.Store(parts)
	st.maxBytes.Store(int64(maxBytes))
	st.ready = true
	st.mu.Unlock()
	return nil
}

// recordOverhead is what a record of the log takes besides its data and
// its header's keys and values: conveyor's own headers, and Kafka's
// framing of the record and of its batch (with room to spare).
const recordOverhead = 512

// fits returns nil when a record of data and h fits the log's
// max.message.bytes, else an error wrapping pubsub.ErrTooLarge naming it.
// It counts the bytes before compression: a record the cluster would take
// once compressed may be refused. A delayed message is checked at its
// enqueue: when due, the mover could only fail to publish it.
func (st *topicState) fits(data []byte, h pubsub.Header) error {
	limit := int(st.maxBytes.Load())
	n := len(data) + logstore.UserSize(h) + recordOverhead
	if limit > 0 && n > limit {
		return fmt.Errorf("%w: %d bytes of data and header (and %d of the record's framing) are over the %d of Kafka topic %s's max.message.bytes",
			pubsub.ErrTooLarge, n-recordOverhead, recordOverhead, limit, st.n.log)
	}
	return nil
}

// Publish appends m to the topic's log and returns once the cluster
// acknowledged it (acks=all, idempotent). Its header travels as record
// headers (putHeader), beside conveyor's message ID.
func (st *topicState) Publish(ctx context.Context, _ <-chan struct{}, m driver.Outgoing) (bool, error) {
	if err := st.underMax(m.Data, m.Header); err != nil {
		return false, err
	}
	if err := st.ensure(ctx); err != nil {
		return false, err
	}
	if err := st.fits(m.Data, m.Header); err != nil {
		return false, err
	}
	if err := st.ensurePublishable(ctx); err != nil {
		return false, err
	}
	if !m.At.IsZero() && time.Now().Before(m.At) {
		return true, st.publishAt(ctx, m.Data, m.Header, m.At)
	}
	data := m.Data
	if !m.Owned {
		data = append([]byte(nil), data...)
	}
	return true, st.s.produce(ctx, st.record(data, m.Header))
}

// underMax returns nil unless data and its header h are over
// Options.MaxDataSize (an error wrapping pubsub.ErrTooLarge); the engine
// checks data alone.
func (st *topicState) underMax(data []byte, h pubsub.Header) error {
	if n, limit := len(data)+logstore.UserSize(h), st.s.opts.MaxDataSize; h != nil && n > limit {
		return fmt.Errorf("%w: %d bytes of data and %d of header, the limit is %d for both (Options.MaxDataSize)",
			pubsub.ErrTooLarge, len(data), n-len(data), limit)
	}
	return nil
}

// record is a record of the log holding data, a new message ID and h.
func (st *topicState) record(data []byte, h pubsub.Header) *kgo.Record {
	r := &kgo.Record{Topic: st.n.log, Value: data, Headers: make([]kgo.RecordHeader, 0, 1+len(h))}
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: logstore.HeaderID, Value: []byte(newID())})
	putHeader(r, h)
	return r
}

// produce appends r and waits for the cluster's acknowledgement, until
// ctx ends or the request times out.
func (s *store) produce(ctx context.Context, r *kgo.Record) error {
	rctx, cancel := s.request(ctx)
	defer cancel()
	if err := produceSync(rctx, s.cl, r); err != nil {
		return s.fail(ctx, "producing to "+r.Topic, err)
	}
	return nil
}

// produceSync produces rs with cl and returns once the cluster
// acknowledged them, or ctx ended. Not kgo's ProduceSync: franz-go fails a
// buffered record when its ctx ends only while that is safe for the
// idempotent producer's sequence numbers, and not while no broker of its
// partition can be reached, so ProduceSync waits for the cluster however
// long it is down. A record given up on stays buffered, and may yet be
// appended when the cluster is back: the caller's error does not say it
// was not (at least once).
func produceSync(ctx context.Context, cl *kgo.Client, rs ...*kgo.Record) error {
	done := make(chan error, len(rs))
	for _, r := range rs {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) { done <- err })
	}
	for range rs {
		select {
		case err := <-done:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// putHeader adds h to r's headers: the message's identity
// (pubsub.HeaderMessageID) under its own name, a plain record header any
// Kafka client reads; every other key under conveyor's prefix
// (logstore.UserKey), so that no key of the caller's is read as
// conveyor's.
func putHeader(r *kgo.Record, h pubsub.Header) {
	for k, v := range h {
		wk, wv := k, v
		if k != pubsub.HeaderMessageID {
			wk, wv = logstore.UserKey(k, v)
		}
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: wk, Value: []byte(wv)})
	}
}

// fromWire returns the key and value of the message's pubsub.Header that
// record header rh carries (see putHeader), ok false when it carries
// none. A record of another producer gives its identity the same way.
func fromWire(rh kgo.RecordHeader) (k, v string, ok bool) {
	if rh.Key == pubsub.HeaderMessageID {
		return rh.Key, string(rh.Value), true
	}
	return logstore.FromWire(rh.Key, string(rh.Value))
}

// headerOf returns the pubsub.Header among r's headers, nil if none.
func headerOf(r *kgo.Record) pubsub.Header {
	var h pubsub.Header
	for _, rh := range r.Headers {
		k, v, ok := fromWire(rh)
		if !ok {
			continue
		}
		if h == nil {
			h = make(pubsub.Header, len(r.Headers))
		}
		h[k] = v
	}
	return h
}

// get returns the value of r's last header key, "" if none.
func get(r *kgo.Record, key string) string {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			return string(r.Headers[i].Value)
		}
	}
	return ""
}

// newID returns a new message ID: 128 random bits in lower-case base32.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return tokenEncoding.EncodeToString(b[:])
}

// validID reports whether id can be a message ID of kafkapubsub: a newID,
// or "p<partition>-<offset>" of a record conveyor did not publish.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
