package event_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// uniqueTopic adds EnqueueUnique to a topic, as a shared backend would: a
// key is taken once a message with it is enqueued, and a call with a key
// being enqueued waits for that outcome (as a unique index makes a second
// insert wait for the first's transaction).
type uniqueTopic struct {
	pubsub.Topic
	mu    sync.Mutex
	tries map[string]int  // calls per key
	taken map[string]bool // keys enqueued
}

func (u *uniqueTopic) EnqueueUnique(ctx context.Context, key string, data []byte) (bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.tries[key]++
	if u.taken[key] {
		return false, nil
	}
	if err := u.Topic.Enqueue(ctx, data); err != nil {
		return false, err
	}
	u.taken[key] = true
	return true, nil
}

type Tick struct {
	At time.Time `json:"at"`
}

func (Tick) Type() event.EventType { return "com.example.tick" }

// TestSchedulersDispatchEachTickOnce runs two schedulers, as two processes
// would, on a topic that enqueues uniquely: each tick is dispatched once.
func TestSchedulersDispatchEachTickOnce(t *testing.T) {
	ctx := newApp(t, backends[0], backendOptions{})
	tp := &uniqueTopic{Topic: topicOf(t, ctx, "ticks"), tries: map[string]int{}, taken: map[string]bool{}}
	const every = 40 * time.Millisecond
	var schedulers []*event.Scheduler
	for range 2 {
		s := event.NewScheduler(event.NewDispatcher(tp, event.DispatcherOptions{}), event.SchedulerOptions{})
		if err := s.Add("tick", event.Every(every), func(tick time.Time) event.Event { return Tick{At: tick} }); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		schedulers = append(schedulers, s)
	}
	time.Sleep(10 * every)
	for _, s := range schedulers {
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tp.mu.Lock()
	keys := len(tp.taken)
	both := 0
	for _, n := range tp.tries {
		if n == 2 {
			both++
		}
	}
	tp.mu.Unlock()
	if keys < 5 || both == 0 {
		t.Fatalf("%d ticks, %d tried by both schedulers; want about 10, most by both", keys, both)
	}
	got := receive(t, ctx, tp, keys)
	seen := map[string]bool{}
	for _, env := range got {
		if seen[env.ID] {
			t.Errorf("tick %s dispatched twice", env.ID)
		}
		seen[env.ID] = true
		if env.Time.UnixNano()%int64(every) != 0 || env.ID != event.TickKey("tick", env.Time) {
			t.Errorf("tick %s at %v: want an aligned tick and its key as id", env.ID, env.Time)
		}
	}
	if st, _ := admin.TopicStats(ctx, tp); st.Ready != 0 {
		t.Errorf("%d more ticks than keys", st.Ready)
	}
}

// TestSchedulerFallsBackToDispatch: without EnqueueUnique (an in-process
// backend) every tick is dispatched with Dispatch, and consumed.
func TestSchedulerFallsBackToDispatch(t *testing.T) {
	ctx := newApp(t, backends[0], backendOptions{})
	ticks := make(chan Tick, 100)
	svc, _ := newService(t, "ticks", event.ServiceOptions{})
	_ = event.ListenFunc(svc, func(_ context.Context, e Tick) error {
		ticks <- e
		return nil
	})
	start(t, ctx, svc)
	s := event.NewScheduler(dispatcher(t, ctx, "ticks"), event.SchedulerOptions{})
	if err := s.Add("tick", event.Every(20*time.Millisecond), func(tick time.Time) event.Event { return Tick{At: tick} }); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	var last time.Time
	for range 3 {
		select {
		case tk := <-ticks:
			if !tk.At.After(last) {
				t.Errorf("tick %v after %v", tk.At, last)
			}
			last = tk.At
		case <-time.After(patience):
			t.Fatal("no tick")
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); !errors.Is(err, event.ErrStarted) {
		t.Errorf("restart: %v, want ErrStarted", err)
	}
}

func TestSchedulerAddErrors(t *testing.T) {
	s := event.NewScheduler(nil, event.SchedulerOptions{})
	mk := func(time.Time) event.Event { return Tick{} }
	if err := s.Add("a", event.Every(time.Minute), mk); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		sched event.Schedule
		mk    func(time.Time) event.Event
		text  string
	}{
		{"", event.Every(time.Minute), mk, "empty name"},
		{"a", event.Every(time.Minute), mk, "two schedules"},
		{"b", event.Every(0), mk, "no tick"},
		{"c", nil, mk, "nil"},
		{"d", event.Every(time.Minute), nil, "nil"},
		{"e", mustCron(t, "0 0 30 2 *"), mk, "no tick"},
	}
	for _, c := range cases {
		if err := s.Add(c.name, c.sched, c.mk); !errors.Is(err, event.ErrInvalidSchedule) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("Add(%q): %v; want ErrInvalidSchedule mentioning %q", c.name, err, c.text)
		}
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("z", event.Every(time.Minute), mk); !errors.Is(err, event.ErrStarted) {
		t.Errorf("Add after Shutdown: %v", err)
	}
}
