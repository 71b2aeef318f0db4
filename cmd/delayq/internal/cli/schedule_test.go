package cli_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

func TestScheduleCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil, "--redis", "redis://"+redistest.Standalone(t).Addr)
	out := s.must(t, "schedule", "put", "daily", "--cron", "0 9 * * *", "--timezone", "Europe/Berlin", "--topic", "reports",
		"--body", `{"k": 1}`, "--ttr", "1m", "--max-retries", "0", "--start-at", "2030-01-01T00:00:00Z")
	for _, want := range []string{"created schedule daily", "Europe/Berlin", "2030-01-01T08:00:00.000Z", "ttr 1m, max_retries 0", `{"k":1}`} {
		if !strings.Contains(out, want) {
			t.Errorf("schedule put printed %q, which lacks %q", out, want)
		}
	}
	var replaced apiv1.Schedule
	s.mustJSON(t, &replaced, "schedule", "put", "daily", "--cron", "@hourly", "--topic", "reports", "--missed", "skip")
	if replaced.Cron != "@hourly" || replaced.Missed != "skip" || replaced.Timezone != "UTC" {
		t.Errorf("replaced: %+v", replaced)
	}
	s.must(t, "schedule", "put", "beat", "--cron", "@every 1m", "--topic", "pings")
	if out := s.must(t, "schedule", "list"); !strings.Contains(out, "NAME") || !strings.Contains(out, "beat") || !strings.Contains(out, "daily") {
		t.Errorf("schedule list printed %q", out)
	}
	var paused apiv1.Schedule
	s.mustJSON(t, &paused, "schedule", "pause", "daily")
	if !paused.Paused || len(paused.NextRuns) != 0 {
		t.Errorf("paused: %+v", paused)
	}
	if out := s.must(t, "schedule", "resume", "daily"); !strings.Contains(out, "paused     false") {
		t.Errorf("schedule resume printed %q", out)
	}
	if out := s.must(t, "schedule", "delete", "daily"); out != "deleted schedule daily\n" {
		t.Errorf("schedule delete printed %q", out)
	}
	if _, err := s.run(t, "schedule", "get", "daily"); err == nil || !strings.Contains(err.Error(), `schedule "daily" not found`) {
		t.Errorf("schedule get of a deleted schedule: %v", err)
	}
	_, err := s.run(t, "schedule", "put", "fast", "--cron", "@every 500ms", "--topic", "t")
	if err == nil || !strings.Contains(err.Error(), "invalid cron") || !strings.Contains(err.Error(), "under 1s") {
		t.Errorf("an interval under 1s: %v", err)
	}
	if _, err := s.run(t, "schedule", "put", "x", "--cron", "@hourly", "--topic", "t", "--start-at", "soon"); err == nil || !strings.Contains(err.Error(), "--start-at") {
		t.Errorf("a bad --start-at: %v", err)
	}
}

// Two delayq server processes run the schedules of one Redis; one of them is killed with
// SIGKILL a few seconds in. Each tick of an @every 1s schedule is handed out once, none missed.
func TestTwoServersOneKilledGiveEveryTickOnce(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	rs := redistest.Standalone(t)
	a := startServerProcess(t, bin, "--redis", "redis://"+rs.Addr)
	startServerProcess(t, bin, "--redis", "redis://"+rs.Addr)

	c, err := delayq.New(testContext(t), rs.Client(t), delayq.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var mu sync.Mutex
	handed := map[string]int{}
	w, err := delayq.NewWorker(c, delayq.WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Handle("ticks", func(_ context.Context, j *delayq.Job) error {
		mu.Lock()
		defer mu.Unlock()
		handed[j.ID]++
		return nil
	})
	if err := w.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })

	var sch apiv1.Schedule
	(&server{URL: a.url}).mustJSON(t, &sch, "schedule", "put", "every-second", "--cron", "@every 1s", "--topic", "ticks")
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = delayq.TickID("every-second", sch.CreatedAt.Truncate(time.Second).Add(time.Duration(i+1)*time.Second))
	}
	handedOut := func(id string) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return handed[id] > 0 }
	}
	testwait.For(t, 20*time.Second, "the fourth tick's job", handedOut(ids[3]))
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "the tenth tick's job", handedOut(ids[9]))
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if handed[id] != 1 {
			t.Errorf("tick job %s was handed out %d times, want once", id, handed[id])
		}
	}
	for id, n := range handed {
		if n != 1 {
			t.Errorf("job %s was handed out %d times", id, n)
		}
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// serverProcess is a delayq server run from the built binary.
type serverProcess struct {
	url string
	cmd *exec.Cmd
}

// startServerProcess starts `bin server --listen 127.0.0.1:0 args...` and waits for its
// "listening on" line; it is killed when the test ends.
func startServerProcess(t *testing.T, bin string, args ...string) *serverProcess {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"server", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = cleanEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	logs := &testwait.Buffer{}
	lines := bufio.NewScanner(io.TeeReader(stderr, logs))
	for lines.Scan() {
		if m := listeningRe.FindStringSubmatch(lines.Text()); m != nil {
			go func() {
				for lines.Scan() {
				}
			}()
			return &serverProcess{url: "http://" + m[1], cmd: cmd}
		}
	}
	t.Fatalf("no \"listening on\" line; output:\n%s", logs)
	return nil
}
