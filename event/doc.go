// Package event is conveyor's typed events: Go values with a stable type
// name, sent over a pubsub.Topic as CloudEvents JSON, and consumed by
// services that route each event to the listeners of its type. It works the
// same on every backend (channelpubsub, dbpubsub) and never knows which one
// runs.
//
// # Events
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
// The name, not the Go type, routes events: renaming the struct changes
// nothing on the wire. On the wire an event is a CloudEvents 1.0 event in
// the structured JSON format (specversion, id, source, type, time,
// datacontenttype, data; see Envelope), readable by people and by services
// in other languages. Each dispatched event gets a fresh random id (a
// version 4 UUID); listeners read it, with the type, source, time, topic
// and attempt number, from Meta(ctx).
//
// # Wiring
//
//	ctx := di.NewContext(context.Background())
//	channelpubsub.Register(ctx) // or dbpubsub.Register(ctx)
//	event.Register(ctx)         // dispatchers injectable by topic name
//	di.RegisterSingleton(ctx, mailer)
//
//	// Consume: a service per topic, with typed listeners.
//	svc, err := event.NewService("orders", event.ServiceOptions{Workers: 8})
//	event.Listen(svc, &SendConfirmation{}) // a struct: its inject fields are filled at start
//	event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error { ... })
//	go svc.Run(ctx) // until ctx ends; di.Shutdown(ctx) stops it too
//
//	// Dispatch: a Dispatcher injected by topic name.
//	type Checkout struct {
//		Events event.Dispatcher `inject:"orders"`
//	}
//	err = checkout.Events.Dispatch(ctx, OrderPlaced{ID: 42})
//
// A Dispatcher also dispatches batches (DispatchBatch), delayed events
// (DispatchAt) and unique ones (DispatchUnique), with the topic's optional
// abilities (pubsub.EnqueueBatch, EnqueueAt, EnqueueUnique) or
// pubsub.ErrUnsupported. It passes ctx to the backend unchanged, which is
// how an event is dispatched in your own database transaction, so that it
// exists exactly when your writes commit (dbpubsub):
//
//	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		// ... your writes on tx ...
//		return checkout.Events.Dispatch(dbpubsub.WithTx(ctx, tx), OrderPlaced{ID: 42})
//	})
//
// Encode and Topic.Enqueue with the same ctx do the same by hand. On a
// backend that cannot write in the transaction (channelpubsub), Dispatch
// returns an error wrapping pubsub.ErrUnsupported.
//
// # Handling and outcomes
//
// A Service dequeues each message of its topic, decodes it, and calls the
// listeners of its type in the order they were registered, stopping at the
// first error. Then it settles the message:
//
//   - every listener succeeded: Ack;
//   - a listener returned an error: pubsub.Fail, which keeps the reason and
//     retries the message after the backend's backoff (pubsub.RetryPolicy)
//     until its attempts run out and it is dead (kept, listed and
//     re-queueable: pubsub.ListDead, RequeueDead);
//   - a listener returned an error marked Permanent: pubsub.Reject, dead at
//     once with the reason, no retries;
//   - a listener panicked: the panic is recovered, logged with its stack,
//     and handled as an error (retried);
//   - the message is not an event (ErrMalformed), its data does not decode
//     into a listener's type (ErrMalformed), or no listener knows its type
//     (ErrUnknownType): Reject, with the reason kept. Such a message never
//     loops and is never silently acked.
//
// Delivery is at least once: a listener may see an event again, after a
// failure (its own or a sibling listener's: all the listeners of a type
// run again), a crash, or a lease that ran out. Listeners must be
// idempotent: key their effects on Meta(ctx).ID, the same on every
// delivery. Listeners that must be retried independently belong on
// separate topics.
//
// Middleware (func(Handler) Handler, in ServiceOptions.Middleware) wraps the
// handling of each event: the Service adds Logging (slog, with the event's
// id, type and attempt) outermost, then the given middleware, then Timeout
// (ServiceOptions.HandlerTimeout) and Recover innermost. Observe is the
// hook for metrics.
//
// # Lifecycle
//
// Start resolves a Service's dependencies from the injector once (its
// topic and its listeners' inject fields): nothing is looked up per event.
// It registers the Service in the injector, which records that the Service
// depends on its topic and its listeners' dependencies: di.Shutdown stops
// the Service before them. Run (or Start) consumes with
// ServiceOptions.Workers goroutines until ctx ends or Shutdown is called;
// then the Service stops dequeuing, lets the events in hand finish within
// ServiceOptions.DrainTimeout, then cancels their ctx; those that did not
// succeed are failed and come back later. Nothing is lost: an event is
// acked only after its listeners succeeded, and one whose settle never
// happened (a crash) comes back when its lease runs out.
//
// # Periodic events
//
// A Scheduler dispatches an event on each tick of a Schedule: Every(d),
// aligned to multiples of d, or a five-field cron expression (ParseCron).
// Several processes may run the same Scheduler on one database: each tick
// is dispatched once, through DispatchUnique with a key made of the
// schedule's name and the tick's time (TickKey), falling back to Dispatch
// on backends that cannot enqueue uniquely (in-process ones).
//
// # Errors
//
// Errors wrap the sentinels of this package (ErrInvalidEvent, ErrMalformed,
// ErrUnknownType, ErrPermanent, ErrPanic, ErrInvalidListener, ErrStarted,
// ErrInvalidSchedule) or those of packages pubsub and di, with context:
// match them with errors.Is.
package event
