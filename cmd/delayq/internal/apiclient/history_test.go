package apiclient_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiclient"
)

// TestHistoryRequests checks the requests History and JobHistory send: the filter as query
// parameters, times in the API's form, and the job in the path.
func TestHistoryRequests(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"entries":[{"topic":"t","id":"a/b","outcome":"acked","attempts":1,"priority":0,"max_retries":0,"ttr_ms":1000,` +
			`"created_at":"2026-11-22T10:00:00.000Z","run_at":"2026-11-22T10:00:00.000Z","finished_at":"2026-11-22T10:00:01.000Z"}],"next_cursor":"Zm9v"}`))
	}))
	t.Cleanup(srv.Close)
	c, err := apiclient.New(apiclient.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 11, 22, 19, 0, 0, 123_456_789, time.FixedZone("KST", 9*3600))
	q := apiclient.HistoryQuery{Topic: "t", ID: "a/b", Outcome: "dead", Since: since, Limit: 5, Cursor: "Zm9v"}
	page, err := c.History(testContext(t), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 1 || page.Entries[0].ID != "a/b" || page.NextCursor != "Zm9v" {
		t.Errorf("page %+v", page)
	}
	if _, err := c.JobHistory(testContext(t), "t", "a/b", apiclient.HistoryQuery{Topic: "ignored", Until: since}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/v1/history?cursor=Zm9v&id=a%2Fb&limit=5&outcome=dead&since=2026-11-22T10%3A00%3A00.123Z&topic=t",
		"/v1/topics/t/jobs/a%2Fb/history?until=2026-11-22T10%3A00%3A00.123Z",
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("requests\n%q\nwant\n%q", got, want)
	}
}

// A server without an archive answers not_found.
func TestHistoryWithoutArchive(t *testing.T) {
	t.Parallel()
	c := newServer(t)
	_, err := c.History(testContext(t), apiclient.HistoryQuery{})
	var apiErr *apiclient.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound || apiErr.Code != "not_found" {
		t.Errorf("History without an archive: %v", err)
	}
}
