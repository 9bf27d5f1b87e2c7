// Package di is conveyor's dependency injection: an injector that travels in
// a context.Context, filled with services at wiring time and read by
// handlers through struct tags. It is built on github.com/samber/do/v2 and is
// the only package of the module that imports it; no do type appears in its
// API.
//
// # Use
//
//	ctx := di.NewContext(context.Background())
//	_ = di.RegisterSingleton(ctx, cfg)                       // a value, by type
//	_ = di.RegisterLazySingleton(ctx, func(ctx context.Context) (*sql.DB, error) {
//		cfg, err := di.Resolve[Config](ctx)                   // through the provider's ctx
//		if err != nil {
//			return nil, err
//		}
//		return sql.Open("pgx", cfg.DSN)
//	})
//	_ = di.Register(ctx, func(ctx context.Context, name string) (pubsub.Topic, error) {
//		ps, err := di.Resolve[pubsub.PubSub](ctx)
//		if err != nil {
//			return nil, err
//		}
//		return ps.Topic(name), nil                            // one topic per name, on demand
//	})
//
//	var h struct {
//		DB     *sql.DB      `inject:""`
//		Orders pubsub.Topic `inject:"orders"`
//		Audit  pubsub.Topic `inject:"audit,optional"`
//	}
//	err := di.Fill(ctx, &h)
//	...
//	defer di.Shutdown(ctx)
//
// # Services
//
// Every service is a singleton identified by its Go type and an optional
// name. A service is registered as a value (RegisterSingleton,
// RegisterNamedSingleton), as a provider run once on first use
// (RegisterLazySingleton, RegisterLazySingletonWith), or on demand by a named
// factory (Register): the first request for a T named N that nothing
// provides calls the factory of T with N and registers the result as the
// service N. Inside do, a service by type is named do.NameOf[T]() and a named
// one do.NameOf[T]()+"#"+name, so types can share a name.
//
// Types match exactly: a service registered as *Impl is not served to a
// request for an interface; register it as the interface type.
//
// # Providers
//
// A provider (or factory) receives the context given to its registration,
// carrying the injector do hands to that provider. Resolve its dependencies
// through that context, never through an outer one: that is how do records
// that the service depends on them (for the shutdown order) and reports a
// dependency cycle as ErrCycle. Resolving from a provider through the
// outer context loses the dependency and turns a cycle into a deadlock.
//
// # Guarantees
//
//   - No global state: each NewContext has its own injector; the only
//     package-level variable is an immutable per-type cache of Fill plans.
//   - All functions are safe for concurrent use. A lazy service or a named
//     factory's service is built once even when first requested by many
//     goroutines at once.
//   - Errors are short and matchable: ErrNoInjector, ErrNotFound (naming the
//     type, the tag name and the field path), ErrCycle (naming the cycle),
//     ErrInvalidTarget, ErrAlreadyRegistered, and a provider's error wrapped
//     with the service's name. do's messages (which list every service)
//     never reach the caller.
//   - Fill is all or nothing. Once the services are built, a top-level Fill
//     of five fields takes about 0.5 µs (built singletons are served from
//     di's own cache); inside a provider every field goes through do (about
//     2 µs for five). Resolve at wiring time, not per message.
//   - Shutdown stops services in reverse dependency order through do's
//     shutdown interfaces, closes the io.Closer values that have none of
//     them at the same point of the order, and reports every failure.
//
// # Limits
//
// A dependency cycle is reported when one goroutine builds it; two goroutines
// that start building the same cycle from two ends at once can block each
// other inside do. Cycles are wiring bugs: find them with a single-threaded
// test that resolves everything.
package di
