package bench

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// clusterTopic is the topic the cluster scenario fills and drains. On the three equal slot
	// ranges of a 3-primary cluster, the hash tags of its 16 partitions fall 5, 4 and 7 to a
	// shard: a 7/5/4 split, the most common one (about a quarter of topic names get it; the
	// most even, 6/5/5, about a sixth). The name is fixed so that runs compare.
	clusterTopic = "bench-cluster"
	// clusterPartitions is the topic's partition count: the library's default on a Cluster.
	clusterPartitions = 16
	// clusterWarmup is how many jobs go through the topic before the measured stages, so that
	// every shard has loaded the scripts (its first EVALSHA of each answers NOSCRIPT).
	clusterWarmup = 200
)

// clusterSizes are the primaries of the clusters the scenario starts when given none.
var clusterSizes = []int{1, 3}

func (env *Env) clusterJobs() int {
	if env.Quick {
		return 2000
	}
	return 100_000
}

// clusterRun is what the cluster scenario measured on one cluster.
type clusterRun struct {
	shards []*shard
	stages []clusterStage // enqueue, then drain
}

// clusterStage is one stage of a clusterRun: its jobs, wall time and what each shard did.
type clusterStage struct {
	name        string
	jobs        int
	wall        time.Duration
	readings    []shardReading // by shard
	warnings    int            // logged by the delayq client during the stage
	lastWarning string
}

// runCluster measures delayq on Redis Clusters of one and three primaries (or on the cluster
// given in env.ClusterAddrs): what each shard's Redis spends per job to enqueue and drain one
// topic of 16 partitions, how evenly the shards share it, the rates, and the rate N shards
// could carry by that cost.
func runCluster(ctx context.Context, env *Env, c Contestant) Result {
	var r Result
	d, ok := c.(*Delayq)
	if !ok {
		r.note("not measured: the scenario drives delayq's client on a Redis Cluster it starts")
		return r
	}
	n := env.clusterJobs()
	r.note("one topic of %d partitions (%q) on a Redis Cluster of primaries only, through delayq.Client on a go-redis ClusterClient: %d jobs with %d-byte bodies due at once are enqueued in batches of 1000 by 4 producers, then drained by a Worker with %d handlers; %d jobs go through first, so that every shard has loaded the scripts",
		clusterPartitions, clusterTopic, n, BodySize, e2eConsumers, clusterWarmup)
	r.note("CONFIG RESETSTAT on every primary before each stage; CPU per job = the shard's used_cpu_user + used_cpu_sys (INFO cpu) over the stage / the jobs of the partitions it serves; script time per job = the usec of EVALSHA and EVAL (INFO commandstats) / those jobs")
	r.note("spread = (highest − lowest) / highest over the shards: of the CPU per job (cost spread) and of the CPU time (load spread); errors = error replies of the stage (INFO errorstats: CROSSSLOT, MOVED, ASK, …) plus warnings the client logged")
	r.note("projected, N shards = N × 10^6 / the highest CPU µs per job of a shard: the rate if every shard had a core to itself and the topic's partitions spread evenly; \"this topic's split\" = jobs / the busiest shard's CPU time, with the partitions as they fell")

	var runs []*clusterRun
	if len(env.ClusterAddrs) > 0 {
		r.note("measured on the given cluster alone: clusters of other sizes are started only when none is given")
		run, err := measureCluster(ctx, env, d, env.ClusterAddrs, false)
		if err != nil {
			return fail(r, "cluster %v: %v", env.ClusterAddrs, err)
		}
		runs = append(runs, run)
	} else {
		r.note("each cluster is new and runs on this machine, sharing its cores with the client")
		for _, k := range clusterSizes {
			run, err := startAndMeasure(ctx, env, d, k)
			if err != nil {
				return fail(r, "%s: %v", shardCount(k), err)
			}
			runs = append(runs, run)
		}
	}
	for i := range runs[0].stages {
		for _, run := range runs {
			run.report(&r, i)
		}
		for _, run := range runs {
			run.project(&r, i)
		}
	}
	for _, run := range runs {
		var parts []string
		for i, s := range run.shards {
			parts = append(parts, fmt.Sprintf("shard %d (%s) serves partitions %v, %d jobs", i+1, s.label(), s.partitions, s.jobs))
		}
		r.note("%s: %s", shardCount(len(run.shards)), strings.Join(parts, "; "))
	}
	return r
}

