//go:build ignore

package main

import (
	"context"

	"github.com/delayq/delayq"
)

// ack acks a reserved job, with the API of Lease values (Client.Ack(ctx, Lease)).
func ack(ctx context.Context, c *delayq.Client, j *delayq.Job) error { return c.Ack(ctx, j.Lease()) }
