package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
)

// HistoryGroup is the consumer group of the archivers on every partition's history stream
// (lib.lua's archive() makes it with the stream, by this name).
const HistoryGroup = "archivers"

// ArchiveSetting is what every script is told about archiving (ARGV[3]).
type ArchiveSetting struct {
	Keep   int64 // outcomes a partition's history stream keeps waiting; 0: archiving is off
	Failed bool  // failed attempts too
}

// ReadArchiveSetting reads the namespace's archive setting (zero when there is none).
func (s *Store) ReadArchiveSetting(ctx context.Context) (ArchiveSetting, error) {
	v, err := s.rdb.HMGet(ctx, keys.Archive(s.ns), "keep", "failed").Result()
	if err != nil {
		return ArchiveSetting{}, fmt.Errorf("delayq: reading the archive setting: %w", err)
	}
	var a ArchiveSetting
	if k, ok := v[0].(string); ok {
		a.Keep, _ = strconv.ParseInt(k, 10, 64)
	}
	a.Failed = v[1] == "1"
	return a, nil
}

// WriteArchiveSetting stores the namespace's archive setting, for hold (0: until changed);
// Keep 0 deletes it.
func (s *Store) WriteArchiveSetting(ctx context.Context, a ArchiveSetting, hold time.Duration) error {
	key := keys.Archive(s.ns)
	_, err := s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		if a.Keep <= 0 {
			pipe.Del(ctx, key)
			return nil
		}
		failed := "0"
		if a.Failed {
			failed = "1"
		}
		pipe.HSet(ctx, key, "keep", a.Keep, "failed", failed)
		if hold > 0 {
			pipe.PExpire(ctx, key, hold)
		} else {
			pipe.Persist(ctx, key)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delayq: writing the archive setting: %w", err)
	}
	return nil
}

// ApplyArchiveSetting makes this Store's scripts archive as a says.
func (s *Store) ApplyArchiveSetting(a ArchiveSetting) { s.SetArchive(a.Keep, a.Failed) }

// HistoryEntry is one job outcome read from a history stream.
type HistoryEntry struct {
	StreamID string // the entry's id in the stream, to ack it with
	Outcome  string // acked, dead, cancelled, dead_deleted or failed
	Attempts int    // the deliveries the job had had
	AtMs     int64  // when, Unix ms (Redis server clock)
	Record   Record // the job as it was then; Record.ID is its id
	// Err is why the entry could not be read (trimmed away while pending, or malformed);
	// such an entry is acked without being archived.
	Err error
}

// ReadHistory returns up to count outcomes of partition p for consumer: first those it was
// given before and has not acked, then those other consumers were given and left unacked for
// idle or longer, then new ones. It creates the stream's group when it has none.
func (s *Store) ReadHistory(ctx context.Context, p keys.Partition, consumer string, count int, idle time.Duration) ([]HistoryEntry, error) {
	key := p.History()
	var out []HistoryEntry
	none := false // the partition has no stream
	for _, read := range []func(n int64) ([]redis.XMessage, error){
		func(n int64) ([]redis.XMessage, error) {
			msgs, err := s.readGroup(ctx, key, consumer, "0", n)
			if err == nil || !strings.HasPrefix(err.Error(), "NOGROUP") {
				return msgs, err
			}
			// The group is made only when missing: over maxmemory Redis refuses XGROUP
			// CREATE, even of a group that exists, and the archiver must drain then. The
			// scripts make it with the stream; a partition with no stream has nothing to read.
			if n, err := s.rdb.Exists(ctx, key).Result(); err != nil || n == 0 {
				none = err == nil
				return nil, err
			}
			if err := s.rdb.XGroupCreate(ctx, key, HistoryGroup, "0").Err(); err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
				return nil, fmt.Errorf("history group: %w", err)
			}
			return s.readGroup(ctx, key, consumer, "0", n)
		},
		func(n int64) ([]redis.XMessage, error) {
			msgs, _, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: key, Group: HistoryGroup,
				Consumer: consumer, MinIdle: idle, Start: "0-0", Count: n}).Result()
			return msgs, err
		},
		func(n int64) ([]redis.XMessage, error) { return s.readGroup(ctx, key, consumer, ">", n) },
	} {
		msgs, err := read(int64(count - len(out)))
		if err != nil {
			return out, fmt.Errorf("delayq: reading history: %w", err)
		}
		for _, m := range msgs {
			out = append(out, parseHistory(m))
		}
		if none || len(out) >= count {
			break
		}
	}
	return out, nil
}

func (s *Store) readGroup(ctx context.Context, key, consumer, from string, n int64) ([]redis.XMessage, error) {
	res, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: HistoryGroup, Consumer: consumer,
		Streams: []string{key, from}, Count: n, Block: -1}).Result()
	if errors.Is(err, redis.Nil) || (err == nil && len(res) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return res[0].Messages, nil
}

