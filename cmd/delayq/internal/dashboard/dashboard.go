// Package dashboard serves delayq's web dashboard: server-rendered pages of every topic, its
// jobs by state and each job, with the operator's actions on them, on the same port as the
// HTTP API. It reads and writes only through the delayq.Client and shows jobs in the API's
// wire model (apiv1), so that what a page shows is what the API answers.
//
// Every page is rendered with html/template, so job ids, bodies and errors are escaped; the
// only script is the vendored htmx, which refreshes the overview. Every action is a POST that
// carries a CSRF token; with API tokens set, a signed session cookie from /login is needed to
// see anything.
package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/internal/core"
)

// Config configures the dashboard.
type Config struct {
	// Client reads and changes the jobs. Required.
	Client *delayq.Client
	// Redis is asked for the server facts of the overview (memory, keys, version). Nil shows none.
	Redis redis.UniversalClient
	// RedisMode names the deployment on the overview: "standalone", "sentinel", "cluster",
	// "embedded".
	RedisMode string
	// Tokens are the API tokens, each an admin's; when set, /login takes one of them and every
	// page needs the session it gives. Empty: the dashboard is open, as the API is. Keyring,
	// when set, is used instead.
	Tokens []string
	// Keyring holds the tokens and their principals, which it may replace while the dashboard
	// serves; a session ends when its token is no longer there. Nil: a Keyring of Tokens.
	Keyring *access.Keyring
	// Limiter throttles wrong tokens at /login per client address; share the API's, so that
	// the two count together. Nil: a Limiter of the dashboard's own.
	Limiter *access.Limiter
	// ReadOnly hides every action and refuses its POST.
	ReadOnly bool
	// Registerer receives the dashboard's action counter. Nil registers nothing.
	Registerer prometheus.Registerer
	// Gatherer is the server's registry, whose job counters and lateness histogram (package
	// metrics) Run samples for the charts. Nil: no charts.
	Gatherer prometheus.Gatherer
	// RequestTimeout bounds the store calls of one page. Defaults to 5s.
	RequestTimeout time.Duration
	// Logger receives one line per action and internal errors. Defaults to slog.Default().
	Logger *slog.Logger
	// Archive, when set, adds each job's history to its page, shows a job that Redis no longer
	// has from its history, and serves the history search at /history. Nil: no history.
	Archive *archive.Store
}

// Dashboard is the dashboard's handler.
type Dashboard struct {
	c        *delayq.Client
	redis    redis.UniversalClient
	mode     string
	auth     *sessions
	logins   *access.Limiter
	readOnly bool
	actions  *prometheus.CounterVec
	hist     *history       // nil without charts
	archive  *archive.Store // nil without the job history
	timeout  time.Duration
	log      *slog.Logger
	mux      *http.ServeMux
}

// New returns the dashboard.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Client == nil {
		return nil, errors.New("dashboard: Config.Client is required")
	}
	if cfg.RequestTimeout < 0 {
		return nil, fmt.Errorf("dashboard: RequestTimeout %v is negative", cfg.RequestTimeout)
	}
	keyring, logins := cfg.Keyring, cfg.Limiter
	if keyring == nil {
		admins, err := access.Admins(cfg.Tokens)
		if err != nil {
			return nil, fmt.Errorf("dashboard: %w", err)
		}
		keyring = access.NewKeyring(admins)
	}
	if logins == nil {
		logins = access.NewLimiter()
	}
	d := &Dashboard{
		c: cfg.Client, redis: cfg.Redis, mode: cfg.RedisMode, auth: newSessions(keyring, cfg.Client.Core(core.Pass).Store()), logins: logins, readOnly: cfg.ReadOnly,
		timeout: cfg.RequestTimeout, log: cfg.Logger, archive: cfg.Archive,
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "delayq", Name: "dashboard_actions_total",
			Help: "Actions taken in the web dashboard, by action and outcome (ok, error), and the jobs they changed.",
		}, []string{"action", "outcome"}),
	}
	if d.timeout == 0 {
		d.timeout = 5 * time.Second
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(d.actions); err != nil {
			return nil, fmt.Errorf("dashboard: registering its metric: %w", err)
		}
	}
	if cfg.Gatherer != nil {
		d.hist = newHistory(cfg.Gatherer)
	}
	d.mux = http.NewServeMux()
	d.routes()
	return d, nil
}

