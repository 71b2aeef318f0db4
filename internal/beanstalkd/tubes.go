package beanstalkd

import (
	"slices"
	"sync"
)

// tubeRefs counts the connections that use or watch each tube: beanstalkd lists such a tube
// (and answers stats-tube for it) even while it holds no job. "default" always exists. The
// order is beanstalkd's: creation order, a removed tube's place taken by the last one.
type tubeRefs struct {
	mu    sync.Mutex
	order []string
	refs  map[string]int
}

func newTubeRefs() *tubeRefs {
	return &tubeRefs{order: []string{"default"}, refs: map[string]int{"default": 1}}
}

func (t *tubeRefs) ref(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refs[name] == 0 {
		t.order = append(t.order, name)
	}
	t.refs[name]++
}

func (t *tubeRefs) unref(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refs[name]--
	if t.refs[name] > 0 {
		return
	}
	delete(t.refs, name)
	if i := slices.Index(t.order, name); i >= 0 {
		last := len(t.order) - 1
		t.order[i] = t.order[last]
		t.order = t.order[:last]
	}
}

func (t *tubeRefs) has(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refs[name] > 0
}

func (t *tubeRefs) list() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.order)
}
