package delayq

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
)

// Jobs returns up to limit jobs of topic in state, starting after cursor ("" for the first
// page); the returned cursor is "" on the last page. Delayed jobs come by due time, reserved
// ones by lease deadline, ready ones in delivery order (jobs due but not yet moved to the ready
// set first, by due time; then by priority, highest first, and due time); dead ones as DeadJobs
// returns them. Each page reads at most limit jobs of each partition: no state is scanned whole.
func (c *Client) Jobs(ctx context.Context, topic string, state State, limit int, cursor string) ([]*Job, string, error) {
	if state == StateDead {
		return c.DeadJobs(ctx, topic, limit, cursor)
	}
	if state != StateDelayed && state != StateReady && state != StateReserved {
		return nil, "", invalid("state", "%q is not one of delayed, ready, reserved, dead", state)
	}
	if limit < 1 || limit > c.cfg.Limits.MaxReserve {
		return nil, "", invalid("limit", "%d is outside 1 to %d", limit, c.cfg.Limits.MaxReserve)
	}
	after, err := parsePosition(cursor)
	if err != nil {
		return nil, "", err
	}
	n, err := c.partitions(ctx, topic, false)
	if errors.Is(err, ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	parts := make([]keys.Partition, n)
	for p := range parts {
		parts[p] = c.store.Partition(topic, p)
	}
	// One more than a page: a page is not the last while a partition holds a job beyond it.
	found, err := c.store.List(ctx, parts, string(state), after, limit+1)
	if err != nil {
		return nil, "", err
	}
	slices.SortFunc(found, func(a, b store.Listed) int {
		if a.Position.Less(b.Position) {
			return -1
		}
		return 1
	})
	next := ""
	if len(found) > limit {
		found = found[:limit]
		next = positionCursor(found[limit-1].Position)
	}
	jobs, err := c.readListed(ctx, topic, parts, found)
	if err != nil {
		return nil, "", err
	}
	return jobs, next, nil
}

// readListed reads the jobs of a page, in its order, in one round trip; a job that ended since
// it was listed is left out.
func (c *Client) readListed(ctx context.Context, topic string, parts []keys.Partition, page []store.Listed) ([]*Job, error) {
	ps := make([]keys.Partition, len(page))
	ids := make([]string, len(page))
	for i, l := range page {
		ps[i], ids[i] = parts[l.Part], l.ID
	}
	recs, errs := c.store.GetMany(ctx, ps, ids)
	jobs := make([]*Job, 0, len(page))
	for i, r := range recs {
		switch {
		case errors.Is(errs[i], store.ErrNotFound):
		case errs[i] != nil:
			return nil, errs[i]
		default:
			jobs = append(jobs, jobFromRecord(topic, r))
		}
	}
	return jobs, nil
}

// A state list's cursor is base64url("<segment>:<score>:<id>") of the last job of a page.
func positionCursor(p store.Position) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(p.Segment) + ":" + strconv.FormatInt(p.Score, 10) + ":" + p.ID))
}

func parsePosition(cursor string) (*store.Position, error) {
	if cursor == "" {
		return nil, nil
	}
	bad := invalid("cursor", "not a cursor this server made")
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, bad
	}
	fields := strings.SplitN(string(raw), ":", 3)
	if len(fields) != 3 || ValidateID(fields[2]) != nil {
		return nil, bad
	}
	seg, err1 := strconv.Atoi(fields[0])
	score, err2 := strconv.ParseInt(fields[1], 10, 64)
	if err1 != nil || err2 != nil || seg < 0 || seg > 1 {
		return nil, bad
	}
	return &store.Position{Segment: seg, Score: score, ID: fields[2]}, nil
}
