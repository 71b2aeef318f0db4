package store

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"math/rand/v2"
)

// Every script call that changes state carries a call id. The script records its outcome under
// that id for the replay window, and a second run of the same call — go-redis re-sending a
// command whose reply a broken connection lost, or the caller trying again — answers that
// outcome instead of acting twice. Most calls get a fresh random id; a call about one lease
// gets an id derived from the lease, so that any repeat of it answers the same.

// NewCallID returns a fresh call id. Call ids need only be unique, not secret: a record holds
// nothing its caller did not get.
func NewCallID() string {
	var b [12]byte
	for i := 0; i < len(b); i += 8 {
		v := rand.Uint64()
		for k := 0; k < 8 && i+k < len(b); k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// leaseCallID returns the call id of operation op on a lease.
func leaseCallID(op, id, token string) string {
	h := sha256.New()
	h.Write([]byte(op))
	h.Write([]byte{0})
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write([]byte(token))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

// OutcomeUnknown tells whether err leaves open whether the script ran. Only the outcomes the
// scripts answer are certain: any other error may follow an attempt that ran and lost its reply,
// since go-redis retries after a broken connection and reports the last attempt's error (a
// LOADING or READONLY reply from a restarting server, say), not the first's.
func OutcomeUnknown(err error) bool {
	return err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrExists) &&
		!errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrWrongState) && !errors.Is(err, ErrDone)
}
