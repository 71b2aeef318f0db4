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

	"github.com/delayq/delayq/cmd/delayq/internal/access"
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
	ses, ok, err := d.auth.read(r, d.timeout)
	if err != nil {
		d.fail(w, r, nil, err)
		return
	}
	if !ok {
		ses = d.auth.write(w, r, "")
	}
	v := &view{Who: ses.Who, CSRF: d.auth.csrfToken(ses), Title: "Log in",
		Data: loginData{Next: safeNext(r.URL.Query().Get("next")), Failed: r.URL.Query().Has("failed")}}
	d.render(w, http.StatusOK, "login", v)
}

// login is POST /login: a right token with the CSRF token of the login page opens a new
// session for that token and goes on to the page asked for. A right token is never refused;
// after too many wrong ones from an address, its wrong ones are refused unread (429), and a
// form without its CSRF token is refused before the token is read, counting as no try.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	ses, ok, err := d.auth.read(r, d.timeout)
	if err != nil {
		d.fail(w, r, nil, err)
		return
	}
	if d.auth.open() || !ok {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
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
	p := d.auth.login(r.PostFormValue("token"))
	if p == nil {
		if wait := d.logins.Failed(access.ClientAddr(r)); wait > 0 {
			d.tooManyLogins(w, r, wait)
			return
		}
		d.log.Warn("dashboard: a login with a wrong token", "remote", r.RemoteAddr)
		http.Redirect(w, r, "/login?failed=1&next="+url.QueryEscape(next), http.StatusSeeOther)
		return
	}
	if next == "/" && p.Allowed(access.Read, "") != nil {
		next = landing(p)
	}
	d.auth.write(w, r, p.Fingerprint())
	d.log.Info("dashboard: logged in", "who", p.Name, "role", p.Role, "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// tooManyLogins refuses a wrong token from an address that sent too many, saying when it may
// try again.
func (d *Dashboard) tooManyLogins(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	secs := int(math.Ceil(wait.Seconds()))
	d.log.Warn("dashboard: a login refused after too many wrong tokens", "remote", r.RemoteAddr, "retry_after", secs)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	d.fail(w, r, nil, &httpError{http.StatusTooManyRequests,
		fmt.Sprintf("too many wrong tokens from this address: try again in %d s", secs)})
}

// logout is POST /logout: given its CSRF token, it ends the session on every server, not only
// in this browser, so that a copy of its cookie is of no more use.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	ses, ok, err := d.auth.read(r, d.timeout)
	if err != nil {
		d.fail(w, r, nil, err)
		return
	}
	if ok {
		if err := readForm(r, 64<<10); err != nil {
			d.fail(w, r, nil, err)
			return
		}
		if err := d.auth.checkCSRF(r, ses); err != nil {
			d.fail(w, r, nil, &httpError{http.StatusForbidden, err.Error()})
			return
		}
		ctx, cancel := d.storeContext(r)
		err := d.auth.revoke(ctx, ses)
		cancel()
		if err != nil {
			d.fail(w, r, nil, err)
			return
		}
		d.log.Info("dashboard: logged out", "who", d.who(ses))
	}
	d.auth.clear(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// who names ses's principal in logs and on pages: the token's name, or its fingerprint.
func (d *Dashboard) who(ses session) string {
	if p := d.auth.principal(ses); p != nil {
		return p.Name
	}
	return ses.Who
}

// landing is where a token that may not see the overview (a producer's, a consumer's) starts:
// the page of its first topic named in full, or the overview, which says what it may not do.
func landing(p *access.Principal) string {
	for _, t := range p.Topics {
		if !strings.HasSuffix(t, "*") {
			return topicPath(t)
		}
	}
	return "/"
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
