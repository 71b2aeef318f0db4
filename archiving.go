package delayq

import (
	"context"
	"time"
)

// archiveRecheck is how often a Client reads the namespace's archive setting again: a Client
// archives the ends of the jobs it settles at most this long after archiving is turned on
// (package archive).
const archiveRecheck = 5 * time.Second

// followArchive reads the namespace's archive setting now and then until the Client closes,
// and tells the Client's scripts.
func (c *Client) followArchive(stop <-chan struct{}) {
	t := time.NewTicker(archiveRecheck)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), archiveRecheck)
			if err := c.readArchiveSetting(ctx); err != nil {
				c.log.Debug("delayq: reading the archive setting", "err", err)
			}
			cancel()
		}
	}
}

func (c *Client) readArchiveSetting(ctx context.Context) error {
	a, err := c.store.ReadArchiveSetting(ctx)
	if err == nil {
		c.store.ApplyArchiveSetting(a)
	}
	return err
}
