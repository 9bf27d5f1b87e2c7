package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Kind says which baseline a system is compared with.
type Kind string

const (
	// KindPostgres systems keep their messages in PostgreSQL; their
	// baseline is the hand-written SKIP LOCKED loop.
	KindPostgres Kind = "postgres"
	// KindMemory systems keep their messages in the process; their
	// baseline is a raw buffered Go channel.
	KindMemory Kind = "memory"
	// KindNATS systems keep their messages in NATS JetStream; their
	// baseline is a hand-written nats.go publisher and pull consumer.
	KindNATS Kind = "nats"
	// KindKafka systems keep their messages in Kafka (a kfake cluster
	// unless $KAFKA_BROKERS is set); their baseline is a hand-written
	// franz-go producer and group consumer.
	KindKafka Kind = "kafka"
	// KindSQLite systems keep their messages in a SQLite file of their
	// own; their baseline is the hand-written SQLite loop.
	KindSQLite Kind = "sqlite"
)

// Msg is what every system carries: a sequence number and the time it was
// enqueued (UnixNano), for the latency scenario. Each system encodes it as
// its API expects (JSON bytes for most).
type Msg struct {
	N int64
	T int64
}

// System is one queue implementation under test. Adding a system means
// adding one file that calls register from its init function.
type System interface {
	// Name is the row label of the table, unique.
	Name() string
	Kind() Kind
	// Baseline reports whether the system is the baseline of its kind.
	Baseline() bool
	// Config describes the configuration, printed beside the numbers.
	Config(cfg Config) string
	// Open makes a fresh instance: its own schema, tables and clients.
	Open(ctx context.Context, env *Env, cfg Config) (Instance, error)
}

// Instance is one fresh setup of a system. Enqueue (and EnqueueBatch) are
// safe for concurrent use.
type Instance interface {
	Enqueue(ctx context.Context, m Msg) error
	// Consume starts workers consumers. Each message is passed to handle
	// inside the consumer's handler, then settled (acked/completed); done is
	// called once its settlement is known to the system. stop ends the
	// consumers and waits for them.
	Consume(ctx context.Context, workers int, handle func(Msg), done func()) (stop func() error, err error)
	// Close releases everything Open made, dropping its schema.
	Close() error
}

// BatchEnqueuer is an Instance with a batch API.
type BatchEnqueuer interface {
	EnqueueBatch(ctx context.Context, ms []Msg) error
}

// FanOut is a system that runs the fan-out scenario; its instances are
// FanOuters, except for one that makes no subscription.
type FanOut interface {
	// FanOutSubs is the number of subscriptions it makes: fanOutSubs, or
	// 0 to publish to a plain topic alone, the baseline of the publish
	// rate with subscriptions.
	FanOutSubs() int
}

// FanOuter is an Instance whose topic has subscriptions (consumer groups):
// each gets every message published after it was made.
type FanOuter interface {
	// Subscribe makes subscription name of the topic and returns what
	// consumes it, as Instance.Consume does the topic. A system that has
	// no subscriptions after all (a conveyor backend without
	// pubsub.Subscriber) returns errNoSubscriptions.
	Subscribe(ctx context.Context, name string) (ConsumeFunc, error)
}

// ConsumeFunc is the signature of Instance.Consume.
type ConsumeFunc func(ctx context.Context, workers int, handle func(Msg), done func()) (stop func() error, err error)

// Limited is a system that runs only some scenarios (a variant meant to
// show one thing).
type Limited interface {
	// Scenarios lists the scenarios it runs; nil means all that apply.
	Scenarios() []string
}

// Standalone is a system that is not a queue but a physical reference with
// a measurement of its own (pgbench).
type Standalone interface {
	// Measure runs once and returns transactions per second and how many
	// transactions it counted.
	Measure(ctx context.Context, env *Env, cfg Config) (tps float64, count int64, err error)
}

// The registry. The framework itself has no init() registration (see
// shared/style.md); in this benchmark program it is what lets a system be
// one self-contained file.
var registry []System

func register(s System) { registry = append(registry, s) }

// orderedSystems returns the registered systems, PostgreSQL first, then
// NATS, then in memory; each kind's baseline last, then by registration
// order within a file name sort.
// Within a kind the event systems (and their baseline) come after the
// queues.
func orderedSystems() []System {
	out := append([]System(nil), registry...)
	rank := func(s System) int {
		r := 0
		switch s.Kind() {
		case KindNATS:
			r += 10
		case KindMemory:
			r += 20
		case KindKafka:
			r += 30
		case KindSQLite:
			r += 40
		}
		if ok, _ := applicable(s, ScEvents); ok {
			r += 5
		}
		if _, ok := s.(Standalone); ok {
			r += 2
		} else if s.Baseline() {
			r++
		}
		return r
	}
	order := map[string]int{}
	for i, n := range preferredOrder {
		order[n] = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(out[i]), rank(out[j])
		if ri != rj {
			return ri < rj
		}
		oi, iok := order[out[i].Name()]
		oj, jok := order[out[j].Name()]
		if iok && jok {
			return oi < oj
		}
		if iok != jok {
			return iok
		}
		return out[i].Name() < out[j].Name()
	})
	return out
}

