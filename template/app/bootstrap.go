package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dashboard"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/sqlitepubsub"

	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/template/app/orders"
)

// App is the wired app: its injector, its HTTP handlers and what it
// started. Make it with bootstrap; stop it with Shutdown.
type App struct {
	ctx       context.Context // carries the injector
	cfg       Config
	log       *slog.Logger
	stats     *Stats
	telemetry *Telemetry
	handlers  Handlers
	ps        pubsub.PubSub
	scheduler *event.Scheduler
	dashboard *dashboard.Dashboard // nil when it is off
}

// bootstrap builds the telemetry and the injector, registers the
// configuration, the logger, the backend, the topics and the events, starts
// the event services and the scheduler, and fills the HTTP handlers. ctx
// bounds the start-up only (database migrations): the app runs until
// Shutdown.
func bootstrap(ctx context.Context, cfg Config, log *slog.Logger) (_ *App, err error) {
	// Metrics and traces (telemetry.go): GET /metrics, and OTLP export
	// when OTEL_EXPORTER_OTLP_ENDPOINT is set.
	tel, err := newTelemetry(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	ictx := di.NewContext(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			err = errors.Join(err, di.Shutdown(ictx), tel.Shutdown(ictx))
		}
	}()
	app := &App{ctx: ictx, cfg: cfg, log: log, stats: NewStats(), telemetry: tel}
	defer func() {
		if err != nil && app.dashboard != nil {
			_ = app.dashboard.Close() // it returns no error
		}
	}()

	// The app's own services, by type: `inject:""` fields get them.
	if err := errors.Join(
		di.RegisterSingleton(ictx, cfg),
		di.RegisterSingleton(ictx, log),
		di.RegisterSingleton(ictx, app.stats),
		di.RegisterSingleton(ictx, orders.NewSales()),
		di.RegisterSingleton(ictx, orders.NewTally()),
	); err != nil {
		return nil, err
	}

	// The backend: where messages live. Swapping it is one line.
	switch cfg.Backend {
	case BackendDB:
		if err := registerDatabase(ctx, ictx, cfg, log); err != nil {
			return nil, err
		}
		err = dbpubsub.Register(ictx) // durable in PostgreSQL, shared by every process on the database
	case BackendNATS:
		if err := registerNATS(ictx, cfg, log); err != nil {
			return nil, err
		}
		// durable in NATS JetStream, shared by every process on the server or cluster
		err = natspubsub.RegisterWithOptions(ictx, natspubsub.Options{Prefix: cfg.NATSPrefix, Logger: log})
	case BackendSQLite:
		// durable in a SQLite file, shared by every process on the file
		err = sqlitepubsub.RegisterFile(ictx, cfg.SQLitePath, sqlitepubsub.Options{Logger: log})
		log.Info("SQLite file", "path", cfg.SQLitePath)
	case BackendKafka:
		// durable in Kafka, shared by every process on the cluster
		brokers, _ := kafkapubsub.ParseBrokers(cfg.KafkaBrokers) // checked by LoadConfig
		err = kafkapubsub.RegisterWithOptions(ictx, kafkapubsub.Options{Brokers: brokers, Prefix: cfg.KafkaPrefix, Logger: log})
		log.Info("Kafka cluster", "brokers", cfg.KafkaBrokers, "prefix", cmp.Or(cfg.KafkaPrefix, kafkapubsub.DefaultPrefix))
	default:
		err = channelpubsub.Register(ictx) // in this process's memory
	}
	if err != nil {
		return nil, err
	}
	// Every topic, dispatcher and event service of the backend is traced
	// and measured.
	if err := tel.conveyor.Register(ictx); err != nil {
		return nil, err
	}

	// Topics and event dispatchers, injected by topic name:
	// `inject:"orders"` on a pubsub.Topic or an event.Dispatcher field.
	if err := event.Register(ictx); err != nil {
		return nil, err
	}

	// The event services consume the topic and call the listeners, whose
	// fields are injected when they start. di.Shutdown stops them first.
	// Fulfilment reads the topic's default subscription; analytics has a
	// subscription of its own, so it gets every event too, and retries
	// its copies apart: a failing analytics listener never holds back an
	// order's fulfilment. Each starts (and subscribes) before the events
	// it must see are dispatched.
	opts := event.ServiceOptions{
		Workers:      cfg.Workers,
		DrainTimeout: cfg.DrainTimeout,
		Logger:       log,
		// The events' attributes on their spans, and the counts of /stats.
		Middleware: []event.Middleware{tel.conveyor.Middleware(), event.Observe(app.stats.Observe)},
	}
	fulfilment, err := event.NewService(orders.Topic, opts)
	if err != nil {
		return nil, err
	}
	opts.Subscription = orders.AnalyticsSubscription
	analytics, err := event.NewService(orders.Topic, opts)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(
		event.Listen(fulfilment, &orders.Fulfil{}),
		event.Listen(fulfilment, &orders.Report{}),
		event.Listen(analytics, &orders.CountOrder{}),
		event.Listen(analytics, &orders.Snapshot{}),
	); err != nil {
		return nil, err
	}
	if err := errors.Join(fulfilment.Start(ictx), analytics.Start(ictx)); err != nil {
		return nil, err
	}

	// The HTTP handlers: their tagged fields come from the injector.
	if err := di.Fill(ictx, &app.handlers); err != nil {
		return nil, err
	}
	app.handlers.Metrics = tel.MetricsHandler(log)
	if app.ps, err = di.Resolve[pubsub.PubSub](ictx); err != nil {
		return nil, err
	}
	// The dashboard at /conveyor/: the app's topic is named, so that it is
	// shown from the start, before a message or a subscription makes it
	// known to the backend.
	if cfg.Dashboard != DashboardOff {
		app.dashboard, err = dashboard.New(app.ps, dashboard.Options{Prefix: "/conveyor", Topics: []string{orders.Topic},
			ReadOnly: cfg.Dashboard == DashboardReadOnly, Logger: log})
		if err != nil {
			return nil, err
		}
		app.handlers.Dashboard = app.dashboard
	}

	// The periodic event: a sales report every cfg.ReportEvery. With several
	// processes on one database, each tick is dispatched once.
	dispatcher, err := di.ResolveNamed[event.Dispatcher](ictx, orders.Topic)
	if err != nil {
		return nil, err
	}
	app.scheduler = event.NewScheduler(dispatcher, event.SchedulerOptions{Logger: log})
	err = app.scheduler.Add("sales-report", event.Every(cfg.ReportEvery), func(tick time.Time) event.Event {
		return orders.ReportDue{At: tick}
	})
	if err != nil {
		return nil, err
	}
	if err := app.scheduler.Start(ictx); err != nil {
		return nil, err
	}
	return app, nil
}

