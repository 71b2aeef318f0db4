package dashboard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/delayq/delayq"
)

// jsonIndent is json.Indent's form of valid JSON b, less any white space after its value.
func jsonIndent(t testing.TB, b []byte) string {
	t.Helper()
	var want bytes.Buffer
	if err := json.Indent(&want, b, "", "  "); err != nil {
		t.Fatalf("json.Indent(%q): %v", b, err)
	}
	return strings.TrimRight(want.String(), " \t\r\n")
}

func TestIndentJSONIndentsAsJSONIndentWithinItsBounds(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"a":[1,2]}`, ` { "a" : [ ] , "b" : { } , "c" : "x\"y,{}:[]\\" } `, `[[],[[]],{"k":null}]`, `"just a string"`,
		`12.5e3`, `true`, "[1,\n 2,\t3]\n", `{"nested":{"deeper":{"deepest":[{"x":-1}]}}}`, `"é ✓ \u00e9"`,
	} {
		got, ok := indentJSON([]byte(in), prettyDepth, shownBytes)
		if want := jsonIndent(t, []byte(in)); !ok || string(got) != want {
			t.Errorf("indentJSON(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestIndentJSONStopsAtItsBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"at the depth bound", strings.Repeat("[", prettyDepth) + strings.Repeat("]", prettyDepth), true},
		{"past the depth bound", strings.Repeat("[", prettyDepth+1) + strings.Repeat("]", prettyDepth+1), false},
		{"past the size bound", `["` + strings.Repeat("x", shownBytes) + `"]`, false},
		// Wide and 20 deep: 30 KiB of body would indent to well over shownBytes.
		{"deep and wide", strings.Repeat("[", 20) + strings.TrimSuffix(strings.Repeat("1,", 15000), ",") + strings.Repeat("]", 20), false},
	} {
		got, ok := indentJSON([]byte(tc.in), prettyDepth, shownBytes)
		if ok != tc.ok || len(got) > shownBytes {
			t.Errorf("%s: ok %v (want %v), %d bytes", tc.name, ok, tc.ok, len(got))
		}
	}
}

func FuzzIndentJSON(f *testing.F) {
	for _, seed := range []string{`{"a":[1,2]}`, `[[],{}]`, `"a\\\"b"`, ` [ 1 , { "k" : "v" } ] `, `[[[[1]]]]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		got, ok := indentJSON(b, 8, 4096)
		if !ok {
			if len(got) != 0 {
				t.Fatalf("indentJSON(%q) failed with output %q", b, got)
			}
			return
		}
		if want := jsonIndent(t, b); string(got) != want {
			t.Fatalf("indentJSON(%q) = %q, want %q", b, got, want)
		}
	})
}

func TestShowBodyBoundsWhatAPageShows(t *testing.T) {
	t.Parallel()
	bigText := strings.Repeat("é", shownBytes) // two bytes each: the cut must not split one
	bigBinary := bytes.Repeat([]byte{0, 0xff}, shownBytes)
	for _, tc := range []struct {
		name   string
		b      []byte
		format delayq.Format
		kind   string
		shown  int
		note   string
	}{
		{"small JSON", []byte(`{"a":1}`), delayq.FormatJSON, "json", 7, ""},
		{"deep JSON", deepJSON(200), delayq.FormatJSON, "json", len(deepJSON(200)), "nests more than 32 deep"},
		{"large JSON", []byte(`"` + strings.Repeat("x", shownBytes) + `"`), delayq.FormatJSON, "json", shownBytes, "download it for the whole body"},
		{"large text", []byte(bigText), delayq.FormatBinary, "text", shownBytes, "first 128.0 KiB of 256.0 KiB"},
		{"large binary", bigBinary, delayq.FormatBinary, "binary", shownBytes / 4 * 3, "first 96.0 KiB of 256.0 KiB"},
	} {
		got := showBody(tc.b, tc.format, "/x/body")
		shown := len(got.Text) + len(got.Base64)*3/4
		if got.Kind == "json" && got.Note == "" {
			shown = len(tc.b) // indented
		}
		if got.Kind != tc.kind || got.Shown != tc.shown || shown != tc.shown || !strings.Contains(got.Note, tc.note) ||
			(tc.note == "") != (got.Note == "") || !utf8.ValidString(got.Text) || got.Size != len(tc.b) || got.URL != "/x/body" {
			t.Errorf("%s: kind %q, shown %d (%d in the page), note %q", tc.name, got.Kind, got.Shown, shown, got.Note)
		}
	}
}

func TestBodyDownloads(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	large := bytes.Repeat([]byte("<b>x</b>"), shownBytes) // 1 MiB of HTML: never shown as a page
	s.enqueue("t", delayq.Spec{ID: hostileID, Body: large})
	s.enqueue("t", delayq.Spec{ID: "json", Body: []byte(`{"a":1}`), Format: delayq.FormatJSON})
	s.putSchedule("tick", delayq.ScheduleSpec{Cron: "@hourly", Topic: "t", Job: delayq.Spec{Body: []byte("tock")}})

	page := s.get(jobPath("t", hostileID))
	if !strings.Contains(page.body, `id="body-note">The page shows its first 128.0 KiB of 1.0 MiB`) || len(page.body) > 1<<20 {
		t.Errorf("the job page of a large body: %d bytes, no note", len(page.body))
	}
	link := regexpFind(t, page.body, `<a href="([^"]+)" id="body-download">`)
	for _, tc := range []struct {
		path, ctype, disposition string
		body                     []byte
	}{
		{strings.ReplaceAll(link, "&#43;", "+"), "application/octet-stream", `attachment; filename=_script_alert__id____script_____img_src_x_onerror_alert_1__WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW.bin`, large},
		{"/topics/t/jobs/json/body", "application/json", "attachment; filename=json.json", []byte(`{"a":1}`)},
		{"/schedules/tick/body", "application/octet-stream", "attachment; filename=schedule-tick.bin", []byte("tock")},
	} {
		a := s.get(tc.path)
		h := a.header
		if a.status != http.StatusOK || a.body != string(tc.body) || h.Get("Content-Type") != tc.ctype ||
			h.Get("Content-Disposition") != tc.disposition || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d, %d bytes, Content-Type %q, Content-Disposition %q, X-Content-Type-Options %q",
				tc.path, a.status, len(a.body), h.Get("Content-Type"), h.Get("Content-Disposition"), h.Get("X-Content-Type-Options"))
		}
	}
	wantStatus(t, "no such job", s.get("/topics/t/jobs/nope/body"), http.StatusNotFound)
	wantStatus(t, "no such schedule", s.get("/schedules/nope/body"), http.StatusNotFound)

	closed := newSite(t, func(c *Config) { c.Tokens = []string{"a-token-of-the-dashboard"} })
	closed.enqueue("t", delayq.Spec{ID: "j", Body: []byte("secret")})
	if a := closed.get("/topics/t/jobs/j/body"); a.status != http.StatusSeeOther || strings.Contains(a.body, "secret") {
		t.Errorf("a download without a session: %d %q", a.status, a.body)
	}
}
