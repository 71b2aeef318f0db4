//go:build ignore

package main

import (
	"context"

	"github.com/delayq/delayq"
)

// ack acks a reserved job, with the API before Lease values (Client.Ack(ctx, topic, id, lease)).
func ack(ctx context.Context, c *delayq.Client, j *delayq.Job) error {
	return c.Ack(ctx, j.Topic, j.ID, j.Lease)
}
