package store

import (
	"testing"

	"github.com/delayq/delayq/internal/keys"
)

// Items land in their partition's group in order, and each remembers where it came from, with
// few partitions (found by looking along them) and with many (found through an index).
func TestByPartitionGroupsItemsInOrder(t *testing.T) {
	for _, parts := range []int{1, scanParts, 3 * scanParts} {
		var b ByPartition[int]
		for i := range 5 * parts {
			b.Add(keys.For("ns", "t", i%parts), i, i)
		}
		if len(b.Parts) != parts {
			t.Fatalf("%d partitions: %d groups", parts, len(b.Parts))
		}
		for g, p := range b.Parts {
			if got, ok := b.Group(p); !ok || got != g {
				t.Errorf("%d partitions: Group(%v) = %d, %v, want %d", parts, p, got, ok, g)
			}
			for k, item := range b.Groups[g] {
				if item != g+k*parts || b.Positions[g][k] != item {
					t.Errorf("%d partitions: group %d item %d is %d at %d, want %d", parts, g, k, item, b.Positions[g][k], g+k*parts)
				}
			}
		}
		if _, ok := b.Group(keys.For("ns", "t", parts)); ok {
			t.Errorf("%d partitions: a partition without items has a group", parts)
		}
	}
}
