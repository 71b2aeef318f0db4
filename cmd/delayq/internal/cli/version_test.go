package cli

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOfDescribesTheBuild(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"a checkout with changes", debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs", "git", "vcs.revision", "0123456789abcdef0123456789abcdef01234567", "vcs.time", "2026-05-01T10:00:00Z", "vcs.modified", "true")},
			"delayq (devel), revision 0123456789abcdef0123456789abcdef01234567 (2026-05-01T10:00:00Z), modified tree, go1.26.1"},
		{"a clean checkout", debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "0123456789abcdef0123456789abcdef01234567", "vcs.modified", "false")},
			"delayq (devel), revision 0123456789abcdef0123456789abcdef01234567, go1.26.1"},
		{"a checkout built without VCS information", debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}},
			"delayq (devel), revision unknown (built without VCS information), go1.26.1"},
		{"a tagged module", debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v1.2.0"}},
			"delayq v1.2.0, go1.26.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionOf(&tc.info); got != tc.want {
				t.Errorf("versionOf = %q, want %q", got, tc.want)
			}
		})
	}
}

// delayq version and delayq --version print the same line: this binary's build information.
func TestVersionCommandAndFlagPrintTheBuild(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information in the test binary")
	}
	want := versionOf(info) + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errOut bytes.Buffer
		if err := Run(context.Background(), args, func(string) string { return "" }, &out, &errOut); err != nil {
			t.Fatalf("delayq %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
		if out.String() != want {
			t.Errorf("delayq %s printed %q, want %q", strings.Join(args, " "), out.String(), want)
		}
	}
}
