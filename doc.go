// Package delayq is a distributed delay queue on Redis: a job is enqueued now and handed to a
// consumer at a chosen later moment, by the Redis server's clock.
//
// A Client produces (Enqueue, EnqueueBatch, Get, Cancel, Reschedule), consumes (Reserve, Ack,
// Nack, Touch, Release) and administers (Stats, Topics, dead letters) jobs. A Worker runs
// handlers on top of a Client with a concurrency limit, lease renewal, retries and graceful
// shutdown. Both take the caller's redis.UniversalClient: standalone, Sentinel or Cluster.
//
// Schedules are recurring jobs: PutSchedule stores a cron expression (or an @every interval), a
// time zone and a job template, and a Scheduler enqueues one job per tick, ahead of its time, as
// an ordinary delayed job with the id TickID(name, tick). Any number of Schedulers may run on
// one Redis with no leader among them: each tick still gives exactly one job.
//
// Guarantees:
//   - Durable enqueue: once Enqueue returns nil the job is delivered at least once unless
//     cancelled, as long as Redis keeps its data (appendonly yes; appendfsync always to survive
//     a crash of Redis itself without loss).
//   - Never early: a job is handed out only when the Redis server's TIME has reached its due time
//     (due times are whole milliseconds; one asked for between two is the later one).
//   - On time: waiting consumers sleep until the earliest due time they know of and are woken by
//     a shard pub/sub notice when an earlier job arrives; no polling interval sets the precision.
//   - One state at a time: every transition is one Lua script on one partition.
//   - Leases: a job not acked within its TTR is redelivered; a stale lease is refused with
//     ErrLeaseLost.
//   - Cancel is final; nothing leaves the system but by ack, cancel or deleting a dead letter.
//   - Scale-out: each topic is split over partitions, each with its own hash tag, so a Cluster
//     spreads a topic over its shards.
//
// See docs/ for the key layout and the state machine.
package delayq
