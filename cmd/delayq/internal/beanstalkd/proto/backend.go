package proto

import (
	"context"
	"time"
)

// Session identifies one client connection to a Backend: beanstalkd ties a reservation to the
// connection that made it (only it may delete, release, bury or touch the job, and closing the
// connection releases its jobs), so every call about reserved jobs says whose they are.
type Session uint64

// Job is a job handed out by reserve or a peek.
type Job struct {
	ID   uint64
	Body []byte
	// TTR is the job's time to run: the server warns a client waiting in reserve with
	// DEADLINE_SOON a second before a job it holds would time out.
	TTR time.Duration
}

// Backend stores and hands out jobs for a beanstalkd server. The server keeps what is per
// connection (the tube used, the tubes watched, the deadlines of reserved jobs) and parses and
// answers; the Backend does everything that touches jobs. Its errors are proto Errors
// (ErrNotFound, ErrTimedOut, ErrDeadlineSoon, ErrDraining, ErrOutOfMemory); any other error
// is answered INTERNAL_ERROR. Its methods are called concurrently from many connections.
type Backend interface {
	// Put stores a job in tube and returns its id, an integer unique across tubes. buried
	// reports a job stored buried (beanstalkd's reply BURIED <id>).
	Put(ctx context.Context, tube string, pri uint32, delay, ttr time.Duration, body []byte) (id uint64, buried bool, err error)
	// Reserve waits until a job is ready in any of tubes and reserves it for s, the most urgent
	// first (lowest priority, then lowest id). A negative timeout waits until ctx ends; when
	// timeout passes first it returns ErrTimedOut. The server cancels ctx to answer
	// DEADLINE_SOON or when the client goes away; a job must not be lost to a cancelled call.
	Reserve(ctx context.Context, s Session, tubes []string, timeout time.Duration) (Job, error)
	// ReserveJob reserves the job with this id for s, whatever its state but reserved.
	ReserveJob(ctx context.Context, s Session, id uint64) (Job, error)
	// Delete removes a job that is reserved by s, or is ready, delayed or buried.
	Delete(ctx context.Context, s Session, id uint64) error
	// Release puts a job reserved by s back with a new priority and delay; its reserve count
	// is kept and it never goes dead by itself. buried reports it had to be buried instead.
	Release(ctx context.Context, s Session, id uint64, pri uint32, delay time.Duration) (buried bool, err error)
	// Bury buries a job reserved by s with a new priority.
	Bury(ctx context.Context, s Session, id uint64, pri uint32) error
	// Touch renews the TTR of a job reserved by s.
	Touch(ctx context.Context, s Session, id uint64) error
	// Kick moves up to bound jobs of tube back to ready: buried ones if there are any, else
	// delayed ones. It returns how many moved.
	Kick(ctx context.Context, tube string, bound uint64) (uint64, error)
	// KickJob moves one buried or delayed job back to ready.
	KickJob(ctx context.Context, id uint64) error
	// Peek returns a job by id, in any state.
	Peek(ctx context.Context, id uint64) (Job, error)
	// PeekState returns the next job of tube in state "ready", "delayed" or "buried".
	PeekState(ctx context.Context, tube string, state string) (Job, error)
	// StatsJob returns a job's statistics.
	StatsJob(ctx context.Context, id uint64) (JobStats, error)
	// StatsTube returns a tube's job counts and counters; ErrNotFound, with the counters, for a
	// tube that holds no job and is not paused (the server adds its own connection counts, and
	// answers for a tube without jobs that a connection uses or watches).
	StatsTube(ctx context.Context, tube string) (TubeStats, error)
	// Stats returns the job counts over all tubes.
	Stats(ctx context.Context) (StoreStats, error)
	// ListTubes returns the tubes that hold jobs or are paused (the server adds the tubes its
	// connections use or watch).
	ListTubes(ctx context.Context) ([]string, error)
	// PauseTube stops reserves from tube for delay.
	PauseTube(ctx context.Context, tube string, delay time.Duration) error
	// Disconnect releases every job still reserved by s; the server calls it once s has gone.
	Disconnect(ctx context.Context, s Session) error
}
