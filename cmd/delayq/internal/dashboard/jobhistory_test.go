package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/internal/pgtest"
)

// archived returns an outcome of job topic/id that finished sec seconds after base.
func archived(topic, id, outcome string, base time.Time, sec int, lastErr string) archive.Outcome {
	return archive.Outcome{Topic: topic, ID: id, Outcome: outcome, Attempts: 1, Body: []byte(`{"order":"` + id + `"}`), Format: 1,
		TTR: time.Second, CreatedAt: base, RunAt: base, FinishedAt: base.Add(time.Duration(sec) * time.Second), LastError: lastErr}
}

// TestJobHistory shows the archive on the dashboard: a History section on a job's page, a
// page for a job that Redis no longer has, the history search with its pages, and what the
// pages say when PostgreSQL is stopped.
func TestJobHistory(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	ctx := context.Background()
	store, err := archive.Open(ctx, pg.URL(), archive.Options{KeepBodies: true, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	batch := []archive.Outcome{
		archived("t", "gone", archive.Failed, base, 1, "first try <failed>"),
		archived("t", "gone", archive.Acked, base, 2, ""),
		archived("t", "live", archive.Failed, base, 3, "timeout"),
		archived("t", "kept", archive.Cancelled, base, 5, ""),
	}
	// A job put over the beanstalkd protocol, with the most urgent beanstalkd priority.
	beanstalkd := archived("t", "00000000000000000007", archive.Acked, base, 4, "")
	beanstalkd.BeanstalkdPriority = new(uint32)
	batch = append(batch, beanstalkd)
	for i := range jobsPerPage + 3 {
		batch = append(batch, archived("bulk", fmt.Sprintf("b%03d", i), archive.Cancelled, base, 10+i, ""))
	}
	if _, err := store.Insert(ctx, batch); err != nil {
		t.Fatal(err)
	}
	s := newSite(t, func(c *Config) { c.Archive = store })
	s.enqueue("t", delayq.Spec{ID: "live", Delay: time.Hour})
	s.enqueue("t", delayq.Spec{ID: "kept", Delay: time.Hour, UniqueFor: time.Hour})
	if err := s.client.Cancel(ctx, "t", "kept"); err != nil {
		t.Fatal(err)
	}

	live := s.get("/topics/t/jobs/live")
	wantStatus(t, "a job in Redis", live, http.StatusOK)
	for _, want := range []string{"<h2>History</h2>", `data-outcome="failed"`, "timeout", `id="reschedule"`, `id="history-link"`} {
		if !strings.Contains(live.body, want) {
			t.Errorf("the page of a job in Redis lacks %q:\n%s", want, live.body)
		}
	}
	gone := s.get("/topics/t/jobs/gone")
	wantStatus(t, "a job gone from Redis", gone, http.StatusOK)
	for _, want := range []string{`id="gone"`, `data-outcome="acked"`, "first try &lt;failed&gt;", `&#34;order&#34;: &#34;gone&#34;`} {
		if !strings.Contains(gone.body, want) {
			t.Errorf("the page of a job gone from Redis lacks %q:\n%s", want, gone.body)
		}
	}
	if strings.Contains(gone.body, `id="cancel"`) || strings.Index(gone.body, `"acked"`) > strings.Index(gone.body, `"failed"`) {
		t.Errorf("a gone job's page offers actions, or its history is not newest first:\n%s", gone.body)
	}
	if !strings.Contains(gone.body, `id="archived"`) || strings.Contains(gone.body, `id="beanstalkd-priority"`) {
		t.Errorf("the page of a job gone from Redis lacks its archived fields, or shows a beanstalkd priority:\n%s", gone.body)
	}
	goneBeanstalkd := s.get("/topics/t/jobs/00000000000000000007")
	wantStatus(t, "a beanstalkd job gone from Redis", goneBeanstalkd, http.StatusOK)
	for _, want := range []string{`<dt>Priority</dt><dd>0</dd>`, `<dd id="beanstalkd-priority">0</dd>`} {
		if !strings.Contains(goneBeanstalkd.body, want) {
			t.Errorf("the page of a beanstalkd job gone from Redis lacks %q:\n%s", want, goneBeanstalkd.body)
		}
	}
	wantStatus(t, "a job neither in Redis nor archived", s.get("/topics/t/jobs/never"), http.StatusNotFound)
	// An ended job that keeps its id taken: how it ended, and its history and body as archived.
	kept := s.get("/topics/t/jobs/kept")
	wantStatus(t, "an ended job that keeps its id, archived", kept, http.StatusOK)
	wantContains(t, "the page of an archived ended job", kept.body, `id="outcome">cancelled`, `id="gone"`, `id="archived"`,
		`&#34;order&#34;: &#34;kept&#34;`)
	if b := s.get("/topics/t/jobs/kept/body"); b.status != http.StatusOK || b.body != `{"order":"kept"}` {
		t.Errorf("the body of an archived ended job: %d %q", b.status, b.body)
	}

	search := s.get("/history?topic=t&outcome=failed")
	wantStatus(t, "history search", search, http.StatusOK)
	if n := strings.Count(search.body, "<tr data-outcome="); n != 2 || !strings.Contains(search.body, `href="/topics/t/jobs/gone"`) {
		t.Errorf("the search for failed attempts of t shows %d rows:\n%s", n, search.body)
	}
	first := s.get("/history?topic=bulk")
	next := regexpFind(t, first.body, `href="(/history\?[^"]+)" rel="next"`)
	second := s.get(strings.ReplaceAll(next, "&amp;", "&"))
	if n, m := strings.Count(first.body, "<tr data-outcome="), strings.Count(second.body, "<tr data-outcome="); n != jobsPerPage || m != 3 ||
		!strings.Contains(second.body, "bulk/b000") || !strings.Contains(second.body, `href="/history?topic=bulk">first page`) {
		t.Errorf("pages of %d and %d rows, want %d and 3:\n%s", n, m, jobsPerPage, second.body)
	}
	for _, bad := range []string{"/history?id=gone", "/history?outcome=lost", "/history?cursor=x"} {
		wantStatus(t, bad, s.get(bad), http.StatusBadRequest)
	}

	pg.Stop(t)
	live = s.get("/topics/t/jobs/live")
	wantStatus(t, "a job in Redis with PostgreSQL stopped", live, http.StatusOK)
	if !strings.Contains(live.body, `id="history-error"`) {
		t.Errorf("the page does not say that the archive cannot be read:\n%s", live.body)
	}
	wantStatus(t, "history search with PostgreSQL stopped", s.get("/history?topic=t"), http.StatusServiceUnavailable)
}

func TestNoHistoryWithoutArchive(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("t", delayq.Spec{ID: "live", Delay: time.Hour})
	if a := s.get("/topics/t/jobs/live"); a.status != http.StatusOK || strings.Contains(a.body, "History") {
		t.Errorf("a job page without an archive: %d\n%s", a.status, a.body)
	}
	a := s.get("/history?topic=t")
	wantStatus(t, "history without an archive", a, http.StatusNotFound)
	if !strings.Contains(a.body, "--archive") {
		t.Errorf("the page does not say what turns the history on:\n%s", a.body)
	}
}

// A reader's token bound to some topics finds jobs, searches bodies and reads the history of
// those topics alone: the searches that read every topic, or another topic, would show it
// the jobs (and, a body search, the bodies) that the pages of those topics refuse it.
func TestSearchesKeepATokenToItsTopics(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	ctx := context.Background()
	store, err := archive.Open(ctx, pg.URL(), archive.Options{KeepBodies: true, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if _, err := store.Insert(ctx, []archive.Outcome{archived("payroll", "paid", archive.Acked, base, 1, "salary-of-bob")}); err != nil {
		t.Fatal(err)
	}
	ps, err := access.ParseFile([]byte(`{"tokens": [
		{"name": "orders-on-call", "token": "reader-token-000000001", "role": "reader", "topics": ["orders*"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := newSite(t, func(c *Config) { c.Keyring, c.Archive = access.NewKeyring(ps), store })
	s.enqueue("orders", delayq.Spec{ID: "o1", Delay: time.Hour, Body: []byte(`{"sku":"pen"}`)})
	s.enqueue("payroll", delayq.Spec{ID: "p1", Delay: time.Hour, Body: []byte(`{"salary":"bob-4200"}`)})
	s.enqueue("payroll", delayq.Spec{ID: "o1", Delay: time.Hour, Body: []byte(`{"salary":"eve-5100"}`)})
	reader := s.browserOf("reader-token-000000001")

	for _, path := range []string{"/search?topic=payroll&body=bob-4200", "/history", "/history?topic=payroll", "/history?outcome=acked"} {
		a := reader.get(path)
		wantStatus(t, path, a, http.StatusForbidden)
		if !strings.Contains(a.body, "orders-on-call") {
			t.Errorf("%s: the refusal does not name the token:\n%s", path, a.body)
		}
		for _, leak := range []string{"p1", "paid", "salary-of-bob"} {
			if strings.Contains(a.body, leak) {
				t.Errorf("%s shows %s of payroll to a token of orders*", path, leak)
			}
		}
	}
	// An id search of every topic looks in the token's topics only.
	a := reader.get("/search?q=o1")
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/topics/orders/jobs/o1" {
		t.Errorf("/search?q=o1: %d %q, want a redirect to the job of orders alone", a.status, a.header.Get("Location"))
	}
	wantStatus(t, "/search?q=o1&topic=payroll", reader.get("/search?q=o1&topic=payroll"), http.StatusForbidden)
	wantStatus(t, "/search?topic=orders&body=pen", reader.get("/search?topic=orders&body=pen"), http.StatusOK)
	wantStatus(t, "/history?topic=orders", reader.get("/history?topic=orders"), http.StatusOK)
}
