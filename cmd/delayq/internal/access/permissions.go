package access

import (
	"fmt"
	"slices"
)

// Op is the kind of thing a request does, which decides the roles that may do it.
type Op int

// The kinds of request. Every route of the API and the dashboard names one (see their tables).
const (
	// Public needs no token: the root page, health checks.
	Public Op = iota
	// AnyToken needs a token of any role: the API's own document.
	AnyToken
	// Read reads what is not one topic's jobs: topics and their counts, /metrics, schedules,
	// the job history. Readers and admins.
	Read
	// GetJob reads one job: readers, producers, consumers and admins.
	GetJob
	// ReadDead lists dead letters: readers, consumers and admins.
	ReadDead
	// Produce enqueues, cancels and reschedules jobs: producers and admins.
	Produce
	// Consume reserves jobs, settles their leases and requeues or deletes dead letters:
	// consumers and admins.
	Consume
	// Operate changes topics and schedules themselves (pause, limits, delete): admins.
	Operate
)

// roles is the one table of who may do what.
var roles = map[Op][]Role{
	Read:     {Admin, Reader},
	GetJob:   {Admin, Reader, Producer, Consumer},
	ReadDead: {Admin, Reader, Consumer},
	Produce:  {Admin, Producer},
	Consume:  {Admin, Consumer},
	Operate:  {Admin},
}

// words say what each Op does, for refusals.
var words = map[Op]string{
	Read: "read this", GetJob: "read jobs", ReadDead: "read dead letters", Produce: "enqueue, cancel or reschedule jobs",
	Consume: "consume jobs or handle dead letters", Operate: "change topics or schedules",
}

// Allowed returns nil when p may do op on topic ("" when the request names none), or an error
// that says who p is and what it may not do, never its token. A nil p is an open server's
// request, which may do everything.
func (p *Principal) Allowed(op Op, topic string) error {
	if p == nil || op == Public || op == AnyToken {
		return nil
	}
	ok := false
	for _, r := range roles[op] {
		ok = ok || r == p.Role
	}
	if !ok {
		return fmt.Errorf("token %q (role %s) may not %s", p.Name, p.Role, words[op])
	}
	if topic != "" && !p.Covers(topic) {
		return fmt.Errorf("token %q (role %s) may not %s on topic %q: its topics are %q", p.Name, p.Role, words[op], topic, p.Topics)
	}
	return nil
}

// AllowedFilter is Allowed for the routes whose topic is a filter of a search that reads every
// topic without one (the history search, the dashboard's search): a token bound to some topics
// must name one of them there, or its search would read the jobs of topics it does not cover.
func (p *Principal) AllowedFilter(op Op, topic string) error {
	if err := p.Allowed(op, topic); err != nil || topic != "" || p.coversAll() {
		return err
	}
	return fmt.Errorf("token %q (role %s) may %s only on its topics %q: name one of them", p.Name, p.Role, words[op], p.Topics)
}

// coversAll reports whether p covers every topic; a nil p (an open server's request) does.
func (p *Principal) coversAll() bool {
	return p == nil || len(p.Topics) == 0 || slices.Contains(p.Topics, "*")
}
