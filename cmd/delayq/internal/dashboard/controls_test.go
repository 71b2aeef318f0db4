package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
)

// topicStats is what Client.Stats reports of topic.
func (s *site) topicStats(topic string) *delayq.TopicStats {
	s.t.Helper()
	st, err := s.client.Stats(s.t.Context(), topic)
	if err != nil {
		s.t.Fatalf("Stats(%q): %v", topic, err)
	}
	return st
}

func wantContains(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(body, want) {
			t.Errorf("%s lacks %q", what, want)
		}
	}
}

func TestTopicPauseAndResume(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("orders", delayq.Spec{ID: "o1"})
	page := "/topics/orders"
	wantContains(t, "the topic page", s.get(page).body, `id="topic-state">active`, `id="topic-limits">none`,
		`id="topic-partitions">4`, `id="topic-pause"`, `id="topic-limits-set"`)
	wantStatus(t, "without the CSRF token", s.post(page+"/pause", url.Values{"confirm": {"yes"}}), http.StatusForbidden)
	ask := s.post(page+"/pause", url.Values{csrfField: {s.csrf(page)}})
	if !strings.Contains(ask.body, `name="confirm" value="yes"`) || !strings.Contains(ask.body, `Pause topic <strong>orders</strong>?`) || s.topicStats("orders").Paused {
		t.Fatalf("no confirmation, or the topic changed:\n%s", ask.body)
	}
	a := s.act(page, page+"/pause", nil)
	if a.header.Get("Location") != page+"?done=topic-pause&n=1" || !s.topicStats("orders").Paused {
		t.Fatalf("pause: %d %q, paused %v", a.status, a.header.Get("Location"), s.topicStats("orders").Paused)
	}
	wantContains(t, "the paused topic's page", s.get(page+"?done=topic-pause&n=1").body,
		`id="done">Paused the topic.`, `id="topic-state"><span class="state paused">paused</span>`, `id="topic-resume"`)
	wantContains(t, "the overview", s.get("/").body, `orders</a> <span class="state paused">paused</span>`)
	s.act(page, page+"/resume", nil)
	if s.topicStats("orders").Paused {
		t.Error("resume left the topic paused")
	}
	if strings.Contains(s.get("/").body, "paused") {
		t.Error("the overview still says paused")
	}
	wantStatus(t, "unknown action", s.act(page, page+"/explode", nil), http.StatusNotFound)
	wantStatus(t, "resume of a missing topic", s.act(page, "/topics/nope/resume", nil), http.StatusNotFound)
	for _, action := range []string{"topic-pause", "topic-resume"} {
		if n := actionCount(t, s, action); n != 1 {
			t.Errorf("%s counted %d times", action, n)
		}
	}
	if want := `who=anonymous action=topic-pause topic=orders changed=1`; !strings.Contains(s.log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, s.log.String())
	}
}

func TestTopicLimits(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("mail", delayq.Spec{ID: "m1"})
	page := "/topics/mail"
	set := url.Values{"rate": {" 8 "}, "period": {"1s"}, "concurrency": {"4"}}
	wantStatus(t, "without the CSRF token", s.post(page+"/limits", url.Values{"confirm": {"yes"}, "rate": {"8"}, "period": {"1s"}}), http.StatusForbidden)
	ask := s.post(page+"/limits", url.Values{csrfField: {s.csrf(page)}, "rate": {"8"}, "period": {"1s"}, "concurrency": {"4"}})
	wantContains(t, "the confirmation", ask.body, `rate <strong>8</strong> per <strong>1s</strong>`, `concurrency <strong>4</strong>?`,
		`name="rate" value="8"`, `name="period" value="1s"`, `name="concurrency" value="4"`)
	a := s.act(page, page+"/limits", set)
	want := delayq.TopicLimits{Rate: 8, Period: time.Second, Concurrency: 4}
	if a.header.Get("Location") != page+"?done=topic-limits&n=1" || s.topicStats("mail").Limits != want {
		t.Fatalf("limits: %d %q, stats %+v", a.status, a.header.Get("Location"), s.topicStats("mail").Limits)
	}
	wantContains(t, "the topic page", s.get(page+"?done=topic-limits&n=1").body, `id="done">Set the topic's limits.`,
		`id="topic-limits">8 per 1s · 4 at once`, `name="rate" inputmode="numeric" placeholder="rate" aria-label="deliveries per period (empty: no rate limit)" size="6" value="8"`)
	wantContains(t, "the overview", s.get("/").body, `<small class="limits">8 per 1s · 4 at once</small>`)
	if want := `action=topic-limits topic=mail rate=8 period=1s concurrency=4 changed=1`; !strings.Contains(s.log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, s.log.String())
	}
	s.act(page, page+"/limits", url.Values{"rate": {""}, "period": {""}, "concurrency": {""}})
	if got := s.topicStats("mail").Limits; got != (delayq.TopicLimits{}) {
		t.Errorf("empty fields left limits %+v", got)
	}
	if n := actionCount(t, s, "topic-limits"); n != 2 {
		t.Errorf("topic-limits counted %d times", n)
	}
}

