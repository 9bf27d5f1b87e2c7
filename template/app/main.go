package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/conveyorgo/conveyor/otelconveyor"
)

func main() {
	cfg, err := LoadConfig(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log := newLogger(os.Stderr, cfg.LogLevel)
	slog.SetDefault(log) // the libraries' own logs look the same

	// The first SIGINT or SIGTERM stops the app cleanly; a second one exits
	// at once (even when SIGINT was ignored when the app started, as under
	// `make run BACKEND=db`: the default action would then be to ignore it).
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		stop()
		sig := <-sigs
		log.Error("second signal: exiting at once, without finishing the work in flight", "signal", sig)
		os.Exit(1)
	}()

	if err := run(ctx, cfg, log, os.Stdout); err != nil {
		log.Error("exiting", "error", err)
		os.Exit(1)
	}
}

// run starts the app and serves HTTP until ctx ends, then stops everything
// in order. It prints where it listens on stdout.
func run(ctx context.Context, cfg Config, log *slog.Logger, stdout io.Writer) error {
	log.Info("starting", "backend", cfg.Backend, "workers", cfg.Workers, "report_every", cfg.ReportEvery)
	app, err := bootstrap(ctx, cfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return errors.Join(fmt.Errorf("%w (set CONVEYOR_ADDR or PORT to a free address)", err), app.Shutdown())
	}
	srv := newServer(cfg, app.Handler(), log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	url := "http://" + dialAddr(ln.Addr())
	fmt.Fprintf(stdout, "listening on %s — try: curl -X POST %s/orders %s\n", url, url, curlOrder)

	select {
	case <-ctx.Done():
		log.Info("stopping: finishing the work in flight (a second signal kills at once)")
		err = nil
	case err = <-served:
		err = fmt.Errorf("http server: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		err = errors.Join(err, fmt.Errorf("http server: %w", serr))
	}
	return errors.Join(err, app.Shutdown())
}

// curlOrder is the part of a curl command line that posts an order.
const curlOrder = `-H 'Content-Type: application/json' -d '{"item":"book","qty":1}'`

// newServer returns the HTTP server of handler. Its timeouts bound how long
// a client may hold a connection: sending the request (headers first),
// reading the answer, and idle between requests.
func newServer(cfg Config, handler http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: min(5*time.Second, cfg.ReadTimeout),
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// dialAddr is the address to reach a listener at: its own, or localhost
// when it listens on every interface.
func dialAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return fmt.Sprintf("localhost:%d", tcp.Port)
}

// newLogger returns a logger writing lines for people: time, level,
// message and key=value pairs, with the trace_id and span_id of the span a
// record is logged in (otelconveyor.LogHandler), when traces are on.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(otelconveyor.LogHandler(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.String(slog.TimeKey, a.Value.Time().Format("15:04:05.000"))
			}
			return a
		},
	})))
}