// startAndMeasure starts a cluster of k primaries, measures on it and stops it.
func startAndMeasure(ctx context.Context, env *Env, d *Delayq, k int) (*clusterRun, error) {
	cl, err := StartCluster(ctx, k)
	if err != nil {
		return nil, err
	}
	defer cl.Stop()
	env.logger().Info("bench: started a Redis Cluster", "primaries", k, "addrs", cl.Addrs())
	return measureCluster(ctx, env, d, cl.Addrs(), true)
}

// measureCluster enqueues and drains the topic on the cluster at addrs. own allows FLUSHALL;
// otherwise only the keys of d's namespace are deleted first.
func measureCluster(ctx context.Context, env *Env, d *Delayq, addrs []string, own bool) (*clusterRun, error) {
	n := env.clusterJobs()
	// Without CLIENT SETINFO on each new connection, which Redis before 7.2 answers with an
	// error that would count as one of the stage's.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 128, DisableIdentity: true})
	defer cc.Close()
	shards, err := clusterShards(ctx, cc)
	if err != nil {
		return nil, err
	}
	defer closeShards(shards)

	cfg := d.Config
	if cfg.Namespace == "" {
		cfg.Namespace = "delayq" // the library's default
	}
	cfg.Partitions = clusterPartitions
	warn := &warnCounter{}
	cfg.Logger = slog.New(warn)
	reset := NamespaceDeleter(cc, cfg.Namespace)
	if own {
		reset = Flusher(cc)
	}
	if err := reset(ctx); err != nil {
		return nil, err
	}
	q, err := (&Delayq{RDB: cc, Config: cfg, Revision: d.Revision}).Open(ctx, clusterTopic)
	if err != nil {
		return nil, err
	}
	defer closeQueue(ctx, q)
	if _, err := q.Produce(ctx, fill(q, clusterWarmup)); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	if _, err := drain(ctx, env, q, clusterWarmup); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}

	run := &clusterRun{shards: shards}
	measure := func(name string, stage func() (time.Duration, error)) error {
		st, err := startShardStage(ctx, shards)
		if err != nil {
			return err
		}
		w0, _ := warn.count()
		wall, err := stage()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		readings, err := st.end(ctx)
		if err != nil {
			return err
		}
		w1, last := warn.count()
		run.stages = append(run.stages, clusterStage{name: name, jobs: n, wall: wall, readings: readings, warnings: w1 - w0, lastWarning: last})
		return nil
	}
	err = measure("enqueue", func() (time.Duration, error) {
		p, err := q.Produce(ctx, fill(q, n))
		return p.End.Sub(p.Start), err
	})
	if err != nil {
		return nil, err
	}
	if err := countJobs(ctx, cc, shards, cfg.Namespace, clusterTopic, clusterPartitions); err != nil {
		return nil, err
	}
	total := 0
	for _, s := range shards {
		total += s.jobs
	}
	if total != n {
		return nil, fmt.Errorf("the partitions hold %d jobs after the enqueue, want %d", total, n)
	}
	err = measure("drain", func() (time.Duration, error) { return drain(ctx, env, q, n) })
	if err != nil {
		return nil, err
	}
	return run, nil
}

