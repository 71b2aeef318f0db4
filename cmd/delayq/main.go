// Command delayq runs the delayq server (delayq server) and calls a server's API from the
// command line (delayq enqueue, reserve, ack, ...). Run "delayq --help" for the commands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	// The IANA time zones of schedules, for hosts without a tz database (slim containers).
	_ "time/tzdata"

	"github.com/delayq/delayq/cmd/delayq/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal starts a graceful shutdown, a second one ends the process.
		<-ctx.Done()
		stop()
	}()
	err := cli.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
