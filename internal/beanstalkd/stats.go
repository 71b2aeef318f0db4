package beanstalkd

import (
	"context"
	"strconv"
	"sync"

	"github.com/delayq/delayq/internal/beanstalkd/proto"
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
		return okOr(err, func() { c.w.OK(proto.YAMLMap(c.srv.statsFields(s))) })
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

// statsFields is the server-wide stats document: the store's job counts and the server's
// command counters. The process and binlog fields are for the next step.
func (s *Server) statsFields(st proto.StoreStats) []proto.Field {
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
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
	return append(f,
		proto.Field{Key: "job-timeouts", Value: u(st.JobTimeouts)},
		proto.Field{Key: "total-jobs", Value: u(st.TotalJobs)},
		proto.Field{Key: "max-job-size", Value: strconv.Itoa(s.cfg.MaxJobSize)},
	)
}
