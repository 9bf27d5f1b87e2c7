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
			return nil, fmt.Errorf("%w: no event.Service was started as %q", di.ErrNotFound, name)
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

// registry holds the Services started on one injector, by the name of
// their service there (diName), for the named factory of *Service to find.
type registry struct {
	mu       sync.Mutex
	services map[string]*Service
}

// diName is the name of s's service in the injector: its topic for the
// default subscription (as before subscriptions existed), else topic and
// subscription.
func (s *Service) diName() string {
	if s.subName == pubsub.DefaultSubscription {
		return s.topicName
	}
	return s.topicName + " subscription " + s.subName
}

// add records s and returns the name of its service in the injector.
func (r *registry) add(s *Service) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := s.diName()
	if other, ok := r.services[name]; ok && other != s {
		if other.topicName != s.topicName || other.subName != s.subName {
			// Only a topic named like "t subscription s" gets here.
			return "", fmt.Errorf("event: start the %s: its name in the injector, %q, is taken by the %s (%w)", s.desc, name, other.desc, di.ErrAlreadyRegistered)
		}
		return "", fmt.Errorf("%w: topic %q, subscription %q: one service per topic and subscription in an injector; raise its Workers, or give the other its own ServiceOptions.Subscription (%w)",
			ErrDuplicateService, s.topicName, s.subName, di.ErrAlreadyRegistered)
	}
	r.services[name] = s
	return name, nil
}

func (r *registry) remove(s *Service) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name := s.diName(); r.services[name] == s {
		delete(r.services, name)
	}
}

func (r *registry) get(name string) *Service {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.services[name]
}
