package delayq

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"

	"github.com/delayq/delayq/internal/keys"
)

// DeadJobs returns up to limit dead jobs of topic, in partition and id order, starting after
// cursor ("" for the first page). The returned cursor is "" on the last page.
func (c *Client) DeadJobs(ctx context.Context, topic string, limit int, cursor string) ([]*Job, string, error) {
	if limit < 1 || limit > c.cfg.Limits.MaxReserve {
		return nil, "", invalid("limit", "%d is outside 1 to %d", limit, c.cfg.Limits.MaxReserve)
	}
	n, err := c.partitions(ctx, topic, false)
	if errors.Is(err, ErrNotFound) {
		return nil, "", nil // a topic nobody produced to has no dead jobs
	}
	if err != nil {
		return nil, "", err
	}
	part, after, err := parseCursor(cursor, n)
	if err != nil {
		return nil, "", err
	}
	var jobs []*Job
	for ; part < n; part, after = part+1, "" {
		recs, err := c.store.DeadList(ctx, c.store.Partition(topic, part), after, limit-len(jobs))
		if err != nil {
			return nil, "", err
		}
		for _, r := range recs {
			jobs = append(jobs, jobFromRecord(topic, r))
		}
		if len(jobs) == limit {
			return jobs, makeCursor(part, jobs[len(jobs)-1].ID), nil
		}
	}
	return jobs, "", nil
}

// A cursor is base64url("<partition>:<last id>"): opaque to callers, and safe in a URL.
func makeCursor(part int, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(part) + ":" + id))
}

func parseCursor(cursor string, n int) (int, string, error) {
	if cursor == "" {
		return 0, "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, "", invalid("cursor", "not a cursor this server made")
	}
	p, id, ok := strings.Cut(string(raw), ":")
	part, err := strconv.Atoi(p)
	if !ok || err != nil || part < 0 || part >= n || ValidateID(id) != nil {
		return 0, "", invalid("cursor", "not a cursor this server made")
	}
	return part, id, nil
}

// RequeueDead puts the given dead jobs back, due at once with their attempts reset, and returns
// how many it requeued; ids that are not dead jobs are passed over.
func (c *Client) RequeueDead(ctx context.Context, topic string, ids []string) (int, error) {
	return c.eachDead(ctx, topic, ids, c.store.DeadRequeue)
}

// RequeueAllDead puts every dead job of topic back, a bounded batch per script call.
func (c *Client) RequeueAllDead(ctx context.Context, topic string) (int, error) {
	return c.eachDead(ctx, topic, nil, c.store.DeadRequeue)
}

// DeleteDead deletes the given dead jobs for good and returns how many it deleted; ids that are
// not dead jobs are passed over.
func (c *Client) DeleteDead(ctx context.Context, topic string, ids []string) (int, error) {
	return c.eachDead(ctx, topic, ids, c.store.DeadDelete)
}

// DeleteAllDead deletes every dead job of topic, a bounded batch per script call.
func (c *Client) DeleteAllDead(ctx context.Context, topic string) (int, error) {
	return c.eachDead(ctx, topic, nil, c.store.DeadDelete)
}

type deadOp = func(ctx context.Context, p keys.Partition, ids []string, limit int) (int, error)

// eachDead applies op to ids grouped by partition, or, when ids is nil, to every dead job of
// every partition in batches of BulkLimit.
func (c *Client) eachDead(ctx context.Context, topic string, ids []string, op deadOp) (int, error) {
	if ids != nil && len(ids) > c.cfg.Limits.MaxBatch {
		return 0, invalid("ids", "at most %d, got %d", c.cfg.Limits.MaxBatch, len(ids))
	}
	n, err := c.partitions(ctx, topic, false)
	if errors.Is(err, ErrNotFound) {
		return 0, nil // a topic nobody produced to has no dead jobs
	}
	if err != nil {
		return 0, err
	}
	total := 0
	if ids == nil {
		for p := range n {
			for {
				k, err := op(ctx, c.store.Partition(topic, p), nil, c.cfg.BulkLimit)
				total += k
				if err != nil {
					return total, err
				}
				if k < c.cfg.BulkLimit {
					break
				}
			}
		}
		return total, nil
	}
	byPart := map[int][]string{}
	for _, id := range ids {
		if err := ValidateID(id); err != nil {
			return 0, err
		}
		p := keys.PartitionOf(id, n)
		byPart[p] = append(byPart[p], id)
	}
	for p, group := range byPart {
		k, err := op(ctx, c.store.Partition(topic, p), group, 0)
		total += k
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
