package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/testwait"
)

func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestStandalone(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 10*time.Second)
	s := Standalone(t)
	if s.Pid() == 0 {
		t.Fatal("Pid() = 0 for a running server")
	}
	if fi, err := os.Stat(s.Dir); err != nil || !fi.IsDir() {
		t.Fatalf("Dir %q: %v", s.Dir, err)
	}
	c := s.Client(t)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v; want \"v\"", got, err)
	}
	// Persistence is off by default.
	cfg, err := c.ConfigGet(ctx, "appendonly").Result()
	if err != nil || cfg["appendonly"] != "no" {
		t.Fatalf("CONFIG GET appendonly = %v, %v; want no", cfg, err)
	}
}

func TestParallelServersGetDistinctPorts(t *testing.T) {
	t.Parallel()
	const n = 8
	servers := make([]*Server, n)
	var wg sync.WaitGroup
	for i := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// t.Fatalf must not be called off the test goroutine, so
			// failures are reported with t.Errorf by startNoFatal.
			servers[i] = startNoFatal(t)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, s := range servers {
		if s == nil {
			t.Fatal("a server failed to start")
		}
		if seen[s.Addr] {
			t.Fatalf("two servers on %s", s.Addr)
		}
		seen[s.Addr] = true
		if err := probe(s.Addr, s.Pid()); err != nil {
			t.Fatalf("probe %s: %v", s.Addr, err)
		}
	}
}

// fatalTB is a testing.TB whose Fatal* records the message and ends the
// goroutine instead of failing the test.
type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fatalTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

// startNoFatal starts a server from a goroutine other than the test's.
func startNoFatal(t *testing.T) *Server {
	f := &fatalTB{TB: t}
	var s *Server
	done := make(chan struct{})
	go func() {
		defer close(done)
		s = Standalone(f)
	}()
	<-done
	if f.msg != "" {
		t.Errorf("Standalone: %s", f.msg)
	}
	return s
}

// TestMissingBinaryHint runs without t.Parallel because it changes PATH.
func TestMissingBinaryHint(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, start := range []func(testing.TB){
		func(tb testing.TB) { Standalone(tb) },
		func(tb testing.TB) { NewCluster(tb, 3, 0) },
	} {
		f := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			start(f)
		}()
		<-done
		if !strings.Contains(f.msg, "not found: install it with `sudo apt-get install -y redis-server redis-tools`") {
			t.Errorf("Fatalf message = %q, want the install hint", f.msg)
		}
	}
}

func TestWithArgs(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 10*time.Second)
	s := Standalone(t, WithArgs("--maxmemory", "10mb", "--maxmemory-policy", "noeviction"))
	cfg, err := s.Client(t).ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if cfg["maxmemory"] != "10485760" || cfg["maxmemory-policy"] != "noeviction" {
		t.Fatalf("CONFIG GET maxmemory* = %v", cfg)
	}
}

func TestKillRestartKeepsAOF(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 20*time.Second)
	s := Standalone(t, WithAppendOnly("always"))
	c := s.Client(t)
	if err := c.Set(ctx, "survivor", "42", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	addr, oldPid := s.Addr, s.Pid()

	s.Kill(t)
	if s.Pid() != 0 {
		t.Fatalf("Pid() = %d after Kill", s.Pid())
	}
	if err := probe(s.Addr, oldPid); err == nil {
		t.Fatal("server still answers after Kill")
	}
	s.Kill(t) // a second Kill is a no-op

	s.Restart(t)
	if s.Addr != addr {
		t.Fatalf("Addr changed from %s to %s", addr, s.Addr)
	}
	if s.Pid() == 0 || s.Pid() == oldPid {
		t.Fatalf("Pid() = %d after Restart (was %d)", s.Pid(), oldPid)
	}
	// The pooled connections died with the old process; go-redis redials.
	var got string
	err := testwait.Until(5*time.Second, func() error {
		var err error
		got, err = c.Get(ctx, "survivor").Result()
		return err
	})
	if err != nil || got != "42" {
		t.Fatalf("GET after Restart = %q, %v; want \"42\"", got, err)
	}

	// Restart of a running server kills it first.
	pid := s.Pid()
	s.Restart(t)
	if s.Pid() == pid {
		t.Fatal("Restart of a running server kept the old process")
	}
}

func TestStopCont(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 20*time.Second)
	s := Standalone(t)
	c := redis.NewClient(&redis.Options{
		Addr:        s.Addr,
		ReadTimeout: 200 * time.Millisecond,
		MaxRetries:  -1,
	})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}

	s.Stop(t)
	start := time.Now()
	err := c.Ping(ctx).Err()
	var netErr interface{ Timeout() bool }
	if err == nil || !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("PING to a stopped server = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("PING to a stopped server took %v", d)
	}

	s.Cont(t)
	if err := testwait.Until(5*time.Second, func() error { return c.Ping(ctx).Err() }); err != nil {
		t.Fatalf("PING after Cont: %v", err)
	}

	// A server left stopped is still cleaned up.
	s.Stop(t)
}

