package beanstalkd

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/beanstalkd/proto"
)

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
