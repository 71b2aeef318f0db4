package beanstalkd

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// jobStreams and jobStreamLines bound the random test of stored jobs.
const (
	jobStreams     = 120
	jobStreamLines = 40
)

// TestRandomJobStreamsMatchBeanstalkd sends random streams of commands on stored jobs (put,
// reserve, release, bury, kick, kick-job, touch, delete, peeks, stats-job, stats-tube,
// reserve-job) to a fresh real beanstalkd and a fresh server on the delayq Backend, and wants
// the same replies (clock fields aside). Each stream uses a tube of its own and names only the
// ids of its own jobs (and one that does not exist); delays are 0 or far in the future, each
// its own, and TTRs long, so no reply depends on timing. Both servers issue the same ids, as
// they get the same puts in the same order. The seed is logged: a failure reproduces with it.
func TestRandomJobStreamsMatchBeanstalkd(t *testing.T) {
	rng := propertyRand(t, 0x243f6a8885a308d3)
	s := startServers(t, newDelayqBackend(t))
	var next uint64 = 1 // the id the next put gets on both servers
	for i := 0; i < jobStreams && !t.Failed(); i++ {
		stream, puts := jobStream(rng, fmt.Sprintf("p%d", i), next)
		want := normaliseClocks(converse(t, s.real, []byte(stream)))
		got := normaliseClocks(converse(t, s.ours, []byte(stream)))
		if got != want {
			t.Errorf("stream %d:\n%s\nbeanstalkd:\n%s\nours:\n%s", i, stream, want, got)
		}
		next += puts
	}
}

// jobStream returns a stream on tube whose puts get ids from first on, and how many it puts.
func jobStream(rng *rand.Rand, tube string, first uint64) (string, uint64) {
	lines := []string{"use " + tube, "watch " + tube, "ignore default"}
	var puts uint64
	id := func() string {
		if puts == 0 || rng.IntN(12) == 0 {
			return "999999"
		}
		return strconv.FormatUint(first+rng.Uint64N(puts), 10)
	}
	pri := func() string { return pick(rng, []string{"0", "1", "5", "1023", "1024", "4294967295"}) }
	// Every delay of a stream is its own: delayq keeps due times in milliseconds and orders
	// jobs due in the same one by id, beanstalkd in nanoseconds, so two jobs delayed alike
	// within a millisecond (a put, then a release of an older job) could come in either order.
	delays := 0
	delay := func() string {
		if rng.IntN(4) > 0 {
			return "0"
		}
		delays++
		return strconv.Itoa(100 + delays)
	}
	for range 1 + rng.IntN(jobStreamLines) {
		switch rng.IntN(16) {
		case 0, 1, 2, 3:
			body := strings.Repeat("j", 1+rng.IntN(5))
			lines = append(lines, "put "+pri()+" "+delay()+" 60 "+strconv.Itoa(len(body)), body)
			puts++
		case 4, 5:
			lines = append(lines, "reserve-with-timeout 0")
		case 6:
			lines = append(lines, "release "+id()+" "+pri()+" "+delay())
		case 7:
			lines = append(lines, "bury "+id()+" "+pri())
		case 8:
			lines = append(lines, "delete "+id())
		case 9:
			lines = append(lines, "kick "+pick(rng, []string{"1", "2", "10"}))
		case 10:
			lines = append(lines, "kick-job "+id())
		case 11:
			lines = append(lines, pick(rng, []string{"peek-ready", "peek-delayed", "peek-buried", "peek " + id()}))
		case 12:
			lines = append(lines, "stats-job "+id())
		case 13:
			lines = append(lines, "stats-tube "+tube)
		case 14:
			lines = append(lines, "touch "+id())
		default:
			lines = append(lines, "reserve-job "+id())
		}
	}
	return strings.Join(lines, "\r\n") + "\r\n", puts
}