// parseHistory reads one stream entry (fields o, i, r, a, t: see keys.Partition.History).
func parseHistory(m redis.XMessage) HistoryEntry {
	e := HistoryEntry{StreamID: m.ID}
	str := func(f string) string { v, _ := m.Values[f].(string); return v }
	if len(m.Values) == 0 {
		e.Err = errors.New("the entry was trimmed away before it was archived")
		return e
	}
	e.Outcome = str("o")
	e.Attempts, _ = strconv.Atoi(str("a"))
	at, err := strconv.ParseInt(str("t"), 10, 64)
	if err == nil {
		e.AtMs = at
		e.Record, err = DecodeRecord([]byte(str("r")))
	}
	e.Record.ID = str("i")
	if err != nil || e.Outcome == "" || e.Record.ID == "" {
		e.Err = fmt.Errorf("a malformed history entry %s: %v", m.ID, err)
	}
	return e
}

// ackHistory removes outcomes from a history stream (KEYS[1]): ARGV[1] of them, ARGV[2..], were
// archived, the rest could not be. An archived outcome that was no longer in the stream was
// trimmed away, and counted as dropped (history_dropped, in the settings KEYS[2]), while its
// archiver held it: it was archived all the same, so it no longer counts.
var ackHistory = redis.NewScript(`
local n = tonumber(ARGV[1])
local function each(from, to, cmd)
  local total = 0
  for i = from, to, 1000 do
    local last = math.min(i + 999, to)
    if cmd == 'XACK' then
      total = total + redis.call('XACK', KEYS[1], '` + HistoryGroup + `', unpack(ARGV, i, last))
    else
      total = total + redis.call('XDEL', KEYS[1], unpack(ARGV, i, last))
    end
  end
  return total
end
local acked = each(2, n + 1, 'XACK')
local deleted = each(2, n + 1, 'XDEL')
each(n + 2, #ARGV, 'XACK')
each(n + 2, #ARGV, 'XDEL')
if acked > deleted and redis.call('HEXISTS', KEYS[2], 'history_dropped') == 1 then
  redis.call('HINCRBY', KEYS[2], 'history_dropped', deleted - acked)
end
return acked - deleted
`)

// AckHistory removes outcomes of partition p that were archived, and those that could not be
// (skipped).
func (s *Store) AckHistory(ctx context.Context, p keys.Partition, archived, skipped []string) error {
	if len(archived)+len(skipped) == 0 {
		return nil
	}
	args := make([]any, 0, 1+len(archived)+len(skipped))
	args = append(args, len(archived))
	for _, id := range archived {
		args = append(args, id)
	}
	for _, id := range skipped {
		args = append(args, id)
	}
	if err := ackHistory.Run(ctx, s.rdb, []string{p.History(), p.Settings()}, args...).Err(); err != nil {
		return fmt.Errorf("delayq: acking history: %w", err)
	}
	return nil
}

// HistoryBacklog returns how many outcomes of partition p wait to be archived, and how many
// were dropped in all because the stream was full.
func (s *Store) HistoryBacklog(ctx context.Context, p keys.Partition) (waiting, dropped int64, err error) {
	var xlen *redis.IntCmd
	var drop *redis.StringCmd
	_, err = s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		xlen = pipe.XLen(ctx, p.History())
		drop = pipe.HGet(ctx, p.Settings(), "history_dropped")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, fmt.Errorf("delayq: history backlog: %w", err)
	}
	dropped, _ = drop.Int64()
	return xlen.Val(), dropped, nil
}

// KeepHistory records topic, about to be unregistered, among the topics whose outcomes the
// archiver reads when any of its partitions parts still holds outcomes waiting for it.
func (s *Store) KeepHistory(ctx context.Context, topic string, parts []keys.Partition) error {
	lens := make([]*redis.IntCmd, len(parts))
	_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, p := range parts {
			lens[i] = pipe.XLen(ctx, p.History())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delayq: history of a deleted topic: %w", err)
	}
	for _, l := range lens {
		if l.Val() > 0 {
			if err := s.rdb.HSet(ctx, keys.HistoryTopics(s.ns), topic, len(parts)).Err(); err != nil {
				return fmt.Errorf("delayq: history of a deleted topic: %w", err)
			}
			break
		}
	}
	return nil
}

// HistoryTopics returns the topics whose outcomes the archiver reads, each with its partition
// count: the registered ones and those deleted while outcomes waited (KeepHistory), the larger
// count when a topic is both.
func (s *Store) HistoryTopics(ctx context.Context) (all map[string]int, deleted map[string]bool, err error) {
	all, err = s.Topics(ctx)
	if err != nil {
		return nil, nil, err
	}
	m, err := s.rdb.HGetAll(ctx, keys.HistoryTopics(s.ns)).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("delayq: history topics: %w", err)
	}
	deleted = map[string]bool{}
	for topic, v := range m {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			continue
		}
		if _, registered := all[topic]; !registered {
			deleted[topic] = true
		}
		all[topic] = max(all[topic], n)
	}
	return all, deleted, nil
}

// ForgetHistory drops a deleted topic from the topics the archiver reads once its n partitions'
// History streams are empty; it reports whether it did.
func (s *Store) ForgetHistory(ctx context.Context, topic string, n int) (bool, error) {
	for i := range n {
		l, err := s.rdb.XLen(ctx, s.Partition(topic, i).History()).Result()
		if err != nil {
			return false, fmt.Errorf("delayq: history of a deleted topic: %w", err)
		}
		if l > 0 {
			return false, nil
		}
	}
	if err := s.rdb.HDel(ctx, keys.HistoryTopics(s.ns), topic).Err(); err != nil {
		return false, fmt.Errorf("delayq: history of a deleted topic: %w", err)
	}
	return true, nil
}
