package server

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/dashboard"
	"github.com/delayq/delayq/cmd/delayq/internal/httpapi"
	"github.com/delayq/delayq/cmd/delayq/internal/metrics"
	"github.com/delayq/delayq/cmd/delayq/internal/webhook"
)

// newAPI builds the HTTP API on dq, with the dashboard in front of it, and, with a webhook
// secret, starts push delivery. It returns the handler and a function that stops push
// delivery (a no-op without it), which it also adds to s.started, for a failed start-up. ctx
// bounds the start-up; life, the background work that lasts until the shutdown.
func (s *Server) newAPI(ctx, life context.Context, opts *parsed, dq *delayq.Client, rdb redis.UniversalClient) (http.Handler, func(context.Context), error) {
	cfg, log := &s.cfg, s.log
	var m *metrics.Metrics
	var reg *prometheus.Registry
	if cfg.Metrics {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		m = metrics.New(reg)
	}
	history, stopArchive, err := startArchive(ctx, cfg.Archive, dq, reg, log)
	if err != nil {
		return nil, nil, err
	}
	s.started.add(stopArchive)
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
		MetricsPublic:  cfg.MetricsPublic,
		Metrics:        m,
		Registry:       reg,
		CheckCallback:  check,
		RequestTimeout: cfg.RequestTimeout,
		Redis:          rdb,
		Logger:         log,
		Archive:        history,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("building the HTTP API: %w", err)
	}
	handler, err = s.mountDashboard(life, opts, dq, rdb, reg, history, handler, limiter)
	if err != nil {
		return nil, nil, err
	}
	if !cfg.Metrics {
		handler = withoutMetrics(handler)
	}
	if opts.secret == nil {
		return handler, func(context.Context) {}, nil
	}

	d, err := webhook.New(webhook.Config{
		Client: dq, Secret: opts.secret, PreviousSecret: opts.previous, Guard: guard, Concurrency: cfg.WebhookConcurrency, Metrics: m, Logger: log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("starting webhook delivery: %w", err)
	}
	if err := d.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("starting webhook delivery: %w", err)
	}
	watchPush = func(topic string) {
		if err := d.Watch(life, topic); err != nil {
			log.Debug("webhook delivery: watching a new topic", "topic", topic, "err", err)
		}
	}
	stop := func(ctx context.Context) {
		if err := d.Stop(ctx); err != nil {
			log.Warn("webhook deliveries cut short by the shutdown timeout; their leases were released", "err", err)
		}
	}
	// A no-op after the shutdown has stopped it.
	s.started.add(func() { stop(context.WithoutCancel(ctx)) })
	return handler, stop, nil
}

// mountDashboard puts the web dashboard in front of the API: it serves /, /login, /topics/...
// and its assets, and the API every other path. Its charts sample the metrics until life ends.
func (s *Server) mountDashboard(life context.Context, opts *parsed, dq *delayq.Client, rdb redis.UniversalClient, reg *prometheus.Registry, history *archive.Store, api http.Handler, limiter *access.Limiter) (http.Handler, error) {
	mode := "embedded"
	if opts.redis != nil {
		mode = opts.redis.Mode.String()
	}
	dc := dashboard.Config{
		Client: dq, Redis: rdb, RedisMode: mode, Keyring: opts.keyring, Limiter: limiter, ReadOnly: s.cfg.DashboardReadOnly,
		RequestTimeout: s.cfg.RequestTimeout, Logger: s.log, Archive: history,
	}
	if reg != nil {
		dc.Registerer, dc.Gatherer = reg, reg
	}
	d, err := dashboard.New(dc)
	if err != nil {
		return nil, fmt.Errorf("building the web dashboard: %w", err)
	}
	go d.Run(life)
	return d.Mount(api), nil
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
