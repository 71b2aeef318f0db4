package shardsub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// The tests in this file break a subscribed cluster in the ways the
// Subscriber must survive, and check that every channel is subscribed on
// its current primary again, over one connection per primary.

func TestReconnect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tm   timing
		// fault breaks node's connection; lost waits until its channels
		// have reported Lost.
		fault func(t *testing.T, ctx context.Context, node *redistest.Server, lost func())
	}{
		{"client kill", testTiming, func(t *testing.T, ctx context.Context, node *redistest.Server, lost func()) {
			n, err := node.Client(t).ClientKillByFilter(ctx, "TYPE", "pubsub").Result()
			if err != nil || n != 1 {
				t.Fatalf("CLIENT KILL TYPE pubsub = %d, %v; want 1 killed", n, err)
			}
		}},
		{"node restart", testTiming, func(t *testing.T, ctx context.Context, node *redistest.Server, lost func()) {
			node.Restart(t)
		}},
		{"stalled node", stalledTiming, func(t *testing.T, ctx context.Context, node *redistest.Server, lost func()) {
			// The connection stays open but silent: only the health
			// check's PING finds out, within 2*stalledTiming.health. Resume
			// before the cluster marks the node as failing
			// (cluster-node-timeout is 2s).
			node.Stop(t)
			lost()
			node.Cont(t)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t, 30*time.Second)
			cl := redistest.NewCluster(t, 3, 0)
			s, rec := startSubscriber(t, cl.Client(t), tt.tm)
			names := channelNames(20, 16)
			if err := s.Subscribe(ctx, names...); err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			own := owners(t, ctx, cl, names)

			victim := cl.Nodes[1]
			lost := func() {
				testwait.ForNil(t, 3*time.Second, "Lost events", func() error {
					for _, name := range names {
						if own[name] == victim.Addr && rec.count(name, Lost) != 1 {
							return fmt.Errorf("no Lost for %s", name)
						}
					}
					return nil
				})
			}
			begin := time.Now()
			tt.fault(t, ctx, victim, lost)
			testwait.ForNil(t, 10*time.Second, "resubscription", func() error {
				for _, name := range names {
					want := 1
					if own[name] == victim.Addr {
						want = 2
					}
					if got := rec.count(name, Subscribed); got != want {
						return fmt.Errorf("%s (on %s): %d Subscribed events, want %d", name, own[name], got, want)
					}
					if got := rec.count(name, Lost); got != want-1 {
						return fmt.Errorf("%s (on %s): %d Lost events, want %d", name, own[name], got, want-1)
					}
				}
				return nil
			})
			t.Logf("resubscribed %v after the fault", time.Since(begin))
			waitConnections(ctx, t, cl, own)
			publishAll(ctx, t, rec, own, "after")
		})
	}
}

// stalledTiming lets the stalled-node test find the silent connection fast.
var stalledTiming = timing{
	health:     300 * time.Millisecond,
	minBackoff: testTiming.minBackoff,
	maxBackoff: testTiming.maxBackoff,
}

