package dashboard

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
)

// A page shows a body within these bounds, whatever its size and shape; the whole body is a
// download away. JSON is indented only when it nests at most prettyDepth deep and its indented
// form fits in shownBytes: a 20 KB body of nested arrays would otherwise indent to 200 MB.
// Past the bounds a body is shown as stored, its first shownBytes (text) or the base64 of its
// first shownBytes*3/4 (binary), beside a hex dump of its first hexBytes. Escaped for HTML, the
// largest of these is a few times shownBytes, well within pageBudget.
const (
	shownBytes  = 128 << 10
	prettyDepth = 32
	hexBytes    = 4 << 10
)

// body is a job's body as a page shows it.
type body struct {
	Kind   string // "json", "text", "binary" or "empty"
	Text   string // the indented JSON, or the text (or JSON as stored), up to shownBytes
	Base64 string // binary only: of the first shownBytes*3/4
	Hex    string // binary only: a hex dump of the first hexBytes
	HexCut bool   // the hex dump stops before the end
	Size   int
	Shown  int    // the bytes of the body that Text or Base64 holds; less than Size when cut
	Note   string // why a JSON body is not indented, or that the page shows only a part; "" when neither
	URL    string // where to download the body as stored
}

// Cut reports whether the page shows only the start of the body.
func (b body) Cut() bool { return b.Shown < b.Size }

// showBody returns how a page shows b, within the bounds above: JSON indented, other UTF-8 text
// as it is, anything else as base64 and a hex dump. The template escapes every form.
func showBody(b []byte, format delayq.Format, url string) body {
	out := body{Size: len(b), Shown: len(b), URL: url}
	switch {
	case len(b) == 0:
		out.Kind = "empty"
		return out
	case format == delayq.FormatJSON && json.Valid(b):
		out.Kind = "json"
		if pretty, ok := indentJSON(b, prettyDepth, shownBytes); ok {
			out.Text = string(pretty)
			return out
		}
		out.Note = fmt.Sprintf("Shown as stored, not indented: it nests more than %d deep or its indented form is over %s.", prettyDepth, humanBytes(shownBytes))
		out.Text, out.Shown = utf8Prefix(b, shownBytes)
	case utf8.Valid(b) && !bytes.ContainsRune(b, 0):
		out.Kind = "text"
		out.Text, out.Shown = utf8Prefix(b, shownBytes)
	default:
		out.Kind = "binary"
		out.Shown = min(len(b), shownBytes/4*3)
		out.Base64 = base64.StdEncoding.EncodeToString(b[:out.Shown])
		out.Hex, out.HexCut = hex.Dump(b[:min(len(b), hexBytes)]), len(b) > hexBytes
	}
	if out.Cut() {
		cut := fmt.Sprintf("The page shows its first %s of %s: download it for the whole body.", humanBytes(int64(out.Shown)), humanBytes(int64(out.Size)))
		out.Note = joinNotes(out.Note, cut)
	}
	return out
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

// utf8Prefix returns the longest prefix of b of at most n bytes that does not split a UTF-8
// sequence, and its length.
func utf8Prefix(b []byte, n int) (string, int) {
	if len(b) <= n {
		return string(b), len(b)
	}
	end := n
	for end > 0 && end > n-utf8.UTFMax && !utf8.RuneStart(b[end]) {
		end--
	}
	return string(b[:end]), end
}

// indentJSON returns the valid JSON b indented as json.Indent(dst, b, "", "  ") indents it
// (less any white space after its value), or false as soon as it nests deeper than maxDepth or
// the indented form grows past maxOut bytes. json.Indent builds the whole indented form first,
// and indentation grows with the square of the depth.
func indentJSON(b []byte, maxDepth, maxOut int) ([]byte, bool) {
	out := make([]byte, 0, min(len(b)+len(b)/2, maxOut))
	depth := 0
	inString, escaped := false, false
	opened := false // a bracket was just opened: a new line comes before its first value
	newline := func() {
		out = append(out, '\n')
		for range depth {
			out = append(out, ' ', ' ')
		}
	}
	for _, c := range b {
		if len(out) > maxOut {
			return nil, false
		}
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		closing := c == ']' || c == '}'
		if opened && !closing {
			newline()
		}
		switch c {
		case '"':
			inString = true
			out = append(out, c)
		case '[', '{':
			if depth++; depth > maxDepth {
				return nil, false
			}
			out = append(out, c)
		case ']', '}':
			depth--
			if !opened {
				newline()
			}
			out = append(out, c)
		case ',':
			out = append(out, c)
			newline()
		case ':':
			out = append(out, c, ' ')
		default:
			out = append(out, c)
		}
		opened = c == '[' || c == '{'
	}
	if len(out) > maxOut {
		return nil, false
	}
	return out, true
}

// jobBody is GET /topics/{topic}/jobs/{id}/body: the job's body as stored, to save as a file
// (from its history when Redis no longer has the job). A job page shows at most the start of
// a large body and links here for the whole.
func (d *Dashboard) jobBody(w http.ResponseWriter, r *http.Request, _ *view) error {
	topic, id := r.PathValue("topic"), r.PathValue("id")
	ctx, cancel := d.storeContext(r)
	defer cancel()
	j, err := d.c.Get(ctx, topic, id)
	if (errors.Is(err, delayq.ErrNotFound) || errors.Is(err, delayq.ErrDone)) && d.archive != nil {
		page, aerr := d.archive.Query(ctx, archive.Filter{Topic: topic, ID: id, Limit: 1})
		if aerr != nil || len(page.Outcomes) == 0 {
			return err
		}
		o := page.Outcomes[0]
		serveBody(w, id, o.Body, delayq.Format(o.Format))
		return nil
	}
	if err != nil {
		return err
	}
	serveBody(w, id, j.Body, j.Format)
	return nil
}

// scheduleBody is GET /schedules/{name}/body: the body of each tick's job, to save as a file.
func (d *Dashboard) scheduleBody(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx, cancel := d.storeContext(r)
	defer cancel()
	sch, err := d.readSchedule(ctx, v, r.PathValue("name"))
	if err != nil {
		return err
	}
	serveBody(w, "schedule-"+sch.Name, sch.Spec.Job.Body, sch.Spec.Job.Format)
	return nil
}

// serveBody answers with b as a file to save, never to show: a browser neither renders nor
// sniffs it, whatever it holds.
func serveBody(w http.ResponseWriter, name string, b []byte, format delayq.Format) {
	ctype, ext := "application/octet-stream", ".bin"
	if format == delayq.FormatJSON {
		ctype, ext = "application/json", ".json"
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": fileName(name) + ext}))
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// fileName is name with every byte but ASCII letters, digits, '.', '_' and '-' replaced by
// '_', at most 100 bytes: an id may hold anything printable, a file name should not.
func fileName(name string) string {
	out := make([]byte, 0, min(len(name), 100))
	for i := 0; i < len(name) && len(out) < 100; i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
			out = append(out, c)
		default:
			out = append(out, '_')
		}
	}
	return string(out)
}
