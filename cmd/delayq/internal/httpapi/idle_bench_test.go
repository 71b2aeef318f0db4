package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkIdleLongPolls measures what idle consumers cost Redis: consumers long-poll 20 empty
// topics (one partition each) through one server, each asking again as soon as its 30 s wait
// ends, and the benchmark reports the server's commands per second (commands inside scripts
// included) over a 10 s window, in all and per topic partition. Run it with
//
//	go test -run '^$' -bench IdleLongPolls -benchtime 1x ./cmd/delayq/internal/httpapi
func BenchmarkIdleLongPolls(b *testing.B) {
	for _, consumers := range []int{100, 1000} {
		b.Run(fmt.Sprintf("consumers=%d", consumers), func(b *testing.B) {
			const topics = 20
			e := newEnv(b, nil)
			for i := range topics {
				e.enqueue(fmt.Sprintf("idle-%d", i), map[string]any{"delay_ms": 3600000})
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: consumers}}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for i := range consumers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					url := fmt.Sprintf("%s/v1/topics/idle-%d/reserve", e.url, i%topics)
					for ctx.Err() == nil {
						req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader([]byte(`{"wait_ms": 30000}`)))
						req.Header.Set("Content-Type", "application/json")
						if resp, err := client.Do(req); err == nil {
							resp.Body.Close()
						}
					}
				}()
			}
			time.Sleep(3 * time.Second) // every consumer is waiting
			rdb := e.redis.Client(b)
			b.ResetTimer()
			for range b.N {
				before, start := totalCommands(b, rdb.Info(ctx, "stats").Val()), time.Now()
				time.Sleep(10 * time.Second)
				n := totalCommands(b, rdb.Info(ctx, "stats").Val()) - before - 1
				perSecond := float64(n) / time.Since(start).Seconds()
				b.ReportMetric(perSecond, "cmds/s")
				b.ReportMetric(perSecond/topics, "cmds/s/partition")
			}
			b.StopTimer()
			cancel()
			wg.Wait()
		})
	}
}

func totalCommands(b *testing.B, info string) int64 {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("no total_commands_processed in INFO stats")
	return 0
}
