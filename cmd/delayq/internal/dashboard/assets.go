package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// The pages' templates and their static files: the style sheet and htmx 2.0.4, taken unchanged
// from the htmx.org package on npm (its dist/htmx.min.js, with a header naming it).
var (
	//go:embed templates/*.html
	templateFiles embed.FS
	//go:embed static/*.css static/*.js
	staticFiles embed.FS
)

// assetPrefix is the path of the static files. Each is served under a name that carries a hash
// of its content ("dashboard.3f2a9c1e.css"), so that browsers may keep it for a year and a new
// version is a new URL.
const assetPrefix = "/assets/"

// asset is a static file and its hashed name.
type asset struct {
	name, hashed, etag string
	body               []byte
}

var assets = loadAssets()

func loadAssets() map[string]asset {
	out := map[string]asset{}
	entries, err := staticFiles.ReadDir("static")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(staticFiles, "static/"+e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(b)
		ext := path.Ext(e.Name())
		hash := hex.EncodeToString(sum[:5])
		a := asset{name: e.Name(), hashed: strings.TrimSuffix(e.Name(), ext) + "." + hash + ext, etag: `"` + hash + `"`, body: b}
		out[a.name], out[a.hashed] = a, a
	}
	return out
}

// assetURL is the template function that names a static file by its hashed URL.
func assetURL(name string) string {
	a, ok := assets[name]
	if !ok {
		panic("dashboard: no static file " + name)
	}
	return assetPrefix + a.hashed
}

// serveAsset is GET /assets/{name}: a hashed name is kept for a year; the plain name, for
// anyone who asks for it, must be checked again each time.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	a, ok := assets[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if name == a.hashed {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("ETag", a.etag)
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// pages holds every page template.
var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"asset":          assetURL,
	"topicPath":      topicPath,
	"jobPath":        jobPath,
	"schedulePath":   schedulePath,
	"scheduleArgs":   scheduleArgs,
	"scheduleAction": scheduleActionArgs,
	"tickTime":       tickTime,
	"age":            age,
	"bytes":          humanBytes,
	"count":          stateCount,
	"args":           actionArgs,
	"limits":         limitsText,
	"topicArgs":      topicControlsArgs,
	"ms":             apiv1.FormatMs,
	"times":          times,
	"uniqueFor":      uniqueForText,
}).ParseFS(templateFiles, "templates/*.html"))

// stateCount is a topic's count of jobs in state.
func stateCount(s *delayq.TopicStats, state delayq.State) int64 {
	switch state {
	case delayq.StateDelayed:
		return s.Delayed
	case delayq.StateReady:
		return s.Ready
	case delayq.StateReserved:
		return s.Reserved
	}
	return s.Dead
}

// actionButton is what the "action" template gets: one action on one job.
type actionButton struct {
	View          *view
	Job           *apiv1.Job
	Action, Label string
}

func actionArgs(v *view, j *apiv1.Job, action, label string) actionButton {
	return actionButton{v, j, action, label}
}

// scheduleButtons is what the "schedule-buttons" template gets: a schedule's actions.
type scheduleButtons struct {
	View     *view
	Schedule apiv1.Schedule
}

func scheduleArgs(v *view, s apiv1.Schedule) scheduleButtons { return scheduleButtons{v, s} }

// scheduleButton is what the "schedule-action" template gets: one action on one schedule.
type scheduleButton struct {
	View                *view
	Name, Action, Label string
}

func scheduleActionArgs(v *view, name, action, label string) scheduleButton {
	return scheduleButton{v, name, action, label}
}

// topicControls is what the "topic-controls" template gets: a topic's pause and limits.
type topicControls struct {
	View  *view
	Stats *delayq.TopicStats
}

func topicControlsArgs(v *view, s *delayq.TopicStats) topicControls { return topicControls{v, s} }
