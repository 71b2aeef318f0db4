package beanstalkd

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDeadlineSoonWithAReadyJob: a connection whose reserved job's deadline is soon
// still reserves a ready job; with none, DEADLINE_SOON, as beanstalkd.
func TestDeadlineSoonWithAReadyJob(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		c := dial(t, addr)
		var tr transcript
		tr.add("put", c.do("put 0 0 2 1", "a"))
		tr.add("put", c.do("put 0 0 2 1", "b"))
		tr.add("reserve", c.do("reserve"))
		tr.add("reserve-with-timeout 5", c.do("reserve-with-timeout 5")) // b: ready
		tr.add("reserve-with-timeout 5", c.do("reserve-with-timeout 5")) // DEADLINE_SOON in about 1 s
		tr.add("reserve-with-timeout 0", c.do("reserve-with-timeout 0"))
		return tr.String()
	})
}

// TestWaitingReserveRepliesLikeBeanstalkd sends streams that leave a client waiting in
// reserve (the sending side stays open) and wants the same replies, with their timing: a
// reserve that finds a held job's TTR about to run out answers DEADLINE_SOON, at once or
// when that moment comes; reserve-with-timeout answers TIMED_OUT when its time is up.
func TestWaitingReserveRepliesLikeBeanstalkd(t *testing.T) {
	s := startServers(t, newMemBackend())
	cases := []struct {
		stream  string
		replies []string
	}{
		{"put 0 0 1 1\r\na\r\nreserve\r\nreserve\r\n", []string{"INSERTED", "RESERVED", "a", "DEADLINE_SOON"}},
		// Tubes of their own: the job of the first case goes back to default when it ends.
		{"use w1\r\nwatch w1\r\nignore default\r\nput 0 0 2 1\r\nb\r\nreserve-with-timeout 5\r\nreserve\r\n",
			[]string{"USING", "WATCHING", "WATCHING", "INSERTED", "RESERVED", "b", "DEADLINE_SOON"}},
		{"use w2\r\nwatch w2\r\nignore default\r\nput 0 0 2 1\r\nc\r\nreserve\r\ntouch 0\r\nreserve-with-timeout 0\r\n",
			[]string{"USING", "WATCHING", "WATCHING", "INSERTED", "RESERVED", "c", "NOT_FOUND", "TIMED_OUT"}},
		{"watch w3\r\nignore default\r\nreserve-with-timeout 1\r\n", []string{"WATCHING", "WATCHING", "TIMED_OUT"}},
	}
	for _, c := range cases {
		var wg sync.WaitGroup
		got := make([][]string, 2)
		took := make([]time.Duration, 2)
		for i, addr := range []string{s.real, s.ours} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], took[i] = replyWords(t, addr, c.stream, len(c.replies))
			}()
		}
		wg.Wait()
		for i, who := range []string{"beanstalkd", "ours"} {
			if strings.Join(got[i], " ") != strings.Join(c.replies, " ") {
				t.Errorf("%s, stream %q: got %q, want %q", who, c.stream, got[i], c.replies)
			}
		}
		if d := took[1] - took[0]; d > 300*time.Millisecond || d < -300*time.Millisecond {
			t.Errorf("stream %q: beanstalkd answered in %v, ours in %v", c.stream, took[0], took[1])
		}
	}
}

// replyWords sends stream and reads n reply lines, keeping each one's first word, and how
// long the last one took.
func replyWords(t *testing.T, addr, stream string, n int) ([]string, time.Duration) {
	c, err := net.DialTimeout("tcp", addr, conversationTimeout)
	if err != nil {
		t.Error(err)
		return nil, 0
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(conversationTimeout))
	start := time.Now()
	if _, err := io.WriteString(c, stream); err != nil {
		t.Error(err)
		return nil, 0
	}
	br := bufio.NewReader(c)
	var words []string
	for range n {
		line, err := br.ReadString('\n')
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("%s: %v", addr, err)
			}
			break
		}
		words = append(words, strings.Fields(line + " ")[0])
	}
	return words, time.Since(start)
}
