package delayq

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestHeadersValidation(t *testing.T) {
	t.Parallel()
	many := map[string]string{}
	for i := range MaxHeaders + 1 {
		many["h"+strings.Repeat("x", i)] = "v"
	}
	tests := []struct {
		name      string
		headers   map[string]string
		wantField string // "" when valid
	}{
		{"none", nil, ""},
		{"empty", map[string]string{}, ""},
		{"tokens and tab", map[string]string{"X-Trace_ID.v1!#$%&'*+^`|~": "a\tb é"}, ""},
		{"empty value", map[string]string{"a": ""}, ""},
		{"at the size limit", map[string]string{"a": strings.Repeat("v", MaxHeadersBytes-1)}, ""},
		{"too many", many, "headers"},
		{"too big", map[string]string{"a": strings.Repeat("v", MaxHeadersBytes)}, "headers"},
		{"too big in all", map[string]string{"a": strings.Repeat("v", 5000), "b": strings.Repeat("v", 5000)}, "headers"},
		{"empty name", map[string]string{"": "v"}, "headers"},
		{"space in name", map[string]string{"a b": "v"}, "headers[a b]"},
		{"colon in name", map[string]string{"a:": "v"}, "headers[a:]"},
		{"non-ASCII name", map[string]string{"é": "v"}, "headers[é]"},
		{"mixed-case duplicate", map[string]string{"Trace": "1", "trace": "2"}, "headers[trace]"},
		{"newline in value", map[string]string{"a": "x\ny"}, "headers[a]"},
		{"DEL in value", map[string]string{"a": "x\x7f"}, "headers[a]"},
		{"C1 control in value", map[string]string{"a": "x\u0085"}, "headers[a]"},
		{"not UTF-8", map[string]string{"a": "\xff"}, "headers[a]"},
	}
	for _, tt := range tests {
		err := Spec{Headers: tt.headers}.Validate(Limits{})
		var inv *InvalidError
		switch {
		case tt.wantField == "" && err != nil:
			t.Errorf("%s: %v, want valid", tt.name, err)
		case tt.wantField == "":
		case !errors.As(err, &inv) || inv.Field != tt.wantField || errors.Is(err, ErrTooLarge):
			t.Errorf("%s: %v, want an *InvalidError for %s", tt.name, err, tt.wantField)
		}
	}
}

// A job's headers are kept, names in lower case, through every step of its life, and returned
// wherever the job is.
func TestHeadersKeptThroughALife(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	want := map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "x-tenant": "acme"}
	spec := Spec{ID: "h", Body: []byte("b"), MaxRetries: 1,
		Headers: map[string]string{"TraceParent": want["traceparent"], "X-Tenant": "acme"}}
	check := func(step string, j *Job) {
		t.Helper()
		if diff := cmp.Diff(want, j.Headers); diff != "" {
			t.Fatalf("%s: headers (-want +got):\n%s", step, diff)
		}
	}
	check("enqueue", mustEnqueue(t, c, "hdr", spec))
	get := func(step string) {
		t.Helper()
		j, err := c.Get(ctx, "hdr", "h")
		if err != nil {
			t.Fatalf("%s: get: %v", step, err)
		}
		check(step, j)
	}
	get("get")
	listed, _, err := c.Jobs(ctx, "hdr", StateReady, 10, "")
	if err != nil || len(listed) != 1 {
		t.Fatalf("Jobs: %v, %v", listed, err)
	}
	check("list", listed[0])
	j := reserveOne(t, c, "hdr", 0)
	check("reserve", j)
	zero := time.Duration(0)
	if _, err := c.Nack(ctx, j.Lease(), NackOptions{Error: "boom", Delay: &zero}); err != nil {
		t.Fatalf("Nack: %v", err)
	}
	get("nack")
	j = reserveOne(t, c, "hdr", time.Second)
	if _, err := c.Release(ctx, j.Lease(), ReleaseOptions{}); err != nil {
		t.Fatalf("Release: %v", err)
	}
	get("release")
	if j, err = c.Reschedule(ctx, "hdr", "h", 0); err != nil {
		t.Fatalf("Reschedule: %v", err)
	}
	check("reschedule", j)
	j = reserveOne(t, c, "hdr", time.Second)
	if _, err := c.Nack(ctx, j.Lease(), NackOptions{Error: "boom", Dead: true}); err != nil {
		t.Fatalf("Nack: %v", err)
	}
	dead, _, err := c.DeadJobs(ctx, "hdr", 10, "")
	if err != nil || len(dead) != 1 {
		t.Fatalf("DeadJobs: %v, %v", dead, err)
	}
	check("dead", dead[0])
	if n, err := c.RequeueDead(ctx, "hdr", []string{"h"}); err != nil || n != 1 {
		t.Fatalf("RequeueDead: %d, %v", n, err)
	}
	get("requeue")
	check("reserve after requeue", reserveOne(t, c, "hdr", time.Second))
}