// preferredOrder puts conveyor first in each group of the table.
var preferredOrder = []string{
	"conveyor dbpubsub", "conveyor dbpubsub (OTel)", "conveyor dbpubsub (ConfirmAck)", "conveyor dbpubsub (ConfirmAck, 128 consumers)", "conveyor dbpubsub (no subscriptions)", "river (defaults)", "river (tuned)", "watermill-sql",
	"conveyor natspubsub", "watermill-nats (defaults)",
	"conveyor sqlitepubsub", "conveyor sqlitepubsub (128 consumers)", "river sqlite (tuned)", "watermill-nats (watermill-benchmark)",
	"conveyor channelpubsub", "conveyor channelpubsub (OTel)", "watermill gochannel", "gocloud mempubsub",
	"conveyor event (dbpubsub)", "watermill cqrs (watermill-sql)", "conveyor event (channelpubsub)", "watermill cqrs (gochannel)",
}

// Config is the whole run's configuration.
type Config struct {
	N           int           // messages per run of scenarios 1, 2, 3 and 8
	RoundtripN  int           // messages per run of the in-memory round trip (scenario 5) and fan-out (8)
	EventsN     int           // events per run of the in-memory event systems (scenario 7; on PostgreSQL: N)
	W           int           // workers (producers, consumers)
	Reps        int           // repetitions of each scenario, at least; the median is reported
	MinTime     time.Duration // past Reps, a system is repeated, up to MaxReps times in all, until its timed runs add up to this
	MaxReps     int           // the most repetitions MinTime may ask for
	BatchSize   int           // messages per batch call
	Rate        int           // latency scenario: messages per second
	LatencyFor  time.Duration // latency scenario: how long the producer runs
	MaxRun      time.Duration // cap on one timed run (a slow system reports what it did)
	Backlog     int           // backlog scenario: messages waiting before the consumer starts
	BacklogMax  time.Duration // backlog scenario: cap on the consumer process's drain
	BacklogReps int           // backlog scenario: repetitions
	PoolSize    int           // database connections per system instance
	// SQLite systems (one writer per file, an fsync per commit at FULL):
	// fewer messages per run and a shorter latency run, to keep make
	// bench's time; their backlog scenario is opt-in.
	SQLiteN          int           `json:",omitempty"` // messages per run of scenarios 1, 2 and 3
	SQLiteLatencyFor time.Duration `json:",omitempty"` // latency scenario: how long the producer runs
	SQLiteBacklog    int           `json:",omitempty"` // backlog scenario: messages (0 skips it)
	Systems          string        // comma-separated substrings; empty means all
	SkipSystems      string        `json:",omitempty"` // comma-separated substrings of systems not to run
	Scenarios        string        // comma-separated scenario ids; empty means all
}

func (c Config) wantSystem(name string) bool {
	return (c.Systems == "" || matchesAny(name, c.Systems)) && !matchesAny(name, c.SkipSystems)
}

// matchesAny reports whether name contains one of the comma-separated
// substrings of list.
func matchesAny(name, list string) bool {
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" && strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// forKind is c as the systems of kind k run it: the SQLite ones with
// their own N, latency run and backlog.
func (c Config) forKind(k Kind) Config {
	if k == KindSQLite {
		c.N, c.LatencyFor, c.Backlog = c.SQLiteN, c.SQLiteLatencyFor, c.SQLiteBacklog
	}
	return c
}

func (c Config) wantScenario(id string) bool {
	if c.Scenarios == "" {
		return true
	}
	for _, s := range strings.Split(c.Scenarios, ",") {
		if strings.TrimSpace(s) == id {
			return true
		}
	}
	return false
}

func (c Config) validate() error {
	switch {
	case c.N < 1:
		return fmt.Errorf("-n is %d, want 1 or more", c.N)
	case c.RoundtripN < 1:
		return fmt.Errorf("-roundtrip-n is %d, want 1 or more", c.RoundtripN)
	case c.EventsN < 1:
		return fmt.Errorf("-events-n is %d, want 1 or more", c.EventsN)
	case c.W < 1:
		return fmt.Errorf("-w is %d, want 1 or more", c.W)
	case c.Reps < 1:
		return fmt.Errorf("-reps is %d, want 1 or more", c.Reps)
	case c.MinTime < 0:
		return fmt.Errorf("-min-time is %v, want 0 (off) or more", c.MinTime)
	case c.MaxReps < c.Reps && c.MinTime > 0:
		return fmt.Errorf("-max-reps is %d, want at least -reps (%d)", c.MaxReps, c.Reps)
	case c.BatchSize < 1:
		return fmt.Errorf("-batch is %d, want 1 or more", c.BatchSize)
	case c.Rate < 1:
		return fmt.Errorf("-rate is %d, want 1 or more", c.Rate)
	case c.LatencyFor <= 0:
		return fmt.Errorf("-latency-for is %v, want more than 0", c.LatencyFor)
	case c.MaxRun <= 0:
		return fmt.Errorf("-max-run is %v, want more than 0", c.MaxRun)
	case c.Backlog < 0:
		return fmt.Errorf("-backlog is %d, want 0 (skip) or more", c.Backlog)
	case c.BacklogMax <= 0:
		return fmt.Errorf("-backlog-max-run is %v, want more than 0", c.BacklogMax)
	case c.SQLiteN < 1:
		return fmt.Errorf("-sqlite-n is %d, want 1 or more", c.SQLiteN)
	case c.SQLiteLatencyFor <= 0:
		return fmt.Errorf("-sqlite-latency-for is %v, want more than 0", c.SQLiteLatencyFor)
	case c.SQLiteBacklog < 0:
		return fmt.Errorf("-sqlite-backlog is %d, want 0 (skip) or more", c.SQLiteBacklog)
	case c.PoolSize < 1:
		return fmt.Errorf("-pool is %d, want 1 or more", c.PoolSize)
	}
	return nil
}
