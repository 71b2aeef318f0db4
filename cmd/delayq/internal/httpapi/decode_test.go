package httpapi

import (
	"bytes"
	"crypto/sha256"
	stdjson "encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/decode_strict.golden from decodeStrict's answers")

// decodeTargets returns a fresh value of each request type that the answers are kept for.
func decodeTargets() []any {
	return []any{&apiv1.EnqueueRequest{}, &apiv1.BatchRequest{}, &apiv1.ScheduleRequest{}, &struct{}{}}
}

// keysCases are bodies whose answers decodeStrict must keep: keys given twice in objects at
// every depth, names in other cases, malformed JSON around them; they seed the fuzzer too.
var keysCases = []string{
	`{"body":"` + strings.Repeat("x", 98) + `","delay_ms":3600000}`,
	`{"body":{"k":1,"k":2},"delay_ms":1}`, `{"body":[{"k":1,"k":2}],"headers":{"a":"1","A":"2"}}`,
	`{"delay_ms":1,"delay_ms":2}`, `{"\u0064elay_ms":1,"delay_ms":2}`, `{"\u0064elay_ms":1,"DELAY_MS":2}`,
	`{"DELAY_MS":1}`, `{"ttr_mſ":1}`, `{"\u0044ELAY_MS":1}`, `{"headers":{"a":"1","\u0061":"2"}}`,
	`{"headers":{"\ud800":"1","\udbff":"2"}}`, `{"zz":1,"zz":2}`, `{"zz":{"a":1,"a":2}}`,
	`{"delay_ms":{"a":1,"a":2}}`, `{"backoff_ms":[{"a":1,"a":2}]}`, `{"jobs":[{"id":"a","id":"b"}]}`,
	`{"job":{"headers":{"a":"1","a":"2"}}}`, `{"job":{"Body":1}}`, `{"m":{"x":{"a":1,"a":2}}}`,
	`{"l":[{},{"a":"1","a":"2"}]}`, `{"a":[{"m":{"x":{"k":1,"k":2}}}]}`, `{"any":{"a":1,"a":2}}`,
	`{"raw":{"a":1,"a":2},"n":1,"n":2}`, `{"plain":1}`, `{"Plain":1,"Plain":2}`, `{"Skip":1,"skip":2}`,
	`{"sub":{"Delay_Ms":1}}`, `{"x":{"y":{"z":1,"z":2}}}`, `{"a":{"b":1,"b":2}}`,
	`{"backoff_ms":[1 2],"id":1,"id":2}`, `{"body":[1,tru],"id":1,"id":2}`, `{"headers":[{"x":1 "y"}]}`,
	`{"body":[{"a":[1}]},"id":1,"id":2}`, `{"id":1,"id"`, `{"id":1,"id"x`, `{"id":1,"id":`, `{"id":01,"id":2}`,
	`{"id":1.,"id":2}`, `{"id":-,"id":2}`, `{"id":1e+,"id":2}`, `{"id":1.5e-3,"id":2}`, `{"id":nul,"id":2}`,
	`{"id":"\x","id":2}`, `{"id":"\u12g4","id":2}`, `{"id":"a` + "\x01" + `","id":2}`, `{"id":"\ud800\udc00","id":2}`,
	`{"id":1,,"id":2}`, `{,"id":1}`, `{"id":1,}`, `{"id" 1,"id":2}`, `{"id":1]`, `[{"a":1,"a":2}]`, `"x"`, ``,
	`{"id":1}{"id":1,"id":2}`, `{"id":"\u00e9","id":"\u00E9"}`, `{"é":1,"\u00e9":2}`, "{\"\xff\":1,\"\xfe\":2}",
	`{"m":{"x":[]},"m":1}`, `{"a":[null,{"Plain":"x","plain":"y"}]}`, " \t\r\n{\"id\":1,\"id\":2} ",
	`{"a":{"a":{"a":{"a":{"a":{"a":{"id":1}}}}}}}`, strings.Repeat(`[`, 500) + strings.Repeat(`]`, 500),
	`{"any":` + strings.Repeat(`[`, 300) + `{"k":1,"k":2}` + strings.Repeat(`]`, 300) + `}`,
	`{"delay_ms":"x"}`, `{"delay_ms":1e999}`, `{"headers":{"a":1}}`, `{"backoff_ms":[1,"x"]}`,
	`{"id":5,"zz":1}`, `{"zz":1,"id":5}`, `{"body":1} x`, `{"body":1} `, `{"a":[{},{},{}]}`, `{"n":"1","a":[1]}`,
	`{"m":{"x":{"a":"1"}},"l":[{"a":1}]}`, `{"in":1,"out":2,"fine":3,"Odd":{"a\\b":4}}`,
	`{"Odd":{"Odd":5}}`, `{"fine":3,"keysEmbedded":{}}`, `{"out":1}`,
	`{"any":` + strings.Repeat(`[`, 1001) + strings.Repeat(`]`, 1001) + `}`,
	`{"any":` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `,"n":1,"n":2}`,
	`{"headers":{` + manyKeys(40, false) + `}}`, `{"headers":{` + manyKeys(40, true) + `}}`,
}

