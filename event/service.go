package event

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/internal/failhook"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// Defaults of ServiceOptions.
const (
	// DefaultWorkers is how many events a Service handles at once.
	DefaultWorkers = 10
	// DefaultDrainTimeout is how long a stopping Service lets the events
	// in hand finish.
	DefaultDrainTimeout = 30 * time.Second
)

// settleTimeout bounds an Ack, Fail or Reject: it runs on a context of its
// own (see settleContexts), so that a stopping Service still settles what
// it handled.
const settleTimeout = 30 * time.Second

// retryDequeueMax caps the wait between two failing Dequeue calls.
const retryDequeueMax = 5 * time.Second

// ServiceOptions configures a Service. The zero value means the defaults.
type ServiceOptions struct {
	// Subscription is the subscription of the topic the Service consumes
	// (see pubsub.Subscriber). Services on different subscriptions of a
	// topic each get every event published after their subscription was
	// created; Services on the same one, in any process, share its events.
	// "" means pubsub.DefaultSubscription, the one the topic's own Dequeue
	// reads.
	Subscription string
	// Workers is how many events the Service handles at once, each in
	// its own goroutine. 0 means DefaultWorkers.
	Workers int
	// HandlerTimeout bounds the handling of one event (all its listeners),
	// through its ctx (see Timeout). 0 means no bound.
	HandlerTimeout time.Duration
	// DrainTimeout is how long a stopping Service lets the events in hand
	// finish before it cancels their ctx. 0 means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// LeaseExtension, if positive, keeps the lease of an event in hand:
	// while its listeners run, the Service extends the message's lease to
	// LeaseExtension from now, every LeaseExtension/2, so that a listener
	// running longer than the backend's lease is not handed to another
	// consumer meanwhile. It needs a backend with pubsub.LeaseExtender
	// (channelpubsub, dbpubsub and natspubsub all have it). 0 means off: a listener must then
	// finish within the backend's lease (pubsub.DefaultLease).
	LeaseExtension time.Duration
	// SkipUnknown acks, with a debug log, the events of types the Service
	// has no listener for, instead of making them dead: for a Service on a
	// subscription of its own that wants some of its topic's event types
	// only. Malformed messages are dead all the same.
	SkipUnknown bool
	// Middleware wraps the handling of every event, the first outermost,
	// inside the Service's logging and outside its timeout and panic
	// recovery.
	Middleware []Middleware
	// Logger receives the Service's logs (see Logging). nil means
	// slog.Default().
	Logger *slog.Logger
	// OnFailure, when set, is handed each failure of the Service no
	// caller is returned (see pubsub.Failure): a Dequeue that failed and
	// is retried (pubsub.FetchRetried), a message the Service settled
	// dead (pubsub.Dead: Rejected for a permanent error or an undecodable
	// message, AttemptsExhausted for a failure at its last attempt). The
	// backend's own OnFailure hears of the same deaths. It runs in a
	// goroutine of its own (see pubsub.Failure for what happens when it
	// is slow); the Service's stop waits for it to have had them. nil
	// means they are logged, as before.
	OnFailure func(pubsub.Failure)
}

