package beanstalkd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/cmd/delayq/internal/beanstalktest"
)

const (
	// nodeClientDir holds the Node.js program, its package.json and package-lock.json.
	nodeClientDir = "nodeclient"
	// npmCITimeout bounds the install of the program's dependencies.
	npmCITimeout = 5 * time.Minute
	// nodeCycleTimeout bounds one run of the program; it gives up by itself after 20 s.
	nodeCycleTimeout = 30 * time.Second
)

// TestNodeClientSeesTheSame runs one cycle through a Node.js beanstalkd client library (jackd,
// pinned in nodeclient/package-lock.json) against a fresh beanstalkd and a fresh server on the
// delayq Backend, and wants the same transcript line for line: use, put with priorities and a
// delay, watch and ignore, reserve in priority order, release with a priority and a delay,
// bury, kick and kick-job, peek, touch, stats-job and delete.
func TestNodeClientSeesTheSame(t *testing.T) {
	node := nodeTool(t, "node")
	npm := nodeTool(t, "npm")
	installNodeClient(t, npm)

	real := nodeCycle(t, node, beanstalktest.Start(t).Addr())
	ours := nodeCycle(t, node, startServer(t, Config{Backend: newDelayqBackend(t)}))
	if diff := cmp.Diff(real, ours); diff != "" {
		t.Errorf("node client's transcript, beanstalkd vs delayq (-beanstalkd +delayq):\n%s", diff)
	}
}

// nodeTool returns the path of a Node.js tool. Missing, it fails the test under CI and skips it
// elsewhere: `make test` installs Node.js and npm (scripts/ensure-node.sh).
func nodeTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not on PATH, and CI needs it: %v", name, err)
	}
	t.Skipf("%s is not on PATH; `make test` installs Node.js and npm (scripts/ensure-node.sh)", name)
	return ""
}

// installNodeClient runs `npm ci` in nodeClientDir when its dependencies are not installed.
func installNodeClient(t *testing.T, npm string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(nodeClientDir, "node_modules", "jackd", "package.json")); err == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), npmCITimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = nodeClientDir
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", nodeClientDir, err, out)
	}
}

// nodeCycle runs the program against addr and returns its transcript, one step a line.
func nodeCycle(t *testing.T, node, addr string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nodeCycleTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "cycle.js", addr)
	cmd.Dir = nodeClientDir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node cycle.js %s: %v\nstdout:\n%s\nstderr:\n%s", addr, err, stdout.String(), stderr.String())
	}
	return strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
}
