package cli_test

import (
	"strings"
	"testing"
)

func TestServerMountsTheDashboard(t *testing.T) {
	t.Parallel()
	ro := startServer(t, map[string]string{"DELAYQ_DASHBOARD_READ_ONLY": "true"})
	ro.must(t, "enqueue", "dash", "--id", "j1", "--body", "1", "--delay", "1h")
	for path, want := range map[string]string{
		"/":                    "embedded",
		"/topics/dash":         `data-id="j1"`, // its only jobs are delayed
		"/topics/dash/jobs/j1": "read-only",
		"/v1/topics/dash":      `"delayed":1`,
	} {
		if body, status := httpGet(t, ro.URL+path); status != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, lacks %q:\n%.1000s", path, status, want, body)
		}
	}
	if body, _ := httpGet(t, ro.URL+"/"); !strings.Contains(body, "Jobs per second, all topics") {
		t.Error("the overview has no charts")
	}
	if body, _ := httpGet(t, ro.URL+"/topics/dash/jobs/j1"); strings.Contains(body, `id="cancel"`) {
		t.Error("a read-only dashboard shows the cancel action")
	}
	locked := startServer(t, nil, "--auth-token", "secret-token-0123456")
	if body, status := httpGet(t, locked.URL+"/"); status != 200 || !strings.Contains(body, `id="token"`) {
		t.Errorf("GET / with tokens: %d, not the login page:\n%.1000s", status, body)
	}
}
