package dashboard

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/testwait"
)

// sessionCookieOf returns the session cookie a response set, or nil.
func sessionCookieOf(a answer) *http.Cookie {
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	return nil
}

// login logs s's browser in with token and returns the session cookie the login set.
func (s *site) login(token string) *http.Cookie {
	s.t.Helper()
	c := sessionCookieOf(s.post("/login", url.Values{csrfField: {s.csrf("/login")}, "token": {token}}))
	if c == nil {
		s.t.Fatal("no session after the login")
	}
	return c
}

// startPeer starts another dashboard on s's Redis with s's tokens, a second server of the same
// deployment, and returns its URL.
func (s *site) startPeer() string {
	s.t.Helper()
	peer, err := New(Config{Client: s.client, Tokens: s.tokens, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		s.t.Fatal(err)
	}
	srv := httptest.NewServer(peer)
	s.t.Cleanup(srv.Close)
	return srv.URL
}

// sendWithCookie sends a form to target from a new browser that carries only cookie: a copy
// of a session, as someone who took it would send it.
func sendWithCookie(t testing.TB, cookie *http.Cookie, method, target string, form url.Values) answer {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(cookie)
	resp, err := newBrowser(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return answer{status: resp.StatusCode, header: resp.Header}
}

func TestLoginAndLogout(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.Tokens = []string{"first-token", "second-token"} })
	s.enqueue("t", delayq.Spec{ID: "j"})
	for _, path := range []string{"/", "/topics/t", "/topics/t/jobs/j", "/search?q=j", "/overview/topics"} {
		a := s.get(path)
		if a.status != http.StatusSeeOther || !strings.HasPrefix(a.header.Get("Location"), "/login?next=") {
			t.Errorf("GET %s without a session: %d %q", path, a.status, a.header.Get("Location"))
		}
	}
	wantStatus(t, "an action without a session", s.post("/topics/t/jobs/j/cancel", url.Values{"confirm": {"yes"}}), http.StatusForbidden)
	wantStatus(t, "the API without a token", s.get("/v1/topics"), http.StatusUnauthorized)

	token := s.csrf("/login?next=/topics/t")
	wantStatus(t, "login without CSRF", s.post("/login", url.Values{"token": {"second-token"}}), http.StatusForbidden)
	bad := s.post("/login", url.Values{csrfField: {token}, "token": {"guess"}, "next": {"/topics/t"}})
	if !strings.HasPrefix(bad.header.Get("Location"), "/login?failed=1") {
		t.Fatalf("a wrong token: %d %q", bad.status, bad.header.Get("Location"))
	}
	good := s.post("/login", url.Values{csrfField: {token}, "token": {"second-token"}, "next": {"/topics/t"}})
	c := sessionCookieOf(good)
	if good.header.Get("Location") != "/topics/t" || c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure {
		t.Fatalf("login: %q, cookie %+v", good.header.Get("Location"), c)
	}
	page := s.get("/topics/t")
	wantStatus(t, "a page with a session", page, http.StatusOK)
	if !strings.Contains(page.body, "token:") || !strings.Contains(page.body, `id="logout"`) {
		t.Errorf("the page does not say who is logged in:\n%s", page.body)
	}
	wantStatus(t, "logout without CSRF", s.post("/logout", nil), http.StatusForbidden)
	out := s.post("/logout", url.Values{csrfField: {s.csrf("/")}})
	if c := sessionCookieOf(out); c == nil || c.MaxAge >= 0 || out.header.Get("Location") != "/login" {
		t.Fatalf("logout: %q, cookie %+v", out.header.Get("Location"), c)
	}
	wantStatus(t, "after logout", s.get("/"), http.StatusSeeOther)
}

func TestSessionCookieIsSecureOverTLS(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.Tokens = []string{"tok"} })
	req, _ := http.NewRequest(http.MethodGet, s.url+"/login", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	if c := sessionCookieOf(s.do(req)); c == nil || !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("behind an HTTPS proxy: cookie %+v", c)
	}
}

// testSessions returns a session keeper of tokens whose signing key is key, without Redis:
// for readValue and encode alone.
func testSessions(t *testing.T, key string, tokens ...string) *sessions {
	t.Helper()
	admins, err := access.Admins(tokens)
	if err != nil {
		t.Fatal(err)
	}
	s := newSessions(access.NewKeyring(admins), nil)
	k := []byte(key)
	s.key.Store(&k)
	return s
}

