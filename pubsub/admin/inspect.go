package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Inspection and repair: the optional abilities an operations tool (a CLI, a
// dashboard) is built on. TopicLister is found on a pubsub.PubSub; Peeker,
// Canceler and DeadDeleter on a pubsub.Topic handle, and they act on the
// handle's subscription (the default one for pubsub.PubSub.Topic). Each is
// reached through its helper (TopicLister through ListTopics, Peeker through
// Peek and GetMessage, Canceler through Cancel, DeadDeleter through
// DeleteDead), which returns pubsub.ErrUnsupported where a backend lacks it.

// TopicLister is a pubsub.PubSub that can list the topics it keeps.
type TopicLister interface {
	// Topics returns every topic the backend keeps messages or
	// subscriptions for, sorted by name.
	Topics(ctx context.Context) ([]TopicInfo, error)
}

// TopicInfo is one topic and its subscriptions.
type TopicInfo struct {
	Name string
	// Subscriptions are the topic's subscriptions, sorted, as
	// pubsub.Subscriber.Subscriptions lists them: a topic with none keeps
	// its messages for its default subscription (see "Subscriptions" in
	// package pubsub's documentation).
	Subscriptions []string
}

// MessageState is where a message is in its life, as inspection shows it.
type MessageState string

// The states Peek lists. A finished (acked) message is not listed.
const (
	StateReady      MessageState = "ready"      // due, waiting for a consumer
	StateScheduled  MessageState = "scheduled"  // waiting for a later time (delayed or backing off)
	StateProcessing MessageState = "processing" // leased to a consumer
	StateDead       MessageState = "dead"       // exhausted its attempts or was rejected
)

// Valid reports whether s is one of the four states.
func (s MessageState) Valid() bool {
	switch s {
	case StateReady, StateScheduled, StateProcessing, StateDead:
		return true
	}
	return false
}

// Peek limits and sizes.
const (
	// DefaultPeekLimit is the page size of a PeekOptions without Limit.
	DefaultPeekLimit = 50
	// MaxPeekLimit is the largest page; a larger Limit is cut to it.
	MaxPeekLimit = 1000
	// PreviewSize is the most bytes of its data a MessageInfo carries.
	PreviewSize = 1024
)

// PeekOptions says which page of which messages Peek returns.
type PeekOptions struct {
	State MessageState // required
	// Limit is the most messages in the page: DefaultPeekLimit when 0 or
	// less, at most MaxPeekLimit.
	Limit int
	// After is the Next of the previous page ("" for the first): the page
	// starts after it. A cursor is the backend's, opaque, and valid for
	// the state it was made for; another is refused with ErrInvalidCursor.
	After string
}

// Normalized returns o with Limit defaulted and bounded, or an error if its
// State is not one of the four. Backends call it first.
func (o PeekOptions) Normalized() (PeekOptions, error) {
	if !o.State.Valid() {
		return o, fmt.Errorf("pubsub: peek: no message state %q (want ready, scheduled, processing or dead)", o.State)
	}
	switch {
	case o.Limit <= 0:
		o.Limit = DefaultPeekLimit
	case o.Limit > MaxPeekLimit:
		o.Limit = MaxPeekLimit
	}
	return o, nil
}

// PeekPage is one page of messages in one state.
type PeekPage struct {
	Messages []MessageInfo
	// Next is the cursor of the next page (PeekOptions.After), "" when
	// this page is the last. Messages that change state between pages
	// may be skipped or listed twice; a queue at rest is listed whole,
	// each message once.
	Next string
}

// MessageInfo describes a message without its whole data.
type MessageInfo struct {
	ID       string
	State    MessageState
	Attempts int // deliveries it had so far
	// RunAt is when it is due (ready, scheduled), when its lease ends
	// (processing), or when it died (dead).
	RunAt     time.Time
	CreatedAt time.Time     // when it was enqueued (zero if the backend does not know)
	LastError string        // the reason of its last failure, if one was given
	Size      int           // of its data, in bytes
	Preview   []byte        // the first PreviewSize bytes of its data at most
	Header    pubsub.Header // nil if it has none
}

// Peeker is a pubsub.Topic whose subscription's messages can be looked at
// without being delivered; call it through Peek and GetMessage.
type Peeker interface {
	// Peek returns a page of the subscription's messages in opts.State,
	// in an order the backend documents, at most opts.Limit of them.
	Peek(ctx context.Context, opts PeekOptions) (PeekPage, error)
	// Message returns the message id of the subscription (ready,
	// scheduled, processing or dead) and its whole data. It wraps
	// ErrNotFound when the subscription keeps no such message unsettled
	// or dead (an acked one is not found), ErrInvalidID when id cannot be
	// one of the backend's.
	Message(ctx context.Context, id string) (MessageInfo, []byte, error)
}

// Canceler is a pubsub.Topic whose subscription's waiting messages can be
// deleted one by one.
type Canceler interface {
	// Cancel deletes the ready or scheduled message id of the
	// subscription: it is never delivered (to this subscription; other
	// subscriptions' copies are theirs). It wraps ErrWrongState when the
	// message is processing (leased: settle it or let its lease run out
	// first) or dead (see DeadDeleter), ErrNotFound when the subscription
	// keeps no such message, ErrInvalidID when id cannot be one.
	Cancel(ctx context.Context, id string) error
}

// DeadDeleter is a pubsub.Topic whose subscription's dead messages can be
// deleted one by one (DeadLetters.PurgeDead deletes them all).
type DeadDeleter interface {
	// DeleteDead deletes the dead message id for good. It wraps
	// ErrNotFound when id is not a dead message of the subscription,
	// ErrInvalidID when id cannot be one.
	DeleteDead(ctx context.Context, id string) error
}

// ListTopics lists the topics ps keeps (see TopicLister). Without a
// TopicLister it returns pubsub.ErrUnsupported.
func ListTopics(ctx context.Context, ps pubsub.PubSub) ([]TopicInfo, error) {
	l, ok := pubsub.As[TopicLister](ps)
	if !ok {
		return nil, unsupported(ps, "listing topics")
	}
	return l.Topics(ctx)
}

// Peek returns a page of t's messages in opts.State (see Peeker). Without a
// Peeker, the dead messages of a topic with DeadLetters are its first
// page (ListDead, oldest death first; a later page wraps
// ErrInvalidCursor); anything else returns pubsub.ErrUnsupported.
func Peek(ctx context.Context, t pubsub.Topic, opts PeekOptions) (PeekPage, error) {
	p, ok := pubsub.As[Peeker](t)
	_, dl := pubsub.As[DeadLetters](t)
	if !ok && !(dl && opts.State == StateDead) {
		return PeekPage{}, unsupported(t, "peek")
	}
	opts, err := opts.Normalized()
	if err != nil {
		return PeekPage{}, err
	}
	if ok {
		return p.Peek(ctx, opts)
	}
	if opts.After != "" {
		return PeekPage{}, fmt.Errorf("%w: this backend lists its dead messages in one page", ErrInvalidCursor)
	}
	dead, err := ListDead(ctx, t, opts.Limit)
	if err != nil {
		return PeekPage{}, err
	}
	var pg PeekPage
	for _, m := range dead {
		pg.Messages = append(pg.Messages, m.Info())
	}
	return pg, nil
}

// GetMessage returns the message id of t and its data (see
// Peeker.Message). Without a Peeker, a topic with DeadLetters shows its
// dead messages only, among the first MaxPeekLimit (another id wraps
// ErrNotFound); anything else returns pubsub.ErrUnsupported.
func GetMessage(ctx context.Context, t pubsub.Topic, id string) (MessageInfo, []byte, error) {
	if p, ok := pubsub.As[Peeker](t); ok {
		return p.Message(ctx, id)
	}
	if _, ok := pubsub.As[DeadLetters](t); !ok {
		return MessageInfo{}, nil, unsupported(t, "peek")
	}
	dead, err := ListDead(ctx, t, MaxPeekLimit)
	if err != nil {
		return MessageInfo{}, nil, err
	}
	for _, m := range dead {
		if m.ID == id {
			return m.Info(), m.Data, nil
		}
	}
	return MessageInfo{}, nil, fmt.Errorf("%w: %q is not among the first %d dead messages (this backend shows dead messages only)",
		ErrNotFound, id, MaxPeekLimit)
}

// Cancel deletes the ready or scheduled message id of t (see Canceler).
// Without a Canceler it returns pubsub.ErrUnsupported.
func Cancel(ctx context.Context, t pubsub.Topic, id string) error {
	c, ok := pubsub.As[Canceler](t)
	if !ok {
		return unsupported(t, "cancel")
	}
	return c.Cancel(ctx, id)
}

// DeleteDead deletes the dead message id of t (see DeadDeleter). Without
// a DeadDeleter it returns pubsub.ErrUnsupported.
func DeleteDead(ctx context.Context, t pubsub.Topic, id string) error {
	d, ok := pubsub.As[DeadDeleter](t)
	if !ok {
		return unsupported(t, "deleting one dead message")
	}
	return d.DeleteDead(ctx, id)
}

// PreviewOf returns the preview of data a MessageInfo carries: a copy of
// its first PreviewSize bytes at most.
func PreviewOf(data []byte) []byte {
	return append([]byte{}, data[:min(len(data), PreviewSize)]...)
}
