package di_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/conveyorgo/conveyor/di"
)

type Config struct{ DSN string }

// Store has a Shutdown method: di.Shutdown calls it, after stopping
// everything that depends on the store.
type Store struct{ dsn string }

func (s *Store) Shutdown() error {
	fmt.Println("store stopped")
	return nil
}

// Queue is what the named factory builds, one per name.
type Queue interface{ Name() string }

type queue struct{ name string }

func (q *queue) Name() string { return q.name }

// Close makes a queue an io.Closer: di.Shutdown closes it.
func (q *queue) Close() error {
	fmt.Println("queue", q.name, "closed")
	return nil
}

type OrdersHandler struct {
	Queue Queue  `inject:"orders"`
	Store *Store `inject:""`
}

func Example() {
	ctx := di.NewContext(context.Background())

	_ = di.RegisterSingleton(ctx, Config{DSN: "postgres://localhost/app"})
	_ = di.RegisterLazySingleton(ctx, func(ctx context.Context) (*Store, error) {
		cfg, err := di.Resolve[Config](ctx) // the provider's ctx, not the outer one
		if err != nil {
			return nil, err
		}
		return &Store{dsn: cfg.DSN}, nil
	})
	_ = di.Register(ctx, func(ctx context.Context, name string) (Queue, error) {
		if _, err := di.Resolve[*Store](ctx); err != nil { // queues live in the store
			return nil, err
		}
		return &queue{name: name}, nil
	})

	var h OrdersHandler
	if err := di.Fill(ctx, &h); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("queue:", h.Queue.Name())
	fmt.Println("store:", h.Store.dsn)

	// The queue depends on the store: it is closed first.
	if err := di.Shutdown(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// queue: orders
	// store: postgres://localhost/app
	// queue orders closed
	// store stopped
}

type Mailer struct{ from string }

type Notifier struct {
	Mail struct { // nested struct: its tagged fields are filled
		Sender *Mailer `inject:""`
	}
	Audit *Mailer `inject:"audit,optional"` // left alone: nothing provides it
	Retry int     // no tag: left alone
}

func ExampleFill() {
	ctx := di.NewContext(context.Background())
	defer di.Shutdown(ctx)

	n := Notifier{Retry: 3}
	err := di.Fill(ctx, &n)
	fmt.Println(errors.Is(err, di.ErrNotFound))
	fmt.Println(err)

	_ = di.RegisterSingleton(ctx, &Mailer{from: "noreply@example.com"})
	err = di.Fill(ctx, &n)
	fmt.Println(err, n.Mail.Sender.from, n.Audit == nil, n.Retry)
	// Output:
	// true
	// di: not found: *di_test.Mailer (field di_test.Notifier.Mail.Sender)
	// <nil> noreply@example.com true 3
}

func ExampleRegister() {
	ctx := di.NewContext(context.Background())
	defer di.Shutdown(ctx)

	built := 0
	_ = di.Register(ctx, func(_ context.Context, name string) (*Mailer, error) {
		built++
		return &Mailer{from: name + "@example.com"}, nil
	})

	a, _ := di.ResolveNamed[*Mailer](ctx, "billing")
	b, _ := di.ResolveNamed[*Mailer](ctx, "billing")
	c, _ := di.ResolveNamed[*Mailer](ctx, "support")
	fmt.Println(a == b, a.from, c.from, "built:", built)
	// Output:
	// true billing@example.com support@example.com built: 2
}

func ExampleRegisterLazySingletonWith() {
	ctx := di.NewContext(context.Background())
	defer di.Shutdown(ctx)
	_ = di.RegisterSingleton(ctx, Config{DSN: "postgres://db/app"})

	type deps struct {
		Config Config `inject:""`
	}
	_ = di.RegisterLazySingletonWith(ctx, func(d deps) (*Mailer, error) {
		return &Mailer{from: d.Config.DSN}, nil
	})

	fmt.Println(di.MustResolve[*Mailer](ctx).from)
	// Output:
	// postgres://db/app
}

type A struct{}
type B struct{}

func ExampleResolve_cycle() {
	ctx := di.NewContext(context.Background())
	defer di.Shutdown(ctx)
	_ = di.RegisterLazySingleton(ctx, func(ctx context.Context) (*A, error) {
		_, err := di.Resolve[*B](ctx)
		return &A{}, err
	})
	_ = di.RegisterLazySingleton(ctx, func(ctx context.Context) (*B, error) {
		_, err := di.Resolve[*A](ctx)
		return &B{}, err
	})

	_, err := di.Resolve[*A](ctx)
	fmt.Println(errors.Is(err, di.ErrCycle))
	fmt.Println(err)
	// Output:
	// true
	// di: dependency cycle: *di_test.A -> *di_test.B -> *di_test.A
}

func ExampleParseTag() {
	for _, tag := range []string{"", "orders", "orders,optional", ",optional", "orders,required"} {
		name, optional, err := di.ParseTag(tag)
		fmt.Printf("%q: name=%q optional=%v err=%v\n", tag, name, optional, err)
	}
	// Output:
	// "": name="" optional=false err=<nil>
	// "orders": name="orders" optional=false err=<nil>
	// "orders,optional": name="orders" optional=true err=<nil>
	// ",optional": name="" optional=true err=<nil>
	// "orders,required": name="" optional=false err=di: invalid target: inject tag "orders,required": unknown option "required"
}
