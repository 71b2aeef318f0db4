package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is what `delayq version` and `delayq --version` print: the build information the Go
// toolchain embeds in the binary.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "delayq: no build information in this binary"
	}
	return versionOf(info)
}

// versionOf describes a build in one line: the module's version ("(devel)" for a build from a
// checkout, a tag such as v1.2.0 for `go install ...@v1.2.0`), the VCS revision and its commit
// time, whether the tree had changes not committed, and the Go version.
func versionOf(info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	mod := info.Main.Version
	if mod == "" {
		mod = "(unknown)"
	}
	parts := []string{"delayq " + mod}
	switch rev := settings["vcs.revision"]; {
	case rev != "":
		r := "revision " + rev
		if t := settings["vcs.time"]; t != "" {
			r += " (" + t + ")"
		}
		if settings["vcs.modified"] == "true" {
			r += ", modified tree"
		}
		parts = append(parts, r)
	case mod == "(devel)":
		// A checkout built with -buildvcs=false, or outside git's view (a git worktree,
		// a copied tree): go build records no revision then.
		parts = append(parts, "revision unknown (built without VCS information)")
	}
	if info.GoVersion != "" {
		parts = append(parts, info.GoVersion)
	}
	return strings.Join(parts, ", ")
}

// newVersionCmd builds `delayq version`.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print delayq's version, VCS revision and Go version",
		Long: strings.TrimSpace(`
Print the version of this delayq binary in one line, from the build information Go embeds in
it: the module version ("(devel)" for a build from a checkout), the VCS revision it was built
from, with its commit time and ", modified tree" when the checkout had changes not committed,
and the Go version. "delayq --version" prints the same.

go build records the revision when it builds inside a git checkout (not a git worktree) with
-buildvcs left at its default; otherwise the line says the revision is unknown.`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version())
			return err
		},
	}
}