func TestHeadersInABatchAndASchedule(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	want := map[string]string{"tracestate": "a=1"}
	res, err := c.EnqueueBatch(ctx, "hdr", []Spec{
		{ID: "with", Headers: map[string]string{"TraceState": "a=1"}},
		{ID: "without"},
		{ID: "bad", Headers: map[string]string{"a b": "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || !cmp.Equal(want, res[0].Job.Headers) || res[1].Err != nil || res[1].Job.Headers != nil {
		t.Fatalf("batch results: %+v, %+v", res[0], res[1])
	}
	if !errors.Is(res[2].Err, ErrInvalid) {
		t.Fatalf("a job with a bad header name: %v, want invalid", res[2].Err)
	}
	for id, want := range map[string]map[string]string{"with": want, "without": nil} {
		j, err := c.Get(ctx, "hdr", id)
		if err != nil || !cmp.Equal(want, j.Headers) {
			t.Fatalf("Get(%s): %+v, %v; want headers %v", id, j, err, want)
		}
	}
	sch := mustPutSchedule(t, c, "traced", ScheduleSpec{Cron: "@every 1s", Topic: "ticks",
		Job: Spec{Body: []byte("b"), Headers: map[string]string{"TraceState": "a=1"}}})
	if diff := cmp.Diff(want, sch.Spec.Job.Headers); diff != "" {
		t.Fatalf("schedule's job headers (-want +got):\n%s", diff)
	}
	tick := ticksAfter(sch.CreatedAt, time.Second, 1)[0]
	j, err := c.Get(ctx, "ticks", TickID("traced", tick))
	if err != nil {
		t.Fatalf("the first tick's job: %v", err)
	}
	if diff := cmp.Diff(want, j.Headers); diff != "" {
		t.Fatalf("a tick's job headers (-want +got):\n%s", diff)
	}
}

// FuzzHeaders holds accepted headers to the rules they state: lower-case HTTP-token names,
// UTF-8 values without control characters but tab, and accepted again as they are.
func FuzzHeaders(f *testing.F) {
	f.Add("TraceParent", "00-ab", "x-a", "1")
	f.Add("a", "b\tc", "A", "d")
	f.Add("a b", "\n", "é", "\xff")
	f.Fuzz(func(t *testing.T, n1, v1, n2, v2 string) {
		got, err := normalizeHeaders(map[string]string{n1: v1, n2: v2})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		for name, value := range got {
			if name == "" || name != strings.ToLower(name) || strings.IndexFunc(name, func(r rune) bool {
				return r > 0x7e || !isTokenChar(byte(r))
			}) >= 0 {
				t.Fatalf("accepted the name %q", name)
			}
			if !utf8.ValidString(value) || strings.IndexFunc(value, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }) >= 0 {
				t.Fatalf("accepted the value %q", value)
			}
		}
		again, err := normalizeHeaders(got)
		if err != nil || !cmp.Equal(got, again) {
			t.Fatalf("normalized headers %q are not accepted as they are: %q, %v", got, again, err)
		}
	})
}

// Header maps that Lua's cmsgpack might re-encode differently survive every script that
// rewrites a record: names that look like integers (a table of keys 1..n is an array to
// cmsgpack), empty values, the most entries, unicode values.
func TestHeadersSurviveRewrites(t *testing.T) {
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
		if _, err := c.Release(ctx, j.Lease(), ReleaseOptions{}); err != nil {
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
