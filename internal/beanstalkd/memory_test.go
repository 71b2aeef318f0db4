package beanstalkd

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/delayq/delayq/internal/beanstalkd/proto"
)

// memBackend is a small in-memory Backend for the server's tests: enough storage (ready and
// reserved jobs, ids from a counter) for put, reserve, delete, peek and release to behave as
// in beanstalkd. Delays, burying and kicking are the delayq Backend's to get right.
type memBackend struct {
	mu      sync.Mutex
	nextID  uint64
	jobs    map[uint64]*memJob
	changed chan struct{} // closed and replaced whenever a job becomes ready
}

type memJob struct {
	id    uint64
	tube  string
	pri   uint32
	ttr   time.Duration
	body  []byte
	owner proto.Session // 0 while ready
}

func newMemBackend() *memBackend {
	return &memBackend{jobs: map[uint64]*memJob{}, changed: make(chan struct{})}
}

func (m *memBackend) notify() {
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *memBackend) Put(_ context.Context, tube string, pri uint32, _, ttr time.Duration, body []byte) (uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	m.jobs[m.nextID] = &memJob{id: m.nextID, tube: tube, pri: pri, ttr: ttr, body: slices.Clone(body)}
	m.notify()
	return m.nextID, false, nil
}

// next returns the most urgent ready job of tubes: lowest priority, then lowest id.
func (m *memBackend) next(tubes []string) *memJob {
	var best *memJob
	for _, j := range m.jobs {
		if j.owner != 0 || !slices.Contains(tubes, j.tube) {
			continue
		}
		if best == nil || cmp.Or(cmp.Compare(j.pri, best.pri), cmp.Compare(j.id, best.id)) < 0 {
			best = j
		}
	}
	return best
}

func (m *memBackend) Reserve(ctx context.Context, s proto.Session, tubes []string, timeout time.Duration) (proto.Job, error) {
	var expired <-chan time.Time
	if timeout >= 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	for {
		m.mu.Lock()
		j, changed := m.next(tubes), m.changed
		if j != nil {
			j.owner = s
		}
		m.mu.Unlock()
		if j != nil {
			return proto.Job{ID: j.id, Body: j.body, TTR: j.ttr}, nil
		}
		if timeout == 0 {
			return proto.Job{}, proto.ErrTimedOut
		}
		select {
		case <-changed:
		case <-expired:
			return proto.Job{}, proto.ErrTimedOut
		case <-ctx.Done():
			return proto.Job{}, ctx.Err()
		}
	}
}

func (m *memBackend) ReserveJob(context.Context, proto.Session, uint64) (proto.Job, error) {
	return proto.Job{}, proto.ErrNotFound
}

// mine returns a job that s may act on: one it reserved, or with anyReady one nobody holds.
func (m *memBackend) mine(s proto.Session, id uint64, anyReady bool) *memJob {
	j := m.jobs[id]
	if j == nil || (j.owner != s && !(anyReady && j.owner == 0)) {
		return nil
	}
	return j
}

func (m *memBackend) Delete(_ context.Context, s proto.Session, id uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mine(s, id, true) == nil {
		return proto.ErrNotFound
	}
	delete(m.jobs, id)
	return nil
}

func (m *memBackend) Release(_ context.Context, s proto.Session, id uint64, pri uint32, _ time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.mine(s, id, false)
	if j == nil {
		return false, proto.ErrNotFound
	}
	j.owner, j.pri = 0, pri
	m.notify()
	return false, nil
}

func (m *memBackend) Bury(context.Context, proto.Session, uint64, uint32) error {
	return proto.ErrNotFound
}

func (m *memBackend) Touch(_ context.Context, s proto.Session, id uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return okIf(m.mine(s, id, false) != nil)
}

func (m *memBackend) Kick(context.Context, string, uint64) (uint64, error) { return 0, nil }

func (m *memBackend) KickJob(context.Context, uint64) error { return proto.ErrNotFound }

func (m *memBackend) Peek(_ context.Context, id uint64) (proto.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[id]
	if j == nil {
		return proto.Job{}, proto.ErrNotFound
	}
	return proto.Job{ID: j.id, Body: j.body, TTR: j.ttr}, nil
}

func (m *memBackend) PeekState(_ context.Context, tube, state string) (proto.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if j := m.next([]string{tube}); j != nil && state == "ready" {
		return proto.Job{ID: j.id, Body: j.body, TTR: j.ttr}, nil
	}
	return proto.Job{}, proto.ErrNotFound
}

func (m *memBackend) StatsJob(context.Context, uint64) (proto.JobStats, error) {
	return proto.JobStats{}, proto.ErrNotFound
}

func (m *memBackend) StatsTube(context.Context, string) (proto.TubeStats, error) {
	return proto.TubeStats{}, proto.ErrNotFound
}

func (m *memBackend) Stats(context.Context) (proto.StoreStats, error) { return proto.StoreStats{}, nil }

func (m *memBackend) ListTubes(context.Context) ([]string, error) { return nil, nil }

func (m *memBackend) PauseTube(context.Context, string, time.Duration) error { return nil }

func (m *memBackend) Disconnect(_ context.Context, s proto.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, j := range m.jobs {
		if j.owner == s {
			j.owner = 0
			m.notify()
		}
	}
	return nil
}

func okIf(ok bool) error {
	if !ok {
		return proto.ErrNotFound
	}
	return nil
}
