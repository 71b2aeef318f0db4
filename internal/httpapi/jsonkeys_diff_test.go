package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/apiv1"
)

// keysProbe has every kind of value that checkKeys treats apart: maps of maps, slices of maps,
// arrays, pointers, an interface, a raw message, a nested request and a field named by Go.
type keysProbe struct {
	M     map[string]map[string]int `json:"m"`
	L     []map[string]string       `json:"l"`
	A     [2]*keysProbe             `json:"a,omitempty"`
	Any   any                       `json:"any"`
	N     *int64                    `json:"n"`
	Raw   json.RawMessage           `json:"raw"`
	Sub   *apiv1.EnqueueRequest     `json:"sub"`
	Plain string
	Skip  int `json:"-"`
}

// keysEmbedding has fields that encoding/json names otherwise than checkKeys: embedded ones,
// names that encoding/json finds invalid, and a name given twice.
type keysEmbedding struct {
	keysEmbedded
	Twice int `json:"in"`
	Fine  int `json:"fine"`
	Odd   *keysOddName
}

// keysOddName has a name that encoding/json finds invalid and so replaces with the Go name.
type keysOddName struct {
	//lint:ignore SA5008 the name is invalid on purpose
	Odd int `json:"a\\b"`
}

// keysEmbedded is embedded in keysEmbedding.
type keysEmbedded struct {
	In  int `json:"in"`
	Out int `json:"out"`
}

// keysTargets returns a fresh value of each request type that the differential tests decode
// into.
func keysTargets() []any {
	return []any{&apiv1.EnqueueRequest{}, &apiv1.BatchRequest{}, &apiv1.ScheduleRequest{}, &struct{}{},
		&keysProbe{}, &keysEmbedding{}, &keysOddName{}, &map[string]map[string]string{}, new(any)}
}

// keysCases are inputs whose answers checkKeys must get right; they seed the fuzzer too.
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

// sameKeysAnswer fails t unless checkKeys and the old walk over encoding/json's tokens give
// the same answer for data into each target, and decodeStrict the same as before.
//
// Data nested deeper than encoding/json allows is the exception: the old walk went on as deep
// as the data went (and overflowed the stack on a deep enough body); checkKeys stops at the
// limit and leaves the body to the decoder. So checkKeys answers as the old walk did or not at
// all (nil), and decodeStrict refuses the body one way or another.
func sameKeysAnswer(t *testing.T, data []byte) {
	t.Helper()
	if nesting(data) > maxDepth {
		for _, v := range keysTargets() {
			_, got := checkKeys(data, v)
			if want := refCheckKeys(data, v); got != nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("checkKeys(%.80q…) into %T, nested past the limit: %#v, want nil or %#v", data, v, got, want)
			}
			var invalid *delayq.InvalidError
			if err := decodeStrict(data, v); !errors.As(err, &invalid) {
				t.Fatalf("decodeStrict(%.80q…) into %T, nested past the limit: %v, want an invalid request body", data, v, err)
			}
		}
		return
	}
	for i, v := range keysTargets() {
		_, got := checkKeys(data, v)
		want := refCheckKeys(data, v)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("checkKeys(%q) into %T: %#v, want %#v", data, v, got, want)
		}
		w := keysTargets()[i]
		got, want = decodeStrict(data, v), refDecodeStrict(data, w)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeStrict(%q) into %T: %#v, want %#v", data, v, got, want)
		}
		if !reflect.DeepEqual(v, w) {
			t.Fatalf("decodeStrict(%q): %#v, want %#v", data, v, w)
		}
	}
}

func TestCheckKeysMatchesTokenWalk(t *testing.T) {
	t.Parallel()
	for _, c := range keysCases {
		sameKeysAnswer(t, []byte(c))
	}
}

// TestCheckKeysMatchesTokenWalkOnRandomJSON compares the answers on random JSON made of the
// request types' field names, their case variants and escapes, and on mutations of it.
func TestCheckKeysMatchesTokenWalkOnRandomJSON(t *testing.T) {
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
		sameKeysAnswer(t, data)
	}
}

// FuzzCheckKeys compares checkKeys with the walk over encoding/json's tokens.
func FuzzCheckKeys(f *testing.F) {
	for _, c := range keysCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameKeysAnswer(t, data)
	})
}

// randomKeys are the keys that random JSON takes: field names, names that match them only
// when case is ignored (ſ folds to s, K to k), escapes and a few others.
var randomKeys = []string{"id", "body", "delay_ms", "headers", "backoff_ms", "jobs", "job", "cron", "m", "l",
	"a", "any", "n", "raw", "sub", "Plain", "plain", "Skip", "DELAY_MS", "Id", "ttr_mſ", "\u212aey", "key", "k",
	"\u00e9", "x", "", "\\u0064elay_ms", "\\u0069d", "\\ud800", "\\udbff", "\\\"", "\\/", "a\\nb", "\\u00e9",
	"in", "out", "fine", "a\\\\b", "Odd", "keysEmbedded", "Twice"}

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

// nesting returns how deeply data's objects and arrays nest, brackets in strings aside.
func nesting(data []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
