package delayq

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/store"
)

// The topic controls, on a standalone server (one partition a topic) and on a Cluster (16
// partitions over three shards).

func TestTopicControlsStandalone(t *testing.T) {
	t.Parallel()
	checkControls(t, redistest.Standalone(t).Client(t))
}

func TestTopicControlsCluster(t *testing.T) {
	t.Parallel()
	checkControls(t, redistest.NewCluster(t, 3, 0).Client(t))
}

func checkControls(t *testing.T, rdb redis.UniversalClient) {
	// Only a notice wakes a waiting consumer within a test: the recheck is a minute away.
	c := newClientOn(t, rdb, Config{RecheckInterval: time.Minute})
	producer := newClientOn(t, rdb, Config{})
	for _, lane := range []store.Lane{store.LanePull, store.LanePush} {
		t.Run("pause holds the "+string(lane)+" lane, resume delivers at once", func(t *testing.T) {
			checkPauseAndResume(t, c, producer, "pause-"+string(lane), lane)
		})
	}
}

// checkPauseAndResume pauses a topic holding a due job of lane, checks that no consumer of the
// lane gets it or the next one, then resumes the topic and checks that the waiting consumer
// gets a job at once.
func checkPauseAndResume(t *testing.T, c, producer *Client, topic string, lane store.Lane) {
	ctx := testContext(t)
	push := lane == store.LanePush
	spec := func(id string) Spec {
		s := Spec{ID: id}
		if push {
			s.CallbackURL = "https://example.com/hook"
		}
		return s
	}
	mustEnqueue(t, producer, topic, spec("before"))
	if err := producer.PauseTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if s, err := producer.Stats(ctx, topic); err != nil || !s.Paused {
		t.Fatalf("stats of the paused topic: %+v, %v", s, err)
	}
	// A poll asks every partition.
	if jobs, err := c.Reserve(ctx, topic, ReserveOptions{push: push}); err != nil || len(jobs) != 0 {
		t.Fatalf("a poll of the paused topic: %d jobs, %v", len(jobs), err)
	}
	got := make(chan []*Job, 1)
	go func() {
		jobs, _ := c.Reserve(ctx, topic, ReserveOptions{Max: 2, Wait: 30 * time.Second, push: push})
		got <- jobs
	}()
	waitSettled(t, c, topic, lane)
	asleep := scriptCalls(t, c.store.Client())
	mustEnqueue(t, producer, topic, spec("during"))

	s, err := producer.Stats(ctx, topic)
	if err != nil || !s.Paused || s.Ready != 2 {
		t.Fatalf("stats of the paused topic: %+v, %v; want paused with 2 ready jobs", s, err)
	}
	select {
	case jobs := <-got:
		t.Fatalf("the paused topic handed out %d jobs", len(jobs))
	default:
	}
	start := time.Now()
	if err := producer.ResumeTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	select {
	case jobs := <-got:
		if len(jobs) == 0 {
			t.Fatal("the waiting consumer got nothing after the resume")
		}
		t.Logf("resume to delivery: %v", time.Since(start))
	case <-time.After(15 * time.Second):
		t.Fatal("the resume did not wake the waiting consumer")
	}
	// The consumer slept through the job enqueued while paused: on one partition, the
	// scripts run since are that enqueue, the stats, the resume and the reserve it woke.
	if s.Partitions == 1 {
		if n := scriptCalls(t, c.store.Client()) - asleep; n != 4 {
			t.Errorf("%d script calls from the enqueue into the paused topic to the delivery, want 4: the job's notice woke the consumer", n)
		}
	}
	if s, err := producer.Stats(ctx, topic); err != nil || s.Paused {
		t.Fatalf("stats after the resume: %+v, %v", s, err)
	}
}
