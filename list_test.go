package delayq

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pageAll reads every page of a state with page size limit.
func pageAll(t *testing.T, c *Client, topic string, state State, limit int) []*Job {
	t.Helper()
	var all []*Job
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("paging does not end")
		}
		jobs, next, err := c.Jobs(testContext(t), topic, state, limit, cursor)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, jobs...)
		if next == "" {
			return all
		}
		cursor = next
	}
}

func jobIDs(jobs []*Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func TestJobsByStatePaging(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Partitions: 4})
	ctx := testContext(t)
	base := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	var specs []Spec
	var want []string
	for g := 2; g >= 0; g-- { // three due times, ten jobs each: ties across pages and partitions
		for i := range 10 {
			id := fmt.Sprintf("d%d-%02d", g, i)
			specs = append(specs, Spec{ID: id, RunAt: base.Add(time.Duration(g) * time.Minute)})
		}
	}
	for g := range 3 {
		for i := range 10 {
			want = append(want, fmt.Sprintf("d%d-%02d", g, i))
		}
	}
	for _, p := range []int{0, 5} {
		specs = append(specs, Spec{ID: fmt.Sprintf("r-p%d", p), Priority: p})
	}
	if _, err := c.EnqueueBatch(ctx, "t", specs); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 7, 100} {
		if got := jobIDs(pageAll(t, c, "t", StateDelayed, limit)); !slices.Equal(got, want) {
			t.Errorf("delayed, pages of %d:\n got %v\nwant %v", limit, got, want)
		}
	}
	// Due at once, but not yet moved to the ready set: by due time, then id.
	if got := jobIDs(pageAll(t, c, "t", StateReady, 1)); !slices.Equal(got, []string{"r-p0", "r-p5"}) {
		t.Errorf("ready = %v, want r-p0 r-p5", got)
	}
	advance(c, time.Hour+90*time.Second)
	wantReady := append([]string{"r-p0", "r-p5"}, want[:20]...)
	if got := jobIDs(pageAll(t, c, "t", StateReady, 3)); !slices.Equal(got, wantReady) {
		t.Errorf("ready after the clock moved:\n got %v\nwant %v", got, wantReady)
	}
	if got := jobIDs(pageAll(t, c, "t", StateDelayed, 3)); !slices.Equal(got, want[20:]) {
		t.Errorf("delayed after the clock moved = %v, want %v", got, want[20:])
	}
	// A reserve moves every due job to the ready set and leases four of them.
	reserved, err := c.Reserve(ctx, "t", ReserveOptions{Max: 4})
	if err != nil || len(reserved) != 4 {
		t.Fatalf("Reserve = %v, %v", jobIDs(reserved), err)
	}
	left := slices.DeleteFunc(slices.Clone(wantReady), func(id string) bool {
		return slices.Contains(jobIDs(reserved), id)
	})
	if got := jobIDs(pageAll(t, c, "t", StateReady, 3)); !slices.Equal(got, left) {
		t.Errorf("ready set:\n got %v\nwant %v", got, left)
	}
	got := pageAll(t, c, "t", StateReserved, 3)
	if len(got) != 4 || got[0].State != StateReserved || got[0].LeaseDeadline.IsZero() {
		t.Errorf("reserved = %v", jobIDs(got))
	}
}

func TestJobsByStateRefusals(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "a"})
	for _, tc := range []struct {
		state  State
		limit  int
		cursor string
	}{
		{"stuck", 10, ""},
		{StateReady, 0, ""},
		{StateReady, 10, "not-a-cursor!"},
		{StateReady, 10, "OTo5OmE"}, // segment 9
	} {
		if _, _, err := c.Jobs(ctx, "t", tc.state, tc.limit, tc.cursor); !errors.Is(err, ErrInvalid) {
			t.Errorf("Jobs(%q, %d, %q) = %v, want invalid", tc.state, tc.limit, tc.cursor, err)
		}
	}
	if jobs, next, err := c.Jobs(ctx, "nobody", StateReady, 10, ""); err != nil || len(jobs) != 0 || next != "" {
		t.Errorf("unknown topic = %v, %q, %v", jobs, next, err)
	}
}

// TestJobsPageReadsOnlyTheRecordsItShows lists a page of a topic whose jobs have large bodies
// over many partitions: Redis must send the records of the page's jobs, not those of every
// partition's candidates for it.
func TestJobsPageReadsOnlyTheRecordsItShows(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{Partitions: 8})
	ctx := testContext(t)
	body := make([]byte, 16<<10)
	specs := make([]Spec, 200)
	for i := range specs {
		specs[i] = Spec{Body: body, Delay: time.Hour + time.Duration(i)*time.Second}
	}
	if _, err := c.EnqueueBatch(ctx, "big", specs); err != nil {
		t.Fatal(err)
	}
	sent := func() int64 {
		v, err := rdb.Info(ctx, "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(v, "\r\n") {
			if n, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
				b, _ := strconv.ParseInt(n, 10, 64)
				return b
			}
		}
		t.Fatal("no total_net_output_bytes")
		return 0
	}
	const limit = 5
	before := sent()
	jobs, _, err := c.Jobs(ctx, "big", StateDelayed, limit, "")
	if err != nil || len(jobs) != limit {
		t.Fatalf("Jobs = %d jobs, %v", len(jobs), err)
	}
	// The page's records, and room for the ids and positions of every partition's candidates.
	if got, most := sent()-before, int64(limit*len(body)+64<<10); got > most {
		t.Errorf("a page of %d jobs of %d bytes made Redis send %d bytes, over %d", limit, len(body), got, most)
	}
}

// TestJobsPagesOnePartition pages a topic of one partition (the default on a standalone Redis)
// whose jobs fill a page exactly: the page must still say that more follow.
func TestJobsPagesOnePartition(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	for _, id := range []string{"a", "b", "c"} {
		mustEnqueue(t, c, "t", Spec{ID: id, Delay: time.Hour})
	}
	if got := jobIDs(pageAll(t, c, "t", StateDelayed, 2)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("pages of 2 = %v, want a b c", got)
	}
}