func TestTopicLimitsRefused(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("mail", delayq.Spec{ID: "m1"})
	page := "/topics/mail"
	for name, c := range map[string]struct {
		form url.Values
		want string
	}{
		"below the partitions": {url.Values{"rate": {"2"}, "period": {"1s"}}, "is below the topic&#39;s 4 partitions"},
		"rate without period":  {url.Values{"rate": {"10"}}, "delayq: invalid period: a rate needs a period"},
		"concurrency too low":  {url.Values{"concurrency": {"3"}}, "delayq: invalid concurrency: 3 is below the topic&#39;s 4 partitions"},
		"negative":             {url.Values{"concurrency": {"-5"}}, "-5 is outside 0 (none) to 100000"},
		"script rate":          {url.Values{"rate": {"<script>alert(1)</script>"}, "period": {"1s"}}, "rate: want a whole number"},
		"script period":        {url.Values{"rate": {"8"}, "period": {`"><script>alert(1)</script>`}}, "period: want a duration"},
		"script concurrency":   {url.Values{"concurrency": {"<script>"}}, "concurrency: want a whole number"},
	} {
		a := s.act(page, page+"/limits", c.form)
		wantStatus(t, name, a, http.StatusBadRequest)
		if got := regexpFind(t, a.body, `id="error">([^<]*)<`); !strings.Contains(got, c.want) {
			t.Errorf("%s: error %q, want %q", name, got, c.want)
		}
		if strings.Contains(a.body, "<script>alert") {
			t.Errorf("%s: the page shows the input unescaped", name)
		}
	}
	// Refused before the confirmation too.
	ask := s.post(page+"/limits", url.Values{csrfField: {s.csrf(page)}, "rate": {"<script>"}})
	wantStatus(t, "a confirmation of a hostile rate", ask, http.StatusBadRequest)
	if got := s.topicStats("mail").Limits; got != (delayq.TopicLimits{}) {
		t.Errorf("refused limits changed the topic's: %+v", got)
	}
	if n := actionCount(t, s, "topic-limits"); n != 0 {
		t.Errorf("refused limits counted as done %d times", n)
	}
}

func TestTopicDelete(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("old", delayq.Spec{ID: "j", Delay: time.Hour})
	page := "/topics/old"
	ask := s.post(page+"/delete", url.Values{csrfField: {s.csrf(page)}})
	wantContains(t, "the confirmation", ask.body, `Delete topic <strong>old</strong>, with its pause and limits?`, `id="confirm" class="danger"`)
	a := s.act(page, page+"/delete", nil)
	wantStatus(t, "deleting a topic with a job", a, http.StatusConflict)
	if got := regexpFind(t, a.body, `id="error">([^<]*)<`); !strings.Contains(got, "holds 1 jobs (1 delayed, 0 ready, 0 reserved, 0 dead): delete them first") {
		t.Errorf("refusal: %q", got)
	}
	s.topicStats("old") // still there
	if err := s.client.Cancel(t.Context(), "old", "j"); err != nil {
		t.Fatal(err)
	}
	a = s.act(page, page+"/delete", nil)
	if a.header.Get("Location") != "/?done=topic-delete&n=1" {
		t.Fatalf("delete: %d %q\n%s", a.status, a.header.Get("Location"), a.body)
	}
	overview := s.get("/?done=topic-delete&n=1").body
	wantContains(t, "the overview", overview, `id="done">Deleted the topic.`)
	if strings.Contains(overview, `data-topic="old"`) {
		t.Error("the overview still lists the deleted topic")
	}
	wantStatus(t, "the deleted topic's page", s.get(page), http.StatusNotFound)
	if n := actionCount(t, s, "topic-delete"); n != 1 {
		t.Errorf("topic-delete counted %d times", n)
	}
}

func TestReadOnlyHidesAndRefusesTopicActions(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.ReadOnly = true })
	s.enqueue("t", delayq.Spec{ID: "j"})
	page := s.get("/topics/t")
	wantContains(t, "a read-only topic page", page.body, `id="topic-state">active`, `id="topic-partitions">4`)
	for _, action := range []string{`id="topic-pause"`, `id="topic-resume"`, `id="topic-limits-set"`, `name="rate"`, `id="topic-delete"`} {
		if strings.Contains(page.body, action) {
			t.Errorf("the topic page shows %s on a read-only dashboard", action)
		}
	}
	token := s.csrf("/")
	for _, action := range []string{"pause", "resume", "limits", "delete"} {
		a := s.post("/topics/t/"+action, url.Values{csrfField: {token}, "confirm": {"yes"}, "concurrency": {"8"}})
		wantStatus(t, action, a, http.StatusForbidden)
	}
	if st := s.topicStats("t"); st.Paused || st.Limits != (delayq.TopicLimits{}) {
		t.Errorf("a read-only dashboard changed the topic: %+v", st)
	}
}

// The topic page shows the topic's default unique_for when it sets one.
func TestTopicPageShowsItsDefaultUniqueFor(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("orders", delayq.Spec{ID: "o1"})
	if strings.Contains(s.get("/topics/orders").body, `id="topic-unique-for"`) {
		t.Error("a topic without defaults shows a unique_for")
	}
	for d, want := range map[time.Duration]string{
		90 * time.Minute:   `<dd id="topic-unique-for">1h30m after its jobs end, for jobs with an id that give none</dd>`,
		delayq.NoUniqueFor: `<dd id="topic-unique-for">none: the ids of its jobs are free once they end</dd>`,
	} {
		if err := s.client.SetTopicDefaults(s.t.Context(), "orders", delayq.TopicDefaults{UniqueFor: d}); err != nil {
			t.Fatal(err)
		}
		wantContains(t, "the topic page", s.get("/topics/orders").body, want)
	}
}
