// Package proto is the beanstalkd text protocol (beanstalkd 1.12's protocol.txt) with no
// storage behind it: it reads command lines and job bodies exactly as beanstalkd parses them,
// writes every reply form, and names the Backend interface that a server calls to carry the
// commands out.
//
// Exactness matters more than leniency here: existing clients were written against
// beanstalkd's own parser, so a line that beanstalkd refuses is refused with the same reply,
// and one that it accepts (however odd, such as "put 0 0 0" for an empty job) is accepted.
package proto

import "time"

// Command is one parsed command line; its dynamic type names the command.
type Command interface {
	// Name returns the command's name as sent, e.g. "reserve-with-timeout".
	Name() string
}

// Put is `put <pri> <delay> <ttr> <bytes>` followed by its body.
type Put struct {
	Pri   uint32
	Delay time.Duration
	// TTR is as sent; beanstalkd raises a TTR under one second to one second, which is the
	// server's business, not the parser's.
	TTR  time.Duration
	Body []byte // without the trailing CRLF
}

// Use is `use <tube>`.
type Use struct{ Tube string }

// Reserve is `reserve`.
type Reserve struct{}

// ReserveWithTimeout is `reserve-with-timeout <seconds>`. A negative Timeout waits for ever,
// as beanstalkd does with a negative count of seconds.
type ReserveWithTimeout struct{ Timeout time.Duration }

// ReserveJob is `reserve-job <id>`.
type ReserveJob struct{ ID uint64 }

// Delete is `delete <id>`.
type Delete struct{ ID uint64 }

// Release is `release <id> <pri> <delay>`.
type Release struct {
	ID    uint64
	Pri   uint32
	Delay time.Duration
}

// Bury is `bury <id> <pri>`.
type Bury struct {
	ID  uint64
	Pri uint32
}

// Touch is `touch <id>`.
type Touch struct{ ID uint64 }

// Watch is `watch <tube>`.
type Watch struct{ Tube string }

// Ignore is `ignore <tube>`.
type Ignore struct{ Tube string }

// Peek is `peek <id>`.
type Peek struct{ ID uint64 }

// PeekReady is `peek-ready`.
type PeekReady struct{}

// PeekDelayed is `peek-delayed`.
type PeekDelayed struct{}

// PeekBuried is `peek-buried`.
type PeekBuried struct{}

// Kick is `kick <bound>`.
type Kick struct{ Bound uint64 }

// KickJob is `kick-job <id>`.
type KickJob struct{ ID uint64 }

// StatsJob is `stats-job <id>`.
type StatsJob struct{ ID uint64 }

// StatsTube is `stats-tube <tube>`.
type StatsTube struct{ Tube string }

// Stats is `stats`.
type Stats struct{}

// ListTubes is `list-tubes`.
type ListTubes struct{}

// ListTubeUsed is `list-tube-used`.
type ListTubeUsed struct{}

// ListTubesWatched is `list-tubes-watched`.
type ListTubesWatched struct{}

// Quit is `quit`: the server closes the connection without a reply.
type Quit struct{}

// PauseTube is `pause-tube <tube> <delay>`.
type PauseTube struct {
	Tube  string
	Delay time.Duration
}

func (Put) Name() string                { return "put" }
func (Use) Name() string                { return "use" }
func (Reserve) Name() string            { return "reserve" }
func (ReserveWithTimeout) Name() string { return "reserve-with-timeout" }
func (ReserveJob) Name() string         { return "reserve-job" }
func (Delete) Name() string             { return "delete" }
func (Release) Name() string            { return "release" }
func (Bury) Name() string               { return "bury" }
func (Touch) Name() string              { return "touch" }
func (Watch) Name() string              { return "watch" }
func (Ignore) Name() string             { return "ignore" }
func (Peek) Name() string               { return "peek" }
func (PeekReady) Name() string          { return "peek-ready" }
func (PeekDelayed) Name() string        { return "peek-delayed" }
func (PeekBuried) Name() string         { return "peek-buried" }
func (Kick) Name() string               { return "kick" }
func (KickJob) Name() string            { return "kick-job" }
func (StatsJob) Name() string           { return "stats-job" }
func (StatsTube) Name() string          { return "stats-tube" }
func (Stats) Name() string              { return "stats" }
func (ListTubes) Name() string          { return "list-tubes" }
func (ListTubeUsed) Name() string       { return "list-tube-used" }
func (ListTubesWatched) Name() string   { return "list-tubes-watched" }
func (Quit) Name() string               { return "quit" }
func (PauseTube) Name() string          { return "pause-tube" }
