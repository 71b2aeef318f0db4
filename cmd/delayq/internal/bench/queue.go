// Package bench measures delayq on a real Redis: enqueue throughput, memory per pending job,
// on-time precision, end-to-end and drain rates, a burst of jobs due at one instant, the HTTP
// API, and how enqueue scales with a large backlog.
//
// Every scenario drives a Contestant, a job queue seen through a few bulk operations (produce a
// plan of jobs, consume with a given concurrency, wait for deliveries). delayq is one Contestant;
// the peer comparison module implements the same interface for other queues, so that every queue
// runs the very same scenario code, on the same Redis, in the same run.
package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// BodySize is the size of every job body the scenarios enqueue.
const BodySize = 100

// indexDigits is how many leading bytes of a body hold the job's index, in decimal.
const indexDigits = 10

// ErrUnsupported is returned by a Queue for an operation it does not have (such as a batch
// enqueue); the scenario then reports the figure as not applicable.
var ErrUnsupported = errors.New("bench: not supported by this queue")

// Contestant is a job queue under measurement.
type Contestant interface {
	// Name is the queue's short name, such as "delayq".
	Name() string
	// Version is the queue's version, as precise as it is known.
	Version() string
	// Open returns a Queue for topic. Scenarios open a new topic after each reset of Redis.
	Open(ctx context.Context, topic string) (Queue, error)
}

// Queue is one topic of a Contestant.
type Queue interface {
	// MaxBatch is the most jobs one enqueue call may carry; 1 when the queue has no batch
	// enqueue.
	MaxBatch() int
	// Produce enqueues the jobs of p and returns once all are stored.
	Produce(ctx context.Context, p Plan) (Produced, error)
	// Consume starts handlers, concurrency at a time, that record a Delivery for each job and
	// succeed at once. It returns when they are started.
	Consume(ctx context.Context, concurrency int) error
	// Await waits until n deliveries have been recorded since Consume and no job of the topic is
	// left unfinished (delayed, ready or leased), then returns the deliveries.
	Await(ctx context.Context, n int) (Awaited, error)
	// StopConsuming stops the handlers started by Consume.
	StopConsuming(ctx context.Context) error
	// Close releases the queue's resources; it does not delete its jobs.
	Close(ctx context.Context) error
}

// Plan describes jobs to enqueue. Job i (0 ≤ i < N) carries a body whose first bytes hold i.
type Plan struct {
	// N is the number of jobs.
	N int
	// Producers is how many goroutines (or concurrent callers) enqueue at once. Defaults to 1.
	Producers int
	// Batch is how many jobs one enqueue call carries. Defaults to 1: one call per job.
	Batch int
	// Delay makes every job due this long after it is stored, when At is zero. Zero: due now.
	Delay time.Duration
	// At, when set, makes job i due at At + i×Step.
	At time.Time
	// Step spaces the due times of jobs with At.
	Step time.Duration
}

// DueAt returns the due time the plan asks for job i; zero for relative delays.
func (p Plan) DueAt(i int) time.Time {
	if p.At.IsZero() {
		return time.Time{}
	}
	return p.At.Add(time.Duration(i) * p.Step)
}

func (p Plan) withDefaults() Plan {
	if p.Producers < 1 {
		p.Producers = 1
	}
	if p.Batch < 1 {
		p.Batch = 1
	}
	return p
}

// Produced reports when a Produce call stored its jobs.
type Produced struct {
	Start time.Time // before the first enqueue call
	End   time.Time // after the last one returned
	// Stored counts the jobs of the calls that succeeded: when Produce fails or is cut short,
	// those that were stored. A queue that cannot tell leaves it 0.
	Stored int
}

// Delivery is one job handed to a handler.
type Delivery struct {
	// Index is the job's position in the Plan that produced it.
	Index int `json:"i"`
	// Received is when the handler got the job, by the local clock.
	Received time.Time `json:"r"`
	// Reserved is when the queue leased the job by the Redis server's clock; zero when the
	// queue does not tell.
	Reserved time.Time `json:"s,omitzero"`
}

// Awaited is what Await returns.
type Awaited struct {
	Deliveries []Delivery
	// Done is when the last job was found finished, by the local clock.
	Done time.Time
}

// Body returns the body of job i (0 ≤ i < 10^10): i in decimal, zero-padded, then filler up to
// BodySize bytes.
func Body(i int) []byte {
	b := make([]byte, BodySize)
	for k := indexDigits - 1; k >= 0; k-- {
		b[k] = byte('0' + i%10)
		i /= 10
	}
	for k := indexDigits; k < BodySize; k++ {
		b[k] = 'x'
	}
	return b
}

// BodyIndex returns the job index a body made by Body carries.
func BodyIndex(b []byte) (int, error) {
	if len(b) < indexDigits {
		return 0, fmt.Errorf("bench: a body of %d bytes carries no index", len(b))
	}
	i, err := strconv.Atoi(string(b[:indexDigits]))
	if err != nil {
		return 0, fmt.Errorf("bench: body index: %w", err)
	}
	return i, nil
}
