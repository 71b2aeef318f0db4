package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/apiv1"
)

// maxBackoffSteps bounds backoff_ms, as the library does.
const maxBackoffSteps = 100

// callbackChecker vets callback URLs for one request, asking about each URL once.
type callbackChecker struct {
	a    *api
	seen map[string]error
}

func (a *api) newCallbackChecker() *callbackChecker {
	return &callbackChecker{a: a, seen: map[string]error{}}
}

func (c *callbackChecker) check(ctx context.Context, raw string) error {
	if err, ok := c.seen[raw]; ok {
		return err
	}
	var err error
	if cerr := c.a.check(ctx, raw); cerr != nil {
		err = invalidf("callback_url", "%s", cerr.Error())
	}
	c.seen[raw] = err
	return err
}

// spec validates q against the limits, in the API's field names and units, and converts it.
// It refuses what the library would refuse, so that a bad job is refused before the store is
// touched (a first job would otherwise register its topic).
func (a *api) spec(ctx context.Context, q *apiv1.EnqueueRequest, cb *callbackChecker) (delayq.Spec, error) {
	l := a.lim
	var s delayq.Spec
	if q.ID != nil {
		if err := delayq.ValidateID(*q.ID); err != nil {
			return s, err
		}
		s.ID = *q.ID
	}
	switch {
	case q.Body != nil && q.BodyBase64 != nil:
		return s, invalidf("body_base64", "give body or body_base64, not both")
	case q.Body != nil:
		s.Body, s.Format = []byte(q.Body), delayq.FormatJSON
	case q.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*q.BodyBase64)
		if err != nil {
			return s, invalidf("body_base64", "not standard base64: %v", err)
		}
		s.Body, s.Format = b, delayq.FormatBinary
	}
	if len(s.Body) > l.MaxBody {
		return s, &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
			msg: fmt.Sprintf("the job body is %d bytes, over the limit of %d", len(s.Body), l.MaxBody)}
	}
	maxDelayMs := l.MaxDelay.Milliseconds()
	if q.DelayMs != nil {
		if q.RunAt != nil {
			return s, invalidf("run_at", "give delay_ms or run_at, not both")
		}
		if err := inRange("delay_ms", *q.DelayMs, 0, maxDelayMs); err != nil {
			return s, err
		}
		s.Delay = ms(*q.DelayMs)
	}
	if q.RunAt != nil {
		t, err := parseRunAt(*q.RunAt, l.MaxDelay)
		if err != nil {
			return s, err
		}
		s.RunAt = t
	}
	if q.TTRMs != nil {
		if err := inRange("ttr_ms", *q.TTRMs, l.MinTTR.Milliseconds(), l.MaxTTR.Milliseconds()); err != nil {
			return s, err
		}
		s.TTR = ms(*q.TTRMs)
	}
	if q.MaxRetries != nil {
		if err := inRange("max_retries", *q.MaxRetries, 0, int64(l.MaxRetries)); err != nil {
			return s, err
		}
		s.MaxRetries, s.NoRetries = int(*q.MaxRetries), *q.MaxRetries == 0
	}
	if q.BackoffMs != nil {
		if len(q.BackoffMs) == 0 || len(q.BackoffMs) > maxBackoffSteps {
			return s, invalidf("backoff_ms", "must have 1 to %d steps, got %d", maxBackoffSteps, len(q.BackoffMs))
		}
		s.Backoff = make([]time.Duration, len(q.BackoffMs))
		for i, step := range q.BackoffMs {
			if err := inRange(fmt.Sprintf("backoff_ms[%d]", i), step, 0, maxDelayMs); err != nil {
				return s, err
			}
			s.Backoff[i] = ms(step)
		}
	}
	if q.Priority != nil {
		if err := inRange("priority", *q.Priority, -delayq.MaxPriority, delayq.MaxPriority); err != nil {
			return s, err
		}
		s.Priority = int(*q.Priority)
	}
	if q.CallbackURL != nil {
		if err := a.checkCallbackURL(ctx, *q.CallbackURL, cb); err != nil {
			return s, err
		}
		s.CallbackURL = *q.CallbackURL
	}
	return s, nil
}

// checkCallbackURL refuses callback URLs while push delivery is disabled, and otherwise URLs
// that are not http or https or that the operator's check refuses.
func (a *api) checkCallbackURL(ctx context.Context, raw string, cb *callbackChecker) error {
	if a.check == nil {
		return invalidf("callback_url", "push delivery is disabled on this server: a webhook secret must be configured to accept jobs with a callback_url")
	}
	if err := delayq.ValidateCallbackURL(raw); err != nil {
		return err
	}
	return cb.check(ctx, raw)
}

// parseRunAt reads an RFC 3339 time from 1970 to now+maxDelay; a past time means due now.
func parseRunAt(v string, maxDelay time.Duration) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, invalidf("run_at", "%q is not an RFC 3339 time like 2026-11-22T10:00:00.123Z", v)
	}
	if t.UnixMilli() <= 0 {
		return time.Time{}, invalidf("run_at", "%s is not after 1970-01-01", v)
	}
	if time.Until(t) > maxDelay {
		return time.Time{}, invalidf("run_at", "%s is more than %d ms ahead", v, maxDelay.Milliseconds())
	}
	return t, nil
}

// inRange checks lo <= v <= hi.
func inRange(field string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return invalidf(field, "%d is outside %d to %d", v, lo, hi)
	}
	return nil
}

// ms converts a count of milliseconds, already checked against a limit, into a Duration.
func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
