package delayq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// BenchmarkTopicRateLimit has 16 consumers take a backlog under a limit of 100 deliveries a
// second for 30 windows, on a standalone server (one partition) and on a Cluster (16
// partitions, a share of 6 or 7 each), and reports from the deliveries' start times (the
// server's clock): the most in any span of a second, which the limit bounds at 100; the fewest
// and most in each of the 30 consecutive seconds from the first; and the mean rate.
//
//	go test -run '^$' -bench TopicRateLimit -benchtime 1x .
func BenchmarkTopicRateLimit(b *testing.B) {
	const rate, period, windows = 100, time.Second, 30
	for _, d := range []struct {
		name string
		rdb  func(b *testing.B) redis.UniversalClient
	}{
		{"standalone", func(b *testing.B) redis.UniversalClient { return redistest.Standalone(b).Client(b) }},
		{"cluster", func(b *testing.B) redis.UniversalClient { return redistest.NewCluster(b, 3, 0).Client(b) }},
	} {
		b.Run(d.name, func(b *testing.B) {
			for range b.N {
				rdb := d.rdb(b)
				c := newClientOn(b, rdb, Config{})
				ctx := context.Background()
				specs := make([]Spec, 1000)
				for range (windows*rate + 2*len(specs) - 1) / len(specs) {
					if _, err := c.EnqueueBatch(ctx, "rate", specs); err != nil {
						b.Fatal(err)
					}
				}
				if err := c.SetTopicLimits(ctx, "rate", TopicLimits{Rate: rate, Period: period}); err != nil {
					b.Fatal(err)
				}
				starts := consumeUntil(b, c, "rate", 16, windows*rate+1, windows*period+time.Minute)
				reportWindows(b, starts, period.Milliseconds(), windows)
			}
		})
	}
}

// reportWindows reports the most deliveries in any span of periodMs, the fewest and most in
// each of the first windows consecutive spans, and the mean rate per period.
func reportWindows(b *testing.B, starts []int64, periodMs int64, windows int) {
	most := 0
	for i, j := 0, 0; i < len(starts); i++ {
		for j < len(starts) && starts[j] < starts[i]+periodMs {
			j++
		}
		most = max(most, j-i)
	}
	counts := make([]int, windows)
	for _, s := range starts {
		if k := int((s - starts[0]) / periodMs); k < windows {
			counts[k]++
		}
	}
	fewestIn, mostIn := counts[0], counts[0]
	for _, n := range counts {
		fewestIn, mostIn = min(fewestIn, n), max(mostIn, n)
	}
	span := float64(starts[len(starts)-1]-starts[0]) / float64(periodMs)
	b.Logf("deliveries in each of %d windows of %d ms: %v", windows, periodMs, counts)
	b.ReportMetric(float64(most), "max-in-any-window")
	b.ReportMetric(float64(fewestIn), "min-per-window")
	b.ReportMetric(float64(mostIn), "max-per-window")
	b.ReportMetric(float64(len(starts)-1)/span, "deliveries/window")
}

// BenchmarkPurgeTopic deletes, with purge, a topic of 1,000,000 pending jobs (100-byte bodies)
// held in one partition, the most one script call has to delete, and reports the longest
// script call Redis ran meanwhile (SLOWLOG, which logs every command here, those a script
// runs too), the longest command of any kind, the whole DeleteTopic call's time, and how long
// Redis's background thread took to free the memory. A purge of a small topic first loads the
// scripts, as a running deployment has them: the first call of a script on a server also
// compiles it (about 250 µs here, once).
//
//	go test -run '^$' -bench PurgeTopic -benchtime 1x .
func BenchmarkPurgeTopic(b *testing.B) {
	const n = 1_000_000
	for range b.N {
		b.StopTimer()
		c, rdb := newBenchClient(b)
		ctx := context.Background()
		fillTopic(b, c, "purge", n)
		mustEnqueue(b, c, "warm-up", Spec{})
		if _, err := c.DeleteTopic(ctx, "warm-up", DeleteTopicOptions{Purge: true}); err != nil {
			b.Fatal(err)
		}
		before := usedMemory(b, rdb)
		for _, kv := range [][2]string{{"slowlog-log-slower-than", "0"}, {"slowlog-max-len", "100000"}} {
			if err := rdb.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
				b.Fatal(err)
			}
		}
		if err := rdb.Do(ctx, "SLOWLOG", "RESET").Err(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		deleted, err := c.DeleteTopic(ctx, "purge", DeleteTopicOptions{Purge: true})
		took := time.Since(start)
		b.StopTimer()
		if err != nil || deleted != n {
			b.Fatalf("purge: %d jobs, %v", deleted, err)
		}
		script, unlink, any, calls := longestCommands(b, rdb)
		freed := waitLazyFree(b, rdb)
		b.Logf("%d jobs (%d MB) purged in %v: %d commands, the longest script call %v (its UNLINK %v), the longest command %v; freed in the background in %v",
			n, (before-usedMemory(b, rdb))>>20, took, calls, script, unlink, any, freed)
		b.ReportMetric(float64(script.Microseconds()), "max-script-µs")
		b.ReportMetric(float64(unlink.Microseconds()), "unlink-µs")
		b.ReportMetric(float64(any.Microseconds()), "max-command-µs")
		b.ReportMetric(float64(took.Microseconds()), "purge-µs")
		b.ReportMetric(float64(freed.Milliseconds()), "background-free-ms")
	}
}

// fillTopic enqueues n pending jobs with 100-byte bodies into topic, from 8 producers.
func fillTopic(b *testing.B, c *Client, topic string, n int) {
	specs := make([]Spec, 1000)
	for i := range specs {
		specs[i] = Spec{Body: body100, Delay: time.Hour}
	}
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Go(func() {
			for i := p * len(specs); i < n; i += 8 * len(specs) {
				if _, err := c.EnqueueBatch(context.Background(), topic, specs[:min(len(specs), n-i)]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// longestCommands reads the slow log and returns the longest script call (EVAL or EVALSHA),
// the longest UNLINK (inside a script), the longest command of any kind, and how many
// commands it holds.
func longestCommands(b *testing.B, rdb redis.UniversalClient) (script, unlink, any time.Duration, n int) {
	entries, err := rdb.SlowLogGet(context.Background(), -1).Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		name := ""
		if len(e.Args) > 0 {
			name = strings.ToLower(e.Args[0])
		}
		switch {
		case name == "slowlog": // the RESET, freeing the log of the set-up
			continue
		case strings.HasPrefix(name, "eval"):
			script = max(script, e.Duration)
		case name == "unlink":
			unlink = max(unlink, e.Duration)
		}
		any = max(any, e.Duration)
		n++
	}
	return script, unlink, any, n
}

// waitLazyFree waits until Redis's background thread has freed every unlinked value, and
// returns how long that took.
func waitLazyFree(b *testing.B, rdb redis.UniversalClient) time.Duration {
	start := time.Now()
	testwait.ForNil(b, time.Minute, "the background thread to free the purged values", func() error {
		info, err := rdb.Info(context.Background(), "memory").Result()
		if err == nil && pendingFrees(info) > 0 {
			err = errors.New("values still to free")
		}
		return err
	})
	return time.Since(start)
}

func pendingFrees(info string) int64 {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "lazyfree_pending_objects:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	panic(fmt.Sprintf("no lazyfree_pending_objects in INFO memory:\n%s", info))
}
