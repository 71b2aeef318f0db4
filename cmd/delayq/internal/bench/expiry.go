package bench

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/keys"
)

// expiryPoll is how often the expiry scenario looks at the reserved set.
const expiryPoll = 500 * time.Microsecond

// probeLeases answers the server's clock in microseconds and how many leases the partition
// holds: one look of the expiry scenario's prober.
var probeLeases = redis.NewScript(`
local t = redis.call('TIME')
return {tonumber(t[1]) * 1000000 + tonumber(t[2]), redis.call('ZCARD', KEYS[1])}
`)

// runExpiry measures how late leases expire when nobody consumes their topic: n jobs are
// leased with deadlines one after another over a span, their consumer's Client closes, and a
// Client with ExpireAllLeases (as delayq server runs) expires them. A prober reads the
// partition's reserved set every expiryPoll; a lease's lateness is the server's clock at the
// first look that finds it gone, less its deadline.
func runExpiry(ctx context.Context, env *Env, c Contestant) Result {
	var r Result
	d, ok := c.(*Delayq)
	if !ok {
		r.note("not measured: lease expiry with nobody consuming is delayq's; its peers expire leases when a consumer or a periodic check next looks (asynq's recoverer every minute, BullMQ's stalled-job check every 30 s by default)")
		return r
	}
	if env.Reset != nil {
		if err := env.Reset(ctx); err != nil {
			return fail(r, "%v", err)
		}
	}
	sz := env.sizes()
	n, span := sz.precisionN/5, sz.precisionSpan
	lead := 2 * time.Second
	topic := fmt.Sprintf("expiry-%d", env.seq.Add(1))
	cfg := d.Config
	cfg.Partitions = 1
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	keeperCfg := cfg
	keeperCfg.ExpireAllLeases = true
	keeper, err := delayq.New(ctx, d.RDB, keeperCfg)
	if err != nil {
		return fail(r, "keeper: %v", err)
	}
	defer keeper.Close()
	consumer, err := delayq.New(ctx, d.RDB, cfg)
	if err != nil {
		return fail(r, "consumer: %v", err)
	}
	defer consumer.Close()

	step := span / time.Duration(n)
	specs := make([]delayq.Spec, n)
	for i := range specs {
		// One retry an hour later: the job leaves the reserved set when its lease expires.
		specs[i] = delayq.Spec{Body: Body(i), TTR: lead + time.Duration(i)*step, Backoff: []time.Duration{time.Hour}}
	}
	for from := 0; from < n; from += 1000 {
		if _, err := consumer.EnqueueBatch(ctx, topic, specs[from:min(n, from+1000)]); err != nil {
			return fail(r, "enqueue: %v", err)
		}
	}
	var deadlines []time.Time
	for len(deadlines) < n {
		jobs, err := consumer.Reserve(ctx, topic, delayq.ReserveOptions{Max: min(1000, n-len(deadlines))})
		if err != nil {
			return fail(r, "reserve: %v", err)
		}
		for _, j := range jobs {
			deadlines = append(deadlines, j.LeaseDeadline)
		}
	}
	consumer.Close() // nobody consumes the topic from here on
	slices.SortFunc(deadlines, time.Time.Compare)
	r.note("%d jobs leased with deadlines one every %v over %v, starting %v after the lease; the consumer's Client then closes, and a Client with ExpireAllLeases (as delayq server runs) expires them", n, step, span, lead)
	r.note("lateness = the Redis clock at the first look (every %v, a script reading TIME and ZCARD of the partition's reserved set) that finds the lease gone − its deadline: the look's period adds up to %v", expiryPoll, expiryPoll)

	ns := cfg.Namespace
	if ns == "" {
		ns = "delayq"
	}
	reserved := keys.For(ns, topic, 0).Reserved()
	var late []time.Duration
	pctx, cancel := context.WithTimeout(ctx, lead+span+env.awaitTimeout())
	defer cancel()
	left := int64(n)
	tick := time.NewTicker(expiryPoll)
	defer tick.Stop()
	for left > 0 {
		select {
		case <-pctx.Done():
			return fail(r, "%d of %d leases never expired", left, n)
		case <-tick.C:
		}
		v, err := probeLeases.Run(pctx, d.RDB, []string{reserved}).Int64Slice()
		if err != nil || len(v) != 2 {
			return fail(r, "probe: %v", err)
		}
		now := time.UnixMicro(v[0])
		for ; left > v[1]; left-- {
			late = append(late, now.Sub(deadlines[n-int(left)]))
		}
	}
	s := summarize(late, 0)
	r.add("p50", ms(s.P50), "ms", Lower)
	r.add("p99", ms(s.P99), "ms", Lower)
	r.add("max", ms(s.Max), "ms", Lower)
	r.add("early", float64(s.Early), "jobs", Lower)
	r.Samples = map[string][]float64{"expiry_lateness_ms": s.Samples}
	return r
}
