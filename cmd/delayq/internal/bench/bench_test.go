package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/bench"
	"github.com/delayq/delayq/internal/redistest"
)

// TestBenchQuick runs every scenario in quick mode against a fresh redis-server and checks
// that the figures are sane: every rate positive, no early delivery, memory grown.
func TestBenchQuick(t *testing.T) {
	t.Parallel()
	bin := bench.DelayqBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv := redistest.Standalone(t)
	rdb := srv.Client(t)
	env := &bench.Env{RDB: rdb, Reset: bench.Flusher(rdb), Quick: true, Server: bin, RedisURL: "redis://" + srv.Addr}
	dq := &bench.Delayq{RDB: rdb, Config: delayq.Config{Namespace: "bq"}}
	results := bench.Run(ctx, env, bench.Scenarios(), []bench.Contestant{dq})
	if len(results) != len(bench.Scenarios()) {
		t.Fatalf("got %d results, want %d", len(results), len(bench.Scenarios()))
	}
	for _, r := range results {
		if r.Error != "" {
			t.Errorf("%s: %s", r.Scenario, r.Error)
			continue
		}
		if len(r.Metrics) == 0 {
			t.Errorf("%s: no metrics", r.Scenario)
		}
		for _, m := range r.Metrics {
			if m.NA {
				t.Errorf("%s: %s not measured for delayq", r.Scenario, m.Name)
				continue
			}
			switch {
			case strings.HasPrefix(m.Name, "early"):
				if m.Value != 0 {
					t.Errorf("%s: %s = %v, want 0", r.Scenario, m.Name, m.Value)
				}
			case m.Unit == "jobs/s" || m.Unit == "B/job" || m.Unit == "%":
				if !(m.Value > 0) {
					t.Errorf("%s: %s = %v %s, want > 0", r.Scenario, m.Name, m.Value, m.Unit)
				}
			case m.Unit == "ms" && strings.HasPrefix(m.Name, "p"):
				if m.Value < 0 || m.Value > 1000 {
					t.Errorf("%s: %s = %v ms, want within 0 to 1000", r.Scenario, m.Name, m.Value)
				}
			}
		}
	}
	byName := map[string]bench.Result{}
	for _, r := range results {
		byName[r.Scenario] = r
	}
	if n := len(byName["precision"].Samples["lateness_ms"]); n != 300 {
		t.Errorf("precision kept %d lateness samples, want 300", n)
	}
	if n := len(byName["expiry"].Samples["expiry_lateness_ms"]); n != 60 {
		t.Errorf("expiry kept %d lateness samples, want 60", n)
	}
	if m, ok := byName["burst"].Metric("all delivered"); !ok || m.Value < 0 {
		t.Errorf("burst: all delivered = %+v, want a time at or after the due instant", m)
	}
	checkHTTP(t, byName["http"], ownProcess)
	var buf bytes.Buffer
	if err := bench.WriteTable(&buf, results); err != nil {
		t.Fatal(err)
	}
	t.Logf("results:\n%s", buf.String())
	if !strings.Contains(buf.String(), "16 producers") {
		t.Errorf("the table lacks the enqueue figures:\n%s", buf.String())
	}
	buf.Reset()
	if err := bench.WriteJSON(&buf, results); err != nil {
		t.Fatal(err)
	}
	var back []bench.Result
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back) != len(results) {
		t.Errorf("JSON output does not read back: %v", err)
	}
}

// TestCommandLeavesOtherNamespaces runs the command against a given Redis without --flush and
// checks that keys outside its namespace survive.
func TestCommandLeavesOtherNamespaces(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := redistest.Standalone(t)
	rdb := srv.Client(t)
	if err := rdb.Set(ctx, "someone:else", "keep", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := bench.Command()
	cmd.SetArgs([]string{"--redis", "redis://" + srv.Addr, "--quick", "--scenarios", "enqueue,memory", "--json"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("bench: %v\n%s", err, errOut.String())
	}
	var results []bench.Result
	if err := json.Unmarshal(out.Bytes(), &results); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if len(results) != 4 { // enqueue for delayq and the two floors, memory for delayq
		t.Errorf("got %d results, want 4", len(results))
	}
	if v, err := rdb.Get(ctx, "someone:else").Result(); err != nil || v != "keep" {
		t.Errorf("a key outside the namespace: %q, %v; want it kept", v, err)
	}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		list    string
		want    int
		wantErr bool
	}{
		{"", len(bench.Scenarios()), false},
		{"all", len(bench.Scenarios()), false},
		{"enqueue, burst", 2, false},
		{"enqueue,nope", 0, true},
	}
	for _, tt := range tests {
		got, err := bench.Select(tt.list)
		if (err != nil) != tt.wantErr || len(got) != tt.want {
			t.Errorf("Select(%q) = %d scenarios, %v; want %d, error %v", tt.list, len(got), err, tt.want, tt.wantErr)
		}
	}
}

func TestBodyIndex(t *testing.T) {
	t.Parallel()
	for _, i := range []int{0, 7, 123456, 999_999_999} {
		b := bench.Body(i)
		if len(b) != bench.BodySize {
			t.Errorf("Body(%d) has %d bytes, want %d", i, len(b), bench.BodySize)
		}
		got, err := bench.BodyIndex(b)
		if err != nil || got != i {
			t.Errorf("BodyIndex(Body(%d)) = %d, %v", i, got, err)
		}
	}
	if _, err := bench.BodyIndex([]byte("short")); err == nil {
		t.Error("BodyIndex of a short body: no error")
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in          []float64
		med, lo, hi float64
	}{
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{5}, 5, 5, 5},
	}
	for _, tt := range tests {
		med, lo, hi := bench.Median(tt.in)
		if med != tt.med || lo != tt.lo || hi != tt.hi {
			t.Errorf("Median(%v) = %v, %v, %v; want %v, %v, %v", tt.in, med, lo, hi, tt.med, tt.lo, tt.hi)
		}
	}
}

func TestFormatValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		m    bench.Metric
		want string
	}{
		{bench.Metric{Value: 1234567.8}, "1,234,568"},
		{bench.Metric{Value: 250.4}, "250.4"},
		{bench.Metric{Value: 250}, "250"},
		{bench.Metric{Value: 12.34}, "12.3"},
		{bench.Metric{Value: 1.234}, "1.23"},
		{bench.Metric{Value: 0}, "0"},
		{bench.Metric{NA: true}, "n/a"},
	}
	for _, tt := range tests {
		if got := bench.FormatValue(tt.m); got != tt.want {
			t.Errorf("FormatValue(%v) = %q, want %q", tt.m.Value, got, tt.want)
		}
	}
}

func TestCommandRefusesANegativeBacklog(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := bench.Command()
	cmd.SetArgs([]string{"--quick", "--scenarios", "scaling", "--scaling-pending", "-1"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "--scaling-pending") {
		t.Fatalf("bench with --scaling-pending -1: %v", err)
	}
}

// TestFloorsRunEnqueueScenariosOnly checks both floors: each stores every job it is given (one
// call per job, pipelined, and in batches) and takes part in the enqueue and scaling scenarios
// alone.
func TestFloorsRunEnqueueScenariosOnly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rdb := redistest.Standalone(t).Client(t)
	env := &bench.Env{RDB: rdb, Reset: bench.Flusher(rdb), Quick: true}
	for _, floor := range []*bench.Floor{{RDB: rdb, Namespace: "fq"}, {RDB: rdb, Namespace: "fq", Pipelined: true}} {
		results := bench.Run(ctx, env, bench.Scenarios(), []bench.Contestant{floor})
		var got []string
		for _, r := range results {
			got = append(got, r.Scenario)
			if r.Error != "" {
				t.Errorf("%s, %s: %s", floor.Name(), r.Scenario, r.Error)
			}
			for _, m := range r.Metrics {
				if m.NA || !(m.Value > 0) {
					t.Errorf("%s, %s: %s = %v (n/a %v), want a rate", floor.Name(), r.Scenario, m.Name, m.Value, m.NA)
				}
			}
		}
		if want := []string{"enqueue", "scaling"}; !slices.Equal(got, want) {
			t.Errorf("%s ran %v, want %v", floor.Name(), got, want)
		}
		for _, p := range []bench.Plan{{N: 250, Producers: 8}, {N: 250, Producers: 2, Batch: 100}} {
			if err := env.Reset(ctx); err != nil {
				t.Fatal(err)
			}
			q, err := floor.Open(ctx, "check")
			if err != nil {
				t.Fatal(err)
			}
			p.Delay = time.Hour
			if _, err := q.Produce(ctx, p); err != nil {
				t.Fatalf("%s, %+v: %v", floor.Name(), p, err)
			}
			if n := rdb.HLen(ctx, "fq:{floor:check}:jobs").Val(); n != 250 {
				t.Errorf("%s, %+v: %d bodies stored, want 250", floor.Name(), p, n)
			}
			if n := rdb.ZCount(ctx, "fq:{floor:check}:due", "("+strconv.FormatInt(time.Now().Add(59*time.Minute).UnixMilli(), 10), "+inf").Val(); n != 250 {
				t.Errorf("%s, %+v: %d ids due in an hour, want 250", floor.Name(), p, n)
			}
		}
	}
}

// TestReplayWindowOffStoresNoCallRecords runs the enqueue scenario with the library's default
// replay window and with --replay-window below 0: only the first stores call records (SET, one
// per script call that changes state), so the second measures delayq without them.
func TestReplayWindowOffStoresNoCallRecords(t *testing.T) {
	t.Parallel()
	sets := func(window string) int {
		srv := redistest.Standalone(t)
		cmd := bench.Command()
		cmd.SetArgs([]string{"--quick", "--scenarios", "enqueue", "--redis", "redis://" + srv.Addr, "--replay-window", window})
		var out, errOut bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("bench --replay-window %s: %v\n%s", window, err, errOut.String())
		}
		info, err := srv.Client(t).Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_set:calls="); ok {
				n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		return 0
	}
	if on, off := sets("0s"), sets("-1ns"); on < 100 || off != 0 {
		t.Errorf("SET calls: %d with the default replay window, %d without one; want at least 100 and 0", on, off)
	}
}
