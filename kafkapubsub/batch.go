package kafkapubsub

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/pubsub/driver"
)

var _ driver.BatchPublisher = (*topicState)(nil)

// PublishBatch appends b's messages to the topic's log in one Kafka
// transaction, in order, and returns once it committed: the subscriptions
// read committed records only (share.isolation.level and the consumer
// groups' isolation level are read_committed), so they see all of the
// batch or none of it. A batch whose transaction did not commit is
// aborted; one whose commit's answer was lost (the request timed out, the
// cluster went away) may have committed all the same, as an Enqueue whose
// acknowledgement was lost (at least once).
func (st *topicState) PublishBatch(ctx context.Context, _ <-chan struct{}, b driver.Batch) error {
	for i, data := range b.Data {
		if err := st.underMax(data, b.Header); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	if err := st.ensure(ctx); err != nil {
		return err
	}
	for i, data := range b.Data {
		if err := st.fits(data, b.Header); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	if err := st.ensurePublishable(ctx); err != nil {
		return err
	}
	rs := make([]*kgo.Record, len(b.Data))
	for i, data := range b.Data {
		rs[i] = st.record(append([]byte(nil), data...), b.Header)
	}
	return st.s.transact(ctx, fmt.Sprintf("publishing a batch of %d to %s", len(rs), st.n.log), rs)
}

// txProducers are a store's transactional producers not in use: one
// transaction at a time runs on each, so a batch takes one and gives it
// back. Each has a transactional ID of its own, "<prefix>.x.<random>",
// which no other producer uses, so none fences another.
type txProducers struct {
	mu   sync.Mutex
	idle []*kgo.Client
}

// maxIdleTx bounds the idle transactional producers a store keeps.
const maxIdleTx = 8

// transact produces rs in one transaction and commits it, or aborts it
// and returns why. A producer whose transaction ended in doubt (an
// error at its commit or abort) is closed rather than used again.
func (s *store) transact(ctx context.Context, doing string, rs []*kgo.Record) error {
	cl, err := s.txProducer()
	if err != nil {
		return s.fail(ctx, doing, err)
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	healthy := false
	defer func() { s.putTxProducer(cl, healthy) }()
	if err := cl.BeginTransaction(); err != nil {
		return s.fail(ctx, doing, err)
	}
	if err := produceSync(rctx, cl, rs...); err != nil {
		// The records not yet sent are dropped, those sent aborted.
		if cl.AbortBufferedRecords(rctx) == nil && cl.EndTransaction(rctx, kgo.TryAbort) == nil {
			healthy = true
		}
		return s.fail(ctx, doing, err)
	}
	if err := cl.EndTransaction(rctx, kgo.TryCommit); err != nil {
		return s.fail(ctx, doing, err)
	}
	healthy = true
	return nil
}

// txProducer returns an idle transactional producer, or a new one.
func (s *store) txProducer() (*kgo.Client, error) {
	p := &s.tx
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		cl := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return cl, nil
	}
	p.mu.Unlock()
	return kgo.NewClient(s.opts.clientOpts(
		kgo.TransactionalID(s.opts.Prefix+".x."+newID()),
		// An abandoned transaction (this process died in it) holds back
		// the records after it from read_committed consumers until the
		// cluster aborts it: RequestTimeout, as a call's own bound.
		kgo.TransactionTimeout(s.opts.RequestTimeout),
	)...)
}

// putTxProducer gives cl back, healthy or not: one that is not, or one
// past maxIdleTx, or after Close, is closed.
func (s *store) putTxProducer(cl *kgo.Client, healthy bool) {
	p := &s.tx
	p.mu.Lock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if healthy && !closed && len(p.idle) < maxIdleTx {
		p.idle = append(p.idle, cl)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	cl.Close()
}

// closeTxProducers closes the idle transactional producers (Close).
func (s *store) closeTxProducers() {
	p := &s.tx
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, cl := range idle {
		cl.Close()
	}
}
