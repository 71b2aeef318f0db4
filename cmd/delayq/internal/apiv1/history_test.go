package apiv1

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/delayq/delayq/archive"
)

// TestHistoryGolden pins the JSON form of a history page, byte for byte but for white space:
// a JSON body, a binary one, none (an archive that keeps no bodies), and the cursor.
func TestHistoryGolden(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 22, 10, 0, 0, 123_456_789, time.FixedZone("KST", 9*3600))
	acked := archive.Outcome{
		Topic: "orders", ID: "o-42", Outcome: archive.Acked, Attempts: 2,
		Body: []byte(`{"n": 42, "note": "<&>"}`), Format: 1, Priority: -3, MaxRetries: 5,
		TTR: 30 * time.Second, CreatedAt: created, RunAt: created.Add(time.Second),
		FinishedAt: created.Add(5333 * time.Millisecond), LastError: "boom",
		CallbackURL: "https://example.com/hook?a=1&b=2",
		Headers:     map[string]string{"traceparent": "00-ab-cd-01", "x-tenant": "<acme>"},
	}
	deleted := archive.Outcome{
		Topic: "orders", ID: "o-43", Outcome: archive.DeadDeleted, Attempts: 6,
		Body: []byte{0, 1, 0xff}, Format: 0, MaxRetries: 5, Snoozes: 3, MaxSnoozes: 10, TTR: 30 * time.Second,
		CreatedAt: created, RunAt: created.Add(time.Second),
		FinishedAt: time.Date(2026, 11, 22, 1, 2, 0, 0, time.UTC), LastError: "ttr exceeded",
	}
	bodiless := archive.Outcome{
		Topic: "orders", ID: "o-44", Outcome: archive.Cancelled, Format: 1, TTR: 100 * time.Millisecond,
		CreatedAt: created, RunAt: created.Add(time.Second),
		FinishedAt: time.Date(2026, 11, 22, 1, 3, 0, 0, time.UTC),
	}
	page := archive.Page{Outcomes: []archive.Outcome{acked, deleted, bodiless}, Next: "AAYXjK3q1yAAAAAAAAAAAw"}
	got, err := Marshal(NewHistoryPage(page))
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "history.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := compactJSON(t, string(golden)); string(got) != want {
		t.Errorf("history is written as\n%s\nwant (testdata/history.json)\n%s", got, want)
	}
}

func TestEmptyHistoryPage(t *testing.T) {
	t.Parallel()
	got, err := Marshal(NewHistoryPage(archive.Page{}))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"entries":[]}` {
		t.Errorf("an empty last page is written as %s", got)
	}
}
