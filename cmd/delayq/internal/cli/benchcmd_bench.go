//go:build bench

package cli

import (
	"github.com/spf13/cobra"

	"github.com/delayq/delayq/cmd/delayq/internal/bench"
)

// newBenchCmd is `delayq bench`, the benchmark scenarios, in a binary built with -tags bench.
func newBenchCmd() *cobra.Command { return bench.Command() }
