// Package httpapi serves delayq's HTTP API, v1: producing, consuming (pull), dead letters and
// operating endpoints, health checks, Prometheus metrics and the API's OpenAPI document.
//
// Every route lives in one table (routes), which both the router and the OpenAPI document's
// test read, so that the document and the server cannot drift apart.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/metrics"
	"github.com/delayq/delayq/internal/core"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/tracing"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Config configures the API handler.
type Config struct {
	// Client does every store operation. Required.
	Client *delayq.Client
	// Limits are the limits the Client was built with; zero fields take delayq's defaults.
	// Requests are validated against them before anything is stored.
	Limits delayq.Limits
	// MaxBatchBytes bounds the size of a batch enqueue request. Defaults to 32 MiB, or the size
	// of one job request when that is larger, and never more than MaxBatch job requests.
	MaxBatchBytes int64
	// Tokens, when non-empty, makes every /v1/ request, and /metrics unless MetricsPublic,
	// need "Authorization: Bearer <token>" with one of them. /, /healthz and /readyz never
	// need a token. Each is an admin token; Keyring, when set, is used instead.
	Tokens []string
	// Keyring holds the tokens and their principals, which it may replace while the handler
	// serves; when it has any, they are needed as Tokens are. Nil: a Keyring of Tokens.
	Keyring *access.Keyring
	// Limiter throttles wrong tokens per client address (429 with Retry-After). Nil: a
	// Limiter of the handler's own.
	Limiter *access.Limiter
	// MetricsPublic serves /metrics without a token even when Tokens are set, for a scrape on a
	// private port. Its series name the topics, which are business data.
	MetricsPublic bool
	// Metrics counts jobs enqueued, delivered, acked, nacked, retried, dead and cancelled through
	// the API. Nil counts nothing.
	Metrics *metrics.Metrics
	// Registry is served at /metrics; the handler registers on it a collector of per-topic,
	// per-state job gauges read at scrape time. Defaults to a new registry of its own.
	Registry *prometheus.Registry
	// CheckCallback vets each callback_url at enqueue (for example, refusing private
	// addresses); its error refuses the job with its text. Nil means push delivery is disabled,
	// and any job with a callback_url is refused.
	CheckCallback func(ctx context.Context, rawURL string) error
	// PushEnqueued, when set, is told the topic of every enqueued job that has a callback_url,
	// so that push delivery can start on a new topic at once.
	PushEnqueued func(topic string)
	// RequestTimeout bounds every store call, beyond a reserve's wait, so that a hung or absent
	// Redis gives 503 unavailable instead of a hung request. Defaults to 5s.
	RequestTimeout time.Duration
	// Redis, when set, is what /readyz sends PING to. Nil: /readyz reads the topic registry
	// through Client instead.
	Redis redis.UniversalClient
	// Logger receives internal errors, and a line per request at debug level. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// TracerProvider makes a span per request. Nil: the global provider.
	TracerProvider trace.TracerProvider
	// Archive, when set, serves the job history (GET /v1/history and a job's /history). Nil:
	// those routes answer 404 not_found saying that the archive is not configured.
	Archive *archive.Store
}

// api is the handler's state; its methods are the route handlers.
type api struct {
	c           *delayq.Client
	lim         delayq.Limits
	keys        *access.Keyring
	limiter     *access.Limiter
	public      bool // /metrics needs no token
	m           *metrics.Metrics
	reg         *prometheus.Registry
	check       func(ctx context.Context, rawURL string) error
	pushed      func(topic string)
	timeout     time.Duration
	redis       redis.UniversalClient
	inline      bool // the client ends calls at their context's deadline: see bounded
	readyInline bool // so does the client that /readyz sends PING to
	log         *slog.Logger
	jobBytes    int64 // request limit of one enqueue
	batchBytes  int64 // request limit of a batch enqueue
	mux         *http.ServeMux
	metricsH    http.Handler
	trace       tracing.Tracer
	archive     *archive.Store // nil: no history
}

