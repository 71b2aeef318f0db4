package delayqtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/delayqtest"
)

// sendReminder is the code under test: it schedules a reminder a day before an appointment.
func sendReminder(ctx context.Context, client *delayq.Client, user int, at time.Time) error {
	_, err := client.Enqueue(ctx, "reminders", delayq.Spec{
		ID:     fmt.Sprintf("reminder-%d", user),
		Body:   []byte(fmt.Sprintf(`{"user": %d}`, user)),
		Format: delayq.FormatJSON,
		RunAt:  at.Add(-24 * time.Hour),
	})
	return err
}

func ExampleRequireEnqueued() {
	t := newExampleT() // in a test: the test's *testing.T
	defer t.end()
	ctx := context.Background()

	client := delayqtest.NewClient(t, delayq.Config{})
	if err := sendReminder(ctx, client, 42, time.Now().Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}

	job := delayqtest.RequireEnqueued(t, client, "reminders", delayqtest.Match{
		JSON:      map[string]any{"user": 42},
		RunAtFrom: time.Now().Add(47 * time.Hour),
		RunAtTo:   time.Now().Add(49 * time.Hour),
	})
	fmt.Println(job.ID, job.State)
	delayqtest.RequireNotEnqueued(t, client, "reminders", delayqtest.Match{JSON: map[string]any{"user": 7}})
	// Output: reminder-42 delayed
}

func ExampleDrain() {
	t := newExampleT() // in a test: the test's *testing.T
	defer t.end()
	ctx := context.Background()

	client := delayqtest.NewClient(t, delayq.Config{})
	client.Enqueue(ctx, "invoices", delayq.Spec{ID: "inv-1", Body: []byte("ok")})
	client.Enqueue(ctx, "invoices", delayq.Spec{ID: "inv-2", Body: []byte("flaky")})
	client.Enqueue(ctx, "invoices", delayq.Spec{ID: "inv-3", Body: []byte("malformed")})

	handle := func(ctx context.Context, job *delayq.Job) error {
		switch string(job.Body) {
		case "flaky":
			if job.Attempts == 1 {
				return errors.New("payment provider timed out") // retried after its backoff step
			}
		case "malformed":
			return delayq.DeadLetter(errors.New("cannot parse")) // no retries
		}
		return nil
	}
	res := delayqtest.Drain(ctx, t, client, "invoices", handle)
	fmt.Println("acked", res.Acked, "retried", res.Retried, "dead", res.Dead)

	// The retry is due 15 s later: move the clock instead of waiting.
	delayqtest.AdvanceClock(client, 15*time.Second)
	res = delayqtest.Drain(ctx, t, client, "invoices", handle)
	fmt.Println("acked", res.Acked)
	// Output:
	// acked [inv-1] retried [inv-2] dead [inv-3]
	// acked [inv-2]
}

func ExampleAdvanceClock() {
	t := newExampleT() // in a test: the test's *testing.T
	defer t.end()
	ctx := context.Background()

	client := delayqtest.NewClient(t, delayq.Config{})
	client.Enqueue(ctx, "cancel-unpaid", delayq.Spec{ID: "order-42", Delay: 30 * time.Minute})

	jobs, _ := client.Reserve(ctx, "cancel-unpaid", delayq.ReserveOptions{})
	fmt.Println("due now:", len(jobs))
	delayqtest.AdvanceClock(client, 30*time.Minute)
	jobs, _ = client.Reserve(ctx, "cancel-unpaid", delayq.ReserveOptions{})
	fmt.Println("due 30 minutes later:", jobs[0].ID)
	// Output:
	// due now: 0
	// due 30 minutes later: order-42
}

// exampleT stands in for the *testing.T that a test gets, which an Example lacks: it runs the
// cleanups when the example ends and exits on a fatal failure.
type exampleT struct {
	testing.TB // nil: the helpers call only the methods below
	mu         sync.Mutex
	cleanups   []func()
}

func newExampleT() *exampleT { return &exampleT{} }

func (t *exampleT) Helper() {}

func (t *exampleT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "delayqtest-example-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (t *exampleT) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func (t *exampleT) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	t.end()
	os.Exit(1)
}

func (t *exampleT) Fatal(args ...any) { t.Fatalf("%s", fmt.Sprint(args...)) }

// end runs the cleanups, last registered first, as a test's end does.
func (t *exampleT) end() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
