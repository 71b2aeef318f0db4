package shardsub

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

func TestOneConnectionPerPrimary(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	cl := redistest.NewCluster(t, 3, 0)
	cc := cl.Client(t)
	rec := newRecorder(t)
	s := New(cc, nil, rec.on) // the defaults, for once
	t.Cleanup(func() { _ = s.Close() })

	names := channelNames(20, 16)
	if err := s.Subscribe(ctx, names...); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	for _, name := range names {
		if n := rec.count(name, Subscribed); n != 1 {
			t.Fatalf("%s: %d Subscribed events after Subscribe, want 1", name, n)
		}
	}
	// Again, with one channel more: the others stay as they are.
	extra := "delayq:{extra#0}:notify"
	if err := s.Subscribe(ctx, append(names, extra)...); err != nil {
		t.Fatalf("second Subscribe: %v", err)
	}
	names = append(names, extra)
	for _, name := range names {
		if n := rec.count(name, Subscribed); n != 1 {
			t.Fatalf("%s: %d Subscribed events after the second Subscribe, want 1", name, n)
		}
	}

	own := owners(t, ctx, cl, names)
	waitConnections(ctx, t, cl, own)
	publishAll(ctx, t, rec, own, "first")
}

// TestSubscribeRetries checks that Subscribe gives up with ctx, and that
// the channel still gets subscribed once its primary is back.
func TestSubscribeRetries(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	cl := redistest.NewCluster(t, 3, 0)
	cc := cl.Client(t)
	// Load the slot map while every node is up.
	if err := cc.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	s, rec := startSubscriber(t, cc, testTiming)
	names := channelNames(4, 4)
	own := owners(t, ctx, cl, names)
	down := cl.Nodes[2]
	var onDown string
	for name, addr := range own {
		if addr == down.Addr {
			onDown = name
		}
	}
	if onDown == "" {
		t.Fatalf("no channel of %v on %s", own, down.Addr)
	}

	down.Kill(t)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err := s.Subscribe(short, names...)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Subscribe with a primary down = %v, want a context.DeadlineExceeded", err)
	}
	t.Logf("Subscribe: %v", err)

	down.Restart(t)
	testwait.ForNil(t, 10*time.Second, "subscription after restart", func() error {
		for _, name := range names {
			if rec.count(name, Subscribed) != 1 {
				return fmt.Errorf("%s not subscribed", name)
			}
		}
		return nil
	})
	if err := s.Subscribe(ctx, names...); err != nil {
		t.Fatalf("Subscribe after restart: %v", err)
	}
	publishAll(ctx, t, rec, own, "after")
}

func TestClose(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	cl := redistest.NewCluster(t, 3, 0)
	cc := cl.Client(t)
	s, _ := startSubscriber(t, cc, testTiming)
	names := channelNames(4, 4)
	if err := s.Subscribe(ctx, names...); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	// Leave one primary down so that a connection is being retried.
	cl.Nodes[0].Kill(t)
	testwait.ForNil(t, 5*time.Second, "a lost connection", func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.conns) == 3 {
			return errors.New("still 3 connections")
		}
		return nil
	})

	begin := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(begin); d > time.Second {
		t.Errorf("Close took %v", d)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Subscribe(ctx, names...); !errors.Is(err, ErrClosed) {
		t.Errorf("Subscribe after Close = %v, want ErrClosed", err)
	}
	testwait.ForNil(t, time.Second, "goroutines gone", func() error {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "shardsub.(*") {
				return fmt.Errorf("goroutine left:\n%s", g)
			}
		}
		return nil
	})
	// The other primaries see no pub/sub client of ours any more.
	testwait.ForNil(t, time.Second, "connections closed", func() error {
		for _, n := range cl.Nodes[1:] {
			if got := pubsubClients(t, ctx, n.Addr); len(got) != 0 {
				return fmt.Errorf("%s has pub/sub clients %v", n.Addr, got)
			}
		}
		return nil
	})
}

// TestGoRedisLosesCrossSlotResubscription documents why this package
// exists: a go-redis PubSub whose shard channels span slots resubscribes
// them in one SSUBSCRIBE after a reconnect, which Redis refuses. If this
// test fails, go-redis has fixed that.
func TestGoRedisLosesCrossSlotResubscription(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	node := redistest.NewCluster(t, 3, 0).Nodes[0]
	c := node.Client(t)
	// Two channels in different slots of this node.
	own := map[int64]string{}
	for i := 0; len(own) < 2; i++ {
		name := fmt.Sprintf("{c%d}", i)
		slot, err := c.ClusterKeySlot(ctx, name).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		}
		if c.SPublish(ctx, name, "x").Err() == nil { // served here
			own[slot] = name
		}
	}
	var chans []string
	for _, name := range own {
		chans = append(chans, name)
	}
	ps := c.SSubscribe(ctx)
	t.Cleanup(func() { _ = ps.Close() })
	for _, name := range chans {
		if err := ps.SSubscribe(ctx, name); err != nil {
			t.Fatalf("SSUBSCRIBE %s: %v", name, err)
		}
		if msg, err := ps.ReceiveTimeout(ctx, time.Second); err != nil {
			t.Fatalf("SSUBSCRIBE %s: %v, %v", name, msg, err)
		}
	}
	if err := c.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
		t.Fatalf("CLIENT KILL: %v", err)
	}
	var errs []string
	for i := 0; i < 3; i++ {
		_, err := ps.ReceiveTimeout(ctx, 200*time.Millisecond)
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if !strings.Contains(strings.Join(errs, "\n"), "CROSSSLOT") {
		t.Fatalf("errors after reconnect: %q, want a CROSSSLOT", errs)
	}
}