// registerDatabase opens the database, creates cfg.Schema if it is set and
// missing, brings the schema up to date (safe when several processes start
// at once) and registers the database in the injector, where
// dbpubsub.Register finds it. di.Shutdown closes it last. It logs which
// database and schema the app uses, and the DSN without its password.
func registerDatabase(ctx, ictx context.Context, cfg Config, log *slog.Logger) error {
	dsn := cfg.DatabaseURL
	if cfg.Schema != "" {
		// Every connection of the pool, made now or later, uses the schema.
		dsn = withSearchPath(dsn, cfg.Schema)
	}
	db, err := dbpubsub.Open(dsn)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	if err := di.RegisterSingleton(ictx, db); err != nil {
		db.Close()
		return err
	}
	start := time.Now()
	if cfg.Schema != "" {
		if err := createSchema(ctx, db.DB, cfg.Schema); err != nil {
			return fmt.Errorf("database: %w", err)
		}
	}
	if err := migrations.Migrate(ctx, db); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	var database, schema string
	if err := db.QueryRowContext(ctx, "SELECT current_database(), coalesce(current_schema(), '')").Scan(&database, &schema); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	log.Info("database ready", "database", database, "schema", schema, "dsn", redactDSN(cfg.DatabaseURL),
		"migrated_in", time.Since(start).Round(time.Millisecond))
	return nil
}

// registerNATS connects to the NATS server and registers the connection
// in the injector, where natspubsub.Register finds it; di.Shutdown closes
// it last. The connection reconnects for as long as the app runs, with
// natspubsub's settings for the default request timeout (pings, write
// timeout: natspubsub.ConnectOptions).
func registerNATS(ictx context.Context, cfg Config, log *slog.Logger) error {
	opts := append(natspubsub.ConnectOptions(natspubsub.Options{}), nats.Name("conveyor-template"), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", "error", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS reconnected", "server", nc.ConnectedUrlRedacted()) }))
	nc, err := nats.Connect(cfg.NATSURL, opts...)
	if err != nil {
		return fmt.Errorf("NATS_URL: %w", err)
	}
	if err := di.RegisterSingleton(ictx, nc); err != nil {
		nc.Close()
		return err
	}
	log.Info("NATS ready", "server", nc.ConnectedUrlRedacted(), "prefix", cmp.Or(cfg.NATSPrefix, natspubsub.DefaultPrefix))
	return nil
}