// New returns the API handler.
func New(cfg Config) (http.Handler, error) {
	if cfg.Client == nil {
		return nil, errors.New("httpapi: Config.Client is required")
	}
	if cfg.RequestTimeout < 0 {
		return nil, fmt.Errorf("httpapi: RequestTimeout %v is negative", cfg.RequestTimeout)
	}
	if cfg.MaxBatchBytes < 0 {
		return nil, fmt.Errorf("httpapi: MaxBatchBytes %d is negative", cfg.MaxBatchBytes)
	}
	a := &api{
		c:       cfg.Client,
		lim:     cfg.Limits.WithDefaults(),
		m:       cfg.Metrics,
		reg:     cfg.Registry,
		check:   cfg.CheckCallback,
		pushed:  cfg.PushEnqueued,
		timeout: cfg.RequestTimeout,
		redis:   cfg.Redis,
		log:     cfg.Logger,
		public:  cfg.MetricsPublic,
		trace:   tracing.New(cfg.TracerProvider),
		archive: cfg.Archive,
		inline:  store.EndsCallsAtDeadline(cfg.Client.Core(core.Pass).Store().Client()),
	}
	a.readyInline = a.inline
	if a.redis != nil {
		a.readyInline = store.EndsCallsAtDeadline(a.redis)
	}
	a.keys, a.limiter = cfg.Keyring, cfg.Limiter
	if a.keys == nil {
		admins, err := access.Admins(cfg.Tokens)
		if err != nil {
			return nil, fmt.Errorf("httpapi: %w", err)
		}
		a.keys = access.NewKeyring(admins)
	}
	if a.limiter == nil {
		a.limiter = access.NewLimiter()
	}
	if a.timeout == 0 {
		a.timeout = 5 * time.Second
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	if a.reg == nil {
		a.reg = prometheus.NewRegistry()
	}
	if err := a.reg.Register(newTopicCollector(a.c, a.m, a.timeout, a.inline, a.log)); err != nil {
		return nil, fmt.Errorf("httpapi: registering the topic collector: %w", err)
	}
	a.metricsH = promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(a.log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	})
	a.jobBytes = jobRequestBytes(a.lim)
	a.batchBytes = batchRequestBytes(a.lim, a.jobBytes, cfg.MaxBatchBytes)
	a.mux = http.NewServeMux()
	for _, rt := range routes() {
		op, ok := permissionOf(rt)
		if !ok {
			return nil, fmt.Errorf("httpapi: route %s %s has no entry in the permissions table", rt.method, rt.path)
		}
		a.mux.Handle(rt.pattern(), a.permit(op, a.wrap(rt.handle)))
	}
	return a, nil
}

// jobOverhead is room in an enqueue request for everything but the body: id, times, backoff
// steps, callback URL and JSON punctuation, escapes included, and headers at their limit with
// every byte written as a six-byte \u escape.
const jobOverhead = 64<<10 + 6*delayq.MaxHeadersBytes

// jobRequestBytes is the request limit of one enqueue: the body limit as base64 (the larger of
// its two spellings) plus the other fields.
func jobRequestBytes(l delayq.Limits) int64 {
	return int64((l.MaxBody+2)/3*4) + jobOverhead
}

// batchRequestBytes bounds a batch request: explicit, else 32 MiB (at least one job's worth),
// and never more than a full batch of the largest jobs.
func batchRequestBytes(l delayq.Limits, job, explicit int64) int64 {
	n := explicit
	if n == 0 {
		n = max(job, 32<<20)
	}
	return min(n, job*int64(l.MaxBatch)+jobOverhead)
}

// handlerFunc is a route handler; a returned error is written as the API's error body.
type handlerFunc func(a *api, w http.ResponseWriter, r *http.Request) error

// wrap turns a route handler into an http.Handler that writes its error.
func (a *api) wrap(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(a, w, r); err != nil {
			a.writeError(w, r, err)
		}
	})
}

