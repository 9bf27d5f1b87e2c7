package dashboard

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds each backend call a page or an action makes.
	DefaultTimeout = 5 * time.Second
	// DefaultSampleInterval is how often the chart's sampler reads each
	// subscription's counts.
	DefaultSampleInterval = 10 * time.Second
	// DefaultHistory is how far back the charts go.
	DefaultHistory = 15 * time.Minute
	// MaxDataShown is the most bytes of a message's data its page shows.
	MaxDataShown = 64 << 10
)

// ErrInvalidOptions is returned by New for an Options field it cannot use;
// the error names the field.
var ErrInvalidOptions = errors.New("dashboard: invalid options")

// Options configure a Dashboard. The zero value is a writable dashboard
// mounted at the root.
type Options struct {
	// Prefix is the path the handler is mounted at, without a trailing
	// slash ("/conveyor"); "" for the root. Its links and forms are made
	// under it, and a request outside it is answered 404. Mount the
	// handler at Prefix+"/" (mux.Handle("/conveyor/", d)).
	Prefix string
	// ReadOnly hides every action and refuses every POST with 403.
	ReadOnly bool
	// Topics are topics shown besides the ones the backend lists (a topic
	// listed nowhere yet, before its first message): on a backend that
	// cannot list its topics (no admin.TopicLister), the only ones shown.
	Topics []string
	// Timeout bounds each backend call of a request; DefaultTimeout when 0.
	Timeout time.Duration
	// SampleInterval is how often the chart's sampler reads each
	// subscription's counts: DefaultSampleInterval when 0; a negative
	// value turns the sampler and the charts off.
	SampleInterval time.Duration
	// History is how far back the charts go; DefaultHistory when 0.
	History time.Duration
	// Logger gets the sampler's and the actions' records; slog.Default()
	// when nil.
	Logger *slog.Logger
}

// Dashboard is the web dashboard of a PubSub: an http.Handler. Close stops
// its sampler.
type Dashboard struct {
	ps      pubsub.PubSub
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	csrf    *csrf
	origin  *http.CrossOriginProtection
	sampler *sampler // nil when sampling is off

	closeOnce sync.Once
}

// New returns the dashboard of ps. It starts the chart's sampler (unless
// Options.SampleInterval is negative): call Close when done.
func New(ps pubsub.PubSub, opts Options) (*Dashboard, error) {
	if ps == nil {
		return nil, fmt.Errorf("%w: no PubSub", ErrInvalidOptions)
	}
	if opts.Prefix != "" && (!strings.HasPrefix(opts.Prefix, "/") || strings.HasSuffix(opts.Prefix, "/") ||
		(&url.URL{Path: opts.Prefix}).EscapedPath() != opts.Prefix) {
		return nil, fmt.Errorf("%w: Prefix %q: want a path like /conveyor (a leading slash, no trailing one, nothing a URL escapes), or \"\"", ErrInvalidOptions, opts.Prefix)
	}
	for _, t := range opts.Topics {
		if err := pubsub.ValidateTopicName(t); err != nil {
			return nil, fmt.Errorf("%w: Topics: %w", ErrInvalidOptions, err)
		}
	}
	switch {
	case opts.Timeout < 0:
		return nil, fmt.Errorf("%w: Timeout %v: want 0 (the default, %v) or more", ErrInvalidOptions, opts.Timeout, DefaultTimeout)
	case opts.History < 0:
		return nil, fmt.Errorf("%w: History %v: want 0 (the default, %v) or more", ErrInvalidOptions, opts.History, DefaultHistory)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.SampleInterval == 0 {
		opts.SampleInterval = DefaultSampleInterval
	}
	if opts.History == 0 {
		opts.History = DefaultHistory
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (it panics instead)
	d := &Dashboard{ps: ps, opts: opts, log: opts.Logger, csrf: &csrf{key: key, path: opts.Prefix + "/"},
		origin: http.NewCrossOriginProtection()}
	d.routes()
	if opts.SampleInterval > 0 {
		d.sampler = startSampler(d)
	}
	return d, nil
}

// Close stops the sampler and waits for it. The handler still answers
// afterwards, without charts.
func (d *Dashboard) Close() error {
	d.closeOnce.Do(func() {
		if d.sampler != nil {
			d.sampler.stop()
		}
	})
	return nil
}

// ServeHTTP answers the dashboard's pages under Options.Prefix.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// On the escaped path: a topic name may hold a slash, escaped (%2F)
	// in the dashboard's links, which ServeMux keeps within its segment.
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), d.opts.Prefix)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		http.NotFound(w, r)
		return
	}
	if rest == "" {
		http.Redirect(w, r, d.opts.Prefix+"/", http.StatusMovedPermanently)
		return
	}
	// The pages' own headers: nothing from elsewhere, no framing, no
	// sniffing.
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	path, err := url.PathUnescape(rest)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = path, rest
	d.mux.ServeHTTP(w, r2)
}

// routes builds the mux of the paths under the prefix.
func (d *Dashboard) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", d.overview)
	m.HandleFunc("GET /topics/{topic}/{sub}/{$}", d.messages)
	m.HandleFunc("GET /topics/{topic}/{sub}/messages/{id}", d.message)
	m.HandleFunc("GET /topics/{topic}/{sub}/confirm/{action}", d.confirm)
	m.Handle("POST /topics/{topic}/{sub}/actions/{action}", d.origin.Handler(http.HandlerFunc(d.act)))
	m.Handle("GET /static/", http.StripPrefix("/static/", staticFiles()))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("no page %s", r.URL.Path))
	})
	d.mux = m
}

// callCtx bounds a backend call of the request r.
func (d *Dashboard) callCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), d.opts.Timeout)
}

// url makes the path p (starting with /) absolute under the prefix.
func (d *Dashboard) url(p string) string { return d.opts.Prefix + p }
