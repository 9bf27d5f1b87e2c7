package di

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

type testDB struct{ dsn string }

type testCache struct{ db *testDB }

type testTopic interface{ Name() string }

type topicImpl struct{ name string }

func (t *topicImpl) Name() string { return t.name }

func TestRegisterSingleton(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	db := &testDB{dsn: "x"}
	must(t, RegisterSingleton(ctx, db))
	must(t, RegisterSingleton[testTopic](ctx, &topicImpl{name: "default"}))

	if got := MustResolve[*testDB](ctx); got != db {
		t.Errorf("Resolve[*testDB] = %p; want the registered %p", got, db)
	}
	if got := MustResolve[testTopic](ctx); got.Name() != "default" {
		t.Errorf("Resolve[testTopic].Name() = %q; want %q", got.Name(), "default")
	}
	if err := RegisterSingleton(ctx, &testDB{dsn: "y"}); !errors.Is(err, ErrAlreadyRegistered) {
		t.Errorf("second RegisterSingleton error = %v; want ErrAlreadyRegistered", err)
	}
	if got := MustResolve[*testDB](ctx); got != db {
		t.Errorf("after a refused registration Resolve = %+v; want the first one", got)
	}
	// Types match exactly: *topicImpl was registered as testTopic.
	if _, err := Resolve[*topicImpl](ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve[*topicImpl] error = %v; want ErrNotFound", err)
	}
}

func TestRegisterNamedSingleton(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	must(t, RegisterNamedSingleton[testTopic](ctx, "orders", &topicImpl{name: "orders"}))
	must(t, RegisterNamedSingleton[testTopic](ctx, "audit", &topicImpl{name: "audit"}))
	must(t, RegisterNamedSingleton(ctx, "orders", 42)) // another type may share the name

	for _, name := range []string{"orders", "audit"} {
		got, err := ResolveNamed[testTopic](ctx, name)
		if err != nil || got.Name() != name {
			t.Errorf("ResolveNamed(%q) = %v, %v; want topic %q", name, got, err, name)
		}
	}
	if got, err := ResolveNamed[int](ctx, "orders"); err != nil || got != 42 {
		t.Errorf("ResolveNamed[int](orders) = %v, %v; want 42", got, err)
	}
	if _, err := Resolve[testTopic](ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve[testTopic] with only named ones = %v; want ErrNotFound", err)
	}
	if err := RegisterNamedSingleton(ctx, "", 1); err == nil {
		t.Error("RegisterNamedSingleton with an empty name succeeded; want an error")
	}
}

func TestRegisterTwice(t *testing.T) {
	t.Parallel()
	lazyInt := func(context.Context) (int, error) { return 1, nil }
	factory := func(context.Context, string) (int, error) { return 1, nil }
	tests := []struct {
		name          string
		first, second func(ctx context.Context) error
		wantInMessage string
	}{
		{
			name:          "singleton",
			first:         func(ctx context.Context) error { return RegisterSingleton(ctx, 1) },
			second:        func(ctx context.Context) error { return RegisterSingleton(ctx, 2) },
			wantInMessage: "int",
		},
		{
			name:          "lazy after singleton",
			first:         func(ctx context.Context) error { return RegisterSingleton(ctx, 1) },
			second:        func(ctx context.Context) error { return RegisterLazySingleton(ctx, lazyInt) },
			wantInMessage: "int",
		},
		{
			name:  "lazy with after lazy",
			first: func(ctx context.Context) error { return RegisterLazySingleton(ctx, lazyInt) },
			second: func(ctx context.Context) error {
				return RegisterLazySingletonWith(ctx, func(struct{}) (int, error) { return 1, nil })
			},
			wantInMessage: "int",
		},
		{
			name:          "named",
			first:         func(ctx context.Context) error { return RegisterNamedSingleton(ctx, "n", 1) },
			second:        func(ctx context.Context) error { return RegisterNamedSingleton(ctx, "n", 2) },
			wantInMessage: `int "n"`,
		},
		{
			name:          "factory",
			first:         func(ctx context.Context) error { return Register(ctx, factory) },
			second:        func(ctx context.Context) error { return Register(ctx, factory) },
			wantInMessage: "factory of int",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := newCtx(t)
			must(t, tt.first(ctx))
			err := tt.second(ctx)
			if !errors.Is(err, ErrAlreadyRegistered) {
				t.Fatalf("second registration error = %v; want ErrAlreadyRegistered", err)
			}
			if !strings.Contains(err.Error(), tt.wantInMessage) {
				t.Errorf("error %q does not name %q", err, tt.wantInMessage)
			}
		})
	}
}

