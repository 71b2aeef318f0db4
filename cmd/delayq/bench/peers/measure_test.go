package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/bench"
)

// TestMain lets the test binary stand in for the harness's: measure starts its own binary
// again with -contestant, and under test that binary is this one.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-contestant" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestEachContestantRunsInAProcessOfItsOwn runs one scenario for two contestants and checks
// that each ran in a process other than the harness's and the other's.
func TestEachContestantRunsInAProcessOfItsOwn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := bench.StartRedis(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root, err := findRoot()
	if err != nil {
		t.Fatal(err)
	}
	o := options{root: root, quick: true}
	pids := map[int]string{os.Getpid(): "the harness"}
	for _, c := range []string{"delayq", "floor-pipelined"} {
		out, err := runChild(ctx, self, o, c, "enqueue", 1, srv.Addr, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if out.Result.Contestant != c || out.Result.Error != "" || len(out.Result.Metrics) != 4 {
			t.Errorf("%s: %+v, want the enqueue scenario's four figures", c, out.Result)
		}
		if other, ok := pids[out.PID]; ok {
			t.Errorf("%s ran in the process of %s (%d)", c, other, out.PID)
		}
		pids[out.PID] = c
	}
}

// TestQuickRunWritesOutsideTheRepository runs the harness end to end on the floors and checks
// that a smoke run writes its report, results and charts beside -out, with every figure.
func TestQuickRunWritesOutsideTheRepository(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	out := filepath.Join(dir, "B.md")
	args := []string{"-quick", "-runs", "2", "-scenarios", "enqueue", "-queues", "floor,floor-pipelined", "-out", out}
	if err := run(ctx, args, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"B.md", "results.json", "charts/throughput.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 4 {
		t.Fatalf("%d results, want 2 runs of 2 floors", len(rep.Results))
	}
	// The order rotates: the second run starts with the other floor.
	if rep.Results[0].Contestant != "floor" || rep.Results[2].Contestant != "floor-pipelined" {
		t.Errorf("order of the runs: %s, %s, %s, %s", rep.Results[0].Contestant, rep.Results[1].Contestant, rep.Results[2].Contestant, rep.Results[3].Contestant)
	}
	for _, r := range rep.Results {
		if r.Error != "" || len(r.Metrics) != 4 {
			t.Errorf("run %d, %s: %+v", r.Run, r.Contestant, r.Result)
		}
	}
}
