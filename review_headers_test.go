package delayq

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Header maps that Lua's cmsgpack might re-encode differently survive every script that
// rewrites a record: names that look like integers (a table of keys 1..n is an array to
// cmsgpack), empty values, the most entries, unicode values.
func TestReviewHeadersSurviveRewrites(t *testing.T) {
	t.Parallel()
	full := map[string]string{}
	for i := 1; i <= MaxHeaders; i++ {
		full[fmt.Sprint(i)] = strings.Repeat("é", i)
	}
	cases := map[string]map[string]string{
		"integer names":   {"1": "a", "2": "b"},
		"one integer":     {"1": ""},
		"empty values":    {"a": "", "b": ""},
		"32 integer keys": full,
		"unicode":         {"x-name": "日本語 \t ✓", "0": "zero"},
		"big value":       {"x": strings.Repeat("v", MaxHeadersBytes-1)},
	}
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	n := 0
	for name, h := range cases {
		n++
		topic := fmt.Sprintf("rw%d", n)
		check := func(step string, j *Job) {
			t.Helper()
			if diff := cmp.Diff(h, j.Headers); diff != "" {
				t.Fatalf("%s: %s: headers (-want +got):\n%s", name, step, diff)
			}
		}
		get := func(step string) {
			t.Helper()
			j, err := c.Get(ctx, topic, "h")
			if err != nil {
				t.Fatalf("%s: %s: get: %v", name, step, err)
			}
			check(step, j)
		}
		check("enqueue", mustEnqueue(t, c, topic, Spec{ID: "h", Body: []byte("b"), MaxRetries: 5, TTR: time.Second, Headers: h}))
		j := reserveOne(t, c, topic, 0)
		zero := time.Duration(0)
		if _, err := c.Nack(ctx, j.Lease(), NackOptions{Error: "boom", Delay: &zero}); err != nil {
			t.Fatal(err)
		}
		get("nack")
		j = reserveOne(t, c, topic, time.Second)
		if err := c.Release(ctx, j.Lease()); err != nil {
			t.Fatal(err)
		}
		get("release")
		if _, err := c.Reschedule(ctx, topic, "h", 0); err != nil {
			t.Fatal(err)
		}
		get("reschedule")
		reserveOne(t, c, topic, time.Second)
		advance(c, 2*time.Second) // the lease expires: the ttr is exceeded
		advance(c, 20*time.Minute)
		j = reserveOne(t, c, topic, time.Second)
		check("after an expired lease", j)
		if _, err := c.Nack(ctx, j.Lease(), NackOptions{Error: "boom", Dead: true}); err != nil {
			t.Fatal(err)
		}
		get("dead")
		if n, err := c.RequeueDead(ctx, topic, []string{"h"}); err != nil || n != 1 {
			t.Fatalf("RequeueDead: %d, %v", n, err)
		}
		get("requeue")
		check("reserve after requeue", reserveOne(t, c, topic, time.Second))
	}
}
