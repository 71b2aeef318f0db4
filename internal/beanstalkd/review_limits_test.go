package beanstalkd

import (
	"strings"
	"testing"
)

// TestExtremeFieldsOfStoredJobs wants the largest priority, delay and TTR beanstalkd takes to
// be stored and reported, through put, release and stats-job.
func TestExtremeFieldsOfStoredJobs(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a := dialPeer(t, addr)
		tr.add("put max ttr", a.do("put 4294967295 0 4294967295 1", "1"))
		tr.add("put max delay", a.do("put 0 4294967295 10 1", "2"))
		tr.add("stats-job", a.do("stats-job 1"))
		tr.add("stats-job", a.do("stats-job 2"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("release max delay", a.do("release 1 4294967295 4294967295"))
		tr.add("stats-job", a.do("stats-job 1"))
		tr.add("peek-delayed", a.do("peek-delayed"))
		tr.add("kick", a.do("kick 10"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("bury max pri", a.do("bury 2 4294967295"))
		tr.add("stats-job", a.do("stats-job 2"))
		return tr.String()
	})
}

// statsFields keeps the named fields of a stats reply.
func statsFields(reply string, names ...string) string {
	var out []string
	for _, l := range strings.Split(reply, "\n") {
		for _, n := range names {
			if strings.HasPrefix(l, n+": ") {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n") + "\n"
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
		a, b := dialPeer(t, addr), dialPeer(t, addr)
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
