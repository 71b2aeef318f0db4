package redistest

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redisproc"
	"github.com/delayq/delayq/internal/testwait"
)

// sentinelTimeout bounds each wait of NewSentinel.
const sentinelTimeout = 20 * time.Second

// Sentinel is a Redis Sentinel set-up: one primary, one replica and three
// sentinels monitoring them.
type Sentinel struct {
	// Primary and Replica are the data servers in their initial roles; after
	// a failover their roles are swapped.
	Primary, Replica *Server
	// Sentinels are the three sentinel processes.
	Sentinels []*Server
	// MasterName is the name the sentinels monitor the primary under,
	// "mymaster".
	MasterName string
}

// NewSentinel starts a primary, a replica of it (made one with REPLICAOF)
// and three sentinels monitoring the primary with quorum 2,
// down-after-milliseconds 1000 and failover-timeout 5000. It waits until the
// replica has finished its initial sync and every sentinel sees the master,
// the replica and the two other sentinels, so a failover can happen at once.
// Everything is killed when the test ends.
func NewSentinel(t testing.TB) *Sentinel {
	t.Helper()
	s := &Sentinel{MasterName: "mymaster"}
	s.Primary = start(t, config{})
	s.Replica = start(t, config{})

	_, primaryPort, _ := strings.Cut(s.Primary.Addr, ":")
	if _, err := do(s.Replica.Addr, probeTimeout, "REPLICAOF", "127.0.0.1", primaryPort); err != nil {
		t.Fatalf("redistest: REPLICAOF on %s: %v", s.Replica.Addr, err)
	}
	err := testwait.Until(sentinelTimeout, func() error {
		repl, err := doString(s.Replica.Addr, probeTimeout, "INFO", "replication")
		if err != nil {
			return err
		}
		return redisproc.ReplicaSynced(s.Replica.Addr, repl)
	})
	if err != nil {
		t.Fatalf("redistest: replica %s of %s: %v", s.Replica.Addr, s.Primary.Addr, err)
	}

	conf := func(port int, dir string) string {
		return strings.Join([]string{
			"port " + strconv.Itoa(port),
			"bind 127.0.0.1",
			"daemonize no",
			"dir " + confQuote(dir),
			"logfile " + confQuote(filepath.Join(dir, "redis.log")),
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %s 2", s.MasterName, primaryPort),
			fmt.Sprintf("sentinel down-after-milliseconds %s 1000", s.MasterName),
			fmt.Sprintf("sentinel failover-timeout %s 5000", s.MasterName),
			fmt.Sprintf("sentinel parallel-syncs %s 1", s.MasterName),
			"",
		}, "\n")
	}
	for i := 0; i < 3; i++ {
		s.Sentinels = append(s.Sentinels, start(t, config{sentinelConf: conf}))
	}

	// Sentinels find the replica through the master's INFO at once, but
	// each other only through hello messages published every 2 s.
	err = testwait.Until(sentinelTimeout, func() error {
		for _, sen := range s.Sentinels {
			if err := s.checkSentinel(sen.Addr); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("redistest: sentinels %v: %v", s.SentinelAddrs(), err)
	}
	return s
}

// checkSentinel reports whether the sentinel at addr sees the primary as a
// healthy master, the replica and both other sentinels.
func (s *Sentinel) checkSentinel(addr string) error {
	r, err := do(addr, probeTimeout, "SENTINEL", "MASTER", s.MasterName)
	if err != nil {
		return fmt.Errorf("%s: SENTINEL MASTER: %w", addr, err)
	}
	m := pairs(r)
	if got := net.JoinHostPort(m["ip"], m["port"]); got != s.Primary.Addr || m["flags"] != "master" ||
		m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" {
		return fmt.Errorf("%s: SENTINEL MASTER: addr %s flags %q num-slaves %s num-other-sentinels %s",
			addr, got, m["flags"], m["num-slaves"], m["num-other-sentinels"])
	}

	r, err = do(addr, probeTimeout, "SENTINEL", "REPLICAS", s.MasterName)
	if err != nil {
		return fmt.Errorf("%s: SENTINEL REPLICAS: %w", addr, err)
	}
	reps := pairsList(r)
	if len(reps) != 1 || net.JoinHostPort(reps[0]["ip"], reps[0]["port"]) != s.Replica.Addr ||
		reps[0]["flags"] != "slave" || reps[0]["master-link-status"] != "ok" {
		return fmt.Errorf("%s: SENTINEL REPLICAS: %v", addr, reps)
	}

	r, err = do(addr, probeTimeout, "SENTINEL", "SENTINELS", s.MasterName)
	if err != nil {
		return fmt.Errorf("%s: SENTINEL SENTINELS: %w", addr, err)
	}
	sens := pairsList(r)
	if len(sens) != 2 {
		return fmt.Errorf("%s: SENTINEL SENTINELS: sees %d other sentinels, want 2", addr, len(sens))
	}
	for _, o := range sens {
		if o["flags"] != "sentinel" {
			return fmt.Errorf("%s: SENTINEL SENTINELS: %v", addr, sens)
		}
	}
	return nil
}

// confQuote quotes a value for a redis configuration file.
func confQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// SentinelAddrs returns the addresses of the three sentinels.
func (s *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.Sentinels))
	for i, n := range s.Sentinels {
		addrs[i] = n.Addr
	}
	return addrs
}

// Client returns a new go-redis failover client (redis.NewFailoverClient)
// that finds the current primary through the sentinels; it is closed when
// the test ends.
func (s *Sentinel) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    s.MasterName,
		SentinelAddrs: s.SentinelAddrs(),
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
