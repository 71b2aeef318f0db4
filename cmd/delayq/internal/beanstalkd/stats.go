package beanstalkd

import (
	"context"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
)

// counters count the commands served, by name, for the stats documents.
type counters struct {
	mu sync.Mutex
	n  map[string]uint64
}

func newCounters() *counters { return &counters{n: map[string]uint64{}} }

func (c *counters) add(name string) {
	c.mu.Lock()
	c.n[name]++
	c.mu.Unlock()
}

func (c *counters) get(name string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// statsCommand answers the stats and list commands.
func (c *conn) statsCommand(ctx context.Context, cmd proto.Command) error {
	b := c.srv.cfg.Backend
	switch cmd := cmd.(type) {
	case proto.StatsJob:
		s, err := b.StatsJob(ctx, cmd.ID)
		return okOr(err, func() { c.w.OK(proto.YAMLMap(s.Fields())) })
	case proto.StatsTube:
		s, err := b.StatsTube(ctx, cmd.Tube)
		n, referenced := c.srv.tubes.count(cmd.Tube)
		if err == proto.ErrNotFound && referenced {
			err = nil // a tube without jobs exists while a connection uses or watches it
		}
		return okOr(err, func() {
			c.w.OK(proto.YAMLMap(proto.TubeFields(cmd.Tube, s, n.using, n.watching, n.waiting)))
		})
	case proto.Stats:
		s, err := b.Stats(ctx)
		if err != nil {
			return err
		}
		stored, err := b.ListTubes(ctx)
		return okOr(err, func() { c.w.OK(proto.YAMLMap(c.srv.statsFields(s, len(c.srv.listTubes(stored))))) })
	case proto.ListTubes:
		stored, err := b.ListTubes(ctx)
		return okOr(err, func() { c.w.OK(proto.YAMLList(c.srv.listTubes(stored))) })
	default:
		return proto.ErrUnknownCommand
	}
}

// listTubes merges the tubes the connections reference with those holding jobs.
func (s *Server) listTubes(stored []string) []string {
	names := s.tubes.list()
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for _, n := range stored {
		if !seen[n] {
			names = append(names, n)
		}
	}
	return names
}

// statsFields is the server-wide stats document: the store's job counts, the server's command
// and connection counters, and the process. delayq keeps no binlog: its binlog fields are 0.
func (s *Server) statsFields(st proto.StoreStats, tubes int) []proto.Field {
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	f := []proto.Field{
		{Key: "current-jobs-urgent", Value: u(st.Jobs.Urgent)},
		{Key: "current-jobs-ready", Value: u(st.Jobs.Ready)},
		{Key: "current-jobs-reserved", Value: u(st.Jobs.Reserved)},
		{Key: "current-jobs-delayed", Value: u(st.Jobs.Delayed)},
		{Key: "current-jobs-buried", Value: u(st.Jobs.Buried)},
	}
	for _, name := range []string{"put", "peek", "peek-ready", "peek-delayed", "peek-buried",
		"reserve", "reserve-with-timeout", "delete", "release", "use", "watch", "ignore", "bury",
		"kick", "touch", "stats", "stats-job", "stats-tube", "list-tubes", "list-tube-used",
		"list-tubes-watched", "pause-tube"} {
		f = append(f, proto.Field{Key: "cmd-" + name, Value: u(s.counts.get(name))})
	}
	utime, stime := rusage()
	host, _ := os.Hostname()
	sysname, machine := uname()
	return append(f,
		proto.Field{Key: "job-timeouts", Value: u(st.JobTimeouts)},
		proto.Field{Key: "total-jobs", Value: u(st.TotalJobs)},
		proto.Field{Key: "max-job-size", Value: strconv.Itoa(s.cfg.MaxJobSize)},
		proto.Field{Key: "current-tubes", Value: strconv.Itoa(tubes)},
		proto.Field{Key: "current-connections", Value: i(s.conns.current.Load())},
		proto.Field{Key: "current-producers", Value: i(s.conns.producers.Load())},
		proto.Field{Key: "current-workers", Value: i(s.conns.workers.Load())},
		proto.Field{Key: "current-waiting", Value: i(s.conns.waiting.Load())},
		proto.Field{Key: "total-connections", Value: i(s.conns.total.Load())},
		proto.Field{Key: "pid", Value: strconv.Itoa(os.Getpid())},
		proto.Field{Key: "version", Value: `"` + Version + `"`},
		proto.Field{Key: "rusage-utime", Value: utime},
		proto.Field{Key: "rusage-stime", Value: stime},
		proto.Field{Key: "uptime", Value: i(int64(time.Since(s.started) / time.Second))},
		proto.Field{Key: "binlog-oldest-index", Value: "0"},
		proto.Field{Key: "binlog-current-index", Value: "0"},
		proto.Field{Key: "binlog-records-migrated", Value: "0"},
		proto.Field{Key: "binlog-records-written", Value: "0"},
		proto.Field{Key: "binlog-max-size", Value: "0"},
		proto.Field{Key: "draining", Value: strconv.FormatBool(s.draining.Load())},
		proto.Field{Key: "id", Value: s.id},
		proto.Field{Key: "hostname", Value: host},
		proto.Field{Key: "os", Value: sysname},
		proto.Field{Key: "platform", Value: machine},
	)
}

// Version is the beanstalkd protocol version the server speaks, as stats reports it.
const Version = "1.12"
