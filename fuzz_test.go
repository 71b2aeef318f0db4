package delayq

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/delayq/delayq/internal/ids"
	"github.com/delayq/delayq/internal/redistest"
)

func FuzzValidateID(f *testing.F) {
	for _, s := range []string{"a", "order:1", "a b", "", "\xff", "é", "\u200b", "{tag}", string(make([]byte, 257))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := ValidateID(id)
		if err == nil && (id == "" || len(id) > 256 || !utf8.ValidString(id) || bytes.ContainsAny([]byte(id), " \t\r\n")) {
			t.Fatalf("ValidateID(%q) accepted a bad id", id)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("ValidateID(%q) = %v, not ErrInvalid", id, err)
		}
	})
}

// FuzzValidateTopic holds the topic check to the rule it states, as a regular expression.
func FuzzValidateTopic(f *testing.F) {
	rule := regexp.MustCompile(topicPattern)
	for _, s := range []string{"a", "orders.v2", "a_b-c", "", "-a", ".a", "_a", "a b", "a{b}", "é", "a\n",
		strings.Repeat("a", 128), strings.Repeat("a", 129), "A9", "9", "a:b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, topic string) {
		err := ValidateTopic(topic)
		if want := rule.MatchString(topic); (err == nil) != want {
			t.Fatalf("ValidateTopic(%q) = %v; the rule %s says valid = %v", topic, err, topicPattern, want)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("ValidateTopic(%q) = %v, not ErrInvalid", topic, err)
		}
	})
}

func FuzzSpecValidation(f *testing.F) {
	f.Add("id", int64(0), int64(0), int64(0), 0, 0, "http://x.example/hook")
	f.Add("", int64(-1), int64(1), int64(-5), -1, 2000, "ftp://")
	f.Add("a b", int64(1<<62), int64(1<<40), int64(1<<50), 1<<20, -1<<20, "")
	f.Fuzz(func(t *testing.T, id string, delayMs, ttrMs, backoffMs int64, retries, priority int, callback string) {
		var l Limits
		l.setDefaults()
		s := Spec{
			ID: id, Delay: time.Duration(delayMs) * time.Millisecond, TTR: time.Duration(ttrMs) * time.Millisecond,
			MaxRetries: retries, Priority: priority, CallbackURL: callback,
			Backoff: []time.Duration{time.Duration(backoffMs) * time.Millisecond},
		}
		j, err := l.toNewJob(s, ids.New)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if j.DelayMs < 0 || j.TTRMs < l.MinTTR.Milliseconds() || j.TTRMs > l.MaxTTR.Milliseconds() ||
			j.MaxRetries < 0 || j.MaxRetries > l.MaxRetries || j.Priority < -MaxPriority || j.Priority > MaxPriority ||
			j.BackoffMs[0] < 0 || ValidateID(j.ID) != nil {
			t.Fatalf("accepted an out-of-range job: %+v", j)
		}
	})
}

// FuzzJobRoundTrip stores arbitrary ids and bodies and reads them back: once as the Go store
// encoded the record, and again after a failed attempt made the scripts rewrite it.
func FuzzJobRoundTrip(f *testing.F) {
	for _, seed := range []struct {
		id   string
		body []byte
		pri  int
	}{
		{"a", nil, 0}, {"b", []byte{0, 1, 2, 0xff, 0xc0}, 5}, {"long", bytes.Repeat([]byte("x"), 70000), -1000},
		{"ü-ñ", []byte(`{"k":[1,2,3]}`), 1000}, {"nil-bytes", []byte("\xc0\xc0\xc0"), 1},
	} {
		f.Add(seed.id, seed.body, seed.pri)
	}
	rdb := redistest.Standalone(f).Client(f)
	c, err := New(context.Background(), rdb, Config{Partitions: 3})
	if err != nil {
		f.Fatal(err)
	}
	backoff := []time.Duration{time.Hour, 2 * time.Hour}
	f.Fuzz(func(t *testing.T, id string, body []byte, priority int) {
		if ValidateID(id) != nil || len(body) > 1<<20 || priority < -MaxPriority || priority > MaxPriority {
			return
		}
		ctx := context.Background()
		c.Cancel(ctx, "fuzz", id)
		in, err := c.Enqueue(ctx, "fuzz", Spec{ID: id, Body: body, Priority: priority, Backoff: backoff})
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Get(ctx, "fuzz", id)
		if err != nil {
			t.Fatal(err)
		}
		if out.ID != id || !bytes.Equal(out.Body, body) || out.Priority != priority || !out.RunAt.Equal(in.RunAt) {
			t.Fatalf("round trip: in %+v, out %+v", in, out)
		}
		jobs, err := c.Reserve(ctx, "fuzz", ReserveOptions{})
		if err != nil || len(jobs) != 1 || jobs[0].ID != id || !bytes.Equal(jobs[0].Body, body) || jobs[0].Attempts != 1 {
			t.Fatalf("Reserve: %v, %+v", err, jobs)
		}
		if _, err := c.Nack(ctx, Lease{Topic: "fuzz", ID: id, Token: jobs[0].LeaseToken}, NackOptions{Error: id}); err != nil {
			t.Fatal(err)
		}
		again, err := c.Get(ctx, "fuzz", id)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Body, body) || again.Priority != priority || again.Attempts != 1 || again.LastError != id ||
			again.State != StateDelayed || !slices.Equal(again.Backoff, backoff) || !again.CreatedAt.Equal(in.CreatedAt) {
			t.Fatalf("after a failed attempt: in %+v, out %+v", in, again)
		}
	})
}
