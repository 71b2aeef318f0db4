package dashboard

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
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
	Who string `json:"who"` // "anonymous", "token:<fingerprint>", or "" before a login
	Exp int64  `json:"exp"` // Unix seconds
}

// sessions makes and checks session cookies and CSRF tokens.
type sessions struct {
	key    []byte
	tokens map[string][sha256.Size]byte // fingerprint -> SHA-256 of the token
}

// newSessions returns the session keeper for tokens. With tokens, cookies are signed with a key
// derived from them, so that every server given the same tokens, in any order, accepts the same
// sessions and removing a token ends the sessions it opened; without, with a key of this
// process's own.
func newSessions(tokens []string) (*sessions, error) {
	s := &sessions{tokens: map[string][sha256.Size]byte{}}
	mac := hmac.New(sha256.New, []byte("delayq dashboard sessions"))
	var sums [][]byte
	for i, tok := range tokens {
		if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
			return nil, fmt.Errorf("dashboard: token %d is empty or has white space", i)
		}
		sum := sha256.Sum256([]byte(tok))
		s.tokens[fingerprint(sum)] = sum
		sums = append(sums, sum[:])
	}
	slices.SortFunc(sums, bytes.Compare)
	for _, sum := range slices.CompactFunc(sums, bytes.Equal) {
		mac.Write(sum)
	}
	if len(tokens) == 0 {
		mac.Write([]byte(randomID()))
	}
	s.key = mac.Sum(nil)
	return s, nil
}

// fingerprint names a token in logs without giving it away: the first 8 hex digits of its
// SHA-256, which `printf %s "$TOKEN" | sha256sum` shows.
func fingerprint(sum [sha256.Size]byte) string { return "token:" + hex.EncodeToString(sum[:4]) }

func (s *sessions) open() bool { return len(s.tokens) == 0 }

// login returns who token is, or false when it is none of the tokens. Every token is compared
// in constant time.
func (s *sessions) login(token string) (string, bool) {
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	who := ""
	for name, want := range s.tokens {
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			who = name
		}
	}
	return who, who != ""
}

func randomID() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *sessions) sign(payload string) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// read returns r's session, or false when it has none that readValue accepts.
func (s *sessions) read(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	return s.readValue(c.Value)
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
	if _, known := s.tokens[ses.Who]; ses.Who != "" && ses.Who != anonymous && !known {
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
