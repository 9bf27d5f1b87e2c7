package backend

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// Handle is the open/closed state of one topic handle. Its zero value is
// not ready: use NewHandle.
type Handle struct {
	closed   chan struct{}
	isClosed atomic.Bool
	once     sync.Once
}

// NewHandle returns an open Handle.
func NewHandle() Handle { return Handle{closed: make(chan struct{})} }

// Close closes the handle once; a second Close returns closedErr.
func (h *Handle) Close(closedErr error) error {
	err := closedErr
	h.once.Do(func() {
		h.isClosed.Store(true)
		close(h.closed)
		err = nil
	})
	return err
}

// Closed is closed once the handle is.
func (h *Handle) Closed() <-chan struct{} { return h.closed }

// IsClosed reports whether the handle is closed.
func (h *Handle) IsClosed() bool { return h.isClosed.Load() }

// ClosedError is the error of a call on subscription sub of topic after
// its handle or its PubSub was closed.
func ClosedError(pkg, topic, sub string) error {
	return fmt.Errorf("%s: %s: %w", pkg, Label(topic, sub), pubsub.ErrClosed)
}

// MessageError is the error of the settle call op on one delivery of
// subscription sub of topic.
func MessageError(pkg, op, id string, attempt int, topic, sub string, err error) error {
	return fmt.Errorf("%s: %s message %s (attempt %d) on %s: %w", pkg, op, id, attempt, Label(topic, sub), err)
}

// Label names subscription sub of topic in errors: the topic, and the
// subscription unless it is the default one.
func Label(topic, sub string) string {
	if sub == pubsub.DefaultSubscription {
		return fmt.Sprintf("topic %q", topic)
	}
	return fmt.Sprintf("topic %q subscription %q", topic, sub)
}

// InvalidTopic is the handle for a name that pubsub.ValidateTopicName
// rejects: every method returns that error, wrapping pubsub.ErrInvalidTopic.
type InvalidTopic struct{ err error }

var _ pubsub.Topic = InvalidTopic{}

// CheckTopicName returns nil when name can name a topic (the backend then
// makes its own handle), else the InvalidTopic handle for it, whose errors
// start with pkg.
func CheckTopicName(pkg, name string) pubsub.Topic {
	if err := pubsub.ValidateTopicName(name); err != nil {
		return InvalidTopic{err: fmt.Errorf("%s: %w", pkg, err)}
	}
	return nil
}

// Enqueue returns the name's error.
func (t InvalidTopic) Enqueue(context.Context, []byte) error { return t.err }

// Dequeue returns the name's error.
func (t InvalidTopic) Dequeue(context.Context) (pubsub.Message, error) { return nil, t.err }

// Close returns the name's error.
func (t InvalidTopic) Close() error { return t.err }

// Topic is a topic handle with every optional ability of package pubsub;
// a backend that has them all checks it at compile time:
//
//	var _ backend.Topic = (*topic)(nil)
type Topic interface {
	pubsub.Topic
	pubsub.Delayer
	pubsub.BatchEnqueuer
	pubsub.UniqueEnqueuer
	admin.DeadLetters
	admin.Stater
	wrap.RetryReporter
}

// Message is a delivery with every optional ability of package pubsub.
type Message interface {
	pubsub.Message
	pubsub.Attempter
	pubsub.LeaseExtender
	pubsub.Failer
	pubsub.Rejecter
}
