package event

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
)

// Listener handles events of type E. A listener is usually a pointer to a
// struct whose fields carry inject tags (see package di): the Service fills
// them from the injector when it starts, once, never per event.
//
//	type SendConfirmation struct {
//		Mail *Mailer `inject:""`
//	}
//
//	func (h *SendConfirmation) Handle(ctx context.Context, e OrderPlaced) error { ... }
//
//	event.Listen(svc, &SendConfirmation{})
//
// Delivery is at least once: a listener may see an event again (after a
// failure, a crash, a lease that ran out, or a failing sibling listener), so
// it must be idempotent; Meta(ctx).ID is the event's id, the same on every
// delivery.
type Listener[E Event] interface {
	Handle(ctx context.Context, e E) error
}

// ListenerFunc adapts a function to a Listener.
type ListenerFunc[E Event] func(ctx context.Context, e E) error

// Handle calls f.
func (f ListenerFunc[E]) Handle(ctx context.Context, e E) error { return f(ctx, e) }

// listener is a registered listener, with its type erased.
type listener struct {
	typ    EventType
	goType reflect.Type
	name   string // for errors: the listener's Go type
	// inboxName identifies the listener in its inbox keys (see Claim): its
	// name, with its rank among the listeners of its type of the same name.
	inboxName string
	target    any // filled by di.Fill at start, if a non-nil pointer to a struct
	handle    func(ctx context.Context, data json.RawMessage) error
}

// Listen registers l for the events of type E on s. E is inferred from l's
// Handle method: event.Listen(svc, &SendConfirmation{}). Listeners of one
// type run in the order they were registered.
//
// If l is a pointer to a struct, its inject-tagged fields are filled from
// the injector when s starts. Listen fails, wrapping ErrInvalidListener,
// for a nil l or an E without a valid EventType, and with ErrStarted once s
// has started; Start reports the same errors again.
func Listen[E Event](s *Service, l Listener[E]) error {
	rv := reflect.ValueOf(l)
	if l == nil || (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Func) && rv.IsNil() {
		return s.addErr(fmt.Errorf("%w: nil listener for %s", ErrInvalidListener, reflect.TypeFor[E]()))
	}
	return add[E](s, l, fmt.Sprintf("%T", l), l)
}

// ListenFunc registers f for the events of type E on s: a listener with no
// dependencies to inject. See Listen.
func ListenFunc[E Event](s *Service, f func(ctx context.Context, e E) error) error {
	if f == nil {
		return s.addErr(fmt.Errorf("%w: nil func for %s", ErrInvalidListener, reflect.TypeFor[E]()))
	}
	return add[E](s, ListenerFunc[E](f), fmt.Sprintf("func(%s)", reflect.TypeFor[E]()), nil)
}

func add[E Event](s *Service, l Listener[E], name string, target any) error {
	typ, err := TypeOf[E]()
	if err != nil {
		return s.addErr(fmt.Errorf("event: listener %s: %w", name, err))
	}
	rt := reflect.TypeFor[E]()
	if target != nil {
		if tv := reflect.ValueOf(target); tv.Kind() != reflect.Pointer || tv.Elem().Kind() != reflect.Struct {
			target = nil // nothing to fill
		}
	}
	unmarshal := json.Unmarshal
	if !keepsInput(rt) {
		unmarshal = unmarshalData
	}
	return s.addListener(listener{
		typ:    typ,
		goType: rt,
		name:   name,
		target: target,
		handle: func(ctx context.Context, data json.RawMessage) error {
			var e E
			if rt.Kind() == reflect.Pointer {
				e = reflect.New(rt.Elem()).Interface().(E)
			}
			if len(data) > 0 && string(data) != "null" { // an explicit null is the zero event, as no data
				if err := unmarshal(data, &e); err != nil {
					return Permanent(malformed("data of %s does not decode into %s: %v", typ, rt, err))
				}
			}
			return l.Handle(ctx, e)
		},
	})
}