// manyKeys returns n distinct keys with values, and a repeat of the first when dup.
func manyKeys(n int, dup bool) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `"k%d":"v",`, i)
	}
	if dup {
		b.WriteString(`"k0":"w",`)
	}
	b.WriteString(`"end":"v"`)
	return b.String()
}

// adversarialCases are bodies meant to slip past the check: escapes that spell the same key differently, BOMs,
// NUL bytes, surrogates, huge numbers, deep arrays in raw bodies, long keys.
var adversarialCases = []string{
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

// decodeAnswers returns decodeStrict's answer on each of keysCases and adversarialCases into
// each of decodeTargets, one a line: refused, or ok and the decoded value as JSON (a long one
// as its SHA-256).
func decodeAnswers(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for i, c := range append(append([]string{}, keysCases...), adversarialCases...) {
		for _, v := range decodeTargets() {
			fmt.Fprintf(&b, "%d %T %.50q: ", i, v, c)
			if decodeStrict([]byte(c), v) != nil {
				b.WriteString("refused\n")
				continue
			}
			out, err := stdjson.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) > 200 {
				out = fmt.Appendf(nil, "%d bytes, sha256 %x", len(out), sha256.Sum256(out))
			}
			fmt.Fprintf(&b, "ok %s\n", out)
		}
	}
	return b.String()
}

// TestDecodeStrictKeepsItsAnswers holds decodeStrict to the answers in
// testdata/decode_strict.golden, which the key check written by hand gave before JSON v2
// replaced it: which bodies are refused, and what the others decode to.
func TestDecodeStrictKeepsItsAnswers(t *testing.T) {
	t.Parallel()
	const golden = "testdata/decode_strict.golden"
	got := decodeAnswers(t)
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}

