package beanstalkd

import (
	"slices"
	"sync"
)

// tubeRefs counts, per tube, the connections that use it, watch it, and wait on it in
// reserve: beanstalkd lists a tube used or watched by a connection (and answers stats-tube for
// it) even while it holds no job, and reports the three counts in stats-tube. "default" always
// exists. The order is beanstalkd's: creation order, a removed tube's place taken by the last.
type tubeRefs struct {
	mu     sync.Mutex
	order  []string
	counts map[string]*tubeCount
}

// tubeCount is one tube's connection counts.
type tubeCount struct {
	using, watching, waiting int
}

func newTubeRefs() *tubeRefs {
	return &tubeRefs{order: []string{"default"}, counts: map[string]*tubeCount{"default": {}}}
}

// add changes a tube's counts by the given amounts, creating or removing it.
func (t *tubeRefs) add(name string, using, watching, waiting int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.counts[name]
	if c == nil {
		c = &tubeCount{}
		t.counts[name] = c
		t.order = append(t.order, name)
	}
	c.using += using
	c.watching += watching
	c.waiting += waiting
	if c.using > 0 || c.watching > 0 || name == "default" {
		return
	}
	delete(t.counts, name)
	if i := slices.Index(t.order, name); i >= 0 {
		last := len(t.order) - 1
		t.order[i] = t.order[last]
		t.order = t.order[:last]
	}
}

func (t *tubeRefs) use(name string, n int)   { t.add(name, n, 0, 0) }
func (t *tubeRefs) watch(name string, n int) { t.add(name, 0, n, 0) }

// wait counts a connection in (n = 1) or out of (n = -1) reserve on the tubes it watches.
func (t *tubeRefs) wait(names []string, n int) {
	for _, name := range names {
		t.add(name, 0, 0, n)
	}
}

// count returns a tube's counts, and false if no connection references it.
func (t *tubeRefs) count(name string) (tubeCount, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.counts[name]
	if !ok {
		return tubeCount{}, false
	}
	return *c, true
}

func (t *tubeRefs) list() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.order)
}
