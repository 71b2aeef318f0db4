package beanstalkd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/backend"
	"github.com/delayq/delayq/delayqtest"
	"github.com/delayq/delayq/internal/testwait"
)

// TestPauseTube: pause-tube holds a tube's jobs back until the pause ends, on every server.
func TestPauseTube(t *testing.T) {
	// Wants a reserve on a paused tube holding a ready job to
	// get it once the pause ends, and not before.
	t.Run("reserve waits for the end", func(t *testing.T) {
		differ(t, func(t *testing.T, addr string) string {
			var tr transcript
			a, b := dial(t, addr), dial(t, addr)
			tr.add("put", a.do("put 0 0 10 1", "j"))
			tr.add("pause", a.do("pause-tube default 1"))
			tr.add("reserve now", b.do("reserve-with-timeout 0"))
			start := time.Now()
			tr.add("reserve waiting", b.do("reserve-with-timeout 4"))
			waited := time.Since(start)
			tr.add("waited about the pause", fmt.Sprint(waited > 500*time.Millisecond && waited < 2500*time.Millisecond))
			tr.add("stats-tube", a.do("stats-tube default"))
			return tr.String()
		})
	})

	// Wants pause-tube of a tube that holds no job but is watched to
	// answer PAUSED, and the tube listed and paused.
	t.Run("watched empty tube", func(t *testing.T) {
		differ(t, func(t *testing.T, addr string) string {
			var tr transcript
			a, b := dial(t, addr), dial(t, addr)
			tr.add("watch", a.do("watch p"))
			tr.add("pause", b.do("pause-tube p 60"))
			tr.add("list-tubes", b.do("list-tubes"))
			tr.add("stats-tube", b.do("stats-tube p"))
			tr.add("use", b.do("use p"))
			tr.add("put", b.do("put 0 0 10 1", "j"))
			tr.add("ignore", a.do("ignore default"))
			tr.add("reserve", a.do("reserve-with-timeout 0"))
			tr.add("stats-tube", b.do("stats-tube p"))
			return tr.String()
		})
	})

	// Wants a reserve watching a paused tube and another to
	// skip the paused one: TIMED_OUT when only the paused tube has a job, the other's job else.
	t.Run("reserve over a paused and an open tube", func(t *testing.T) {
		differ(t, func(t *testing.T, addr string) string {
			var tr transcript
			a := dial(t, addr)
			tr.add("watch", a.do("watch p"))
			tr.add("pause", a.do("pause-tube p 60"))
			tr.add("reserve empty", a.do("reserve-with-timeout 0"))
			tr.add("use", a.do("use p"))
			tr.add("put", a.do("put 0 0 10 1", "p"))
			tr.add("reserve paused only", a.do("reserve-with-timeout 0"))
			tr.add("reserve paused only, waiting", a.do("reserve-with-timeout 1"))
			tr.add("use", a.do("use default"))
			tr.add("put", a.do("put 9 0 10 1", "d"))
			tr.add("reserve", a.do("reserve-with-timeout 0"))
			tr.add("stats-tube", a.do("stats-tube p"))
			return tr.String()
		})
	})

	// A pause-tube is kept in Redis, so another server (or
	// the same one restarted) reports it and resumes the tube when it ends.
	t.Run("outlives the server that paused", func(t *testing.T) {
		rdb := delayqtest.NewRedis(t)
		newBackend := func() *backend.Backend {
			c, err := delayq.New(context.Background(), rdb, delayq.Config{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			b := backend.New(c, slog.New(slog.DiscardHandler))
			t.Cleanup(b.Close)
			return b
		}
		first := newBackend()
		a := startServer(t, Config{Backend: first})
		if got := converse(t, a, []byte("use p\r\nput 0 0 10 1\r\nx\r\npause-tube p 1\r\n")); got != "USING p\r\nINSERTED 1\r\nPAUSED\r\n" {
			t.Fatalf("pausing: %q", got)
		}
		first.Close() // stops before the pause ends
		second := newBackend()
		if err := second.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		b := startServer(t, Config{Backend: second})
		if got := converse(t, b, []byte("stats-tube p\r\n")); !strings.Contains(got, "\npause: 1\n") {
			t.Errorf("another server's stats-tube of the paused tube:\n%s", got)
		}
		if got := converse(t, b, []byte("watch p\r\nreserve-with-timeout 0\r\n")); got != "WATCHING 2\r\nTIMED_OUT\r\n" {
			t.Errorf("a reserve while paused: %q", got)
		}
		testwait.For(t, 10*time.Second, "the other server to resume the tube", func() bool {
			return converse(t, b, []byte("watch p\r\nreserve-with-timeout 0\r\n")) == "WATCHING 2\r\nRESERVED 1 1\r\nx\r\n"
		})
	})

	// Pause-tube with 0 seconds ends a pause, and a reserve
	// right after it takes the job, as beanstalkd.
	t.Run("zero resumes at once", func(t *testing.T) {
		differ(t, func(t *testing.T, addr string) string {
			return script(t, addr, "use p", "put 0 0 10 1", "body:x", "pause-tube p 30", "watch p",
				"reserve-with-timeout 0", "pause-tube p 0", "reserve-with-timeout 0", "stats-tube p")
		})
	})

	// A tube a connection uses but that holds no job can be
	// paused, and a job put into it then waits for the pause's end, as beanstalkd.
	t.Run("tube without jobs", func(t *testing.T) {
		differ(t, func(t *testing.T, addr string) string {
			return script(t, addr, "use q", "pause-tube q 30", "stats-tube q", "put 0 0 10 1", "body:x",
				"watch q", "reserve-with-timeout 0", "list-tubes")
		})
	})

	// A paused tube whose jobs are gone and that no
	// connection uses any more is gone, as in beanstalkd: list-tubes leaves it out and stats-tube
	// says NOT_FOUND.
	t.Run("deleted tube forgets its pause", func(t *testing.T) {
		differ(t, func(t *testing.T, addr string) string {
			first := script(t, addr, "use gone", "put 0 0 10 1", "body:x", "pause-tube gone 30", "peek-ready", "delete 1")
			var second string
			// beanstalkd drops the tube once the first connection has gone: wait for that.
			deadline := time.Now().Add(5 * time.Second)
			for {
				second = script(t, addr, "list-tubes", "stats-tube gone")
				if !strings.Contains(second, "name: gone") && !strings.Contains(second, "- gone") || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			return first + second
		})
	})

	// A second pause-tube that ends later keeps the tube paused
	// past the first one's end.
	t.Run("second pause extends", func(t *testing.T) {
		addr := startServer(t, Config{Backend: sharedBackends(t)()})
		if got := converse(t, addr, []byte("use p\r\nput 0 0 10 1\r\nx\r\npause-tube p 1\r\npause-tube p 3\r\n")); got != "USING p\r\nINSERTED 1\r\nPAUSED\r\nPAUSED\r\n" {
			t.Fatalf("pausing: %q", got)
		}
		time.Sleep(1500 * time.Millisecond) // past the first pause's end
		if got := converse(t, addr, []byte(reserveNow)); got != "WATCHING 2\r\nTIMED_OUT\r\n" {
			t.Errorf("a reserve after the first pause's end, before the second's: %q", got)
		}
		testwait.For(t, 10*time.Second, "the tube to resume", func() bool {
			return converse(t, addr, []byte(reserveNow)) == "WATCHING 2\r\nRESERVED 1 1\r\nx\r\n"
		})
	})

	// A pause-tube on another server that ends sooner
	// than the first ends the pause then, on both servers; one that ends later, on a third
	// server, keeps the tube paused past the earlier ends.
	t.Run("shortened on another server", func(t *testing.T) {
		newBackend := sharedBackends(t)
		a := startServer(t, Config{Backend: newBackend()})
		b := startServer(t, Config{Backend: newBackend()})
		converse(t, a, []byte("use p\r\nput 0 0 10 1\r\nx\r\npause-tube p 60\r\n"))
		converse(t, b, []byte("pause-tube p 1\r\n"))
		testwait.For(t, 10*time.Second, "the shortened pause to end", func() bool {
			return converse(t, a, []byte(reserveNow)) == "WATCHING 2\r\nRESERVED 1 1\r\nx\r\n"
		})
		converse(t, b, []byte("pause-tube p 1\r\n"))
		converse(t, a, []byte("pause-tube p 4\r\n"))
		time.Sleep(1500 * time.Millisecond)
		if got := converse(t, b, []byte(reserveNow)); got != "WATCHING 2\r\nTIMED_OUT\r\n" {
			t.Errorf("a reserve after the shorter pause's end, before the longer's: %q", got)
		}
	})

	// A server that is running (started before the
	// pause) resumes a tube another server paused and then stopped, when the pause ends.
	t.Run("ends when its server stops", func(t *testing.T) {
		newBackend := sharedBackends(t)
		other := newBackend()
		b := startServer(t, Config{Backend: other})
		first := newBackend()
		a := startServer(t, Config{Backend: first})
		if got := converse(t, a, []byte("use p\r\nput 0 0 10 1\r\nx\r\npause-tube p 1\r\n")); got != "USING p\r\nINSERTED 1\r\nPAUSED\r\n" {
			t.Fatalf("pausing: %q", got)
		}
		first.Close()
		testwait.For(t, 10*time.Second, "the running server to resume the tube", func() bool {
			return converse(t, b, []byte(reserveNow)) == "WATCHING 2\r\nRESERVED 1 1\r\nx\r\n"
		})
	})

	// A reserve waiting on a paused tube (alone,
	// or with another watched tube) gets the job soon after the pause ends, well before its own
	// timeout, as with beanstalkd.
	t.Run("waiting reserve wakes at the end", func(t *testing.T) {
		for _, watch := range []string{"watch p", "watch p\r\nwatch other"} {
			t.Run(strings.ReplaceAll(watch, "\r\n", ","), func(t *testing.T) {
				addr := startServer(t, Config{Backend: sharedBackends(t)()})
				if got := converse(t, addr, []byte("use p\r\nput 0 0 10 1\r\nx\r\npause-tube p 1\r\n")); got != "USING p\r\nINSERTED 1\r\nPAUSED\r\n" {
					t.Fatalf("pausing: %q", got)
				}
				c := dial(t, addr)
				c.send(watch)
				for range strings.Count(watch, "watch") {
					c.read(conversationTimeout)
				}
				start := time.Now()
				c.send("reserve-with-timeout 8")
				if got := c.read(10 * time.Second); got != "RESERVED 1 1\r\nx\r\n" {
					t.Fatalf("a reserve waiting on the paused tube: %q after %s", got, time.Since(start))
				}
				if d := time.Since(start); d > 4*time.Second {
					t.Errorf("a reserve waiting on a tube paused for 1 s got its job after %s", d)
				}
			})
		}
	})

	// Kick and kick-job in a paused tube make jobs ready, which a
	// reserve still does not take until the pause ends, as beanstalkd.
	t.Run("kick in a paused tube", func(t *testing.T) {
		differ(t, func(t *testing.T, addr string) string {
			return script(t, addr, "use kp", "watch kp", "ignore default", "put 0 0 10 1", "body:a", "put 0 100 10 1", "body:b",
				"put 0 200 10 1", "body:c", "reserve-with-timeout 0", "bury 1 0", "pause-tube kp 30",
				"kick 1", "kick-job 3", "stats-tube kp", "reserve-with-timeout 0", "kick 5", "stats-tube kp",
				"reserve-with-timeout 0", "peek-ready")
		})
	})

	// A tube whose name is no valid topic name (so its topic is a
	// hash) is paused, reported and resumed like any other.
	t.Run("hashed tube", func(t *testing.T) {
		addr := startServer(t, Config{Backend: sharedBackends(t)()})
		if got := converse(t, addr, []byte("use a+b\r\nput 0 0 10 1\r\nx\r\npause-tube a+b 1\r\nstats-tube a+b\r\n")); !strings.Contains(got, "\npause: 1\n") || !strings.Contains(got, "name: a+b\n") {
			t.Fatalf("pausing a+b: %q", got)
		}
		if got := converse(t, addr, []byte("watch a+b\r\nreserve-with-timeout 0\r\n")); got != "WATCHING 2\r\nTIMED_OUT\r\n" {
			t.Errorf("a reserve while a+b is paused: %q", got)
		}
		testwait.For(t, 10*time.Second, "a+b to resume", func() bool {
			return converse(t, addr, []byte("watch a+b\r\nreserve-with-timeout 0\r\n")) == "WATCHING 2\r\nRESERVED 1 1\r\nx\r\n"
		})
	})
}

// TestTubesThatAreNotTopicNames wants tubes whose names are not delayq topic names to behave
// as any other: listed, with stats, their name in stats-job.
func TestTubesThatAreNotTopicNames(t *testing.T) {
	long := strings.Repeat("l", 150)
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dial(t, addr), dial(t, addr)
		for i, tube := range []string{"a+b", "(x)", "_y", "$z;", long, "a/b"} {
			tr.add("use", a.do("use "+tube))
			tr.add("put", a.do("put 0 0 10 1", "j"))
			tr.add("stats-job", b.do(fmt.Sprintf("stats-job %d", i+1)))
			tr.add("peek-ready", a.do("peek-ready"))
			tr.add("stats-tube", b.do("stats-tube "+tube))
		}
		tr.add("use", a.do("use default"))
		tr.add("list-tubes (sorted)", sortedList(b.do("list-tubes")))
		tr.add("watch", b.do("watch _y"))
		tr.add("ignore", b.do("ignore default"))
		tr.add("reserve", b.do("reserve-with-timeout 0"))
		tr.add("delete", b.do("delete 3"))
		tr.add("stats-tube", b.do("stats-tube _y"))
		tr.add("pause", b.do("pause-tube (x) 60"))
		tr.add("stats-tube", b.do("stats-tube (x)"))
		return tr.String()
	})
}

const reserveNow = "watch p\r\nreserve-with-timeout 0\r\n"