func TestSessionsRefuseForgeries(t *testing.T) {
	t.Parallel()
	auth := testSessions(t, "key", "tok")
	rec := &responseRecorder{header: http.Header{}}
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	who := auth.login("tok").Fingerprint()
	auth.write(rec, r, who)
	good := sessionCookieOf(answer{header: rec.header})
	payload, sig, _ := strings.Cut(good.Value, ".")
	other := testSessions(t, "another key", "tok")
	for name, value := range map[string]string{
		"good":          good.Value,
		"bad signature": payload + "." + sig[:len(sig)-2] + "xx",
		"other server":  payload + "." + other.sign(payload),
		"no signature":  payload,
	} {
		ses, ok := auth.readValue(value)
		if ok != (name == "good") || (ok && ses.Who != who) {
			t.Errorf("%s: readValue = %+v, %v", name, ses, ok)
		}
	}
	ses := session{ID: "x", Who: who, Exp: time.Now().Add(-time.Second).Unix()}
	if _, ok := auth.readValue(auth.encode(ses)); ok {
		t.Error("an expired session is accepted")
	}
	if _, ok := testSessions(t, "key", "another-token").readValue(good.Value); ok {
		t.Error("a session of a token the server no longer has is accepted")
	}
}

// Logging out ends the session on every server of the deployment: a copy of its cookie, sent
// to this server or another on the same Redis, opens nothing and changes nothing.
func TestLogoutEndsTheSessionOnEveryServer(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.Tokens = []string{"right-token"} })
	s.enqueue("t", delayq.Spec{ID: "j", Delay: time.Hour})
	other := s.startPeer()
	copied := s.login("right-token")
	csrf := s.csrf("/")
	withCopy := func(base, method, path string, form url.Values) answer {
		return sendWithCookie(t, copied, method, base+path, form)
	}
	wantStatus(t, "the copy on the other server before the logout", withCopy(other, "GET", "/topics/t", nil), http.StatusOK)
	wantStatus(t, "logout", s.post("/logout", url.Values{csrfField: {csrf}}), http.StatusSeeOther)
	for _, base := range []string{s.url, other} {
		if a := withCopy(base, "GET", "/topics/t", nil); a.status != http.StatusSeeOther || !strings.HasPrefix(a.header.Get("Location"), "/login") {
			t.Errorf("a copy of the logged-out cookie: %d %q, want a redirect to /login", a.status, a.header.Get("Location"))
		}
		a := withCopy(base, "POST", "/topics/t/pause", url.Values{csrfField: {csrf}, "confirm": {"yes"}})
		wantStatus(t, "an action with a copy of the logged-out cookie", a, http.StatusForbidden)
	}
	if st, err := s.client.Stats(context.Background(), "t"); err != nil || st.Paused {
		t.Errorf("the topic: %+v, %v; want it not paused", st, err)
	}
}

type responseRecorder struct{ header http.Header }

func (r *responseRecorder) Header() http.Header         { return r.header }
func (r *responseRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *responseRecorder) WriteHeader(int)             {}

func TestReadOnlyHidesAndRefusesActions(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.ReadOnly = true })
	s.enqueue("t", delayq.Spec{ID: "j", Delay: time.Hour})
	s.bury("t", "d")
	for _, path := range []string{"/topics/t/jobs/j", "/topics/t/jobs/d", "/topics/t?state=dead"} {
		page := s.get(path)
		for _, action := range []string{`id="cancel"`, `id="run-now"`, `id="requeue"`, `id="delete"`, `id="requeue-selected"`, `name="id"`} {
			if strings.Contains(page.body, action) {
				t.Errorf("%s shows %s on a read-only dashboard", path, action)
			}
		}
	}
	token := s.csrf("/")
	for _, path := range []string{"/topics/t/jobs/j/cancel", "/topics/t/jobs/d/requeue", "/topics/t/dead/delete"} {
		a := s.post(path, url.Values{csrfField: {token}, "confirm": {"yes"}, "all": {"yes"}})
		wantStatus(t, path, a, http.StatusForbidden)
		if !strings.Contains(a.body, "read-only") {
			t.Errorf("%s: the refusal does not say why", path)
		}
	}
	if s.state("t", "j") != "delayed" || s.state("t", "d") != "dead" {
		t.Errorf("a read-only dashboard changed jobs: %s, %s", s.state("t", "j"), s.state("t", "d"))
	}
}

