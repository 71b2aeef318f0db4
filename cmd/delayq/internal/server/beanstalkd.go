package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/backend"
)

// startBeanstalkd listens on the beanstalkd address and serves it until the returned stop is
// called; drain makes it refuse new jobs, for a shutdown. Without an address it does nothing.
func startBeanstalkd(cfg BeanstalkdConfig, dq *delayq.Client, log *slog.Logger) (drain, stop func(), err error) {
	if cfg.Listen == "" {
		return func() {}, func() {}, nil
	}
	b := backend.New(dq, log)
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.Start(ctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("beanstalkd: reading the tubes' pauses: %w", err)
	}
	srv, err := beanstalkd.New(beanstalkd.Config{
		Backend: b, MaxConns: cfg.MaxConns, MaxJobSize: cfg.MaxJobSize, Logger: log,
	})
	if err != nil {
		cancel()
		b.Close()
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		cancel()
		b.Close()
		return nil, nil, fmt.Errorf("--beanstalkd-listen %s: %w", cfg.Listen, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx, ln); err != nil {
			log.Error("the beanstalkd server failed", "err", err)
		}
	}()
	log.Info("beanstalkd protocol on "+ln.Addr().String(), "addr", ln.Addr().String())
	return srv.Drain, func() {
		cancel()
		<-done
		b.Close()
	}, nil
}
