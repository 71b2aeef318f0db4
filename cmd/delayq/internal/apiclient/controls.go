package apiclient

import (
	"context"
	"net/http"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// PauseTopic pauses topic: no consumer gets its jobs until ResumeTopic. A topic that does not
// exist is created. It returns the topic as it is now.
func (c *Client) PauseTopic(ctx context.Context, topic string) (*apiv1.TopicStats, error) {
	return c.controlTopic(ctx, http.MethodPost, topicPath(topic, "pause"), nil)
}

// ResumeTopic resumes a paused topic; its waiting consumers get its due jobs at once.
func (c *Client) ResumeTopic(ctx context.Context, topic string) (*apiv1.TopicStats, error) {
	return c.controlTopic(ctx, http.MethodPost, topicPath(topic, "resume"), nil)
}

// SetTopicLimits replaces every limit of topic with l, 0 fields being no limit.
func (c *Client) SetTopicLimits(ctx context.Context, topic string, l apiv1.TopicLimits) (*apiv1.TopicStats, error) {
	return c.controlTopic(ctx, http.MethodPut, topicPath(topic, "limits"), l)
}

// SetTopicDefaults replaces the defaults of topic's jobs with d: a nil field leaves its setting
// to the server, so the zero TopicDefaults clears them all. A topic that does not exist is
// created. It returns the topic as it is now.
func (c *Client) SetTopicDefaults(ctx context.Context, topic string, d apiv1.TopicDefaults) (*apiv1.TopicStats, error) {
	return c.controlTopic(ctx, http.MethodPut, topicPath(topic, "defaults"), d)
}

// ClearTopicLimits lifts every limit of topic.
func (c *Client) ClearTopicLimits(ctx context.Context, topic string) (*apiv1.TopicStats, error) {
	return c.controlTopic(ctx, http.MethodDelete, topicPath(topic, "limits"), nil)
}

func (c *Client) controlTopic(ctx context.Context, method, path string, in any) (*apiv1.TopicStats, error) {
	var out apiv1.TopicStats
	if err := c.Do(ctx, method, path, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteTopic deletes topic: an empty one, or with purge every job of it too (a topic with
// jobs is a failed_precondition *Error without it). It returns how many jobs it deleted.
func (c *Client) DeleteTopic(ctx context.Context, topic string, purge bool) (int, error) {
	p := topicPath(topic)
	if purge {
		p += "?purge=true"
	}
	var out apiv1.DeleteResponse
	if err := c.Do(ctx, http.MethodDelete, p, nil, &out); err != nil {
		return 0, err
	}
	return out.Deleted, nil
}
