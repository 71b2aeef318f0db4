// Package core is what delayq's own packages may use of a delayq.Client beyond its public API:
// its store and archive setting (package archive, the HTTP API, the dashboard), beanstalkd's
// job semantics (the beanstalkd front end) and its clock (package delayqtest). A Client hands
// it out through its Core method; this package cannot import package delayq, which imports it,
// so the job type is a type parameter, J, which is *delayq.Job.
package core

import (
	"context"
	"time"

	"github.com/delayq/delayq/internal/store"
)

// Key is the argument of delayq.Client.Core, which accepts one Key only: Pass. Only code
// whose import path lies under github.com/delayq/delayq may import internal/core and name
// Pass, which keeps every ordinary program out (one that names itself inside delayq's path, or
// reads Pass with unsafe, is past any promise); a Key made any other way (a zero Key, say,
// from a generic function whose type parameter is inferred from Core's signature) is refused.
type Key struct{ pass *byte }

// Pass is the Key of delayq's own packages.
var Pass = Key{pass: new(byte)}

// Client is a delayq.Client seen from inside the module.
type Client[J any] interface {
	// Store returns the Client's store.
	Store() *store.Store
	// ReadArchiveSetting makes the Client read its namespace's archive setting now, rather
	// than at its next periodic read.
	ReadArchiveSetting(ctx context.Context) error
	Ranked[J]
	Testing
}

// Ranked is beanstalkd's job semantics, which the public API does not offer: a 32-bit
// priority that ranks a job, most urgent first and then by id, among the due jobs; no retry
// limit and no backoff; TTRs and delays beyond the Client's limits; a release with a delay and
// a new priority; a bury with a new priority; a reserve of one job by id.
type Ranked[J any] interface {
	// EnqueueRanked enqueues j into topic.
	EnqueueRanked(ctx context.Context, topic string, j RankedJob) error
	// ReadyOrder compares two due jobs as a ready set ranks them: negative when a goes out
	// first.
	ReadyOrder(a, b J) int
	// ReserveJob leases job id of topic in any state but reserved; delayq.ErrNotFound when it
	// does not exist or is reserved.
	ReserveJob(ctx context.Context, topic, id string) (J, error)
	// ReleaseRanked gives a lease back, the job due after delay with a new beanstalkd
	// priority. A release with a delay is a snooze, as delayq.Client.Release's with one: it
	// reports whether the job went dead, past its max snoozes.
	ReleaseRanked(ctx context.Context, l Lease, pri uint32, delay time.Duration) (dead bool, err error)
	// BuryRanked sends a leased job to the dead letters with a new beanstalkd priority.
	BuryRanked(ctx context.Context, l Lease, pri uint32) error
}

// Testing is what package delayqtest needs of a Client.
type Testing interface {
	// AdvanceClock moves the clock the Client's scripts read forward by d.
	AdvanceClock(d time.Duration)
	// ClockOffset returns how far AdvanceClock has moved the Client's clock in all.
	ClockOffset() time.Duration
	// MaxPage returns the largest page the Client's listing calls take (its
	// Limits.MaxReserve).
	MaxPage() int
	// Failure returns how a Worker nacks a job whose handler returned err: the delay before
	// the retry (nil: the job's backoff step) and whether the job goes dead at once.
	Failure(err error) (delay *time.Duration, dead bool)
	// Snoozed reports whether a handler's err asks a Worker to snooze the job (delayq.Snooze),
	// and for how long.
	Snoozed(err error) (time.Duration, bool)
}

// RankedJob is a job put through the beanstalkd front end: ranked by Pri (most urgent first),
// then by ID, among the due jobs; retried for ever with no backoff. Delay and TTR are kept
// beyond the Client's limits (a TTR below MinTTR is raised to it).
type RankedJob struct {
	ID         string
	Body       []byte
	Pri        uint32
	Delay, TTR time.Duration
}

// Lease names a leased job, as delayq.Lease does.
type Lease struct{ Topic, ID, Token string }
