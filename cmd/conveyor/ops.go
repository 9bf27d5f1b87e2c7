package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

// The operator's commands (issue 19) act on a running deployment's
// messages through the backend's inspection abilities (pubsub's
// TopicLister, Peeker, Canceler, DeadLetters, Stater). Each is one entry
// of opsCommands: its name, usage, own flags and the function that runs
// it on a connected backend; run dispatches every name in the table.

// Exit codes of the operator's commands (documented in exitCodesHelp and doc.go).
const (
	exitOK       = 0 // done
	exitFailed   = 1 // the operation failed: the backend's error, or a schema not migrated
	exitUsage    = 2 // bad flags or arguments, a malformed message ID
	exitNotFound = 3 // no such topic, subscription or message
	exitRefused  = 4 // not confirmed, or the message is in the wrong state
)

// opsCommand is one operator's command.
type opsCommand struct {
	name string
	args string // the positional arguments: [optional] ones in brackets
	// synopsis is what the usage shows after the name (args when empty).
	synopsis string
	summary  string
	help     string // what it does, its own flags and output
	// destructive commands may ask for confirmation (confirm) before
	// acting, and take --yes.
	destructive bool
	flags       func(fs *flag.FlagSet) // registers the command's own flags, if any
	run         func(c *opsCall) error
}

// opsCommands is the table of operator's commands, in the order of the
// usage text. Adding one (pause, resume) is adding an entry.
var opsCommands = []*opsCommand{topicsCmd, statsCmd, peekCmd, showCmd, requeueCmd, purgeCmd, cancelCmd, pauseCmd, resumeCmd, migrateCmd}

