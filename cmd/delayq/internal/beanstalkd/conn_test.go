package beanstalkd

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
	"github.com/delayq/delayq/internal/testwait"
)

// TestRepliesMatchBeanstalkd sends streams of malformed and valid lines whose replies do not
// depend on stored jobs to a real beanstalkd and to the server, and wants the same bytes back
// (job ids aside). Every stream gets a connection of its own.
func TestRepliesMatchBeanstalkd(t *testing.T) {
	eachBackend(t, testRepliesMatchBeanstalkd)
}

func testRepliesMatchBeanstalkd(t *testing.T, newBackend func() proto.Backend) {
	s := startServers(t, newBackend())
	long200 := strings.Repeat("t", 200)
	cases := map[string][]string{
		"unknown": {"\r\n", "hello\r\n", "PUT 0 0 1 1\r\n", "peek\r\n", "use\r\n", "put\r\n",
			"pause-tube\r\n", "stats-jobs\r\n", " use foo\r\n", "watch\r\n", "kick-job\r\n"},
		"bare commands with garbage": {"reserve \r\n", "reservex\r\n", "stats \r\n", "statsx\r\n",
			"stats-job\r\n", "stats-tube\r\n", "list-tubesx\r\n", "list-tube-used \r\n",
			"list-tubes-watched \r\n", "peek-ready \r\n", "peek-delayedx\r\n", "peek-buried 1\r\n"},
		"numbers": {"delete\r\n", "delete \r\n", "delete x\r\n", "delete -1\r\n", "delete +1\r\n",
			"delete 1x\r\n", "delete 1 \r\n", "delete  \t1\r\n", "delete 18446744073709551616\r\n",
			"kick -1\r\n", "kick 4294967296\r\n", "kick 1 2\r\n", "bury 1\r\n", "bury 1 x\r\n",
			"bury 1 4294967296\r\n", "release 1 2\r\n", "release 1 2 -3\r\n", "touch 0x1\r\n",
			"stats-job 1 1\r\n", "peek  1x\r\n", "reserve-job x\r\n",
			"kick-job -1\r\n", "delete 1\x00\r\n"},
		"names": {"use -foo\r\n", "use foo bar\r\n", "use  foo\r\n", "use foo \r\n", "use fo{o\r\n",
			"use " + long200 + "\r\n", "use " + long200 + "x\r\n", "watch " + long200 + "x\r\n",
			"ignore -x\r\n", "stats-tube -x\r\n", "stats-tube " + long200 + "x\r\n",
			"use A-Za-z0-9-+/;.$_()\r\n", "watch a\tb\r\n", "pause-tube -x 1\r\n", "pause-tube foo\r\n",
			"pause-tube foo x\r\n", "pause-tube  foo  1 2\r\n", "pause-tube {} 1\r\n"},
		"tubes": {"list-tube-used\r\nuse foo\r\nlist-tube-used\r\nuse default\r\nlist-tube-used\r\n",
			"list-tubes-watched\r\nwatch a\r\nwatch b\r\nwatch a\r\nwatch c\r\nlist-tubes-watched\r\n" +
				"ignore a\r\nlist-tubes-watched\r\nignore zz\r\nignore default\r\nignore b\r\nignore c\r\n" +
				"list-tubes-watched\r\n",
			"ignore default\r\nwatch x\r\nignore default\r\nignore x\r\nlist-tubes-watched\r\n",
			"use x\r\nwatch " + long200 + "\r\nlist-tubes-watched\r\nlist-tubes\r\n"},
		"line length": {line("use ", 224), line("use ", 225), line("use ", 223),
			line("hello", 224), line("hello", 225), strings.Repeat("x", 224) + "use a\r\n",
			strings.Repeat("x", 223) + "\r\nuse b\r\n", strings.Repeat("x", 500) + "\r\nuse c\r\n",
			"use a\r\n" + line("watch ", 230) + "list-tubes-watched\r\n"},
		"put": {"put 1 0 1 5\r\nhello\r\n", "put 1 0 1 0\r\n\r\n", "put 1 0 1\r\n\r\n",
			"put 1 0 1 \r\n\r\n", "put 1 0 1 5 \r\nhello\r\n", "put 1 0 1 +5\r\nhello\r\n",
			"put 1 0 1  \t5\r\nhello\r\n", "put 1 0 1 5x\r\nhello\r\n", "put 1 0 15\r\n\r\n",
			"put -1 0 1 1\r\nx\r\n", "put 4294967296 0 1 1\r\nx\r\n", "put 4294967295 0 1 1\r\nx\r\n",
			"put 1 0 0 1\r\nx\r\n", "put 1 x 1 1\r\nx\r\n", "put 1 0 1 99999999999999999999\r\nx\r\n",
			"put 1 0 1 3\r\nhello\r\nuse a\r\n", "put 1 0 1 5\r\nhel\r\n\r\nuse a\r\n",
			"put 1 0 1 5\r\nhelloXY\r\nuse a\r\n", "put 1 0 1 2\r\nab\n\r\nuse a\r\n",
			"put 1 0 1 65535\r\n" + strings.Repeat("b", 65535) + "\r\n",
			"put 1 0 1 65536\r\n" + strings.Repeat("b", 65536) + "\r\nuse after\r\n",
			"put 1 0 1 65536 junk\r\n" + strings.Repeat("b", 65536) + "\r\nuse after\r\n",
			"put 1 0 1 70000\r\n" + strings.Repeat("b", 70000) + "\r\nlist-tube-used\r\n",
			"put 1 0 1 -1\r\nxuse a\r\n", "put 1 0 1 -2\r\nuse a\r\n"},
		"quit": {"quit\r\nuse a\r\n", "use a\r\nquit\r\nuse b\r\n", "quitx\r\nuse a\r\n",
			"quit \r\nuse a\r\n"},
	}
	// In a fixed order: the streams that put jobs leave them in the default tube.
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		t.Run(name, func(t *testing.T) {
			for _, stream := range cases[name] {
				s.compare(t, stream)
			}
		})
	}
	// Streams whose reserves read stored jobs, each in a tube of its own, on servers of their
	// own: the tubes they leave would show in the list-tubes above.
	jobs := startServers(t, newBackend())
	for _, stream := range []string{alone("r1", "reserve-with-timeout -1\r\n"), alone("r2", "reserve-with-timeout x\r\n"),
		alone("r3", "reserve-with-timeout 1.5\r\n"), alone("r4", "reserve-with-timeout 4294967296\r\n"),
		alone("s1", "peek-ready 1\r\nreserve-with-timeout 0\r\nreserve-with-timeout 0\r\ntouch 1\r\n")} {
		jobs.compare(t, stream)
	}
}