func TestRegisterNilProvider(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	tests := []struct {
		name string
		err  error
	}{
		{"RegisterLazySingleton", RegisterLazySingleton[int](ctx, nil)},
		{"RegisterLazySingletonWith", RegisterLazySingletonWith[int, struct{}](ctx, nil)},
		{"Register", Register[int](ctx, nil)},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.name) {
			t.Errorf("%s(nil) error = %v; want an error naming %s", tt.name, tt.err, tt.name)
		}
	}
}

func TestRegisterLazySingleton(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	var calls atomic.Int32
	must(t, RegisterLazySingleton(ctx, func(context.Context) (*testDB, error) {
		calls.Add(1)
		return &testDB{dsn: "lazy"}, nil
	}))
	if n := calls.Load(); n != 0 {
		t.Fatalf("provider called %d times before any Resolve; want 0", n)
	}

	var wg sync.WaitGroup
	got := make([]*testDB, 8)
	for i := range got {
		wg.Go(func() { got[i] = MustResolve[*testDB](ctx) })
	}
	wg.Wait()
	for i, db := range got {
		if db == nil || db != got[0] {
			t.Fatalf("resolution %d = %p; want the same instance as resolution 0 (%p)", i, db, got[0])
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("provider called %d times; want 1", n)
	}
}

func TestRegisterLazySingletonRetriesAfterError(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	errDown := errors.New("database down")
	var calls atomic.Int32
	must(t, RegisterLazySingleton(ctx, func(context.Context) (*testDB, error) {
		if calls.Add(1) == 1 {
			return nil, errDown
		}
		return &testDB{}, nil
	}))

	_, err := Resolve[*testDB](ctx)
	if !errors.Is(err, errDown) {
		t.Fatalf("first Resolve error = %v; want the provider's error", err)
	}
	if want := "di: provide *di.testDB: database down"; err.Error() != want {
		t.Errorf("error = %q; want %q", err, want)
	}
	if _, err := Resolve[*testDB](ctx); err != nil {
		t.Fatalf("second Resolve error = %v; want the provider to run again and succeed", err)
	}
}

type cacheDeps struct {
	DB    *testDB   `inject:""`
	Topic testTopic `inject:"invalidations"`
	Spare testTopic `inject:"spare,optional"`
}

func TestRegisterLazySingletonWith(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	db := &testDB{}
	must(t, RegisterSingleton(ctx, db))
	must(t, RegisterNamedSingleton[testTopic](ctx, "invalidations", &topicImpl{name: "invalidations"}))
	var calls atomic.Int32
	must(t, RegisterLazySingletonWith(ctx, func(deps cacheDeps) (*testCache, error) {
		calls.Add(1)
		if deps.DB != db || deps.Topic == nil || deps.Topic.Name() != "invalidations" || deps.Spare != nil {
			return nil, fmt.Errorf("bad deps: %+v", deps)
		}
		return &testCache{db: deps.DB}, nil
	}))

	c1, err := Resolve[*testCache](ctx)
	must(t, err)
	c2 := MustResolve[*testCache](ctx)
	if c1 != c2 || c1.db != db {
		t.Errorf("Resolve twice = %p, %p with db %p; want one instance built on db %p", c1, c2, c1.db, db)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("provider called %d times; want 1", n)
	}
}

func TestRegisterLazySingletonWithMissingDependency(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	must(t, RegisterLazySingletonWith(ctx, func(cacheDeps) (*testCache, error) {
		t.Error("provider called with missing dependencies")
		return nil, nil
	}))
	_, err := Resolve[*testCache](ctx)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("error = %v; want ErrNotFound", err)
	}
	want := "di: provide *di.testCache: di: not found: *di.testDB (field di.cacheDeps.DB)"
	if err.Error() != want {
		t.Errorf("error = %q; want %q", err, want)
	}
}

