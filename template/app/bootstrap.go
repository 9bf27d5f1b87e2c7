package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"

	"github.com/conveyorgo/conveyor/template/app/orders"
)

// App is the wired app: its injector, its HTTP handlers and what it
// started. Make it with bootstrap; stop it with Shutdown.
type App struct {
	ctx       context.Context // carries the injector
	cfg       Config
	log       *slog.Logger
	stats     *Stats
	handlers  Handlers
	queue     pubsub.Topic
	scheduler *event.Scheduler
}

// bootstrap builds the injector, registers the configuration, the logger,
// the backend, the topics and the events, starts the event service and the
// scheduler, and fills the HTTP handlers. ctx bounds the start-up only
// (database migrations): the app runs until Shutdown.
func bootstrap(ctx context.Context, cfg Config, log *slog.Logger) (_ *App, err error) {
	ictx := di.NewContext(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			err = errors.Join(err, di.Shutdown(ictx))
		}
	}()
	app := &App{ctx: ictx, cfg: cfg, log: log, stats: NewStats()}

	// The app's own services, by type: `inject:""` fields get them.
	if err := errors.Join(
		di.RegisterSingleton(ictx, cfg),
		di.RegisterSingleton(ictx, log),
		di.RegisterSingleton(ictx, app.stats),
		di.RegisterSingleton(ictx, orders.NewSales()),
	); err != nil {
		return nil, err
	}

	// The backend: where messages live. Swapping it is one line.
	if cfg.Backend == BackendDB {
		if err := registerDatabase(ctx, ictx, cfg.DatabaseURL, log); err != nil {
			return nil, err
		}
		err = dbpubsub.Register(ictx) // durable in PostgreSQL, shared by every process on the database
	} else {
		err = channelpubsub.Register(ictx) // in this process's memory
	}
	if err != nil {
		return nil, err
	}

	// Topics and event dispatchers, injected by topic name:
	// `inject:"orders"` on a pubsub.Topic or an event.Dispatcher field.
	if err := event.Register(ictx); err != nil {
		return nil, err
	}

	// The event service consumes the topic and calls the listeners, whose
	// fields are injected when it starts. di.Shutdown stops it first.
	svc, err := event.NewService(orders.Topic, event.ServiceOptions{
		Workers:      cfg.Workers,
		DrainTimeout: cfg.DrainTimeout,
		Logger:       log,
		Middleware:   []event.Middleware{event.Observe(app.stats.Observe)},
	})
	if err != nil {
		return nil, err
	}
	if err := errors.Join(
		event.Listen(svc, &orders.Fulfil{}),
		event.Listen(svc, &orders.Report{}),
	); err != nil {
		return nil, err
	}
	if err := svc.Start(ictx); err != nil {
		return nil, err
	}

	// The HTTP handlers: their tagged fields come from the injector.
	if err := di.Fill(ictx, &app.handlers); err != nil {
		return nil, err
	}
	if app.queue, err = di.ResolveNamed[pubsub.Topic](ictx, orders.Topic); err != nil {
		return nil, err
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

// registerDatabase opens the database, brings its schema up to date (safe
// when several processes start at once) and registers it in the injector,
// where dbpubsub.Register finds it. di.Shutdown closes it last.
func registerDatabase(ctx, ictx context.Context, dsn string, log *slog.Logger) error {
	db, err := dbpubsub.Open(dsn)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	if err := di.RegisterSingleton(ictx, db); err != nil {
		db.Close()
		return err
	}
	start := time.Now()
	if err := migrations.Migrate(ctx, db); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	log.Info("database ready", "migrated_in", time.Since(start).Round(time.Millisecond))
	return nil
}

// Shutdown stops the app without losing work: no more periodic events; on
// the in-memory backend, the events still queued are handled first (they
// exist nowhere else); then the event service finishes the events in hand
// and the backend and the database are closed, in dependency order. Each
// step waits at most cfg.DrainTimeout. Stop the HTTP server before, so that
// no order arrives meanwhile.
func (a *App) Shutdown() error {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.DrainTimeout)
	defer cancel()
	var errs []error
	if err := a.scheduler.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if a.cfg.Backend == BackendMem {
		a.drainMemory(ctx)
	}
	// The event service's own drain takes up to cfg.DrainTimeout; give
	// di.Shutdown a little more so that it can close everything after it.
	ctx, cancel = context.WithTimeout(a.ctx, a.cfg.DrainTimeout+5*time.Second)
	defer cancel()
	if err := di.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	handled, failed := a.stats.Counts()
	a.log.Info("stopped", "handled", handled, "failed", failed)
	return errors.Join(errs...)
}

// drainMemory waits until the in-memory queue is empty, or ctx ends.
func (a *App) drainMemory(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s, err := pubsub.TopicStats(ctx, a.queue)
		if err != nil {
			a.log.Warn("cannot see the queue; events still queued in memory may be lost", "error", err)
			return
		}
		left := s.Ready + s.Scheduled + s.Processing
		if left == 0 {
			return
		}
		select {
		case <-ctx.Done():
			a.log.Warn("drain timeout: events still queued in memory are lost",
				"ready", s.Ready, "scheduled", s.Scheduled, "processing", s.Processing)
			return
		case <-tick.C:
		}
	}
}
