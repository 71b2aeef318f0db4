package apiv1

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq"
)

// testJob is a library job with every field the API writes set.
func testJob() *delayq.Job {
	created := time.Date(2026, 11, 22, 10, 0, 0, 123_456_789, time.FixedZone("KST", 9*3600))
	return &delayq.Job{
		Topic: "orders", ID: "o-42", State: delayq.StateReserved,
		Body: []byte(`{"n": 42, "note": "<&>"}`), Format: delayq.FormatJSON,
		RunAt: created.Add(time.Second), CreatedAt: created,
		Attempts: 2, MaxRetries: 5, Snoozes: 1, MaxSnoozes: 10, TTR: 30 * time.Second,
		Backoff: []time.Duration{time.Second, time.Minute}, Priority: -3,
		CallbackURL: "https://example.com/hook?a=1&b=2", LastError: "boom",
		LeaseDeadline: created.Add(31 * time.Second), LeaseToken: "lease-token",
		Headers: map[string]string{"traceparent": "00-ab-cd-01", "x-tenant": "<acme>"},
	}
}

// TestJobGolden pins the JSON form of jobs, byte for byte but for white space: a change here
// changes the API.
func TestJobGolden(t *testing.T) {
	t.Parallel()
	dead := testJob()
	dead.ID, dead.State, dead.Body, dead.Format = "o-43", delayq.StateDead, []byte{0, 1, 0xff}, delayq.FormatBinary
	dead.Attempts, dead.CallbackURL, dead.LastError = 6, "", "ttr exceeded"
	dead.LeaseDeadline, dead.LeaseToken = time.Time{}, ""
	dead.DiedAt = time.Date(2026, 11, 22, 1, 2, 0, 0, time.UTC)
	dead.Headers = nil
	got, err := Marshal(ReserveResponse{Jobs: NewJobs([]*delayq.Job{testJob(), dead}, true)})
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "jobs.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := compactJSON(t, string(golden)); string(got) != want {
		t.Errorf("jobs are written as\n%s\nwant (testdata/jobs.json)\n%s", got, want)
	}
}

func TestJobRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     []byte
		format   delayq.Format
		wantJSON string  // Body as written, "" when none
		wantB64  *string // BodyBase64 as written
	}{
		{name: "JSON body", body: []byte(`[1, "<&>", {"a": null}]`), format: delayq.FormatJSON, wantJSON: `[1, "<&>", {"a": null}]`},
		{name: "binary body", body: []byte{0, 1, 0xff}, format: delayq.FormatBinary, wantB64: new("AAH/")},
		{name: "no body", body: nil, format: delayq.FormatBinary},
		{name: "no JSON body", body: nil, format: delayq.FormatJSON},
		{name: "JSON flag on bytes that are not JSON", body: []byte("{"), format: delayq.FormatJSON, wantB64: new("ew==")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lib := testJob()
			lib.Body, lib.Format = tt.body, tt.format
			sent := NewJob(lib)
			data, err := Marshal(sent)
			if err != nil {
				t.Fatal(err)
			}
			var got Job
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("Unmarshal(%s): %v", data, err)
			}
			again, err := Marshal(&got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, data) {
				t.Errorf("written again as\n%s\nwant\n%s", again, data)
			}
			if !got.RunAt.Equal(lib.RunAt.Truncate(time.Millisecond)) || got.LeaseDeadline == nil {
				t.Errorf("read back run_at %v, lease_deadline %v", got.RunAt, got.LeaseDeadline)
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(data, &fields); err != nil {
				t.Fatal(err)
			}
			body, hasBody := fields["body"]
			if compact := compactJSON(t, tt.wantJSON); string(body) != compact || hasBody != (tt.wantJSON != "") {
				t.Errorf("body %s (given: %v), want %s", body, hasBody, compact)
			}
			if diff := cmp.Diff(tt.wantB64, got.BodyBase64); diff != "" {
				t.Errorf("body_base64 (-want +got):\n%s", diff)
			}
			payload, err := got.Payload()
			if err != nil {
				t.Fatalf("Payload: %v", err)
			}
			if want := string(tt.body); tt.wantJSON != "" {
				if string(payload) != compactJSON(t, want) {
					t.Errorf("Payload = %s, want %s", payload, want)
				}
			} else if string(payload) != want {
				t.Errorf("Payload = %q, want %q", payload, want)
			}
		})
	}
}

// compactJSON is s without its white space; "" stays "".
func compactJSON(t *testing.T, s string) string {
	t.Helper()
	if s == "" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestJobLeavesOutWhatDoesNotApply(t *testing.T) {
	t.Parallel()
	lib := &delayq.Job{Topic: "t", ID: "i", State: delayq.StateReady, RunAt: time.UnixMilli(1), CreatedAt: time.UnixMilli(1),
		Backoff: []time.Duration{0}, LeaseToken: "secret"}
	got, err := Marshal(NewJob(lib))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"topic":"t","id":"i","state":"ready","run_at":"1970-01-01T00:00:00.001Z","created_at":"1970-01-01T00:00:00.001Z",` +
		`"attempts":0,"max_retries":0,"ttr_ms":0,"backoff_ms":[0],"priority":0}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestJobWithoutBackoffHasTheDefault(t *testing.T) {
	t.Parallel()
	got := NewJob(&delayq.Job{}).BackoffMs
	want := make([]int64, len(delayq.DefaultBackoff()))
	for i, d := range delayq.DefaultBackoff() {
		want[i] = d.Milliseconds()
	}
	if diff := cmp.Diff(want, got); diff != "" || len(got) == 0 {
		t.Errorf("backoff_ms (-want +got):\n%s", diff)
	}
}

func TestWebhookPayload(t *testing.T) {
	t.Parallel()
	bare := testJob()
	bare.Headers = nil
	for job, want := range map[*delayq.Job]string{
		testJob(): `{"topic":"orders","id":"o-42","body":{"n":42,"note":"<&>"},"attempt":2,"run_at":"2026-11-22T01:00:01.123Z","headers":{"traceparent":"00-ab-cd-01","x-tenant":"<acme>"}}`,
		bare:      `{"topic":"orders","id":"o-42","body":{"n":42,"note":"<&>"},"attempt":2,"run_at":"2026-11-22T01:00:01.123Z"}`,
	} {
		got, err := Marshal(NewWebhookPayload(job))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}
