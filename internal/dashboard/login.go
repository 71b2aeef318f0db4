package dashboard

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// loginData is the login page's.
type loginData struct {
	Next   string
	Failed bool
}

// loginPage is GET /login: a form for a token. It gives the browser a session that is not yet
// logged in, whose CSRF token the form carries.
func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	if d.auth.open() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	ses, ok := d.auth.read(r)
	if !ok {
		ses = d.auth.write(w, r, "")
	}
	v := &view{Who: ses.Who, CSRF: d.auth.csrfToken(ses), Title: "Log in",
		Data: loginData{Next: safeNext(r.URL.Query().Get("next")), Failed: r.URL.Query().Has("failed")}}
	d.render(w, http.StatusOK, "login", v)
}

// login is POST /login: a right token with the CSRF token of the login page opens a new
// session for that token and goes on to the page asked for.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	ses, ok := d.auth.read(r)
	if d.auth.open() || !ok {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	addr := clientAddr(r)
	if wait := d.logins.attempt(addr); wait > 0 {
		d.tooManyLogins(w, r, wait)
		return
	}
	if err := readForm(r, 64<<10); err != nil {
		d.fail(w, r, nil, err)
		return
	}
	if err := d.auth.checkCSRF(r, ses); err != nil {
		d.fail(w, r, nil, &httpError{http.StatusForbidden, err.Error()})
		return
	}
	next := safeNext(r.PostFormValue("next"))
	who, ok := d.auth.login(r.PostFormValue("token"))
	if !ok {
		d.log.Warn("dashboard: a login with a wrong token", "remote", r.RemoteAddr)
		http.Redirect(w, r, "/login?failed=1&next="+url.QueryEscape(next), http.StatusSeeOther)
		return
	}
	d.logins.succeeded(addr)
	d.auth.write(w, r, who)
	d.log.Info("dashboard: logged in", "who", who, "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// tooManyLogins refuses a login from an address that sent too many wrong tokens, saying when
// it may try again.
func (d *Dashboard) tooManyLogins(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	secs := int(math.Ceil(wait.Seconds()))
	d.log.Warn("dashboard: a login refused after too many wrong tokens", "remote", r.RemoteAddr, "retry_after", secs)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	d.fail(w, r, nil, &httpError{http.StatusTooManyRequests,
		fmt.Sprintf("too many wrong tokens from this address: try again in %d s", secs)})
}

// logout is POST /logout: it clears the session, given its CSRF token.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	if ses, ok := d.auth.read(r); ok {
		if err := readForm(r, 64<<10); err != nil {
			d.fail(w, r, nil, err)
			return
		}
		if err := d.auth.checkCSRF(r, ses); err != nil {
			d.fail(w, r, nil, &httpError{http.StatusForbidden, err.Error()})
			return
		}
		d.log.Info("dashboard: logged out", "who", ses.Who)
	}
	d.auth.clear(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect target on this server: a path, never "//host" or a URL. It refuses
// backslashes and control characters too: a browser reads a backslash as a slash and drops
// tabs and newlines from a URL, so "/\t/host" would take it to "//host".
func safeNext(next string) string {
	bad := func(r rune) bool { return r == '\\' || unicode.IsControl(r) }
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsFunc(next, bad) {
		return "/"
	}
	return next
}
