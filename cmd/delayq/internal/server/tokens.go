package server

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/access"
)

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
