package dashboard

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/delayq/delayq"
)

// The browser tests drive the dashboard in a headless Chromium (Debian's chromium package,
// which `make test` installs through scripts/ensure-chromium.sh) with chromedp, on loopback
// pages only. They skip, saying so, only when no Chromium can be found.

// chromiumPath returns the Chromium to drive, or skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("SKIPPED: no chromium on PATH for the dashboard's browser tests; `make test` installs it (scripts/ensure-chromium.sh), or apt-get install chromium")
	return ""
}

// newTab starts a headless Chromium of the test's own and returns a tab in it; both end with
// the test.
func newTab(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // tests may run as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 800),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	return tab
}

func do(t *testing.T, tab context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(tab, steps...); err != nil {
		t.Fatal(err)
	}
}

func textOf(t *testing.T, tab context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func TestBrowserOverviewSeesANewTopicAndFindsAJob(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	tab := newTab(t)
	do(t, tab, chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#topics")))
	// Enqueued through the API while the page is open: the table refreshes by itself.
	resp, err := http.Post(s.url+"/v1/topics/browser-orders/jobs", "application/json",
		strings.NewReader(`{"id": "order-7", "body": {"order": 7}, "delay_ms": 3600000}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	do(t, tab, chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="browser-orders"]`)))
	do(t, tab,
		chromedp.SendKeys(chromedp.CSS(`header input[name="q"]`), "order-7"),
		chromedp.Submit(chromedp.CSS(`header form.search`)),
		chromedp.WaitVisible(chromedp.CSS("#state")),
	)
	if got := textOf(t, tab, "#state"); got != "delayed" {
		t.Errorf("the job found is %q", got)
	}
	if got := textOf(t, tab, "#body"); !strings.Contains(got, `"order": 7`) {
		t.Errorf("body shown: %q", got)
	}
}

func TestBrowserRequeuesADeadJob(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.bury("mail", "dead-1")
	s.bury("mail", "dead-2")
	tab := newTab(t)
	do(t, tab,
		chromedp.Navigate(s.url+"/topics/mail?state=dead"),
		chromedp.Click(chromedp.CSS(`input[name="id"][value="dead-1"]`)),
		chromedp.Click(chromedp.CSS("#requeue-selected")),
		chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#done")),
		chromedp.WaitNotPresent(chromedp.CSS(`tr[data-id="dead-1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-id="dead-2"]`)),
	)
	if got := textOf(t, tab, "#done"); got != "Requeued 1 dead job(s)." {
		t.Errorf("note: %q", got)
	}
	if s.state("mail", "dead-1") != "ready" || s.state("mail", "dead-2") != "dead" {
		t.Errorf("after the requeue: dead-1 %s, dead-2 %s", s.state("mail", "dead-1"), s.state("mail", "dead-2"))
	}
}

func TestBrowserPausesASchedule(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.putSchedule("nightly", delayq.ScheduleSpec{Cron: "0 3 * * *", Topic: "reports"})
	tab := newTab(t)
	do(t, tab,
		chromedp.Navigate(s.url+"/"),
		chromedp.Click(chromedp.CSS("#schedules-link")),
		chromedp.Click(chromedp.CSS(`tr[data-schedule="nightly"] button[data-action="pause"]`)),
		chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#done")),
	)
	if got := textOf(t, tab, "#state"); got != "paused" || !s.paused("nightly") {
		t.Errorf("after the pause the page says %q, the store %v", got, s.paused("nightly"))
	}
	if got := textOf(t, tab, "#next-runs"); got != "none" {
		t.Errorf("a paused schedule's next runs: %q", got)
	}
}

func TestBrowserPausesAndResumesATopic(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("orders", delayq.Spec{ID: "o1"})
	tab := newTab(t)
	do(t, tab,
		chromedp.Navigate(s.url+"/topics/orders"),
		chromedp.Click(chromedp.CSS("#topic-pause")),
		chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#done")),
	)
	if got := textOf(t, tab, "#topic-state"); got != "paused" || !s.topicStats("orders").Paused {
		t.Errorf("after the pause the page says %q, the store %v", got, s.topicStats("orders").Paused)
	}
	do(t, tab,
		chromedp.Click(chromedp.CSS("#topic-resume")),
		chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#topic-pause")),
	)
	if got := textOf(t, tab, "#topic-state"); got != "active" || s.topicStats("orders").Paused {
		t.Errorf("after the resume the page says %q, the store %v", got, s.topicStats("orders").Paused)
	}
}

func TestBrowserLogsInAndOut(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.Tokens = []string{"browser-token"} })
	s.enqueue("t", delayq.Spec{ID: "j"})
	tab := newTab(t)
	do(t, tab,
		chromedp.Navigate(s.url+"/topics/t"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), "wrong"),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#error")),
		chromedp.SendKeys(chromedp.CSS("#token"), "browser-token"),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-id="j"]`)),
	)
	if loc, _ := chromedp.Run(tab, chromedp.Location()); loc != s.url+"/topics/t" {
		t.Errorf("after login at %s, want the page asked for", loc)
	}
	do(t, tab, chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
}

func TestBrowserActionWithoutCSRFIsRefused(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("t", delayq.Spec{ID: "j", Delay: time.Hour})
	tab := newTab(t)
	do(t, tab, chromedp.Navigate(s.url+"/topics/t/jobs/j"), chromedp.WaitVisible(chromedp.CSS("#cancel")))
	status, err := chromedp.Run(tab, chromedp.Evaluate[int](
		`fetch("/topics/t/jobs/j/cancel", {method: "POST", body: new URLSearchParams({confirm: "yes"})}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusForbidden {
		t.Errorf("a fetch without the token: %d, %v", status, err)
	}
	// The form with its token taken out.
	do(t, tab,
		chromedp.Evaluate[chromedp.Void](`document.querySelector('form[action$="/cancel"] input[name="csrf_token"]').remove()`),
		chromedp.Click(chromedp.CSS("#cancel")),
		chromedp.WaitVisible(chromedp.CSS("#error")),
	)
	if got := textOf(t, tab, "#error"); !strings.Contains(got, "CSRF") {
		t.Errorf("refusal: %q", got)
	}
	if got := s.state("t", "j"); got != "delayed" {
		t.Errorf("the job is %s after refused cancels", got)
	}
}

