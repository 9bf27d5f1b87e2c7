package di

import (
	"context"
	"fmt"
	"io"
	"reflect"

	"github.com/samber/do/v2"
)

// RegisterSingleton registers v as the service of type T. The value is
// already built (eager): every Resolve[T] returns v.
//
// The injector owns v from then on: if v implements one of do's shutdown
// interfaces (Shutdown(), Shutdown() error, Shutdown(ctx), Shutdown(ctx)
// error) it is shut down by Shutdown; otherwise, if it implements
// io.Closer, it is closed by Shutdown. To register a value that the caller
// keeps and stops itself, use RegisterBorrowed.
//
// Registering a second service of type T returns ErrAlreadyRegistered.
func RegisterSingleton[T any](ctx context.Context, v T) error {
	return registerValue(ctx, "RegisterSingleton", "", v, false)
}

// RegisterBorrowed registers v, a value the caller owns and stops itself,
// as the service of type T: every Resolve[T] returns v, and Shutdown never
// shuts it down nor closes it. Use it for what outlives the injector or is
// shared with others, such as a *bun.DB that several injectors or PubSubs
// use; RegisterSingleton hands v over to the injector instead.
//
// Registering a second service of type T returns ErrAlreadyRegistered.
func RegisterBorrowed[T any](ctx context.Context, v T) error {
	return registerValue(ctx, "RegisterBorrowed", "", v, true)
}

// RegisterNamedSingleton registers v as the service of type T named name,
// served to ResolveNamed[T](ctx, name) and to fields of type T tagged
// `inject:"name"`. Services of different types may share a name. The name
// must not be empty.
//
// Registering a second service of type T under the same name returns
// ErrAlreadyRegistered. Shutdown handles v as in RegisterSingleton.
func RegisterNamedSingleton[T any](ctx context.Context, name string, v T) error {
	const op = "RegisterNamedSingleton"
	if _, err := from(ctx, op); err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("di: %s: empty name", op)
	}
	return registerValue(ctx, op, name, v, false)
}

// RegisterLazySingleton registers p as the provider of the service of type
// T. p runs once, on the first resolution of T, and its result is what every
// resolution gets. After an error, the next resolution calls p again.
//
// p receives ctx, the context given to RegisterLazySingleton, carrying the
// injector of the provider: p must resolve its dependencies through that
// context (di.Resolve(ctx), di.Fill(ctx, ...)), not through an outer one, so
// that the dependency is recorded (Shutdown stops the service before its
// dependencies) and a cycle is reported as ErrCycle instead of blocking.
func RegisterLazySingleton[T any](ctx context.Context, p func(ctx context.Context) (T, error)) error {
	const op = "RegisterLazySingleton"
	b, err := from(ctx, op)
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("di: %s: nil provider", op)
	}
	key, svc := newService[T]("")
	return provideLazy(b.st, key, svc, ctx, p)
}

// RegisterLazySingletonWith registers p as the provider of the service of
// type T, like RegisterLazySingleton, with its dependencies declared as a
// struct: W must be a struct type whose fields carry inject tags (see Fill).
// On the first resolution of T, a W is filled through the provider's injector
// and handed to p; p runs once.
//
// A W that Fill cannot fill (not a struct, a malformed tag, an unexported
// tagged field) is reported now, as ErrInvalidTarget. Missing dependencies
// are reported on resolution of T.
func RegisterLazySingletonWith[T, W any](ctx context.Context, p func(deps W) (T, error)) error {
	const op = "RegisterLazySingletonWith"
	b, err := from(ctx, op)
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("di: %s: nil provider", op)
	}
	wt := reflect.TypeFor[W]()
	if wt.Kind() != reflect.Struct {
		return errInvalid("%s: dependencies must be a struct, got %s", op, wt)
	}
	pl := planFor(wt)
	if pl.err != nil {
		return pl.err
	}
	key, svc := newService[T]("")
	return provideLazy(b.st, key, svc, ctx, func(pctx context.Context) (T, error) {
		var deps W
		pb, _ := from(pctx, op) // pctx always carries the provider's binding
		if err := pb.fill(reflect.ValueOf(&deps).Elem(), pl); err != nil {
			var zero T
			return zero, err
		}
		return p(deps)
	})
}

