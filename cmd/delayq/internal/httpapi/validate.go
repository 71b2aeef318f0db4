package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// The limits of a job and of each call are the library's: the library checks them and names the
// wrong field (Spec.Validate, ReserveOptions, Nack, Touch, Reschedule), and classify turns its
// errors into 400s and 413s in the API's field names (wireField). What is checked here is what
// only the wire form shows: a field given twice over (body and body_base64, delay_ms and
// run_at), text that is not base64 or RFC 3339, a number no time.Duration can hold, and an
// explicit value that the library reads as "the default" (an empty id, a ttr_ms of 0).

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

// spec converts q into a Spec that the library has validated against the server's limits, and
// that the server's callback policy accepts; so a bad job is refused before the store is
// touched (a first job would otherwise register its topic).
func (a *api) spec(ctx context.Context, q *apiv1.EnqueueRequest, cb *callbackChecker) (delayq.Spec, error) {
	s, err := specOf(q)
	if err != nil {
		return s, err
	}
	if err := s.Validate(a.lim); err != nil {
		return s, err
	}
	if q.CallbackURL != nil {
		if err := a.checkCallbackPolicy(ctx, *q.CallbackURL, cb); err != nil {
			return s, err
		}
	}
	return s, nil
}

// specOf reads q into a Spec, refusing only what the wire form alone decides.
func specOf(q *apiv1.EnqueueRequest) (delayq.Spec, error) {
	var s delayq.Spec
	if q.ID != nil {
		if *q.ID == "" { // the library makes an id for an empty one
			return s, delayq.ValidateID("")
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
	var err error
	switch {
	case q.DelayMs != nil && q.RunAt != nil:
		return s, invalidf("run_at", "give delay_ms or run_at, not both")
	case q.DelayMs != nil:
		if s.Delay, err = duration("delay_ms", *q.DelayMs); err != nil {
			return s, err
		}
	case q.RunAt != nil:
		if s.RunAt, err = parseRunAt(*q.RunAt); err != nil {
			return s, err
		}
	}
	if q.TTRMs != nil {
		if s.TTR, err = leaseLength("ttr_ms", *q.TTRMs); err != nil {
			return s, err
		}
	}
	if q.MaxRetries != nil {
		s.MaxRetries, s.NoRetries = int(*q.MaxRetries), *q.MaxRetries == 0
	}
	if q.MaxSnoozes != nil {
		s.MaxSnoozes = int(*q.MaxSnoozes)
	}
	if q.BackoffMs != nil {
		s.Backoff = make([]time.Duration, len(q.BackoffMs))
		for i, step := range q.BackoffMs {
			if s.Backoff[i], err = duration(fmt.Sprintf("backoff_ms[%d]", i), step); err != nil {
				return s, err
			}
		}
	}
	if q.Priority != nil {
		s.Priority = int(*q.Priority)
	}
	if q.CallbackURL != nil {
		s.CallbackURL = *q.CallbackURL
	}
	s.Headers = q.Headers
	if q.UniqueForMs != nil {
		if s.UniqueFor, err = uniqueFor(*q.UniqueForMs); err != nil {
			return s, err
		}
	}
	if q.OnConflict != nil {
		if *q.OnConflict == "" {
			return s, invalidf("on_conflict", `"" is not reject, keep or replace`)
		}
		if s.OnConflict, err = delayq.ParseConflict(*q.OnConflict); err != nil {
			return s, err
		}
	}
	return s, nil
}

// checkCallbackPolicy refuses callback URLs while push delivery is disabled, and URLs that
// the operator's check refuses (private addresses, say).
func (a *api) checkCallbackPolicy(ctx context.Context, raw string, cb *callbackChecker) error {
	if a.check == nil {
		return invalidf("callback_url", "push delivery is disabled on this server: a webhook secret must be configured to accept jobs with a callback_url")
	}
	return cb.check(ctx, raw)
}

// parseRunAt reads an RFC 3339 time. Its range is the library's to check; the zero time,
// which the library reads as "not given", is refused here.
func parseRunAt(v string) (time.Time, error) { return timeField("run_at", v) }

// timeField is parseRunAt for any time field.
func timeField(field, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, invalidf(field, "%q is not an RFC 3339 time like 2026-11-22T10:00:00.123Z", v)
	}
	if t.IsZero() {
		return time.Time{}, invalidf(field, "%s is not after 1970-01-01", v)
	}
	return t, nil
}

// duration converts a count of milliseconds into a Duration, refusing counts no Duration can
// hold (about 292 years either way); the library checks the range.
func duration(field string, n int64) (time.Duration, error) {
	const most = math.MaxInt64 / int64(time.Millisecond)
	if n > most || n < -most {
		return 0, invalidf(field, "%d ms is out of range", n)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// uniqueFor reads a unique_for_ms field, which is there: 0 keeps no id taken
// (delayq.NoUniqueFor), whatever a default says.
func uniqueFor(ms int64) (time.Duration, error) {
	if ms < 0 {
		return 0, invalidf("unique_for_ms", "%d is below 0", ms)
	}
	if ms == 0 {
		return delayq.NoUniqueFor, nil
	}
	return duration("unique_for_ms", ms)
}

// leaseLength is duration for a lease length, where the library reads 0 as "the default".
func leaseLength(field string, n int64) (time.Duration, error) {
	if n == 0 {
		return 0, invalidf(field, "0 ms is not a lease length: leave the field out for the default")
	}
	return duration(field, n)
}
