package dbpubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/conveyorgo/conveyor/internal/service"
)

// listener LISTENs, on a dedicated pgx connection, to the channels of the
// topics this PubSub consumes, and wakes their fetchers. When the
// connection is lost it reconnects on its own (and wakes every fetcher,
// since notifications sent meanwhile are lost); fetchers poll meanwhile.
type listener struct {
	ps  *store
	cfg *pgx.ConnConfig // of the connection, once known; owned by run

	mu        sync.Mutex
	subs      map[string]*subscription // by channel
	dirty     bool                     // subs has channels not LISTENed yet
	interrupt context.CancelFunc       // stops the current wait for a notification
	changed   chan struct{}            // cap 1: subs changed
	pid       atomic.Uint32            // backend PID of the connection, 0 when down
	off       bool                     // cannot listen at all: fetchers only poll
}

type subscription struct {
	st     *topicState
	active chan struct{} // closed once LISTEN ran
	once   sync.Once
}

func newListener(ps *store) *listener {
	return &listener{ps: ps, subs: make(map[string]*subscription), changed: make(chan struct{}, 1)}
}

// subscribe asks for notifications on channel to wake st. The returned
// channel is closed once the LISTEN is in place (at once if the listener
// is off).
func (l *listener) subscribe(channel string, st *topicState) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.subs[channel]; ok {
		return s.active
	}
	s := &subscription{st: st, active: make(chan struct{})}
	if l.off {
		s.once.Do(func() { close(s.active) })
	}
	l.subs[channel] = s
	l.dirty = true
	if l.interrupt != nil {
		l.interrupt()
	}
	select {
	case l.changed <- struct{}{}:
	default:
	}
	return s.active
}

// disable turns the listener off for good: nobody waits for a LISTEN.
func (l *listener) disable() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.off = true
	for _, s := range l.subs {
		s.once.Do(func() { close(s.active) })
	}
}

var errNotPgx = errors.New("the *bun.DB is not on github.com/jackc/pgx/v5/stdlib; set Options.ListenDSN")

// errLost marks the failure of a connection that was up.
var errLost = errors.New("listener connection lost")

// run connects, listens and reconnects until stop, once there is a channel
// to listen to.
func (l *listener) run(stop <-chan struct{}) {
	ctx, cancel := service.Context(stop)
	defer cancel()
	log := l.ps.opts.Logger
	var bo backoff
	for l.waitForSubscriptions(ctx) {
		err := l.session(ctx, &bo)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errNotPgx):
			log.Warn("dbpubsub: LISTEN/NOTIFY is off, consumers poll", "error", err)
			l.disable()
			<-ctx.Done()
			return
		case errors.Is(err, errLost):
			log.Warn("dbpubsub: listener connection lost; reconnecting, consumers poll meanwhile", "error", err)
		default:
			log.Warn("dbpubsub: listener cannot connect; consumers poll meanwhile", "error", err)
		}
		if !service.Sleep(ctx.Done(), bo.next()) {
			return
		}
	}
}

// waitForSubscriptions returns true once there is a channel to listen to,
// false when ctx ends first.
func (l *listener) waitForSubscriptions(ctx context.Context) bool {
	for {
		l.mu.Lock()
		n := len(l.subs)
		l.mu.Unlock()
		if n > 0 {
			return true
		}
		select {
		case <-l.changed:
		case <-ctx.Done():
			return false
		}
	}
}

// listenCheck is how long the listening connection may stay silent before
// the listener pings it (with Options.StatementTimeout) to tell a quiet
// connection from one that stopped answering.
const listenCheck = 15 * time.Second

// session connects and serves until the connection fails or ctx ends. An
// error wrapping errLost means it had connected.
func (l *listener) session(ctx context.Context, bo *backoff) error {
	if l.cfg == nil {
		cfg, err := l.config(ctx)
		if err != nil {
			return err
		}
		// So that operators can tell it in pg_stat_activity.
		if cfg.RuntimeParams == nil {
			cfg.RuntimeParams = make(map[string]string)
		}
		if cfg.RuntimeParams["application_name"] == "" {
			cfg.RuntimeParams["application_name"] = "conveyor-listener"
		}
		l.cfg = cfg
	}
	cctx, cancel := l.ps.stmtCtx(ctx)
	conn, err := pgx.ConnectConfig(cctx, l.cfg)
	cancel()
	if err != nil {
		return err
	}
	l.pid.Store(conn.PgConn().PID())
	err = l.serve(ctx, conn, bo)
	l.pid.Store(0)
	cctx, cancel = context.WithTimeout(context.Background(), time.Second)
	_ = conn.Close(cctx)
	cancel()
	return fmt.Errorf("%w: %w", errLost, err)
}

