// Package di is conveyor's dependency injection: an injector that travels in
// a context.Context, filled with services at wiring time and read by
// handlers through struct tags. It is built on github.com/samber/do/v2 and is
// the only package of the module that imports it; no do type appears in its
// API.
//
//	ctx := di.NewContext(context.Background())
//	_ = di.RegisterSingleton(ctx, cfg) // a value, by type; the injector owns it
//	_ = di.RegisterBorrowed(ctx, db)   // a value the caller keeps and closes
//	_ = di.Register(ctx, func(ctx context.Context, name string) (pubsub.Topic, error) {
//		ps, err := di.Resolve[pubsub.PubSub](ctx) // through the provider's ctx
//		if err != nil {
//			return nil, err
//		}
//		return ps.Topic(name), nil // one topic per name, on demand
//	})
//	var h struct {
//		DB     *bun.DB      `inject:""`
//		Orders pubsub.Topic `inject:"orders"`
//		Audit  pubsub.Topic `inject:"audit,optional"`
//	}
//	err := di.Fill(ctx, &h)
//	defer di.Shutdown(ctx)
//
// # Model
//
// Every service is a singleton identified by its exact Go type and an
// optional name: a value (RegisterSingleton, RegisterNamedSingleton,
// RegisterBorrowed), a provider run once on first use
// (RegisterLazySingleton, RegisterLazySingletonWith), or one made on demand
// per name by a factory (Register). A provider resolves its dependencies
// through the ctx it is given, so that the dependency is recorded and a
// cycle is reported as ErrCycle.
//
// # Guarantees
//
//   - No global state: each NewContext has its own injector.
//   - All functions are safe for concurrent use; a service is built once
//     even when first requested by many goroutines at once.
//   - Errors are short and matchable: ErrNoInjector, ErrNotFound (naming the
//     type, the tag name and the field path), ErrCycle, ErrInvalidTarget,
//     ErrAlreadyRegistered, and a provider's error wrapped with the
//     service's name.
//   - Fill is all or nothing. Resolve at wiring time, not per message.
//   - Shutdown stops the services the injector owns in reverse dependency
//     order (through do's shutdown interfaces, or Close, with or without an
//     error result), reports every
//     failure, and leaves borrowed values alone.
//
// More (naming inside do, providers, cost, limits): docs/di.md.
package di