// TestDecodeStrictMessages checks what the refusals say: the field, and why.
func TestDecodeStrictMessages(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		target any
		body   string
		want   string
	}{
		{&apiv1.EnqueueRequest{}, `{"delay": 5}`, `invalid request body: unknown field "delay"`},
		{&apiv1.EnqueueRequest{}, `{"DELAY_MS": 5}`, `invalid request body: unknown field "DELAY_MS" (field names are exact: "delay_ms")`},
		{&apiv1.EnqueueRequest{}, `{"delay_ms": 5, "\u0064elay_ms": 6}`, `invalid delay_ms: appears twice in one object`},
		{&apiv1.EnqueueRequest{}, `{"headers": {"a": "1", "a": "2"}}`, `invalid headers[a]: appears twice in one object`},
		{&apiv1.EnqueueRequest{}, `{"headers": {"a": 1}}`, `invalid headers[a]: want a string, got number`},
		{&apiv1.EnqueueRequest{}, `{"backoff_ms": [1, 2.5]}`, `invalid backoff_ms[1]: want an integer within range, got number 2.5`},
		{&apiv1.EnqueueRequest{}, `{"delay_ms": 99999999999999999999}`, `invalid delay_ms: want an integer within range, got number 99999999999999999999`},
		{&apiv1.EnqueueRequest{}, `{"ttr_ms": [100]}`, `invalid ttr_ms: want an integer within range, got array`},
		{&apiv1.EnqueueRequest{}, `{"id": 5}`, `invalid id: want a string, got number`},
		{&apiv1.EnqueueRequest{}, `{"headers": []}`, `invalid headers: want an object, got array`},
		{&apiv1.EnqueueRequest{}, `{} x`, `invalid request body: has data after the JSON object`},
		{&apiv1.EnqueueRequest{}, `{}{}`, `invalid request body: has data after the JSON object`},
		{&apiv1.EnqueueRequest{}, `{"body": {"k": 1, "k": 2}} x`, `invalid request body: has data after the JSON object`},
		{&apiv1.EnqueueRequest{}, `{"delay_ms": "x", "body": [1 2]}`, `invalid request body: malformed JSON at byte 29`},
		{&apiv1.EnqueueRequest{}, `{"delay_ms":`, `invalid request body: malformed JSON: it ends too soon`},
		{&apiv1.EnqueueRequest{}, `{"body":[1 2]}`, `invalid request body: malformed JSON at byte 11: invalid character '2' after array element`},
		{&apiv1.EnqueueRequest{}, "{\"body\": \"\xff\"}", `invalid request body: is not valid UTF-8`},
		{&apiv1.EnqueueRequest{}, `[]`, `invalid request body: must be a JSON object`},
		{&apiv1.ScheduleRequest{}, `{"job": {"headers": {"a": "1", "a": "2"}}}`, `invalid job.headers[a]: appears twice in one object`},
		{&apiv1.ScheduleRequest{}, `{"job": {"Body": 1}}`, `invalid job: unknown field "Body" (field names are exact: "body")`},
		{&apiv1.ScheduleRequest{}, `{"job": {"backoff_ms": [1, "x"]}}`, `invalid job.backoff_ms[1]: want an integer within range, got string`},
	} {
		err := decodeStrict([]byte(c.body), c.target)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s into %T: %v, want %q", c.body, c.target, err, c.want)
		}
	}
}

// sameAsEncodingJSON fails t unless decodeStrict agrees with encoding/json, which disallows
// unknown fields but matches names in any case and takes the last of a key given twice, on
// data into each target: what decodeStrict accepts, encoding/json decodes to the same value;
// what encoding/json refuses, decodeStrict refuses; and what only decodeStrict refuses has a
// key twice or a name in another case.
func sameAsEncodingJSON(t *testing.T, data []byte) {
	t.Helper()
	for i, v := range decodeTargets() {
		w := decodeTargets()[i]
		err, want := decodeStrict(data, v), decodeEncodingJSON(data, w)
		switch {
		case err == nil && want != nil:
			t.Fatalf("decodeStrict(%q) into %T accepted what encoding/json refuses: %v", data, v, want)
		case err == nil && !reflect.DeepEqual(v, w):
			t.Fatalf("decodeStrict(%q): %#v, encoding/json %#v", data, v, w)
		case err != nil && want == nil && !strings.Contains(err.Error(), "appears twice") && !strings.Contains(err.Error(), "field names are exact"):
			t.Fatalf("decodeStrict(%q) into %T refused what encoding/json accepts: %v", data, v, err)
		}
	}
}

// decodeEncodingJSON decodes data, one JSON object in UTF-8, into v with encoding/json,
// unknown fields disallowed.
func decodeEncodingJSON(data []byte, v any) error {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("not an object")
	}
	dec := stdjson.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the object")
	}
	if !utf8.Valid(data) {
		return fmt.Errorf("not UTF-8")
	}
	return nil
}

func TestDecodeStrictAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, c := range append(append([]string{}, keysCases...), adversarialCases...) {
		sameAsEncodingJSON(t, []byte(c))
	}
}

// TestDecodeStrictAgreesWithEncodingJSONOnRandomJSON compares the answers on random JSON made of
// the request types' field names, their case variants and escapes, and on mutations of it.
func TestDecodeStrictAgreesWithEncodingJSONOnRandomJSON(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		data := []byte(randomJSON(r, 0))
		if r.IntN(2) == 0 {
			data = mutateJSON(r, data)
		}
		sameAsEncodingJSON(t, data)
	}
}

// FuzzDecodeStrict compares decodeStrict with encoding/json.
func FuzzDecodeStrict(f *testing.F) {
	for _, c := range keysCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsEncodingJSON(t, data)
	})
}

// randomKeys are the keys that random JSON takes: field names, names that match them only
// when case is ignored (ſ folds to s, K to k), escapes and a few others.
var randomKeys = []string{"id", "body", "delay_ms", "headers", "backoff_ms", "jobs", "job", "cron", "m", "l",
	"DELAY_MS", "Id", "ttr_mſ", "\u212aey", "key", "k",
	"\u00e9", "x", "", "\\u0064elay_ms", "\\u0069d", "\\ud800", "\\udbff", "\\\"", "\\/", "a\\nb", "\\u00e9",
	"max", "lease", "ids", "all", "rate", "period_ms", "run_at", "ttr_ms", "topic", "cron", "a\\\\b"}