func TestSlotMigration(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	cl := redistest.NewCluster(t, 3, 0)
	cc := cl.Client(t)
	s, rec := startSubscriber(t, cc, testTiming)
	names := channelNames(20, 16)
	if err := s.Subscribe(ctx, names...); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	own := owners(t, ctx, cl, names)

	moved := names[0]
	slot, err := cc.ClusterKeySlot(ctx, moved).Result()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT: %v", err)
	}
	// Other channels may share the slot and move with it.
	inSlot := map[string]bool{}
	var slotNames []string
	for _, name := range names {
		if sl, err := cc.ClusterKeySlot(ctx, name).Result(); err != nil {
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		} else if sl == slot {
			inSlot[name] = true
			slotNames = append(slotNames, name)
		}
	}
	// A second Subscriber has only the slot's channels, so its connection
	// to the old primary has nothing left after the move.
	s2, rec2 := startSubscriber(t, cc, testTiming)
	if err := s2.Subscribe(ctx, slotNames...); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}

	var from, to *redistest.Server
	for _, n := range cl.Nodes {
		switch {
		case n.Addr == own[moved]:
			from = n
		case to == nil:
			to = n
		}
	}
	id := func(n *redistest.Server) string {
		id, err := n.Client(t).ClusterMyID(ctx).Result()
		if err != nil {
			t.Fatalf("CLUSTER MYID on %s: %v", n.Addr, err)
		}
		return id
	}
	setSlot := func(n *redistest.Server, args ...any) {
		cmd := append([]any{"CLUSTER", "SETSLOT", slot}, args...)
		if err := n.Client(t).Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v on %s: %v", cmd, n.Addr, err)
		}
	}
	// The usual resharding steps; shard channels have no keys to MIGRATE.
	fromID, toID := id(from), id(to)
	setSlot(to, "IMPORTING", fromID)
	setSlot(from, "MIGRATING", toID)
	setSlot(to, "NODE", toID)
	setSlot(from, "NODE", toID)
	for _, n := range cl.Nodes {
		if n != from && n != to {
			setSlot(n, "NODE", toID)
		}
	}

	for name := range inSlot {
		own[name] = to.Addr
	}
	testwait.ForNil(t, 5*time.Second, "resubscription on the new primary", func() error {
		for _, name := range names {
			want := 1
			if inSlot[name] {
				want = 2
				if got := rec2.count(name, Subscribed); got != want {
					return fmt.Errorf("second Subscriber: %s: %d Subscribed events, want %d", name, got, want)
				}
			}
			if got := rec.count(name, Subscribed); got != want {
				return fmt.Errorf("%s: %d Subscribed events, want %d", name, got, want)
			}
		}
		return nil
	})
	testwait.ForNil(t, 5*time.Second, "second Subscriber's idle connection closed", func() error {
		s2.mu.Lock()
		defer s2.mu.Unlock()
		if _, ok := s2.conns[from.Addr]; ok || len(s2.conns) != 1 {
			return fmt.Errorf("connections to %v, want only %s", slices.Collect(maps.Keys(s2.conns)), to.Addr)
		}
		return nil
	})
	if err := s2.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitConnections(ctx, t, cl, own)
	publishAll(ctx, t, rec, own, "after")
}

func TestFailover(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault func(t *testing.T, ctx context.Context, primary, replica *redistest.Server)
	}{
		{"manual", func(t *testing.T, ctx context.Context, primary, replica *redistest.Server) {
			// CLUSTER FAILOVER refuses while the replica's cluster bus
			// link to its primary is down, and gives up after 5s; both
			// happen on a busy test machine, so ask again until it is done.
			c := replica.Client(t)
			var asked time.Time
			testwait.ForNil(t, 15*time.Second, "manual failover", func() error {
				role, err := c.Do(ctx, "ROLE").Slice()
				if err == nil && len(role) > 0 && role[0] == "master" {
					return nil
				}
				if time.Since(asked) > 3*time.Second {
					asked = time.Now()
					if err := c.ClusterFailover(ctx).Err(); err != nil {
						return fmt.Errorf("CLUSTER FAILOVER: %w", err)
					}
				}
				return fmt.Errorf("ROLE %v, %v", role, err)
			})
		}},
		{"primary killed", func(t *testing.T, ctx context.Context, primary, replica *redistest.Server) {
			primary.Kill(t)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t, 40*time.Second)
			cl := redistest.NewCluster(t, 3, 1)
			s, rec := startSubscriber(t, cl.Client(t), testTiming)
			names := channelNames(20, 16)
			if err := s.Subscribe(ctx, names...); err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			own := owners(t, ctx, cl, names)

			replica := cl.Nodes[len(cl.Nodes)-1]
			role, err := replica.Client(t).Do(ctx, "ROLE").Slice()
			if err != nil || len(role) < 3 || role[0] != "slave" {
				t.Fatalf("ROLE on %s = %v, %v", replica.Addr, role, err)
			}
			primaryAddr := fmt.Sprintf("%v:%v", role[1], role[2])
			var primary *redistest.Server
			for _, n := range cl.Nodes {
				if n.Addr == primaryAddr {
					primary = n
				}
			}

			begin := time.Now()
			tt.fault(t, ctx, primary, replica)
			for name, addr := range own {
				if addr == primary.Addr {
					own[name] = replica.Addr
				}
			}
			testwait.ForNil(t, 15*time.Second, "resubscription on the promoted replica", func() error {
				for name, addr := range own {
					want := 1
					if addr == replica.Addr {
						want = 2
					}
					if got := rec.count(name, Subscribed); got != want {
						return fmt.Errorf("%s: %d Subscribed events, want %d", name, got, want)
					}
				}
				return nil
			})
			t.Logf("resubscribed %v after the fault", time.Since(begin))
			waitConnections(ctx, t, cl, own)
			// The demoted primary has no pub/sub clients left (CLIENT LIST
			// would not show an idle one): the Subscriber keeps no
			// connection but those to the primaries serving its channels.
			testwait.ForNil(t, 5*time.Second, "connections to the primaries only", func() error {
				want := map[string]bool{}
				for _, addr := range own {
					want[addr] = true
				}
				s.mu.Lock()
				defer s.mu.Unlock()
				for addr := range s.conns {
					if !want[addr] {
						return fmt.Errorf("connection to %s, which serves no channel", addr)
					}
				}
				return nil
			})
			publishAll(ctx, t, rec, own, "after")
		})
	}
}

