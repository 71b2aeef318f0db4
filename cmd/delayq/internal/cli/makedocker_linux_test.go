package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `make docker` where the docker command is installed but its daemon does not answer: it says
// plainly that Docker needs a running daemon and how to start one, builds nothing, and exits 0,
// as CI expects of it wherever Docker is out of reach.
func TestMakeDockerSaysItNeedsARunningDaemon(t *testing.T) {
	t.Parallel()
	// A docker command whose every call fails as the real one does without a daemon.
	bin := t.TempDir()
	fake := "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := makeCommand(ctx, t, []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}, "docker")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make docker without a daemon: %v, want exit 0\n%s", err, out)
	}
	for _, want := range []string{
		"Docker needs a running daemon",
		"Cannot connect to the Docker daemon",
		"systemctl start docker",
		"nothing was built",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make docker without a daemon lacks %q:\n%s", want, out)
		}
	}
}