func TestRegisterLazySingletonWithInvalidDeps(t *testing.T) {
	t.Parallel()
	type badTag struct {
		DB *testDB `inject:"db,required"`
	}
	type unexported struct {
		db *testDB `inject:""`
	}
	tests := []struct {
		name     string
		register func(ctx context.Context) error
		want     string
	}{
		{"not a struct", func(ctx context.Context) error {
			return RegisterLazySingletonWith(ctx, func(*cacheDeps) (int, error) { return 0, nil })
		}, "*di.cacheDeps"},
		{"bad tag", func(ctx context.Context) error {
			return RegisterLazySingletonWith(ctx, func(badTag) (int, error) { return 0, nil })
		}, `field di.badTag.DB: inject tag "db,required": unknown option "required"`},
		{"unexported field", func(ctx context.Context) error {
			return RegisterLazySingletonWith(ctx, func(unexported) (int, error) { return 0, nil })
		}, "field di.unexported.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.register(newCtx(t))
			if !errors.Is(err, ErrInvalidTarget) {
				t.Fatalf("error = %v; want ErrInvalidTarget", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestRegisterFactory(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	var calls atomic.Int32
	must(t, Register(ctx, func(_ context.Context, name string) (testTopic, error) {
		calls.Add(1)
		return &topicImpl{name: name}, nil
	}))
	explicit := &topicImpl{name: "explicit"}
	must(t, RegisterNamedSingleton[testTopic](ctx, "pinned", explicit))

	orders1 := mustNamed[testTopic](t, ctx, "orders")
	orders2 := mustNamed[testTopic](t, ctx, "orders")
	audit := mustNamed[testTopic](t, ctx, "audit")
	if orders1 != orders2 {
		t.Errorf("two requests for orders gave %p and %p; want the same instance", orders1, orders2)
	}
	if orders1.Name() != "orders" || audit.Name() != "audit" {
		t.Errorf("names = %q, %q; want the factory called with the requested name", orders1.Name(), audit.Name())
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("factory called %d times; want 2 (once per name)", n)
	}
	if got := mustNamed[testTopic](t, ctx, "pinned"); got != explicit {
		t.Errorf("pinned = %v; want the registered service, not the factory's", got)
	}
	byType, err := Resolve[testTopic](ctx)
	if err != nil || byType.Name() != "" {
		t.Errorf("Resolve by type = %v, %v; want the factory's service for the tag \"\"", byType, err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("factory called %d times; want 3 (the by-type request asked it for \"\")", n)
	}
}

func TestRegisterFactoryError(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	errBad := errors.New("no such topic")
	var calls atomic.Int32
	must(t, Register(ctx, func(_ context.Context, name string) (testTopic, error) {
		if calls.Add(1) == 1 {
			return nil, errBad
		}
		return &topicImpl{name: name}, nil
	}))
	_, err := ResolveNamed[testTopic](ctx, "orders")
	if !errors.Is(err, errBad) {
		t.Fatalf("error = %v; want the factory's error", err)
	}
	if want := `di: provide di.testTopic "orders": no such topic`; err.Error() != want {
		t.Errorf("error = %q; want %q", err, want)
	}
	if got := mustNamed[testTopic](t, ctx, "orders"); got.Name() != "orders" {
		t.Errorf("retry = %q; want orders", got.Name())
	}
}

func TestRegisterFactoryConcurrent(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	calls := map[string]*atomic.Int32{"a": {}, "b": {}, "c": {}}
	must(t, Register(ctx, func(_ context.Context, name string) (testTopic, error) {
		calls[name].Add(1)
		return &topicImpl{name: name}, nil
	}))

	// Many goroutines ask for each new name at once, through ResolveNamed
	// ("a", "b") and through Fill ("c").
	const perName = 16
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string][]testTopic{}
	for name := range calls {
		for range perName {
			wg.Go(func() {
				<-start
				var tp testTopic
				var err error
				if name == "c" {
					var f struct {
						T testTopic `inject:"c"`
					}
					err = Fill(ctx, &f)
					tp = f.T
				} else {
					tp, err = ResolveNamed[testTopic](ctx, name)
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[name] = append(got[name], tp)
				mu.Unlock()
			})
		}
	}
	close(start)
	wg.Wait()

	for name, n := range calls {
		if c := n.Load(); c != 1 {
			t.Errorf("factory called %d times for %q; want 1", c, name)
		}
		if len(got[name]) != perName {
			t.Errorf("%q: %d successful requests; want %d", name, len(got[name]), perName)
		}
		for i, tp := range got[name] {
			if tp != got[name][0] || tp.Name() != name {
				t.Errorf("%q request %d got %p (%s); want the single instance %p", name, i, tp, tp.Name(), got[name][0])
			}
		}
	}
}

func mustNamed[T any](t *testing.T, ctx context.Context, name string) T {
	t.Helper()
	v, err := ResolveNamed[T](ctx, name)
	must(t, err)
	return v
}
