//go:build faults

package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// quiet is a go-redis logger that drops everything.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// agentBin is the agent binary TestMain builds for the whole run.
var agentBin string

// serverBin is the delayq binary, built by TestMain; serverBuildErr says why it could not be.
var (
	serverBin      string
	serverBuildErr error
)

// full is true under DELAYQ_FAULTS=full: more jobs, longer runs.
var full bool

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	switch p := os.Getenv("DELAYQ_FAULTS"); p {
	case "", "short":
	case "full":
		full = true
	default:
		fmt.Fprintf(os.Stderr, "DELAYQ_FAULTS=%q: want short or full\n", p)
		return 2
	}
	// The sentinel clients' notes on every failover would drown the scenarios' output.
	redis.SetLogger(quiet{})
	dir, err := os.MkdirTemp("", "delayq-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	agentBin = filepath.Join(dir, "agent")
	build := exec.Command("go", "build", "-o", agentBin, "./agent")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the agent: %v\n%s", err, out)
		return 1
	}
	serverBin = filepath.Join(dir, "delayq")
	build = exec.Command("go", "build", "-o", serverBin, "../..")
	if out, err := build.CombinedOutput(); err != nil {
		serverBuildErr = fmt.Errorf("building cmd/delayq: %v\n%s", err, out)
	}
	return m.Run()
}

// scale picks the job count or duration of the running profile.
func scale[T any](short, long T) T {
	if full {
		return long
	}
	return short
}

var resultsMu sync.Mutex

// record logs a scenario's measured figures and appends them, as one JSON line, to the file
// named by DELAYQ_FAULTS_RESULTS when it is set.
func record(t *testing.T, figures map[string]any) {
	t.Helper()
	b, err := json.Marshal(figures)
	if err != nil {
		t.Fatalf("results: %v", err)
	}
	t.Logf("figures: %s", b)
	path := os.Getenv("DELAYQ_FAULTS_RESULTS")
	if path == "" {
		return
	}
	line, _ := json.Marshal(map[string]any{
		"scenario": t.Name(),
		"profile":  scale("short", "full"),
		"at":       time.Now().UTC().Format(time.RFC3339),
		"figures":  json.RawMessage(b),
	})
	resultsMu.Lock()
	defer resultsMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Errorf("results: %v", err)
		return
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Errorf("results: %v", err)
	}
}
