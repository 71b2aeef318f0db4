package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// Error codes of the API; each has one HTTP status (codeStatus).
const (
	codeInvalid          = "invalid_argument"
	codeUnauthenticated  = "unauthenticated"
	codePermission       = "permission_denied"
	codeNotFound         = "not_found"
	codeExists           = "already_exists"
	codeDone             = "already_done" // the id is kept by a job that ended within its unique_for
	codeLeaseLost        = "lease_lost"
	codePrecondition     = "failed_precondition"
	codeTooLarge         = "payload_too_large"
	codeMediaType        = "unsupported_media_type"
	codeUnavailable      = "unavailable"
	codeInternal         = "internal"
	codeMethodNotAllowed = "method_not_allowed" // an extension: wrong method on a known path
	codeRateLimited      = "rate_limited"       // an extension: too many wrong tokens
)

// codeStatus is the status of each code.
var codeStatus = map[string]int{
	codeInvalid:          http.StatusBadRequest,
	codeUnauthenticated:  http.StatusUnauthorized,
	codePermission:       http.StatusForbidden,
	codeNotFound:         http.StatusNotFound,
	codeExists:           http.StatusConflict,
	codeDone:             http.StatusConflict,
	codeLeaseLost:        http.StatusConflict,
	codePrecondition:     http.StatusConflict,
	codeTooLarge:         http.StatusRequestEntityTooLarge,
	codeMediaType:        http.StatusUnsupportedMediaType,
	codeUnavailable:      http.StatusServiceUnavailable,
	codeInternal:         http.StatusInternalServerError,
	codeMethodNotAllowed: http.StatusMethodNotAllowed,
	codeRateLimited:      http.StatusTooManyRequests,
}

// apiError is an error the handler decides itself, with its code and status.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// sentinels maps the library's errors to codes; it is the one table of that mapping.
var sentinels = []struct {
	err  error
	code string
}{
	{delayq.ErrNotFound, codeNotFound},
	{delayq.ErrExists, codeExists},
	{delayq.ErrLeaseLost, codeLeaseLost},
	{delayq.ErrWrongState, codePrecondition},
	{delayq.ErrNotEmpty, codePrecondition},
	{delayq.ErrClosed, codeUnavailable},
}

// classify turns any error into the API's code and message. The bool reports an internal
// error, whose cause is logged but not shown.
func classify(err error) (body apiv1.Error, internal bool) {
	var ae *apiError
	if errors.As(err, &ae) {
		return apiv1.Error{Code: ae.code, Message: ae.msg}, false
	}
	// Before NotFoundError: an ended job matches ErrNotFound too, and its end is the answer.
	var ended *delayq.EndedError
	if errors.As(err, &ended) {
		return apiv1.Error{Code: codePrecondition, Message: ended.Message()}, false
	}
	var done *delayq.DoneError
	if errors.As(err, &done) {
		return apiv1.Error{Code: codeDone, Message: done.Message(), Outcome: done.Outcome, EndedAt: &apiv1.Time{Time: done.EndedAt}}, false
	}
	var nf *delayq.NotFoundError
	if errors.As(err, &nf) {
		return apiv1.Error{Code: codeNotFound, Message: nf.Message()}, false
	}
	var ne *delayq.NotEmptyError
	if errors.As(err, &ne) {
		return apiv1.Error{Code: codePrecondition, Message: ne.Message() + " (?purge=true)"}, false
	}
	var inv *delayq.InvalidError
	if errors.As(err, &inv) {
		code := codeInvalid
		if errors.Is(err, delayq.ErrTooLarge) {
			code = codeTooLarge
		}
		return apiv1.Error{Code: code, Message: fmt.Sprintf("invalid %s: %s", wireField(inv.Field), inv.Reason)}, false
	}
	if errors.Is(err, delayq.ErrInvalid) {
		return apiv1.Error{Code: codeInvalid, Message: err.Error()}, false
	}
	var fe *archive.FilterError
	if errors.As(err, &fe) {
		return apiv1.Error{Code: codeInvalid, Message: fmt.Sprintf("invalid %s: %s", fe.Field, fe.Reason)}, false
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return apiv1.Error{Code: s.code, Message: err.Error()}, false
		}
	}
	if unavailable(err) {
		return apiv1.Error{Code: codeUnavailable, Message: "the store cannot be reached: " + err.Error()}, false
	}
	return apiv1.Error{Code: codeInternal, Message: "internal error"}, true
}

// unavailable reports whether err says the store cannot be reached or cannot serve now:
// a timeout, a refused or broken connection, an empty pool, or a Redis that is loading, read
// only, failing over or out of memory.
func unavailable(err error) bool {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, redis.ErrClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed),
		errors.As(err, &netErr):
		return true
	}
	if postgresUnavailable(err) {
		return true
	}
	return redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsClusterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsMasterDownError(err) || redis.IsMaxClientsError(err) ||
		redis.IsOOMError(err) || redis.IsNoReplicasError(err) || redis.HasErrorPrefix(err, "BUSY")
}

// postgresUnavailable reports whether err says the archive's PostgreSQL cannot be reached or
// cannot serve now: no connection could be made, the server is shutting down or starting up
// (class 57, operator intervention), the connection broke (class 08), or it is out of
// resources (class 53).
func postgresUnavailable(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.Timeout(err) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:min(2, len(pe.Code))] {
		case "08", "53", "57":
			return true
		}
	}
	return false
}

// writeError writes err as the API's error body with its status.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	body, internal := classify(err)
	if internal {
		a.log.Error("httpapi: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else if body.Code == codeUnavailable && r.Context().Err() == nil {
		a.log.Warn("httpapi: store unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	a.writeJSON(w, codeStatus[body.Code], apiv1.ErrorResponse{Error: body})
}

// itemError is err as a failed batch item; internal errors are logged.
func (a *api) itemError(r *http.Request, err error) *apiv1.Error {
	body, internal := classify(err)
	if internal {
		a.log.Error("httpapi: batch item failed", "path", r.URL.Path, "err", err)
	}
	return &body
}

// invalidf returns the library's validation error for field.
func invalidf(field, format string, args ...any) error {
	return &delayq.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// wireFields names the library's fields as the API does, where the two differ.
var wireFields = map[string]string{"delay": "delay_ms", "ttr": "ttr_ms", "wait": "wait_ms", "backoff": "backoff_ms",
	"period": "period_ms", "unique_for": "unique_for_ms"}

// wireField returns the API's name of a library field: delay is delay_ms, backoff[2] is
// backoff_ms[2], and a field of a schedule's job template keeps its prefix: job.ttr is
// job.ttr_ms.
func wireField(field string) string {
	prefix := ""
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		prefix, field = field[:i+1], field[i+1:]
	}
	name, index, _ := strings.Cut(field, "[")
	if w, ok := wireFields[name]; ok {
		name = w
	}
	if index != "" {
		return prefix + name + "[" + index
	}
	return prefix + name
}