func (o ServiceOptions) withDefaults() (ServiceOptions, error) {
	if o.Subscription == "" {
		o.Subscription = pubsub.DefaultSubscription
	}
	if err := pubsub.ValidateSubscriptionName(o.Subscription); err != nil {
		return o, fmt.Errorf("event: ServiceOptions.Subscription: %w", err)
	}
	switch {
	case o.Workers < 0:
		return o, fmt.Errorf("event: ServiceOptions.Workers is %d, want 0 (default) or more", o.Workers)
	case o.HandlerTimeout < 0:
		return o, fmt.Errorf("event: ServiceOptions.HandlerTimeout is %v, want 0 (none) or more", o.HandlerTimeout)
	case o.DrainTimeout < 0:
		return o, fmt.Errorf("event: ServiceOptions.DrainTimeout is %v, want 0 (default) or more", o.DrainTimeout)
	case o.LeaseExtension < 0:
		return o, fmt.Errorf("event: ServiceOptions.LeaseExtension is %v, want 0 (off) or more", o.LeaseExtension)
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

type serviceState uint8

const (
	stateNew serviceState = iota
	stateStarting
	stateRunning
	stateStopped
)

// Service consumes one subscription of a topic: it dequeues each message,
// decodes the event, calls every listener registered for its type, and
// settles the message. Make one with NewService, add listeners with Listen
// and ListenFunc, and run it with Run (or Start and Shutdown). See the
// package documentation for the outcomes and the guarantees.
type Service struct {
	topicName string
	subName   string
	desc      string // "service of topic %q[, subscription %q]", for errors
	opts      ServiceOptions
	log       *slog.Logger

	mu        sync.Mutex
	state     serviceState
	listeners map[EventType][]listener // read-only once running
	errs      []error                  // registration mistakes, reported by Start

	// Set when the Service starts.
	topic   pubsub.Topic       // the handle on the subscription, closed when the Service stops
	retry   pubsub.RetryPolicy // the topic's, when it says it (retryOK)
	retryOK bool
	handler Handler
	stopDQ  context.CancelFunc // stops dequeuing
	stopH   context.CancelFunc // ends the ctx of the handlers in hand
	hctx    context.Context    // the ctx handlers derive from
	settles *settleContexts    // the ctx settles run on
	fails   *failhook.Reporter // ServiceOptions.OnFailure's
	done    chan struct{}      // closed when every worker has ended
	wg      sync.WaitGroup
	errOnce sync.Once
	err     error // why the Service stopped by itself, if it did
}

// NewService returns a Service for the topic named topic, on the
// subscription ServiceOptions.Subscription, subscribed to on the backend
// registered in the injector when the Service starts (see Register). It
// fails for an invalid topic or subscription name (wrapping
// pubsub.ErrInvalidTopic or pubsub.ErrInvalidSubscription) or a bad
// option, naming it.
func NewService(topic string, opts ServiceOptions) (*Service, error) {
	if err := pubsub.ValidateTopicName(topic); err != nil {
		return nil, fmt.Errorf("event: NewService: %w", err)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	desc := fmt.Sprintf("service of topic %q", topic)
	if o.Subscription != pubsub.DefaultSubscription {
		desc = fmt.Sprintf("service of topic %q, subscription %q", topic, o.Subscription)
	}
	return &Service{
		topicName: topic,
		subName:   o.Subscription,
		desc:      desc,
		opts:      o,
		log:       o.Logger.With(slog.String("topic", topic), slog.String("subscription", o.Subscription)),
		listeners: map[EventType][]listener{},
		done:      make(chan struct{}),
		fails:     failhook.New(o.OnFailure),
	}, nil
}

// Topic returns the name of the topic s consumes.
func (s *Service) Topic() string { return s.topicName }

// Subscription returns the name of the subscription s consumes:
// ServiceOptions.Subscription, or pubsub.DefaultSubscription.
func (s *Service) Subscription() string { return s.subName }

// addErr records a registration mistake, reported again by Start.
func (s *Service) addErr(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateNew {
		s.errs = append(s.errs, err)
	}
	return err
}

func (s *Service) addListener(l listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateNew {
		return fmt.Errorf("%w: add listener %s to the %s", ErrStarted, l.name, s.desc)
	}
	// The inbox key of a listener is its name, made unique among the
	// listeners of its type by its rank, so that it is the same in every
	// process running this code.
	l.inboxName = l.name
	n := 1
	for _, o := range s.listeners[l.typ] {
		if o.name == l.name {
			n++
		}
	}
	if n > 1 {
		l.inboxName = fmt.Sprintf("%s#%d", l.name, n)
	}
	s.listeners[l.typ] = append(s.listeners[l.typ], l)
	return nil
}

// Start resolves the Service's dependencies (the backend and the inject
// fields of its listeners) from the injector in ctx, subscribes to its
// topic (pubsub.Subscribe: the subscription is created if it does not
// exist), registers the Service in the injector, so that di.Shutdown stops
// it before the backend and everything the listeners use, and starts its
// workers. It returns once they run.
//
// The Service stops dequeuing when ctx ends or Shutdown is called, and then
// drains (see Shutdown). ctx must carry an injector on which Register was
// called. Start fails for listener mistakes (ErrInvalidListener), when the
// Service has started before (ErrStarted), when another Service of the
// injector consumes the same topic and subscription (ErrDuplicateService),
// when a dependency cannot be resolved (di.ErrNotFound naming the field),
// and when the backend cannot subscribe (pubsub.ErrUnsupported for a named
// subscription on a backend without subscriptions).
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	switch {
	case s.state != stateNew:
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrStarted, s.desc)
	case len(s.errs) > 0:
		err := errors.Join(s.errs...)
		s.mu.Unlock()
		return fmt.Errorf("event: %s: %w", s.desc, err)
	case len(s.listeners) == 0:
		s.mu.Unlock()
		return fmt.Errorf("%w: the %s has no listener", ErrInvalidListener, s.desc)
	}
	s.state = stateStarting
	s.mu.Unlock()

	if err := s.resolve(ctx); err != nil {
		s.mu.Lock()
		if s.state == stateStarting { // may be started again, unless shut down
			s.state = stateNew
		}
		s.mu.Unlock()
		return err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateStarting { // Shutdown came first
		s.closeTopic()
		return fmt.Errorf("event: %s was shut down while it started", s.desc)
	}
	s.state = stateRunning
	s.handler = func(ctx context.Context, d Delivery) error { return s.route(ctx, d) }
	// Logging and Recover log the delivery's topic and subscription
	// themselves: they get the logger without s.log's attributes.
	mws := append([]Middleware{Logging(s.opts.Logger)}, s.opts.Middleware...)
	mws = append(mws, Timeout(s.opts.HandlerTimeout), Recover(s.opts.Logger))
	s.handler = chain(s.handler, mws...)

	dqctx, stopDQ := context.WithCancel(ctx)
	s.hctx, s.stopH = context.WithCancel(context.WithoutCancel(ctx))
	s.settles = newSettleContexts(s.hctx)
	s.stopDQ = stopDQ
	s.wg.Add(s.opts.Workers)
	for range s.opts.Workers {
		go s.work(dqctx)
	}
	go s.drain(dqctx)
	return nil
}

// resolve registers s in the injector of ctx and builds it there (see
// Register), which calls prepare.
func (s *Service) resolve(ctx context.Context) error {
	reg, err := di.Resolve[*registry](ctx)
	switch {
	case errors.Is(err, di.ErrNoInjector):
		return fmt.Errorf("event: start the %s: ctx has no injector: make it with di.NewContext, then call event.Register(ctx) (%w)", s.desc, di.ErrNoInjector)
	case errors.Is(err, di.ErrNotFound):
		// The registry is internal: say what to call, not its type.
		return fmt.Errorf("event: start the %s: call event.Register(ctx) on the app's injector first (%w)", s.desc, di.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("event: start the %s: %w", s.desc, err)
	}
	name, err := reg.add(s)
	if err != nil {
		return err
	}
	got, err := di.ResolveNamed[*Service](ctx, name)
	if err != nil {
		reg.remove(s)
		return fmt.Errorf("event: start the %s: %w", s.desc, err)
	}
	if got != s {
		return fmt.Errorf("event: start the %s: the injector holds another service for it", s.desc)
	}
	return nil
}

// prepare fills the listeners and subscribes through ctx, the provider's
// context: the injector records that s depends on the backend and on what
// the listeners use.
func (s *Service) prepare(ctx context.Context) error {
	s.mu.Lock()
	var targets []listener
	for _, ls := range s.listeners {
		for _, l := range ls {
			if l.target != nil {
				targets = append(targets, l)
			}
		}
	}
	s.mu.Unlock()
	for _, l := range targets {
		if err := di.Fill(ctx, l.target); err != nil {
			return fmt.Errorf("listener %s: %w", l.name, err)
		}
	}
	ps, err := di.Resolve[pubsub.PubSub](ctx)
	if errors.Is(err, di.ErrNotFound) {
		return fmt.Errorf("%w: call channelpubsub.Register(ctx), dbpubsub.Register(ctx) or natspubsub.Register(ctx) first: %w", pubsub.ErrNoBackend, err)
	}
	if err != nil {
		return err
	}
	topic, err := pubsub.Subscribe(ctx, ps, s.topicName, s.subName)
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	s.topic = topic
	s.retry, s.retryOK = wrap.TopicRetryPolicy(topic)
	return nil
}

// closeTopic closes the Service's handle on its subscription, if it has
// one: the subscription and its messages stay in the backend.
func (s *Service) closeTopic() {
	if s.topic == nil {
		return
	}
	if err := s.topic.Close(); err != nil && !errors.Is(err, pubsub.ErrClosed) {
		s.log.Warn("event: cannot close the subscription's handle", slog.Any("error", err))
	}
}

// Run starts the Service (see Start) and blocks until it has stopped: when
// ctx ends or Shutdown is called, it stops dequeuing, lets the events in
// hand finish within ServiceOptions.DrainTimeout, then cancels their ctx;
// an event whose listeners did not succeed is failed (retried later). It
// returns nil after such a stop, and an error when the Service could not
// start or had to stop by itself (its topic was closed).
func (s *Service) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	<-s.done
	return s.err
}

// Shutdown stops the Service and waits until the events in hand are
// settled (see Run). di.Shutdown calls it, before closing the topic. If ctx
// ends first, the handlers' ctx is canceled at once and Shutdown returns
// ctx's error without waiting further. Shutting down a Service that never
// started keeps it from starting.
func (s *Service) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	stop := s.stopDQ
	s.state = stateStopped
	s.mu.Unlock()
	if stop == nil { // never started
		return nil
	}
	stop()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		s.stopH()
		return fmt.Errorf("event: shut down the %s: %w", s.desc, ctx.Err())
	}
}

