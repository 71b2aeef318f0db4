package httpapi

import "context"

// bounded runs f, a store call, and returns when f does or when ctx ends, whichever comes first.
//
// A go-redis client honours a context's deadline only when built with ContextTimeoutEnabled;
// otherwise a paused or unreachable Redis holds a call for its own read, dial and retry
// timeouts, which would hang the request. inline says the client ends calls at ctx's deadline
// itself (see store.EndsCallsAtDeadline): f then runs on the request's goroutine, with no
// hand-off to another one and back. Otherwise f runs on a goroutine of its own and the request
// ends with ctx's error (and so 503) while f runs on until those timeouts end it; its outcome
// is then unknown to the caller, as with any request that times out.
func bounded[T any](ctx context.Context, inline bool, f func(context.Context) (T, error)) (T, error) {
	if inline {
		return f(ctx)
	}
	return boundedOrUndo(ctx, f, func(T) {})
}

// boundedOrUndo is bounded for calls whose result must not be dropped, always on a goroutine
// of their own: when ctx ends first, undo receives the result f returns after all.
func boundedOrUndo[T any](ctx context.Context, f func(context.Context) (T, error), undo func(T)) (T, error) {
	var zero T
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil {
				undo(r.v)
			}
		}()
		return zero, ctx.Err()
	}
}

// boundedErr is bounded for store calls that return only an error.
func boundedErr(ctx context.Context, inline bool, f func(context.Context) error) error {
	_, err := bounded(ctx, inline, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
	return err
}
