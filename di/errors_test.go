package di

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type cycA struct{}
type cycB struct{}
type cycC struct{}

type cycDepsA struct {
	B *cycB `inject:""`
}
type cycDepsB struct {
	A *cycA `inject:""`
}

func TestCycle(t *testing.T) {
	t.Parallel()
	provideA := func(dep func(ctx context.Context) error) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			return RegisterLazySingleton(ctx, func(ctx context.Context) (*cycA, error) { return &cycA{}, dep(ctx) })
		}
	}
	needB := func(ctx context.Context) error { _, err := Resolve[*cycB](ctx); return err }
	needA := func(ctx context.Context) error { _, err := Resolve[*cycA](ctx); return err }
	tests := []struct {
		name      string
		register  []func(ctx context.Context) error
		resolve   func(ctx context.Context) error
		wantChain string
	}{
		{
			name:      "self",
			register:  []func(ctx context.Context) error{provideA(needA)},
			resolve:   needA,
			wantChain: "*di.cycA -> *di.cycA",
		},
		{
			name: "two services",
			register: []func(ctx context.Context) error{
				provideA(needB),
				func(ctx context.Context) error {
					return RegisterLazySingleton(ctx, func(ctx context.Context) (*cycB, error) { return &cycB{}, needA(ctx) })
				},
			},
			resolve:   needA,
			wantChain: "*di.cycA -> *di.cycB -> *di.cycA",
		},
		{
			name: "three services through Fill",
			register: []func(ctx context.Context) error{
				provideA(needB),
				func(ctx context.Context) error {
					return RegisterLazySingleton(ctx, func(ctx context.Context) (*cycB, error) {
						var deps struct {
							C *cycC `inject:""`
						}
						return &cycB{}, Fill(ctx, &deps)
					})
				},
				func(ctx context.Context) error {
					return RegisterLazySingleton(ctx, func(ctx context.Context) (*cycC, error) { return &cycC{}, needA(ctx) })
				},
			},
			resolve:   needB,
			wantChain: "*di.cycB -> *di.cycC -> *di.cycA -> *di.cycB",
		},
		{
			name: "lazy singletons with deps structs",
			register: []func(ctx context.Context) error{
				func(ctx context.Context) error {
					return RegisterLazySingletonWith(ctx, func(cycDepsA) (*cycA, error) { return &cycA{}, nil })
				},
				func(ctx context.Context) error {
					return RegisterLazySingletonWith(ctx, func(cycDepsB) (*cycB, error) { return &cycB{}, nil })
				},
			},
			resolve:   needA,
			wantChain: "*di.cycA -> *di.cycB -> *di.cycA",
		},
		{
			name: "named factory",
			register: []func(ctx context.Context) error{
				func(ctx context.Context) error {
					return Register(ctx, func(ctx context.Context, name string) (testTopic, error) {
						if name == "dead-letter" {
							_, err := ResolveNamed[testTopic](ctx, "orders")
							return nil, err
						}
						_, err := ResolveNamed[testTopic](ctx, "dead-letter")
						return nil, err
					})
				},
			},
			resolve: func(ctx context.Context) error {
				_, err := ResolveNamed[testTopic](ctx, "orders")
				return err
			},
			wantChain: `di.testTopic "orders" -> di.testTopic "dead-letter" -> di.testTopic "orders"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := newCtx(t)
			for _, register := range tt.register {
				must(t, register(ctx))
			}
			var err error
			within(t, func() { err = tt.resolve(ctx) })
			if !errors.Is(err, ErrCycle) {
				t.Fatalf("error = %v; want ErrCycle", err)
			}
			if want := "di: dependency cycle: " + tt.wantChain; err.Error() != want {
				t.Errorf("error = %q; want %q", err, want)
			}
		})
	}
}

func TestErrorsAreShort(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		must(t, RegisterNamedSingleton(ctx, name, &testDB{}))
	}
	must(t, RegisterLazySingleton(ctx, func(ctx context.Context) (*testCache, error) {
		_, err := ResolveNamed[*testDB](ctx, "z")
		return nil, err
	}))

	_, err1 := ResolveNamed[*testDB](ctx, "z")
	_, err2 := Resolve[*testCache](ctx)
	var h struct {
		Cache *testCache `inject:""`
	}
	err3 := Fill(ctx, &h)
	for _, err := range []error{err1, err2, err3} {
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("error = %v; want ErrNotFound", err)
		}
		msg := err.Error()
		if strings.Contains(msg, "available") || strings.Contains(msg, `"a"`) || strings.Contains(msg, "github.com") {
			t.Errorf("error %q lists services or long names", msg)
		}
		if !strings.Contains(msg, `*di.testDB "z"`) {
			t.Errorf("error %q does not name the missing service", msg)
		}
	}
	if want := `di: provide *di.testCache (field struct.Cache): di: not found: *di.testDB "z"`; err3.Error() != want {
		t.Errorf("Fill error = %q; want %q", err3, want)
	}
}

func TestSentinelsDistinct(t *testing.T) {
	t.Parallel()
	all := []error{ErrNoInjector, ErrNotFound, ErrCycle, ErrInvalidTarget, ErrAlreadyRegistered}
	for i, a := range all {
		if !strings.HasPrefix(a.Error(), "di: ") {
			t.Errorf("%q does not start with the package name", a)
		}
		for j, b := range all {
			if i != j && errors.Is(a, b) {
				t.Errorf("errors.Is(%v, %v) = true", a, b)
			}
		}
	}
}

type hinted struct{}

// A Hint for a type is said by its ErrNotFound, resolving or filling.
func TestHintOnNotFound(t *testing.T) {
	Hint[*hinted]("call hinted.Register(ctx) first")
	ctx := NewContext(context.Background())
	_, err := Resolve[*hinted](ctx)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "call hinted.Register(ctx) first") {
		t.Fatalf("Resolve: %v, want ErrNotFound with the hint", err)
	}
	var target struct {
		H *hinted `inject:""`
	}
	err = Fill(ctx, &target)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "call hinted.Register(ctx) first") {
		t.Fatalf("Fill: %v, want ErrNotFound with the hint", err)
	}
}
