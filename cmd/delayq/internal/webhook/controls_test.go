package webhook

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/testwait"
)

// A paused topic's push jobs wait; the resume wakes the dispatcher, which delivers them at
// once (its Client's recheck is a minute away: only the resume's notice can wake it).
func TestPausedTopicIsDeliveredOnResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, err := delayq.New(testContext(t), e.srv.Client(t), delayq.Config{Logger: e.log, RecheckInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	rcv := newReceiver(t, nil, func(w http.ResponseWriter, _ *http.Request) {})
	paths := func() []string {
		var out []string
		for _, d := range rcv.deliveries() {
			out = append(out, d.path)
		}
		return out
	}
	e.enqueue(t, "held", delayq.Spec{ID: "h", CallbackURL: rcv.url("/held")})
	if err := c.PauseTopic(testContext(t), "held"); err != nil {
		t.Fatal(err)
	}
	e.enqueue(t, "free", delayq.Spec{ID: "f", CallbackURL: rcv.url("/free")})
	e.start(t, Config{Client: c})
	testwait.For(t, 10*time.Second, "the free topic's delivery", func() bool { return slices.Contains(paths(), "/free") })
	testwait.For(t, 10*time.Second, "the ack of the free topic's job", func() bool { return e.get(t, "free", "f") == nil })
	if slices.Contains(paths(), "/held") {
		t.Fatal("the paused topic's job was delivered")
	}
	start := time.Now()
	if err := c.ResumeTopic(testContext(t), "held"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "the held job's delivery after the resume", func() bool { return slices.Contains(paths(), "/held") })
	t.Logf("resume to delivery: %v", time.Since(start))
}