// config returns the configuration of the listener's connection:
// Options.ListenDSN, else that of the DB's own pgx connections.
func (l *listener) config(ctx context.Context) (*pgx.ConnConfig, error) {
	if dsn := l.ps.opts.ListenDSN; dsn != "" {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("%w: Options.ListenDSN: %v", errNotPgx, err)
		}
		return cfg, nil
	}
	cctx, cancel := l.ps.stmtCtx(ctx)
	conn, err := l.ps.sqldb.Conn(cctx)
	cancel()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var cfg *pgx.ConnConfig
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("%w (driver connection %T)", errNotPgx, dc)
		}
		cfg = c.Conn().Config()
		// The copy still delivers notifications to the pool's connection.
		cfg.OnNotification = nil
		return nil
	})
	return cfg, err
}

// serve LISTENs and dispatches notifications until the connection fails
// or ctx ends.
func (l *listener) serve(ctx context.Context, conn *pgx.Conn, bo *backoff) error {
	listened := make(map[string]bool)
	for first := true; ; first = false {
		if err := l.listenNew(ctx, conn, listened, first); err != nil {
			return err
		}
		if first {
			bo.reset()
		}
		wctx := l.interruptible(ctx)
		tctx, tcancel := context.WithTimeout(wctx, listenCheck)
		n, err := conn.WaitForNotification(tctx)
		quiet := tctx.Err() != nil && wctx.Err() == nil // listenCheck passed without a notification
		tcancel()
		interrupted := l.endInterruptible(wctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if quiet && !conn.IsClosed() {
				// A connection that stopped answering (a lost NAT or proxy
				// state, a hung server) would wait here forever: ask it.
				pctx, cancel := l.ps.stmtCtx(ctx)
				err := conn.Ping(pctx)
				cancel()
				if err != nil {
					return fmt.Errorf("the connection stopped answering: %w", err)
				}
				continue
			}
			if interrupted && !conn.IsClosed() {
				continue // a new channel to LISTEN to
			}
			return err
		}
		l.notified(n.Channel, n.Payload)
	}
}

// notified tells the subscriber of channel about a notification with
// payload: a pause, a resume, or else a wake-up, unless this store's own
// notifier sent it (its consumers were woken at the commit: notify.go).
func (l *listener) notified(channel, payload string) {
	l.mu.Lock()
	s := l.subs[channel]
	l.mu.Unlock()
	switch {
	case s == nil:
	case payload == payloadPause:
		s.st.notePause(true)
		st := s.st
		st.ps.loops.Go(func(<-chan struct{}) { st.releaseAll() }) // else Close gives them back
	case payload == payloadResume:
		s.st.notePause(false)
	case payload == l.ps.sender:
	default:
		s.st.wake()
	}
}

// listenNew LISTENs to the channels subscribed since the last call and
// tells their subscribers. On a connection's first call it wakes every
// subscriber: anything sent while no connection listened was lost.
func (l *listener) listenNew(ctx context.Context, conn *pgx.Conn, listened map[string]bool, first bool) error {
	l.mu.Lock()
	l.dirty = false
	var todo []string
	for ch := range l.subs {
		if !listened[ch] {
			todo = append(todo, ch)
		}
	}
	l.mu.Unlock()
	for _, ch := range todo {
		sctx, cancel := l.ps.stmtCtx(ctx)
		_, err := conn.Exec(sctx, "LISTEN "+quoteIdent(ch))
		cancel()
		if err != nil {
			return fmt.Errorf("LISTEN: %w", err)
		}
		listened[ch] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ch := range todo {
		s := l.subs[ch]
		s.once.Do(func() { close(s.active) })
	}
	if first {
		for _, s := range l.subs {
			s.st.wake()
		}
	}
	return nil
}

// interruptible returns a ctx for the wait for a notification that
// subscribe cancels when a channel is added (at once if one was added
// since listenNew).
func (l *listener) interruptible(ctx context.Context) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	wctx, cancel := context.WithCancel(ctx)
	if l.dirty {
		cancel()
	}
	l.interrupt = cancel
	return wctx
}

// endInterruptible releases wctx and reports whether it was interrupted.
func (l *listener) endInterruptible(wctx context.Context) bool {
	l.mu.Lock()
	cancel := l.interrupt
	l.interrupt = nil
	l.mu.Unlock()
	interrupted := wctx.Err() != nil
	cancel()
	return interrupted
}