// Run samples the metrics the charts draw, every 10 seconds, until ctx ends; without a
// Gatherer it returns at once.
func (d *Dashboard) Run(ctx context.Context) {
	if d.hist != nil {
		d.hist.run(ctx)
	}
}

// Owns reports whether the dashboard serves path; the server sends every other path to the API.
func Owns(path string) bool {
	switch path {
	case "/", "/login", "/logout", "/search", "/history", "/overview/topics", "/schedules":
		return true
	}
	return strings.HasPrefix(path, "/topics/") || strings.HasPrefix(path, "/schedules/") || strings.HasPrefix(path, assetPrefix)
}

// Mount returns a handler that serves the dashboard's paths and sends every other to api.
// "/" is also a path of the API's document, so a method other than GET there gets the API's
// answer: 405 with its error body.
func (d *Dashboard) Mount(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiRoot := r.URL.Path == "/" && r.Method != http.MethodGet && r.Method != http.MethodHead
		if Owns(r.URL.Path) && !apiRoot {
			d.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// ServeHTTP serves a dashboard page.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, assetPrefix) {
		ctx, cancel := d.storeContext(r)
		err := d.auth.load(ctx)
		cancel()
		if err != nil {
			d.fail(w, r, nil, fmt.Errorf("loading the session key: %w", err))
			return
		}
	}
	d.mux.ServeHTTP(w, r)
}

// routes registers every page and action, each with what it does (access.Op), which decides
// the tokens that may: reading pages needs a reader's token or an admin's, except a topic's
// and a job's pages, which a producer's or consumer's token of the topic may see too. Actions
// are POSTs; every page is a GET.
func (d *Dashboard) routes() {
	d.mux.HandleFunc("GET "+assetPrefix+"{name}", serveAsset)
	d.mux.HandleFunc("GET /login", d.loginPage)
	d.mux.HandleFunc("POST /login", d.login)
	d.mux.HandleFunc("POST /logout", d.logout)
	page := func(pattern string, op func(*http.Request) access.Op, h pageFunc) {
		d.mux.Handle(pattern, d.page(op, h))
	}
	page("GET /{$}", is(access.Read), (*Dashboard).overview)
	page("GET /overview/topics", is(access.Read), (*Dashboard).overviewTopics)
	page("GET /search", is(access.Read), (*Dashboard).search)
	page("GET /history", is(access.Read), (*Dashboard).historyPage)
	page("GET /topics/{topic}", is(access.GetJob), (*Dashboard).topic)
	page("GET /topics/{topic}/jobs/{id}", is(access.GetJob), (*Dashboard).job)
	page("GET /topics/{topic}/jobs/{id}/body", is(access.GetJob), (*Dashboard).jobBody)
	page("POST /topics/{topic}/jobs/{id}/{action}", jobActionOp, (*Dashboard).jobAction)
	page("POST /topics/{topic}/dead/{action}", is(access.Consume), (*Dashboard).deadAction)
	page("POST /topics/{topic}/{action}", is(access.Operate), (*Dashboard).topicAction)
	page("GET /schedules", is(access.Read), (*Dashboard).schedules)
	page("GET /schedules/{name}", is(access.Read), (*Dashboard).schedule)
	page("GET /schedules/{name}/body", is(access.Read), (*Dashboard).scheduleBody)
	page("POST /schedules/{name}/{action}", is(access.Operate), (*Dashboard).scheduleAction)
}

// is returns op for every request.
func is(op access.Op) func(*http.Request) access.Op {
	return func(*http.Request) access.Op { return op }
}

// jobActionOp is what an action on one job does: a dead job's requeue and delete are a
// consumer's, the others (cancel, run now, reschedule) a producer's.
func jobActionOp(r *http.Request) access.Op {
	switch r.PathValue("action") {
	case "requeue", "delete":
		return access.Consume
	}
	return access.Produce
}

// storeContext bounds the store calls made for r.
func (d *Dashboard) storeContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), d.timeout)
}
