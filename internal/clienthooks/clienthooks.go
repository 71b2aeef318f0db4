// Package clienthooks gives package archive and the beanstalkd front end what they need of a
// delayq.Client's insides (its store, reading the archive setting at once, beanstalkd's job
// semantics) without adding to delayq's public API.
// Package delayq sets the hooks in an init function; they take the Client as any because this
// package cannot import delayq, which imports it.
package clienthooks

import (
	"context"
	"time"

	"github.com/delayq/delayq/internal/store"
)

var (
	// Store returns client's store.
	Store func(client any) *store.Store
	// ReadArchiveSetting makes client read the namespace's archive setting now.
	ReadArchiveSetting func(ctx context.Context, client any) error
)

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

// The beanstalkd front end's hooks (package delayq's beanstalkd.go).
var (
	// EnqueueRanked enqueues j into topic.
	EnqueueRanked func(ctx context.Context, client any, topic string, j RankedJob) error
	// ReadyOrder compares two due *delayq.Jobs as a ready set ranks them: negative when a goes
	// out first.
	ReadyOrder func(a, b any) int
	// ReserveJob leases job id of topic in any state but reserved, and returns it as a
	// *delayq.Job; ErrNotFound when it does not exist or is reserved.
	ReserveJob func(ctx context.Context, client any, topic, id string) (any, error)
	// ReleaseRanked gives a lease back, the job due after delay with a new beanstalkd priority.
	ReleaseRanked func(ctx context.Context, client any, l Lease, pri uint32, delay time.Duration) error
	// BuryRanked sends a leased job to the dead letters with a new beanstalkd priority.
	BuryRanked func(ctx context.Context, client any, l Lease, pri uint32) error
)
