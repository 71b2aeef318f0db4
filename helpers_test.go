package delayq

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/testwait"
	"github.com/delayq/delayq/internal/wake"
)

// newTestClient returns a Client on a redis-server of its own.
func newTestClient(t testing.TB, cfg Config) (*Client, redis.UniversalClient) {
	t.Helper()
	rdb := redistest.Standalone(t).Client(t)
	return newClientOn(t, rdb, cfg), rdb
}

func newClientOn(t testing.TB, rdb redis.UniversalClient, cfg Config) *Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := New(context.Background(), rdb, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// advance moves the clock every script of c sees forward by d, as delayqtest.AdvanceClock
// does.
func advance(c *Client, d time.Duration) { c.advanceClock(d) }

func mustEnqueue(t testing.TB, c *Client, topic string, s Spec) *Job {
	t.Helper()
	j, err := c.Enqueue(testContext(t), topic, s)
	if err != nil {
		t.Fatalf("Enqueue(%q): %v", s.ID, err)
	}
	return j
}

func reserveOne(t testing.TB, c *Client, topic string, wait time.Duration) *Job {
	t.Helper()
	jobs, err := c.Reserve(testContext(t), topic, ReserveOptions{Wait: wait})
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	if len(jobs) != 1 {
		t.Fatalf("Reserve got %d jobs, want 1", len(jobs))
	}
	return jobs[0]
}

// laneState returns c's wake-up state of topic's lane, nil when no consumer of the lane has
// come yet.
func laneState(c *Client, topic string, lane store.Lane) *wake.Topic {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.topics[string(lane)+"/"+topic]
}

// waitSettled waits until c's consumers of an existing topic, in each of lanes, have nothing to
// look at before a notice or a recheck: each partition's notices are heard (the wake-up that
// follows the subscription, or a notice, has reached a lane of it), and each lane has looked at
// every partition since and found nothing due. From then on they learn of a new job only from
// its notice, or from a recheck, which the tests that wait here set far off.
func waitSettled(t testing.TB, c *Client, topic string, lanes ...store.Lane) {
	t.Helper()
	testwait.For(t, 20*time.Second, "the consumers of "+topic+" to look and find nothing due", func() bool {
		now := time.Now()
		var heard []bool
		for _, lane := range []store.Lane{store.LanePull, store.LanePush} {
			s := laneState(c, topic, lane)
			wanted := slices.Contains(lanes, lane)
			if s == nil {
				if wanted {
					return false
				}
				continue
			}
			snap := s.Snapshot()
			if wanted && (snap.Partitions == 0 || !snap.Listening) {
				return false
			}
			// Until Redis confirms the subscription of a partition, its confirmation is still
			// to come, and with it a look the consumer has not made yet.
			if wanted && slices.Contains(snap.Heard, false) {
				return false
			}
			if heard == nil && snap.Partitions > 0 {
				heard = make([]bool, snap.Partitions)
			}
			for p := range snap.Partitions {
				if wanted && !snap.Next[p].After(now) {
					return false
				}
				heard[p] = heard[p] || snap.Notices[p] > 0
			}
		}
		return !slices.Contains(heard, false)
	})
}

// waitHearsNewTopics waits until c hears the notices of new topics, by publishing one for a
// probe topic until the probe's consumer state hears it (a notice comes after the subscription
// it needs). It holds the probe's state while it waits; the subscription stays after.
func waitHearsNewTopics(t testing.TB, c *Client) {
	t.Helper()
	const probe = "probe-for-new-topics"
	_, done := c.useTopic(string(store.LanePull)+"/"+probe, probe)
	defer done()
	if _, err := c.Reserve(testContext(t), probe, ReserveOptions{}); err != nil {
		t.Fatalf("Reserve(%q): %v", probe, err)
	}
	s := laneState(c, probe, store.LanePull)
	testwait.For(t, 20*time.Second, "the notices of new topics to be heard", func() bool {
		heard := s.Snapshot().LookedUp.IsZero() // a notice of the topic makes it look again
		if !heard {
			c.store.Client().SPublish(testContext(t), keys.NewTopics(c.cfg.Namespace), probe)
		}
		return heard
	})
}

// waitAwaiting waits until c's consumers of topic's lane have asked the registry for the topic,
// not found it, and wait for its notice.
func waitAwaiting(t testing.TB, c *Client, topic string, lane store.Lane) {
	t.Helper()
	testwait.For(t, 20*time.Second, "the consumers of "+topic+" to find it missing", func() bool {
		s := laneState(c, topic, lane)
		if s == nil {
			return false
		}
		snap := s.Snapshot()
		return snap.Partitions == 0 && snap.Awaiting // set once the registry answered that the topic is missing
	})
}

// infoField returns a numeric field of a section of the server's INFO.
func infoField(t testing.TB, rdb redis.UniversalClient, section, field string) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in INFO %s", field, section)
	return 0
}

// startScheduler runs a Scheduler on c until the test ends or the returned function is called.
func startScheduler(t *testing.T, c *Client, cfg SchedulerConfig) (stop func()) {
	t.Helper()
	s, err := NewScheduler(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(ctx)
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		<-done
	})
	t.Cleanup(stop)
	return stop
}

// look runs one look of a Scheduler on c, with the default look-ahead.
func look(t *testing.T, c *Client) {
	t.Helper()
	s, err := NewScheduler(c, SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s.look(testContext(t))
}

func mustPutSchedule(t *testing.T, c *Client, name string, s ScheduleSpec) *Schedule {
	t.Helper()
	sch, _, err := c.PutSchedule(testContext(t), name, s)
	if err != nil {
		t.Fatalf("PutSchedule(%q): %v", name, err)
	}
	return sch
}

// ticksAfter returns the ticks of an @every schedule created at created: one each interval
// from the whole second it was created in, n of them.
func ticksAfter(created time.Time, every time.Duration, n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = created.Truncate(time.Second).Add(time.Duration(i+1) * every)
	}
	return out
}

// jobsOfTick returns how many jobs schedule name's tick at tk has, over topics.
func jobsOfTick(t *testing.T, c *Client, name string, tk time.Time, topics ...string) int {
	t.Helper()
	n := 0
	for _, topic := range topics {
		_, err := c.Get(testContext(t), topic, TickID(name, tk))
		switch {
		case err == nil:
			n++
		case !errors.Is(err, ErrNotFound):
			t.Fatalf("Get(%s, %s): %v", topic, TickID(name, tk), err)
		}
	}
	return n
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}
