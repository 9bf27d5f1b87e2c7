package kafkapubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// The dead letters of a subscription are the records of its dead log, a
// Kafka topic of one partition, oldest death first: each keeps the
// message's raw data, its header, its ID, its attempts and its reason
// (logstore.DeadFields); the record's timestamp is when it died, its
// offset its position. Listing, re-queueing, deleting and purging them
// is the log layer's (logstore.DeadLetters). Kafka deletes only a prefix
// of a partition (DeleteRecords, which Purge uses); one record is removed
// by appending a tombstone naming its offset (hdrRemoves), which Scan
// reads before it yields. Two removals of one record at once both
// succeed, so two concurrent requeues of it may both append it (the
// consumer's inbox drops the second by its ID).

// hdrRemoves is the header of a tombstone of the dead log: the offset of
// the record it removes.
const hdrRemoves = "Conveyor-Removes"

var (
	_ driver.DeadLetters      = (*subState)(nil)
	_ driver.DeadDeleter      = (*subState)(nil)
	_ logstore.DeadLog        = deadLog{}
	_ logstore.AtomicRequeuer = deadLog{}
)

// deadLog is the dead log of a subscription, of its generation as this
// process knows it.
type deadLog struct{ s *subState }

// read returns the records of the dead log from its start to its end as
// of now.
func (l deadLog) read(ctx context.Context) ([]*kgo.Record, error) {
	n, err := l.s.names(ctx)
	if err != nil {
		return nil, err
	}
	return l.s.st.s.readLog(ctx, n.dead, "reading the dead letters")
}

// Scan calls each for the dead records not removed, oldest first.
func (l deadLog) Scan(ctx context.Context, each func(logstore.DeadRecord) bool) error {
	recs, err := l.read(ctx)
	if err != nil {
		return err
	}
	removed := map[int64]bool{}
	for _, r := range recs {
		if v := get(r, hdrRemoves); v != "" {
			n, _ := strconv.ParseInt(v, 10, 64)
			removed[n] = true
		}
	}
	for _, r := range recs {
		if removed[r.Offset] || get(r, hdrRemoves) != "" {
			continue
		}
		get := func(k string) string { return get(r, k) }
		if !each(logstore.ParseDead(get, uint64(r.Offset), r.Value, headerOf(r), r.Timestamp)) {
			return nil
		}
	}
	return nil
}

// Has reports whether the record at pos is kept and not removed.
func (l deadLog) Has(ctx context.Context, pos uint64) (bool, error) {
	var found bool
	err := l.Scan(ctx, func(r logstore.DeadRecord) bool {
		found = r.Pos == pos
		return !found && r.Pos < pos
	})
	return found, err
}

// Remove appends a tombstone of the record at pos.
func (l deadLog) Remove(ctx context.Context, pos uint64) error {
	ok, err := l.Has(ctx, pos)
	if err != nil {
		return err
	}
	if !ok {
		return logstore.ErrGone
	}
	n, err := l.s.names(ctx)
	if err != nil {
		return err
	}
	return l.s.st.s.produce(ctx, tombstone(n, pos))
}

// Purge deletes the dead log's records up to pos.
func (l deadLog) Purge(ctx context.Context, pos uint64) error {
	store := l.s.st.s
	rctx, cancel := store.request(ctx)
	defer cancel()
	n, err := l.s.names(ctx)
	if err != nil {
		return err
	}
	var o kadm.Offsets
	o.Add(kadm.Offset{Topic: n.dead, Partition: 0, At: int64(pos) + 1})
	resp, err := store.adm.DeleteRecords(rctx, o)
	if err == nil {
		err = resp.Error()
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return store.fail(ctx, "purging the dead letters", err)
	}
	return err
}

// Subscribed returns an error wrapping pubsub.ErrNoSubscription unless
// the subscription exists.
func (l deadLog) Subscribed(ctx context.Context) error {
	_, err := l.s.names(ctx)
	return err
}

// Requeue appends r's message to the subscription's retry log, with its
// ID, data and header and a fresh attempt count.
func (l deadLog) Requeue(ctx context.Context, r logstore.DeadRecord, _ string) error {
	n, err := l.s.names(ctx)
	if err != nil {
		return err
	}
	return l.s.st.s.produce(ctx, requeued(n, r))
}

// requeued is the record of r's message in the subscription's own log.
func requeued(n subNames, r logstore.DeadRecord) *kgo.Record {
	c := &kgo.Record{Topic: n.retry, Value: r.Data,
		Headers: []kgo.RecordHeader{{Key: logstore.HeaderID, Value: []byte(r.ID)}}}
	putHeader(c, r.Header)
	return c
}

// tombstone is the record that removes the dead record at pos.
func tombstone(n subNames, pos uint64) *kgo.Record {
	return &kgo.Record{Topic: n.dead, Partition: 0,
		Headers: []kgo.RecordHeader{{Key: hdrRemoves, Value: []byte(strconv.FormatUint(pos, 10))}}}
}

// RequeueRemove appends r's message to the retry log and r's tombstone
// to the dead log in one transaction, whose transactional ID is the
// dead log's and key's: a requeue of r fences every earlier one that has
// not committed, and sees, after it is the one, whether another
// committed first.
func (l deadLog) RequeueRemove(ctx context.Context, r logstore.DeadRecord, key string) error {
	store := l.s.st.s
	n, err := l.s.names(ctx)
	if err != nil {
		return err
	}
	rctx, cancel := store.request(ctx)
	defer cancel()
	cl, err := kgo.NewClient(store.opts.clientOpts(kgo.TransactionalID(n.dead+":"+key),
		kgo.TransactionTimeout(store.opts.RequestTimeout))...)
	if err != nil {
		return store.fail(ctx, "re-queueing a dead message", err)
	}
	defer cl.Close()
	if _, _, err := cl.ProducerID(rctx); err != nil { // fences the requeues of r before this one
		return store.fail(ctx, "re-queueing a dead message", err)
	}
	if ok, err := l.Has(ctx, r.Pos); err != nil || !ok {
		if err == nil {
			err = logstore.ErrGone
		}
		return err
	}
	if err := cl.BeginTransaction(); err != nil {
		return store.fail(ctx, "re-queueing a dead message", err)
	}
	err = produceSync(rctx, cl, requeued(n, r), tombstone(n, r.Pos))
	if err != nil {
		_ = cl.EndTransaction(rctx, kgo.TryAbort)
	} else {
		err = cl.EndTransaction(rctx, kgo.TryCommit)
	}
	if fenced(err) {
		return fmt.Errorf("%w (%v)", logstore.ErrGone, err)
	}
	if err != nil {
		return store.fail(ctx, "re-queueing a dead message", err)
	}
	return nil
}

// fenced reports whether err says another producer with the same
// transactional ID took over, so that this one's transaction did not
// commit.
func fenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidTxnState) || errors.Is(err, kerr.ConcurrentTransactions)
}
