package kafkapubsub

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The client every Enqueue (and the relay's publish) goes through waits
// for every in-sync replica (acks=all) and is idempotent: a produce
// request retried after a lost answer is not written twice. Both are
// franz-go's defaults; this fails if an option of the store changes them.
func TestProducerAcksAllIdempotent(t *testing.T) {
	ps, err := New(Options{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	if got := ps.s.cl.OptValue(kgo.RequiredAcks); got != kgo.AllISRAcks() {
		t.Errorf("RequiredAcks = %v, want AllISRAcks (acks=all)", got)
	}
	if got := ps.s.cl.OptValue(kgo.DisableIdempotentWrite); got != false {
		t.Errorf("DisableIdempotentWrite = %v, want false (idempotent producer)", got)
	}
	if got := ps.s.cl.OptValue(kgo.AllowIdempotentProduceCancellation); got != false {
		t.Errorf("AllowIdempotentProduceCancellation = %v, want false", got)
	}
}
