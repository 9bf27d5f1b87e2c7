package di

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/samber/do/v2"
)

// ctxKey is the context key of the *binding.
type ctxKey struct{}

// binding is what a context carries: the injector's state and the do
// injector to resolve through. At the top level inj is the root scope; inside
// a provider it is the injector do handed to that provider, so that do
// records the dependency graph (shutdown order) and detects cycles.
type binding struct {
	st  *state
	inj do.Injector
}

// serviceKey identifies a service: its type and its name ("" for by-type).
type serviceKey struct {
	typ  reflect.Type
	name string
}

// service is a service registered through di.
type service struct {
	doName  string // the name do knows it by
	display string // short name for errors: `*app.DB` or `pubsub.Topic "orders"`
	typ     reflect.Type

	// The instance, once built, guarded by state.mu. Every service is a
	// singleton, so a top-level resolution (not from a provider, hence
	// nothing for do to record) can return it without going through do.
	value any
	built bool
}

// namedFactory registers, in do, the service for name built by a Register
// factory. It is called with state.mu held.
type namedFactory func(st *state, name string) *service

// state is the part of an injector that do does not keep. One per NewContext.
type state struct {
	root *do.RootScope

	mu        sync.RWMutex
	services  map[serviceKey]*service
	byDoName  map[string]*service
	factories map[reflect.Type]namedFactory
	closers   map[string]io.Closer // do name -> value to Close on Shutdown
	closed    map[any]struct{}     // closers already closed by this Shutdown
	closeErrs map[string]error     // do name -> Close error during Shutdown
}

// NewContext returns a copy of parent carrying a fresh, empty injector. Every
// other function of the package finds the injector in its context.
func NewContext(parent context.Context) context.Context {
	st := &state{}
	st.reset()
	st.root = do.NewWithOpts(&do.InjectorOpts{
		HookAfterShutdown: []func(*do.Scope, string, error){
			func(_ *do.Scope, doName string, _ error) { st.closeService(doName) },
		},
	})
	return context.WithValue(parent, ctxKey{}, &binding{st: st, inj: st.root})
}

// reset empties the registry. Called with mu held (or before st is shared).
func (st *state) reset() {
	st.services = map[serviceKey]*service{}
	st.byDoName = map[string]*service{}
	st.factories = map[reflect.Type]namedFactory{}
	st.closers = map[string]io.Closer{}
	st.closed = map[any]struct{}{}
	st.closeErrs = map[string]error{}
}

// from returns the binding carried by ctx, or ErrNoInjector naming op.
func from(ctx context.Context, op string) (*binding, error) {
	if ctx == nil {
		return nil, errNoInjector(op)
	}
	b, _ := ctx.Value(ctxKey{}).(*binding)
	if b == nil {
		return nil, errNoInjector(op)
	}
	return b, nil
}

// withInjector returns ctx carrying inj, the injector do handed to a
// provider, so that calls made by the provider go through it.
func (st *state) withInjector(ctx context.Context, inj do.Injector) context.Context {
	return context.WithValue(ctx, ctxKey{}, &binding{st: st, inj: inj})
}

// newService builds the service record for type T under name.
func newService[T any](name string) (serviceKey, *service) {
	typ := reflect.TypeFor[T]()
	key := serviceKey{typ: typ, name: name}
	svc := &service{doName: do.NameOf[T](), display: typ.String(), typ: typ}
	if name != "" {
		svc.doName += "#" + name
		svc.display = fmt.Sprintf("%s %q", typ, name)
	}
	return key, svc
}
