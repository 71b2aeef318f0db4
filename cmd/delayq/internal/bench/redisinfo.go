package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// UsedMemory returns INFO memory's used_memory, in bytes.
func UsedMemory(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("bench: INFO memory: %w", err)
	}
	v, ok := infoField(info, "used_memory")
	if !ok {
		return 0, fmt.Errorf("bench: INFO memory has no used_memory")
	}
	return strconv.ParseInt(v, 10, 64)
}

// ServerInfo returns INFO server's field name, such as redis_version or hz; "" when absent.
func ServerInfo(ctx context.Context, rdb redis.UniversalClient, name string) string {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return ""
	}
	v, _ := infoField(info, name)
	return v
}

func infoField(info, name string) (string, bool) {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v, true
		}
	}
	return "", false
}

// ClockOffset estimates the Redis server's clock minus the local clock from the TIME sample
// with the shortest round trip among several, and returns it with half that round trip, the
// estimate's uncertainty.
func ClockOffset(ctx context.Context, rdb redis.UniversalClient) (offset, uncertainty time.Duration, err error) {
	best := time.Duration(-1)
	for range 50 {
		t0 := time.Now()
		server, err := rdb.Time(ctx).Result()
		if err != nil {
			return 0, 0, fmt.Errorf("bench: TIME: %w", err)
		}
		rtt := time.Since(t0)
		if best < 0 || rtt < best {
			best = rtt
			offset = server.Sub(t0.Add(rtt / 2))
		}
	}
	return offset, best / 2, nil
}

// CommandStat is one command's line of INFO commandstats.
type CommandStat struct {
	Calls       int64   `json:"calls"`
	Usec        int64   `json:"usec"`
	UsecPerCall float64 `json:"usec_per_call"`
	// Failed counts the calls that answered an error, Rejected those refused before they ran
	// (a wrong slot, a wrong argument count, …).
	Failed   int64 `json:"failed_calls,omitempty"`
	Rejected int64 `json:"rejected_calls,omitempty"`
}

// CommandStats returns INFO commandstats by command name (evalsha, zadd, …).
func CommandStats(ctx context.Context, rdb redis.UniversalClient) (map[string]CommandStat, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("bench: INFO commandstats: %w", err)
	}
	out := map[string]CommandStat{}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		var s CommandStat
		for kv := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				s.Calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				s.Usec, _ = strconv.ParseInt(v, 10, 64)
			case "failed_calls":
				s.Failed, _ = strconv.ParseInt(v, 10, 64)
			case "rejected_calls":
				s.Rejected, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		out[name] = s
	}
	return out, nil
}

// CommandDelta is the Redis work of one stage of a scenario: a command's calls and the server
// time they took.
type CommandDelta struct {
	Command     string  `json:"command"`
	Calls       int64   `json:"calls"`
	Usec        int64   `json:"usec"`
	UsecPerCall float64 `json:"usec_per_call"`
}

// diffCommandStats returns the commands that ran between two CommandStats readings, the
// costliest first, leaving out the harness's own INFO, TIME and SLOWLOG calls.
func diffCommandStats(before, after map[string]CommandStat) []CommandDelta {
	var out []CommandDelta
	for name, a := range after {
		switch strings.SplitN(name, "|", 2)[0] {
		case "info", "time", "slowlog", "latency", "config", "ping", "flushall", "hello", "client":
			continue
		}
		b := before[name]
		d := CommandDelta{Command: name, Calls: a.Calls - b.Calls, Usec: a.Usec - b.Usec}
		if d.Calls <= 0 {
			continue
		}
		d.UsecPerCall = float64(d.Usec) / float64(d.Calls)
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y CommandDelta) int { return int(y.Usec - x.Usec) })
	return out
}

// SlowEntry is one SLOWLOG entry.
type SlowEntry struct {
	Duration time.Duration `json:"duration_ns"`
	Args     []string      `json:"args"`
}

// SlowLog reads up to n SLOWLOG entries, newest first.
func SlowLog(ctx context.Context, rdb redis.UniversalClient, n int64) ([]SlowEntry, error) {
	logs, err := rdb.SlowLogGet(ctx, n).Result()
	if err != nil {
		return nil, fmt.Errorf("bench: SLOWLOG GET: %w", err)
	}
	out := make([]SlowEntry, len(logs))
	for i, l := range logs {
		out[i] = SlowEntry{Duration: l.Duration, Args: l.Args}
	}
	return out, nil
}

// LatencyLatest returns LATENCY LATEST as "event: latest ms (max ms)" lines.
func LatencyLatest(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	v, err := rdb.Do(ctx, "LATENCY", "LATEST").Slice()
	if err != nil {
		return nil, fmt.Errorf("bench: LATENCY LATEST: %w", err)
	}
	var out []string
	for _, e := range v {
		f, ok := e.([]any)
		if !ok || len(f) < 4 {
			continue
		}
		out = append(out, fmt.Sprintf("%v: latest %v ms, max %v ms", f[0], f[2], f[3]))
	}
	return out, nil
}

// setConfig sets Redis settings and returns a function that restores the previous values.
func setConfig(ctx context.Context, rdb redis.UniversalClient, kv ...string) (restore func(), err error) {
	old := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		v, err := rdb.ConfigGet(ctx, kv[i]).Result()
		if err != nil {
			return func() {}, fmt.Errorf("bench: CONFIG GET %s: %w", kv[i], err)
		}
		old[kv[i]] = v[kv[i]]
		if err := rdb.ConfigSet(ctx, kv[i], kv[i+1]).Err(); err != nil {
			return func() {}, fmt.Errorf("bench: CONFIG SET %s %s: %w", kv[i], kv[i+1], err)
		}
	}
	return func() {
		ctx := context.WithoutCancel(ctx)
		for k, v := range old {
			_ = rdb.ConfigSet(ctx, k, v).Err()
		}
	}, nil
}

// Flusher returns a reset function that empties the whole Redis with FLUSHALL, for a Redis
// the benchmark owns.
func Flusher(rdb redis.UniversalClient) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var err error
		if cc, ok := rdb.(*redis.ClusterClient); ok {
			err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
				return c.FlushAll(ctx).Err()
			})
		} else {
			err = rdb.FlushAll(ctx).Err()
		}
		if err != nil {
			return fmt.Errorf("bench: FLUSHALL: %w", err)
		}
		return nil
	}
}

// NamespaceDeleter returns a reset function that deletes only the keys under namespace ns,
// for a Redis that others use too.
func NamespaceDeleter(rdb redis.UniversalClient, ns string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		del := func(ctx context.Context, c *redis.Client) error {
			iter := c.Scan(ctx, 0, ns+":*", 1000).Iterator()
			var batch []string
			for iter.Next(ctx) {
				batch = append(batch, iter.Val())
				if len(batch) == 1000 {
					if err := c.Unlink(ctx, batch...).Err(); err != nil {
						return err
					}
					batch = batch[:0]
				}
			}
			if err := iter.Err(); err != nil {
				return err
			}
			if len(batch) > 0 {
				return c.Unlink(ctx, batch...).Err()
			}
			return nil
		}
		var err error
		switch c := rdb.(type) {
		case *redis.ClusterClient:
			err = c.ForEachMaster(ctx, del)
		case *redis.Client:
			err = del(ctx, c)
		default:
			return fmt.Errorf("bench: cannot scan keys through a %T", rdb)
		}
		if err != nil {
			return fmt.Errorf("bench: deleting the keys of namespace %s: %w", ns, err)
		}
		return nil
	}
}
