package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/archive"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/internal/pgtest"
)

// historyBase is the instant the history tests' outcomes finish around.
var historyBase = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

// historyAt returns historyBase plus sec seconds.
func historyAt(sec int) time.Time { return historyBase.Add(time.Duration(sec) * time.Second) }

// historyOutcome is an outcome of job topic/id that finished at historyAt(sec).
func historyOutcome(topic, id, outcome string, sec int) archive.Outcome {
	return archive.Outcome{
		Topic: topic, ID: id, Outcome: outcome, Attempts: 1,
		Body: []byte(`{"id":"` + id + `"}`), Format: 1, MaxRetries: 3, TTR: 30 * time.Second,
		CreatedAt: historyBase.Add(-time.Hour), RunAt: historyBase.Add(-time.Minute),
		FinishedAt: historyAt(sec), LastError: "boom",
	}
}

// labelsOf names a page's entries as topic/id outcome.
func labelsOf(p apiv1.HistoryPage) []string {
	out := []string{}
	for _, e := range p.Entries {
		out = append(out, fmt.Sprintf("%s/%s %s", e.Topic, e.ID, e.Outcome))
	}
	return out
}

// history GETs path and decodes its page.
func (e *env) history(path string) apiv1.HistoryPage {
	e.t.Helper()
	return decode[apiv1.HistoryPage](e.t, e.call("GET", path, nil).want(e.t, http.StatusOK))
}

// TestHistory serves an archive over HTTP: each filter of /v1/history and of a job's history,
// paging by cursor, the bad parameters refused by name, and 503 once PostgreSQL is stopped.
func TestHistory(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	ctx := context.Background()
	store, err := archive.Open(ctx, pg.URL(), archive.Options{KeepBodies: true, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	batch := []archive.Outcome{
		historyOutcome("a", "1", archive.Failed, 1), historyOutcome("a", "1", archive.Acked, 5),
		historyOutcome("a", "2", archive.Dead, 10), historyOutcome("b", "1", archive.Acked, 20),
		historyOutcome("b", "2", archive.Cancelled, 30), historyOutcome("a", "x/y", archive.DeadDeleted, 40),
	}
	// b/2 was put over the beanstalkd protocol.
	beanstalkdPri := uint32(1<<32 - 1)
	batch[4].BeanstalkdPriority = &beanstalkdPri
	if _, err := store.Insert(ctx, batch); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.Archive = store })

	since, until := url.QueryEscape(apiv1.FormatTime(historyAt(5))), url.QueryEscape(apiv1.FormatTime(historyAt(30)))
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/v1/history", []string{"a/x/y dead_deleted", "b/2 cancelled", "b/1 acked", "a/2 dead", "a/1 acked", "a/1 failed"}},
		{"/v1/history?topic=a", []string{"a/x/y dead_deleted", "a/2 dead", "a/1 acked", "a/1 failed"}},
		{"/v1/history?topic=a&id=1", []string{"a/1 acked", "a/1 failed"}},
		{"/v1/history?outcome=acked", []string{"b/1 acked", "a/1 acked"}},
		{"/v1/history?since=" + since + "&until=" + until, []string{"b/1 acked", "a/2 dead", "a/1 acked"}},
		{"/v1/history?topic=c", []string{}},
		{"/v1/topics/a/jobs/1/history", []string{"a/1 acked", "a/1 failed"}},
		{"/v1/topics/a/jobs/1/history?outcome=failed", []string{"a/1 failed"}},
		{"/v1/topics/a/jobs/x%2Fy/history", []string{"a/x/y dead_deleted"}},
		{"/v1/topics/a/jobs/never/history", []string{}},
	} {
		if diff := cmp.Diff(tc.want, labelsOf(e.history(tc.path))); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", tc.path, diff)
		}
	}

	entry := e.history("/v1/topics/b/jobs/1/history").Entries[0]
	if string(entry.Body) != `{"id":"1"}` || entry.FinishedAt.String() != apiv1.FormatTime(historyAt(20)) ||
		entry.TTRMs != 30000 || entry.LastError != "boom" {
		t.Errorf("entry %+v", entry)
	}

	if entry.BeanstalkdPriority != nil {
		t.Errorf("b/1 has beanstalkd priority %d, want none", *entry.BeanstalkdPriority)
	}
	body := string(e.call("GET", "/v1/topics/b/jobs/2/history", nil).want(t, http.StatusOK).body)
	if !strings.Contains(body, `"priority":0,"beanstalkd_priority":4294967295,`) {
		t.Errorf("the history of a beanstalkd job: %s", body)
	}

	checkHistoryPaging(t, e, "/v1/history?limit=4", 6)
	checkHistoryPaging(t, e, "/v1/topics/a/jobs/1/history?limit=1", 2)

	bad := e.badRequests()
	for path, field := range map[string]string{
		"/v1/history?since=yesterday":                    "since",
		"/v1/history?until=2026-13-01T00:00:00Z":         "until",
		"/v1/history?since=" + until + "&until=" + since: "until",
		"/v1/history?limit=0":                            "limit",
		"/v1/history?limit=1001":                         "limit",
		"/v1/history?limit=ten":                          "limit",
		"/v1/history?cursor=AAAA":                        "cursor",
		"/v1/history?outcome=lost":                       "outcome",
		"/v1/history?id=1":                               "id",
		"/v1/history?topic=no%20spaces":                  "topic",
		"/v1/topics/a/jobs/1/history?cursor=not-one":     "cursor",
		"/v1/topics/a/jobs/1/history?since=2026-03-14":   "since",
	} {
		msg := bad.call("GET", path, nil).wantError(t, http.StatusBadRequest, codeInvalid).Message
		if !strings.HasPrefix(msg, "invalid "+field+":") {
			t.Errorf("GET %s: message %q does not name %s", path, msg, field)
		}
	}

	pg.Stop(t)
	for _, path := range []string{"/v1/history", "/v1/topics/a/jobs/1/history"} {
		e.call("GET", path, nil).wantError(t, http.StatusServiceUnavailable, codeUnavailable)
	}
}