// drain waits for dequeuing to stop, gives the workers DrainTimeout to
// finish, cancels the handlers' ctx, and waits for the workers.
func (s *Service) drain(dqctx context.Context) {
	<-dqctx.Done()
	s.mu.Lock()
	s.state = stateStopped
	s.mu.Unlock()
	workersDone := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(workersDone)
	}()
	t := time.NewTimer(s.opts.DrainTimeout)
	select {
	case <-workersDone:
	case <-t.C:
		s.log.Warn("event: drain timeout: canceling the events still in hand; they will be retried",
			slog.Duration("drain_timeout", s.opts.DrainTimeout))
		s.stopH()
		<-workersDone
	}
	t.Stop()
	s.stopH()
	s.settles.stop()
	s.closeTopic()
	s.fails.Close()
	close(s.done)
}

// fail stops the Service by itself, for err.
func (s *Service) fail(err error) {
	s.errOnce.Do(func() {
		s.err = err
		s.log.Error("event: the service stops", slog.Any("error", err))
	})
	s.stopDQ()
}

// work dequeues and handles messages until dqctx ends.
func (s *Service) work(dqctx context.Context) {
	defer s.wg.Done()
	var wait time.Duration
	idBuf := make([]byte, 0, 24) // see process
	for dqctx.Err() == nil {
		m, err := s.topic.Dequeue(dqctx)
		if err != nil {
			if dqctx.Err() != nil {
				return
			}
			if errors.Is(err, pubsub.ErrClosed) {
				s.fail(fmt.Errorf("event: %s: %w", s.desc, err))
				return
			}
			wait = min(max(2*wait, 10*time.Millisecond), retryDequeueMax)
			s.fails.Report(pubsub.Failure{Kind: pubsub.FetchRetried, Topic: s.topicName, Subscription: s.subName, Err: err}, func() {
				s.log.Warn("event: dequeue failed; retrying", slog.Any("error", err), slog.Duration("wait", wait))
			})
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-dqctx.Done():
				t.Stop()
				return
			}
			continue
		}
		wait = 0
		s.process(m, &idBuf)
	}
}

