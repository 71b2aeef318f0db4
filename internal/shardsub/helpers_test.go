package shardsub

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// testTiming makes retries happen within a test's time. Its health
// interval stays long enough that a busy test machine does not fail it.
var testTiming = timing{
	health:     2 * time.Second,
	minBackoff: 10 * time.Millisecond,
	maxBackoff: 200 * time.Millisecond,
}

// channelNames returns the notify channels of topics×partitions partitions,
// named like delayq's, each with its own hash tag.
func channelNames(topics, partitions int) []string {
	var names []string
	for t := 0; t < topics; t++ {
		for p := 0; p < partitions; p++ {
			names = append(names, fmt.Sprintf("delayq:{topic%d#%d}:notify", t, p))
		}
	}
	return names
}

// recorder collects a Subscriber's events. It fails the test if the events
// of a channel break the order Subscribed, Message*, Lost, Subscribed, ...,
// or if two callbacks for one channel overlap.
type recorder struct {
	t  testing.TB
	mu sync.Mutex
	// Per channel.
	subscribed map[string]bool
	inCall     map[string]bool
	counts     map[string]map[EventKind]int
	payloads   map[string][]string
}

func newRecorder(t testing.TB) *recorder {
	return &recorder{
		t:          t,
		subscribed: map[string]bool{},
		inCall:     map[string]bool{},
		counts:     map[string]map[EventKind]int{},
		payloads:   map[string][]string{},
	}
}

func (r *recorder) on(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inCall[e.Channel] {
		r.t.Errorf("overlapping callbacks for %s", e.Channel)
	}
	r.inCall[e.Channel] = true
	defer delete(r.inCall, e.Channel)

	sub := r.subscribed[e.Channel]
	switch {
	case e.Kind == Subscribed && sub, e.Kind == Lost && !sub, e.Kind == Message && !sub:
		r.t.Errorf("%v for %s while subscribed=%v", e.Kind, e.Channel, sub)
	}
	r.subscribed[e.Channel] = e.Kind != Lost
	if r.counts[e.Channel] == nil {
		r.counts[e.Channel] = map[EventKind]int{}
	}
	r.counts[e.Channel][e.Kind]++
	if e.Kind == Message {
		r.payloads[e.Channel] = append(r.payloads[e.Channel], e.Payload)
	}
}

// count returns how many events of kind channel has had.
func (r *recorder) count(channel string, kind EventKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[channel][kind]
}

// lastPayload returns the latest message of channel, "" if none.
func (r *recorder) lastPayload(channel string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.payloads[channel]
	if len(p) == 0 {
		return ""
	}
	return p[len(p)-1]
}

// testContext returns a context canceled after d or when the test ends.
func testContext(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startSubscriber returns a Subscriber with timing tm that logs to the
// test's output and is closed when the test ends, and the recorder of its
// events.
func startSubscriber(t testing.TB, cc *redis.ClusterClient, tm timing) (*Subscriber, *recorder) {
	rec := newRecorder(t)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := newSubscriber(cc, log, rec.on, tm)
	t.Cleanup(func() { _ = s.Close() })
	return s, rec
}

// owners maps each channel to the address of the primary serving its slot,
// asking the node at any address of cl.
func owners(t testing.TB, ctx context.Context, cl *redistest.Cluster, channels []string) map[string]string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: cl.Nodes[0].Addr})
	defer c.Close()
	//lint:ignore SA1019 CLUSTER SLOTS is what go-redis builds its slot map from; the test compares with it
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SLOTS: %v", err)
	}
	own := map[string]string{}
	for _, name := range channels {
		slot, err := c.ClusterKeySlot(ctx, name).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		}
		for _, r := range slots {
			if int64(r.Start) <= slot && slot <= int64(r.End) {
				own[name] = r.Nodes[0].Addr
			}
		}
	}
	return own
}

// pubsubClients returns the shard channel count (ssub) of each pub/sub
// client connected to the node at addr, from CLIENT LIST TYPE pubsub.
func pubsubClients(t testing.TB, ctx context.Context, addr string) []int {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	list, err := c.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
	if err != nil {
		t.Fatalf("CLIENT LIST on %s: %v", addr, err)
	}
	var ssubs []int
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if line == "" {
			continue
		}
		m := ssubField.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("CLIENT LIST on %s: no ssub field in %q", addr, line)
		}
		n, _ := strconv.Atoi(m[1])
		ssubs = append(ssubs, n)
	}
	return ssubs
}

var ssubField = regexp.MustCompile(`\bssub=(\d+)\b`)

// waitConnections waits until every primary has exactly one pub/sub
// connection, subscribed to the channels own says it serves, and the other
// nodes have none. (A connection closed by the client may linger on the
// server for a moment.)
func waitConnections(ctx context.Context, t testing.TB, cl *redistest.Cluster, own map[string]string) {
	t.Helper()
	want := map[string]int{}
	for _, addr := range own {
		want[addr]++
	}
	testwait.ForNil(t, 5*time.Second, "one pub/sub connection per primary", func() error {
		for _, n := range cl.Nodes {
			if n.Pid() == 0 {
				continue
			}
			got := pubsubClients(t, ctx, n.Addr)
			switch {
			case want[n.Addr] == 0 && len(got) != 0:
				return fmt.Errorf("%s serves none of the channels but has pub/sub clients %v", n.Addr, got)
			case want[n.Addr] > 0 && (len(got) != 1 || got[0] != want[n.Addr]):
				return fmt.Errorf("%s has pub/sub clients with ssub %v, want one with %d", n.Addr, got, want[n.Addr])
			}
		}
		return nil
	})
}

// publishAll publishes a fresh payload on every channel through the node
// own names for it, until the node counts one receiver, and waits until
// each payload has arrived.
func publishAll(ctx context.Context, t testing.TB, rec *recorder, own map[string]string, round string) {
	t.Helper()
	clients := map[string]*redis.Client{}
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	for name, addr := range own {
		if clients[addr] == nil {
			clients[addr] = redis.NewClient(&redis.Options{Addr: addr})
		}
		payload := round + ":" + name
		testwait.ForNil(t, 5*time.Second, "SPUBLISH "+name+" on "+addr, func() error {
			n, err := clients[addr].SPublish(ctx, name, payload).Result()
			if err == nil && n != 1 {
				err = fmt.Errorf("%d receivers", n)
			}
			return err
		})
	}
	testwait.ForNil(t, 5*time.Second, "messages of round "+round, func() error {
		for name := range own {
			if got, want := rec.lastPayload(name), round+":"+name; got != want {
				return fmt.Errorf("latest message on %s is %q, want %q", name, got, want)
			}
		}
		return nil
	})
}
