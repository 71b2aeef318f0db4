package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beanstalkd/go-beanstalk"
)

const (
	bodySize = 100
	ttr      = time.Minute
	// reserveWait bounds one reserve: every job was put before the reserves start.
	reserveWait = 10 * time.Second
	// phaseTimeout bounds one phase of one scenario: every connection's reads and writes
	// fail past it.
	phaseTimeout = 2 * time.Minute
)

// result is one run of one scenario of one contestant.
type result struct {
	contestant string
	conns      int
	put, take  phase
}

// phase is one half of a run: its rate and the CPU time each process spent on it.
type phase struct {
	rate float64 // jobs/s
	wall time.Duration
	cpu  map[string]time.Duration // by process name, "client" for this program
	// machine is how many cores the whole machine kept busy, whatever the process.
	machine float64
	cmds    map[string]cmdStat // delayq's redis-server: INFO commandstats of the phase
}

// measure puts n jobs with conns connections, then reserves and deletes them all with conns
// connections, and checks that the server holds no job afterwards.
func measure(ctx context.Context, s *server, conns, n int) (result, error) {
	cs, err := dial(s.addr, conns)
	if err != nil {
		return result{}, err
	}
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	body := bytes.Repeat([]byte("x"), bodySize)
	var res result
	res.put, err = timed(ctx, s, cs, n, func(c *beanstalk.Conn) error {
		_, err := c.Put(body, 1024, 0, ttr)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("put: %w", err)
	}
	res.take, err = timed(ctx, s, cs, n, func(c *beanstalk.Conn) error {
		id, got, err := c.Reserve(reserveWait)
		if err != nil {
			return err
		}
		if len(got) != bodySize {
			return fmt.Errorf("job %d: body of %d bytes, want %d", id, len(got), bodySize)
		}
		return c.Delete(id)
	})
	if err != nil {
		return res, fmt.Errorf("reserve+delete: %w", err)
	}
	st, err := cs[0].Stats()
	if err != nil {
		return res, fmt.Errorf("stats: %w", err)
	}
	for _, k := range []string{"current-jobs-ready", "current-jobs-reserved", "current-jobs-delayed", "current-jobs-buried"} {
		if st[k] != "0" {
			return res, fmt.Errorf("after the run: %s is %s, want 0", k, st[k])
		}
	}
	return res, nil
}

func dial(addr string, n int) ([]*beanstalk.Conn, error) {
	var cs []*beanstalk.Conn
	for range n {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			for _, c := range cs {
				c.Close()
			}
			return nil, err
		}
		if err := nc.SetDeadline(time.Now().Add(phaseTimeout * 3)); err != nil {
			return nil, err
		}
		cs = append(cs, beanstalk.NewConn(nc))
	}
	return cs, nil
}

// timed runs op n times in all, spread over the connections, each connection in a goroutine of
// its own, and measures the rate and the CPU time of the server's processes and of this one.
func timed(ctx context.Context, s *server, cs []*beanstalk.Conn, n int, op func(*beanstalk.Conn) error) (phase, error) {
	before, err := cpuTimes(s)
	if err != nil {
		return phase{}, err
	}
	if s.redis != nil {
		if err := s.redis.ConfigResetStat(ctx).Err(); err != nil {
			return phase{}, err
		}
	}
	busyBefore, err := machineBusy()
	if err != nil {
		return phase{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, phaseTimeout)
	defer cancel()
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	errs := make([]error, len(cs))
	start := time.Now()
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					return
				}
				if err := op(c); err != nil {
					errs[i] = err
					left.Store(0) // the others stop too
					return
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return phase{}, err
	}
	busyAfter, err := machineBusy()
	if err != nil {
		return phase{}, err
	}
	after, err := cpuTimes(s)
	if err != nil {
		return phase{}, err
	}
	p := phase{rate: float64(n) / wall.Seconds(), wall: wall, cpu: map[string]time.Duration{},
		machine: float64(busyAfter-busyBefore) / 100 / wall.Seconds()}
	if s.redis != nil {
		if p.cmds, err = commandStats(ctx, s.redis); err != nil {
			return phase{}, err
		}
	}
	for k, v := range after {
		p.cpu[k] = v - before[k]
	}
	return p, nil
}

func cpuTimes(s *server) (map[string]time.Duration, error) {
	m := map[string]time.Duration{}
	for _, p := range append(s.procs, proc{"client", os.Getpid()}) {
		t, err := cpuTime(p.pid)
		if err != nil {
			return nil, err
		}
		m[p.name] = t
	}
	return m, nil
}