// process handles one message and settles it. idBuf is its worker's
// buffer for the message's id.
func (s *Service) process(m pubsub.Message, idBuf *[]byte) {
	md := Metadata{Topic: s.topicName, Subscription: s.subName, Attempt: pubsub.Attempt(m)}
	md.LastAttempt = s.retryOK && md.Attempt > 0 && s.retry.Exhausted(md.Attempt)
	// A message that can write its id gets it in the string decode makes
	// for the envelope's attributes, instead of one of its own. The
	// worker's buffer is written here only: decode copies what it keeps.
	var id []byte
	ida, appends := wrap.FindSpeedup[wrap.IDAppender](m)
	if appends {
		id = ida.AppendID((*idBuf)[:0])
		*idBuf = id
	}
	env, mid, err := decode(m.Data(), id)
	if appends && err == nil {
		md.MessageID = mid
	} else {
		md.MessageID = m.ID()
	}
	if err != nil {
		err = Permanent(fmt.Errorf("event: message %s on topic %q: %w", md.MessageID, s.topicName, err))
		s.log.Error("event: undecodable message, the message is dead",
			slog.String("message_id", md.MessageID), slog.Int("attempt", md.Attempt), slog.Any("error", err))
		s.settle(m, md, err, false)
		return
	}
	md.ID, md.Type, md.Source, md.Subject, md.Time, md.Extensions = env.ID, env.Type, env.Source, env.Subject, env.Time, env.Extensions
	d := Delivery{Metadata: md, Data: env.Data}
	hctx := withMeta(pubsub.HandlingContext(s.hctx, m), md)
	if s.opts.LeaseExtension > 0 {
		stop := s.keepLease(m, md)
		err = s.call(hctx, d)
		stop()
	} else {
		err = s.call(hctx, d)
	}
	if err != nil && s.hctx.Err() != nil {
		// Canceled by the drain timeout: not the event's fault, so it is
		// retried, never made dead for it.
		s.settle(m, md, fmt.Errorf("event: %s %s interrupted by the service's shutdown: %w", md.Type, md.ID, err), true)
		return
	}
	s.settle(m, md, err, false)
}