// TestStaleSlotMap checks that a channel refused with MOVED, because the
// client's slot map is out of date, is retried until the map is right, and
// that the refusal leaves the other channels of that connection alone.
func TestStaleSlotMap(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	cl := redistest.NewCluster(t, 3, 0)
	node := cl.Nodes[0].Client(t)
	//lint:ignore SA1019 CLUSTER SLOTS is what go-redis builds its slot map from; the test compares with it
	truth, err := node.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SLOTS: %v", err)
	}
	// The stale map gives each slot range to the primary of the next one.
	stale := make([]redis.ClusterSlot, len(truth))
	for i := range truth {
		stale[i] = redis.ClusterSlot{Start: truth[i].Start, End: truth[i].End, Nodes: truth[(i+1)%len(truth)].Nodes}
	}
	var useStale atomic.Bool
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			if useStale.Load() {
				return stale, nil
			}
			return truth, nil
		},
	})
	t.Cleanup(func() { _ = cc.Close() })
	s, rec := startSubscriber(t, cc, testTiming)
	first, second := channelNames(4, 4), channelNames(8, 4)[16:]
	if err := s.Subscribe(ctx, first...); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}

	useStale.Store(true)
	testwait.ForNil(t, 5*time.Second, "stale slot map", func() error {
		cc.ReloadState(ctx)
		c, err := cc.MasterForKey(ctx, first[0])
		if err != nil {
			return err
		}
		if own := owners(t, ctx, cl, first[:1]); c.Options().Addr == own[first[0]] {
			return errors.New("slot map still right")
		}
		return nil
	})
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = s.Subscribe(short, second...)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "MOVED") {
		t.Fatalf("Subscribe with a stale slot map = %v, want a MOVED and context.DeadlineExceeded", err)
	}
	for _, name := range first {
		if n := rec.count(name, Lost); n != 0 {
			t.Fatalf("%s: %d Lost events after another channel was refused", name, n)
		}
	}

	useStale.Store(false)
	cc.ReloadState(ctx)
	if err := s.Subscribe(ctx, second...); err != nil {
		t.Fatalf("Subscribe with the slot map right again: %v", err)
	}
	all := append(first, second...)
	own := owners(t, ctx, cl, all)
	waitConnections(ctx, t, cl, own)
	publishAll(ctx, t, rec, own, "after")
}

// TestReplicaInSlotMap checks that the Subscriber does not subscribe on a
// replica that an out-of-date slot map names as a slot's primary, as it
// does right after a failover: Redis 7 replicas accept SSUBSCRIBE for their
// primary's slots, and the subscription would stay on the replica.
func TestReplicaInSlotMap(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	cl := redistest.NewCluster(t, 3, 1)
	//lint:ignore SA1019 CLUSTER SLOTS is what go-redis builds its slot map from; the test compares with it
	truth, err := cl.Nodes[0].Client(t).ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SLOTS: %v", err)
	}
	// The stale map names each range's replica as its primary.
	stale := make([]redis.ClusterSlot, len(truth))
	for i, r := range truth {
		if len(r.Nodes) != 2 {
			t.Fatalf("CLUSTER SLOTS range %d-%d has nodes %v, want a primary and a replica", r.Start, r.End, r.Nodes)
		}
		stale[i] = redis.ClusterSlot{Start: r.Start, End: r.End, Nodes: []redis.ClusterNode{r.Nodes[1], r.Nodes[0]}}
	}
	var useStale atomic.Bool
	useStale.Store(true)
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			if useStale.Load() {
				return stale, nil
			}
			return truth, nil
		},
	})
	t.Cleanup(func() { _ = cc.Close() })
	s, rec := startSubscriber(t, cc, testTiming)
	names := channelNames(4, 4)

	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	err = s.Subscribe(short, names...)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not a primary") {
		t.Fatalf("Subscribe with replicas in the slot map = %v, want a \"not a primary\" and context.DeadlineExceeded", err)
	}

	useStale.Store(false)
	cc.ReloadState(ctx)
	if err := s.Subscribe(ctx, names...); err != nil {
		t.Fatalf("Subscribe with the slot map right again: %v", err)
	}
	own := owners(t, ctx, cl, names)
	waitConnections(ctx, t, cl, own)
	publishAll(ctx, t, rec, own, "after")
}
