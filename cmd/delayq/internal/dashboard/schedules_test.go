package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
)

// putSchedule creates schedule name on the site's store.
func (s *site) putSchedule(name string, spec delayq.ScheduleSpec) *delayq.Schedule {
	s.t.Helper()
	sch, _, err := s.client.PutSchedule(s.t.Context(), name, spec)
	if err != nil {
		s.t.Fatalf("PutSchedule(%q): %v", name, err)
	}
	return sch
}

func (s *site) paused(name string) bool {
	s.t.Helper()
	sch, err := s.client.GetSchedule(s.t.Context(), name)
	if err != nil {
		s.t.Fatalf("GetSchedule(%q): %v", name, err)
	}
	return sch.Paused
}

func TestSchedulesPages(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	if strings.Contains(s.get("/").body, `href="/schedules"`) {
		t.Error("the overview links to schedules while there are none")
	}
	if a := s.get("/schedules"); a.status != http.StatusOK || !strings.Contains(a.body, "No schedules") {
		t.Errorf("no schedules: %d\n%s", a.status, a.body)
	}
	s.putSchedule("nightly-report", delayq.ScheduleSpec{Cron: "30 2 * * *", TimeZone: "Europe/Berlin", Topic: "reports",
		Job: delayq.Spec{Body: []byte(`{"report":"daily"}`), Format: delayq.FormatJSON}})
	s.putSchedule("heartbeat", delayq.ScheduleSpec{Cron: "@every 1h", Topic: "pings"})
	if _, err := s.client.PauseSchedule(t.Context(), "heartbeat"); err != nil {
		t.Fatal(err)
	}
	if got := regexpFind(t, s.get("/").body, `id="schedules-link">Schedules <b>(\d+)</b>`); got != "2" {
		t.Errorf("the overview counts %s schedules", got)
	}
	list := s.get("/schedules").body
	for _, want := range []string{`<tr data-schedule="heartbeat">`, `<code>30 2 * * *</code>`, `Europe/Berlin`, `href="/topics/reports"`,
		`<span class="state paused">paused</span>`, `data-action="resume"`, `data-action="pause"`, `data-action="delete"`} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %q", want)
		}
	}
	page := s.get("/schedules/nightly-report")
	wantStatus(t, "a schedule's page", page, http.StatusOK)
	for _, want := range []string{`<dd>Europe/Berlin</dd>`, `&#34;report&#34;: &#34;daily&#34;`, `running`, `data-action="pause"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the schedule's page lacks %q", want)
		}
	}
	if runs := regexpFind(t, page.body, `(?s)id="next-runs">(.*?)</dd>`); strings.Count(runs, ":30:00") != 10 || strings.Count(runs, "(02:30:00 CE") != 5 {
		t.Errorf("next runs, in UTC and at 02:30 in Berlin: %s", runs)
	}
	if row := regexpFind(t, list, `(?s)<tr data-schedule="nightly-report">(.*?)</tr>`); !strings.Contains(row, "(02:30:00 CE") {
		t.Errorf("the list shows the next runs of nightly-report without Berlin's time: %s", row)
	}
	if row := regexpFind(t, list, `(?s)<tr data-schedule="heartbeat">(.*?)</tr>`); strings.Contains(row, `class="zone"`) {
		t.Errorf("the list shows a UTC schedule's times twice: %s", row)
	}
	wantStatus(t, "a missing schedule", s.get("/schedules/nope"), http.StatusNotFound)
}

func TestScheduleActions(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.putSchedule("hourly", delayq.ScheduleSpec{Cron: "@hourly", Topic: "t"})
	page := "/schedules/hourly"
	wantStatus(t, "without the CSRF token", s.post(page+"/pause", url.Values{"confirm": {"yes"}}), http.StatusForbidden)
	ask := s.post(page+"/pause", url.Values{csrfField: {s.csrf(page)}})
	if !strings.Contains(ask.body, `name="confirm" value="yes"`) || !strings.Contains(ask.body, `Pause schedule <strong>hourly</strong>?`) || s.paused("hourly") {
		t.Fatalf("no confirmation, or the schedule changed:\n%s", ask.body)
	}
	a := s.act(page, page+"/pause", nil)
	if a.header.Get("Location") != page+"?done=schedule-pause&n=1" || !s.paused("hourly") {
		t.Fatalf("pause: %d %q", a.status, a.header.Get("Location"))
	}
	if !strings.Contains(s.get(page+"?done=schedule-pause&n=1").body, `id="done">Paused the schedule.`) {
		t.Error("no note of the pause")
	}
	s.act(page, page+"/resume", nil)
	if s.paused("hourly") {
		t.Error("resume left the schedule paused")
	}
	wantStatus(t, "unknown action", s.act(page, page+"/explode", nil), http.StatusNotFound)
	wantStatus(t, "a missing schedule", s.act("/schedules", "/schedules/nope/pause", nil), http.StatusNotFound)
	a = s.act(page, page+"/delete", nil)
	if a.header.Get("Location") != "/schedules?done=schedule-delete&n=1" {
		t.Errorf("delete: %d %q", a.status, a.header.Get("Location"))
	}
	if _, err := s.client.GetSchedule(t.Context(), "hourly"); err == nil {
		t.Error("the schedule is still there")
	}
	for _, action := range []string{"schedule-pause", "schedule-resume", "schedule-delete"} {
		if n := actionCount(t, s, action); n != 1 {
			t.Errorf("%s counted %d times", action, n)
		}
	}
	if want := `who=anonymous action=schedule-pause schedule=hourly changed=1`; !strings.Contains(s.log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, s.log.String())
	}
}

func TestReadOnlyHidesAndRefusesScheduleActions(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.ReadOnly = true })
	s.putSchedule("hourly", delayq.ScheduleSpec{Cron: "@hourly", Topic: "t"})
	for _, path := range []string{"/schedules", "/schedules/hourly"} {
		if page := s.get(path); page.status != http.StatusOK || strings.Contains(page.body, "data-action=") {
			t.Errorf("%s: %d, or it shows actions on a read-only dashboard", path, page.status)
		}
	}
	token := s.csrf("/schedules")
	for _, action := range []string{"pause", "delete"} {
		a := s.post("/schedules/hourly/"+action, url.Values{csrfField: {token}, "confirm": {"yes"}})
		wantStatus(t, action, a, http.StatusForbidden)
	}
	if s.paused("hourly") {
		t.Error("a read-only dashboard paused the schedule")
	}
}

// A schedule's page shows its start and end, and its last tick, in its time zone beside UTC,
// and how many of its ticks found their id taken.
func TestSchedulePageShowsItsZoneAndSkippedTicks(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	start := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	for i := range 10 {
		tk := start.Add(time.Duration(i) * time.Second)
		if _, err := s.client.Enqueue(t.Context(), "t", delayq.Spec{ID: delayq.TickID("taken", tk), RunAt: tk}); err != nil {
			t.Fatal(err)
		}
	}
	s.putSchedule("taken", delayq.ScheduleSpec{Cron: "@every 1s", Topic: "t", TimeZone: "Asia/Kolkata",
		StartAt: start, EndAt: start.Add(24 * time.Hour)})
	page := s.get("/schedules/taken")
	wantStatus(t, "the schedule's page", page, http.StatusOK)
	kolkata := start.In(mustZone(t, "Asia/Kolkata")).Format("15:04:05 MST")
	if got := regexpFind(t, page.body, `(?s)id="start-at">(.*?)</dd>`); !strings.Contains(got, start.Format("2006-01-02T15:04:05.000Z")) || !strings.Contains(got, "("+kolkata) {
		t.Errorf("start: %s; want %s in UTC and %s in Kolkata", got, start, kolkata)
	}
	if got := regexpFind(t, page.body, `(?s)id="end-at">(.*?)</dd>`); !strings.Contains(got, `class="zone"`) {
		t.Errorf("end: %s; want Kolkata's time too", got)
	}
	if got := regexpFind(t, page.body, `(?s)id="skipped-ticks">(.*?)</dd>`); got == "" || got[0] == '0' {
		t.Errorf("skipped ticks: %q; want the put's first ticks counted", got)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// A schedule's job body of deep nesting is shown as stored, not indented into a page of
// 160 MB.
func TestSchedulePageBoundsADeeplyNestedBody(t *testing.T) {
	s := newSite(t, nil)
	body := deepJSON(9000)
	s.putSchedule("deep", delayq.ScheduleSpec{Cron: "@hourly", Topic: "t", Job: delayq.Spec{Body: body, Format: delayq.FormatJSON}})
	var a answer
	alloc := allocatedBy(func() { a = s.get("/schedules/deep") })
	wantStatus(t, "schedule", a, http.StatusOK)
	if len(a.body) > 1<<20 || alloc > 32<<20 {
		t.Fatalf("the page of a %d-byte body: %d bytes, %d bytes allocated", len(body), len(a.body), alloc)
	}
	for _, want := range []string{`<pre class="body" id="body">` + strings.Repeat("[", 9000) + "0,0,", `id="body-note"`,
		`<a href="/schedules/deep/body" id="body-download">download</a>`} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the schedule page lacks %.80q", want)
		}
	}
}

// putSchedules creates n schedules named name(i) in topic, sixteen at a time.
func (s *site) putSchedules(n int, name func(i int) string, spec delayq.ScheduleSpec) {
	s.t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, _, err := s.client.PutSchedule(context.Background(), name(i), spec); err != nil {
				s.t.Errorf("PutSchedule(%q): %v", name(i), err)
			}
		})
	}
	wg.Wait()
}

// The list of schedules shows them a page at a time: thousands of schedules with long names,
// all on one page, took it past its budget, and every view read every schedule with its body.
func TestSchedulesListIsPagedWithinItsBudget(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	const n = 3000
	name := func(i int) string { return fmt.Sprintf("%s-%05d", strings.Repeat("s", 120), i) }
	s.putSchedules(n, name, delayq.ScheduleSpec{Cron: "@every 1h", TimeZone: "Europe/Berlin", Topic: strings.Repeat("t", 128)})
	first := s.get("/schedules")
	wantStatus(t, "the first page of 3,000 schedules", first, http.StatusOK)
	if rows := strings.Count(first.body, "<tr data-schedule="); rows != schedulesPerPage {
		t.Errorf("the first page shows %d schedules, want %d", rows, schedulesPerPage)
	}
	pages := (n + schedulesPerPage - 1) / schedulesPerPage
	if want := `href="/schedules?page=2" rel="next"`; !strings.Contains(first.body, want) {
		t.Errorf("the first page does not link the next: want %s", want)
	}
	if !strings.Contains(first.body, fmt.Sprintf("page 1 of %d (%d schedules)", pages, n)) {
		t.Error("the first page does not say how many pages and schedules there are")
	}
	last := s.get(fmt.Sprintf("/schedules?page=%d", pages+5))
	wantStatus(t, "a page past the last", last, http.StatusOK)
	if !strings.Contains(last.body, `<tr data-schedule="`+name(n-1)+`">`) || strings.Contains(last.body, `rel="next"`) {
		t.Error("a page past the last does not show the last page")
	}
	if got := regexpFind(t, s.get("/").body, `id="schedules-link">Schedules <b>(\d+)</b>`); got != strconv.Itoa(n) {
		t.Errorf("the overview counts %s schedules, want %d", got, n)
	}
}

// The overview counts the schedules without reading them: each holds its job's body, and 40
// bodies of 1 MiB made every view of the overview read 40 MiB.
func TestOverviewCountsSchedulesWithoutReadingTheirBodies(t *testing.T) {
	s := newSite(t, nil)
	body := []byte(strings.Repeat("x", 1<<20))
	s.putSchedules(40, func(i int) string { return fmt.Sprintf("big-%02d", i) }, delayq.ScheduleSpec{Cron: "@every 1h", Topic: "t", Job: delayq.Spec{Body: body}})
	s.get("/") // the first view loads what views share (templates, zones)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	page := s.get("/")
	runtime.ReadMemStats(&after)
	wantStatus(t, "the overview", page, http.StatusOK)
	if got := regexpFind(t, page.body, `id="schedules-link">Schedules <b>(\d+)</b>`); got != "40" {
		t.Errorf("the overview counts %s schedules, want 40", got)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("a view of the overview allocated %d MiB: it read the schedules' bodies", alloc>>20)
	}
}

// A token bound to some topics sees only the schedules of its topics: the list leaves the
// others out, and their pages and bodies are refused.
func TestSchedulesKeepATokenToItsTopics(t *testing.T) {
	t.Parallel()
	ps, err := access.ParseFile([]byte(`{"tokens": [
		{"name": "orders-on-call", "token": "reader-token-000000001", "role": "reader", "topics": ["orders*"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := newSite(t, func(c *Config) { c.Keyring = access.NewKeyring(ps) })
	s.putSchedule("orders-nightly", delayq.ScheduleSpec{Cron: "0 9 * * *", Topic: "orders", Job: delayq.Spec{Body: []byte(`{"sku":"pen"}`)}})
	s.putSchedule("payroll-nightly", delayq.ScheduleSpec{Cron: "0 9 * * *", Topic: "payroll", Job: delayq.Spec{Body: []byte(`{"salary":"bob-4200"}`)}})
	reader := s.browserOf("reader-token-000000001")

	list := reader.get("/schedules")
	wantStatus(t, "the schedules list", list, http.StatusOK)
	if strings.Contains(list.body, "payroll") || !strings.Contains(list.body, "orders-nightly") {
		t.Errorf("the schedules list of a token of orders* shows:\n%s", list.body)
	}
	for _, path := range []string{"/schedules/payroll-nightly", "/schedules/payroll-nightly/body"} {
		a := reader.get(path)
		wantStatus(t, path, a, http.StatusForbidden)
		if strings.Contains(a.body, "bob-4200") {
			t.Errorf("%s shows the payroll schedule's body to a token of orders*", path)
		}
	}
	wantStatus(t, "the orders schedule", reader.get("/schedules/orders-nightly"), http.StatusOK)
}