// checkHistoryPaging follows next_cursor from path and checks that the pages hold total
// entries, newest first, none twice.
func checkHistoryPaging(t *testing.T, e *env, path string, total int) {
	t.Helper()
	var all []apiv1.HistoryEntry
	pages := 0
	for next := path; ; pages++ {
		page := e.history(next)
		for _, en := range page.Entries {
			all = append(all, *en)
		}
		if page.NextCursor == "" {
			break
		}
		next = path + "&cursor=" + url.QueryEscape(page.NextCursor)
	}
	if len(all) != total {
		t.Fatalf("%s: %d entries over %d pages, want %d", path, len(all), pages+1, total)
	}
	for i := 1; i < len(all); i++ {
		if all[i].FinishedAt.After(all[i-1].FinishedAt.Time) {
			t.Errorf("%s: entry %d finished after entry %d", path, i, i-1)
		}
	}
}

// TestHistoryWithoutArchive answers both history routes with 404 saying what turns them on.
func TestHistoryWithoutArchive(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, path := range []string{"/v1/history?topic=a", "/v1/topics/a/jobs/1/history"} {
		msg := e.call("GET", path, nil).wantError(t, http.StatusNotFound, codeNotFound).Message
		if !strings.Contains(msg, "not configured") || !strings.Contains(msg, "--archive") {
			t.Errorf("GET %s: message %q", path, msg)
		}
	}
}

// A token bound to some topics searches the history of those alone: the search is refused
// without a topic and on another topic, whose bodies it would otherwise read, as a job's own
// history on that topic is.
func TestHistorySearchKeepsATokenToItsTopics(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	ctx := context.Background()
	store, err := archive.Open(ctx, pg.URL(), archive.Options{KeepBodies: true, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	if _, err := store.Insert(ctx, []archive.Outcome{historyOutcome("orders", "1", archive.Acked, 1),
		historyOutcome("payroll", "secret", archive.Acked, 2)}); err != nil {
		t.Fatal(err)
	}
	ps, err := access.ParseFile([]byte(`{"tokens": [
		{"name": "orders-on-call", "token": "reader-token-000000001", "role": "reader", "topics": ["orders*"]},
		{"name": "on-call", "token": "reader-token-000000002", "role": "reader", "topics": ["*"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.Archive, c.Keyring = store, access.NewKeyring(ps) })
	const addr, bound, all = "192.0.2.9:5000", "reader-token-000000001", "reader-token-000000002"
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/v1/history?topic=orders", bound, http.StatusOK},
		{"/v1/history?topic=payroll", bound, http.StatusForbidden},
		{"/v1/history", bound, http.StatusForbidden},
		{"/v1/history?outcome=acked", bound, http.StatusForbidden},
		{"/v1/topics/payroll/jobs/secret/history", bound, http.StatusForbidden},
		{"/v1/history", all, http.StatusOK},
		{"/v1/history?topic=payroll", all, http.StatusOK},
	} {
		w := serveFrom(e.handler, addr, "GET", c.path, c.token)
		if w.Code != c.want {
			t.Errorf("GET %s as %s: %d %s, want %d", c.path, c.token, w.Code, w.Body, c.want)
		}
		if c.token == bound && strings.Contains(w.Body.String(), `"secret"`) {
			t.Errorf("GET %s as a token of orders* shows a job of payroll: %s", c.path, w.Body)
		}
		if w.Code == http.StatusForbidden && (errorCode(w) != codePermission || !strings.Contains(w.Body.String(), "orders-on-call")) {
			t.Errorf("GET %s: the refusal %s does not name the token", c.path, w.Body)
		}
	}
}