// Register registers factory as the named factory of type T. When a T is
// requested under a name N (ResolveNamed[T](ctx, N), or a field of type T
// tagged `inject:"N"`) and no service of type T is registered under N, the
// factory is called with N and its result becomes a real lazy singleton
// named N: it is built once (two goroutines asking for a new name at once get
// the same instance), later requests for N get it, and Shutdown stops it
// like any other service. A factory error is returned to the caller and the
// next request for N calls the factory again.
//
// A by-type request (Resolve[T], `inject:""`) for a T with no by-type
// service goes to the factory too, with the tag "": the factory decides
// whether an unnamed T makes sense, and its error names what to do.
// Its ctx is the context given to Register carrying the injector of the
// service being built: resolve dependencies through it, as in
// RegisterLazySingleton. Registering a second factory for T returns
// ErrAlreadyRegistered.
func Register[T any](ctx context.Context, factory func(ctx context.Context, tag string) (T, error)) error {
	const op = "Register"
	b, err := from(ctx, op)
	if err != nil {
		return err
	}
	if factory == nil {
		return fmt.Errorf("di: %s: nil factory", op)
	}
	typ := reflect.TypeFor[T]()
	st := b.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, dup := st.factories[typ]; dup {
		return fmt.Errorf("%w: factory of %s", ErrAlreadyRegistered, typ)
	}
	st.factories[typ] = func(st *state, name string) *service {
		key, svc := newService[T](name)
		st.addLocked(key, svc)
		do.ProvideNamed(st.root, svc.doName, lazyProvider(st, svc, ctx, func(pctx context.Context) (T, error) {
			return factory(pctx, name)
		}))
		return svc
	}
	return nil
}

// registerValue registers the eager value v of type T under name: owned
// by the injector, or borrowed (never shut down nor closed).
func registerValue[T any](ctx context.Context, op, name string, v T, borrowed bool) error {
	b, err := from(ctx, op)
	if err != nil {
		return err
	}
	key, svc := newService[T](name)
	st := b.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, dup := st.services[key]; dup {
		return fmt.Errorf("%w: %s", ErrAlreadyRegistered, svc.display)
	}
	st.addLocked(key, svc)
	if borrowed {
		// A transient service is never shut down by do: it keeps no instance.
		do.ProvideNamedTransient(st.root, svc.doName, func(do.Injector) (T, error) { return v, nil })
		svc.value, svc.built = v, true
		return nil
	}
	do.ProvideNamedValue(st.root, svc.doName, v)
	st.builtLocked(svc, v)
	return nil
}

// provideLazy registers the lazy provider p of svc.
func provideLazy[T any](st *state, key serviceKey, svc *service, regCtx context.Context, p func(context.Context) (T, error)) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, dup := st.services[key]; dup {
		return fmt.Errorf("%w: %s", ErrAlreadyRegistered, svc.display)
	}
	st.addLocked(key, svc)
	do.ProvideNamed(st.root, svc.doName, lazyProvider(st, svc, regCtx, p))
	return nil
}

// lazyProvider adapts p to a do provider: p gets regCtx carrying the
// injector do hands to the provider, and the built value is recorded (see
// builtLocked). Errors are returned as they are: the caller that triggered
// the build wraps them with the service name.
func lazyProvider[T any](st *state, svc *service, regCtx context.Context, p func(context.Context) (T, error)) do.Provider[T] {
	return func(inj do.Injector) (T, error) {
		v, err := p(st.withInjector(regCtx, inj))
		if err != nil {
			return v, err
		}
		st.mu.Lock()
		st.builtLocked(svc, v)
		st.mu.Unlock()
		return v, nil
	}
}

// builtLocked records that svc's instance is v, and remembers v for Shutdown
// if it is an io.Closer that do would not shut down itself. Called with mu
// held.
func (st *state) builtLocked(svc *service, v any) {
	svc.value, svc.built = v, true
	st.trackCloserLocked(svc.doName, v)
}

// addLocked records svc under key. Called with mu held, key absent.
func (st *state) addLocked(key serviceKey, svc *service) {
	st.services[key] = svc
	st.byDoName[svc.doName] = svc
}

// trackCloserLocked remembers v for Shutdown if it has a Close method (an
// io.Closer, or a Close without result, as *nats.Conn's) and do would not
// shut it down itself. Called with mu held.
func (st *state) trackCloserLocked(doName string, v any) {
	var c io.Closer
	switch v := v.(type) {
	case io.Closer:
		c = v
	case interface{ Close() }:
		c = voidCloser{v}
	}
	if c == nil || isShutdowner(v) {
		return
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return
	}
	st.closers[doName] = c
}

// voidCloser is a value whose Close has no result, as an io.Closer
// (comparable when the value is, so Shutdown closes it once).
type voidCloser struct{ v interface{ Close() } }

func (c voidCloser) Close() error { c.v.Close(); return nil }

// isShutdowner reports whether do shuts v down itself.
func isShutdowner(v any) bool {
	switch v.(type) {
	case do.Shutdowner, do.ShutdownerWithError, do.ShutdownerWithContext, do.ShutdownerWithContextAndError:
		return true
	}
	return false
}
