package proto

import (
	"strconv"
	"time"
)

// JobStats is the reply to stats-job.
type JobStats struct {
	ID       uint64
	Tube     string
	State    string // ready, delayed, reserved or buried
	Pri      uint32
	Age      time.Duration
	Delay    time.Duration
	TTR      time.Duration
	TimeLeft time.Duration
	File     int
	Reserves uint64
	Timeouts uint64
	Releases uint64
	Buries   uint64
	Kicks    uint64
}

// Fields returns the stats in beanstalkd's order.
func (s JobStats) Fields() []Field {
	return []Field{
		{"id", u64(s.ID)}, {"tube", s.Tube}, {"state", s.State},
		{"pri", u64(uint64(s.Pri))}, {"age", seconds(s.Age)}, {"delay", seconds(s.Delay)},
		{"ttr", seconds(s.TTR)}, {"time-left", seconds(s.TimeLeft)}, {"file", strconv.Itoa(s.File)},
		{"reserves", u64(s.Reserves)}, {"timeouts", u64(s.Timeouts)}, {"releases", u64(s.Releases)},
		{"buries", u64(s.Buries)}, {"kicks", u64(s.Kicks)},
	}
}

// JobCounts are a tube's (or the server's) jobs by state.
type JobCounts struct {
	Urgent, Ready, Reserved, Delayed, Buried uint64
}

// TubeStats is a tube's part of the reply to stats-tube.
type TubeStats struct {
	Jobs          JobCounts
	TotalJobs     uint64
	CmdDelete     uint64
	CmdPauseTube  uint64
	Pause         time.Duration
	PauseTimeLeft time.Duration
}

// TubeFields returns the stats-tube document in beanstalkd's order; using, watching and
// waiting are the server's connection counts for the tube.
func TubeFields(name string, s TubeStats, using, watching, waiting int) []Field {
	return []Field{
		{"name", name},
		{"current-jobs-urgent", u64(s.Jobs.Urgent)}, {"current-jobs-ready", u64(s.Jobs.Ready)},
		{"current-jobs-reserved", u64(s.Jobs.Reserved)}, {"current-jobs-delayed", u64(s.Jobs.Delayed)},
		{"current-jobs-buried", u64(s.Jobs.Buried)}, {"total-jobs", u64(s.TotalJobs)},
		{"current-using", strconv.Itoa(using)}, {"current-watching", strconv.Itoa(watching)},
		{"current-waiting", strconv.Itoa(waiting)}, {"cmd-delete", u64(s.CmdDelete)},
		{"cmd-pause-tube", u64(s.CmdPauseTube)}, {"pause", seconds(s.Pause)},
		{"pause-time-left", seconds(s.PauseTimeLeft)},
	}
}

// StoreStats are the server-wide figures that come from job storage; the server adds its
// command and connection counters to make the stats document.
type StoreStats struct {
	Jobs        JobCounts
	JobTimeouts uint64
	TotalJobs   uint64
}