// alone returns a stream that puts one job ("hello", TTR 5) in a tube of its own, watched
// alone, and then sends cmds: what those reserve does not depend on the jobs other streams left.
func alone(tube, cmds string) string {
	return "use " + tube + "\r\nwatch " + tube + "\r\nignore default\r\nput 0 0 5 5\r\nhello\r\n" + cmds
}

// TestTubesOfConnectionsMatchBeanstalkd: tubes exist while a connection uses or watches them,
// list-tubes shows them in beanstalkd's order as connections come and go, and stats-tube
// counts the connections using, watching and waiting on a tube without jobs.
func TestTubesOfConnectionsMatchBeanstalkd(t *testing.T) {
	eachBackend(t, testTubesOfConnectionsMatchBeanstalkd)
}

func testTubesOfConnectionsMatchBeanstalkd(t *testing.T, newBackend func() proto.Backend) {
	s := startServers(t, newBackend())
	var got [2][]string
	for i, addr := range []string{s.real, s.ours} {
		holders := []*peer{dial(t, addr), dial(t, addr), dial(t, addr)}
		holders[0].write("use a\r\n")
		holders[0].expect("USING a\r\n")
		holders[1].write("watch b\r\n")
		holders[1].expect("WATCHING 2\r\n")
		holders[2].write("use c\r\nwatch c\r\nreserve-with-timeout 20\r\n")
		holders[2].expect("USING c\r\n")
		holders[2].expect("WATCHING 2\r\n")
		testwait.For(t, conversationTimeout, "a connection waiting on c", func() bool {
			return strings.Contains(converse(t, addr, []byte("stats-tube c\r\n")), "current-waiting: 1\n")
		})
		got[i] = append(got[i], converse(t, addr, []byte("list-tubes\r\nstats-tube b\r\nstats-tube c\r\nstats-tube zz\r\n")))
		// a goes: beanstalkd moves the last tube into its place (default, c, b).
		holders[0].write("quit\r\n")
		holders[0].expectClosed()
		got[i] = append(got[i], converse(t, addr, []byte("list-tubes\r\nstats-tube a\r\n")))
		holders[1].write("quit\r\n")
		holders[1].expectClosed()
		got[i] = append(got[i], converse(t, addr, []byte("list-tubes\r\n")))
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Errorf("(-beanstalkd +ours):\n%s", diff)
	}
}

