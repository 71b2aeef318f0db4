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
