package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
)

// shard is one primary of a Redis Cluster, as the cluster scenario sees it.
type shard struct {
	addr   string        // the address the harness dials
	listed string        // the address CLUSTER SLOTS gives, by which go-redis names the node
	slots  []slotRange   // the slots it serves, lowest first
	rdb    *redis.Client // for the harness's own INFO and CONFIG calls

	partitions []int // the partitions of the measured topic it serves
	jobs       int   // the jobs of those partitions
}

// slotRange is a range of hash slots, both ends included.
type slotRange struct{ start, end int }

// label describes the shard for notes: its address and slots.
func (s *shard) label() string {
	var ranges []string
	for _, r := range s.slots {
		ranges = append(ranges, fmt.Sprintf("%d–%d", r.start, r.end))
	}
	return fmt.Sprintf("%s, slots %s", s.addr, strings.Join(ranges, ","))
}

// clusterShards returns the primaries of the cluster cc talks to, ordered by their lowest slot,
// each with a client of its own; closeShards closes those.
func clusterShards(ctx context.Context, cc *redis.ClusterClient) ([]*shard, error) {
	//lint:ignore SA1019 CLUSTER SLOTS is what go-redis builds its slot map from, so its addresses are the ones MasterForKey gives
	ranges, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SLOTS: %w", err)
	}
	byAddr := map[string]*shard{}
	var out []*shard
	for _, r := range ranges {
		if len(r.Nodes) == 0 {
			continue
		}
		listed := r.Nodes[0].Addr // the primary comes first
		addr := listed
		// A node that has never met another does not know its own address and lists itself
		// without a host: it is reached by the host the client already uses.
		if host, port, err := net.SplitHostPort(listed); err == nil && host == "" {
			if seed, _, err := net.SplitHostPort(cc.Options().Addrs[0]); err == nil {
				addr = net.JoinHostPort(seed, port)
			}
		}
		s := byAddr[listed]
		if s == nil {
			s = &shard{addr: addr, listed: listed, rdb: redis.NewClient(&redis.Options{Addr: addr})}
			byAddr[listed] = s
			out = append(out, s)
		}
		s.slots = append(s.slots, slotRange{start: r.Start, end: r.End})
	}
	for _, s := range out {
		slices.SortFunc(s.slots, func(a, b slotRange) int { return a.start - b.start })
	}
	slices.SortFunc(out, func(a, b *shard) int { return a.slots[0].start - b.slots[0].start })
	if len(out) == 0 {
		return nil, errors.New("CLUSTER SLOTS lists no primary")
	}
	return out, nil
}

func closeShards(shards []*shard) {
	for _, s := range shards {
		_ = s.rdb.Close()
	}
}

// countJobs sets each shard's partitions of topic and the jobs they hold.
func countJobs(ctx context.Context, cc *redis.ClusterClient, shards []*shard, ns, topic string, partitions int) error {
	byAddr := map[string]*shard{}
	for _, s := range shards {
		s.partitions, s.jobs = nil, 0
		byAddr[s.listed] = s
	}
	for p := range partitions {
		key := keys.For(ns, topic, p).Jobs()
		owner, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return fmt.Errorf("the primary of partition %d: %w", p, err)
		}
		s := byAddr[owner.Options().Addr]
		if s == nil {
			return fmt.Errorf("partition %d is on %s, which CLUSTER SLOTS did not list", p, owner.Options().Addr)
		}
		n, err := cc.HLen(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("HLEN of partition %d: %w", p, err)
		}
		s.partitions = append(s.partitions, p)
		s.jobs += int(n)
	}
	return nil
}

// shardReading is what one primary did during a stage of the cluster scenario.
type shardReading struct {
	cpu      time.Duration    // used_cpu_user + used_cpu_sys (INFO cpu)
	commands []CommandDelta   // INFO commandstats, the costliest first
	errors   map[string]int64 // INFO errorstats: error replies by code (MOVED, CROSSSLOT, …)
	failed   map[string]int64 // the calls of each command that failed or were rejected
	script   CommandDelta     // the calls and time of every script command together
}

