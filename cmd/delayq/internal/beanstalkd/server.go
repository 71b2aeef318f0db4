// Package beanstalkd serves the beanstalkd text protocol over a proto.Backend: the accept loop,
// each connection's state (the tube it uses, the tubes it watches), and the mapping of every
// command to a Backend call and a reply. It knows nothing of delayq's storage; a Backend on
// delayq.Client plugs in underneath.
package beanstalkd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
)

// Config configures a Server.
type Config struct {
	// Backend carries out the commands. Required.
	Backend proto.Backend
	// MaxConns bounds the connections served at once; one more is closed as soon as it is
	// accepted. Defaults to 10,000.
	MaxConns int
	// MaxJobSize is the largest job body accepted, in bytes; a bigger one is answered
	// JOB_TOO_BIG. Defaults to 65,535, beanstalkd's default.
	MaxJobSize int
	// Logger receives the errors answered INTERNAL_ERROR. Defaults to slog.Default().
	Logger *slog.Logger
}

// Server serves the beanstalkd protocol. Each connection runs in its own goroutine, so a
// client that sends half a command and stalls holds only its own connection.
type Server struct {
	cfg      Config
	sessions atomic.Uint64
	slots    chan struct{} // one per connection being served
	tubes    *tubeRefs
	counts   *counters
	conns    connCounts
	started  time.Time
	id       string // random, for the stats document
	draining atomic.Bool

	mu   sync.Mutex
	open map[*conn]struct{}
}

// connCounts are the connection figures of the stats document.
type connCounts struct {
	current, total, producers, workers, waiting atomic.Int64
}

// New validates cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("beanstalkd: Config.Backend is required")
	}
	if cfg.MaxConns < 0 || cfg.MaxJobSize < 0 {
		return nil, fmt.Errorf("beanstalkd: negative MaxConns (%d) or MaxJobSize (%d)", cfg.MaxConns, cfg.MaxJobSize)
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 10000
	}
	if cfg.MaxJobSize == 0 {
		cfg.MaxJobSize = proto.DefaultMaxJobSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	return &Server{
		cfg:     cfg,
		slots:   make(chan struct{}, cfg.MaxConns),
		tubes:   newTubeRefs(),
		counts:  newCounters(),
		started: time.Now(),
		id:      hex.EncodeToString(id[:]),
		open:    map[*conn]struct{}{},
	}, nil
}

// Serve accepts connections on ln until ctx ends, then closes ln and every connection and
// returns once their goroutines are done.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer wg.Wait()
	defer s.closeAll()
	var pause time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("beanstalkd: accept: %w", err)
			}
			// Out of file descriptors and the like: wait and go on, as net/http does, rather
			// than drop every client.
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			s.cfg.Logger.Error("beanstalkd: accept", "err", err, "retry_in", pause)
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		pause = 0
		select {
		case s.slots <- struct{}{}:
		default:
			// Over the limit: refuse at once rather than queue a client that would wait unseen.
			nc.Close()
			continue
		}
		c := s.newConn(nc)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-s.slots }()
			c.serve(ctx)
		}()
	}
}

// Drain makes the server refuse new jobs (put answers DRAINING, and stats says draining: true)
// while it goes on serving everything else, as beanstalkd does on SIGUSR1: for a shutdown.
func (s *Server) Drain() { s.draining.Store(true) }

// newConn registers a connection so that Serve can close it on the way out.
func (s *Server) newConn(nc net.Conn) *conn {
	c := &conn{
		srv:     s,
		nc:      nc,
		session: proto.Session(s.sessions.Add(1)),
		r:       proto.NewReader(nc, s.cfg.MaxJobSize),
		w:       proto.NewWriter(nc),
	}
	s.mu.Lock()
	s.open[c] = struct{}{}
	s.mu.Unlock()
	s.conns.current.Add(1)
	s.conns.total.Add(1)
	return c
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.open, c)
	s.mu.Unlock()
	s.conns.current.Add(-1)
}

func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.open {
		c.nc.Close()
	}
}