// propertyStreams and propertyLines bound the random test: streams of up to this many lines.
const (
	propertyStreams = 150
	propertyLines   = 20
)

// TestRandomStreamsMatchBeanstalkd sends random command streams, drawn from a grammar of
// valid and malformed lines, to a real beanstalkd and to the server, and wants the same
// replies. The grammar keeps to replies that do not depend on which jobs are stored (ids are
// normalised; commands on job ids only come malformed), so any difference is the protocol
// layer's. The seed is logged: a failure reproduces with it.
func TestRandomStreamsMatchBeanstalkd(t *testing.T) {
	rng := propertyRand(t, 0x9e3779b97f4a7c15)
	eachBackend(t, func(t *testing.T, newBackend func() proto.Backend) {
		s := startServers(t, newBackend())
		for i := 0; i < propertyStreams && !t.Failed(); i++ {
			s.compare(t, randomStream(rng))
		}
	})
}

// propertyRand returns the random source of a property test, seeded from
// BEANSTALKD_PROPERTY_SEED or the clock; the seed is logged, so that a failure repeats.
func propertyRand(t *testing.T, stream uint64) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if env := os.Getenv("BEANSTALKD_PROPERTY_SEED"); env != "" {
		seed, _ = strconv.ParseUint(env, 10, 64)
	}
	t.Logf("seed %d (set BEANSTALKD_PROPERTY_SEED to repeat)", seed)
	return rand.New(rand.NewPCG(seed, seed^stream))
}

// randomStream returns 1 to propertyLines lines of the grammar, now and then ending in quit.
func randomStream(rng *rand.Rand) string {
	var b strings.Builder
	n := 1 + rng.IntN(propertyLines)
	for range n {
		b.WriteString(randomLine(rng))
	}
	if rng.IntN(10) == 0 {
		// Nothing after quit: bytes a server has not read when it closes make the client's
		// kernel see a reset, which can discard replies not yet read.
		b.WriteString("quit\r\n")
	}
	return b.String()
}

// randomLine draws one production of the grammar.
func randomLine(rng *rand.Rand) string {
	switch rng.IntN(10) {
	case 0, 1:
		return tubeLine(rng)
	case 2, 3:
		return putLine(rng)
	case 4, 5:
		return malformedJobLine(rng)
	case 6:
		return bareLine(rng)
	case 7:
		return overlongLine(rng)
	case 8:
		return pick(rng, []string{"", "hello", "PUT", "Use a", "peek", "use", "kick\t1", "\x00use a",
			"use a\x00", "use a\rb", "\r", "\n", "pause-tube", "pause-tube -x 1", "pause-tube a",
			"kick", "kick x", "kick 18446744073709551616", "reserve-with-timeout 18446744073709551616",
			"reserve-with-timeout -99999999999999999999"}) + "\r\n"
	default:
		return "stats-tube " + pick(rng, badNames) + "\r\n"
	}
}

