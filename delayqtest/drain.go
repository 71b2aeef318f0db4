package delayqtest

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"testing"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/core"
)

// DrainResult is what Drain did: the ids of the jobs it ran, one entry per run, by outcome.
// A job that failed and came due again at once (delayq.RetryIn(0, err)) was run again, so
// its id can be in Retried and then in Acked.
type DrainResult struct {
	Acked   []string // the handler returned nil and the job was acked
	Retried []string // the handler failed and the job is due again, after its backoff step or the delay asked
	Dead    []string // the handler failed and the job went to the dead letters
	// Snoozed are the jobs whose handler returned delayq.Snooze: released for later without
	// an attempt (those that went dead past their MaxSnoozes are in Dead).
	Snoozed []string
	// Lost are the jobs whose lease was gone when their outcome was settled: the handler
	// cancelled or rescheduled its job, or ran past its TTR.
	Lost []string
	// Errors holds the error of each failed run, the last one of each job, by job id; a
	// panic's error carries its value and stack.
	Errors map[string]error
}

// maxDrainRuns bounds a Drain: a handler that keeps enqueueing due jobs to its own topic would
// otherwise never let it end.
const maxDrainRuns = 10000

// Drain runs the jobs of topic that are due now through h, one at a time on the calling
// goroutine, until none is due, and settles each as a Worker does: a nil error acks the job;
// an error nacks it with the error's text, to be retried after its backoff step, or as
// delayq.RetryIn and delayq.DeadLetter say; once its retries are used up it goes dead;
// delayq.Snooze releases it for later without counting the attempt; a
// panic in h is recovered and counts as an error. Drain never waits for a job that is not yet
// due: move client's clock with AdvanceClock to make it due. Jobs due when a run ends (ones h
// enqueued, say) are run too, highest priority first, as Reserve hands them out.
//
// h gets ctx and the reserved job. Drain runs it without middleware and without renewing its
// lease. Push jobs (with a CallbackURL) are left alone, as a Worker leaves them. Drain fails t
// when Redis fails, or after 10000 runs.
func Drain(ctx context.Context, t testing.TB, client *delayq.Client, topic string, h delayq.Handler) DrainResult {
	t.Helper()
	res := DrainResult{Errors: map[string]error{}}
	for range maxDrainRuns {
		jobs, err := client.Reserve(ctx, topic, delayq.ReserveOptions{})
		if err != nil {
			t.Fatalf("delayqtest: Drain(%q): reserve: %v", topic, err)
			return res
		}
		if len(jobs) == 0 {
			return res
		}
		job := jobs[0]
		if err := settle(ctx, client, job, runHandler(ctx, h, job), &res); err != nil {
			t.Fatalf("delayqtest: Drain(%q): job %q: %v", topic, job.ID, err)
			return res
		}
	}
	t.Fatalf("delayqtest: Drain(%q) ran %d jobs and more are due: does the handler keep enqueueing due jobs to its own topic?", topic, maxDrainRuns)
	return res
}

// runHandler runs h, turning a panic into an error that carries its value and stack, as a
// Worker does.
func runHandler(ctx context.Context, h delayq.Handler, job *delayq.Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return h(ctx, job)
}

// settle acks or nacks job after its handler returned failure and records the outcome in res.
// It returns Redis's error, if any, other than a lost lease.
func settle(ctx context.Context, client *delayq.Client, job *delayq.Job, failure error, res *DrainResult) error {
	if failure == nil {
		err := client.Ack(ctx, job.Lease())
		switch {
		case err == nil:
			res.Acked = append(res.Acked, job.ID)
		case errors.Is(err, delayq.ErrLeaseLost):
			res.Lost = append(res.Lost, job.ID)
		default:
			return fmt.Errorf("ack: %w", err)
		}
		return nil
	}
	res.Errors[job.ID] = failure
	if d, ok := client.Core(core.Pass).Snoozed(failure); ok {
		dead, err := client.Release(ctx, job.Lease(), delayq.ReleaseOptions{Delay: &d})
		switch {
		case errors.Is(err, delayq.ErrLeaseLost):
			res.Lost = append(res.Lost, job.ID)
		case err != nil:
			return fmt.Errorf("release: %w", err)
		case dead:
			res.Dead = append(res.Dead, job.ID)
		default:
			res.Snoozed = append(res.Snoozed, job.ID)
		}
		return nil
	}
	o := delayq.NackOptions{Error: failure.Error()}
	o.Delay, o.Dead = client.Core(core.Pass).Failure(failure)
	dead, err := client.Nack(ctx, job.Lease(), o)
	switch {
	case errors.Is(err, delayq.ErrLeaseLost):
		res.Lost = append(res.Lost, job.ID)
	case err != nil:
		return fmt.Errorf("nack: %w", err)
	case dead:
		res.Dead = append(res.Dead, job.ID)
	default:
		res.Retried = append(res.Retried, job.ID)
	}
	return nil
}
