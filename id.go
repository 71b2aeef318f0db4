package delayq

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"
)

// idAlphabet is base64 with its characters in ASCII order, so that ids sort as their bits do.
const idAlphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// idGen makes 12-character, time-ordered ids: 42 bits of Unix milliseconds, then 30 bits that
// start at a random value each millisecond and count up within it. Twelve characters keep the
// id within Redis's smallest string allocation, which matters at millions of jobs. Two
// processes can still draw the same id in the same millisecond; Enqueue then draws again.
type idGen struct {
	mu   sync.Mutex
	ms   int64
	next uint32
}

var ids idGen

func newID() string { return ids.make(time.Now().UnixMilli()) }

func (g *idGen) make(nowMs int64) string {
	g.mu.Lock()
	if nowMs > g.ms {
		g.ms = nowMs
		var b [4]byte
		_, _ = rand.Read(b[:])
		g.next = binary.BigEndian.Uint32(b[:]) >> 3 // 29 random bits leave room to count up
	}
	if g.next >= 1<<30 { // a million ids in one millisecond: borrow the next one
		g.ms++
		g.next = 0
	}
	v := uint64(g.ms)<<30 | uint64(g.next)
	g.next++
	g.mu.Unlock()

	var out [12]byte
	for i := 11; i >= 0; i-- {
		out[i] = idAlphabet[v&63]
		v >>= 6
	}
	return string(out[:])
}
