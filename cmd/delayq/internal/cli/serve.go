package cli

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
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/dashboard"
	"github.com/delayq/delayq/cmd/delayq/internal/embedded"
	"github.com/delayq/delayq/cmd/delayq/internal/httpapi"
	"github.com/delayq/delayq/cmd/delayq/internal/metrics"
	"github.com/delayq/delayq/cmd/delayq/internal/tlsreload"
	"github.com/delayq/delayq/cmd/delayq/internal/webhook"
)

// HTTP server timeouts. Writes must outlast the longest reserve: its wait (at most
// maxReserveWait) plus a store call.
const (
	// maxReserveWait is delayq's default Limits.MaxWait, which the server runs with.
	maxReserveWait    = 60 * time.Second
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 60 * time.Second
	idleTimeout       = 120 * time.Second
	writeMargin       = 30 * time.Second
	// redisStopTimeout bounds the embedded redis-server's own shutdown, after everything else.
	redisStopTimeout = 15 * time.Second
)

// runServer runs the server until ctx ends, then shuts it down in order: stop accepting and
// finish requests in flight while webhook deliveries finish (their leases released when cut
// short), then close the delayq client, and stop the embedded Redis last.
func runServer(ctx context.Context, cfg serverConfig, opts *serverOptions, stderr io.Writer) error {
	log := newLogger(stderr, cfg.logFormat, opts.level)
	// What has been started is stopped, last first, when runServer returns: after a failed
	// start-up as after a shutdown.
	var started closers
	defer started.close()
	bg := context.WithoutCancel(ctx)

	stopTracing, err := startTracing(ctx)
	if err != nil {
		return err
	}
	started.add(func() {
		if err := stopTracing(bg); err != nil {
			log.Warn("flushing the last trace spans", "err", err)
		}
	})

	rdb, redisDesc, emb, err := openRedis(ctx, cfg, opts, log)
	if err != nil {
		return err
	}
	started.add(func() { closeRedis(bg, rdb, emb, log) })

	replay := cfg.replayWindow
	if replay == 0 {
		replay = -1 // none; the library's 0 is its default
	}
	dq, err := delayq.New(ctx, rdb, delayq.Config{Namespace: cfg.namespace, Partitions: cfg.partitions, Logger: log,
		ExpireAllLeases: true, ReplayWindow: replay})
	if err != nil {
		return fmt.Errorf("connecting to Redis at %s: %w", redisDesc, err)
	}
	started.add(func() {
		if err := dq.Close(); err != nil {
			log.Warn("closing the delayq client", "err", err)
		}
	})

	if opts.tokens != nil {
		started.add(watchTokensFile(ctx, opts.tokens, log))
	}

	handler, stopPush, err := newAPI(ctx, cfg, opts, dq, rdb, log, &started)
	if err != nil {
		return err
	}
	if handler, err = guard(cfg, handler, log); err != nil {
		return err
	}
	if cfg.scheduler {
		stop, err := startScheduler(dq, log)
		if err != nil {
			return err
		}
		started.add(stop)
	}

	drainBeanstalkd, stopBeanstalkd, err := startBeanstalkd(cfg.beanstalkd, dq, log)
	if err != nil {
		return err
	}
	started.add(stopBeanstalkd)

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.listen, err)
	}
	tracked := newInflight(handler)
	base, cancelBase := context.WithCancel(bg)
	defer cancelBase()
	srv := newHTTPServer(base, tracked, cfg.requestTimeout, log)
	served := make(chan error, 1)
	if cfg.tlsCert != "" {
		pair, err := tlsreload.Load(cfg.tlsCert, cfg.tlsKey, log)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		srv.TLSConfig = pair.Config()
		go func() { served <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { served <- srv.Serve(ln) }()
	}
	log.Info("listening on "+ln.Addr().String(), "addr", ln.Addr().String(), "tls", cfg.tlsCert != "", "redis", redisDesc,
		"namespace", cfg.namespace, "auth", !opts.keyring.Open(), "webhooks", opts.secret != nil)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
		log.Error("the HTTP server failed", "err", serveErr)
	}

	log.Info("shutting down", "timeout", cfg.shutdownTimeout)
	drainBeanstalkd()
	sctx, cancel := context.WithTimeout(bg, cfg.shutdownTimeout)
	defer cancel()
	shutdown(sctx, srv, tracked, cancelBase, stopPush, log)
	started.close()
	log.Info("stopped")
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTP: %w", serveErr)
	}
	return nil
}

