package dbpubsub

import (
	"testing"

	"github.com/conveyorgo/conveyor/internal/pgtest"
)

// The listener wakes a topic's fetcher on any notification but the rounds
// of its own store's notifier: their messages woke the store's consumers
// at commit, and another wake-up would cost a claim that finds nothing.
// Another store's rounds, and the plain NOTIFY of an enqueue in a caller's
// transaction, wake it.
func TestListenerPassesOverItsOwnRounds(t *testing.T) {
	_, db := pgtest.NewSchema(t)
	own, other := newStore(db, Options{}), newStore(db, Options{})
	if own.sender == other.sender || own.sender == "" {
		t.Fatalf("senders %q and %q, want two distinct payloads", own.sender, other.sender)
	}
	l := newListener(own)
	st := own.state("t", "")
	const ch = "conveyor_test"
	l.subscribe(ch, st)
	for _, c := range []struct {
		name, payload string
		wake          bool
	}{
		{"own round", own.sender, false},
		{"another store's round", other.sender, true},
		{"an enqueue in a transaction", "", true},
	} {
		ready := st.readyChan()
		l.notified(ch, c.payload)
		select {
		case <-ready:
			if !c.wake {
				t.Errorf("%s (payload %q) woke the fetcher", c.name, c.payload)
			}
		default:
			if c.wake {
				t.Errorf("%s (payload %q) did not wake the fetcher", c.name, c.payload)
			}
		}
	}
}