func TestLoginGoesOnlyToThisServer(t *testing.T) {
	t.Parallel()
	for next, want := range map[string]string{
		"/topics/t?state=dead": "/topics/t?state=dead",
		"//evil.example/":      "/",
		"https://evil.example": "/",
		`/\evil.example`:       "/",
		"/\t/evil.example":     "/", // a browser drops the tab: //evil.example
		"/\n/evil.example":     "/",
		"/\x00/evil.example":   "/",
		"":                     "/",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

// browserOf returns s with a browser of its own, logged in with token.
func (s *site) browserOf(token string) *site {
	s.t.Helper()
	b := *s
	b.http = newBrowser(s.t.(*testing.T))
	a := b.post("/login", url.Values{csrfField: {b.csrf("/login")}, "token": {token}})
	if sessionCookieOf(a) == nil {
		s.t.Fatalf("login: %d %q", a.status, a.header.Get("Location"))
	}
	return &b
}

// The dashboard offers each token only the actions its role allows on its topics, and refuses
// the others, and the pages of other topics, with a reason that names the token.
func TestDashboardOffersAndAllowsOnlyWhatTheRoleMay(t *testing.T) {
	t.Parallel()
	ps, err := access.ParseFile([]byte(`{"tokens": [
		{"name": "on-call", "token": "reader-token-000000001", "role": "reader"},
		{"name": "checkout", "token": "producer-token-0000001", "role": "producer", "topics": ["t"]},
		{"name": "workers", "token": "consumer-token-0000001", "role": "consumer", "topics": ["t"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := newSite(t, func(c *Config) { c.Keyring = access.NewKeyring(ps) })
	s.enqueue("t", delayq.Spec{ID: "j", Delay: time.Hour})
	s.bury("t", "d")
	s.enqueue("u", delayq.Spec{ID: "x", Delay: time.Hour})
	shows := func(b *site, path, id string, want bool) {
		t.Helper()
		page := b.get(path)
		wantStatus(t, path, page, http.StatusOK)
		if got := strings.Contains(page.body, `id="`+id+`"`); got != want {
			t.Errorf("%s shows %s: %v, want %v", path, id, got, want)
		}
	}
	refused := func(b *site, method, path, who string) {
		t.Helper()
		var a answer
		if method == "GET" {
			a = b.get(path)
		} else {
			a = b.post(path, url.Values{csrfField: {b.csrf("/topics/t")}, "confirm": {"yes"}, "all": {"yes"}})
		}
		wantStatus(t, method+" "+path, a, http.StatusForbidden)
		if !strings.Contains(a.body, who) || strings.Contains(a.body, "-token-") {
			t.Errorf("%s %s: the refusal does not name %s, or shows a token:\n%s", method, path, who, a.body)
		}
	}

	reader := s.browserOf("reader-token-000000001")
	wantStatus(t, "the overview as a reader", reader.get("/"), http.StatusOK)
	shows(reader, "/topics/t/jobs/j", "cancel", false)
	shows(reader, "/topics/t", "topic-pause", false)
	refused(reader, "POST", "/topics/t/jobs/j/cancel", "on-call")
	refused(reader, "POST", "/topics/t/pause", "on-call")

	producer := s.browserOf("producer-token-0000001")
	refused(producer, "GET", "/", "checkout")
	refused(producer, "GET", "/topics/u/jobs/x", "checkout")
	shows(producer, "/topics/t/jobs/j", "cancel", true)
	shows(producer, "/topics/t/jobs/d", "requeue", false)
	shows(producer, "/topics/t", "topic-pause", false)
	refused(producer, "POST", "/topics/t/jobs/d/requeue", "checkout")
	refused(producer, "POST", "/topics/t/pause", "checkout")
	refused(producer, "POST", "/topics/u/jobs/x/cancel", "checkout")

	consumer := s.browserOf("consumer-token-0000001")
	shows(consumer, "/topics/t/jobs/d", "requeue", true)
	shows(consumer, "/topics/t/jobs/j", "cancel", false)
	refused(consumer, "POST", "/topics/t/jobs/j/cancel", "workers")
	refused(consumer, "POST", "/topics/t/pause", "workers")
	if a := consumer.post("/topics/t/dead/requeue", url.Values{csrfField: {consumer.csrf("/topics/t")}, "confirm": {"yes"}, "id": {"d"}}); a.status != http.StatusSeeOther {
		t.Errorf("a consumer's requeue on its topic: %d, want 303", a.status)
	}

	if s.state("t", "j") != "delayed" || s.state("u", "x") != "delayed" {
		t.Errorf("refused actions changed jobs: j %s, x %s", s.state("t", "j"), s.state("u", "x"))
	}
	if st, err := s.client.Stats(context.Background(), "t"); err != nil || st.Paused {
		t.Errorf("the topic: %+v, %v; want it not paused", st, err)
	}
}

// Deleting the signing key from Redis logs everyone out, as docs/keys.md says: every server,
// this one and another on the same Redis, soon refuses the sessions it signed.
func TestDeletingTheSigningKeyEndsEverySession(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.Tokens = []string{"right-token-0123456789"} })
	other := s.startPeer()
	cookie := s.login("right-token-0123456789")
	status := func(base string) int { return sendWithCookie(t, cookie, "GET", base+"/schedules", nil).status }
	for _, base := range []string{s.url, other} {
		if got := status(base); got != http.StatusOK {
			t.Fatalf("the session before the key is deleted: %d, want 200", got)
		}
	}
	if err := s.dash.redis.Del(context.Background(), keys.DashboardKey("delayq")).Err(); err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{s.url, other} {
		testwait.For(t, 10*time.Second, "the session refused once the key is deleted", func() bool {
			return status(base) == http.StatusSeeOther
		})
	}
}
