package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
)

// archiveConfig is the server's job history in PostgreSQL (package archive): off without a URL.
type archiveConfig struct {
	url       string
	bodies    bool
	failed    bool
	keep      int64
	retention time.Duration
}

func (a *archiveConfig) flags(f *pflag.FlagSet) {
	f.StringVar(&a.url, "archive", "", "PostgreSQL URL (postgres://user:password@host/db) of the job history: every job's end is archived there and searchable (docs/history.md); empty: no history")
	f.BoolVar(&a.bodies, "archive-bodies", true, "keep each job's body in the history")
	f.BoolVar(&a.failed, "archive-failed", false, "archive every failed attempt too, not only each job's end")
	f.Int64Var(&a.keep, "archive-keep", 100_000, "outcomes each partition keeps in Redis while PostgreSQL is down or slow; past it the oldest are dropped and counted")
	f.DurationVar(&a.retention, "archive-retention", 30*24*time.Hour, "delete history rows older than this (0: keep them forever)")
}

func (a *archiveConfig) validate(fail func(string, ...any)) {
	if a.url == "" {
		return
	}
	if u, err := url.Parse(a.url); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		fail("--archive: want a postgres:// URL")
	}
	if a.keep < 1 {
		fail("--archive-keep %d: want at least 1", a.keep)
	}
	if a.retention < 0 {
		fail("--archive-retention %v: want 0 (forever) or more", a.retention)
	}
}

// redacted is the archive URL without its password, for logs: neither the user part's nor a
// password parameter (?password=, which PostgreSQL URLs may carry too).
func (a *archiveConfig) redacted() string {
	u, err := url.Parse(a.url)
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
// and the retention of old rows until the returned stop is called. Without --archive it
// returns a nil store.
func startArchive(ctx context.Context, cfg archiveConfig, dq *delayq.Client, reg *prometheus.Registry, log *slog.Logger) (*archive.Store, func(), error) {
	if cfg.url == "" {
		return nil, func() {}, nil
	}
	pg, err := archive.Open(ctx, cfg.url, archive.Options{KeepBodies: cfg.bodies, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("--archive %s: %w", cfg.redacted(), err)
	}
	a, err := archive.NewArchiver(dq, pg, archive.ArchiverConfig{Keep: cfg.keep, Failed: cfg.failed, Logger: log})
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
		if cfg.retention > 0 {
			_ = pg.Retain(runCtx, cfg.retention, time.Hour)
		}
		done <- struct{}{}
	}()
	log.Info("archiving job history", "archive", cfg.redacted(), "bodies", cfg.bodies, "failed_attempts", cfg.failed, "retention", cfg.retention)
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
