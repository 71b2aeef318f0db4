package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
)

var (
	schedulePutScript     = loadScript("schedule_put")
	scheduleGetScript     = loadScript("schedule_get")
	scheduleLookScript    = loadScript("schedule_look")
	scheduleDeleteScript  = loadScript("schedule_delete")
	schedulePauseScript   = loadScript("schedule_pause")
	scheduleAdvanceScript = loadScript("schedule_advance")
	tickScript            = loadScript("tick")
)

// ScheduleState is a schedule as stored: its definition, which the public package writes and
// reads, and where its ticks are, which the scripts keep. Times are Unix ms.
type ScheduleState struct {
	Def       []byte
	CreatedMs int64 // also the schedule's identity: deleted and put again, it is another
	UpdatedMs int64
	Paused    bool
	// CursorMs: every tick up to it has been enqueued or passed over.
	CursorMs int64
	// LastTickMs is the latest tick whose job was enqueued; 0 before the first.
	LastTickMs int64
	// NowMs is the Redis server's clock when the state was read.
	NowMs int64
	// SkippedTicks counts the ticks that found their job id taken by another job.
	SkippedTicks int64
	// FloorMs, for a schedule put again within the look-ahead of a delete: the ticks up to it
	// are the deleted schedule's. 0 otherwise.
	FloorMs int64
}

// schedule returns the keys of schedule name.
func (s *Store) schedule(name string) keys.Schedule { return keys.ScheduleFor(s.ns, name) }

// scheduleRead is a call of a schedule script that changes nothing.
func (s *Store) scheduleRead(name string, args ...any) script {
	return script{keys: []string{s.schedule(name).State()}, args: args}
}

// scheduleWrite is a call of a schedule script that changes state, recorded under a new call id.
func (s *Store) scheduleWrite(name string, args ...any) script {
	k := s.schedule(name)
	return script{keys: []string{k.State(), k.Call(NewCallID())}, args: args, records: true}
}

// PutSchedule creates schedule name with definition def, whose ticks go to topic, or replaces
// the definition of the schedule of that name, and lists it. It reports whether the schedule
// was created. The answer is read for a look that enqueues the ticks due within aheadMs.
func (s *Store) PutSchedule(ctx context.Context, name string, def []byte, topic string, aheadMs int64) (ScheduleState, bool, error) {
	vals, err := s.run(ctx, schedulePutScript, s.scheduleWrite(name, def, topic, aheadMs)).Slice()
	if err != nil {
		return ScheduleState{}, false, fmt.Errorf("delayq: put schedule: %w", err)
	}
	if len(vals) < 1 {
		return ScheduleState{}, false, errors.New("delayq: put schedule: empty reply")
	}
	st, err := parseScheduleState(vals[1:])
	if err != nil {
		return ScheduleState{}, false, err
	}
	// Listed after it is written: see keys.Schedules.
	if err := s.rdb.SAdd(ctx, keys.Schedules(s.ns), name).Err(); err != nil {
		return ScheduleState{}, false, fmt.Errorf("delayq: listing schedule: %w", err)
	}
	return st, toInt(vals[0]) == 1, nil
}

// Schedule reads schedule name, or ErrNotFound.
func (s *Store) Schedule(ctx context.Context, name string) (ScheduleState, error) {
	vals, err := s.run(ctx, scheduleGetScript, s.scheduleRead(name)).Slice()
	if errors.Is(err, redis.Nil) {
		return ScheduleState{}, ErrNotFound
	}
	if err != nil {
		return ScheduleState{}, fmt.Errorf("delayq: schedule: %w", err)
	}
	return parseScheduleState(vals)
}

// Schedules reads the schedules names in one round trip; the state of a name that has no
// schedule (any more) is nil.
func (s *Store) Schedules(ctx context.Context, names []string) ([]*ScheduleState, error) {
	return s.schedules(ctx, scheduleGetScript, names)
}

// LookSchedules reads the schedules names, as Schedules does, for a look that enqueues their
// ticks due within aheadMs: no delete, and no put that moves a schedule to another topic,
// lets a schedule put again enqueue one of those ticks (schedule_look.lua).
func (s *Store) LookSchedules(ctx context.Context, names []string, aheadMs int64) ([]*ScheduleState, error) {
	return s.schedules(ctx, scheduleLookScript, names, aheadMs)
}

func (s *Store) schedules(ctx context.Context, sc *luaScript, names []string, args ...any) ([]*ScheduleState, error) {
	cmds, errs := s.pipelined(ctx, sc, len(names), func(i int) script {
		return s.scheduleRead(names[i], args...)
	})
	out := make([]*ScheduleState, len(names))
	for i, cmd := range cmds {
		if errs[i] != nil {
			return nil, fmt.Errorf("delayq: schedule %q: %w", names[i], errs[i])
		}
		if errors.Is(cmd.Err(), redis.Nil) {
			continue
		}
		vals, err := cmd.Slice()
		if err != nil {
			return nil, fmt.Errorf("delayq: schedule %q: %w", names[i], err)
		}
		st, err := parseScheduleState(vals)
		if err != nil {
			return nil, err
		}
		out[i] = &st
	}
	return out, nil
}

