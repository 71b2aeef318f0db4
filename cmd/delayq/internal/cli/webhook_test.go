package cli_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/delayq/delayq/internal/testwait"
)

func TestWebhookSecretCommand(t *testing.T) {
	t.Parallel()
	a, err := runCLI(t, nil, "webhook-secret")
	if err != nil {
		t.Fatal(err)
	}
	b, err := runCLI(t, nil, "webhook-secret")
	if err != nil {
		t.Fatal(err)
	}
	if a == b || !strings.HasSuffix(a, "\n") || strings.Count(a, "\n") != 1 {
		t.Fatalf("webhook-secret printed %q, then %q; want a fresh secret on one line each time", a, b)
	}
	secret := strings.TrimSpace(a)
	if _, err := standardwebhooks.NewWebhook(secret); err != nil || !strings.HasPrefix(secret, "whsec_") {
		t.Errorf("webhook-secret printed %q: %v", secret, err)
	}
	// The server takes it as it is.
	startServer(t, nil, "--webhook-secret", secret)
}

// During a rotation the server signs with the new and the previous secret: a receiver that
// knows either one verifies every delivery.
func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	type request struct {
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var got []request
	hook := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, request{r.Header.Clone(), body})
	}))
	t.Cleanup(hook.Close)
	previous, _ := runCLI(t, nil, "webhook-secret")
	current, _ := runCLI(t, nil, "webhook-secret")
	previous, current = strings.TrimSpace(previous), strings.TrimSpace(current)

	s := startServer(t, map[string]string{"DELAYQ_WEBHOOK_SECRET_PREVIOUS": previous},
		"--webhook-secret", current, "--webhook-allow-cidr", "127.0.0.0/8")
	s.must(t, "enqueue", "hooks", "--id", "r1", "--body", `{"n":1}`, "--callback-url", hook.URL+"/cb")
	testwait.For(t, 15*time.Second, "the webhook is delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	mu.Lock()
	req := got[0]
	mu.Unlock()
	for name, secret := range map[string]string{"the new secret": current, "the previous secret": previous} {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(req.body, req.header); err != nil {
			t.Errorf("a receiver that knows only %s: %v (webhook-signature %q)", name, err, req.header.Get("webhook-signature"))
		}
	}
	other, _ := runCLI(t, nil, "webhook-secret")
	if wh, _ := standardwebhooks.NewWebhook(strings.TrimSpace(other)); wh.Verify(req.body, req.header) == nil {
		t.Error("the delivery verifies with a third secret")
	}
}

func TestWebhookSecretPreviousErrors(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"without a secret", nil, []string{"--webhook-secret-previous", secret}, "--webhook-secret-previous: needs --webhook-secret"},
		{"same as the secret", nil, []string{"--webhook-secret", secret, "--webhook-secret-previous", secret}, "the same as --webhook-secret"},
		{"not a secret, from env", map[string]string{"DELAYQ_WEBHOOK_SECRET_PREVIOUS": "whsec_c2VjcmV0"},
			[]string{"--webhook-secret", secret}, "--webhook-secret-previous: webhook: the secret must hold 24 to 64 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, tt.args...)
			var logs testwait.Buffer
			err := runServerOnce(tt.env, args, &logs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "c2VjcmV0") {
				t.Errorf("the error %q quotes the secret", err)
			}
		})
	}
}
