// Package event is conveyor's typed events: Go values with a stable type
// name, sent over a pubsub.Topic as CloudEvents JSON, and consumed by
// services that route each event to the listeners of its type. It works the
// same on every backend (channelpubsub, dbpubsub, natspubsub) and never
// knows which one runs.
//
// An event is any Go value with a Type method returning a constant name:
//
//	type OrderPlaced struct {
//		ID    int    `json:"id"`
//		Email string `json:"email"`
//	}
//
//	func (OrderPlaced) Type() event.EventType { return "com.example.order.placed" }
//
// Wiring, consuming and dispatching:
//
//	ctx := di.NewContext(context.Background())
//	channelpubsub.Register(ctx) // or dbpubsub.Register(ctx)
//	event.Register(ctx)         // dispatchers injectable by topic name
//	svc, err := event.NewService("orders", event.ServiceOptions{Workers: 8})
//	event.Listen(svc, &SendConfirmation{}) // a struct: its inject fields are filled at start
//	event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error { ... })
//	go svc.Run(ctx) // until ctx ends; di.Shutdown(ctx) stops it too
//
//	type Checkout struct {
//		Events event.Dispatcher `inject:"orders"`
//	}
//	err = checkout.Events.Dispatch(ctx, OrderPlaced{ID: 42})
//
// A Service consumes one subscription of its topic
// (ServiceOptions.Subscription, by default pubsub.DefaultSubscription).
// Services on different subscriptions each get every event, the same
// Service run by several processes shares its subscription's events. A
// listener makes its effects once per event, redeliveries included, by
// claiming the event in its own transaction (the inbox; tx may be nil):
//
//	first, err := event.Claim(ctx, tx) // in db.RunInTx, before the writes
//	if err != nil || !first {
//		return err // an earlier delivery made them
//	}
//
// # Guarantees
//
//   - The type name routes events, not the Go type; each event has a fresh
//     id, the same on every delivery (Meta(ctx).ID).
//   - Events are CloudEvents 1.0 in the structured JSON format, read as the
//     specification says: case-sensitive attribute names, no member twice,
//     extensions kept (Envelope.Extensions), data as JSON or data_base64
//     holding JSON. Anything else is malformed (ErrMalformed), never guessed.
//   - Delivery is at least once: listeners must be idempotent, or claim
//     with Claim. A claim in the listener's transaction commits with its
//     effects; one made without is released when the listener fails, so
//     a sibling listener's failure never repeats a claimed effect.
//   - A message is acked only after every listener of its type succeeded. A
//     listener's error retries it with the backend's backoff until it is
//     dead (kept, listable, re-queueable); an error marked Permanent, a
//     malformed message, or an unknown type (unless
//     ServiceOptions.SkipUnknown) makes it dead at once with the reason kept. A panic is recovered and retried. Nothing loops
//     and nothing is silently acked.
//   - Dispatch passes ctx to the backend unchanged: with dbpubsub.WithTx the
//     event exists exactly when the caller's transaction commits; a backend
//     that cannot honour it returns pubsub.ErrUnsupported.
//   - On Shutdown a Service stops dequeuing, lets the events in hand finish
//     within ServiceOptions.DrainTimeout, and fails the rest: they come back.
//   - A Scheduler's tick is dispatched once even when several processes run
//     it on one database (DispatchUnique).
//   - Errors wrap this package's sentinels (ErrInvalidEvent, ErrMalformed,
//     ErrUnknownType, ErrPermanent, ErrPanic, ErrInvalidListener,
//     ErrStarted, ErrInvalidSchedule, ErrDuplicateService,
//     ErrOutsideListener) or those of pubsub and di: match them with
//     errors.Is.
//
// The wire format, outcomes, subscriptions, the inbox, middleware,
// lifecycle and scheduler in full: docs/event.md.
package event
