package event

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Register makes dispatchers injectable by topic name, the way
// pubsub.RegisterTopic does for topics: after it, a struct field
//
//	Events event.Dispatcher `inject:"orders"`
//
// filled by di.Fill dispatches over the topic "orders" of the PubSub
// registered in the injector (by channelpubsub.Register or
// dbpubsub.Register). It also lets Services start on that injector (see
// Service.Start), and calls pubsub.RegisterTopic unless that was done
// before: call pubsub.RegisterTopic before it, or not at all.
//
// Registering twice on one injector returns an error wrapping
// di.ErrAlreadyRegistered.
func Register(ctx context.Context) error {
	return RegisterWithOptions(ctx, DispatcherOptions{})
}

// RegisterWithOptions is Register with the options of every injected
// Dispatcher.
func RegisterWithOptions(ctx context.Context, opts DispatcherOptions) error {
	reg := &registry{services: map[string]*Service{}}
	if err := di.RegisterSingleton(ctx, reg); err != nil {
		return fmt.Errorf("event: Register: %w", err)
	}
	if err := pubsub.RegisterTopic(ctx); err != nil && !errors.Is(err, di.ErrAlreadyRegistered) {
		return fmt.Errorf("event: Register: %w", err)
	}
	err := di.Register(ctx, func(ctx context.Context, name string) (Dispatcher, error) {
		if name == "" {
			return nil, fmt.Errorf("%w: an event.Dispatcher field needs the topic's name in its tag, as in inject:\"orders\"", pubsub.ErrInvalidTopic)
		}
		topic, err := di.ResolveNamed[pubsub.Topic](ctx, name)
		if err != nil {
			return nil, err
		}
		return NewDispatcher(topic, opts), nil
	})
	if err != nil {
		return fmt.Errorf("event: Register: %w", err)
	}
	err = di.Register(ctx, func(ctx context.Context, name string) (*Service, error) {
		s := reg.get(name)
		if s == nil {
			return nil, fmt.Errorf("%w: no event.Service was started for topic %q", di.ErrNotFound, name)
		}
		if err := s.prepare(ctx); err != nil {
			return nil, err
		}
		return s, nil
	})
	if err != nil {
		return fmt.Errorf("event: Register: %w", err)
	}
	return nil
}

// registry holds the Services started on one injector, by topic, for the
// named factory of *Service to find.
type registry struct {
	mu       sync.Mutex
	services map[string]*Service
}

func (r *registry) add(s *Service) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if other, ok := r.services[s.topicName]; ok && other != s {
		return fmt.Errorf("%w: a service for topic %q (one service per topic and injector; raise its Workers instead)", di.ErrAlreadyRegistered, s.topicName)
	}
	r.services[s.topicName] = s
	return nil
}

func (r *registry) remove(s *Service) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.services[s.topicName] == s {
		delete(r.services, s.topicName)
	}
}

func (r *registry) get(name string) *Service {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.services[name]
}