// scriptCommands are the commands that run a script; commandstats counts each one's time with
// the commands its script runs, which it also lists on their own lines.
var scriptCommands = []string{"evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro"}

// shardStage measures the primaries of a cluster over one stage: start resets their
// statistics (CONFIG RESETSTAT) and reads their CPU time, end reads what they did since.
type shardStage struct {
	shards []*shard
	cpu0   []time.Duration
}

func startShardStage(ctx context.Context, shards []*shard) (*shardStage, error) {
	st := &shardStage{shards: shards, cpu0: make([]time.Duration, len(shards))}
	err := eachShard(shards, func(i int, s *shard) error {
		if err := s.rdb.ConfigResetStat(ctx).Err(); err != nil {
			return fmt.Errorf("%s: CONFIG RESETSTAT: %w", s.addr, err)
		}
		var err error
		st.cpu0[i], err = shardCPU(ctx, s.rdb)
		return err
	})
	return st, err
}

func (st *shardStage) end(ctx context.Context) ([]shardReading, error) {
	out := make([]shardReading, len(st.shards))
	err := eachShard(st.shards, func(i int, s *shard) error {
		cpu, err := shardCPU(ctx, s.rdb)
		if err != nil {
			return err
		}
		cmds, err := CommandStats(ctx, s.rdb)
		if err != nil {
			return fmt.Errorf("%s: %w", s.addr, err)
		}
		info, err := s.rdb.Info(ctx, "errorstats").Result()
		if err != nil {
			return fmt.Errorf("%s: INFO errorstats: %w", s.addr, err)
		}
		r := shardReading{cpu: cpu - st.cpu0[i], commands: diffCommandStats(nil, cmds), errors: errorStats(info), failed: map[string]int64{}}
		for name, c := range cmds {
			if c.Failed+c.Rejected > 0 {
				r.failed[name] = c.Failed + c.Rejected
			}
		}
		for _, name := range scriptCommands {
			r.script.Calls += cmds[name].Calls
			r.script.Usec += cmds[name].Usec
		}
		out[i] = r
		return nil
	})
	return out, err
}

// eachShard runs f for every shard at once and joins the errors.
func eachShard(shards []*shard, f func(i int, s *shard) error) error {
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, s := range shards {
		wg.Go(func() { errs[i] = f(i, s) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// shardCPU returns the CPU time the server has used since it started, user and system.
func shardCPU(ctx context.Context, rdb *redis.Client) (time.Duration, error) {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("%s: INFO cpu: %w", rdb.Options().Addr, err)
	}
	var total time.Duration
	for _, name := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, ok := infoField(info, name)
		if !ok {
			return 0, fmt.Errorf("%s: INFO cpu has no %s", rdb.Options().Addr, name)
		}
		sec, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: INFO cpu %s: %w", rdb.Options().Addr, name, err)
		}
		total += time.Duration(sec * float64(time.Second))
	}
	return total, nil
}

// errorStats parses INFO errorstats ("errorstat_MOVED:count=3") into counts by error code.
func errorStats(info string) map[string]int64 {
	out := map[string]int64{}
	for line := range strings.SplitSeq(info, "\n") {
		code, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		code, isErr := strings.CutPrefix(code, "errorstat_")
		if !ok || !isErr {
			continue
		}
		if v, ok := strings.CutPrefix(rest, "count="); ok {
			n, _ := strconv.ParseInt(strings.SplitN(v, ",", 2)[0], 10, 64)
			out[code] += n
		}
	}
	return out
}

// warnCounter is a slog handler that counts the warnings and errors of a delayq client and keeps
// the last one, so that the cluster scenario can report any.
type warnCounter struct {
	mu   sync.Mutex
	n    int
	last string
}

func (h *warnCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *warnCounter) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	h.n++
	h.last = b.String()
	h.mu.Unlock()
	return nil
}

func (h *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *warnCounter) WithGroup(string) slog.Handler      { return h }

// count returns how many warnings were logged so far, and the last.
func (h *warnCounter) count() (int, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, h.last
}
