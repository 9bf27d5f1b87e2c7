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
)

// listener LISTENs, on a dedicated pgx connection, to the channels of the
// topics this PubSub consumes, and wakes their fetchers. When the
// connection is lost it reconnects on its own (and wakes every fetcher,
// since notifications sent meanwhile are lost); fetchers poll meanwhile.
type listener struct {
	ps *PubSub

	mu        sync.Mutex
	subs      map[string]*subscription // by channel
	dirty     bool                     // subs has channels not LISTENed yet
	interrupt context.CancelFunc       // stops the current wait
	kick      chan struct{}
	pid       atomic.Uint32 // backend PID of the connection, 0 when down
	off       bool          // cannot listen at all: fetchers only poll
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

type subscription struct {
	st     *topicState
	active chan struct{} // closed once LISTEN ran
	once   sync.Once
}

func newListener(ps *PubSub) *listener {
	return &listener{ps: ps, subs: make(map[string]*subscription), kick: make(chan struct{}, 1)}
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
	case l.kick <- struct{}{}:
	default:
	}
	return s.active
}

func (l *listener) run() {
	ps := l.ps
	defer ps.loops.Done()
	ctx := ps.listenCtx
	log := ps.opts.Logger
	var bo backoff
	var cfg *pgx.ConnConfig
	for {
		l.mu.Lock()
		n := len(l.subs)
		l.mu.Unlock()
		if n == 0 {
			select {
			case <-l.kick:
				continue
			case <-ctx.Done():
				return
			}
		}
		if cfg == nil {
			var err error
			if cfg, err = l.config(ctx); err == nil {
				// So that operators can tell it in pg_stat_activity.
				if cfg.RuntimeParams == nil {
					cfg.RuntimeParams = make(map[string]string)
				}
				if cfg.RuntimeParams["application_name"] == "" {
					cfg.RuntimeParams["application_name"] = "conveyor-listener"
				}
			} else {
				if ctx.Err() != nil {
					return
				}
				if errors.Is(err, errNotPgx) {
					log.Warn("dbpubsub: LISTEN/NOTIFY is off, consumers poll", "error", err)
					l.disable()
					<-ctx.Done()
					return
				}
				log.Warn("dbpubsub: listener cannot connect; consumers poll meanwhile", "error", err)
				if !sleepCtx(ctx, bo.next()) {
					return
				}
				continue
			}
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("dbpubsub: listener cannot connect; consumers poll meanwhile", "error", err)
			if !sleepCtx(ctx, bo.next()) {
				return
			}
			continue
		}
		l.pid.Store(conn.PgConn().PID())
		err = l.serve(ctx, conn, &bo)
		l.pid.Store(0)
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		log.Warn("dbpubsub: listener connection lost; reconnecting, consumers poll meanwhile", "error", err)
		if !sleepCtx(ctx, bo.next()) {
			return
		}
	}
}

var errNotPgx = errors.New("the *bun.DB is not on github.com/jackc/pgx/v5/stdlib; set Options.ListenDSN")

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
	conn, err := l.ps.sqldb.Conn(ctx)
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
	first := true
	for {
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
			if _, err := conn.Exec(ctx, "LISTEN "+quoteIdent(ch)); err != nil {
				return fmt.Errorf("LISTEN: %w", err)
			}
			listened[ch] = true
		}
		l.mu.Lock()
		for _, ch := range todo {
			s := l.subs[ch]
			s.once.Do(func() { close(s.active) })
		}
		if first {
			// Anything sent while no connection listened was lost.
			for _, s := range l.subs {
				s.st.wake()
			}
			first = false
			bo.reset()
		}
		wctx, cancel := context.WithCancel(ctx)
		if l.dirty {
			cancel()
		}
		l.interrupt = cancel
		l.mu.Unlock()

		n, err := conn.WaitForNotification(wctx)

		l.mu.Lock()
		l.interrupt = nil
		l.mu.Unlock()
		interrupted := wctx.Err() != nil
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if interrupted && !conn.IsClosed() {
				continue // a new channel to LISTEN to
			}
			return err
		}
		l.mu.Lock()
		s := l.subs[n.Channel]
		l.mu.Unlock()
		if s != nil {
			s.st.wake()
		}
	}
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
