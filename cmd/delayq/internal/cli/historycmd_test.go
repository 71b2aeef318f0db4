package cli_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/cmd/delayq/internal/httpapi"
	"github.com/delayq/delayq/internal/pgtest"
	"github.com/delayq/delayq/internal/redistest"
)

// startHistoryAPI serves the HTTP API with an archive on a PostgreSQL of its own holding
// outcomes, as `delayq server --archive` does, and returns its URL.
func startHistoryAPI(t *testing.T, outcomes []archive.Outcome) string {
	t.Helper()
	ctx := context.Background()
	store, err := archive.Open(ctx, pgtest.Start(t).URL(), archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	if _, err := store.Insert(ctx, outcomes); err != nil {
		t.Fatal(err)
	}
	c, err := delayq.New(ctx, redistest.Standalone(t).Client(t), delayq.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	h, err := httpapi.New(httpapi.Config{Client: c, Archive: store})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestHistoryCommand(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	mk := func(topic, id, outcome string, ago time.Duration, lastErr string) archive.Outcome {
		return archive.Outcome{Topic: topic, ID: id, Outcome: outcome, Attempts: 2, TTR: time.Second,
			CreatedAt: now.Add(-72 * time.Hour), RunAt: now.Add(-72 * time.Hour), FinishedAt: now.Add(-ago), LastError: lastErr}
	}
	long := "connection reset by peer\n" + strings.Repeat("x", 200)
	s := &server{URL: startHistoryAPI(t, []archive.Outcome{
		mk("orders", "o-1", archive.Failed, 50*time.Hour, long),
		mk("orders", "o-1", archive.Acked, 49*time.Hour, ""),
		mk("orders", "o-2", archive.Dead, time.Hour, "boom"),
		mk("mail", "m-1", archive.Cancelled, time.Minute, ""),
	})}

	out := s.must(t, "history")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "FINISHED_AT") || !strings.Contains(lines[1], "mail/m-1") ||
		!strings.Contains(lines[4], "orders/o-1  failed") || !strings.Contains(lines[4], "connection reset by peer x") ||
		strings.Contains(out, strings.Repeat("x", 100)) {
		t.Errorf("delayq history printed:\n%s", out)
	}
	if !strings.Contains(lines[1], apiv1.FormatTime(now.Add(-time.Minute))) {
		t.Errorf("the newest line lacks its finish time:\n%s", out)
	}

	var page apiv1.HistoryPage
	s.mustJSON(t, &page, "history", "orders", "o-1")
	if len(page.Entries) != 2 || page.Entries[0].Outcome != archive.Acked || page.Entries[1].LastError != long {
		t.Errorf("delayq history orders o-1 --json: %+v", page)
	}
	s.mustJSON(t, &page, "history", "--topic", "orders", "--since", "24h")
	if len(page.Entries) != 1 || page.Entries[0].ID != "o-2" {
		t.Errorf("--since 24h: %+v", page.Entries)
	}
	since := apiv1.FormatTime(now.Add(-50 * time.Hour))
	s.mustJSON(t, &page, "history", "--outcome", "acked", "--since", since, "--until", "2h")
	if len(page.Entries) != 1 || page.Entries[0].ID != "o-1" {
		t.Errorf("--outcome acked --since %s --until 2h: %+v", since, page.Entries)
	}

	first := s.must(t, "history", "--limit", "3")
	if n := strings.Count(first, "\n"); n != 5 || !strings.Contains(first, "more: the same command with --cursor ") {
		t.Errorf("one page of 3:\n%s", first)
	}
	s.mustJSON(t, &page, "history", "--limit", "1", "--all")
	if len(page.Entries) != 4 || page.NextCursor != "" {
		t.Errorf("--all in pages of 1: %d entries, next %q", len(page.Entries), page.NextCursor)
	}

	_, err := s.run(t, "history", "--id", "o-1")
	wantErr(t, err, "invalid_argument")
	for args, want := range map[string]string{
		"history --since yesterday":       "--since",
		"history orders":                  "a topic and a job id",
		"history orders o-1 --topic mail": "not both",
	} {
		if _, err := s.run(t, strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("delayq %s: err %v, want one that says %q", args, err, want)
		}
	}
}
