package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/internal/store"
)

// sessionCookie holds a signed session: who the browser is, and the id its CSRF token is made
// from.
const sessionCookie = "delayq_session"

// sessionTTL is how long a session lasts; then the operator logs in again.
const sessionTTL = 12 * time.Hour

// anonymous is who acts on a dashboard without tokens.
const anonymous = "anonymous"

// session is what a session cookie says.
type session struct {
	ID  string `json:"sid"`
	Who string `json:"who"` // "anonymous", the token's fingerprint ("token:<8 hex digits>"), or "" before a login
	Exp int64  `json:"exp"` // Unix seconds
}

// loggedIn reports whether ses is a token's, whose logout every server must know of.
func (ses session) loggedIn() bool { return ses.Who != "" && ses.Who != anonymous }

// sessions makes and checks session cookies and CSRF tokens.
type sessions struct {
	keys  *access.Keyring
	store *store.Store
	key   atomic.Pointer[[]byte] // signs cookies and CSRF tokens; set by load
	keyAt atomic.Int64           // when load last read key from Redis, in Unix nanoseconds
	mu    sync.Mutex             // one load at a time
}

// keyRefresh is how long a server signs with the key it read before reading it again, so that
// deleting the key from Redis logs everyone out of every server within it.
const keyRefresh = time.Second

// newSessions returns the session keeper of the tokens in keys, which keeps its signing key
// and the sessions that logged out in st's Redis, so that every server of a deployment
// accepts the same sessions and refuses those that logged out on any of them.
func newSessions(keys *access.Keyring, st *store.Store) *sessions {
	return &sessions{keys: keys, store: st}
}

// load reads the signing key from Redis, making it there first if need be, when it was not
// read in the last keyRefresh: a key deleted from Redis (to log everyone out) is replaced.
func (s *sessions) load(ctx context.Context) error {
	fresh := func() bool { return s.key.Load() != nil && time.Since(time.Unix(0, s.keyAt.Load())) < keyRefresh }
	if fresh() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if fresh() {
		return nil
	}
	key, err := s.store.DashboardKey(ctx)
	if err != nil {
		return err
	}
	s.key.Store(&key)
	s.keyAt.Store(time.Now().UnixNano())
	return nil
}

func (s *sessions) open() bool { return s.keys.Open() }

// login returns the principal of token, or nil when it is none of the tokens.
func (s *sessions) login(token string) *access.Principal { return s.keys.Lookup(token) }

// principal returns the principal of a logged-in session, nil for any other.
func (s *sessions) principal(ses session) *access.Principal {
	if !ses.loggedIn() {
		return nil
	}
	return s.keys.ByFingerprint(ses.Who)
}

func randomID() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *sessions) sign(payload string) string {
	mac := hmac.New(sha256.New, *s.key.Load())
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// read returns r's session, or false when it has none that readValue accepts or it logged
// out; the error is Redis's, when it could not say.
func (s *sessions) read(r *http.Request, timeout time.Duration) (session, bool, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false, nil
	}
	ses, ok := s.readValue(c.Value)
	if !ok || !ses.loggedIn() {
		return ses, ok, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	revoked, err := s.store.SessionRevoked(ctx, ses.ID)
	if err != nil {
		return session{}, false, err
	}
	return ses, !revoked, nil
}

// revoke ends ses on every server.
func (s *sessions) revoke(ctx context.Context, ses session) error {
	if !ses.loggedIn() {
		return nil
	}
	return s.store.RevokeSession(ctx, ses.ID, time.Unix(ses.Exp, 0))
}

// readValue returns the session of a cookie value when it is signed, unexpired and, for a
// logged-in one, of a token still configured.
func (s *sessions) readValue(value string) (session, bool) {
	payload, sig, ok := strings.Cut(value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(s.sign(payload))) {
		return session{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	var ses session
	if err != nil || json.Unmarshal(raw, &ses) != nil || time.Now().Unix() >= ses.Exp || ses.ID == "" {
		return session{}, false
	}
	if ses.loggedIn() && s.principal(ses) == nil {
		return session{}, false
	}
	if ses.Who == anonymous && !s.open() {
		return session{}, false
	}
	return ses, true
}

// encode returns the signed cookie value of ses.
func (s *sessions) encode(ses session) string {
	raw, _ := json.Marshal(ses) // a struct of strings and an int always marshals
	payload := base64.RawURLEncoding.EncodeToString(raw)
	return payload + "." + s.sign(payload)
}

// write sets a new session for who on w.
func (s *sessions) write(w http.ResponseWriter, r *http.Request, who string) session {
	ses := session{ID: randomID(), Who: who, Exp: time.Now().Add(sessionTTL).Unix()}
	http.SetCookie(w, s.cookie(r, s.encode(ses), int(sessionTTL.Seconds())))
	return ses
}

// clear removes the session cookie.
func (s *sessions) clear(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, s.cookie(r, "", -1))
}

// cookie is the session cookie: HttpOnly, SameSite=Strict, and Secure whenever the browser
// reached the server over HTTPS, directly or through a proxy that says so. Over plain HTTP it
// cannot be Secure (the browser would not send it back), and the token itself travelled in the
// clear anyway: serve the dashboard over HTTPS, or on loopback only.
func (s *sessions) cookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: sessionCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r),
	}
}

// overTLS reports whether the browser reached the server over HTTPS.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// csrfField is the form field, and csrfHeader the header, that carry the CSRF token.
const (
	csrfField  = "csrf_token"
	csrfHeader = "X-CSRF-Token"
)

// csrfToken is the CSRF token of a session: a MAC of its id, which only the server can make and
// only a page of the session shows.
func (s *sessions) csrfToken(ses session) string { return s.sign("csrf\x00" + ses.ID) }

var errCSRF = errors.New("this form is missing its CSRF token or it is not this session's: reload the page and try again")

// checkCSRF reports whether r carries ses's CSRF token, in the form or the header.
func (s *sessions) checkCSRF(r *http.Request, ses session) error {
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	if got == "" || !hmac.Equal([]byte(got), []byte(s.csrfToken(ses))) {
		return errCSRF
	}
	return nil
}
