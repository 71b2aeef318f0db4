package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

func TestScheduleEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	put := map[string]any{
		"cron": "0 9 * * *", "timezone": "Europe/Berlin", "topic": "reports",
		"job": map[string]any{"body": map[string]int{"k": 1}, "ttr_ms": 60000},
	}
	s := decode[apiv1.Schedule](t, e.call("PUT", "/v1/schedules/daily", put).want(t, http.StatusCreated))
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "daily" || s.Missed != "latest" || s.Paused || s.LastTick != nil || len(s.NextRuns) != 5 {
		t.Fatalf("created: %+v", s)
	}
	for _, r := range s.NextRuns {
		if r.In(berlin).Hour() != 9 {
			t.Fatalf("next runs %v are not at 09:00 in Berlin", s.NextRuns)
		}
	}
	if string(s.Job.Body) != `{"k":1}` || *s.Job.TTRMs != 60000 || *s.Job.MaxRetries != 5 || *s.Job.Priority != 0 || s.Job.BackoffMs != nil {
		t.Fatalf("job template: %+v", s.Job)
	}

	// The answer's job template is a request a PUT takes back as it is.
	again := map[string]any{"cron": "0 9 * * *", "timezone": s.Timezone, "topic": "reports", "job": s.Job, "missed": "skip"}
	replaced := decode[apiv1.Schedule](t, e.call("PUT", "/v1/schedules/daily", again).want(t, http.StatusOK))
	if replaced.Missed != "skip" || !replaced.CreatedAt.Equal(s.CreatedAt.Time) || string(replaced.Job.Body) != `{"k":1}` {
		t.Fatalf("replaced: %+v", replaced)
	}

	paused := decode[apiv1.Schedule](t, e.call("POST", "/v1/schedules/daily/pause", nil).want(t, http.StatusOK))
	if !paused.Paused || len(paused.NextRuns) != 0 {
		t.Fatalf("paused: %+v", paused)
	}
	resumed := decode[apiv1.Schedule](t, e.call("POST", "/v1/schedules/daily/resume", nil).want(t, http.StatusOK))
	if resumed.Paused || len(resumed.NextRuns) != 5 {
		t.Fatalf("resumed: %+v", resumed)
	}

	// An interval's first ticks are enqueued by the PUT: the job of the first is there.
	every := decode[apiv1.Schedule](t, e.call("PUT", "/v1/schedules/fast", map[string]any{"cron": "@every 1s", "topic": "ticks"}).want(t, http.StatusCreated))
	if every.LastTick == nil || every.Timezone != "UTC" {
		t.Fatalf("an interval: %+v", every)
	}
	id := delayq.TickID("fast", every.NextRuns[0].Time)
	job := e.get("ticks", url.PathEscape(id))
	if job.ID != id || !job.RunAt.Equal(every.NextRuns[0].Time) {
		t.Fatalf("the first tick's job: %+v, want %s due at %v", job, id, every.NextRuns[0])
	}

	list := decode[apiv1.ScheduleList](t, e.call("GET", "/v1/schedules", nil).want(t, http.StatusOK))
	if len(list.Schedules) != 2 || list.Schedules[0].Name != "daily" || list.Schedules[1].Name != "fast" {
		t.Fatalf("list: %+v", list)
	}
	got := decode[apiv1.Schedule](t, e.call("GET", "/v1/schedules/fast", nil).want(t, http.StatusOK))
	if got.LastTick == nil || got.LastTick.Before(every.LastTick.Time) {
		t.Fatalf("get: %+v", got)
	}

	e.call("DELETE", "/v1/schedules/fast", nil).want(t, http.StatusNoContent)
	msg := e.call("GET", "/v1/schedules/fast", nil).wantError(t, http.StatusNotFound, codeNotFound).Message
	if msg != `schedule "fast" not found` {
		t.Fatalf("message %q", msg)
	}
}

// A schedule of push jobs starts push delivery on its topic at once, as an enqueue does.
func TestPushScheduleWatchesItsTopic(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var watched []string
	e := newEnv(t, func(c *Config) {
		c.PushEnqueued = func(topic string) {
			mu.Lock()
			defer mu.Unlock()
			watched = append(watched, topic)
		}
	})
	body := `{"cron": "@hourly", "topic": "hooks", "job": {"callback_url": "https://example.com/h"}}`
	e.raw(e.pushURL, "PUT", "/v1/schedules/hook", "application/json", body).want(t, http.StatusCreated)
	mu.Lock()
	defer mu.Unlock()
	if len(watched) != 1 || watched[0] != "hooks" {
		t.Fatalf("watched %v, want [hooks]", watched)
	}
}

