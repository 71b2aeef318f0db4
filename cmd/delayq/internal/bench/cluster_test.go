package bench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/bench"
	"github.com/delayq/delayq/internal/redistest"
)

// runClusterScenario runs the cluster scenario alone, with quick counts.
func runClusterScenario(ctx context.Context, t *testing.T, env *bench.Env, c bench.Contestant) bench.Result {
	t.Helper()
	s, err := bench.Select("cluster")
	if err != nil {
		t.Fatal(err)
	}
	r := bench.RunOne(ctx, env, s[0], c)
	if r.Error != "" {
		t.Fatalf("cluster scenario: %s\nnotes: %s", r.Error, strings.Join(r.Notes, "\n"))
	}
	return r
}

// checkClusterResult checks that every shard of every cluster size in shards got work in both
// stages, that no shard answered an error, and that every rate and projection is there.
func checkClusterResult(t *testing.T, r bench.Result, shards ...int) {
	t.Helper()
	for _, m := range r.Metrics {
		switch {
		case m.NA:
			t.Errorf("%s: not measured", m.Name)
		case strings.HasSuffix(m.Name, ": errors"):
			if m.Value != 0 {
				t.Errorf("%s = %v, want 0", m.Name, m.Value)
			}
		case m.Unit == "jobs/s" || m.Unit == "µs":
			if !(m.Value > 0) {
				t.Errorf("%s = %v %s, want > 0", m.Name, m.Value, m.Unit)
			}
		}
	}
	for _, n := range r.Notes {
		if strings.Contains(n, ": errors: ") {
			t.Log(n)
		}
	}
	for _, stage := range []string{"enqueue", "drain"} {
		for _, k := range shards {
			names := []string{fmt.Sprintf("%s, 1 shard", stage), fmt.Sprintf("%s: projected, 1 shard", stage)}
			if k > 1 {
				names = []string{fmt.Sprintf("%s, %d shards", stage, k), fmt.Sprintf("%s: projected, %d shards", stage, k)}
				for i := 1; i <= k; i++ {
					// A shard with no partition of the topic has its CPU per job not measured.
					names = append(names,
						fmt.Sprintf("%s, %d shards, shard %d: CPU per job", stage, k, i),
						fmt.Sprintf("%s, %d shards, shard %d: script time per job", stage, k, i))
				}
			}
			for _, name := range names {
				if _, ok := r.Metric(name); !ok {
					t.Errorf("no figure %q", name)
				}
			}
		}
	}
}

// TestClusterScenario runs the cluster scenario on the clusters it starts, of 1 and 3
// primaries, and checks that every shard got work and none answered an error.
func TestClusterScenario(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dq := &bench.Delayq{Config: delayq.Config{Namespace: "bc"}}
	r := runClusterScenario(ctx, t, &bench.Env{Quick: true}, dq)
	checkClusterResult(t, r, 1, 3)
	if len(r.Stages) != 2*(1+3) {
		t.Errorf("%d Redis profiles, want one per shard and stage, 8", len(r.Stages))
	}
	for _, st := range r.Stages {
		if len(st.Commands) == 0 || st.Commands[0].Command != "evalsha" {
			t.Errorf("%s: the costliest command is not a script: %+v", st.Name, st.Commands)
		}
	}
}

// TestClusterScenarioOnAGivenCluster runs the scenario on a cluster it is given: it measures
// that cluster alone and deletes no key outside its namespace.
func TestClusterScenarioOnAGivenCluster(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := redistest.NewCluster(t, 3, 0)
	rdb := cl.Client(t)
	if err := rdb.Set(ctx, "someone:else", "keep", 0).Err(); err != nil {
		t.Fatal(err)
	}
	dq := &bench.Delayq{Config: delayq.Config{Namespace: "bg"}}
	r := runClusterScenario(ctx, t, &bench.Env{Quick: true, ClusterAddrs: cl.Addrs()}, dq)
	checkClusterResult(t, r, 3)
	if _, ok := r.Metric("enqueue, 1 shard"); ok {
		t.Error("a 1-shard figure from a run on a given 3-primary cluster")
	}
	if v, err := rdb.Get(ctx, "someone:else").Result(); err != nil || v != "keep" {
		t.Errorf("a key outside the namespace: %q, %v; want it kept", v, err)
	}
}
