package testwait

import (
	"bytes"
	"sync"
)

// Buffer collects what a server, a logger or a child process writes from its own goroutines
// while the test reads it, typically in a condition that waits for a line to appear. The zero
// value is an empty buffer ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
