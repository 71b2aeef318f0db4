package beanstalkd

import (
	"fmt"
	"testing"

	"github.com/delayq/delayq"
)

// TestHostileOrderOverPartitionsWithReleases: over eight partitions, jobs of mixed priorities,
// released with new priorities, buried and kicked, go out (and peek-ready shows them) by
// priority, then id, as beanstalkd.
func TestHostileOrderOverPartitionsWithReleases(t *testing.T) {
	differWith(t, delayq.Config{Partitions: 8}, func(t *testing.T, addr string) string {
		cmds := []string{"use o", "watch o", "ignore default"}
		for i := range 24 {
			cmds = append(cmds, fmt.Sprintf("put %d 0 10 1", []int{7, 3, 7, 1, 3, 7}[i%6]), "body:"+string(rune('a'+i)))
		}
		cmds = append(cmds, "peek-ready")
		for range 6 {
			cmds = append(cmds, "reserve-with-timeout 0")
		}
		// The six reserved: ids 4, 10, 16, 22 (pri 1), then 2, 5 (pri 3).
		cmds = append(cmds, "release 4 9 0", "release 10 3 0", "release 16 0 0", "bury 22 5", "release 2 7 0", "release 5 3 0",
			"peek-ready", "kick 1", "peek-ready", "stats-tube o")
		for range 26 {
			cmds = append(cmds, "reserve-with-timeout 0")
		}
		return script(t, addr, cmds...)
	})
}

// TestHostileConcurrentReservesOverPartitionsAndTubes: connections watching two tubes, of
// one partition and of eight, reserving at once, get every job once, each connection's in
// priority, then id order.
func TestHostileConcurrentReservesOverPartitionsAndTubes(t *testing.T) {
	eachPartitioning(t, func(t *testing.T, cfg delayq.Config) {
		addr := startServer(t, Config{Backend: newDelayqBackendWith(t, cfg)})
		for range 3 {
			pris := putJobs(t, addr, "pa", 300, func(i int) int { return (i * 3) % 7 })
			for id, p := range putJobs(t, addr, "pb", 300, func(i int) int { return (i * 5) % 7 }) {
				pris[id] = p
			}
			checkDrained(t, pris, drainConcurrently(t, addr, 16, []string{"pa", "pb"}))
		}
	})
}
