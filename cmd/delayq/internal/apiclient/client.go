// Package apiclient is a typed client of delayq server's HTTP API, v1. Every method takes a
// context, which bounds the request (a reserve's wait included); an error answer of the server
// is an *Error carrying its status, code and message.
package apiclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// Config configures a Client.
type Config struct {
	// BaseURL is the server's address, such as http://127.0.0.1:7070. Required.
	BaseURL string
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	// HTTPClient sends the requests. Defaults to a client with no overall timeout, since a
	// reserve may wait up to a minute; the context of each call bounds it instead.
	HTTPClient *http.Client
	// RootCAs, when set, are the certificate authorities an https:// server's certificate is
	// checked against, instead of the system's; only with the default HTTPClient.
	RootCAs *x509.CertPool
	// UserAgent is sent with every request. Defaults to "delayq-apiclient".
	UserAgent string
}

// Client calls one delayq server. It is safe for concurrent use.
type Client struct {
	base  string // without a trailing slash
	token string
	http  *http.Client
	agent string
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("apiclient: server address %q: want an http:// or https:// URL such as http://127.0.0.1:7070", cfg.BaseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("apiclient: server address %q: want no query or fragment", cfg.BaseURL)
	}
	if strings.ContainsAny(cfg.Token, " \t\r\n") {
		return nil, errors.New("apiclient: the token has white space")
	}
	c := &Client{base: strings.TrimRight(u.String(), "/"), token: cfg.Token, http: cfg.HTTPClient, agent: cfg.UserAgent}
	if c.http == nil {
		c.http = &http.Client{}
		if cfg.RootCAs != nil {
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.TLSClientConfig = &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
			c.http.Transport = t
		}
	} else if cfg.RootCAs != nil {
		return nil, errors.New("apiclient: RootCAs with an HTTPClient of the caller's: set them in its transport")
	}
	if c.agent == "" {
		c.agent = "delayq-apiclient"
	}
	return c, nil
}

