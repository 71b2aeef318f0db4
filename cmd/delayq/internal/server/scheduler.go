package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/delayq/delayq"
)

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
