package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/redisurl"
)

// Options are the settings of a benchmark run.
type Options struct {
	// Redis is the URL of the Redis to measure on; empty starts a temporary redis-server.
	Redis string
	// Scenarios is a comma-separated list of scenario names; empty runs all.
	Scenarios string
	// JSON writes the results as JSON instead of a table.
	JSON bool
	// Quick shrinks every count for a smoke run of a few seconds.
	Quick bool
	// HTTP is the base URL of a running delayq server for the HTTP scenario.
	HTTP string
	// HTTPPid is the process id of the server at HTTP, for its CPU time.
	HTTPPid int
	// Server is the delayq binary the HTTP scenario runs as its server when HTTP is empty.
	// Defaults to this executable when it is delayq; failing that, the server runs in process.
	Server string
	// Flush allows FLUSHALL on the Redis given by Redis; without it only the benchmark's own
	// namespace is deleted between scenario parts.
	Flush bool
	// Namespace is the delayq key prefix the benchmark uses. Defaults to "delayq-bench".
	Namespace string
	// CPUProfile, when set, is the file a CPU profile of the whole run is written to.
	CPUProfile string
	// ScalingPending, when above 0, replaces the scaling scenario's backlog size.
	ScalingPending int
	// ClusterAddrs are nodes of a Redis Cluster for the cluster scenario; empty starts its own.
	ClusterAddrs []string
	// ReplayWindow is the library's Config.ReplayWindow in the scenarios that drive a
	// delayq.Client: 0 its default, below 0 none (no call records), to measure what answering
	// a replayed call as its first run costs.
	ReplayWindow time.Duration
}

// Command returns the `bench` subcommand.
func Command() *cobra.Command {
	var o Options
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure delayq's throughput, memory per job and on-time precision on Redis",
		Long: `bench runs delayq's benchmark scenarios and prints a table (or JSON with --json).

Without --redis it starts a temporary redis-server on a loopback port (default settings,
hz 10, no persistence), which it flushes between scenarios. With --redis it deletes only
the keys of its own namespace, unless --flush allows FLUSHALL. The cluster scenario starts
Redis Clusters of its own (1 and 3 primaries) unless --cluster-addrs names one.

Scenarios: ` + scenarioNames() + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return RunCommand(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Redis, "redis", "", "Redis URL to measure on; empty starts a temporary redis-server")
	f.StringVar(&o.Scenarios, "scenarios", "all", "comma-separated scenarios to run: "+scenarioNames())
	f.BoolVar(&o.JSON, "json", false, "write the results as JSON")
	f.BoolVar(&o.Quick, "quick", false, "small counts, for a smoke run of a few seconds")
	f.StringVar(&o.HTTP, "http", "", "base URL of a running delayq server for the http scenario; empty starts one")
	f.IntVar(&o.HTTPPid, "http-pid", 0, "process id of the server at --http, whose CPU time the http scenario then reads")
	f.StringVar(&o.Server, "server-bin", "", "delayq `binary` the http scenario runs as its server, \"delayq server\" (default: this executable, when it is delayq; else the server runs in process)")
	f.BoolVar(&o.Flush, "flush", false, "allow FLUSHALL on the Redis given with --redis")
	f.StringVar(&o.Namespace, "namespace", "delayq-bench", "delayq key prefix of the benchmark's jobs")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	f.IntVar(&o.ScalingPending, "scaling-pending", 0, "jobs pending in the scaling scenario's second probe (default 1,000,000; 10,000 with --quick)")
	f.DurationVar(&o.ReplayWindow, "replay-window", 0, "the library's replay window (Config.ReplayWindow) where a scenario drives a delayq.Client: 0 its default of 30s, negative none, so that a replayed call could act twice; the http scenario's server keeps its own")
	f.StringSliceVar(&o.ClusterAddrs, "cluster-addrs", nil, "host:port of nodes of a Redis Cluster for the cluster scenario, which deletes its namespace's keys there and resets the primaries' statistics (CONFIG RESETSTAT); empty starts clusters of 1 and 3 primaries")
	return cmd
}

func scenarioNames() string {
	var names []string
	for _, s := range Scenarios() {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// RunCommand runs the benchmark o describes, writing results to stdout and progress to stderr.
// It returns an error when a scenario failed.
func RunCommand(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	scenarios, err := Select(o.Scenarios)
	if err != nil {
		return err
	}
	if o.Namespace == "" {
		o.Namespace = "delayq-bench"
	}
	if o.ScalingPending < 0 {
		return fmt.Errorf("--scaling-pending: %d is below 0", o.ScalingPending)
	}
	if o.Server == "" {
		o.Server = serverBinary()
	}
	env := &Env{Quick: o.Quick, HTTP: o.HTTP, HTTPPid: o.HTTPPid, Server: o.Server, RedisURL: o.Redis,
		ScalingPending: o.ScalingPending, ClusterAddrs: o.ClusterAddrs, Log: slog.New(slog.NewTextHandler(stderr, nil))}
	var rdb redis.UniversalClient
	if o.Redis == "" {
		srv, err := StartRedis(ctx)
		if err != nil {
			return err
		}
		defer srv.Stop()
		env.RedisURL = srv.URL()
		rdb = redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 128})
		env.Reset = Flusher(rdb)
		env.Log.Info("bench: started a temporary redis-server", "addr", srv.Addr)
	} else {
		rdb, err = redisurl.NewClient(o.Redis)
		if err != nil {
			return err
		}
		env.Reset = NamespaceDeleter(rdb, o.Namespace)
		if o.Flush {
			env.Reset = Flusher(rdb)
		}
	}
	defer rdb.Close()
	env.RDB = rdb
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if o.ReplayWindow < 0 {
		env.Log.Info("bench: replay window off: no call records, a replayed call could act twice")
	}
	dq := &Delayq{RDB: rdb, Config: delayq.Config{Namespace: o.Namespace, ReplayWindow: o.ReplayWindow}, Revision: Revision()}
	results := Run(ctx, env, scenarios, []Contestant{
		dq,
		&Floor{RDB: rdb, Namespace: o.Namespace},
		&Floor{RDB: rdb, Namespace: o.Namespace, Pipelined: true},
	})
	if o.JSON {
		err = WriteJSON(stdout, results)
	} else {
		err = WriteTable(stdout, results)
	}
	if err != nil {
		return err
	}
	var failed []error
	for _, r := range results {
		if r.Error != "" {
			failed = append(failed, fmt.Errorf("%s: %s", r.Scenario, r.Error))
		}
	}
	return errors.Join(failed...)
}

// Revision returns the VCS revision the binary was built from, or "dev".
func Revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}