func findOpsCommand(name string) *opsCommand {
	for _, c := range opsCommands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// opsCall is one run of an operator's command: its parsed flags and
// arguments and the backend it connected to.
type opsCall struct {
	cmd            *opsCommand
	args           []string // positional
	stdout, stderr io.Writer
	e              env

	flags           map[string]string // every flag's value, as given or by default
	subscription    string
	subscriptionSet bool // --subscription was given
	json            bool
	yes             bool

	ps    pubsub.PubSub // nil for migrate
	db    *bun.DB       // when the backend is PostgreSQL
	table string
	ctx   context.Context
}

// cliError is an error with its exit code and, maybe, a hint saying how
// to fix it.
type cliError struct {
	code int
	err  error
	hint string
}

func (e *cliError) Error() string { return e.err.Error() }
func (e *cliError) Unwrap() error { return e.err }

func usageErrorf(format string, a ...any) error {
	return &cliError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

func notFoundErrorf(format string, a ...any) error {
	return &cliError{code: exitNotFound, err: fmt.Errorf(format, a...)}
}

func refusedErrorf(format string, a ...any) error {
	return &cliError{code: exitRefused, err: fmt.Errorf(format, a...)}
}

// exitCode returns the exit code of a command's error and the hint to
// print with it.
func exitCode(err error) (int, string) {
	var ce *cliError
	if errors.As(err, &ce) {
		return ce.code, ce.hint
	}
	switch {
	case errors.Is(err, migrations.ErrNotMigrated):
		return exitFailed, "Run 'conveyor migrate' (with the same --database-url and --table) to bring the schema up to date."
	case errors.Is(err, sqlitepubsub.ErrNotMigrated):
		return exitFailed, "No PubSub has used this file yet, or it is not a sqlitepubsub file: check --sqlite."
	case errors.Is(err, migrations.ErrNotEmpty):
		return exitRefused, "Deliver, re-queue or purge the waiting messages first, or pass --force to revert it anyway."
	case errors.Is(err, migrations.ErrUnknownRole):
		return exitNotFound, "Create the role first (CREATE ROLE app LOGIN), then grant it."
	case errors.Is(err, admin.ErrInvalidID):
		return exitUsage, "'conveyor peek TOPIC' lists the messages' IDs."
	case errors.Is(err, pubsub.ErrInvalidTopic), errors.Is(err, pubsub.ErrInvalidSubscription), errors.Is(err, admin.ErrInvalidCursor):
		return exitUsage, ""
	case errors.Is(err, admin.ErrNotFound):
		return exitNotFound, "'conveyor peek TOPIC --state STATE' lists the messages in a state."
	case errors.Is(err, pubsub.ErrNoSubscription), errors.Is(err, natspubsub.ErrNoStream):
		return exitNotFound, "'conveyor topics' lists the topics and their subscriptions."
	case errors.Is(err, admin.ErrWrongState):
		return exitRefused, ""
	case errors.Is(err, pubsub.ErrUnsupported):
		return exitFailed, "This backend does not offer it."
	}
	return exitFailed, ""
}

// runOps runs the operator's command c with args and returns its exit code.
func runOps(c *opsCommand, args []string, stdout, stderr io.Writer, e env) int {
	call := &opsCall{cmd: c, stdout: stdout, stderr: stderr, e: e}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dbURL := fs.String("database-url", e.getenv("DATABASE_URL"), "")
	table := fs.String("table", dbpubsub.DefaultTable, "")
	natsURL := fs.String("nats-url", e.getenv("NATS_URL"), "")
	prefix := fs.String("prefix", natspubsub.DefaultPrefix, "")
	sqlitePath := fs.String("sqlite", "", "")
	kafkaBrokers := fs.String("kafka-brokers", e.getenv("KAFKA_BROKERS"), "")
	timeout := fs.Duration("timeout", time.Minute, "")
	fs.StringVar(&call.subscription, "subscription", pubsub.DefaultSubscription, "")
	fs.BoolVar(&call.json, "json", false, "")
	if c.destructive {
		fs.BoolVar(&call.yes, "yes", false, "")
	}
	if c.flags != nil {
		c.flags(fs)
	}
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, c.usage())
		return exitOK
	}
	fail := func(err error) int {
		code, hint := exitCode(err)
		fmt.Fprintf(stderr, "conveyor %s: %v\n", c.name, err)
		switch {
		case hint != "":
			fmt.Fprintln(stderr, hint)
		case code == exitUsage:
			fmt.Fprintf(stderr, "Run 'conveyor help %s' for usage.\n", c.name)
		}
		return code
	}
	if err != nil {
		return fail(usageErrorf("%v", err))
	}
	fs.Visit(func(f *flag.Flag) { call.subscriptionSet = call.subscriptionSet || f.Name == "subscription" })
	call.flags = map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { call.flags[f.Name] = f.Value.String() })
	call.args = pos
	if err := call.checkArgs(); err != nil {
		return fail(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	call.ctx = ctx
	closeBackend, err := call.connect(backendFlags{dbURL: *dbURL, table: *table, natsURL: *natsURL, prefix: *prefix,
		sqlitePath: *sqlitePath, kafkaBrokers: *kafkaBrokers})
	if err != nil {
		return fail(err)
	}
	defer closeBackend()
	if err := c.run(call); err != nil {
		return fail(err)
	}
	return exitOK
}

// checkArgs checks the positional arguments' count against the usage line
// and the names among them.
func (c *opsCall) checkArgs() error {
	var min, max int
	for _, a := range strings.Fields(c.cmd.args) {
		max++
		if !strings.HasPrefix(a, "[") {
			min++
		}
	}
	switch {
	case len(c.args) < min:
		return usageErrorf("missing arguments: want %s", c.cmd.args)
	case len(c.args) > max:
		return usageErrorf("too many arguments: %q (want %s)", c.args[max:], c.cmd.args)
	}
	if len(c.args) > 0 && strings.Contains(c.cmd.args, "TOPIC") {
		if err := pubsub.ValidateSubscription(c.args[0], c.subscription); err != nil {
			return usageErrorf("%v", err)
		}
	}
	return nil
}

// backendFlags are the connection flags, as given or from the
// environment.
type backendFlags struct {
	dbURL, table, natsURL, prefix, sqlitePath, kafkaBrokers string
}

// connect opens the one backend the flags name and returns what closes it.
func (c *opsCall) connect(f backendFlags) (func(), error) {
	dbURL, table, natsURL, prefix := f.dbURL, f.table, f.natsURL, f.prefix
	var given []string
	for _, b := range []struct{ value, name string }{
		{f.dbURL, "--database-url (or $DATABASE_URL)"}, {f.natsURL, "--nats-url (or $NATS_URL)"},
		{f.sqlitePath, "--sqlite"}, {f.kafkaBrokers, "--kafka-brokers (or $KAFKA_BROKERS)"},
	} {
		if b.value != "" {
			given = append(given, b.name)
		}
	}
	switch {
	case len(given) > 1:
		return nil, usageErrorf("%s are set: pick one backend", strings.Join(given, " and "))
	case f.sqlitePath != "":
		return c.connectSQLite(f.sqlitePath)
	case f.kafkaBrokers != "":
		return c.connectKafka(f.kafkaBrokers, prefix)
	case dbURL == "" && natsURL == "":
		return nil, usageErrorf("no backend: pass --database-url (or set $DATABASE_URL) for PostgreSQL, --nats-url (or set $NATS_URL) for NATS, --sqlite PATH for a SQLite file, or --kafka-brokers (or set $KAFKA_BROKERS) for Kafka")
	case natsURL != "":
		if c.cmd.name == "migrate" {
			return nil, usageErrorf("migrate applies to PostgreSQL only: pass --database-url (or set $DATABASE_URL)")
		}
		// Bind: the operator's commands look streams up and never create
		// one, so a mistyped topic is reported, not made.
		ps, err := natspubsub.Connect(natsURL, natspubsub.Options{Prefix: prefix, Bind: true, Logger: c.logger()})
		if err != nil {
			return nil, err
		}
		c.ps = ps
		return func() { _ = ps.Close() }, nil
	}
	if err := migrations.ValidateTable(table); err != nil {
		return nil, usageErrorf("--table %q: %v", table, err)
	}
	db, err := dbpubsub.Open(dbURL)
	if err != nil {
		return nil, usageErrorf("--database-url: %v", err)
	}
	c.db, c.table = db, table
	if c.cmd.name == "migrate" {
		return func() { _ = db.Close() }, nil
	}
	if err := migrations.Verify(c.ctx, db, migrations.WithTable(table)); err != nil {
		db.Close()
		return nil, err
	}
	// A short-lived client: no listening, no pruning, no rescue of
	// expired leases (the apps' PubSubs do those, with their own retry
	// policy).
	ps, err := dbpubsub.New(db, dbpubsub.Options{Table: table, NoListen: true, PruneInterval: -1,
		RescueInterval: 24 * time.Hour, Logger: c.logger()})
	if err != nil {
		db.Close()
		return nil, usageErrorf("%v", err)
	}
	c.ps = ps
	return func() { _ = ps.Close(); _ = db.Close() }, nil
}

// connectSQLite opens the sqlitepubsub file at path, which must exist and
// have the tables (sqlitepubsub.Verify): an operator's command never
// makes a file or tables where it was wrongly pointed.
func (c *opsCall) connectSQLite(path string) (func(), error) {
	if c.cmd.name == "migrate" {
		return nil, usageErrorf("migrate applies to PostgreSQL only: a sqlitepubsub file gets its tables from its first PubSub")
	}
	if _, err := os.Stat(path); err != nil {
		return nil, usageErrorf("--sqlite: %v", err)
	}
	db, err := sqlitepubsub.OpenDB(path, "")
	if err != nil {
		return nil, usageErrorf("--sqlite: %v", err)
	}
	if err := sqlitepubsub.Verify(c.ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	// A short-lived client: no pruning, no rescue of expired leases (the
	// apps' PubSubs do those, with their own retry policy).
	ps, err := sqlitepubsub.New(db, sqlitepubsub.Options{PruneInterval: -1, RescueInterval: 24 * time.Hour, Logger: c.logger()})
	if err != nil {
		db.Close()
		return nil, usageErrorf("%v", err)
	}
	c.ps = ps
	return func() { _ = ps.Close(); _ = db.Close() }, nil
}

// connectKafka opens a kafkapubsub PubSub on brokers (host:port,
// comma-separated) under prefix. Kafka has no stats, peek, cancel or
// pause (kafkapubsub's doc): those commands say so; the topics are
// listed, the dead messages listed, re-queued and purged.
func (c *opsCall) connectKafka(brokers, prefix string) (func(), error) {
	if c.cmd.name == "migrate" {
		return nil, usageErrorf("migrate applies to PostgreSQL only: kafkapubsub makes its Kafka topics when first used")
	}
	list, err := kafkapubsub.ParseBrokers(brokers)
	if err != nil {
		return nil, usageErrorf("--kafka-brokers: %v", err)
	}
	ps, err := kafkapubsub.New(kafkapubsub.Options{Brokers: list, Prefix: prefix, Logger: c.logger()})
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	c.ps = ps
	return func() { _ = ps.Close() }, nil
}

// logger passes on the backend's warnings to stderr.
func (c *opsCall) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// topics lists the backend's topics, or nil when it cannot (no
// admin.TopicLister).
func (c *opsCall) topics() ([]admin.TopicInfo, error) {
	ts, err := admin.ListTopics(c.ctx, c.ps)
	if errors.Is(err, pubsub.ErrUnsupported) {
		return nil, nil
	}
	return ts, err
}

// subscriptionsOf returns the subscriptions of topic to act on: the one of
// --subscription, else all of the topic's (its default one when it has
// none). It checks that topic and the subscription exist.
func (c *opsCall) subscriptionsOf(topic string) ([]string, error) {
	ts, err := c.topics()
	if err != nil {
		return nil, err
	}
	var subs []string
	switch {
	case ts != nil:
		i := slices.IndexFunc(ts, func(t admin.TopicInfo) bool { return t.Name == topic })
		if i < 0 {
			return nil, notFoundErrorf("unknown topic %q (conveyor topics lists them)", topic)
		}
		subs = ts[i].Subscriptions
	default:
		// Without a topic list, a missing topic is the backend's error
		// when it is used, or an empty topic.
		if subs, err = admin.ListSubscriptions(c.ctx, c.ps, topic); err != nil && !errors.Is(err, pubsub.ErrUnsupported) {
			return nil, err
		}
	}
	if !c.subscriptionSet {
		if len(subs) == 0 {
			return []string{pubsub.DefaultSubscription}, nil
		}
		return subs, nil
	}
	if c.subscription != pubsub.DefaultSubscription && !slices.Contains(subs, c.subscription) {
		return nil, notFoundErrorf("unknown subscription %q of topic %q (conveyor topics lists them)", c.subscription, topic)
	}
	return []string{c.subscription}, nil
}

// topic returns the handle on subscription sub of topic, which exist
// (subscriptionsOf): the default one without declaring it, another
// through Subscribe, which finds it.
func (c *opsCall) topic(topic, sub string) (pubsub.Topic, error) {
	if sub == pubsub.DefaultSubscription {
		return c.ps.Topic(topic), nil
	}
	return pubsub.Subscribe(c.ctx, c.ps, topic, sub)
}

// target is the topic and the one subscription a command on a topic acts
// on (the first argument and --subscription, given or default), checked to
// exist.
func (c *opsCall) target() (pubsub.Topic, error) {
	c.subscriptionSet = true // the one subscription, even the default one
	if _, err := c.subscriptionsOf(c.args[0]); err != nil {
		return nil, err
	}
	return c.topic(c.args[0], c.subscription)
}

// label names the target for messages: topic "orders", or topic "orders"
// (subscription "billing").
func (c *opsCall) label() string {
	if c.subscription == pubsub.DefaultSubscription {
		return fmt.Sprintf("topic %q", c.args[0])
	}
	return fmt.Sprintf("topic %q (subscription %q)", c.args[0], c.subscription)
}

func (c *opsCommand) synopsisOrArgs() string {
	if c.synopsis != "" {
		return c.synopsis
	}
	return c.args
}

// usage is the command's help.
func (c *opsCommand) usage() string {
	s := fmt.Sprintf("Usage: conveyor %s [flags] %s\n\n%s", c.name, c.synopsisOrArgs(), c.help)
	s += "\nConnection flags:\n" + connectionFlags
	if c.destructive {
		s += "  -yes                 do not ask for confirmation (required when stdin is not a terminal)\n"
	}
	return s + "\n" + exitCodesHelp
}

const connectionFlags = `  -database-url URL    PostgreSQL (default $DATABASE_URL)
  -table NAME          dbpubsub's message table (default conveyor_events)
  -nats-url URL        NATS with JetStream (default $NATS_URL); it can peek at
                       dead messages only, and cannot cancel
  -prefix P            natspubsub's stream prefix, or kafkapubsub's (default conveyor)
  -sqlite PATH         a sqlitepubsub file (it must exist and have its tables)
  -kafka-brokers LIST  Kafka, host:port of each broker, comma-separated (default
                       $KAFKA_BROKERS); -prefix is kafkapubsub's. It can peek at
                       and show dead messages only, and has no topic list, stats,
                       cancel or pause
  -subscription NAME   act on this subscription of the topic (default: the default one)
  -json                print one JSON document instead of a table
  -timeout D           give up after D (default 1m)
`

const exitCodesHelp = `Exit codes:
  0  done
  1  the operation failed (the backend's error; a schema not migrated)
  2  usage error: bad flags or arguments, a malformed message ID
  3  not found: unknown topic, subscription or message
  4  refused: not confirmed, or the message is not in a state the command applies to
`
