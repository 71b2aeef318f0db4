package beanstalkd

import (
	"context"
	"errors"
	"net"
	"slices"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
)

// conn is one client connection and its beanstalkd state.
type conn struct {
	srv     *Server
	nc      net.Conn
	session proto.Session
	r       *proto.Reader
	w       *proto.Writer

	used    string   // the tube put stores into
	watched []string // the tubes reserve takes from, in beanstalkd's order
	held    deadlines
	// producer and worker: the connection has put a job, or reserved (or tried to).
	producer, worker bool
}

// serve reads and answers commands until the client quits or goes away.
func (c *conn) serve(ctx context.Context) {
	c.used = "default"
	c.watched = []string{"default"}
	c.held = deadlines{}
	c.srv.tubes.use(c.used, 1)
	c.srv.tubes.watch("default", 1)
	defer c.close()
	for {
		cmd, err := c.r.ReadCommand()
		var perr proto.Error
		switch {
		case errors.As(err, &perr):
			c.w.Error(perr)
		case err != nil:
			return
		default:
			if _, quit := cmd.(proto.Quit); quit {
				return
			}
			c.srv.counts.add(cmd.Name())
			c.dispatch(ctx, cmd)
		}
		if ctx.Err() != nil {
			// The server is stopping: a command cut short gets no reply.
			return
		}
		if err := c.w.Flush(); err != nil {
			return
		}
	}
}

// close ends the connection: its tubes are no longer referenced and the jobs it still holds
// reserved go back to their tubes.
func (c *conn) close() {
	// Tubes first: once the client sees the connection closed, other connections no longer
	// see its tubes, as with beanstalkd.
	c.srv.tubes.use(c.used, -1)
	for _, t := range c.watched {
		c.srv.tubes.watch(t, -1)
	}
	c.nc.Close()
	c.srv.forget(c)
	if c.producer {
		c.srv.conns.producers.Add(-1)
	}
	if c.worker {
		c.srv.conns.workers.Add(-1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), disconnectTimeout)
	defer cancel()
	if err := c.srv.cfg.Backend.Disconnect(ctx, c.session); err != nil {
		c.srv.cfg.Logger.Error("beanstalkd: releasing a closed connection's jobs", "session", c.session, "err", err)
	}
}

// disconnectTimeout bounds the release of a closed connection's reservations.
const disconnectTimeout = 10 * time.Second

// dispatch carries out one command and buffers its reply.
func (c *conn) dispatch(ctx context.Context, cmd proto.Command) {
	switch cmd := cmd.(type) {
	case proto.Use:
		c.srv.tubes.use(cmd.Tube, 1)
		c.srv.tubes.use(c.used, -1)
		c.used = cmd.Tube
		c.w.Using(c.used)
	case proto.Watch:
		if !slices.Contains(c.watched, cmd.Tube) {
			c.srv.tubes.watch(cmd.Tube, 1)
			c.watched = append(c.watched, cmd.Tube)
		}
		c.w.Watching(len(c.watched))
	case proto.Ignore:
		c.ignore(cmd.Tube)
	case proto.ListTubeUsed:
		c.w.Using(c.used)
	case proto.ListTubesWatched:
		c.w.OK(proto.YAMLList(c.watched))
	default:
		if err := c.jobCommand(ctx, cmd); err != nil && ctx.Err() == nil {
			c.replyError(err)
		}
	}
}

// ignore drops a tube from the watch list; the last one cannot go (NOT_IGNORED). Like
// beanstalkd's set removal, the last tube takes the removed one's place.
func (c *conn) ignore(tube string) {
	i := slices.Index(c.watched, tube)
	if i >= 0 {
		if len(c.watched) < 2 {
			c.w.Error(proto.ErrNotIgnored)
			return
		}
		last := len(c.watched) - 1
		c.watched[i] = c.watched[last]
		c.watched = c.watched[:last]
		c.srv.tubes.watch(tube, -1)
	}
	c.w.Watching(len(c.watched))
}

// replyError answers a Backend error: its own reply if it is one, INTERNAL_ERROR otherwise.
func (c *conn) replyError(err error) {
	var perr proto.Error
	if errors.As(err, &perr) {
		c.w.Error(perr)
		return
	}
	c.srv.cfg.Logger.Error("beanstalkd: command failed", "session", c.session, "err", err)
	c.w.Error(proto.ErrInternal)
}
