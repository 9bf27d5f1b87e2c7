package kafkapubsub

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A consumer-group member (a topic's delay mover, a subscription's reader
// in consumer-group mode) leaves its group when it closes. franz-go sends
// a join on the client's own context and its Close waits for that join to
// return before it leaves; a join is parked at the coordinator while a
// rebalance waits for the members that have not joined again, one of a
// killed process until its session timeout. So a member's client has a
// context of its own, which closeMember cancels when the leave takes
// longer than leaveWait: Close then returns at once, without leaving, and
// the group forgets the member after its session timeout.

// leaveWait bounds how long closing a member waits for it to leave its
// group.
const leaveWait = 2 * time.Second

// member is a consumer-group member's client and the cancel of its
// context.
type member struct {
	cl     *kgo.Client
	cancel context.CancelFunc
}

// newMember makes a member of a consumer group with opts (which name the
// group), after the store's client options: its session timeout is
// Options.SessionTimeout.
func (o resolved) newMember(opts ...kgo.Opt) (member, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cl, err := kgo.NewClient(o.clientOpts(append([]kgo.Opt{
		kgo.WithContext(ctx),
		// A member that stops heartbeating (its process killed) loses
		// its partitions after SessionTimeout; it heartbeats at a third
		// of it, at most every 3 s (franz-go's default).
		kgo.SessionTimeout(o.SessionTimeout),
		kgo.HeartbeatInterval(min(3*time.Second, o.SessionTimeout/3)),
	}, opts...)...)...)
	if err != nil {
		cancel()
		return member{}, err
	}
	return member{cl: cl, cancel: cancel}, nil
}

// close closes the member's client, leaving its group, and returns once
// it left or leaveWait has passed.
func (m member) close() {
	defer m.cancel()
	done := make(chan struct{})
	go func() {
		m.cl.Close()
		close(done)
	}()
	t := time.NewTimer(leaveWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		m.cancel() // the parked join returns, and Close with it
		<-done
	}
}
