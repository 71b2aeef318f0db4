package delayq

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/redistest"
)

// idsInPartitions returns one id per wanted partition of an n-partition topic.
func idsInPartitions(t *testing.T, prefix string, n int, wanted ...int) []string {
	t.Helper()
	out := make([]string, len(wanted))
	for k, p := range wanted {
		for i := 0; out[k] == ""; i++ {
			id := fmt.Sprintf("%s-%d", prefix, i)
			if keys.PartitionOf(id, n) == p && !containsID(out, id) {
				out[k] = id
			}
		}
	}
	return out
}

func containsID(ids []string, id string) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}

// reservedOrder reserves up to max jobs at once and returns their ids in the order given.
func reservedOrder(t *testing.T, c *Client, topic string, max int) string {
	t.Helper()
	jobs, err := c.Reserve(testContext(t), topic, ReserveOptions{Max: max})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return strings.Join(ids, " ")
}

// One reserve over several partitions hands out the best jobs of all of them, in priority,
// then due-time order: three due jobs with priorities 0, 5 and 1, each in a partition of its
// own, come back as 5, 1, 0 — also one at a time — whichever partition a call looks at first.
func TestReserveOrderAcrossPartitions(t *testing.T) {
	t.Parallel()
	for _, max := range []int{3, 1} {
		t.Run(fmt.Sprintf("max %d", max), func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, Config{Partitions: 4})
			for round := range 4 {
				ids := idsInPartitions(t, fmt.Sprintf("r%d", round), 4, 0, 1, 2)
				for i, prio := range []int{0, 5, 1} {
					mustEnqueue(t, c, "t", Spec{ID: ids[i], Priority: prio})
				}
				want := ids[1] + " " + ids[2] + " " + ids[0]
				got := ""
				for len(got) < len(want) {
					got = strings.TrimSpace(got + " " + reservedOrder(t, c, "t", max))
				}
				if got != want {
					t.Fatalf("round %d: reserved %q, want %q (priorities 5, 1, 0)", round, got, want)
				}
			}
		})
	}
}

// Within a priority, the earliest due job of any partition comes first.
func TestReserveOrderByDueTimeAcrossPartitions(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Partitions: 4})
	ids := idsInPartitions(t, "d", 4, 3, 2, 1, 0)
	base := time.Now().Add(-time.Hour)
	// Due 4, 1, 3 and 2 minutes after base, in partitions 3, 2, 1 and 0.
	for i, m := range []int{4, 1, 3, 2} {
		mustEnqueue(t, c, "t", Spec{ID: ids[i], RunAt: base.Add(time.Duration(m) * time.Minute)})
	}
	want := strings.Join([]string{ids[1], ids[3], ids[2], ids[0]}, " ")
	if got := reservedOrder(t, c, "t", 4); got != want {
		t.Fatalf("reserved %q, want %q (earliest due first)", got, want)
	}
}

// On a Cluster the partitions live on different shards; the order holds across them.
func TestReserveOrderAcrossClusterShards(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 0)
	c := newClientOn(t, cluster.Client(t), Config{})
	n := 16
	ids := idsInPartitions(t, "s", n, 0, 5, 10, 15)
	for i, prio := range []int{1, 3, 2, 4} {
		mustEnqueue(t, c, "t", Spec{ID: ids[i], Priority: prio})
	}
	want := strings.Join([]string{ids[3], ids[1], ids[2], ids[0]}, " ")
	if got := reservedOrder(t, c, "t", 4); got != want {
		t.Fatalf("reserved %q, want %q (priorities 4, 3, 2, 1)", got, want)
	}
}
