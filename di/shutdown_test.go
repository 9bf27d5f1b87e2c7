package di

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

// recorder records the order in which services stop.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *recorder) stopped() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

// One type per do shutdown interface, plus a plain io.Closer.
type (
	stopPlain   struct{ rec *recorder } // Shutdown()
	stopWithErr struct {
		rec *recorder
		err error
	} // Shutdown() error
	stopWithCtx    struct{ rec *recorder } // Shutdown(ctx)
	stopWithCtxErr struct {
		rec *recorder
		err error
	} // Shutdown(ctx) error
	closer struct {
		rec  *recorder
		err  error
		name string
	} // Close() error
	closerAndStop struct{ rec *recorder } // Close() error and Shutdown()
	voidClose     struct {
		rec  *recorder
		name string
	} // Close(), as *nats.Conn
)

func (s *stopPlain) Shutdown()                               { s.rec.add("plain") }
func (s *stopWithErr) Shutdown() error                       { s.rec.add("withErr"); return s.err }
func (s *stopWithCtx) Shutdown(context.Context)              { s.rec.add("withCtx") }
func (s *stopWithCtxErr) Shutdown(ctx context.Context) error { s.rec.add("withCtxErr"); return s.err }
func (c *closer) Close() error                               { c.rec.add("close " + c.name); return c.err }
func (c *closerAndStop) Close() error                        { c.rec.add("close"); return nil }
func (c *closerAndStop) Shutdown()                           { c.rec.add("shutdown") }
func (c *voidClose) Close()                                  { c.rec.add("close " + c.name) }

// lazyOn registers v lazily, its provider resolving deps through its ctx.
func lazyOn[T any](t *testing.T, ctx context.Context, v T, deps ...func(context.Context) error) {
	t.Helper()
	must(t, RegisterLazySingleton(ctx, func(ctx context.Context) (T, error) {
		for _, dep := range deps {
			if err := dep(ctx); err != nil {
				return v, err
			}
		}
		return v, nil
	}))
}

func dep[T any](ctx context.Context) error { _, err := Resolve[T](ctx); return err }

func TestShutdownOrder(t *testing.T) {
	t.Parallel()
	ctx := NewContext(context.Background())
	rec := &recorder{}
	// closer -> plain -> withCtxErr (eager) ; withCtx -> withCtxErr ;
	// topic "orders" (withErr, from a factory) -> plain.
	must(t, RegisterSingleton(ctx, &stopWithCtxErr{rec: rec}))
	lazyOn(t, ctx, &stopPlain{rec: rec}, dep[*stopWithCtxErr])
	lazyOn(t, ctx, &closer{rec: rec, name: "c"}, dep[*stopPlain])
	lazyOn(t, ctx, &stopWithCtx{rec: rec}, dep[*stopWithCtxErr])
	must(t, Register(ctx, func(ctx context.Context, name string) (*stopWithErr, error) {
		return &stopWithErr{rec: rec}, dep[*stopPlain](ctx)
	}))
	var h struct {
		C *closer      `inject:""`
		W *stopWithCtx `inject:""`
		T *stopWithErr `inject:"orders"`
	}
	must(t, Fill(ctx, &h))

	within(t, func() { must(t, Shutdown(ctx)) })

	got := rec.stopped()
	pos := func(s string) int {
		i := slices.Index(got, s)
		if i < 0 {
			t.Fatalf("%s was not stopped; stopped: %q", s, got)
		}
		return i
	}
	for _, before := range [][2]string{
		{"close c", "plain"},    // dependents first
		{"plain", "withCtxErr"}, // then their dependencies
		{"withErr", "plain"},    // a factory's service is ordered too
		{"withCtx", "withCtxErr"},
	} {
		if pos(before[0]) > pos(before[1]) {
			t.Errorf("%s stopped after %s; want before (order %q)", before[0], before[1], got)
		}
	}
	if len(got) != 5 {
		t.Errorf("stopped %q; want each of the 5 services once", got)
	}
}

func TestShutdownReportsEveryFailure(t *testing.T) {
	t.Parallel()
	ctx := NewContext(context.Background())
	rec := &recorder{}
	errA, errB, errC := errors.New("flush failed"), errors.New("drain failed"), errors.New("close failed")
	must(t, RegisterSingleton(ctx, &stopWithErr{rec: rec, err: errA}))
	must(t, RegisterNamedSingleton(ctx, "orders", &stopWithCtxErr{rec: rec, err: errB}))
	must(t, RegisterSingleton(ctx, &closer{rec: rec, err: errC, name: "c"}))
	must(t, RegisterSingleton(ctx, &stopPlain{rec: rec}))

	err := Shutdown(ctx)
	for _, want := range []error{errA, errB, errC} {
		if !errors.Is(err, want) {
			t.Errorf("Shutdown error %v does not wrap %v", err, want)
		}
	}
	for _, want := range []string{
		"di: shut down *di.stopWithErr: flush failed",
		`di: shut down *di.stopWithCtxErr "orders": drain failed`,
		"di: close *di.closer: close failed",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Shutdown error %q does not contain %q", err, want)
		}
	}
	if n := len(rec.stopped()); n != 4 {
		t.Errorf("stopped %q; want all 4 services despite failures", rec.stopped())
	}
}

