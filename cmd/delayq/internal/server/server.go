// Package server assembles `delayq server`: the HTTP API, the web dashboard, webhook push
// delivery, the scheduler of recurring jobs, the job history's archiver, the beanstalkd front
// end, metrics, tracing and the guard in front of it all, from a Config. The CLI maps its
// flags onto a Config and calls New, then Serve; tests build a Server the same way.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/embedded"
	"github.com/delayq/delayq/cmd/delayq/internal/tlsreload"
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

// Server is an assembled `delayq server`: built by New, served by Serve, released by Close.
type Server struct {
	cfg       Config
	log       *slog.Logger
	handler   http.Handler
	tls       *tlsreload.Pair // nil: plain HTTP
	redisDesc string          // the Redis, for logs and errors
	keyring   *access.Keyring // the tokens; none: an open server
	webhooks  bool            // whether push delivery is on

	// endLife ends the context of the server's background work that follows its life rather
	// than a stop function of its own: the dashboard's charts, the tokens file's reloads.
	endLife context.CancelFunc
	// drainBeanstalkd makes the beanstalkd front end refuse new jobs, for a shutdown.
	drainBeanstalkd func()
	// stopPush stops push delivery, cut short when its ctx ends.
	stopPush func(context.Context)

	mu      sync.Mutex
	started closers
	closed  bool          // Close or Serve's shutdown has released everything
	unserve func()        // while Serve runs: asks it to shut down
	served  chan struct{} // while Serve runs: closed once it has returned
}

