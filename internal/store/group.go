package store

import "github.com/delayq/delayq/internal/keys"

// ByPartition groups items by the partition each belongs to, keeping their order, and
// remembers where each came from, so that one script call per partition can serve them all.
type ByPartition[T any] struct {
	Parts     []keys.Partition
	Groups    [][]T
	Positions [][]int // Groups[g][k] is item Positions[g][k]
	index     map[keys.Partition]int
}

// Add puts item, the one at position, in p's group.
func (b *ByPartition[T]) Add(p keys.Partition, item T, position int) {
	if b.index == nil {
		b.index = map[keys.Partition]int{}
	}
	g, ok := b.index[p]
	if !ok {
		g = len(b.Parts)
		b.index[p] = g
		b.Parts = append(b.Parts, p)
		b.Groups = append(b.Groups, nil)
		b.Positions = append(b.Positions, nil)
	}
	b.Groups[g] = append(b.Groups[g], item)
	b.Positions[g] = append(b.Positions[g], position)
}

// Group returns the index of p's group, and whether p has one.
func (b *ByPartition[T]) Group(p keys.Partition) (int, bool) {
	g, ok := b.index[p]
	return g, ok
}
