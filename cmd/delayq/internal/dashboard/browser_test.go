package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
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

// newTab starts a headless Chromium of the test's own, with more options when given, and
// returns a tab in it; both end with the test.
func newTab(t *testing.T, more ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // tests may run as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 800),
	)
	opts = append(opts, more...)
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

// A page on a name its owner re-points at the server's address (DNS rebinding: here
// Chromium's host resolver maps evil.example to 127.0.0.1) runs in an origin of that name:
// everything it asks the server for, a job, a dashboard page with its CSRF token, a pause of
// the API and of the dashboard, is refused, by the Host it sends.
func TestBrowserOnAReboundNameReadsAndChangesNothing(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("rebind", delayq.Spec{ID: "secret-job", Body: []byte(`"card 4242"`)})
	_, port, err := net.SplitHostPort(strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	tab := newTab(t, chromedp.Flag("host-resolver-rules", "MAP evil.example 127.0.0.1"))
	// The attacker's page, once the name points at the server: the script runs in the origin
	// http://evil.example:<port>, whatever document it was loaded with.
	do(t, tab, chromedp.Navigate("http://evil.example:"+port+"/healthz"))
	got, err := chromedp.Run(tab, chromedp.Evaluate[map[string]any](`(async () => {
		const out = {};
		const job = await fetch("/v1/topics/rebind/jobs/secret-job");
		out.job = job.status;
		out.jobBody = await job.text();
		const page = await fetch("/topics/rebind");
		out.page = page.status;
		const csrf = (await page.text()).match(/name="csrf_token" value="([^"]+)"/);
		out.csrf = csrf ? csrf[1] : "";
		const form = new URLSearchParams({csrf_token: out.csrf, confirm: "yes"});
		out.dashboardPause = (await fetch("/topics/rebind/pause", {method: "POST", body: form})).status;
		out.apiPause = (await fetch("/v1/topics/rebind/pause", {method: "POST"})).status;
		return out;
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"job", "page", "dashboardPause", "apiPause"} {
		if got[k] != float64(http.StatusForbidden) {
			t.Errorf("%s: %v, want 403", k, got[k])
		}
	}
	if body, _ := got["jobBody"].(string); strings.Contains(body, "secret-job") || got["csrf"] != "" {
		t.Errorf("the page read the job (%q) or a CSRF token (%q)", body, got["csrf"])
	}
	if s.topicStats("rebind").Paused {
		t.Error("the page paused the topic")
	}
}

// A page of another origin (another port of the same address) sends the "simple" requests a
// page may send anywhere, no-cors POSTs without a body: the server changes nothing, the topic
// stays unpaused and no job is leased.
func TestBrowserPageOfAnotherOriginChangesNothing(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	for i := range 3 {
		s.enqueue("victim", delayq.Spec{ID: fmt.Sprintf("job-%d", i), NoRetries: true})
	}
	target, err := json.Marshal(s.url)
	if err != nil {
		t.Fatal(err)
	}
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>cute cats</title><script>
		const target = %s;
		const simple = {method: "POST", mode: "no-cors"};
		window.attack = (async () => {
			for (let i = 0; i < 3; i++) await fetch(target + "/v1/topics/victim/reserve", simple).catch(() => {});
			await fetch(target + "/v1/topics/victim/pause", simple).catch(() => {});
			await fetch(target + "/topics/victim/pause", {...simple, body: new URLSearchParams({confirm: "yes"})}).catch(() => {});
			return "done";
		})();
		</script>`, target)
	}))
	t.Cleanup(evil.Close)
	tab := newTab(t)
	do(t, tab, chromedp.Navigate(evil.URL))
	if done, err := chromedp.Run(tab, chromedp.Evaluate[string](`window.attack`, chromedp.EvalAwaitPromise)); err != nil || done != "done" {
		t.Fatalf("the page's requests: %q, %v", done, err)
	}
	st := s.topicStats("victim")
	if st.Paused || st.Reserved != 0 || st.Ready != 3 {
		t.Errorf("after the page's requests: paused %v, %d reserved, %d ready; want unpaused, 0, 3", st.Paused, st.Reserved, st.Ready)
	}
}