func TestClusterHashTags(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	begin := time.Now()
	cl := NewCluster(t, 3, 0)
	t.Logf("3-primary cluster up in %v", time.Since(begin))
	if len(cl.Nodes) != 3 || len(cl.Addrs()) != 3 {
		t.Fatalf("%d nodes, %d addrs; want 3", len(cl.Nodes), len(cl.Addrs()))
	}
	c := cl.Client(t)

	// Keys sharing a hash tag share a slot; different tags spread out.
	const tags = 30
	slots := map[int64]bool{}
	for i := 0; i < tags; i++ {
		a, err := c.ClusterKeySlot(ctx, fmt.Sprintf("{t%d}a", i)).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		}
		b, err := c.ClusterKeySlot(ctx, fmt.Sprintf("{t%d}b", i)).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		}
		if a != b {
			t.Fatalf("{t%d}a and {t%d}b in slots %d and %d", i, i, a, b)
		}
		slots[a] = true
		// Multi-key commands work within one tag.
		if err := c.MSet(ctx, fmt.Sprintf("{t%d}a", i), "1", fmt.Sprintf("{t%d}b", i), "2").Err(); err != nil {
			t.Fatalf("MSET: %v", err)
		}
	}
	if len(slots) < 2 {
		t.Fatalf("all tags in slots %v", slots)
	}

	var mu sync.Mutex
	perMaster := map[string]int64{}
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		mu.Lock()
		perMaster[m.Options().Addr] = n
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatalf("ForEachMaster: %v", err)
	}
	var total int64
	for addr, n := range perMaster {
		if n == 0 {
			t.Errorf("master %s holds no keys: %v", addr, perMaster)
		}
		total += n
	}
	if len(perMaster) != 3 || total != 2*tags {
		t.Fatalf("keys per master = %v, want 3 masters with %d keys in all", perMaster, 2*tags)
	}
}

func TestClusterWithReplicas(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	begin := time.Now()
	cl := NewCluster(t, 3, 1)
	t.Logf("3-primary 3-replica cluster up in %v", time.Since(begin))
	if len(cl.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(cl.Nodes))
	}
	for i, n := range cl.Nodes {
		role, err := n.Client(t).Do(ctx, "ROLE").Slice()
		if err != nil {
			t.Fatalf("ROLE on %s: %v", n.Addr, err)
		}
		want := "master"
		if i >= 3 {
			want = "slave"
		}
		if role[0] != want {
			t.Errorf("node %d (%s) is %v, want %s", i, n.Addr, role[0], want)
		}
	}

	c := cl.Client(t)
	for i := 0; i < 20; i++ {
		if err := c.Set(ctx, fmt.Sprintf("key%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
	}
	var mu sync.Mutex
	replicas := 0
	err := c.ForEachSlave(ctx, func(ctx context.Context, r *redis.Client) error {
		mu.Lock()
		replicas++
		mu.Unlock()
		return r.Ping(ctx).Err()
	})
	if err != nil || replicas != 3 {
		t.Fatalf("ForEachSlave saw %d replicas, err %v; want 3", replicas, err)
	}
}

func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 40*time.Second)
	begin := time.Now()
	s := NewSentinel(t)
	t.Logf("sentinel set-up ready in %v", time.Since(begin))
	if s.MasterName != "mymaster" || len(s.SentinelAddrs()) != 3 {
		t.Fatalf("MasterName %q, sentinels %v", s.MasterName, s.SentinelAddrs())
	}

	c := s.Client(t)
	if err := c.Set(ctx, "before", "failover", 0).Err(); err != nil {
		t.Fatalf("SET via failover client: %v", err)
	}
	if n, err := c.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v", n, err)
	}

	sc := redis.NewSentinelClient(&redis.Options{Addr: s.SentinelAddrs()[0]})
	t.Cleanup(func() { _ = sc.Close() })
	begin = time.Now()
	if err := sc.Failover(ctx, s.MasterName).Err(); err != nil {
		t.Fatalf("SENTINEL FAILOVER: %v", err)
	}
	err := testwait.Until(20*time.Second, func() error {
		addr, err := sc.GetMasterAddrByName(ctx, s.MasterName).Result()
		if err != nil {
			return err
		}
		if got := strings.Join(addr, ":"); got != s.Replica.Addr {
			return fmt.Errorf("master is %s", got)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("sentinel never switched to %s: %v", s.Replica.Addr, err)
	}
	t.Logf("sentinel switched master in %v", time.Since(begin))

	// The failover client follows the switch: its writes reach the new
	// primary (the old one accepts writes until sentinel reconfigures it).
	newPrimary := s.Replica.Client(t)
	i := 0
	err = testwait.Until(20*time.Second, func() error {
		i++
		v := fmt.Sprint(i)
		if err := c.Set(ctx, "after", v, 0).Err(); err != nil {
			return err
		}
		got, err := newPrimary.Get(ctx, "after").Result()
		if err != nil {
			return err
		}
		if got != v {
			return fmt.Errorf("new primary has %q, want %q", got, v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("failover client never wrote to the new primary: %v", err)
	}
	t.Logf("failover client on new primary %v after SENTINEL FAILOVER", time.Since(begin))
	if got, err := c.Get(ctx, "before").Result(); err != nil || got != "failover" {
		t.Fatalf("GET before = %q, %v; want \"failover\"", got, err)
	}
}