// bareLine is a command without arguments followed by garbage (BAD_FORMAT), or exactly one
// whose reply does not depend on stored jobs.
func bareLine(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		return pick(rng, []string{"list-tube-used", "list-tubes-watched"}) + "\r\n"
	}
	return pick(rng, []string{"list-tube-used", "list-tubes-watched", "reserve", "stats",
		"peek-ready", "peek-delayed", "peek-buried", "list-tubes"}) +
		pick(rng, []string{" ", "x", " 1", "  "}) + "\r\n"
}

var goodNames = []string{"default", "a", "b", "tube-1", "A-Za-z0-9+/;.$_()", strings.Repeat("n", 200)}

var badNames = []string{"", " a", "a ", "-a", "a b", "a{", "a\tb", "é", strings.Repeat("n", 201)}

// tubeLine is use, watch or ignore with a good or bad name, or a tube listing.
func tubeLine(rng *rand.Rand) string {
	if rng.IntN(4) == 0 {
		return pick(rng, []string{"list-tube-used", "list-tubes-watched"}) + "\r\n"
	}
	name := pick(rng, goodNames)
	if rng.IntN(3) == 0 {
		name = pick(rng, badNames)
	}
	return pick(rng, []string{"use ", "watch ", "ignore ", "ignore "}) + name + "\r\n"
}

// putLine is a put with a body of the right size, a wrong one, one over the limit (sent in
// full, to be drained), or a malformed header.
func putLine(rng *rand.Rand) string {
	size := rng.IntN(20)
	head := "put " + pick(rng, []string{"0", "1024", "4294967295"}) + " 0 " + pick(rng, []string{"0", "1", "120"})
	body := strings.Repeat("b", size)
	switch rng.IntN(6) {
	case 0: // body longer or shorter than announced
		return head + " " + strconv.Itoa(size) + "\r\n" + strings.Repeat("b", size+1+rng.IntN(3)) + "\r\n"
	case 1: // over the limit
		size = 65536 + rng.IntN(100)
		return head + " " + strconv.Itoa(size) + pick(rng, []string{"", " junk"}) + "\r\n" + strings.Repeat("b", size) + "\r\n"
	case 2: // malformed header: the body is then read as a command line
		return "put " + pick(rng, numberTokens) + " 0 1 " + pick(rng, numberTokens) + "\r\n" + body + "\r\n"
	default:
		return head + " " + strconv.Itoa(size) + "\r\n" + body + "\r\n"
	}
}

// numberTokens are arguments, mostly malformed, for the numeric fields.
var numberTokens = []string{"", "x", "-1", "1x", "+1", "\t1", " 1", "1.5", "0x1",
	"4294967296", "18446744073709551616", "99999999999999999999999"}

// malformedJobLine is a command on job ids whose first argument cannot parse, so the reply is
// BAD_FORMAT (or UNKNOWN_COMMAND) whatever jobs are stored.
func malformedJobLine(rng *rand.Rand) string {
	bad := []string{"", "x", "-1", "1x", "\t1", "18446744073709551616", "0x1", "1 x"}
	cmd := pick(rng, []string{"peek ", "delete ", "touch ", "kick-job ", "stats-job ", "reserve-job ",
		"release ", "bury "})
	arg := pick(rng, bad)
	if (cmd == "release " || cmd == "bury ") && rng.IntN(2) == 0 {
		arg = "1 " + pick(rng, []string{"", "x", "-1", "4294967296", "1 x", "1 -1"})
	}
	if arg == "1 x" && cmd != "release " && cmd != "bury " {
		arg = "1 1" // trailing text after an id
	}
	return cmd + arg + "\r\n"
}

// overlongLine is a line of 200 to 500 bytes: around and past the 224-byte limit.
func overlongLine(rng *rand.Rand) string {
	n := 200 + rng.IntN(300)
	prefix := pick(rng, []string{"", "use ", "watch ", "put 0 0 1 1"})
	return prefix + strings.Repeat("x", max(0, n-len(prefix))) + "\r\n"
}

func pick(rng *rand.Rand, from []string) string { return from[rng.IntN(len(from))] }

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
