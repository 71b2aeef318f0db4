package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// reviewKeysCases are adversarial bodies: escapes that spell the same key differently, BOMs,
// NUL bytes, surrogates, huge numbers, deep arrays in raw bodies, long keys.
var reviewKeysCases = []string{
	"\xef\xbb\xbf{\"id\":\"x\"}", "{\"id\":\"x\"}\xef\xbb\xbf", "{\"\xef\xbb\xbfid\":\"x\"}",
	"{\"id\":\"x\"}\x00", "{\"id\x00\":\"x\"}", `{"\u0000":1,"\u0000":2}`, `{"headers":{"\u0000":"1","\u0000":"2"}}`,
	`{"headers":{"a\u0000":"1","a":"2"}}`, `{"headers":{"😀":"1","\ud83d\ude00":"2"}}`,
	`{"headers":{"\ud83d\ude00":"1","\uD83D\uDE00":"2"}}`, `{"headers":{"\ud83d":"1","\ude00":"2"}}`,
	`{"headers":{"\ud83d\u0041":"1","\ufffdA":"2"}}`, `{"headers":{"\/":"1","/":"2"}}`,
	`{"headers":{"\b\f\n\r\t":"1","\u0008\u000c\u000A\u000d\u0009":"2"}}`, `{"headers":{"\"":"1","\u0022":"2"}}`,
	`{"headers":{"\\":"1","\u005c":"2"}}`, `{"headers":{"\a":"1"}}`, `{"headers":{"\u00":"1"}}`, `{"headers":{"\u":"1"}}`,
	`{"headers":{"\U0041":"1"}}`, `{"headers":{"\x41":"1"}}`, `{"headers":{"\'":"1"}}`, `{"\u0069\u0064":"a","id":"b"}`,
	`{"\u0049\u0044":"a"}`, `{"İd":"a"}`, `{"ıd":"a"}`, `{"id":"a","İd":"b"}`, `{"ttr_ms":1,"TTR_MS":2}`,
	`{"delay_ms":` + strings.Repeat("9", 400) + `}`, `{"delay_ms":-` + strings.Repeat("9", 400) + `}`,
	`{"delay_ms":1` + strings.Repeat("0", 400) + `e-400}`, `{"delay_ms":1.0}`, `{"delay_ms":1e2}`, `{"delay_ms":-0}`,
	`{"body":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
	`{"body":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
	`{"body":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `,"id":"a","id":"b"}`,
	`{"body":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat("}", 5000) + `,"id":"a","id":"b"}`,
	`{"jobs":[` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `]}`,
	`{"jobs":[{"body":` + strings.Repeat("[", 9997) + strings.Repeat("]", 9997) + `,"id":"a","id":"b"}]}`,
	`{"headers":{"` + strings.Repeat("k", 1<<16) + `":"1","` + strings.Repeat("k", 1<<16) + `":"2"}}`,
	`{"headers":{"` + strings.Repeat(`\u006b`, 1<<14) + `":"1","` + strings.Repeat("k", 1<<14) + `":"2"}}`,
	`{"job":{"headers":{"a":"1","\u0061":"2"}},"cron":"@hourly"}`, `{"job":{"ID":"x"},"cron":"@hourly"}`,
	`{"job":{"body":{"a":1,"a":2},"Body":1}}`, `{"job":null,"job":null}`, `{"jobs":null}`, `{"jobs":[null]}`,
	`{"headers":null,"Headers":null}`, `{"headers":{"a":null}}`, `{"headers":{"a":1}}`, `{"headers":[]}`,
	`{"id":"x"}` + strings.Repeat(" ", 1000), "{\"id\":\"x\"}\u2028", "{\"id\":\"\u2028\"}", `{"id":"\u2028"}`,
	"{\r\n\t\"id\"\r\n:\r\n\"x\"\r\n}", "{\"id\":\"x\"\f}", "{\"id\":\"x\"\v}", "{\"id\":\"x\"\u00a0}",
	`{"id":tRue}`, `{"id":nulL}`, `{"id":NaN}`, `{"id":Infinity}`, `{"id":+1}`, `{"id":.5}`, `{"id":0x10}`,
	`{"id":1e}`, `{"id":1E+5,"id":1}`, `{"id":-01,"id":1}`, `{"id":"x",/*c*/"id":"y"}`, `{'id':1,'id':2}`,
}

// TestReviewCheckKeysMatchesTokenWalkOnAdversarialBodies holds checkKeys and decodeStrict to
// the old answers on reviewKeysCases.
func TestReviewCheckKeysMatchesTokenWalkOnAdversarialBodies(t *testing.T) {
	t.Parallel()
	for _, c := range reviewKeysCases {
		sameKeysAnswer(t, []byte(c))
	}
}

// keysCheckTime returns how long decodeStrict takes on data into an enqueue request.
func keysCheckTime(data []byte) time.Duration {
	start := time.Now()
	for range 3 {
		_ = checkKeysFor(data)
	}
	return time.Since(start) / 3
}

// checkKeysFor runs decodeStrict on data into a fresh enqueue request.
func checkKeysFor(data []byte) error {
	var q struct {
		Headers map[string]string `json:"headers"`
		Body    any               `json:"body"`
	}
	return decodeStrict(data, &q)
}

// manyKeysBody returns a body of n distinct keys: in headers, in an object body ("body"), or
// as unknown fields at the top ("").
func manyKeysBody(n int, where string) []byte {
	var b strings.Builder
	switch where {
	case "headers":
		b.WriteString(`{"headers":{`)
	case "body":
		b.WriteString(`{"body":{`)
	default:
		b.WriteString(`{`)
	}
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"K%s%d":"v"`, strings.Repeat("x", i%7), i)
	}
	if where != "" {
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// TestReviewManyKeysTakeLinearTime checks that eight times the keys take well under 64 times
// as long (quadratic), in headers, in an object body and as unknown fields.
func TestReviewManyKeysTakeLinearTime(t *testing.T) {
	for _, where := range []string{"headers", "body", ""} {
		small, large := manyKeysBody(4000, where), manyKeysBody(32000, where)
		_ = checkKeysFor(small) // warm up
		ts, tl := keysCheckTime(small), keysCheckTime(large)
		if tl > 30*ts+20*time.Millisecond {
			t.Errorf("%q: %d bytes took %v, %d bytes %v", where, len(small), ts, len(large), tl)
		}
	}
}

// TestReviewAdversarialBodiesOverHTTP sends bodies whose keys are spelt with escapes to the
// enqueue, batch and schedule routes: a key given twice in another spelling is refused, a
// field's name in another case is refused, and a valid body is accepted.
func TestReviewAdversarialBodiesOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil).badRequests()
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1/topics/a/jobs", `{"id":"x","\u0069d":"y"}`, http.StatusBadRequest},
		{"POST", "/v1/topics/a/jobs", `{"headers":{"\ud83d\ude00":"1","😀":"2"}}`, http.StatusBadRequest},
		{"POST", "/v1/topics/a/jobs", `{"\u0049D":"x"}`, http.StatusBadRequest},
		{"POST", "/v1/topics/a/jobs", "\xef\xbb\xbf{\"id\":\"x\"}", http.StatusBadRequest},
		{"POST", "/v1/topics/a/jobs", `{"body":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, http.StatusBadRequest},
		{"POST", "/v1/topics/a/jobs", `{"\u0069d":"esc","body":{"k":1,"k":2}}`, http.StatusCreated},
		{"POST", "/v1/topics/a/jobs/batch", `{"jobs":[{"id":"b1"},{"id":"b2","\u0069d":"b3"},{"ID":"b4"}]}`, http.StatusOK},
		{"PUT", "/v1/schedules/s", `{"cron":"@hourly","topic":"a","job":{"headers":{"a":"1","\u0061":"2"}}}`, http.StatusBadRequest},
		{"PUT", "/v1/schedules/s", `{"cron":"@hourly","topic":"a","job":{"Body":1}}`, http.StatusBadRequest},
		{"PUT", "/v1/schedules/s", `{"cron":"@hourly","\u0074opic":"a","job":{"body":{"a":1,"a":2}}}`, http.StatusCreated},
	} {
		r := e.raw(e.url, c.method, c.path, "application/json", c.body)
		if r.status != c.status {
			t.Errorf("%s %s %.60q: status %d, want %d; body %s", c.method, c.path, c.body, r.status, c.status, r.body)
		}
		if strings.Contains(c.path, "batch") {
			got := string(r.body)
			if strings.Count(got, `"error"`) != 2 || !strings.Contains(got, `"b1"`) {
				t.Errorf("batch answer %s, want b1 enqueued and two items refused", got)
			}
		}
	}
	if j := e.get("a", "esc"); string(j.Body) != `{"k":1,"k":2}` {
		t.Errorf("job esc body %s, want the raw body kept", j.Body)
	}
}
