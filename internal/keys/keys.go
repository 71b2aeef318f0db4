// Package keys owns delayq's Redis key layout. No other package builds a key string.
//
// Every key of a topic partition shares one hash tag, "{<topic>#<partition>}", so that on a
// Redis Cluster all of a partition's keys live in one slot and every script touches one slot
// only, while the partitions of one topic spread over the shards. Topic names cannot contain
// braces (they match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$), so the tag is always the one we build;
// job ids never appear in key names at all, only as hash fields and set members (a job's Ended
// key carries a digest of its id, after the tag).
package keys

import (
	"crypto/sha256"
	"encoding/base64"
	"hash/fnv"
	"strconv"
)

// Partition names the keys of one partition of one topic.
type Partition struct {
	prefix string // "<namespace>:{<topic>#<n>}:"
}

// For returns the key set of partition n of topic in namespace ns.
func For(ns, topic string, n int) Partition {
	return Partition{prefix: ns + ":{" + topic + "#" + strconv.Itoa(n) + "}:"}
}

// Jobs is a HASH: job id -> the job record (a run of MessagePack values, see the scripts' lib.lua).
// It holds every job of the partition, whatever its state.
func (p Partition) Jobs() string { return p.Key(0) }

// Delayed is a ZSET of job ids scored by due time (Unix ms, server clock). A member whose score
// has passed is due; the reserve script moves due members to a ready set.
func (p Partition) Delayed() string { return p.Key(1) }

// Ready is a ZSET of due job ids for pull consumers, scored by ReadyScore(priority, due time), so
// that the lowest score is the highest priority and, within a priority, the earliest due time.
func (p Partition) Ready() string { return p.Key(2) }

// ReadyPush is the Ready set of jobs that carry a callback URL; only the webhook dispatcher
// reserves from it.
func (p Partition) ReadyPush() string { return p.Key(3) }

// Reserved is a ZSET of leased job ids scored by lease deadline (Unix ms, server clock).
func (p Partition) Reserved() string { return p.Key(4) }

// Dead is a ZSET of dead-lettered job ids, all with score 0 so that it is paged in id order
// (ZRANGE BYLEX); the time of death is in the job record.
func (p Partition) Dead() string { return p.Key(5) }

// Notify is a shard pub/sub channel (SPUBLISH) in the partition's slot. A script publishes the new
// earliest due time (Unix ms) there when a job becomes due sooner than any the partition had,
// and "controls" when the topic's controls change (a resume, new limits, a delete), which
// makes every consumer waiting on the partition look at it again.
func (p Partition) Notify() string { return p.Key(6) }

// Leases is a HASH from each leased job id to its lease token; the deadline is the job's score
// in Reserved.
func (p Partition) Leases() string { return p.Key(7) }

// Settings is a HASH of the topic's controls as they apply to this partition: "paused" ("1"
// while the topic is paused), "rate" and "period_ms" (the topic's rate limit), "rate_share"
// (the deliveries this partition may start per period), "concurrency" (the topic's limit) and
// "concurrency_share" (the jobs this partition may have reserved at once). A missing field is
// no limit; a topic without controls has no such key.
func (p Partition) Settings() string { return p.Key(8) }

// Starts is a ZSET of the deliveries started within the rate limit's last period: each
// delivery's lease token, scored by when it started (Unix ms, server clock). A reserve trims it
// to the period and counts it against the partition's rate share. It exists only while the
// topic has a rate limit.
func (p Partition) Starts() string { return p.Key(9) }

// History is a STREAM of the outcomes of the partition's jobs (acked, dead, cancelled, …) waiting
// to be archived, appended by the script that makes each outcome while archiving is on, read and
// emptied by the archiver (internal/archive). Each entry's fields are "o" (the outcome), "i" (the
// job id), "r" (the job's record as it was then) and "t" (when, Unix ms, server clock).
func (p Partition) History() string { return p.Key(10) }

// Call is a STRING that records the outcome of one script call (named by a call id the caller
// makes) for a short replay window, so that the same call sent again answers as the first did.
// It expires by itself (PX).
func (p Partition) Call(id string) string { return p.prefix + "call:" + id }

// Ended is a STRING that says what became of job id once it ended (acked, dead and deleted,
// cancelled) within the replay window of its creation: the outcome, when, the job's creation
// time and the fingerprint of what its enqueue asked (lib.lua's mark_ended). It expires by
// itself (PX) when that window closes. An identical enqueue retried until then answers the
// first one's job instead of adding it again, and a retried cancel learns what became of it.
// The name carries a digest of the id (16 characters), not the id: user text stays out of key
// names, and a long id makes no longer key.
func (p Partition) Ended(id string) string {
	sum := sha256.Sum256([]byte(id))
	return p.prefix + "ended:" + base64.RawURLEncoding.EncodeToString(sum[:12])
}

// Ticks is a HASH: schedule name -> the latest tick (Unix ms) of that schedule whose job was
// enqueued in this partition. A tick's job is enqueued only while the partition has had no tick
// of the schedule as late as it, so a tick is never enqueued twice, even once its job is gone.
func (p Partition) Ticks() string { return p.prefix + "ticks" }

// All returns the partition's keys in the order the scripts name them (see Key).
func (p Partition) All() []string {
	all := make([]string, Count)
	for i := range all {
		all[i] = p.Key(i)
	}
	return all
}

// Count is how many keys a partition has (see Key).
const Count = 11

// suffixes are the names of a partition's keys after its prefix, in the order of Key.
var suffixes = [Count]string{"jobs", "delayed", "ready", "ready:push", "reserved", "dead", "notify", "leases",
	"settings", "starts", "history"}