// randomJSON returns a random value at depth d, mostly objects and arrays near the top.
func randomJSON(r *rand.Rand, d int) string {
	k := r.IntN(10)
	if d == 0 {
		k = 0
	} else if d > 5 {
		k = 4 + r.IntN(6)
	}
	switch k {
	case 0, 1, 2:
		var keys []string
		for range r.IntN(6) {
			if len(keys) > 0 && r.IntN(5) == 0 {
				keys = append(keys, keys[r.IntN(len(keys))])
			} else {
				keys = append(keys, randomKeys[r.IntN(len(randomKeys))])
			}
		}
		parts := make([]string, len(keys))
		for i, key := range keys {
			parts[i] = `"` + key + `":` + randomJSON(r, d+1)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case 3:
		parts := make([]string, r.IntN(4))
		for i := range parts {
			parts[i] = randomJSON(r, d+1)
		}
		return " [" + strings.Join(parts, ", ") + "] "
	case 4:
		return `"` + randomKeys[r.IntN(len(randomKeys))] + `"`
	case 5:
		return []string{"true", "false", "null"}[r.IntN(3)]
	}
	return []string{"0", "-1", "12", "1.5", "-0.25e+3", "1E9", "3600000", "1e999"}[r.IntN(8)]
}

// mutateJSON changes data in a few random places.
func mutateJSON(r *rand.Rand, data []byte) []byte {
	const bytes = "{}[]\",: \\0a1-eE.tu\x00\x01\xff\xc3\xa9"
	for range 1 + r.IntN(3) {
		if len(data) == 0 {
			break
		}
		i := r.IntN(len(data))
		switch r.IntN(4) {
		case 0:
			data = append(data[:i:i], data[i+1:]...)
		case 1:
			data = append(data[:i:i], append([]byte{bytes[r.IntN(len(bytes))]}, data[i:]...)...)
		case 2:
			data[i] = bytes[r.IntN(len(bytes))]
		case 3:
			data = data[:i]
		}
	}
	return data
}

// TestDecodeStrictStopsAtMalformedJSON: malformed JSON inside an array ends the decoding with an
// error that says so; a key check once went on asking for the bad token forever.
func TestDecodeStrictStopsAtMalformedJSON(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"backoff_ms":[1 2]}`, `{"backoff_ms":[1,tru]}`, `{"body":[1 2]}`,
		`{"headers":[{"x":1 "y"}]}`, `{"body":[{"a":[1}]}`} {
		done := make(chan error, 1)
		go func() {
			var q apiv1.EnqueueRequest
			done <- decodeStrict([]byte(body), &q)
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "malformed JSON") {
				t.Errorf("%s: %v, want malformed JSON", body, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: decodeStrict does not end", body)
		}
	}
}

// keysCheckTime returns how long decodeStrict takes on data into an enqueue request.
func keysCheckTime(data []byte) time.Duration {
	start := time.Now()
	for range 3 {
		_ = decodeHeadersAndBody(data)
	}
	return time.Since(start) / 3
}

// decodeHeadersAndBody runs decodeStrict on data into a fresh request of headers and a body.
func decodeHeadersAndBody(data []byte) error {
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

// TestDecodeStrictManyKeysTakeLinearTime checks that eight times the keys take well under 64 times
// as long (quadratic), in headers, in an object body and as unknown fields.
func TestDecodeStrictManyKeysTakeLinearTime(t *testing.T) {
	for _, where := range []string{"headers", "body", ""} {
		small, large := manyKeysBody(4000, where), manyKeysBody(32000, where)
		_ = decodeHeadersAndBody(small) // warm up
		ts, tl := keysCheckTime(small), keysCheckTime(large)
		if tl > 30*ts+20*time.Millisecond {
			t.Errorf("%q: %d bytes took %v, %d bytes %v", where, len(small), ts, len(large), tl)
		}
	}
}

// Batch items are held to exact names and single keys too, each item on its own; a job's body
// is the producer's JSON, kept as given, whatever its keys.
func TestBatchItemKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.badRequests().raw(e.url, "POST", "/v1/topics/keys/jobs/batch", "application/json",
		`{"jobs": [{"Id": "a"}, {"id": "b", "id": "c"}, {"id": "d", "body": {"K": 1, "k": 2, "k": 3}}]}`)
	res := decode[struct {
		Results []struct {
			Job   *apiv1.Job   `json:"job"`
			Error *apiv1.Error `json:"error"`
		} `json:"results"`
	}](t, r.want(t, http.StatusOK)).Results
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	for i, want := range []string{"exact", "twice"} {
		if res[i].Error == nil || res[i].Error.Code != codeInvalid || !strings.Contains(res[i].Error.Message, want) {
			t.Errorf("item %d: %+v, want invalid_argument mentioning %q", i, res[i].Error, want)
		}
	}
	if res[2].Job == nil || string(res[2].Job.Body) != `{"K":1,"k":2,"k":3}` {
		t.Errorf("item 2: %+v, want the body kept as given", res[2])
	}
}

// TestAdversarialBodiesOverHTTP sends bodies whose keys are spelt with escapes to the
// enqueue, batch and schedule routes: a key given twice in another spelling is refused, a
// field's name in another case is refused, and a valid body is accepted.
func TestAdversarialBodiesOverHTTP(t *testing.T) {
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

// TestDeeplyNestedBodyIsRefusedOnASmallStack sends an enqueue whose body is a million opening
// brackets, within the request limit. A key check that recursed once per level overflowed the
// goroutine's stack and killed the server. Decoding must stop at the depth limit of 10,000; the
// stack is capped here so that a decoder that goes deeper crashes the test.
func TestDeeplyNestedBodyIsRefusedOnASmallStack(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Limits.MaxBody = 1 << 20 })
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	body := `{"body":` + strings.Repeat("[", 1_000_000) + `]}`
	r := e.badRequests().raw(e.url, "POST", "/v1/topics/deep/jobs", "application/json", body)
	r.wantError(t, http.StatusBadRequest, codeInvalid)
	if !strings.Contains(string(r.body), "exceeded max depth") {
		t.Errorf("answer %s; want the decoder's depth error", r.body)
	}
}
