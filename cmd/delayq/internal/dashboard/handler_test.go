package dashboard

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
)

// A form over the field limit is refused with 400 naming the limit, not as one that lacks its
// CSRF token; a form over the byte limit with 413.
func TestFormOverTheLimitsIsRefusedNamingThem(t *testing.T) {
	t.Parallel()
	postRaw := func(s *site, path, form string) answer {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(form))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return s.do(req)
	}
	tooMany := strings.Repeat("&f=1", 10000)

	s := newSite(t, nil)
	s.enqueue("t", delayq.Spec{ID: "j", Delay: time.Hour})
	token := url.QueryEscape(s.csrf("/topics/t/jobs/j"))
	a := postRaw(s, "/topics/t/jobs/j/cancel", "csrf_token="+token+"&confirm=yes"+tooMany)
	wantStatus(t, "an action of too many fields", a, http.StatusBadRequest)
	if msg := regexpFind(t, a.body, `id="error">([^<]*)<`); !strings.Contains(msg, "at most 10000 fields") || strings.Contains(msg, "CSRF") {
		t.Errorf("the refusal does not name the limit: %q", msg)
	}
	a = postRaw(s, "/topics/t/jobs/j/cancel", "csrf_token="+token+"&confirm=yes&f="+strings.Repeat("x", 1<<20))
	wantStatus(t, "an action of too many bytes", a, http.StatusRequestEntityTooLarge)
	if s.state("t", "j") != "delayed" {
		t.Errorf("the job is %s after refused cancels", s.state("t", "j"))
	}
	// Within the limits, the same form goes through.
	wantStatus(t, "the action", postRaw(s, "/topics/t/jobs/j/cancel", "csrf_token="+token+"&confirm=yes&f=1"), http.StatusSeeOther)

	locked := newSite(t, func(c *Config) { c.Tokens = []string{"a-token-of-enough-length"} })
	token = url.QueryEscape(locked.csrf("/login"))
	a = postRaw(locked, "/login", "csrf_token="+token+"&token=a-token-of-enough-length"+tooMany)
	wantStatus(t, "a login of too many fields", a, http.StatusBadRequest)
	if msg := regexpFind(t, a.body, `id="error">([^<]*)<`); !strings.Contains(msg, "at most 10000 fields") {
		t.Errorf("the refusal does not name the limit: %q", msg)
	}
}

// An action with its session and CSRF token is still refused when the browser says it comes
// from a page of another origin; from the dashboard's own page it goes through.
func TestActionFromAnotherOriginIsRefused(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("t", delayq.Spec{ID: "j", Delay: time.Hour})
	form := url.Values{csrfField: {s.csrf("/topics/t")}, "confirm": {"yes"}}
	for _, site := range []string{"cross-site", "same-site", "same-origin"} {
		req, err := http.NewRequest(http.MethodPost, s.url+"/topics/t/pause", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", site)
		a := s.do(req)
		if site != "same-origin" {
			wantStatus(t, "a pause from a "+site+" page", a, http.StatusForbidden)
			if s.topicStats("t").Paused {
				t.Fatalf("a pause from a %s page went through", site)
			}
			continue
		}
		wantStatus(t, "a pause from the dashboard's page", a, http.StatusSeeOther)
		if !s.topicStats("t").Paused {
			t.Error("a pause from the dashboard's page was not applied")
		}
	}
}

// A page that would grow past its budget is not built: the template stops at the budget and
// the answer is an error.
func TestRenderRefusesAPageOverItsBudget(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	for _, tc := range []struct {
		size   int
		status int
	}{
		{pageBudget / 2, http.StatusOK},
		{pageBudget + 1, http.StatusInternalServerError},
	} {
		rec := httptest.NewRecorder()
		s.dash.render(rec, http.StatusOK, "error", &view{Open: true, Title: "big", Data: strings.Repeat("x", tc.size)})
		if rec.Code != tc.status || rec.Body.Len() > pageBudget {
			t.Errorf("a page of %d bytes of data: %d, %d bytes", tc.size, rec.Code, rec.Body.Len())
		}
	}
	if !strings.Contains(s.log.String(), "the page is over its budget") {
		t.Errorf("the refusal is not logged:\n%s", s.log.String())
	}
}

// hostileID is an id that would run a script, break out of an attribute or a URL, and stretch
// a page, were it not escaped.
var hostileID = `<script>alert("id")</script>'"><img/src=x/onerror=alert(1)>` + strings.Repeat("W", 180)

// Every page escapes what users wrote (ids, bodies, names, errors): nothing in them runs as
// script, breaks out of an attribute or a URL, or stretches a page.
func TestPagesEscapeUserText(t *testing.T) {
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