// TestBrowserScreenshots writes the screenshots of the README (docs/dashboard-*.png) when
// DELAYQ_SCREENSHOTS names a folder: `make screenshots`.
func TestBrowserScreenshots(t *testing.T) {
	dir := os.Getenv("DELAYQ_SCREENSHOTS")
	if dir == "" {
		t.Skip("set DELAYQ_SCREENSHOTS to a folder (make screenshots) to write the dashboard's screenshots")
	}
	s := newSite(t, nil)
	seedScreenshots(t, s)
	tab := newTab(t)
	for name, path := range map[string]string{
		"overview": "/",
		"topic":    "/topics/payments?state=dead",
		"job":      "/topics/payments/jobs/pay-2001",
	} {
		do(t, tab, chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS("main")))
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100)) // 100: PNG; less is JPEG
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "dashboard-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBrowserFitsAPhoneScreen(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("t", delayq.Spec{ID: hostileID, Delay: time.Hour,
		Body: []byte(`{"line": "` + strings.Repeat("wide ", 200) + `", "word": "` + strings.Repeat("W", 500) + `"}`), Format: delayq.FormatJSON})
	s.bury("t", "dead-"+strings.Repeat("x", 200))
	s.putSchedule("every-weekday-morning-"+strings.Repeat("x", 100), delayq.ScheduleSpec{Cron: "0 9 * * MON-FRI", TimeZone: "America/Argentina/Buenos_Aires", Topic: "t"})
	tab := newTab(t)
	do(t, tab, chromedp.EmulateViewport(390, 844))
	for _, path := range []string{"/", "/topics/t?state=delayed", "/topics/t?state=dead", jobPath("t", hostileID),
		"/schedules", schedulePath("every-weekday-morning-" + strings.Repeat("x", 100))} {
		do(t, tab, chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS("main")))
		width, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if width > 0 {
			t.Errorf("%s is %d px wider than a 390 px screen", path, width)
		}
	}
}
