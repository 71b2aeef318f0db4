package store

import "github.com/delayq/delayq/internal/keys"

// ByPartition groups items by the partition each belongs to, keeping their order, and
// remembers where each came from, so that one script call per partition can serve them all.
type ByPartition[T any] struct {
	Parts     []keys.Partition
	Groups    [][]T
	Positions [][]int // Groups[g][k] is item Positions[g][k]
	// index finds a partition's group once there are more than scanParts; below, a look
	// along Parts is cheaper than a map, and allocates nothing.
	index map[keys.Partition]int
}

// scanParts is how many groups ByPartition finds by looking along them.
const scanParts = 8

// Add puts item, the one at position, in p's group.
func (b *ByPartition[T]) Add(p keys.Partition, item T, position int) {
	g, ok := b.Group(p)
	if !ok {
		g = len(b.Parts)
		b.Parts = append(b.Parts, p)
		b.Groups = append(b.Groups, nil)
		b.Positions = append(b.Positions, nil)
		switch {
		case b.index != nil:
			b.index[p] = g
		case len(b.Parts) > scanParts:
			b.index = make(map[keys.Partition]int, 2*len(b.Parts))
			for i, q := range b.Parts {
				b.index[q] = i
			}
		}
	}
	b.Groups[g] = append(b.Groups[g], item)
	b.Positions[g] = append(b.Positions[g], position)
}

// Group returns the index of p's group, and whether p has one.
func (b *ByPartition[T]) Group(p keys.Partition) (int, bool) {
	if b.index != nil {
		g, ok := b.index[p]
		return g, ok
	}
	for g, q := range b.Parts {
		if q == p {
			return g, true
		}
	}
	return 0, false
}
