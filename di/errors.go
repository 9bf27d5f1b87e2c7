package di

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/samber/do/v2"
)

// Sentinel errors. Every error returned by this package wraps one of them or
// a provider's own error; match with errors.Is, never by comparing strings.
var (
	// ErrNoInjector is returned (wrapped) by every function of the package
	// when its context carries no injector.
	ErrNoInjector = errors.New("di: no injector in context; call di.NewContext first")

	// ErrNotFound means that nothing provides the requested type or name:
	// no service is registered under it and no Register factory serves it.
	ErrNotFound = errors.New("di: not found")

	// ErrCycle means that a provider depends, directly or not, on the
	// service it is building. The wrapping error names the cycle.
	ErrCycle = errors.New("di: dependency cycle")

	// ErrInvalidTarget means that Fill (or RegisterLazySingletonWith) was
	// given something it cannot fill: not a pointer, a nil pointer, a pointer
	// to a non-struct, an unexported field with an inject tag, or a malformed
	// inject tag. The wrapping error names the field.
	ErrInvalidTarget = errors.New("di: invalid target")

	// ErrAlreadyRegistered means that a service (or a Register factory) was
	// registered twice for the same type and name.
	ErrAlreadyRegistered = errors.New("di: already registered")
)

// errNoInjector wraps ErrNoInjector with the name of the calling function.
func errNoInjector(op string) error {
	return fmt.Errorf("%w (in di.%s)", ErrNoInjector, op)
}

// errNotFound names the missing service of type typ and, when filling,
// the field, and says how to provide it when its package told (Hint).
func errNotFound(typ reflect.Type, display, field string) error {
	hint := ""
	if h, ok := hints.Load(typ); ok {
		hint = "; " + h.(string)
	}
	if field == "" {
		return fmt.Errorf("%w: %s%s", ErrNotFound, display, hint)
	}
	return fmt.Errorf("%w: %s (field %s)%s", ErrNotFound, display, field, hint)
}

// hints are what ErrNotFound says of a type, by reflect.Type (Hint).
var hints sync.Map

// Hint sets what an ErrNotFound for a service of type T (any name) says
// after naming it: how to provide it. A package whose types are provided by
// a registration function of its own calls it at init, for example
// pubsub: "call a backend's Register(ctx), then pubsub.RegisterTopic(ctx)".
func Hint[T any](hint string) { hints.Store(reflect.TypeFor[T](), hint) }

// errProvide wraps the failure of the provider of display.
func errProvide(display, field string, err error) error {
	if field == "" {
		return fmt.Errorf("di: provide %s: %w", display, err)
	}
	return fmt.Errorf("di: provide %s (field %s): %w", display, field, err)
}

// errInvalid wraps ErrInvalidTarget with a reason.
func errInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidTarget, fmt.Sprintf(format, args...))
}

// translate turns an error returned by a do invocation of svc into one of
// ours, so that do's long messages (do lists every registered service when a
// name is missing) never reach the caller:
//   - a cycle already reported by a nested call is passed through unchanged,
//     so the message names the cycle once instead of once per provider;
//   - a cycle detected by do at this call becomes ErrCycle with the chain;
//   - do's "service not found" for svc itself becomes ErrNotFound;
//   - anything else is the failure of svc's provider, wrapped with its name.
func (st *state) translate(svc *service, field string, err error) error {
	switch {
	case errors.Is(err, ErrCycle):
		return err
	case errors.Is(err, do.ErrCircularDependency):
		return fmt.Errorf("%w: %s", ErrCycle, st.cycleChain(err))
	case errors.Is(err, do.ErrServiceNotFound):
		// Our providers never let a do error escape (nested calls translate
		// theirs), so this is about svc: it was removed by a Shutdown.
		return errNotFound(svc.typ, svc.display, field)
	default:
		return errProvide(svc.display, field, err)
	}
}

// cycleChain extracts the chain from do's cycle error ("DI: circular
// dependency detected: `a` -> `b` -> `a`") and spells it with our display
// names ("*app.A -> *app.B -> *app.A").
func (st *state) cycleChain(err error) string {
	msg := err.Error()
	prefix := do.ErrCircularDependency.Error() + ": "
	i := strings.Index(msg, prefix)
	if i < 0 {
		return msg
	}
	parts := strings.Split(msg[i+len(prefix):], " -> ")
	st.mu.RLock()
	defer st.mu.RUnlock()
	for k, p := range parts {
		p = strings.Trim(p, "`")
		if svc, ok := st.byDoName[p]; ok {
			p = svc.display
		}
		parts[k] = p
	}
	return strings.Join(parts, " -> ")
}
