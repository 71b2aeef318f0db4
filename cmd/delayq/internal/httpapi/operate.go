package httpapi

import (
	"bytes"
	"context"
	_ "embed"
	"html/template"
	"net/http"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// openAPIDoc is the API's OpenAPI 3 document, served at /v1/openapi.json.
//
//go:embed openapi.json
var openAPIDoc []byte

// readyTimeout bounds the store check of /readyz.
const readyTimeout = time.Second

// rootPage is served at / by the API handler alone; delayq server mounts the dashboard
// (cmd/delayq/internal/dashboard) over it. With tokens set, it links only to
// what a browser can open without one, and says how to send a token to the rest.
var rootPage = template.Must(template.New("root").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>delayq</title></head>
<body>
<h1>delayq</h1>
<p>A distributed delay queue on Redis.</p>
{{if .Auth}}<p>This server needs an API token for <code>/v1/</code>{{if not .PublicMetrics}} and <code>/metrics</code>{{end}}:
send it in a header, <code>Authorization: Bearer &lt;token&gt;</code>, for example
<code>curl -H "Authorization: Bearer $DELAYQ_TOKEN" {{.Origin}}/v1/topics</code>.</p>
<ul>
{{if .PublicMetrics}}<li><a href="/metrics">Metrics</a></li>
{{end}}<li><a href="/healthz">Liveness</a></li>
<li><a href="/readyz">Readiness</a></li>
</ul>
{{else}}<ul>
<li><a href="/v1/openapi.json">HTTP API (OpenAPI 3 document)</a></li>
<li><a href="/v1/topics">Topics</a></li>
<li><a href="/metrics">Metrics</a></li>
<li><a href="/readyz">Readiness</a></li>
</ul>
{{end}}</body>
</html>
`))

// root is GET /.
func (a *api) root(w http.ResponseWriter, r *http.Request) error {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	var buf bytes.Buffer
	err := rootPage.Execute(&buf, struct {
		Auth, PublicMetrics bool
		Origin              string
	}{!a.keys.Open(), a.public, scheme + "://" + r.Host})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
	return nil
}

// healthz is GET /healthz: the process runs.
func (a *api) healthz(w http.ResponseWriter, r *http.Request) error {
	a.writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz is GET /readyz: the store answers within readyTimeout.
func (a *api) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), min(readyTimeout, a.timeout))
	defer cancel()
	err := boundedErr(ctx, a.readyInline, func(ctx context.Context) error {
		if a.redis != nil {
			return a.redis.Ping(ctx).Err()
		}
		_, err := a.c.TopicNames(ctx)
		return err
	})
	if err != nil {
		a.writeJSON(w, http.StatusServiceUnavailable, apiv1.ErrorResponse{
			Error: apiv1.Error{Code: codeUnavailable, Message: "the store does not answer: " + err.Error()}})
		return nil
	}
	a.writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

// metrics is GET /metrics, in Prometheus text format.
func (a *api) metrics(w http.ResponseWriter, r *http.Request) error {
	a.metricsH.ServeHTTP(w, r)
	return nil
}

// openAPI is GET /v1/openapi.json.
func (a *api) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDoc)
	return nil
}

// listTopics is GET /v1/topics.
func (a *api) listTopics(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := a.storeContext(r)
	defer cancel()
	stats, err := bounded(ctx, a.inline, a.c.Topics)
	if err != nil {
		return err
	}
	out := apiv1.TopicList{Topics: make([]apiv1.TopicStats, 0, len(stats))}
	for i := range stats {
		out.Topics = append(out.Topics, apiv1.NewTopicStats(&stats[i]))
	}
	a.writeJSON(w, http.StatusOK, out)
	return nil
}

// getTopic is GET /v1/topics/{topic}.
func (a *api) getTopic(w http.ResponseWriter, r *http.Request) error {
	topic, err := topicParam(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	s, err := bounded(ctx, a.inline, func(ctx context.Context) (*delayq.TopicStats, error) { return a.c.Stats(ctx, topic) })
	if err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, apiv1.NewTopicStats(s))
	return nil
}
