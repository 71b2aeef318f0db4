package delayq

import (
	"fmt"
	"testing"
	"time"
)

// Topics reads the partitions of many topics per round trip; each topic must still get its own.
func TestTopicsMatchesStatsOverManyRoundTrips(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Partitions: 4})
	ctx := testContext(t)
	const topics = statsPipeline/4 + 40 // more partitions than one round trip reads
	for i := range topics {
		specs := make([]Spec, i%7)
		for k := range specs {
			specs[k] = Spec{Delay: time.Duration(k+1) * time.Hour}
		}
		specs = append(specs, Spec{}) // one due job in each
		if _, err := c.EnqueueBatch(ctx, fmt.Sprintf("t%04d", i), specs); err != nil {
			t.Fatal(err)
		}
	}
	all, err := c.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != topics {
		t.Fatalf("%d topics, want %d", len(all), topics)
	}
	for i, got := range all {
		want, err := c.Stats(ctx, fmt.Sprintf("t%04d", i))
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != want.Name || got.Delayed != int64(i%7) || got.Delayed != want.Delayed || got.Ready != 1 || got.NextRunAt != want.NextRunAt {
			t.Fatalf("Topics()[%d] = %+v, Stats = %+v", i, got, *want)
		}
	}
}
