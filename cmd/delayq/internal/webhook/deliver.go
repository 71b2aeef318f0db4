package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/internal/tracing"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// maxResponse bounds how much of a receiver's answer is read (and thrown away), so that
// a connection can be reused without a receiver making delayq read forever.
const maxResponse = 64 << 10

// userAgent identifies delayq to receivers.
const userAgent = "delayq"

// Outcomes of one delivery attempt, the outcome label of the webhook metric.
const (
	outcomeOK        = "ok"         // 2xx: acked
	outcomeHTTPError = "http_error" // any other status, redirects included: retried
	outcomeGone      = "gone"       // 410: dead at once
	outcomeTimeout   = "timeout"    // no answer within the job's TTR: retried
	outcomeRefused   = "refused"    // the connection was refused: retried
	outcomeForbidden = "forbidden"  // the Guard refused the address: retried
	outcomeError     = "error"      // anything else (DNS, TLS, reset…): retried
)

// encodePayload returns the request body that delivers job.
func encodePayload(job *delayq.Job) ([]byte, error) {
	return apiv1.Marshal(apiv1.NewWebhookPayload(job))
}

// post makes one delivery attempt of job and returns its outcome and the error to end the
// attempt with: nil to ack, a delayq.DeadLetter error to bury the job, any other to retry it.
// ctx is the handler's context; when it ends first (Stop by force, lost lease) post returns
// "" and ctx's error: the attempt was abandoned, not answered.
func (d *Dispatcher) post(ctx context.Context, job *delayq.Job) (string, error) {
	body, err := encodePayload(job)
	if err != nil {
		return outcomeError, fmt.Errorf("webhook: encoding the request: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, job.TTR)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, job.CallbackURL, bytes.NewReader(body))
	if err != nil {
		return outcomeError, fmt.Errorf("webhook: %w", err)
	}
	now := time.Now()
	id := messageID(job)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Webhook-Id", id)
	req.Header.Set("Webhook-Timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("Webhook-Signature", d.signature(id, now, body))
	// The delivery's span (the Worker's, in the trace the job was enqueued in) is the parent
	// of whatever the receiver does.
	tracing.W3C.Inject(ctx, propagation.HeaderCarrier(req.Header))

	resp, err := d.http.Do(req)
	if err != nil {
		return d.failure(ctx, rctx, job, err)
	}
	defer resp.Body.Close()
	// The answer is in once the status is; a receiver that stalls its body only costs the read.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	code := resp.StatusCode
	tracing.Set(trace.SpanFromContext(ctx), semconv.HTTPResponseStatusCode(code))
	switch {
	case code >= 200 && code < 300:
		return outcomeOK, nil
	case code == http.StatusGone:
		return outcomeGone, delayq.DeadLetter(errors.New("webhook: status 410 Gone"))
	case code >= 300 && code < 400:
		return outcomeHTTPError, fmt.Errorf("webhook: status %d (redirects are not followed)", code)
	default:
		return outcomeHTTPError, fmt.Errorf("webhook: status %d", code)
	}
}

// failure classifies a request that got no answer.
func (d *Dispatcher) failure(ctx, rctx context.Context, job *delayq.Job, err error) (string, error) {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL is the job's own; the cause is what the job's last_error needs
	}
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("webhook: delivery abandoned: %w", ctx.Err())
	case errors.Is(err, ErrForbiddenAddress):
		return outcomeForbidden, err
	case rctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()):
		return outcomeTimeout, fmt.Errorf("webhook: timeout: no answer within the job's TTR of %v", job.TTR)
	case errors.Is(err, syscall.ECONNREFUSED):
		return outcomeRefused, fmt.Errorf("webhook: %w", err)
	default:
		return outcomeError, fmt.Errorf("webhook: %w", err)
	}
}

// deliver is the push Worker's Handler: one attempt at POSTing job to its callback URL, with
// logs and metrics. The Worker acks on nil and nacks on an error.
func (d *Dispatcher) deliver(ctx context.Context, job *delayq.Job) error {
	start := time.Now()
	m := d.cfg.Metrics
	if m != nil {
		m.Delivered.WithLabelValues(job.Topic, "push").Inc()
		m.ObserveLateness(job.Topic, "push", job.Lateness())
	}
	outcome, err := d.post(ctx, job)
	if outcome == "" {
		d.log.Debug("webhook: delivery abandoned", "topic", job.Topic, "id", job.ID, "attempt", job.Attempts, "err", err)
		return err
	}
	// dead predicts what the nack will do with the job: the Worker does not tell.
	dead := outcome == outcomeGone || job.Attempts > job.MaxRetries
	if m != nil {
		m.Duration.WithLabelValues("push").Observe(time.Since(start).Seconds())
		m.Webhooks.WithLabelValues(job.Topic, outcome).Inc()
		switch {
		case err == nil:
			m.Acked.WithLabelValues(job.Topic).Inc()
		case dead:
			m.Nacked.WithLabelValues(job.Topic).Inc()
			m.Dead.WithLabelValues(job.Topic).Inc()
		default:
			m.Nacked.WithLabelValues(job.Topic).Inc()
			m.Retried.WithLabelValues(job.Topic).Inc()
		}
	}
	if err != nil {
		d.log.Warn("webhook: delivery failed", "topic", job.Topic, "id", job.ID, "attempt", job.Attempts,
			"outcome", outcome, "dead", dead, "err", err)
	} else {
		d.log.Debug("webhook: delivered", "topic", job.Topic, "id", job.ID, "attempt", job.Attempts,
			"duration", time.Since(start))
	}
	return err
}
