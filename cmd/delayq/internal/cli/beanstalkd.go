package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/spf13/pflag"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/backend"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
)

// beanstalkdConfig is the server's beanstalkd front end (docs/beanstalkd.md): off without an
// address.
type beanstalkdConfig struct {
	listen     string
	maxConns   int
	maxJobSize int
}

func (b *beanstalkdConfig) flags(f *pflag.FlagSet) {
	f.StringVar(&b.listen, "beanstalkd-listen", "", "also serve the beanstalkd protocol on this address, such as 127.0.0.1:11300, for existing beanstalkd clients (docs/beanstalkd.md); empty: off")
	f.IntVar(&b.maxConns, "beanstalkd-max-conns", 10000, "beanstalkd connections served at once; one more is closed at once")
	f.IntVar(&b.maxJobSize, "beanstalkd-max-job-size", proto.DefaultMaxJobSize, "largest job body a beanstalkd client may put, in bytes (beanstalkd's -z)")
}

func (b *beanstalkdConfig) validate(fail func(string, ...any)) {
	if b.listen == "" {
		return
	}
	if b.maxConns < 1 {
		fail("--beanstalkd-max-conns %d: want at least 1", b.maxConns)
	}
	if b.maxJobSize < 1 || b.maxJobSize > 1<<20 {
		fail("--beanstalkd-max-job-size %d: want 1 to %d (delayq's largest body)", b.maxJobSize, 1<<20)
	}
}

// startBeanstalkd listens on the beanstalkd address and serves it until the returned stop is
// called; drain makes it refuse new jobs, for a shutdown. Without an address it does nothing.
func startBeanstalkd(cfg beanstalkdConfig, dq *delayq.Client, log *slog.Logger) (drain, stop func(), err error) {
	if cfg.listen == "" {
		return func() {}, func() {}, nil
	}
	b := backend.New(dq, log)
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.Start(ctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("beanstalkd: reading the tubes' pauses: %w", err)
	}
	srv, err := beanstalkd.New(beanstalkd.Config{
		Backend: b, MaxConns: cfg.maxConns, MaxJobSize: cfg.maxJobSize, Logger: log,
	})
	if err != nil {
		cancel()
		b.Close()
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		cancel()
		b.Close()
		return nil, nil, fmt.Errorf("--beanstalkd-listen %s: %w", cfg.listen, err)
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
