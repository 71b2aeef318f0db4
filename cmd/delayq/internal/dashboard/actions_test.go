package dashboard

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
)

func TestActionsNeedTheCSRFToken(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("t", delayq.Spec{ID: "j", Delay: time.Hour})
	token := s.csrf("/topics/t/jobs/j")
	for name, form := range map[string]url.Values{
		"none":  {"confirm": {"yes"}},
		"wrong": {"confirm": {"yes"}, csrfField: {token + "x"}},
		"empty": {"confirm": {"yes"}, csrfField: {""}},
	} {
		a := s.post("/topics/t/jobs/j/cancel", form)
		wantStatus(t, name, a, http.StatusForbidden)
		if !strings.Contains(a.body, "CSRF") {
			t.Errorf("%s: the refusal does not say why:\n%s", name, a.body)
		}
	}
	// Another browser's token is not this one's.
	other := newBrowser(t)
	mine := s.http
	s.http = other
	wantStatus(t, "another session's token", s.post("/topics/t/jobs/j/cancel", url.Values{"confirm": {"yes"}, csrfField: {token}}), http.StatusForbidden)
	s.http = mine
	if got := s.state("t", "j"); got != "delayed" {
		t.Fatalf("after refused cancels the job is %s", got)
	}
	// The header does as well as the field.
	req, _ := http.NewRequest(http.MethodPost, s.url+"/topics/t/jobs/j/cancel", strings.NewReader("confirm=yes"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(csrfHeader, token)
	wantStatus(t, "token in the header", s.do(req), http.StatusSeeOther)
	if got := s.state("t", "j"); !strings.Contains(got, "not found") {
		t.Errorf("after the cancel the job is %s", got)
	}
}

func TestJobActions(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("t", delayq.Spec{ID: "j", Delay: time.Hour})
	page := "/topics/t/jobs/j"
	// Without confirm=yes an action asks first and does nothing.
	ask := s.post(page+"/run-now", url.Values{csrfField: {s.csrf(page)}})
	wantStatus(t, "confirmation", ask, http.StatusOK)
	if !strings.Contains(ask.body, `name="confirm" value="yes"`) || s.state("t", "j") != "delayed" {
		t.Fatalf("no confirmation, or the job changed:\n%s", ask.body)
	}
	a := s.act(page, page+"/run-now", nil)
	if a.status != http.StatusSeeOther || a.header.Get("Location") != page+"?done=run-now&n=1" || s.state("t", "j") != "ready" {
		t.Fatalf("run now: %d %q, job %s", a.status, a.header.Get("Location"), s.state("t", "j"))
	}
	if !strings.Contains(s.get(page+"?done=run-now&n=1").body, `id="done">The job is due now.`) {
		t.Error("no note of what was done")
	}
	wantStatus(t, "bad delay", s.act(page, page+"/reschedule", url.Values{"delay": {"soon"}}), http.StatusBadRequest)
	s.act(page, page+"/reschedule", url.Values{"delay": {"2h"}})
	if j, _ := s.client.Get(t.Context(), "t", "j"); j.State != delayq.StateDelayed || time.Until(j.RunAt) < 119*time.Minute {
		t.Errorf("rescheduled: %s at %v", j.State, j.RunAt)
	}
	wantStatus(t, "requeue a live job", s.act(page, page+"/requeue", nil), http.StatusConflict)
	wantStatus(t, "unknown action", s.act(page, page+"/explode", nil), http.StatusNotFound)
	a = s.act(page, page+"/cancel", nil)
	if a.header.Get("Location") != "/topics/t?done=cancel&n=1" || !strings.Contains(s.state("t", "j"), "not found") {
		t.Errorf("cancel: %q, job %s", a.header.Get("Location"), s.state("t", "j"))
	}
	for _, want := range []string{`who=anonymous action=run-now topic=t ids=[j]`, `action=cancel`, `action=reschedule`} {
		if !strings.Contains(s.log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, s.log.String())
		}
	}
}

func TestDeadLetterActions(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	for _, id := range []string{"a", "b", "c", "d"} {
		s.bury("t", id)
	}
	list := "/topics/t?state=dead"
	page := s.get(list)
	for _, want := range []string{`value="a"`, `boom &lt;b&gt;`, `id="requeue-selected"`, `name="all" value="yes"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("dead list lacks %q", want)
		}
	}
	a := s.act(list, "/topics/t/dead/requeue", url.Values{"id": {"a", "b"}})
	if a.header.Get("Location") != "/topics/t?state=dead&done=dead-requeue&n=2" || s.state("t", "a") != "ready" || s.state("t", "c") != "dead" {
		t.Fatalf("requeue a, b: %q; a %s, c %s", a.header.Get("Location"), s.state("t", "a"), s.state("t", "c"))
	}
	wantStatus(t, "nothing selected", s.act(list, "/topics/t/dead/delete", nil), http.StatusBadRequest)
	a = s.act(list, "/topics/t/dead/delete", url.Values{"all": {"yes"}})
	if !strings.HasSuffix(a.header.Get("Location"), "n=2") || !strings.Contains(s.state("t", "d"), "not found") || s.state("t", "a") != "ready" {
		t.Errorf("delete all: %q; d %s", a.header.Get("Location"), s.state("t", "d"))
	}
	if n := actionCount(t, s, "dead-requeue"); n != 1 {
		t.Errorf("dead-requeue counted %d times", n)
	}
	if n := actionCount(t, s, "dead-delete"); n != 1 {
		t.Errorf("dead-delete counted %d times", n)
	}
	if !strings.Contains(s.log.String(), `action=dead-delete topic=t ids=all`) {
		t.Errorf("log:\n%s", s.log.String())
	}
}

// actionCount is how many times action succeeded by the counter the site's registry serves.
func actionCount(t *testing.T, s *site, action string) int {
	t.Helper()
	families, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "delayq_dashboard_actions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["action"] == action && labels["outcome"] == "ok" {
				return int(m.GetCounter().GetValue())
			}
		}
	}
	return 0
}

// The confirmation sends its form to the job it asked about, whatever the job's id: a slash, a
// question mark or a percent sign in it stays escaped in the form's address.
func TestConfirmationActsOnTheJobItNames(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	for _, id := range []string{"a/b", "a?b", "a%41", "aA"} {
		s.enqueue("t", delayq.Spec{ID: id, Delay: time.Hour})
	}
	for _, id := range []string{"a/b", "a?b", "a%41"} {
		page := jobPath("t", id)
		ask := s.post(page+"/cancel", url.Values{csrfField: {s.csrf(page)}})
		wantStatus(t, "confirmation of "+id, ask, http.StatusOK)
		action := html.UnescapeString(regexpFind(t, ask.body, `<form method="post" action="([^"]*)"`))
		a := s.act(page, action, nil)
		if a.status != http.StatusSeeOther || !strings.Contains(s.state("t", id), "not found") {
			t.Errorf("confirmed cancel of %q, sent to %s: %d; the job is %s", id, action, a.status, s.state("t", id))
		}
	}
	if got := s.state("t", "aA"); got != "delayed" {
		t.Errorf("job aA, never confirmed, is %s", got)
	}
}
