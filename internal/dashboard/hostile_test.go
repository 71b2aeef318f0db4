package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
)

// hostileID is an id that would run a script, break out of an attribute or a URL, and stretch
// a page, were it not escaped.
var hostileID = `<script>alert("id")</script>'"><img/src=x/onerror=alert(1)>` + strings.Repeat("W", 180)

func TestHostileDataIsEscaped(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	body := []byte(`{"html": "</pre><script>alert(\"body\")</script>", "long": "` + strings.Repeat("x", 100_000) + `"}`)
	s.enqueue("t", delayq.Spec{ID: hostileID, Body: body, Format: delayq.FormatJSON, Delay: time.Hour})
	s.bury("t", "<b>dead</b>")
	s.enqueue("t", delayq.Spec{ID: "text", Body: []byte(`<script>alert("text")</script>`)})
	s.putSchedule("hostile", delayq.ScheduleSpec{Cron: "@hourly", Topic: "t",
		Job: delayq.Spec{Body: []byte(`{"html": "</pre><script>alert(\"schedule\")</script>'"}`), Format: delayq.FormatJSON}})
	job := jobPath("t", hostileID)
	pages := map[string]string{
		"schedules":  "/schedules",
		"schedule":   "/schedules/hostile",
		"job":        job,
		"text job":   "/topics/t/jobs/text",
		"topic":      "/topics/t?state=delayed",
		"dead":       "/topics/t?state=dead",
		"search":     "/search?q=" + url.QueryEscape(hostileID) + "&topic=nope",
		"bad search": "/search?q=" + url.QueryEscape("<script>alert(1)</script> x"),
	}
	for name, path := range pages {
		a := s.get(path)
		if a.status >= 500 {
			t.Errorf("%s: status %d", name, a.status)
		}
		for _, raw := range []string{"<script>alert", "<img", "<b>dead", `</pre><script>`} {
			if strings.Contains(a.body, raw) {
				t.Errorf("%s shows %q unescaped", name, raw)
			}
		}
	}
	if sch := s.get("/schedules/hostile").body; !strings.Contains(sch, `&lt;/pre&gt;&lt;script&gt;alert(\&#34;schedule\&#34;)&lt;/script&gt;&#39;`) {
		t.Errorf("the schedule's page does not show its body escaped:\n%s", sch)
	}
	a := s.get(job)
	for _, want := range []string{`&lt;script&gt;alert(&#34;id&#34;)`, `&lt;/pre&gt;&lt;script&gt;alert(\&#34;body\&#34;)`, `id="cancel"`, strings.Repeat("x", 100_000)} {
		if !strings.Contains(a.body, want) {
			t.Errorf("job page lacks %.60q", want)
		}
	}
	// Its actions reach the job, whatever its id.
	if a := s.act(job, job+"/cancel", nil); a.status != http.StatusSeeOther || !strings.Contains(s.state("t", hostileID), "not found") {
		t.Errorf("cancel of the hostile id: %d, job %s", a.status, s.state("t", hostileID))
	}
}
