package di

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestNewContextIsolated(t *testing.T) {
	t.Parallel()
	ctx1, ctx2 := newCtx(t), newCtx(t)
	must(t, RegisterSingleton(ctx1, 1))

	if got, err := Resolve[int](ctx1); err != nil || got != 1 {
		t.Fatalf("Resolve in ctx1 = %v, %v; want 1, nil", got, err)
	}
	if _, err := Resolve[int](ctx2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve in ctx2 = %v; want ErrNotFound: injectors must not share services", err)
	}
	// A nested NewContext shadows the parent's injector.
	inner := NewContext(ctx1)
	t.Cleanup(func() { _ = Shutdown(inner) })
	if _, err := Resolve[int](inner); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve in NewContext(ctx1) = %v; want ErrNotFound", err)
	}
}

func TestMissingInjector(t *testing.T) {
	t.Parallel()
	noop := func(context.Context) (int, error) { return 0, nil }
	tests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"RegisterSingleton", func(ctx context.Context) error { return RegisterSingleton(ctx, 1) }},
		{"RegisterNamedSingleton", func(ctx context.Context) error { return RegisterNamedSingleton(ctx, "n", 1) }},
		{"RegisterLazySingleton", func(ctx context.Context) error { return RegisterLazySingleton(ctx, noop) }},
		{"RegisterLazySingletonWith", func(ctx context.Context) error {
			return RegisterLazySingletonWith(ctx, func(struct{}) (int, error) { return 0, nil })
		}},
		{"Register", func(ctx context.Context) error {
			return Register(ctx, func(context.Context, string) (int, error) { return 0, nil })
		}},
		{"Resolve", func(ctx context.Context) error { _, err := Resolve[int](ctx); return err }},
		{"ResolveNamed", func(ctx context.Context) error { _, err := ResolveNamed[int](ctx, "n"); return err }},
		{"Fill", func(ctx context.Context) error { return Fill(ctx, &struct{}{}) }},
		{"Shutdown", Shutdown},
		{"MustResolve", func(ctx context.Context) (err error) {
			defer func() { err, _ = recover().(error) }()
			MustResolve[int](ctx)
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, ctx := range []context.Context{context.Background(), nil} {
				err := tt.call(ctx)
				if !errors.Is(err, ErrNoInjector) {
					t.Fatalf("error = %v; want ErrNoInjector", err)
				}
				if !strings.Contains(err.Error(), "di.NewContext") {
					t.Errorf("error %q does not tell to call di.NewContext", err)
				}
			}
		})
	}
}
