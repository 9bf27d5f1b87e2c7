package admin

import (
	"context"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// AckCounter is a pubsub.Topic that can count the messages its subscription
// acked recently: the throughput an operations tool charts. It acts on the
// subscription the handle reads (the default one for pubsub.PubSub.Topic, a
// handle from pubsub.Subscribe its own); the acks of the topic's other
// subscriptions are theirs.
//
// A chart samples it every few seconds with since set to its previous
// sample's time, so only recent windows need be exact. Each backend
// remembers acks for a bounded time, which its AckedSince documents
// (channelpubsub: about 17 minutes; dbpubsub: Options.Retention); a since
// older than that counts only the acks the backend still remembers, never
// an error. A backend may count by the second (channelpubsub does): it
// then counts every ack of the second since falls in, so that none is
// missed.
type AckCounter interface {
	// AckedSince returns how many of the subscription's messages were
	// acked at or after since. Only acks count: a nack, a reject, a lease
	// that ran out, a cancel or a message that died is not one. A message
	// acked counts once, whatever its attempts. Acks are timed by the
	// backend's clock (a database's, say), which may differ a little from
	// the caller's: a since later than that clock counts 0.
	AckedSince(ctx context.Context, since time.Time) (int64, error)
}

// AckedSince returns how many of the messages of the subscription t reads
// were acked at or after since (see AckCounter). Without an AckCounter it
// returns pubsub.ErrUnsupported.
func AckedSince(ctx context.Context, t pubsub.Topic, since time.Time) (int64, error) {
	c, ok := pubsub.As[AckCounter](t)
	if !ok {
		return 0, unsupported(t, "counting acks")
	}
	return c.AckedSince(ctx, since)
}