func TestShutdownClosers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		register func(ctx context.Context, rec *recorder) error
		want     []string
	}{
		{
			name: "eager closer",
			register: func(ctx context.Context, rec *recorder) error {
				return RegisterSingleton(ctx, &closer{rec: rec, name: "c"})
			},
			want: []string{"close c"},
		},
		{
			name: "closer behind an interface",
			register: func(ctx context.Context, rec *recorder) error {
				return RegisterSingleton[any](ctx, &closer{rec: rec, name: "c"})
			},
			want: []string{"close c"},
		},
		{
			name: "closer under two names is closed once",
			register: func(ctx context.Context, rec *recorder) error {
				c := &closer{rec: rec, name: "c"}
				return errors.Join(RegisterSingleton(ctx, c), RegisterNamedSingleton(ctx, "alias", c))
			},
			want: []string{"close c"},
		},
		{
			name: "Close without result, under two names, is closed once",
			register: func(ctx context.Context, rec *recorder) error {
				c := &voidClose{rec: rec, name: "v"}
				return errors.Join(RegisterSingleton(ctx, c), RegisterNamedSingleton(ctx, "alias", c))
			},
			want: []string{"close v"},
		},
		{
			name: "do's Shutdown wins over Close",
			register: func(ctx context.Context, rec *recorder) error {
				return RegisterSingleton(ctx, &closerAndStop{rec: rec})
			},
			want: []string{"shutdown"},
		},
		{
			name: "unbuilt lazy closer is not built",
			register: func(ctx context.Context, rec *recorder) error {
				return RegisterLazySingleton(ctx, func(context.Context) (*closer, error) {
					rec.add("built")
					return &closer{rec: rec}, nil
				})
			},
			want: nil,
		},
		{
			name: "nil closer is not called",
			register: func(ctx context.Context, rec *recorder) error {
				return RegisterSingleton[*closer](ctx, nil)
			},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := NewContext(context.Background())
			rec := &recorder{}
			must(t, tt.register(ctx, rec))
			must(t, Shutdown(ctx))
			if got := rec.stopped(); !slices.Equal(got, tt.want) {
				t.Errorf("stopped %q; want %q", got, tt.want)
			}
		})
	}
}

func TestShutdownEmptiesInjector(t *testing.T) {
	t.Parallel()
	ctx := NewContext(context.Background())
	rec := &recorder{}
	must(t, RegisterSingleton(ctx, &closer{rec: rec, name: "first"}))
	must(t, Register(ctx, func(_ context.Context, name string) (testTopic, error) { return &topicImpl{name}, nil }))
	_ = mustNamed[testTopic](t, ctx, "orders")

	must(t, Shutdown(ctx))
	if _, err := Resolve[*closer](ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve after Shutdown = %v; want ErrNotFound", err)
	}
	if _, err := ResolveNamed[testTopic](ctx, "orders"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ResolveNamed after Shutdown = %v; want ErrNotFound (factories are gone too)", err)
	}
	must(t, Shutdown(ctx)) // twice is fine

	// The injector can be filled again.
	must(t, RegisterSingleton(ctx, &closer{rec: rec, name: "second"}))
	must(t, Shutdown(ctx))
	if got, want := rec.stopped(), []string{"close first", "close second"}; !slices.Equal(got, want) {
		t.Errorf("stopped %q; want %q", got, want)
	}
}

func TestShutdownCanceledContext(t *testing.T) {
	t.Parallel()
	ctx := NewContext(context.Background())
	rec := &recorder{}
	must(t, RegisterSingleton(ctx, &stopPlain{rec: rec}))
	must(t, RegisterSingleton(ctx, &closer{rec: rec, name: "c"}))

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	err := Shutdown(canceled)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "*di.stopPlain") {
		t.Errorf("Shutdown with a canceled ctx = %v; want context.Canceled naming *di.stopPlain", err)
	}
	if got, want := rec.stopped(), []string{"close c"}; !slices.Equal(got, want) {
		t.Errorf("stopped %q; want %q (Close does not take a ctx and is still called)", got, want)
	}
}

// A borrowed value stays its owner's: Shutdown neither shuts it down nor
// closes it, and it is served like any singleton until then.
func TestShutdownLeavesBorrowedValues(t *testing.T) {
	t.Parallel()
	ctx := NewContext(context.Background())
	rec := &recorder{}
	c := &closer{rec: rec, name: "c"}
	s := &stopWithErr{rec: rec}
	must(t, RegisterBorrowed(ctx, c))
	must(t, RegisterBorrowed(ctx, s))
	if err := RegisterBorrowed(ctx, &closer{rec: rec}); !errors.Is(err, ErrAlreadyRegistered) {
		t.Errorf("second RegisterBorrowed of one type = %v, want ErrAlreadyRegistered", err)
	}
	lazyOn(t, ctx, &stopPlain{rec: rec}, dep[*closer], dep[*stopWithErr])
	var h struct {
		C *closer    `inject:""`
		P *stopPlain `inject:""`
	}
	must(t, Fill(ctx, &h))
	if h.C != c {
		t.Fatalf("filled %p, want the borrowed value %p", h.C, c)
	}
	if got, err := Resolve[*stopWithErr](ctx); err != nil || got != s {
		t.Fatalf("Resolve = %p, %v; want the borrowed value %p", got, err, s)
	}
	must(t, Shutdown(ctx))
	if got := rec.stopped(); !slices.Equal(got, []string{"plain"}) {
		t.Errorf("stopped %q; want only the service the injector built", got)
	}
}
