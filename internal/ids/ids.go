// Package ids makes the ids of jobs enqueued without one.
package ids

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Generator makes the ids of jobs enqueued without one: ULIDs (github.com/ulid/spec), 26
// characters of Crockford base32 — 48 bits of Unix milliseconds, then 80 random bits that count
// up within a millisecond — so that ids sort as they were made, for ten thousand years, and
// never start with '-'. Two processes drawing the same id is left to chance (2^-80 per pair in
// one millisecond); Enqueue then draws again.
type Generator struct {
	mu      sync.Mutex
	lastMs  uint64
	entropy *ulid.MonotonicEntropy
}

// NewGenerator returns a Generator drawing from crypto/rand.
func NewGenerator() *Generator { return &Generator{entropy: ulid.Monotonic(rand.Reader, 0)} }

var process = NewGenerator()

// New returns the process's next id.
func New() string { return process.Make(time.Now()) }

// Make returns the next id for the time now; a clock that steps back keeps the last time, so
// that ids never go back either.
func (g *Generator) Make(now time.Time) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms := max(ulid.Timestamp(now), g.lastMs)
	id, err := ulid.New(ms, g.entropy)
	if err != nil { // the 80 bits overflowed within one millisecond: take the next one
		ms++
		id, err = ulid.New(ms, g.entropy)
		if err != nil {
			panic("ids: making a job id: " + err.Error())
		}
	}
	g.lastMs = ms
	return id.String()
}
