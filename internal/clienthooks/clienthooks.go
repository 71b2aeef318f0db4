// Package clienthooks gives package archive what it needs of a delayq.Client's insides (its
// store, and reading the archive setting at once) without adding to delayq's public API.
// Package delayq sets the hooks in an init function; they take the Client as any because this
// package cannot import delayq, which imports it.
package clienthooks

import (
	"context"

	"github.com/delayq/delayq/internal/store"
)

var (
	// Store returns client's store.
	Store func(client any) *store.Store
	// ReadArchiveSetting makes client read the namespace's archive setting now.
	ReadArchiveSetting func(ctx context.Context, client any) error
)
