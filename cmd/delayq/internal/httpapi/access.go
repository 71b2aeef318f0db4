package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/delayq/delayq/cmd/delayq/internal/access"
)

// authenticate returns the principal of r's bearer token, or answers r and returns nil: 401
// for a missing or wrong token, 429 once its address has sent too many wrong ones. A right
// token is never refused, whatever its address sent before. No token is ever logged.
func (a *api) authenticate(w http.ResponseWriter, r *http.Request) *access.Principal {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		if p := a.keys.Lookup(tok); p != nil {
			return p
		}
	}
	addr := access.ClientAddr(r)
	if tok != "" {
		if wait := a.limiter.Failed(addr); wait > 0 {
			secs := int(math.Ceil(wait.Seconds()))
			a.log.Debug("httpapi: a wrong token refused unread after too many", "remote", addr, "retry_after", secs)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			a.writeError(w, r, &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
				msg: fmt.Sprintf("too many wrong tokens from this address: try again in %d s", secs)})
			return nil
		}
		a.log.Warn("httpapi: a wrong token", "remote", addr, "method", r.Method, "path", r.URL.Path)
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="delayq"`)
	a.writeError(w, r, &apiError{status: http.StatusUnauthorized, code: codeUnauthenticated,
		msg: "this server needs an API token: Authorization: Bearer <token>"})
	return nil
}

// permit serves r with next when its principal may do op on the topic its path names, and
// refuses it with 403 permission_denied, naming the token and what it may not do, otherwise.
func (a *api) permit(op access.Op, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := access.PrincipalOf(r.Context()).Allowed(op, r.PathValue("topic")); err != nil {
			a.writeError(w, r, permissionDenied(err))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// permissionDenied is the 403 of a token that may not do what it asked (access.Allowed's err).
func permissionDenied(err error) error {
	return &apiError{status: http.StatusForbidden, code: codePermission, msg: err.Error()}
}
