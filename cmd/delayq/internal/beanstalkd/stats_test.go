package beanstalkd

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
)

// statsKeys returns the keys of a stats document's lines, in order.
func statsKeys(reply string) []string {
	var keys []string
	for _, m := range regexp.MustCompile(`(?m)^([a-z-]+): `).FindAllStringSubmatch(reply, -1) {
		keys = append(keys, m[1])
	}
	return keys
}

// TestStatsHasEveryFieldOfBeanstalkd: the stats document has beanstalkd's fields in its order,
// and the connection figures count as beanstalkd's do.
func TestStatsHasEveryFieldOfBeanstalkd(t *testing.T) {
	s := startServers(t, newDelayqBackend(t))
	stream := "put 0 0 10 1\r\nx\r\nreserve-with-timeout 0\r\nstats\r\n"
	real, ours := converse(t, s.real, []byte(stream)), converse(t, s.ours, []byte(stream))
	if diff := cmp.Diff(statsKeys(real), statsKeys(ours)); diff != "" {
		t.Errorf("stats fields (-beanstalkd +ours):\n%s", diff)
	}
	for _, field := range []string{"current-jobs-reserved: 1", "cmd-put: 1", "total-jobs: 1",
		"current-connections: 1", "current-producers: 1", "current-workers: 1", "total-connections: 1",
		"current-tubes: 1", `version: "1.12"`, "draining: false"} {
		if !strings.Contains(ours, "\n"+field+"\n") {
			t.Errorf("stats lacks %q:\n%s", field, ours)
		}
	}
}

// TestStatsCountsMatchBeanstalkd wants the job counts and command counters of stats to follow
// the jobs as beanstalkd's do.
func TestStatsCountsMatchBeanstalkd(t *testing.T) {
	fields := []string{"current-jobs-urgent", "current-jobs-ready", "current-jobs-reserved",
		"current-jobs-delayed", "current-jobs-buried", "cmd-put", "cmd-reserve", "cmd-delete",
		"cmd-release", "cmd-bury", "cmd-kick", "cmd-touch", "cmd-peek", "cmd-stats-job",
		"job-timeouts", "total-jobs"}
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dial(t, addr), dial(t, addr)
		tr.add("stats", statsFields(b.do("stats"), fields...))
		tr.add("use", a.do("use s"))
		tr.add("put", a.do("put 0 0 10 1", "1"))
		tr.add("put", a.do("put 2000 0 10 1", "2"))
		tr.add("put", a.do("put 0 100 10 1", "3"))
		tr.add("watch", a.do("watch s"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("stats", statsFields(b.do("stats"), fields...))
		tr.add("bury", a.do("bury 1 0"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("release", a.do("release 2 0 0"))
		tr.add("kick", a.do("kick 1"))
		tr.add("peek", a.do("peek 3"))
		tr.add("stats-job", a.do("stats-job 3"))
		tr.add("stats", statsFields(b.do("stats"), fields...))
		tr.add("delete", a.do("delete 1"))
		tr.add("stats", statsFields(b.do("stats"), fields...))
		return tr.String()
	})
}

// TestDelayqStatsJobCountsAReserveOnce wants a job reserved once to say reserves: 1 while it is
// reserved, as beanstalkd does.
func TestDelayqStatsJobCountsAReserveOnce(t *testing.T) {
	b := newDelayqBackend(t)
	ctx := context.Background()
	id, _, err := b.Put(ctx, "stats", 0, 0, time.Minute, []byte("body"))
	if err != nil {
		t.Fatal(err)
	}
	const session proto.Session = 1
	if _, err := b.Reserve(ctx, session, []string{"stats"}, time.Second); err != nil {
		t.Fatal(err)
	}
	st, err := b.StatsJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "reserved" || st.Reserves != 1 {
		t.Errorf("stats-job of a job reserved once: state %q, reserves %d; want reserved, 1", st.State, st.Reserves)
	}
}