// createSchema creates the schema name unless it exists. It needs the
// CREATE privilege on the database only when the schema is missing.
func createSchema(ctx context.Context, db *sql.DB, name string) error {
	exists := func() (bool, error) {
		var ok bool
		err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", name).Scan(&ok)
		return ok, err
	}
	if ok, err := exists(); err != nil || ok {
		return err
	}
	// name is a plain identifier (LoadConfig checks it): no quoting needed.
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+name); err != nil {
		if ok, _ := exists(); ok {
			return nil // created by another process at the same moment
		}
		return fmt.Errorf("create schema %s: %w", name, err)
	}
	return nil
}

// withSearchPath returns dsn (a URL or key=value DSN) with its search_path
// set to schema, a plain identifier.
func withSearchPath(dsn, schema string) string {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return dsn + " search_path=" + schema // key=value form
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// kvPassword matches a password in a key=value DSN, quoted or not.
var kvPassword = regexp.MustCompile(`(?i)\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S*)`)

// redactDSN returns dsn with its password, if any, replaced by xxxxx.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return kvPassword.ReplaceAllString(dsn, "password=xxxxx")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// Shutdown stops the app without losing work: no more periodic events; on
// the in-memory backend, the events still queued are handled first (they
// exist nowhere else); then the event services finish the events in hand
// and the backend and the database are closed, in dependency order; last,
// the spans still buffered are sent. Each step waits at most
// cfg.DrainTimeout. Stop the HTTP server before, so that no order arrives
// meanwhile.
func (a *App) Shutdown() error {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.DrainTimeout)
	defer cancel()
	var errs []error
	if a.dashboard != nil {
		_ = a.dashboard.Close() // it returns no error
	}
	if err := a.scheduler.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if a.cfg.Backend == BackendMem {
		a.drainMemory(ctx)
	}
	// The event services' own drain takes up to cfg.DrainTimeout; give
	// di.Shutdown a little more so that it can close everything after it.
	ctx, cancel = context.WithTimeout(a.ctx, a.cfg.DrainTimeout+5*time.Second)
	defer cancel()
	if err := di.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := a.telemetry.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	handled, failed := a.stats.Counts()
	a.log.Info("stopped", "handled", handled, "failed", failed)
	return errors.Join(errs...)
}

// Handler is the app's HTTP handler: its routes, measured and traced.
func (a *App) Handler() http.Handler {
	return a.telemetry.Instrument(a.handlers.Routes())
}

// drainMemory waits until every subscription of the in-memory topic is
// empty, or ctx ends.
func (a *App) drainMemory(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		subs, err := subscriptionStats(ctx, a.ps, orders.Topic)
		if err != nil {
			a.log.Warn("cannot see the queues; events still queued in memory may be lost", "error", err)
			return
		}
		left := map[string]int64{}
		for sub, s := range subs {
			if n := s.Ready + s.Scheduled + s.Processing; n > 0 {
				left[sub] = n
			}
		}
		if len(left) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			a.log.Warn("drain timeout: events still queued in memory are lost", "left", left)
			return
		case <-tick.C:
		}
	}
}

// subscriptionStats returns the stats of every subscription of topic, by
// name.
func subscriptionStats(ctx context.Context, ps pubsub.PubSub, topic string) (map[string]admin.Stats, error) {
	subs, err := admin.ListSubscriptions(ctx, ps, topic)
	if err != nil {
		return nil, err
	}
	stats := make(map[string]admin.Stats, len(subs))
	for _, sub := range subs {
		h, err := pubsub.Subscribe(ctx, ps, topic, sub)
		if err != nil {
			return nil, err
		}
		s, err := admin.TopicStats(ctx, h)
		h.Close() // the handle only: the subscription stays
		if err != nil {
			return nil, fmt.Errorf("subscription %q: %w", sub, err)
		}
		stats[sub] = s
	}
	return stats, nil
}