// keepLease extends m's lease every LeaseExtension/2 until the returned
// func is called; that func waits for an extension in progress.
func (s *Service) keepLease(m pubsub.Message, md Metadata) (stop func()) {
	ext := s.opts.LeaseExtension
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(ext/2, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.hctx), ext/2)
		err := pubsub.ExtendLease(ctx, m, ext)
		cancel()
		if err != nil {
			s.log.Warn("event: cannot extend the lease of the event in hand",
				slog.String("event_id", md.ID), slog.String("message_id", md.MessageID), slog.Any("error", err))
			return
		}
		t.Reset(ext / 2)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// call runs the handler chain, recovering a panic in the middleware too.
func (s *Service) call(ctx context.Context, d Delivery) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: middleware on %s %s: %v", ErrPanic, d.Type, d.ID, r)
			s.opts.Logger.Error("event: middleware panicked", append(attrs(d),
				slog.Any("panic", r), slog.String("stack", string(debug.Stack())))...)
		}
	}()
	return s.handler(ctx, d)
}

// route is the innermost handler: it calls every listener of d's type in
// turn, stopping at the first error.
func (s *Service) route(ctx context.Context, d Delivery) error {
	ls := s.listeners[d.Type]
	if len(ls) == 0 && s.opts.SkipUnknown {
		if s.log.Enabled(ctx, slog.LevelDebug) { // else the attributes would be built for nothing
			s.log.DebugContext(ctx, "event: no listener for the event type; acked (SkipUnknown)", attrs(d)...)
		}
		return nil
	}
	if len(ls) == 0 {
		return Permanent(fmt.Errorf("%w: %q on topic %q (event %s)", ErrUnknownType, d.Type, s.topicName, d.ID))
	}
	for i := range ls {
		l := &ls[i]
		if err := s.callListener(ctx, l, d); err != nil {
			return fmt.Errorf("event: listener %s of %s %s: %w", l.name, d.Type, d.ID, err)
		}
	}
	return nil
}

// callListener runs l on d with a ctx in which it can Claim. When l fails
// or panics, the claims it made outside a transaction are released, so
// that the redelivery claims anew.
func (s *Service) callListener(ctx context.Context, l *listener, d Delivery) (err error) {
	var sc *claimScope
	if mc, ok := ctx.Value(metaCtxKey{}).(*metaCtx); ok {
		sc = mc.claimScope(ctx, s, l, d.ID)
	} else { // middleware handed its next a ctx not derived from the Service's
		sc = &claimScope{Context: ctx, svc: s, l: l, eventID: d.ID}
	}
	ok := false
	defer func() {
		if rerr := sc.end(s.hctx, !ok || err != nil); rerr != nil {
			s.opts.Logger.Error("event: cannot release the inbox claim of a failed listener: its redelivery will skip its effects",
				append(attrs(d), slog.String("listener", l.name), slog.Any("error", rerr))...)
		}
	}()
	err = l.handle(sc, d.Data)
	ok = true
	return err
}

// settle acks m when err is nil, rejects it when err is permanent (unless
// retry), and fails it otherwise.
func (s *Service) settle(m pubsub.Message, md Metadata, err error, retry bool) {
	ctx := s.settles.get()
	var serr error
	switch {
	case err == nil:
		serr = m.Ack(ctx)
	case IsPermanent(err) && !retry:
		serr = pubsub.Reject(ctx, m, err)
		if errors.Is(serr, pubsub.ErrUnsupported) {
			serr = pubsub.Fail(ctx, m, err) // retried until its attempts run out
		}
	default:
		serr = pubsub.Fail(ctx, m, err)
	}
	if serr == nil && err != nil {
		f := pubsub.Failure{Kind: pubsub.Dead, Topic: md.Topic, Subscription: md.Subscription, MessageID: md.MessageID, Attempt: md.Attempt, Err: err}
		switch {
		case IsPermanent(err) && !retry:
			f.Cause = pubsub.Rejected
		case md.LastAttempt:
			f.Cause = pubsub.AttemptsExhausted
		}
		if f.Cause != "" {
			s.fails.Report(f, nil) // Logging has logged it
		}
	}
	if serr != nil {
		s.log.Warn("event: settle failed; the message comes back when its lease runs out",
			slog.String("event_id", md.ID), slog.String("event_type", string(md.Type)),
			slog.String("message_id", md.MessageID), slog.Any("error", serr))
	}
}