// drain consumes n jobs of q with e2eConsumers handlers, stops them and returns how long it
// took until the last was acked.
func drain(ctx context.Context, env *Env, q Queue, n int) (time.Duration, error) {
	start := time.Now()
	if err := q.Consume(ctx, e2eConsumers); err != nil {
		return 0, fmt.Errorf("consume: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, env.awaitTimeout())
	defer cancel()
	aw, err := q.Await(actx, n)
	if serr := q.StopConsuming(ctx); err == nil && serr != nil {
		err = fmt.Errorf("stopping the worker: %w", serr)
	}
	return aw.Done.Sub(start), err
}

// report adds the figures of stage i of the run: the rate, each shard's cost per job, the
// spreads, how busy the busiest shard was and the errors.
func (run *clusterRun) report(r *Result, i int) {
	st := run.stages[i]
	k := len(run.shards)
	prefix := st.name + ", " + shardCount(k)
	r.add(prefix, rate(st.jobs, st.wall), "jobs/s", Higher)
	var costs []float64
	var cpus []time.Duration
	errs, failed := map[string]int64{}, map[string]int64{}
	for j, s := range run.shards {
		rd := st.readings[j]
		cpus = append(cpus, rd.cpu)
		for code, n := range rd.errors {
			errs[code] += n
		}
		for name, n := range rd.failed {
			failed[name] += n
		}
		name := prefix
		if k > 1 {
			name = fmt.Sprintf("%s, shard %d", prefix, j+1)
		}
		r.Stages = append(r.Stages, Stage{Name: name, Commands: rd.commands})
		if s.jobs == 0 {
			r.na(name+": CPU per job", "µs", Lower, "the shard serves no partition of the topic")
			continue
		}
		cost := usec(rd.cpu) / float64(s.jobs)
		costs = append(costs, cost)
		r.add(name+": CPU per job", cost, "µs", Lower)
		r.add(name+": script time per job", float64(rd.script.Usec)/float64(s.jobs), "µs", Lower)
	}
	if k > 1 {
		r.add(prefix+": cost spread", spread(costs), "%", Lower)
		r.add(prefix+": load spread", spread(durations(cpus)), "%", Lower)
	}
	busy := prefix + ": CPU use"
	if k > 1 {
		busy = prefix + ": busiest shard's CPU use"
	}
	r.add(busy, 100*float64(slices.Max(cpus))/float64(st.wall), "%", Higher)
	var total int64
	var kinds []string
	for _, code := range slices.Sorted(maps.Keys(errs)) {
		total += errs[code]
		kinds = append(kinds, fmt.Sprintf("%s ×%d", code, errs[code]))
	}
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		kinds = append(kinds, fmt.Sprintf("%s failed ×%d", name, failed[name]))
	}
	if st.warnings > 0 {
		total += int64(st.warnings)
		kinds = append(kinds, fmt.Sprintf("%d client warnings, the last: %s", st.warnings, st.lastWarning))
	}
	r.add(prefix+": errors", float64(total), "errors", Lower)
	if total > 0 {
		r.note("%s: errors: %s", prefix, strings.Join(kinds, ", "))
	}
}

// project adds the rates the shards' cost per job projects for stage i of the run.
func (run *clusterRun) project(r *Result, i int) {
	st := run.stages[i]
	k := len(run.shards)
	var worst float64
	var busiest time.Duration
	for j, s := range run.shards {
		rd := st.readings[j]
		busiest = max(busiest, rd.cpu)
		if s.jobs > 0 {
			worst = max(worst, usec(rd.cpu)/float64(s.jobs))
		}
	}
	prefix := fmt.Sprintf("%s: projected, %s", st.name, shardCount(k))
	if worst > 0 {
		r.add(prefix, float64(k)*1e6/worst, "jobs/s", Higher)
	}
	if k > 1 && busiest > 0 {
		r.add(prefix+", this topic's split", rate(st.jobs, busiest), "jobs/s", Higher)
	}
}

// shardCount writes "1 shard" or "k shards".
func shardCount(k int) string {
	if k == 1 {
		return "1 shard"
	}
	return fmt.Sprintf("%d shards", k)
}

// spread returns (highest − lowest) / highest of vs, in percent; 0 for fewer than two values.
func spread(vs []float64) float64 {
	if len(vs) < 2 || slices.Max(vs) <= 0 {
		return 0
	}
	hi, lo := slices.Max(vs), slices.Min(vs)
	return 100 * (hi - lo) / hi
}

func durations(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d)
	}
	return out
}

func usec(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
