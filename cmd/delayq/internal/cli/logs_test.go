package cli_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/testwait"
)

// At debug level the server logs a line per API request, and through failed deliveries,
// nacks and refused requests it never logs a job's body, an API token or the webhook secret.
func TestServerLogsNeitherBodiesNorSecrets(t *testing.T) {
	t.Parallel()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(hook.Close)
	secret, _ := runCLI(t, nil, "webhook-secret")
	secret = strings.TrimSpace(secret)
	const token, body = "tok-never-logged-7d1f", `{"card":"never-logged-4111"}`
	s := startServer(t, nil, "--log-level", "debug", "--auth-token", token,
		"--webhook-secret", secret, "--webhook-allow-cidr", "127.0.0.0/8")
	auth := []string{"--token", token}
	s.must(t, append([]string{"enqueue", "pay", "--id", "p1", "--body", body, "--callback-url", hook.URL + "/cb", "--max-retries", "0"}, auth...)...)
	s.must(t, append([]string{"enqueue", "pull", "--id", "q1", "--body", body}, auth...)...)
	var res struct {
		Jobs []struct{ Lease string } `json:"jobs"`
	}
	s.mustJSON(t, &res, append([]string{"reserve", "pull"}, auth...)...)
	if len(res.Jobs) != 1 {
		t.Fatalf("reserved %d jobs, want 1", len(res.Jobs))
	}
	s.must(t, append([]string{"nack", "pull", "q1", "--lease", res.Jobs[0].Lease, "--error", "declined"}, auth...)...)
	if _, err := s.run(t, "get", "pull", "q1", "--token", "wrong-"+token); err == nil {
		t.Fatal("a wrong token was accepted")
	}
	testwait.For(t, 15*time.Second, "the failed delivery's log line", func() bool {
		return strings.Contains(s.logs.String(), "webhook: delivery failed")
	})
	logs := s.logs.String()
	for _, secretText := range []string{"never-logged", token, secret, strings.TrimPrefix(secret, "whsec_")} {
		if strings.Contains(logs, secretText) {
			t.Errorf("the logs hold %q:\n%s", secretText, logs)
		}
	}
	for _, want := range []string{`msg="httpapi: request" method=POST route=/v1/topics/{topic}/jobs status=201 duration=`,
		`route=/v1/topics/{topic}/jobs/{id}/nack status=`, `status=401`} {
		if !strings.Contains(logs, want) {
			t.Errorf("no log line with %q:\n%s", want, logs)
		}
	}
}
