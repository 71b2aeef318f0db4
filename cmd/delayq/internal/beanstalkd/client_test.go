package beanstalkd

import (
	"fmt"
	"testing"
	"time"

	"github.com/beanstalkd/go-beanstalk"
	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalktest"
)

// TestGoBeanstalkClientSeesTheSame runs one conversation through the go-beanstalk client
// library against a fresh beanstalkd and a fresh server, and wants the same transcript: ids,
// bodies, priority order over several tubes, release, touch, and the errors the client maps
// (NOT_FOUND, TIMED_OUT, DEADLINE_SOON).
func TestGoBeanstalkClientSeesTheSame(t *testing.T) {
	real := clientTranscript(t, beanstalktest.Start(t).Addr())
	for name, b := range map[string]proto.Backend{"memory": newMemBackend(), "delayq": newDelayqBackend(t)} {
		ours := clientTranscript(t, startServer(t, Config{Backend: b}))
		if diff := cmp.Diff(real, ours); diff != "" {
			t.Errorf("beanstalkd vs ours on the %s backend (-beanstalkd +ours):\n%s", name, diff)
		}
	}
}

// clientTranscript runs the conversation and records every result.
func clientTranscript(t *testing.T, addr string) []string {
	c, err := beanstalk.DialTimeout("tcp", addr, conversationTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var log []string
	note := func(what string, v ...any) { log = append(log, fmt.Sprint(append([]any{what}, v...)...)) }

	jobs := beanstalk.NewTube(c, "jobs")
	other := beanstalk.NewTube(c, "other")
	for _, p := range []struct {
		tube *beanstalk.Tube
		body string
		pri  uint32
	}{{jobs, "one", 10}, {other, "two", 5}, {jobs, "three", 10}, {other, "four", 4294967295}} {
		id, err := p.tube.Put([]byte(p.body), p.pri, 0, 10*time.Second)
		note("put ", p.body, " ", id, " ", err)
	}
	both := beanstalk.NewTubeSet(c, "jobs", "other")
	first, body, err := both.Reserve(time.Second)
	note("reserve ", first, " ", string(body), " ", err)
	id, body, err := both.Reserve(time.Second)
	note("reserve ", id, " ", string(body), " ", err)
	note("release ", c.Release(id, 1, 0))
	id, body, err = both.Reserve(time.Second)
	note("reserve ", id, " ", string(body), " ", err)
	note("touch ", c.Touch(id))
	note("delete ", c.Delete(id))
	note("delete again ", c.Delete(id))
	note("delete 999 ", c.Delete(999))
	body, err = c.Peek(first)
	note("peek ", string(body), " ", err)
	for range 2 {
		id, body, err = both.Reserve(0)
		note("reserve ", id, " ", string(body), " ", err)
	}
	_, _, err = both.Reserve(0)
	note("reserve empty ", err)

	short := beanstalk.NewTube(c, "short")
	id, err = short.Put([]byte("quick"), 0, 0, time.Second)
	note("put short ", id, " ", err)
	watchShort := beanstalk.NewTubeSet(c, "short")
	id, body, err = watchShort.Reserve(time.Second)
	note("reserve short ", id, " ", string(body), " ", err)
	_, _, err = watchShort.Reserve(time.Second)
	note("reserve while holding a job about to time out ", err)
	return log
}
