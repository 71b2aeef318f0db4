package beanstalkd

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/internal/beanstalkd/proto"
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
		holders := []*client{dial(t, addr), dial(t, addr), dial(t, addr)}
		holders[0].send("use a\r\n")
		holders[0].expect("USING a\r\n")
		holders[1].send("watch b\r\n")
		holders[1].expect("WATCHING 2\r\n")
		holders[2].send("use c\r\nwatch c\r\nreserve-with-timeout 20\r\n")
		holders[2].expect("USING c\r\n")
		holders[2].expect("WATCHING 2\r\n")
		testwait.For(t, conversationTimeout, "a connection waiting on c", func() bool {
			return strings.Contains(converse(t, addr, []byte("stats-tube c\r\n")), "current-waiting: 1\n")
		})
		got[i] = append(got[i], converse(t, addr, []byte("list-tubes\r\nstats-tube b\r\nstats-tube c\r\nstats-tube zz\r\n")))
		// a goes: beanstalkd moves the last tube into its place (default, c, b).
		holders[0].send("quit\r\n")
		holders[0].expectClosed()
		got[i] = append(got[i], converse(t, addr, []byte("list-tubes\r\nstats-tube a\r\n")))
		holders[1].send("quit\r\n")
		holders[1].expectClosed()
		got[i] = append(got[i], converse(t, addr, []byte("list-tubes\r\n")))
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Errorf("(-beanstalkd +ours):\n%s", diff)
	}
}
