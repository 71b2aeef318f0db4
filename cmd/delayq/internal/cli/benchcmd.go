//go:build !bench

package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// newBenchCmd is `delayq bench` in a binary built without -tags bench: the benchmark scenarios
// (thousands of lines, a load generator and Redis Clusters of their own) stay out of the
// server, and the command says how to get them.
func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "bench",
		Short:              "Measure delayq on Redis (in a binary built with -tags bench)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("this delayq was built without its benchmarks: run `go run -tags bench ./cmd/delayq bench` in a checkout, or build with -tags bench")
		},
	}
}
