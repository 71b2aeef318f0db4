package delayq

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/delayq/delayq/internal/tracing"
)

// Limits of a job's headers.
const (
	// MaxHeaders is the most headers a job may have.
	MaxHeaders = 32
	// MaxHeadersBytes bounds the sum of the lengths of a job's header names and values.
	MaxHeadersBytes = 8 << 10
)

// withTrace returns h with the trace context of ctx's span added as traceparent and tracestate
// (in place of a tracestate of h's), unless h has a traceparent already (a name compared
// without case, as every header name is), ctx carries no trace, or the result would be over the
// limits (headers that Validate accepts stay accepted inside a span). h itself is never changed.
func withTrace(ctx context.Context, h map[string]string) map[string]string {
	size := 0
	for name, value := range h {
		if strings.EqualFold(name, tracing.TraceParent) {
			return h
		}
		size += len(name) + len(value)
	}
	trace := tracing.Inject(ctx, nil)
	if len(trace) == 0 {
		return h
	}
	out := make(map[string]string, len(h)+len(trace))
	for name, value := range h {
		if strings.EqualFold(name, tracing.TraceState) {
			size -= len(name) + len(value)
			continue
		}
		out[name] = value
	}
	for name, value := range trace {
		out[name] = value
		size += len(name) + len(value)
	}
	if len(out) > MaxHeaders || size > MaxHeadersBytes {
		return h
	}
	return out
}

// withStoredTrace returns h, a repeated enqueue's headers, with the trace headers of the job
// the first enqueue stored (traceparent and tracestate, "" for one it lacks): the repeat answers
// that job. h itself is never changed.
func withStoredTrace(h map[string]string, trace []string) map[string]string {
	out := make(map[string]string, len(h)+2)
	for name, value := range h {
		out[name] = value
	}
	for i, name := range []string{tracing.TraceParent, tracing.TraceState} {
		if trace[i] == "" {
			delete(out, name)
		} else {
			out[name] = trace[i]
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// normalizeHeaders validates a Spec's headers and returns them with lower-case names, or nil
// when there are none. Names are HTTP field names (RFC 9110 tokens), compared without case, so
// two that differ only by case are an error; values are UTF-8 without control characters other
// than tab, so that they can be carried as HTTP header values and printed. Names are checked in
// order, so that the same headers always give the same error.
func normalizeHeaders(h map[string]string) (map[string]string, error) {
	if len(h) == 0 {
		return nil, nil
	}
	if len(h) > MaxHeaders {
		return nil, invalid("headers", "%d headers is over the limit of %d", len(h), MaxHeaders)
	}
	names := make([]string, 0, len(h))
	size := 0
	for name, value := range h {
		names = append(names, name)
		size += len(name) + len(value)
	}
	if size > MaxHeadersBytes {
		return nil, invalid("headers", "%d bytes of names and values is over the limit of %d", size, MaxHeadersBytes)
	}
	slices.Sort(names)
	out := make(map[string]string, len(h))
	seen := make(map[string]string, len(h)) // lower-case name → the name as given
	for _, name := range names {
		if err := checkHeader(name, h[name]); err != nil {
			return nil, err
		}
		lower := strings.ToLower(name)
		if first, ok := seen[lower]; ok {
			return nil, invalid("headers["+name+"]", "the same name as %q: header names are compared without case", first)
		}
		seen[lower] = name
		out[lower] = h[name]
	}
	return out, nil
}

// checkHeader reports whether name is an HTTP token and value a header value delayq keeps.
func checkHeader(name, value string) error {
	field := "headers[" + name + "]"
	if name == "" {
		return invalid("headers", "a header name is empty")
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return invalid(field, "the name has the character %q: names are HTTP tokens (letters, digits and !#$%%&'*+-.^_`|~)", name[i])
		}
	}
	if !utf8.ValidString(value) {
		return invalid(field, "the value is not UTF-8")
	}
	for _, r := range value {
		if r != '\t' && unicode.IsControl(r) {
			return invalid(field, "the value has the control character %q: only tab is allowed", r)
		}
	}
	return nil
}

// isTokenChar reports whether c is an RFC 9110 tchar.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
