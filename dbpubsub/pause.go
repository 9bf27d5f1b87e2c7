package dbpubsub

import (
	"context"
	"sync"
	"sync/atomic"
)

// Pausing (migration 0008). A queue is paused while it has a row in the
// paused table; every claim reads it in its own snapshot and takes nothing
// from a paused queue, so no process delivers a message claimed after the
// pause committed. Each topicState also keeps its own view of the pause,
// so that rows claimed ahead into its buffer are given back rather than
// handed out: the process that pauses sets it at once, the others when
// the pause's notification reaches their listener, or, without one, at
// their next claim. Resume deletes the row and notifies: the consumers of
// every process claim again.

// The payloads of the notifications of Pause and Resume on a queue's
// channel; every other notification has none.
const (
	payloadPause  = "pause"
	payloadResume = "resume"
)

// Pause pauses the handle's subscription (Topic(name): the default one)
// for every process on the database, until Resume: no consumer gets its
// messages; enqueues go on. The pause is kept in the database, so it
// survives restarts. Rows this PubSub claimed ahead are given back; other
// processes give back theirs when the pause's notification reaches them
// (at their next claim without LISTEN). A delivery made before can still
// be settled.
func (st *topicState) Pause(ctx context.Context) error {
	return st.setPaused(ctx, true)
}

// Resume resumes the handle's subscription and wakes its consumers in
// every process.
func (st *topicState) Resume(ctx context.Context) error {
	return st.setPaused(ctx, false)
}

// Paused reports whether the handle's subscription is paused, as the
// database says.
func (st *topicState) Paused(ctx context.Context) (bool, error) {
	ps := st.ps
	if _, err := ps.qualifiedTable(ctx); err != nil {
		return false, err
	}
	sctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	var paused bool
	if err := ps.sqldb.QueryRowContext(sctx, ps.stmts.paused, st.name).Scan(&paused); err != nil {
		return false, err
	}
	return paused, nil
}

func (st *topicState) setPaused(ctx context.Context, on bool) error {
	ps := st.ps
	ch, err := st.channel(ctx)
	if err != nil {
		return err
	}
	if err := ps.begin(); err != nil {
		return err
	}
	defer ps.end()
	stmt := ps.stmts.resume
	if on {
		stmt = ps.stmts.pause
	}
	sctx, cancel := ps.stmtCtx(ctx)
	_, err = ps.sqldb.ExecContext(sctx, stmt, st.name, ch)
	cancel()
	if err != nil {
		return err
	}
	st.notePause(on)
	if on {
		st.releaseAll()
	}
	return nil
}

// pauseState is a queue's view of its pause in one PubSub. on is read by
// Dequeue without a lock; gen counts the pauses and resumes learnt other
// than by a claim, so that a claim that ran across one is not believed.
type pauseState struct {
	on  atomic.Bool
	mu  sync.Mutex
	gen int64
}

// notePause records a pause (on) or resume learnt from this PubSub's own
// call or from a notification; a resume wakes the fetcher. The caller
// gives back the rows claimed ahead on a pause (releaseAll); from then on
// deliver gives back what a claim brings instead of handing it out.
func (st *topicState) notePause(on bool) {
	p := &st.pause
	p.mu.Lock()
	p.gen++
	p.on.Store(on)
	p.mu.Unlock()
	if !on {
		st.wake()
	}
}

// pauseGen returns the count of pauses and resumes learnt so far.
func (st *topicState) pauseGen() int64 {
	st.pause.mu.Lock()
	defer st.pause.mu.Unlock()
	return st.pause.gen
}

// claimedPause records what a claim, begun when the count was gen, said of
// the pause. It reports whether the claim's rows may be handed out: not if
// the queue is paused, or if a pause or resume was learnt while the claim
// ran (the claim's snapshot may be older: its rows are given back, and the
// next claim tells).
func (st *topicState) claimedPause(gen int64, paused bool) bool {
	p := &st.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gen != gen {
		return false
	}
	p.on.Store(paused)
	return !paused
}