// New validates cfg, opens Redis (starting the embedded redis-server when cfg names none)
// and builds the whole server: it starts the background work (webhook delivery, the
// scheduler, the archiver, the beanstalkd front end, which listens on its own address), but
// serves no HTTP until Serve. ctx bounds the start-up. After an error nothing it started is
// left running; otherwise Serve or Close releases it all.
func New(ctx context.Context, cfg Config, log *slog.Logger) (_ *Server, err error) {
	opts, err := cfg.parse()
	if err != nil {
		return nil, err
	}
	life, endLife := context.WithCancel(context.WithoutCancel(ctx))
	s := &Server{cfg: cfg, log: log, endLife: endLife, keyring: opts.keyring, webhooks: opts.secret != nil}
	// What has been started is stopped, last first, by Close, also after a failed start-up.
	s.started.add(endLife)
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	bg := context.WithoutCancel(ctx)

	stopTracing, err := startTracing(ctx)
	if err != nil {
		return nil, err
	}
	s.started.add(func() {
		if err := stopTracing(bg); err != nil {
			log.Warn("flushing the last trace spans", "err", err)
		}
	})

	rdb, redisDesc, emb, err := openRedis(ctx, &cfg, opts, log)
	if err != nil {
		return nil, err
	}
	s.redisDesc = redisDesc
	s.started.add(func() { closeRedis(bg, rdb, emb, log) })

	replay := cfg.ReplayWindow
	if replay == 0 {
		replay = -1 // none; the library's 0 is its default
	}
	dq, err := delayq.New(ctx, rdb, delayq.Config{Namespace: cfg.Namespace, Partitions: cfg.Partitions, Logger: log,
		ExpireAllLeases: true, ReplayWindow: replay, UniqueFor: cfg.UniqueFor})
	if err != nil {
		return nil, fmt.Errorf("connecting to Redis at %s: %w", redisDesc, err)
	}
	s.started.add(func() {
		if err := dq.Close(); err != nil {
			log.Warn("closing the delayq client", "err", err)
		}
	})

	if opts.tokens != nil {
		s.started.add(watchTokensFile(life, opts.tokens, log))
	}

	handler, stopPush, err := s.newAPI(ctx, life, opts, dq, rdb)
	if err != nil {
		return nil, err
	}
	s.stopPush = stopPush
	if s.handler, err = guard(&cfg, handler, log); err != nil {
		return nil, err
	}
	if cfg.Scheduler {
		stop, err := startScheduler(dq, log)
		if err != nil {
			return nil, err
		}
		s.started.add(stop)
	}

	drainBeanstalkd, stopBeanstalkd, err := startBeanstalkd(cfg.Beanstalkd, dq, log)
	if err != nil {
		return nil, err
	}
	s.drainBeanstalkd = drainBeanstalkd
	s.started.add(stopBeanstalkd)

	if cfg.TLSCert != "" {
		if s.tls, err = tlsreload.Load(cfg.TLSCert, cfg.TLSKey, log); err != nil {
			return nil, fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
	}
	return s, nil
}

// Handler returns the whole HTTP side of the server: the API, the dashboard and /metrics,
// behind the guard (the Host check of a server without tokens, the cross-origin protection).
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves HTTP on ln, over TLS when the Config has a certificate, and logs "listening
// on" once it does. When ctx ends, or serving fails, it shuts down in order: stop accepting
// (the beanstalkd front end too) and finish requests in flight while webhook deliveries
// finish (their leases released when cut short), all within the Config's ShutdownTimeout;
// then close the delayq client, and stop the embedded Redis last. It returns nil after a
// shutdown that ctx or Close asked for. Serve closes ln and the Server; call it once, and
// not after Close.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.mu.Lock()
	if s.closed || s.served != nil {
		s.mu.Unlock()
		ln.Close()
		return errors.New("server: Serve on a server closed or already serving")
	}
	ctx, unserve := context.WithCancel(ctx)
	defer unserve()
	returned := make(chan struct{})
	defer close(returned)
	s.unserve, s.served = unserve, returned
	s.mu.Unlock()
	defer s.release()
	log, cfg := s.log, &s.cfg
	bg := context.WithoutCancel(ctx)
	tracked := newInflight(s.handler)
	base, cancelBase := context.WithCancel(bg)
	defer cancelBase()
	srv := newHTTPServer(base, tracked, cfg.RequestTimeout, log)
	served := make(chan error, 1)
	if s.tls != nil {
		srv.TLSConfig = s.tls.Config()
		go func() { served <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { served <- srv.Serve(ln) }()
	}
	log.Info("listening on "+ln.Addr().String(), "addr", ln.Addr().String(), "tls", s.tls != nil, "redis", s.redisDesc,
		"namespace", cfg.Namespace, "auth", !s.keyring.Open(), "webhooks", s.webhooks)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
		log.Error("the HTTP server failed", "err", serveErr)
	}

	s.endLife()
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	s.drainBeanstalkd()
	sctx, cancel := context.WithTimeout(bg, cfg.ShutdownTimeout)
	defer cancel()
	shutdown(sctx, srv, tracked, cancelBase, s.stopPush, log)
	s.release()
	log.Info("stopped")
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTP: %w", serveErr)
	}
	return nil
}

// Close stops everything New started, last first: the beanstalkd front end, the scheduler,
// webhook delivery, the archiver, the tokens file's reloads, the delayq client, Redis and the
// embedded redis-server; then it flushes the last trace spans. While Serve runs, Close makes
// it shut down as when its ctx ends, and returns once it has. After that, or a second time,
// it does nothing. It returns nil: what fails to stop is logged.
func (s *Server) Close() error {
	s.mu.Lock()
	unserve, served := s.unserve, s.served
	s.mu.Unlock()
	if served != nil {
		unserve()
		<-served
	}
	s.release()
	return nil
}

// release stops everything New started, once: first the background work that follows the
// server's life (the dashboard's charts read Redis), then the rest, last first.
func (s *Server) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.endLife()
	s.started.close()
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

// openRedis returns a client of the Redis the Config names, starting the embedded
// redis-server when it names none, and a description of it for logs and errors.
func openRedis(ctx context.Context, cfg *Config, opts *parsed, log *slog.Logger) (redis.UniversalClient, string, *embedded.Redis, error) {
	if opts.redis != nil {
		return opts.redis.NewClient(), opts.redis.Redacted, nil, nil
	}
	emb, err := embedded.Start(ctx, embedded.Config{
		Dir:         cfg.DataDir,
		Binary:      cfg.RedisServer,
		AppendFsync: cfg.AppendFsync,
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
