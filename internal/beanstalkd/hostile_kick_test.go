package beanstalkd

import (
	"fmt"
	"testing"

	"github.com/delayq/delayq"
)

// differWith is differ on a delayq Backend whose Client is made with cfg.
func differWith(t *testing.T, cfg delayq.Config, scenario func(t *testing.T, addr string) string) {
	t.Helper()
	s := startServers(t, newDelayqBackendWith(t, cfg))
	want := normaliseClocks(scenario(t, s.real))
	got := normaliseClocks(scenario(t, s.ours))
	if got != want {
		t.Errorf("beanstalkd:\n%s\ndelayq:\n%s", want, got)
	}
}

// eachPartitioning runs test on topics of one partition and of eight.
func eachPartitioning(t *testing.T, test func(t *testing.T, cfg delayq.Config)) {
	for _, n := range []int{1, 8} {
		t.Run(fmt.Sprintf("partitions=%d", n), func(t *testing.T) { test(t, delayq.Config{Partitions: n}) })
	}
}

// script runs cmds on one connection (a command followed by a line starting "body:" sends
// that body) and returns the transcript.
func script(t *testing.T, addr string, cmds ...string) string {
	c := dialPeer(t, addr)
	var tr transcript
	for i := 0; i < len(cmds); i++ {
		cmd := cmds[i]
		if i+1 < len(cmds) && len(cmds[i+1]) > 5 && cmds[i+1][:5] == "body:" {
			tr.add(cmd, c.do(cmd, cmds[i+1][5:]))
			i++
			continue
		}
		tr.add(cmd, c.do(cmd))
	}
	return tr.String()
}

// TestHostileKickDelayedTakesTheFirstDue: kick of delayed jobs takes those due first, over
// partitions too, and the kicked jobs go out by priority and id; stats-job counts the kick.
func TestHostileKickDelayedTakesTheFirstDue(t *testing.T) {
	eachPartitioning(t, func(t *testing.T, cfg delayq.Config) {
		differWith(t, cfg, func(t *testing.T, addr string) string {
			cmds := []string{"use k", "watch k", "ignore default"}
			for i, d := range []int{500, 300, 900, 100, 700, 200, 800, 600, 400, 1000} {
				cmds = append(cmds, fmt.Sprintf("put %d %d 10 1", 9-i%3, d), "body:"+string(rune('a'+i)))
			}
			cmds = append(cmds, "kick 3", "peek-delayed", "stats-tube k", "stats-job 4", "stats-job 1",
				"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0",
				"kick 2", "peek-delayed", "peek-ready", "kick-job 3", "kick-job 3", "peek-ready", "stats-job 3",
				"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0")
			return script(t, addr, cmds...)
		})
	})
}

// TestHostileKickBuriedThenDelayed: with buried and delayed jobs, kick takes the buried only
// (in burial order, over partitions too), they go out by priority after the kick, and only a
// kick with no buried left takes delayed jobs.
func TestHostileKickBuriedThenDelayed(t *testing.T) {
	eachPartitioning(t, func(t *testing.T, cfg delayq.Config) {
		differWith(t, cfg, func(t *testing.T, addr string) string {
			cmds := []string{"use kb", "watch kb", "ignore default"}
			for i := range 8 {
				cmds = append(cmds, fmt.Sprintf("put %d 0 10 1", 10+i%4), "body:"+string(rune('a'+i)))
			}
			cmds = append(cmds, "put 0 100 10 1", "body:D", "put 1 200 10 1", "body:E")
			for range 8 {
				cmds = append(cmds, "reserve-with-timeout 0")
			}
			for _, id := range []int{5, 2, 8, 1, 7, 3, 6, 4} {
				cmds = append(cmds, fmt.Sprintf("bury %d %d", id, 20-id))
			}
			cmds = append(cmds, "peek-buried", "kick 3", "peek-buried", "stats-tube kb",
				"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0",
				"kick 100", "stats-tube kb", "kick 1", "peek-delayed", "kick-job 10", "stats-tube kb",
				"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0",
				"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0")
			return script(t, addr, cmds...)
		})
	})
}

// TestHostileKickJobOfAReleasedDelayedJob: a job released with a delay is kicked by kick-job
// and by kick, keeps its new priority, and stats-job says so.
func TestHostileKickJobOfAReleasedDelayedJob(t *testing.T) {
	eachPartitioning(t, func(t *testing.T, cfg delayq.Config) {
		differWith(t, cfg, func(t *testing.T, addr string) string {
			return script(t, addr, "use rk", "watch rk", "ignore default",
				"put 5 0 10 1", "body:a", "put 5 0 10 1", "body:b", "put 5 0 10 1", "body:c",
				"reserve-with-timeout 0", "release 1 1 100", "reserve-with-timeout 0", "release 2 9 50",
				"stats-job 1", "peek-delayed", "kick-job 1", "stats-job 1", "kick 1", "stats-job 2",
				"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0")
		})
	})
}
