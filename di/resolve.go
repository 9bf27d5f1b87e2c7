package di

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/samber/do/v2"
)

// Resolve returns the service of type T, building it (and its dependencies)
// on first use if it was registered lazily.
//
// The type must match exactly: a service registered as *Impl is not served to
// a request for an interface it implements; register it as the interface.
// Errors: ErrNotFound when no service of type T is registered, ErrCycle when
// building it needs itself, the provider's error wrapped with the service
// name when a provider fails, ErrNoInjector.
func Resolve[T any](ctx context.Context) (T, error) {
	return resolve[T](ctx, "Resolve", "")
}

// ResolveNamed returns the service of type T named name: the one registered
// with RegisterNamedSingleton, or else the one built by the Register factory
// of T for that name. An empty name means by type, as in Resolve. Errors are
// those of Resolve.
func ResolveNamed[T any](ctx context.Context, name string) (T, error) {
	return resolve[T](ctx, "ResolveNamed", name)
}

// MustResolve is like Resolve but panics if the service cannot be resolved.
// Use it in wiring code and tests, where an error is a programming mistake.
func MustResolve[T any](ctx context.Context) T {
	v, err := Resolve[T](ctx)
	if err != nil {
		panic(err)
	}
	return v
}

// resolve is Resolve and ResolveNamed.
func resolve[T any](ctx context.Context, op, name string) (T, error) {
	var zero T
	b, err := from(ctx, op)
	if err != nil {
		return zero, err
	}
	key := serviceKey{typ: reflect.TypeFor[T](), name: name}
	svc, value, cached := b.lookup(key)
	if svc == nil {
		return zero, errNotFound(key.typ, keyDisplay(key), "")
	}
	if cached {
		v, _ := value.(T) // a nil interface value gives the zero T
		return v, nil
	}
	v, err := do.InvokeNamed[T](b.inj, svc.doName)
	if err != nil {
		return zero, b.st.translate(svc, "", err)
	}
	return v, nil
}

// resolveAny resolves key for the field path of a Fill. found is false, with
// a nil error, when the field is optional and nothing provides key.
func (b *binding) resolveAny(key serviceKey, optional bool, path string) (v any, found bool, err error) {
	svc, value, cached := b.lookup(key)
	if svc == nil {
		if optional {
			return nil, false, nil
		}
		return nil, false, errNotFound(key.typ, keyDisplay(key), path)
	}
	if cached {
		return value, true, nil
	}
	v, err = do.InvokeNamed[any](b.inj, svc.doName)
	if err != nil {
		if optional && errors.Is(err, do.ErrServiceNotFound) {
			return nil, false, nil // removed by a concurrent Shutdown
		}
		return nil, false, b.st.translate(svc, path, err)
	}
	return v, true, nil
}

// lookup returns the service registered under key, or nil. For a name with
// no service but a Register factory for the type, it first registers the
// factory's service for that name, once (see registerFromFactory).
//
// cached reports that value is the service's instance and the resolution
// can skip do: b is not inside a provider (so there is no dependency for do
// to record, nor a cycle to detect) and the singleton is already built.
func (b *binding) lookup(key serviceKey) (svc *service, value any, cached bool) {
	st := b.st
	hasFactory := false
	st.mu.RLock()
	svc = st.services[key]
	switch {
	case svc != nil && svc.built && b.inj == do.Injector(st.root):
		value, cached = svc.value, true
	case svc == nil: // by type too: the factory then gets the tag ""
		_, hasFactory = st.factories[key.typ]
	}
	st.mu.RUnlock()
	if svc == nil && hasFactory {
		svc = st.registerFromFactory(key)
	}
	return svc, value, cached
}

// registerFromFactory registers the service the factory of key.typ builds
// for key.name, unless it exists, and returns it (nil if the factory is
// gone). The check and the registration happen under mu, so concurrent first
// requests for a name register it once; do's lazy service then builds it
// once.
func (st *state) registerFromFactory(key serviceKey) *service {
	st.mu.Lock()
	defer st.mu.Unlock()
	if svc := st.services[key]; svc != nil {
		return svc // registered by a concurrent request
	}
	factory := st.factories[key.typ]
	if factory == nil {
		return nil // removed by a concurrent Shutdown
	}
	return factory(st, key.name)
}

// keyDisplay is the short name of key for errors.
func keyDisplay(key serviceKey) string {
	if key.name == "" {
		return key.typ.String()
	}
	return fmt.Sprintf("%s %q", key.typ, key.name)
}
