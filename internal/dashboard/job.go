package dashboard

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"unicode/utf8"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/apiv1"
)

// jobData is a job page's.
type jobData struct {
	Topic, ID string
	Job       *apiv1.Job // nil when Redis no longer has the job (Gone)
	Body      body
	Done      *doneNote
	// Gone: the page shows the job from its history alone, its fields and body as last
	// archived (Archived).
	Gone     bool
	Archived *apiv1.HistoryEntry
	History  *jobHistory // nil without an archive
}

// body is a job's body as a page shows it.
type body struct {
	Kind   string // "json", "text", "binary" or "empty"
	Text   string // pretty JSON, or the text
	Base64 string // binary only
	Hex    string // binary only: a hex dump of the first hexBytes
	Size   int
	Cut    bool // the hex dump stops before the end
}

// hexBytes bounds the hex dump of a binary body.
const hexBytes = 4 << 10

// showBody returns how a page shows b: JSON indented, other UTF-8 text as it is, anything
// else as base64 and a hex dump. The template escapes every form.
func showBody(b []byte, format delayq.Format) body {
	out := body{Size: len(b)}
	var pretty bytes.Buffer
	switch {
	case len(b) == 0:
		out.Kind = "empty"
	case format == delayq.FormatJSON && json.Indent(&pretty, b, "", "  ") == nil:
		out.Kind, out.Text = "json", pretty.String()
	case utf8.Valid(b) && !bytes.ContainsRune(b, 0):
		out.Kind, out.Text = "text", string(b)
	default:
		out.Kind, out.Base64 = "binary", base64.StdEncoding.EncodeToString(b)
		out.Hex, out.Cut = hex.Dump(b[:min(len(b), hexBytes)]), len(b) > hexBytes
	}
	return out
}

// job is GET /topics/{topic}/jobs/{id}: every field of the job, and its actions.
func (d *Dashboard) job(w http.ResponseWriter, r *http.Request, v *view) error {
	topic, id := r.PathValue("topic"), r.PathValue("id")
	ctx, cancel := d.storeContext(r)
	defer cancel()
	j, err := d.c.Get(ctx, topic, id)
	if errors.Is(err, delayq.ErrNotFound) && d.archive != nil {
		return d.goneJob(w, r, v, err)
	}
	if err != nil {
		return err
	}
	h, _ := d.readJobHistory(ctx, topic, id)
	v.Title = id
	v.Data = jobData{Topic: topic, ID: id, Job: apiv1.NewJob(j), Body: showBody(j.Body, j.Format), Done: readDone(r), History: h}
	d.render(w, http.StatusOK, "job", v)
	return nil
}
