// Command conveyor-relay is the outbox relay as a process: it moves the
// messages of a dbpubsub topic to a natspubsub topic, or a kafkapubsub
// topic (see package relay), until SIGINT or SIGTERM, then finishes the
// messages in hand and logs what it did.
//
//	go run github.com/conveyorgo/conveyor/relay/cmd/conveyor-relay -topic orders
//	go run github.com/conveyorgo/conveyor/relay/cmd/conveyor-relay -topic orders -kafka 127.0.0.1:9092
//
// The database is -dsn or $DATABASE_URL, migrated (conveyor-migrate); the
// NATS server -nats or $NATS_URL, or the Kafka brokers -kafka. Run as many
// as wanted: they share the source's messages. Kafka keeps no unique key:
// a message published again after a crash is a second copy with the same
// identity (pubsub.HeaderMessageID), which the consumers' inbox drops.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/relay"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "conveyor-relay:", err)
		os.Exit(1)
	}
}

// errUsage is a command line that makes no sense; the flag set said why.
var errUsage = errors.New("usage")

// run relays as args say until ctx ends, logging to stderr.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("conveyor-relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("dsn", os.Getenv("DATABASE_URL"), "PostgreSQL DSN of the source (default $DATABASE_URL)")
	table := fs.String("table", dbpubsub.DefaultTable, "the source's message table (dbpubsub Options.Table)")
	topic := fs.String("topic", "", "the source topic (required)")
	sub := fs.String("subscription", pubsub.DefaultSubscription, "the subscription of the source topic relayed")
	natsURL := fs.String("nats", os.Getenv("NATS_URL"), "NATS server URL of the destination (default $NATS_URL)")
	kafka := fs.String("kafka", "", "comma-separated Kafka brokers of the destination, a kafkapubsub topic, instead of NATS")
	groups := fs.Bool("kafka-consumer-groups", false, "the destination's subscriptions are Kafka consumer groups (kafkapubsub Options.ConsumerGroups), not share groups: pass it when its consumers run in that mode, so that a subscription the relay makes is of theirs")
	prefix := fs.String("prefix", natspubsub.DefaultPrefix, "the destination's natspubsub or kafkapubsub Options.Prefix")
	to := fs.String("to", "", "the destination topic (default: -topic)")
	source := fs.String("source", "", "relay Options.Source (default: topic/subscription)")
	workers := fs.Int("workers", relay.DefaultWorkers, "messages moved at once")
	confirmAck := fs.Bool("confirm-ack", false, "commit each ack of the source before the next message (dbpubsub Options.ConfirmAck); by default acks are written in groups: an ack lost with the process costs a duplicate publish, which the stream drops (on Kafka, the consumers' inbox)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	switch {
	case *topic == "":
		fmt.Fprintln(stderr, "conveyor-relay: -topic is required")
		return errUsage
	case *dsn == "":
		fmt.Fprintln(stderr, "conveyor-relay: no DSN: pass -dsn or set DATABASE_URL")
		return errUsage
	case *kafka != "" && set(fs, "nats"):
		fmt.Fprintln(stderr, "conveyor-relay: pass -nats or -kafka, not both")
		return errUsage
	case *kafka == "" && *groups:
		fmt.Fprintln(stderr, "conveyor-relay: -kafka-consumer-groups is for a Kafka destination: pass -kafka")
		return errUsage
	case *kafka == "" && *natsURL == "":
		fmt.Fprintln(stderr, "conveyor-relay: no NATS server: pass -nats or set NATS_URL (or -kafka for Kafka)")
		return errUsage
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "conveyor-relay: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	if *to == "" {
		*to = *topic
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	db, err := dbpubsub.Open(*dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	src, err := dbpubsub.New(db, dbpubsub.Options{Table: *table, ConfirmAck: *confirmAck, Logger: log})
	if err != nil {
		return err
	}
	defer src.Close()
	from, err := src.Subscribe(ctx, *topic, *sub)
	if err != nil {
		return err
	}
	var dst interface {
		pubsub.PubSub
		Close() error
	}
	if *kafka != "" {
		var brokers []string
		if brokers, err = kafkapubsub.ParseBrokers(*kafka); err != nil {
			return fmt.Errorf("-kafka: %w", err)
		}
		dst, err = kafkapubsub.New(kafkapubsub.Options{Brokers: brokers, Prefix: *prefix, ConsumerGroups: *groups, Logger: log})
	} else {
		dst, err = natspubsub.Connect(*natsURL, natspubsub.Options{Prefix: *prefix, Logger: log})
	}
	if err != nil {
		return err
	}
	defer dst.Close()
	dest, err := pubsub.OpenTopic(dst, *to)
	if err != nil {
		return err
	}
	r, err := relay.New(from, dest, relay.Options{Workers: *workers, Source: *source, Logger: log})
	if err != nil {
		return err
	}
	log.Info("conveyor-relay: relaying", slog.String("from", *topic), slog.String("subscription", *sub), slog.String("to", *to),
		slog.Bool("unique", r.Unique()))
	err = r.Run(ctx)
	s := r.Stats()
	log.Info("conveyor-relay: stopped", slog.Int64("relayed", s.Relayed), slog.Int64("duplicates", s.Duplicates),
		slog.Int64("rejected", s.Rejected), slog.Int64("failed", s.Failed))
	return err
}

// set reports whether the flag name was given on the command line.
func set(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}
