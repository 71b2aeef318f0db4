package webhook

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq"
)

// The test vector published with the Standard Webhooks reference libraries.
func TestSignSpecVector(t *testing.T) {
	t.Parallel()
	key := mustSecret(t, testSecret)
	const (
		id   = "msg_p5jXN8AQM9LWM0D4loKWxJek"
		ts   = 1614265330
		body = `{"test": 2432232314}`
		want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	)
	if got := Sign(key, id, time.Unix(ts, 0), []byte(body)); got != want {
		t.Errorf("Sign = %q, want %q", got, want)
	}
}

func TestSignVerifiesIndependently(t *testing.T) {
	t.Parallel()
	for _, n := range []int{24, 32, 64} {
		raw := make([]byte, n)
		_, _ = rand.Read(raw)
		secret := "whsec_" + base64.StdEncoding.EncodeToString(raw)
		key := mustSecret(t, secret)
		now := time.Now()
		for _, body := range []string{`{}`, `{"topic":"a","id":"b","body":[1,2,3]}`, "", "binary\x00\xff"} {
			h := http.Header{}
			h.Set("webhook-id", "msg_x")
			h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
			h.Set("webhook-signature", "v1,bm9wZQ== "+Sign(key, "msg_x", now, []byte(body)))
			if err := verifyStandardWebhook(secret, h, []byte(body), now); err != nil {
				t.Errorf("key of %d bytes, body %q: %v", n, body, err)
			}
			if err := verifyStandardWebhook(secret, h, []byte(body+" "), now); err == nil {
				t.Errorf("key of %d bytes: a changed body verified", n)
			}
		}
	}
}

func TestParseSecret(t *testing.T) {
	t.Parallel()
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n)) }
	tests := []struct {
		name    string
		secret  string
		wantLen int // 0: an error
	}{
		{"spec example", testSecret, 24},
		{"64 bytes", "whsec_" + b64(64), 64},
		{"unpadded", "whsec_" + strings.TrimRight(b64(32), "="), 32},
		{"no prefix", strings.TrimPrefix(testSecret, "whsec_"), 0},
		{"other prefix", "whsk_" + b64(32), 0},
		{"empty", "", 0},
		{"prefix only", "whsec_", 0},
		{"not base64", "whsec_!!!!" + b64(30), 0},
		{"url alphabet", "whsec_" + strings.ReplaceAll(b64(33), "/", "_") + "_-", 0},
		{"too short", "whsec_" + b64(23), 0},
		{"too long", "whsec_" + b64(65), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := ParseSecret(tt.secret)
			switch {
			case tt.wantLen == 0 && err == nil:
				t.Fatalf("ParseSecret = %d bytes, want an error", len(key))
			case tt.wantLen != 0 && err != nil:
				t.Fatalf("ParseSecret: %v", err)
			case len(key) != tt.wantLen && tt.wantLen != 0:
				t.Fatalf("ParseSecret = %d bytes, want %d", len(key), tt.wantLen)
			}
			if err != nil && len(tt.secret) > 8 && strings.Contains(err.Error(), tt.secret[6:]) {
				t.Errorf("the error %q quotes the secret", err)
			}
		})
	}
}

func FuzzParseSecret(f *testing.F) {
	f.Add(testSecret)
	f.Add("whsec_")
	f.Add("whsec_AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		key, err := ParseSecret(s)
		if err != nil {
			return
		}
		if len(key) < 24 || len(key) > 64 {
			t.Fatalf("ParseSecret(%q) = %d bytes", s, len(key))
		}
		again, err := ParseSecret("whsec_" + base64.StdEncoding.EncodeToString(key))
		if err != nil || !bytes.Equal(again, key) {
			t.Fatalf("round trip of %q: %x, %v", s, again, err)
		}
	})
}

func TestMessageID(t *testing.T) {
	t.Parallel()
	created := time.UnixMilli(1_700_000_000_123)
	job := &delayq.Job{Topic: "orders", ID: "42", CreatedAt: created, Attempts: 1}
	id := messageID(job)
	if !strings.HasPrefix(id, "msg_") || strings.ContainsAny(id, ". ,") {
		t.Fatalf("messageID = %q", id)
	}
	retry := *job
	retry.Attempts, retry.LastError = 3, "webhook: status 500"
	if got := messageID(&retry); got != id {
		t.Errorf("a retry has webhook-id %q, want %q as the first attempt", got, id)
	}
	others := []*delayq.Job{
		{Topic: "orders", ID: "42", CreatedAt: created.Add(time.Millisecond)}, // the id reused later
		{Topic: "orders", ID: "43", CreatedAt: created},
		{Topic: "orders4", ID: "2", CreatedAt: created},
	}
	for _, o := range others {
		if messageID(o) == id {
			t.Errorf("job %s/%s created %v has the webhook-id of %s/%s", o.Topic, o.ID, o.CreatedAt, job.Topic, job.ID)
		}
	}
}

func TestEncodePayload(t *testing.T) {
	t.Parallel()
	runAt := time.Date(2026, 11, 22, 10, 0, 0, 123_000_000, time.FixedZone("KST", 9*3600))
	tests := []struct {
		name   string
		format delayq.Format
		body   []byte
		want   map[string]any
	}{
		{
			name: "json", format: delayq.FormatJSON, body: []byte(`{"a": [1, "<&>"]}`),
			want: map[string]any{"body": map[string]any{"a": []any{1.0, "<&>"}}},
		},
		{
			name: "json scalar", format: delayq.FormatJSON, body: []byte(`"text"`),
			want: map[string]any{"body": "text"},
		},
		{
			name: "binary", format: delayq.FormatBinary, body: []byte{0, 1, 0xff},
			want: map[string]any{"body_base64": "AAH/"},
		},
		{
			name: "no payload", format: delayq.FormatBinary, body: nil,
			want: map[string]any{}, // neither body nor body_base64
		},
		{
			name: "json flag on bytes that are not JSON", format: delayq.FormatJSON, body: []byte("{"),
			want: map[string]any{"body_base64": "ew=="},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := &delayq.Job{Topic: "t", ID: "i", Body: tt.body, Format: tt.format, Attempts: 2, RunAt: runAt}
			raw, err := encodePayload(job)
			if err != nil {
				t.Fatalf("encodePayload: %v", err)
			}
			var got map[string]any
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("payload %s: %v", raw, err)
			}
			want := map[string]any{"topic": "t", "id": "i", "attempt": 2.0, "run_at": "2026-11-22T01:00:00.123Z"}
			for k, v := range tt.want {
				want[k] = v
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
		})
	}
}
