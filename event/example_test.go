package event_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/pubsub"
)

// UserSignedUp is an event. Its type name is part of the wire form; it
// never changes when the struct is renamed.
type UserSignedUp struct {
	Email string `json:"email"`
}

func (UserSignedUp) Type() event.EventType { return "com.example.user.signed_up" }

// Postman is a dependency of a listener.
type Postman struct {
	From string
	sent chan struct{}
}

func (p *Postman) Send(to, text string) {
	fmt.Printf("mail from %s to %s: %s\n", p.From, to, text)
	close(p.sent)
}

// SendWelcome is a listener: its Postman is injected when the service
// starts.
type SendWelcome struct {
	Postman *Postman `inject:""`
}

func (h *SendWelcome) Handle(ctx context.Context, e UserSignedUp) error {
	meta, _ := event.Meta(ctx) // meta.ID identifies the event: the key for idempotency
	fmt.Printf("%s, attempt %d\n", meta.Type, meta.Attempt)
	h.Postman.Send(e.Email, "Welcome!")
	return nil
}

// Signup dispatches events over the topic "users".
type Signup struct {
	Events event.Dispatcher `inject:"users"`
}

func Example() {
	ctx := di.NewContext(context.Background())
	_ = channelpubsub.Register(ctx) // or dbpubsub.Register(ctx): the one-line swap
	_ = event.Register(ctx)
	postman := &Postman{From: "hello@example.com", sent: make(chan struct{})}
	_ = di.RegisterSingleton(ctx, postman)

	// The consumer: a service on the topic "users" with one listener.
	svc, _ := event.NewService("users", event.ServiceOptions{Workers: 4})
	_ = event.Listen(svc, &SendWelcome{})
	if err := svc.Start(ctx); err != nil { // or go svc.Run(ctx)
		fmt.Println(err)
		return
	}

	// The producer: a dispatcher injected by topic name.
	var signup Signup
	if err := di.Fill(ctx, &signup); err != nil {
		fmt.Println(err)
		return
	}
	if err := signup.Events.Dispatch(ctx, UserSignedUp{Email: "ann@example.com"}); err != nil {
		fmt.Println(err)
		return
	}

	<-postman.sent
	// Shutdown stops the service first (the events in hand finish), then
	// the topics and the backend.
	if err := di.Shutdown(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// com.example.user.signed_up, attempt 1
	// mail from hello@example.com to ann@example.com: Welcome!
}

func ExampleEncode() {
	b, err := event.Encode(UserSignedUp{Email: "ann@example.com"},
		event.WithID("0b9e6f3c-2f1d-4c55-9a57-3c4f7c1c2b9a"),
		event.WithSource("/signup"),
		event.WithTime(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(b))

	env, err := event.Decode(b)
	fmt.Println(env.Type, string(env.Data), err)
	// Output:
	// {"specversion":"1.0","id":"0b9e6f3c-2f1d-4c55-9a57-3c4f7c1c2b9a","source":"/signup","type":"com.example.user.signed_up","time":"2026-01-02T15:04:05Z","datacontenttype":"application/json","data":{"email":"ann@example.com"}}
	// com.example.user.signed_up {"email":"ann@example.com"} <nil>
}

func ExampleListenFunc() {
	ctx := di.NewContext(context.Background())
	defer di.Shutdown(ctx)
	_ = channelpubsub.Register(ctx)
	_ = event.Register(ctx)

	done := make(chan struct{})
	svc, _ := event.NewService("users", event.ServiceOptions{})
	_ = event.ListenFunc(svc, func(ctx context.Context, e UserSignedUp) error {
		fmt.Println("signed up:", e.Email)
		close(done)
		return nil
	})
	_ = svc.Start(ctx)

	d, _ := di.ResolveNamed[event.Dispatcher](ctx, "users")
	_ = d.Dispatch(ctx, UserSignedUp{Email: "bob@example.com"})
	<-done
	// Output:
	// signed up: bob@example.com
}

// Two Services on two subscriptions of one topic: each gets every event.
func ExampleServiceOptions_subscription() {
	ctx := di.NewContext(context.Background())
	defer di.Shutdown(ctx)
	_ = channelpubsub.Register(ctx) // or dbpubsub.Register(ctx)
	_ = event.Register(ctx)

	got := make(chan string, 2)
	for _, sub := range []string{"welcome", "analytics"} {
		svc, _ := event.NewService("users", event.ServiceOptions{Subscription: sub})
		_ = event.ListenFunc(svc, func(ctx context.Context, e UserSignedUp) error {
			meta, _ := event.Meta(ctx)
			got <- fmt.Sprintf("%s: %s", meta.Subscription, e.Email)
			return nil
		})
		if err := svc.Start(ctx); err != nil { // subscribes, before the events it must see
			fmt.Println(err)
			return
		}
	}

	d, _ := di.ResolveNamed[event.Dispatcher](ctx, "users")
	_ = d.Dispatch(ctx, UserSignedUp{Email: "ann@example.com"})
	lines := []string{<-got, <-got}
	slices.Sort(lines)
	fmt.Println(lines)
	// Output:
	// [analytics: ann@example.com welcome: ann@example.com]
}

// A listener claims the event before its effect: when a sibling listener
// fails and the event comes back, the effect is not made again.
func ExampleClaim() {
	ctx := di.NewContext(context.Background())
	defer di.Shutdown(ctx)
	_ = channelpubsub.RegisterWithOptions(ctx, channelpubsub.Options{
		Retry: pubsub.RetryPolicy{MinBackoff: 10 * time.Millisecond},
	})
	_ = event.Register(ctx)

	done := make(chan struct{})
	svc, _ := event.NewService("users", event.ServiceOptions{Logger: slog.New(slog.DiscardHandler)})
	_ = event.ListenFunc(svc, func(ctx context.Context, e UserSignedUp) error {
		meta, _ := event.Meta(ctx)
		first, err := event.Claim(ctx, nil) // on a database: its transaction, with the effect
		switch {
		case err != nil:
			return err
		case first:
			fmt.Printf("attempt %d: credit %s\n", meta.Attempt, e.Email)
		default:
			fmt.Printf("attempt %d: credited before\n", meta.Attempt)
		}
		return nil
	})
	_ = event.ListenFunc(svc, func(ctx context.Context, e UserSignedUp) error {
		if meta, _ := event.Meta(ctx); meta.Attempt == 1 {
			return errors.New("the mail server is down") // the event comes back
		}
		close(done)
		return nil
	})
	_ = svc.Start(ctx)

	d, _ := di.ResolveNamed[event.Dispatcher](ctx, "users")
	_ = d.Dispatch(ctx, UserSignedUp{Email: "ann@example.com"})
	<-done
	// Output:
	// attempt 1: credit ann@example.com
	// attempt 2: credited before
}

func ExampleParseCron() {
	s, err := event.ParseCron("0 9 * * MON-FRI") // 09:00 UTC on weekdays
	if err != nil {
		fmt.Println(err)
		return
	}
	friday := time.Date(2026, 2, 27, 9, 0, 0, 0, time.UTC)
	fmt.Println(s.Next(friday))
	fmt.Println(event.Every(time.Hour).Next(friday.Add(90 * time.Second)))
	// Output:
	// 2026-03-02 09:00:00 +0000 UTC
	// 2026-02-27 10:00:00 +0000 UTC
}

func ExamplePermanent() {
	err := event.Permanent(fmt.Errorf("order %d does not exist", 42))
	fmt.Println(err, event.IsPermanent(err))
	wrapped := fmt.Errorf("send confirmation: %w", err)
	fmt.Println(event.IsPermanent(wrapped), event.IsPermanent(fmt.Errorf("timeout")))
	// Output:
	// order 42 does not exist true
	// true false
}
