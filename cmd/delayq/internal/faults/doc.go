// Package faults is delayq's fault-injection suite: it proves delayq's guarantees (docs/reliability.md) while
// processes and Redis itself are killed, paused, failed over and starved.
//
// Every scenario runs real processes on loopback: redis-server (through internal/redistest)
// and agent processes built from ./agent, which produce, consume and cancel jobs through the
// delayq library and write each event to an append-only JSONL log (one write(2) per event, so a
// kill -9 loses nothing that was written). After a drain phase, Check reads the logs together
// with what Redis still holds and counts lost, early, stuck, duplicated and corrupt jobs, stale
// acks that were accepted and deliveries after a cancel.
//
// The scenarios are behind the build tag faults, so that plain `go test ./...` does not run
// them:
//
//	make test-faults        # DELAYQ_FAULTS=short, what CI runs
//	make test-faults-full   # DELAYQ_FAULTS=full: more jobs, longer runs
//
// This file, the event log and the checker build without the tag, and the checker has its own
// unit tests that run with every `go test ./...`.
package faults