// Key returns the partition's key i, from 0 to Count-1, in the order the scripts' lib.lua
// names them: Jobs, Delayed, Ready, ReadyPush, Reserved, Dead, Notify, Leases, Settings, Starts
// and History.
func (p Partition) Key(i int) string { return p.prefix + suffixes[i] }

// Topics is a HASH: topic name -> its partition count. It is the registry behind topic listing,
// written once per topic and process, and it pins a topic's partition count: a job's partition is
// derived from its id, so the count must never change while the topic holds jobs.
func Topics(ns string) string { return ns + ":topics" }

// NewTopics is a shard pub/sub channel on which the name of each new topic is published when it
// is registered, so that consumers waiting for a topic that did not exist yet hear of it.
func NewTopics(ns string) string { return ns + ":topics:new" }

// Archive is a HASH of the namespace's archive setting: "keep" (the most job outcomes each
// partition's History stream keeps waiting for the archiver) and "failed" ("1" to archive failed
// attempts too). Every Client reads it now and then and passes it to its scripts; no key means
// archiving is off.
func Archive(ns string) string { return ns + ":archive" }

// DashboardKey is a STRING: the random key that signs the web dashboard's session cookies and
// CSRF tokens. The first server that needs it makes it (SET NX), so that every server of a
// deployment accepts the same sessions; deleting it ends them all.
func DashboardKey(ns string) string { return ns + ":dashboard:key" }

// RevokedSession is a STRING, "1", set when dashboard session id logs out, and expiring when
// the session would have ended: every server refuses a session named here.
func RevokedSession(ns, id string) string { return ns + ":dashboard:revoked:" + id }

// HistoryTopics is a HASH: topic name -> partition count, of the topics deleted while their
// partitions' History streams still held outcomes for the archiver, which reads these besides
// the registered topics' and forgets a topic once its streams are empty.
func HistoryTopics(ns string) string { return ns + ":history:topics" }

// PartitionOf returns the partition (0..n-1) that job id belongs to.
func PartitionOf(id string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// Schedule names the keys of one schedule. They share the hash tag "{schedule:<name>}": a
// schedule's scripts touch its own slot only. Schedule names follow the rules of topic names,
// which have no braces or colons, so the tag is always the one we build and never a topic's.
type Schedule struct {
	prefix string // "<namespace>:{schedule:<name>}:"
}

// ScheduleFor returns the keys of schedule name in namespace ns.
func ScheduleFor(ns, name string) Schedule {
	return Schedule{prefix: ns + ":{schedule:" + name + "}:"}
}

// State is a HASH: the schedule's definition and where its ticks are (the fields are listed in
// the scripts' schedule_lib.lua).
func (s Schedule) State() string { return s.prefix + "state" }

// Call is a STRING that records the outcome of one script call on the schedule for the replay
// window, like Partition.Call.
func (s Schedule) Call(id string) string { return s.prefix + "call:" + id }

// Schedules is a SET of the name of every schedule, for listing them. A schedule is added after
// its state is written and removed before its state is deleted, so that a schedule that exists
// is always listed; a name whose state is gone is passed over.
func Schedules(ns string) string { return ns + ":schedules" }

// Beanstalkd names the keys of the beanstalkd front end (cmd/delayq/internal/beanstalkd), all under one
// hash tag so that a script can issue an id and index it at once.
type Beanstalkd struct {
	prefix string // "<namespace>:{beanstalkd}:"
}

// BeanstalkdFor returns the beanstalkd front end's keys in namespace ns.
func BeanstalkdFor(ns string) Beanstalkd { return Beanstalkd{prefix: ns + ":{beanstalkd}:"} }

// IDs is a STRING counter: the last job id issued to a beanstalkd client. beanstalkd's ids are
// integers unique across tubes.
func (b Beanstalkd) IDs() string { return b.prefix + "ids" }

// Jobs is a HASH: beanstalkd job id -> the job it names, for the commands that give only an id.
// The value is the job's topic when the job's delayq id is the beanstalkd id in fixed width (a
// job put through the front end), else "<topic>\x00<delayq id>" (an alias).
func (b Beanstalkd) Jobs() string { return b.prefix + "jobs" }

// Aliases is a HASH: "<topic>\x00<delayq id>" -> the beanstalkd id issued for a job enqueued
// elsewhere (over HTTP, say) when a beanstalkd client first met it.
func (b Beanstalkd) Aliases() string { return b.prefix + "aliases" }

// Tubes is a HASH: topic -> tube name, for the tubes whose names are not valid topic names and
// are stored under a topic named from their hash.
func (b Beanstalkd) Tubes() string { return b.prefix + "tubes" }

// Counts is a HASH of the counters beanstalkd reports that delayq's records do not keep:
// "j:<id>:<name>" for a job (releases, buries, kicks, reserves ended by a disconnect, the delay
// it was last put or released with, its failed attempts before kicks, its burial order), "t:<topic>:<name>" for a tube (put,
// delete, pause), and "put" for all. Topic names hold no ":".
func (b Beanstalkd) Counts() string { return b.prefix + "counts" }

// Pauses is a HASH: topic -> "<until, Unix ms> <length, s>" of each pause-tube in force, so
// that every server reports it and resumes the tube when it ends, after a restart too.
func (b Beanstalkd) Pauses() string { return b.prefix + "pauses" }

// Call is a STRING that records the outcome of one call of the front end's id script for the
// replay window, as Partition.Call does.
func (b Beanstalkd) Call(id string) string { return b.prefix + "call:" + id }