// closeRedis closes the Redis client and then stops the embedded redis-server, if any.
func closeRedis(ctx context.Context, rdb redis.UniversalClient, emb *embedded.Redis, log *slog.Logger) {
	if err := rdb.Close(); err != nil {
		log.Warn("closing the Redis client", "err", err)
	}
	if emb == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, redisStopTimeout)
	defer cancel()
	if err := emb.Stop(ctx); err != nil {
		log.Error("stopping the embedded redis-server", "err", err)
	}
}

// newAPI builds the HTTP API on dq and, with --webhook-secret, starts push delivery. It
// returns the handler and a function that stops push delivery (a no-op without it), which it
// also adds to started, for a failed start-up.
func newAPI(ctx context.Context, cfg serverConfig, opts *serverOptions, dq *delayq.Client, rdb redis.UniversalClient, log *slog.Logger, started *closers) (http.Handler, func(context.Context), error) {
	var m *metrics.Metrics
	var reg *prometheus.Registry
	if cfg.metrics {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		m = metrics.New(reg)
	}
	history, stopArchive, err := startArchive(ctx, cfg.archive, dq, reg, log)
	if err != nil {
		return nil, nil, err
	}
	started.add(stopArchive)
	var guard *webhook.Guard
	var check func(context.Context, string) error
	if opts.secret != nil {
		guard = webhook.NewGuard(opts.allow)
		check = guard.CheckURL
	} else if len(opts.allow) > 0 {
		log.Warn("--webhook-allow-cidr has no effect without --webhook-secret: push delivery is off")
	}
	keyring, limiter := opts.keyring, access.NewLimiter()
	// Set below, before the listener opens, once the dispatcher exists.
	var watchPush func(topic string)
	handler, err := httpapi.New(httpapi.Config{
		PushEnqueued: func(topic string) {
			if watchPush != nil {
				watchPush(topic)
			}
		},
		Client:         dq,
		Keyring:        keyring,
		Limiter:        limiter,
		MetricsPublic:  cfg.metricsPublic,
		Metrics:        m,
		Registry:       reg,
		CheckCallback:  check,
		RequestTimeout: cfg.requestTimeout,
		Redis:          rdb,
		Logger:         log,
		Archive:        history,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("building the HTTP API: %w", err)
	}
	handler, err = mountDashboard(ctx, cfg, opts, dq, rdb, reg, history, log, handler, limiter)
	if err != nil {
		return nil, nil, err
	}
	if !cfg.metrics {
		handler = withoutMetrics(handler)
	}
	if opts.secret == nil {
		return handler, func(context.Context) {}, nil
	}

	d, err := webhook.New(webhook.Config{
		Client: dq, Secret: opts.secret, PreviousSecret: opts.previous, Guard: guard, Concurrency: cfg.webhookConcurrency, Metrics: m, Logger: log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("starting webhook delivery: %w", err)
	}
	if err := d.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("starting webhook delivery: %w", err)
	}
	watchPush = func(topic string) {
		if err := d.Watch(ctx, topic); err != nil {
			log.Debug("webhook delivery: watching a new topic", "topic", topic, "err", err)
		}
	}
	stop := func(ctx context.Context) {
		if err := d.Stop(ctx); err != nil {
			log.Warn("webhook deliveries cut short by the shutdown timeout; their leases were released", "err", err)
		}
	}
	// A no-op after the shutdown has stopped it.
	started.add(func() { stop(context.WithoutCancel(ctx)) })
	return handler, stop, nil
}

// tokensFilePoll is how often the server looks whether the tokens file changed.
const tokensFilePoll = 2 * time.Second

// watchTokensFile reloads the tokens file on SIGHUP and when it changes, until the returned
// function stops it.
func watchTokensFile(ctx context.Context, f *access.TokensFile, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx, tokensFilePoll, hup, log)
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}

