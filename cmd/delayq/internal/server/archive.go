package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
)

// redacted is the archive URL without its password, for logs: neither the user part's nor a
// password parameter (?password=, which PostgreSQL URLs may carry too).
func (a *ArchiveConfig) redacted() string {
	u, err := url.Parse(a.URL)
	if err != nil {
		return "postgres://…"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// startArchive opens the history store (creating or upgrading its table) and runs an archiver
// and the retention of old rows until the returned stop is called. Without a URL it
// returns a nil store.
func startArchive(ctx context.Context, cfg ArchiveConfig, dq *delayq.Client, reg *prometheus.Registry, log *slog.Logger) (*archive.Store, func(), error) {
	if cfg.URL == "" {
		return nil, func() {}, nil
	}
	pg, err := archive.Open(ctx, cfg.URL, archive.Options{KeepBodies: cfg.Bodies, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("--archive %s: %w", cfg.redacted(), err)
	}
	a, err := archive.NewArchiver(dq, pg, archive.ArchiverConfig{Keep: cfg.Keep, Failed: cfg.Failed, Logger: log})
	if err != nil {
		pg.Close()
		return nil, nil, err
	}
	// On before the server listens, so that no job the server ends escapes the history.
	if err := a.Enable(ctx); err != nil {
		pg.Close()
		return nil, nil, err
	}
	if reg != nil {
		registerArchiveMetrics(reg, a, log)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{}, 2)
	go func() { _ = a.Run(runCtx); done <- struct{}{} }()
	go func() {
		if cfg.Retention > 0 {
			_ = pg.Retain(runCtx, cfg.Retention, time.Hour)
		}
		done <- struct{}{}
	}()
	log.Info("archiving job history", "archive", cfg.redacted(), "bodies", cfg.Bodies, "failed_attempts", cfg.Failed, "retention", cfg.Retention)
	return pg, func() {
		cancel()
		<-done
		<-done
		pg.Close()
	}, nil
}

// registerArchiveMetrics exposes the archiver's progress and what waits in Redis, read at
// scrape time.
func registerArchiveMetrics(reg *prometheus.Registry, a *archive.Archiver, log *slog.Logger) {
	backlog := func() archive.Backlog {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b, err := a.Backlog(ctx)
		if err != nil {
			log.Warn("archive: reading the backlog for metrics", "err", err)
		}
		return b
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "delayq_archived_total",
			Help: "Job outcomes this server archived into PostgreSQL."},
			func() float64 { return float64(a.Archived()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "delayq_archive_failures_total",
			Help: "Archiving passes that failed (PostgreSQL or Redis unreachable); the outcomes wait in Redis."},
			func() float64 { return float64(a.Failures()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "delayq_archive_waiting",
			Help: "Job outcomes waiting in Redis to be archived, over every topic."},
			func() float64 { return float64(backlog().Waiting) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "delayq_archive_dropped_total",
			Help: "Job outcomes dropped because a partition's backlog was full (--archive-keep)."},
			func() float64 { return float64(backlog().Dropped) }),
	)
}