// ServeHTTP serves a request in the trace context its traceparent header names (so that the
// jobs it enqueues carry it), in a span of its own, and counts, times and logs it by its route.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx := tracing.W3C.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := a.trace.StartServer(ctx, r.Method, semconv.HTTPRequestMethodKey.String(methodLabel(r.Method)), semconv.URLPath(r.URL.Path))
	r = r.WithContext(ctx)
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		status := rec.status()
		debug := a.log.Enabled(ctx, slog.LevelDebug)
		if a.m == nil && !debug && !span.IsRecording() {
			span.End()
			return
		}
		route := a.routeOf(r)
		elapsed := time.Since(start)
		if a.m != nil {
			labels := []string{route, methodLabel(r.Method), strconv.Itoa(status)}
			a.m.Requests.WithLabelValues(labels...).Inc()
			a.m.RequestDuration.WithLabelValues(labels...).Observe(elapsed.Seconds())
		}
		if debug {
			a.log.LogAttrs(ctx, slog.LevelDebug, "httpapi: request", slog.String("method", r.Method),
				slog.String("route", route), slog.Int("status", status), slog.Duration("duration", elapsed))
		}
		span.SetName(methodLabel(r.Method) + " " + route)
		span.SetAttributes(semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		span.End()
	}()
	a.serve(rec, r)
}

// needsToken reports whether a request for path needs a token.
func (a *api) needsToken(path string) bool {
	return (strings.HasPrefix(path, "/v1/") || (path == "/metrics" && !a.public)) && !a.keys.Open()
}

// serve authenticates requests, routes them, and answers unknown routes and methods with the
// API's error body instead of the router's plain text.
func (a *api) serve(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			a.log.Error("httpapi: handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			a.writeError(w, r, fmt.Errorf("panic: %v", v))
		}
	}()
	if a.needsToken(r.URL.Path) {
		p := a.authenticate(w, r)
		if p == nil {
			return
		}
		r = r.WithContext(access.WithPrincipal(r.Context(), p))
	}
	if batchPath(r.URL.Path) && r.Method != http.MethodPost {
		// The router would read "batch" as a job id, which no job can have.
		w.Header().Set("Allow", http.MethodPost)
		a.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, code: codeMethodNotAllowed,
			msg: fmt.Sprintf("%s is not allowed on %s; allowed: POST", r.Method, r.URL.Path)})
		return
	}
	h, pattern := a.mux.Handler(r)
	if pattern != "" {
		a.mux.ServeHTTP(w, r)
		return
	}
	// The router's own answer: not found, method not allowed, or a redirect to a clean path.
	cw := &captureWriter{header: http.Header{}}
	h.ServeHTTP(cw, r)
	switch cw.status {
	case http.StatusNotFound:
		a.writeError(w, r, &apiError{status: http.StatusNotFound, code: codeNotFound,
			msg: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)})
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", cw.header.Get("Allow"))
		a.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, code: codeMethodNotAllowed,
			msg: fmt.Sprintf("%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, cw.header.Get("Allow"))})
	default:
		for k, v := range cw.header {
			w.Header()[k] = v
		}
		w.WriteHeader(cw.status)
		_, _ = w.Write(cw.body)
	}
}

// routeOf returns the route template r was served by ("/v1/topics/{topic}/jobs/{id}"), or
// "unmatched": a label of bounded cardinality.
func (a *api) routeOf(r *http.Request) string {
	if batchPath(r.URL.Path) {
		return "/v1/topics/{topic}/jobs/" + delayq.BatchPathSegment
	}
	if _, pattern := a.mux.Handler(r); pattern != "" {
		_, path, _ := strings.Cut(pattern, " ")
		return strings.TrimSuffix(path, "{$}")
	}
	return "unmatched"
}

// methodLabel bounds the method label to the methods HTTP defines.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}

// batchPath reports whether path is /v1/topics/{topic}/jobs/batch.
func batchPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/v1/topics/")
	if !ok {
		return false
	}
	topic, tail, ok := strings.Cut(rest, "/")
	return ok && topic != "" && tail == "jobs/"+delayq.BatchPathSegment
}

// captureWriter keeps what the router's fallback handlers write.
type captureWriter struct {
	header http.Header
	status int
	body   []byte
}

func (c *captureWriter) Header() http.Header { return c.header }

func (c *captureWriter) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *captureWriter) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	c.body = append(c.body, b...)
	return len(b), nil
}

// storeContext bounds a store call made for r.
func (a *api) storeContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), a.timeout)
}