// startScheduler runs a Scheduler of the schedules on dq until the returned function stops it.
func startScheduler(dq *delayq.Client, log *slog.Logger) (stop func(), err error) {
	s, err := delayq.NewScheduler(dq, delayq.SchedulerConfig{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("starting the scheduler: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}, nil
}

// mountDashboard puts the web dashboard in front of the API: it serves /, /login, /topics/...
// and its assets, and the API every other path. Its charts sample the metrics until ctx ends.
func mountDashboard(ctx context.Context, cfg serverConfig, opts *serverOptions, dq *delayq.Client, rdb redis.UniversalClient, reg *prometheus.Registry, history *archive.Store, log *slog.Logger, api http.Handler, limiter *access.Limiter) (http.Handler, error) {
	mode := "embedded"
	if opts.redis != nil {
		mode = opts.redis.Mode.String()
	}
	dc := dashboard.Config{
		Client: dq, Redis: rdb, RedisMode: mode, Keyring: opts.keyring, Limiter: limiter, ReadOnly: cfg.dashboardReadOnly,
		RequestTimeout: cfg.requestTimeout, Logger: log, Archive: history,
	}
	if reg != nil {
		dc.Registerer, dc.Gatherer = reg, reg
	}
	d, err := dashboard.New(dc)
	if err != nil {
		return nil, fmt.Errorf("building the web dashboard: %w", err)
	}
	go d.Run(ctx)
	return d.Mount(api), nil
}

// newHTTPServer returns the server of the API, whose requests run under base.
func newHTTPServer(base context.Context, h http.Handler, requestTimeout time.Duration, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      maxReserveWait + requestTimeout + writeMargin,
		IdleTimeout:       idleTimeout,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// shutdown stops srv and push delivery side by side, cutting both short when ctx ends. The
// long polls still waiting once all other requests have finished are ended through
// cancelBase, the cancel of srv's base context, so that a shutdown does not wait a minute
// for them.
func shutdown(ctx context.Context, srv *http.Server, tracked *inflight, cancelBase context.CancelFunc, stopPush func(context.Context), log *slog.Logger) {
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-tracked.drained():
		case <-ctx.Done():
		}
		cancelBase()
	})
	wg.Go(func() {
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("requests still in flight at the shutdown timeout were cut", "err", err)
			_ = srv.Close()
		}
	})
	wg.Go(func() { stopPush(ctx) })
	wg.Wait()
}

// closers are stop functions, run last first by close.
type closers []func()

func (c *closers) add(f func()) { *c = append(*c, f) }

// close runs the functions not run yet, last first.
func (c *closers) close() {
	for len(*c) > 0 {
		f := (*c)[len(*c)-1]
		*c = (*c)[:len(*c)-1]
		f()
	}
}

// openRedis returns a client of the Redis the flags name, starting the embedded redis-server
// when they name none, and a description of it for logs and errors.
func openRedis(ctx context.Context, cfg serverConfig, opts *serverOptions, log *slog.Logger) (redis.UniversalClient, string, *embedded.Redis, error) {
	if opts.redis != nil {
		return opts.redis.NewClient(), opts.redis.Redacted, nil, nil
	}
	emb, err := embedded.Start(ctx, embedded.Config{
		Dir:         cfg.dataDir,
		Binary:      cfg.redisServer,
		AppendFsync: cfg.appendFsync,
		Logger:      log.With("component", "embedded-redis"),
	})
	var nf *embedded.NotFoundError
	if errors.As(err, &nf) {
		return nil, "", nil, fmt.Errorf("redis-server not found: install it (Debian/Ubuntu: sudo apt-get install -y redis-server) or pass --redis redis://host:6379: %w", nf.Err)
	}
	if err != nil {
		return nil, "", nil, err
	}
	return redis.NewClient(emb.Options()), "embedded unix://" + emb.Addr(), emb, nil
}

// newLogger returns the server's logger, writing text or JSON lines to w.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	o := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// withoutMetrics answers /metrics with not_found, for --metrics=false.
func withoutMetrics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"code":"not_found","message":"metrics are turned off (--metrics=false)"}}`+"\n")
			return
		}
		next.ServeHTTP(w, r)
	})
}
