package di

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	db := &testDB{dsn: "main"}
	must(t, RegisterSingleton(ctx, db))
	must(t, RegisterNamedSingleton(ctx, "replica", &testDB{dsn: "replica"}))
	must(t, RegisterSingleton[testTopic](ctx, nil)) // a nil interface is a value too
	must(t, RegisterLazySingleton(ctx, func(ctx context.Context) (*testCache, error) {
		db, err := Resolve[*testDB](ctx)
		return &testCache{db: db}, err
	}))

	tests := []struct {
		name    string
		resolve func() (any, error)
		want    func(any) bool
	}{
		{"by type", func() (any, error) { return Resolve[*testDB](ctx) }, func(v any) bool { return v == db }},
		{"named", func() (any, error) { return ResolveNamed[*testDB](ctx, "replica") },
			func(v any) bool { return v.(*testDB).dsn == "replica" }},
		{"empty name is by type", func() (any, error) { return ResolveNamed[*testDB](ctx, "") },
			func(v any) bool { return v == db }},
		{"lazy with a dependency", func() (any, error) { return Resolve[*testCache](ctx) },
			func(v any) bool { return v.(*testCache).db == db }},
		{"nil interface", func() (any, error) { return Resolve[testTopic](ctx) },
			func(v any) bool { return v == nil }},
		{"MustResolve", func() (any, error) { return MustResolve[*testDB](ctx), nil },
			func(v any) bool { return v == db }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the second time serves the built instance
				v, err := tt.resolve()
				if err != nil {
					t.Fatal(err)
				}
				if !tt.want(v) {
					t.Fatalf("got %#v", v)
				}
			}
		})
	}
}

func TestResolveNotFound(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	// Services that do would list in its own error message.
	must(t, RegisterSingleton(ctx, &testDB{}))
	must(t, RegisterNamedSingleton(ctx, "other", &testDB{}))
	must(t, Register(ctx, func(_ context.Context, name string) (testTopic, error) { return &topicImpl{name}, nil }))

	tests := []struct {
		name    string
		resolve func() error
		want    string
	}{
		{"by type", func() error { _, err := Resolve[*testCache](ctx); return err }, "di: not found: *di.testCache"},
		{"named", func() error { _, err := ResolveNamed[*testDB](ctx, "missing"); return err }, `di: not found: *di.testDB "missing"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.resolve()
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("error = %v; want ErrNotFound", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q; want %q", err, tt.want)
			}
		})
	}
}

func TestMustResolvePanics(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("MustResolve panicked with %v; want an error wrapping ErrNotFound", err)
		}
	}()
	MustResolve[*testDB](ctx)
	t.Error("MustResolve of a missing service did not panic")
}

func TestResolveProviderErrors(t *testing.T) {
	t.Parallel()
	errDial := errors.New("dial refused")
	tests := []struct {
		name      string
		register  func(ctx context.Context) error
		wantIs    error
		wantError string
	}{
		{
			name: "provider error",
			register: func(ctx context.Context) error {
				return RegisterLazySingleton(ctx, func(context.Context) (*testDB, error) { return nil, errDial })
			},
			wantIs:    errDial,
			wantError: "di: provide *di.testDB: dial refused",
		},
		{
			name: "dependency's provider error",
			register: func(ctx context.Context) error {
				if err := RegisterLazySingleton(ctx, func(context.Context) (*testCache, error) { return nil, errDial }); err != nil {
					return err
				}
				return RegisterLazySingleton(ctx, func(ctx context.Context) (*testDB, error) {
					_, err := Resolve[*testCache](ctx)
					return nil, err
				})
			},
			wantIs:    errDial,
			wantError: "di: provide *di.testDB: di: provide *di.testCache: dial refused",
		},
		{
			name: "missing dependency",
			register: func(ctx context.Context) error {
				return RegisterLazySingleton(ctx, func(ctx context.Context) (*testDB, error) {
					_, err := ResolveNamed[testTopic](ctx, "orders")
					return nil, err
				})
			},
			wantIs:    ErrNotFound,
			wantError: `di: provide *di.testDB: di: not found: di.testTopic "orders"`,
		},
		{
			name: "provider panic",
			register: func(ctx context.Context) error {
				return RegisterLazySingleton(ctx, func(context.Context) (*testDB, error) { panic(errDial) })
			},
			wantIs:    errDial,
			wantError: "di: provide *di.testDB: dial refused",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := newCtx(t)
			must(t, tt.register(ctx))
			_, err := Resolve[*testDB](ctx)
			if !errors.Is(err, tt.wantIs) {
				t.Fatalf("error = %v; want it to wrap %v", err, tt.wantIs)
			}
			if err.Error() != tt.wantError {
				t.Errorf("error = %q; want %q", err, tt.wantError)
			}
			if strings.Contains(err.Error(), "DI:") {
				t.Errorf("error %q leaks do's message", err)
			}
		})
	}
}