// A tick whose id another job holds enqueues nothing; the schedule's answer counts it in
// skipped_ticks, which every answer has.
func TestScheduleCountsSkippedTicks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	start := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	for i := range 10 {
		tk := start.Add(time.Duration(i) * time.Second)
		e.enqueue("t", map[string]any{"id": delayq.TickID("taken", tk), "run_at": tk.Format(time.RFC3339Nano), "body": "mine"})
	}
	put := map[string]any{"cron": "@every 1s", "topic": "t", "start_at": start.Format(time.RFC3339)}
	fresh := e.call("PUT", "/v1/schedules/taken", put).want(t, http.StatusCreated)
	if !bytes.Contains(fresh.body, []byte(`"skipped_ticks":0`)) {
		t.Errorf("a new schedule's answer lacks skipped_ticks 0: %s", fresh.body)
	}
	got := decode[apiv1.Schedule](t, e.call("GET", "/v1/schedules/taken", nil).want(t, http.StatusOK))
	if got.SkippedTicks == 0 || got.LastTick != nil {
		t.Fatalf("skipped_ticks %d, last_tick %v; want the put's first ticks skipped, none enqueued", got.SkippedTicks, got.LastTick)
	}
	if j := e.get("t", url.PathEscape(delayq.TickID("taken", start.Add(3*time.Second)))); string(j.Body) != `"mine"` {
		t.Errorf("the job holding a tick's id: %+v; want it as it was", j)
	}
}

// A token bound to some topics sees, and touches, only the schedules of its topics: the
// schedule routes name no topic, and a schedule's job body is its topic's.
func TestSchedulesKeepATokenToItsTopics(t *testing.T) {
	t.Parallel()
	ps, err := access.ParseFile([]byte(`{"tokens": [
		{"name": "orders-on-call", "token": "reader-token-000000001", "role": "reader", "topics": ["orders*"]},
		{"name": "orders-admin", "token": "admin-token-0000000001", "role": "admin", "topics": ["orders*"]},
		{"name": "root", "token": "admin-token-0000000002", "role": "admin"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.Keyring = access.NewKeyring(ps) })
	const addr, reader, ordersAdmin, root = "192.0.2.9:5000", "reader-token-000000001", "admin-token-0000000001", "admin-token-0000000002"
	put := func(token, name, topic string) int {
		t.Helper()
		body := `{"cron": "0 9 * * *", "topic": "` + topic + `", "job": {"body": {"secret": "` + topic + `"}}}`
		req := httptest.NewRequest("PUT", "/v1/schedules/"+name, strings.NewReader(body))
		req.RemoteAddr = addr
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		e.handler.ServeHTTP(w, req)
		return w.Code
	}
	if code := put(root, "payroll-nightly", "payroll"); code != http.StatusCreated {
		t.Fatalf("PUT a payroll schedule as root: %d", code)
	}
	if code := put(root, "orders-nightly", "orders"); code != http.StatusCreated {
		t.Fatalf("PUT an orders schedule as root: %d", code)
	}
	if code := put(ordersAdmin, "payroll-nightly", "orders"); code != http.StatusForbidden {
		t.Errorf("an orders* admin replacing the payroll schedule: %d, want 403", code)
	}
	if code := put(ordersAdmin, "sneaky", "payroll"); code != http.StatusForbidden {
		t.Errorf("an orders* admin putting a schedule into payroll: %d, want 403", code)
	}
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/v1/schedules/orders-nightly", reader, http.StatusOK},
		{"GET", "/v1/schedules/payroll-nightly", reader, http.StatusForbidden},
		{"POST", "/v1/schedules/payroll-nightly/pause", ordersAdmin, http.StatusForbidden},
		{"DELETE", "/v1/schedules/payroll-nightly", ordersAdmin, http.StatusForbidden},
		{"GET", "/v1/schedules/payroll-nightly", root, http.StatusOK},
	} {
		if w := serveFrom(e.handler, addr, c.method, c.path, c.token); w.Code != c.want {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, w.Code, w.Body, c.want)
		}
	}
	w := serveFrom(e.handler, addr, "GET", "/v1/schedules", reader)
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), "payroll") || !strings.Contains(w.Body.String(), "orders-nightly") {
		t.Errorf("GET /v1/schedules as a token of orders*: %d %s; want the orders schedule only", w.Code, w.Body)
	}
	if w := serveFrom(e.handler, addr, "GET", "/v1/schedules/payroll-nightly", root); !strings.Contains(w.Body.String(), `"paused":false`) {
		t.Errorf("the payroll schedule after refused changes: %s", w.Body)
	}
}