// jobPath returns the path of one job, or of a sub-resource of it.
func jobPath(topic, id string, rest ...string) string {
	p := "/v1/topics/" + url.PathEscape(topic) + "/jobs/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

func topicPath(topic string, rest ...string) string {
	p := "/v1/topics/" + url.PathEscape(topic)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// Enqueue adds one job to topic, or keeps or replaces the job with its ID as job.OnConflict
// says.
func (c *Client) Enqueue(ctx context.Context, topic string, job JobRequest) (*apiv1.Job, error) {
	e, err := c.EnqueueAnswer(ctx, topic, job)
	if err != nil {
		return nil, err
	}
	return e.Job, nil
}

// Enqueued is the answer to an enqueue.
type Enqueued struct {
	// Job is the job as it is now.
	Job *apiv1.Job
	// Existed says the topic had a job with the id, which the enqueue kept as it was or
	// replaced (on_conflict keep or replace: 200 rather than 201); Job.Replaces tells which.
	Existed bool
}

// EnqueueAnswer is Enqueue with the whole answer, which also tells whether the job existed.
func (c *Client) EnqueueAnswer(ctx context.Context, topic string, job JobRequest) (*Enqueued, error) {
	body, err := job.encode()
	if err != nil {
		return nil, err
	}
	var out apiv1.Job
	status, err := c.send(ctx, http.MethodPost, topicPath(topic, "jobs"), RawBody(body), &out)
	if err != nil {
		return nil, err
	}
	return &Enqueued{Job: &out, Existed: status == http.StatusOK}, nil
}

// EnqueueBatch adds up to the server's batch limit (1000 by default) of jobs to topic. Each
// job succeeds or fails alone; results are in request order.
func (c *Client) EnqueueBatch(ctx context.Context, topic string, jobs []JobRequest) ([]apiv1.BatchResult, error) {
	raw := make([]json.RawMessage, len(jobs))
	for i, j := range jobs {
		b, err := j.encode()
		if err != nil {
			return nil, err
		}
		raw[i] = b
	}
	return c.EnqueueBatchRaw(ctx, topic, raw)
}

// EnqueueBatchRaw is EnqueueBatch for job request objects already in the API's JSON form,
// which are sent byte for byte; each must be valid JSON.
func (c *Client) EnqueueBatchRaw(ctx context.Context, topic string, jobs []json.RawMessage) ([]apiv1.BatchResult, error) {
	body, err := (&apiv1.BatchRequest{Jobs: jobs}).Encode()
	if err != nil {
		return nil, fmt.Errorf("apiclient: %w", err)
	}
	var out apiv1.BatchResponse
	if err := c.Do(ctx, http.MethodPost, topicPath(topic, "jobs", "batch"), RawBody(body), &out); err != nil {
		return nil, err
	}
	return out.Results, nil
}

// Get returns a job in any state. While a job that ended keeps its id taken for its
// unique_for_ms, the server answers that ended job instead: Get returns it as a *DoneError.
func (c *Client) Get(ctx context.Context, topic, id string) (*apiv1.Job, error) {
	var raw json.RawMessage
	if err := c.Do(ctx, http.MethodGet, jobPath(topic, id), nil, &raw); err != nil {
		return nil, err
	}
	var state struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(raw, &state); err != nil {
		return nil, fmt.Errorf("apiclient: decoding the answer to GET %s: %w", jobPath(topic, id), err)
	}
	if state.State == apiv1.StateEnded {
		var ended apiv1.EndedJob
		if err := json.Unmarshal(raw, &ended); err != nil {
			return nil, fmt.Errorf("apiclient: decoding the answer to GET %s: %w", jobPath(topic, id), err)
		}
		return nil, &DoneError{Job: ended}
	}
	var out apiv1.Job
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("apiclient: decoding the answer to GET %s: %w", jobPath(topic, id), err)
	}
	return &out, nil
}

// Cancel deletes a job in any state.
func (c *Client) Cancel(ctx context.Context, topic, id string) error {
	return c.Do(ctx, http.MethodDelete, jobPath(topic, id), nil, nil)
}

// Reschedule makes a delayed or ready job due delay from now.
func (c *Client) Reschedule(ctx context.Context, topic, id string, delay time.Duration) (*apiv1.Job, error) {
	var out apiv1.Job
	in := apiv1.RescheduleRequest{DelayMs: new(delay.Milliseconds())}
	if err := c.Do(ctx, http.MethodPatch, jobPath(topic, id), in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RescheduleAt makes a delayed or ready job due at t.
func (c *Client) RescheduleAt(ctx context.Context, topic, id string, t time.Time) (*apiv1.Job, error) {
	var out apiv1.Job
	in := apiv1.RescheduleRequest{RunAt: new(apiv1.FormatTime(t))}
	if err := c.Do(ctx, http.MethodPatch, jobPath(topic, id), in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Reserve leases up to r.Max due jobs of topic, waiting up to r.Wait for one.
func (c *Client) Reserve(ctx context.Context, topic string, r ReserveRequest) ([]*apiv1.Job, error) {
	out, err := c.ReserveAnswer(ctx, topic, r)
	if err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// ReserveAnswer is Reserve with the whole answer, which also tells when the topic does not
// exist (TopicExists).
func (c *Client) ReserveAnswer(ctx context.Context, topic string, r ReserveRequest) (*apiv1.ReserveResponse, error) {
	var out apiv1.ReserveResponse
	if err := c.Do(ctx, http.MethodPost, topicPath(topic, "reserve"), r.wire(), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Ack marks a reserved job done.
func (c *Client) Ack(ctx context.Context, topic, id, lease string) error {
	return c.Do(ctx, http.MethodPost, jobPath(topic, id, "ack"), apiv1.LeaseRequest{Lease: &lease}, nil)
}

// Nack ends a reserved job's attempt as failed.
func (c *Client) Nack(ctx context.Context, topic, id, lease string, r NackRequest) error {
	return c.Do(ctx, http.MethodPost, jobPath(topic, id, "nack"), r.wire(lease), nil)
}

// Touch extends a lease by ttr (zero: the job's TTR) and returns the new deadline.
func (c *Client) Touch(ctx context.Context, topic, id, lease string, ttr time.Duration) (time.Time, error) {
	in := apiv1.TouchRequest{Lease: &lease, TTRMs: nonZero(ttr.Milliseconds())}
	var out apiv1.TouchResponse
	if err := c.Do(ctx, http.MethodPost, jobPath(topic, id, "touch"), in, &out); err != nil {
		return time.Time{}, err
	}
	return out.LeaseDeadline.Time, nil
}

// Release gives a lease back unfinished: the job is due again at once and the attempt does
// not count.
func (c *Client) Release(ctx context.Context, topic, id, lease string) error {
	return c.Do(ctx, http.MethodPost, jobPath(topic, id, "release"), apiv1.ReleaseRequest{Lease: &lease}, nil)
}

// Snooze gives a lease back for later: the job is due again delay after now, the attempt does
// not count, and the job counts a snooze (past its max_snoozes it goes dead instead).
func (c *Client) Snooze(ctx context.Context, topic, id, lease string, delay time.Duration) error {
	ms := delay.Milliseconds()
	return c.Do(ctx, http.MethodPost, jobPath(topic, id, "release"), apiv1.ReleaseRequest{Lease: &lease, DelayMs: &ms}, nil)
}

// Topics returns the counts of every topic.
func (c *Client) Topics(ctx context.Context) ([]apiv1.TopicStats, error) {
	var out apiv1.TopicList
	if err := c.Do(ctx, http.MethodGet, "/v1/topics", nil, &out); err != nil {
		return nil, err
	}
	return out.Topics, nil
}

// Stats returns the counts of one topic.
func (c *Client) Stats(ctx context.Context, topic string) (*apiv1.TopicStats, error) {
	var out apiv1.TopicStats
	if err := c.Do(ctx, http.MethodGet, topicPath(topic), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeadJobs returns a page of up to limit (zero: the server's default) dead jobs of topic,
// starting at cursor ("" for the first page).
func (c *Client) DeadJobs(ctx context.Context, topic string, limit int, cursor string) (*apiv1.DeadPage, error) {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	p := topicPath(topic, "dead")
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var out apiv1.DeadPage
	if err := c.Do(ctx, http.MethodGet, p, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RequeueDead makes the dead jobs ids ready again, and returns how many it requeued.
func (c *Client) RequeueDead(ctx context.Context, topic string, ids []string) (int, error) {
	return c.requeueDead(ctx, topic, apiv1.DeadSelection{IDs: ids})
}

// RequeueAllDead makes every dead job of topic ready again.
func (c *Client) RequeueAllDead(ctx context.Context, topic string) (int, error) {
	return c.requeueDead(ctx, topic, apiv1.DeadSelection{All: new(true)})
}

// DeleteDead deletes the dead jobs ids, and returns how many it deleted.
func (c *Client) DeleteDead(ctx context.Context, topic string, ids []string) (int, error) {
	return c.deleteDead(ctx, topic, apiv1.DeadSelection{IDs: ids})
}

// DeleteAllDead deletes every dead job of topic.
func (c *Client) DeleteAllDead(ctx context.Context, topic string) (int, error) {
	return c.deleteDead(ctx, topic, apiv1.DeadSelection{All: new(true)})
}

func (c *Client) requeueDead(ctx context.Context, topic string, in apiv1.DeadSelection) (int, error) {
	var out apiv1.RequeueResponse
	if err := c.Do(ctx, http.MethodPost, topicPath(topic, "dead", "requeue"), in, &out); err != nil {
		return 0, err
	}
	return out.Requeued, nil
}

func (c *Client) deleteDead(ctx context.Context, topic string, in apiv1.DeadSelection) (int, error) {
	var out apiv1.DeleteResponse
	if err := c.Do(ctx, http.MethodDelete, topicPath(topic, "dead"), in, &out); err != nil {
		return 0, err
	}
	return out.Deleted, nil
}

// schedulePath returns the path of one schedule, or of an action on it.
func schedulePath(name string, rest ...string) string {
	p := "/v1/schedules/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// PutSchedule creates schedule name, or replaces it, and reports whether it created it.
func (c *Client) PutSchedule(ctx context.Context, name string, s ScheduleRequest) (*apiv1.Schedule, bool, error) {
	body, err := s.encode()
	if err != nil {
		return nil, false, err
	}
	var out apiv1.Schedule
	status, err := c.send(ctx, http.MethodPut, schedulePath(name), RawBody(body), &out)
	if err != nil {
		return nil, false, err
	}
	return &out, status == http.StatusCreated, nil
}

// Schedule returns one schedule.
func (c *Client) Schedule(ctx context.Context, name string) (*apiv1.Schedule, error) {
	return c.scheduleCall(ctx, http.MethodGet, schedulePath(name))
}

// Schedules returns every schedule.
func (c *Client) Schedules(ctx context.Context) ([]apiv1.Schedule, error) {
	var out apiv1.ScheduleList
	if err := c.Do(ctx, http.MethodGet, "/v1/schedules", nil, &out); err != nil {
		return nil, err
	}
	return out.Schedules, nil
}

// DeleteSchedule deletes a schedule; the jobs of ticks enqueued already stay.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, schedulePath(name), nil, nil)
}

// PauseSchedule stops a schedule from enqueueing ticks until it is resumed.
func (c *Client) PauseSchedule(ctx context.Context, name string) (*apiv1.Schedule, error) {
	return c.scheduleCall(ctx, http.MethodPost, schedulePath(name, "pause"))
}

// ResumeSchedule lets a paused schedule tick again, from now.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (*apiv1.Schedule, error) {
	return c.scheduleCall(ctx, http.MethodPost, schedulePath(name, "resume"))
}

func (c *Client) scheduleCall(ctx context.Context, method, path string) (*apiv1.Schedule, error) {
	var out apiv1.Schedule
	if err := c.Do(ctx, method, path, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Healthz reports whether the server runs.
func (c *Client) Healthz(ctx context.Context) error {
	return c.Do(ctx, http.MethodGet, "/healthz", nil, nil)
}

// Readyz reports whether the server can reach its store.
func (c *Client) Readyz(ctx context.Context) error {
	return c.Do(ctx, http.MethodGet, "/readyz", nil, nil)
}

// RawBody is a request body that Do sends as it is, instead of encoding it.
type RawBody []byte

// Do sends one request to path (with its query, if any) and decodes a 2xx answer into out,
// when out is not nil. in, when not nil, is sent as the JSON body: a RawBody as it is, any
// other value encoded with encoding/json. A non-2xx answer is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	_, err := c.send(ctx, method, path, in, out)
	return err
}

// send is Do that also returns a 2xx answer's status.
func (c *Client) send(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	if raw, ok := in.(RawBody); ok {
		body = bytes.NewReader(raw)
	} else if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("apiclient: encoding the %s %s request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, fmt.Errorf("apiclient: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.agent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("apiclient: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, readError(resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return 0, fmt.Errorf("apiclient: decoding the answer to %s %s: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

// readError turns a non-2xx answer into an *Error, with or without the API's error body.
func readError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body apiv1.ErrorResponse
	if err := json.Unmarshal(data, &body); err == nil && body.Error.Code != "" {
		e := &Error{Status: resp.StatusCode, Code: body.Error.Code, Message: body.Error.Message, Outcome: body.Error.Outcome}
		if body.Error.EndedAt != nil {
			e.EndedAt = body.Error.EndedAt.Time
		}
		return e
	}
	msg := strings.TrimSpace(string(data))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &Error{Status: resp.StatusCode, Code: codeForStatus(resp.StatusCode), Message: msg}
}
