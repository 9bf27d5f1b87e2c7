package natspubsub

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

var _ driver.Inbox = (*subState)(nil)

// Claim records key in the inbox of the subscription and reports
// whether it is the first claim of key there. The inbox is the topic's
// key-value bucket (names.go); a claim is a key created only if absent,
// so that of the processes claiming one key at once exactly one is first.
// A claim is kept for Options.InboxRetention and written at once: NATS
// takes part in no caller's transaction, so a transaction in ctx
// (pubsub.WithTx) changes nothing, and release deletes the claim if it is
// still this one's.
func (s *subState) Claim(ctx context.Context, key string) (bool, func(context.Context) error, error) {
	kv, err := s.st.inbox(ctx)
	if err != nil {
		return false, nil, err
	}
	k := s.tok + "." + token(key)
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	rev, err := kv.Create(rctx, k, nil)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return false, func(context.Context) error { return nil }, nil
	}
	if err != nil {
		return false, nil, s.st.ps.fail(ctx, fmt.Sprintf("claim %q", key), err)
	}
	release := func(ctx context.Context) error {
		rctx, cancel := s.st.ps.request(ctx)
		defer cancel()
		err := kv.Delete(rctx, k, jetstream.LastRevision(rev))
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) && !isWrongRevision(err) {
			return fmt.Errorf("natspubsub: %w", s.st.ps.fail(ctx, fmt.Sprintf("release claim %q on %s", key, s.label()), err))
		}
		return nil
	}
	return true, release, nil
}

// isWrongRevision reports whether err says the key changed since a
// revision: the claim was released and claimed anew.
func isWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// inbox returns the topic's inbox bucket, creating it (or bringing it to
// this PubSub's retention) on first use; with Options.Bind it only looks
// it up.
func (st *topicState) inbox(ctx context.Context) (jetstream.KeyValue, error) {
	return st.inboxWithin(ctx, st.ps.request)
}

// inboxWithin is inbox with each request's ctx made by request.
func (st *topicState) inboxWithin(ctx context.Context, request requester) (jetstream.KeyValue, error) {
	st.mu.Lock()
	kv := st.kv
	st.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	rctx, cancel := request(ctx)
	defer cancel()
	var err error
	if st.ps.opts.Bind {
		if kv, err = st.ps.js.KeyValue(rctx, st.n.inbox); errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("the inbox of %s: %w (Options.Bind: the operator makes it, see PubSub.Provision)",
				backend.Label(st.name, pubsub.DefaultSubscription), ErrNoStream)
		}
	} else {
		err = retryStoreCreate(rctx, func() (err error) {
			kv, err = st.ps.js.CreateOrUpdateKeyValue(rctx, st.inboxConfig())
			return err
		})
	}
	if err != nil {
		return nil, st.ps.fail(ctx, "opening the inbox of "+backend.Label(st.name, pubsub.DefaultSubscription), err)
	}
	st.mu.Lock()
	st.kv = kv
	st.mu.Unlock()
	return kv, nil
}

// forgetClaims deletes every claim of subscription s, if the topic has an
// inbox.
func (s *subState) forgetClaims(ctx context.Context) error {
	ps := s.st.ps
	rctx, cancel := ps.request(ctx)
	defer cancel()
	stream, err := ps.js.Stream(rctx, inboxStream(s.st.n.inbox))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err == nil {
		err = stream.Purge(rctx, jetstream.WithPurgeSubject(inboxSubject(s.st.n.inbox, s.tok+".>")))
	}
	if err != nil {
		return ps.fail(ctx, "forgetting the claims of "+s.label(), err)
	}
	return nil
}