// ScheduleNames returns the names of every schedule, in no order. A name may outlive its
// schedule for a moment (see keys.Schedules).
func (s *Store) ScheduleNames(ctx context.Context) ([]string, error) {
	names, err := s.rdb.SMembers(ctx, keys.Schedules(s.ns)).Result()
	if err != nil {
		return nil, fmt.Errorf("delayq: schedules: %w", err)
	}
	return names, nil
}

// DeleteSchedule deletes schedule name, or answers ErrNotFound.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	// Unlisted before it is deleted: see keys.Schedules.
	if err := s.rdb.SRem(ctx, keys.Schedules(s.ns), name).Err(); err != nil {
		return fmt.Errorf("delayq: unlisting schedule: %w", err)
	}
	n, err := s.run(ctx, scheduleDeleteScript, s.scheduleWrite(name)).Int64()
	if err != nil {
		return fmt.Errorf("delayq: delete schedule: %w", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// PauseSchedule pauses (paused true) or resumes schedule name and returns it, or ErrNotFound.
// The answer to a resume is read for a look that enqueues the ticks due within aheadMs.
func (s *Store) PauseSchedule(ctx context.Context, name string, paused bool, aheadMs int64) (ScheduleState, error) {
	flag := "0"
	if paused {
		flag = "1"
	}
	vals, err := s.run(ctx, schedulePauseScript, s.scheduleWrite(name, flag, aheadMs)).Slice()
	if errors.Is(err, redis.Nil) {
		return ScheduleState{}, ErrNotFound
	}
	if err != nil {
		return ScheduleState{}, fmt.Errorf("delayq: pause schedule: %w", err)
	}
	return parseScheduleState(vals)
}

// Advance is what a look at a schedule dealt with, for AdvanceSchedule.
type Advance struct {
	CreatedMs int64 // the schedule's identity, as the look read it
	CursorMs  int64 // every tick up to it was dealt with
	LastMs    int64 // the latest tick enqueued; 0 when none
	Skipped   int64 // how many ticks found their job id taken by another job
}

// AdvanceSchedule moves the cursor of schedule name to a.CursorMs and its last tick to
// a.LastMs, where they are earlier, and counts a.Skipped skipped ticks, as long as the schedule
// is still the one created at a.CreatedMs. It reports whether it was, and how many skipped
// ticks the schedule had counted before.
func (s *Store) AdvanceSchedule(ctx context.Context, name string, a Advance) (ok bool, skippedBefore int64, err error) {
	last := ""
	if a.LastMs != 0 {
		last = strconv.FormatInt(a.LastMs, 10)
	}
	vals, err := s.run(ctx, scheduleAdvanceScript, s.scheduleWrite(name, a.CreatedMs, a.CursorMs, last, a.Skipped)).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("delayq: advance schedule: %w", err)
	}
	if len(vals) != 2 {
		return false, 0, fmt.Errorf("delayq: advance schedule: %d values in reply, want 2", len(vals))
	}
	return vals[0] == 1, vals[1], nil
}

// TickOutcome is what enqueueing a tick's job did.
type TickOutcome int

// The outcomes of EnqueueTick.
const (
	TickDoneBefore TickOutcome = 0 // the tick, or a later one, was enqueued before: nothing added
	TickAdded      TickOutcome = 1 // the job was added
	TickIDTaken    TickOutcome = 2 // a job with the tick's id exists: nothing added
	TickTooLate    TickOutcome = 3 // past the latest time given: nothing added or marked
)

// EnqueueTick adds job j, due at tickMs, to partition p as the job of schedule name's tick
// tickMs, unless the partition has had that tick or a later one of the schedule (tick.lua).
// j.ID must be the tick's id and j.RunAtMs the tick. When untilMs is not 0 and the Redis
// server's clock is past it, nothing is added: TickTooLate.
func (s *Store) EnqueueTick(ctx context.Context, p keys.Partition, name string, j NewJob, untilMs int64) (TickOutcome, error) {
	lane := "0"
	if j.Callback != "" {
		lane = "1"
	}
	c := write(p, NewCallID(), name, j.RunAtMs, j.ID, lane, recordHead(j), recordTail(j), untilMs)
	c.extra = append(c.extra, p.Ticks())
	vals, err := s.run(ctx, tickScript, c).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("delayq: enqueue tick: %w", err)
	}
	if len(vals) != 2 {
		return 0, fmt.Errorf("delayq: enqueue tick: %d values in reply, want 2", len(vals))
	}
	return TickOutcome(vals[0]), nil
}

// parseScheduleState reads what schedule_lib.lua's state() answers.
func parseScheduleState(vals []any) (ScheduleState, error) {
	if len(vals) != 9 {
		return ScheduleState{}, fmt.Errorf("delayq: schedule: %d values in reply, want 9", len(vals))
	}
	return ScheduleState{
		Def:          []byte(toString(vals[0])),
		CreatedMs:    toInt(vals[1]),
		UpdatedMs:    toInt(vals[2]),
		Paused:       toInt(vals[3]) == 1,
		CursorMs:     toInt(vals[4]),
		LastTickMs:   toInt(vals[5]),
		NowMs:        toInt(vals[6]),
		SkippedTicks: toInt(vals[7]),
		FloorMs:      toInt(vals[8]),
	}, nil
}
