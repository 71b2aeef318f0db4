package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
)

// view is what every page template gets besides its own data.
type view struct {
	Who      string // who is logged in; "anonymous" on an open dashboard
	CSRF     string // the session's CSRF token, for every form
	Open     bool   // no tokens: there is nothing to log out of
	ReadOnly bool   // actions are hidden
	History  bool   // the job history is archived: the header links its search
	Title    string
	Data     any

	principal *access.Principal // the token's; nil on an open dashboard
}

// Can reports whether the page may offer an action of kind op ("produce", "consume",
// "operate") on topic ("" for none): the dashboard is not read-only and the session's token
// may. The server checks again when the action comes.
func (v *view) Can(op, topic string) bool {
	if v.ReadOnly {
		return false
	}
	ops := map[string]access.Op{"produce": access.Produce, "consume": access.Consume, "operate": access.Operate}
	o, ok := ops[op]
	return ok && v.principal.Allowed(o, topic) == nil
}

// pageFunc serves one page or action for a session that may see it.
type pageFunc func(d *Dashboard, w http.ResponseWriter, r *http.Request, v *view) error

// httpError is an error shown with its status and text.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

var (
	errReadOnly = &httpError{http.StatusForbidden, "this dashboard is read-only (--dashboard-read-only)"}
	errLogin    = &httpError{http.StatusForbidden, "log in first"}
)

// page wraps h with the session checks: without a session a page redirects to /login (an
// action is refused); a session whose token may not do op(r) on the topic is refused; every
// POST needs the session's CSRF token, and is refused on a read-only dashboard.
func (d *Dashboard) page(op func(*http.Request) access.Op, h pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ses, ok, err := d.auth.read(r, d.timeout)
		if err != nil {
			d.fail(w, r, nil, err)
			return
		}
		if !ok && d.auth.open() {
			ses, ok = d.auth.write(w, r, anonymous), true
		}
		if !ok || ses.Who == "" {
			if r.Method != http.MethodPost {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			d.fail(w, r, nil, errLogin)
			return
		}
		p := d.auth.principal(ses)
		v := &view{Who: d.who(ses), CSRF: d.auth.csrfToken(ses), Open: d.auth.open(), ReadOnly: d.readOnly, History: d.archive != nil, principal: p}
		v.ReadOnly = v.ReadOnly || (p != nil && p.Role == access.Reader)
		if err := p.Allowed(op(r), r.PathValue("topic")); err != nil {
			d.fail(w, r, v, &httpError{http.StatusForbidden, err.Error() + " on this dashboard"})
			return
		}
		if r.Method == http.MethodPost {
			if err := d.checkAction(r, ses); err != nil {
				d.fail(w, r, v, err)
				return
			}
		}
		if err := h(d, w, r, v); err != nil {
			d.fail(w, r, v, err)
		}
	})
}

// checkAction refuses an action on a read-only dashboard or without the CSRF token.
func (d *Dashboard) checkAction(r *http.Request, ses session) error {
	if d.readOnly {
		return errReadOnly
	}
	if err := readForm(r, 1<<20); err != nil {
		return err
	}
	if err := d.auth.checkCSRF(r, ses); err != nil {
		return &httpError{http.StatusForbidden, err.Error()}
	}
	return nil
}

// maxFormFields is how many fields a form may have: net/url's limit, past which it reads none.
const maxFormFields = 10000

// readForm reads r's form, of at most limit bytes, and refuses one over the limits saying so:
// left unread, it would be refused for the CSRF token it seems to lack.
func readForm(r *http.Request, limit int64) error {
	r.Body = http.MaxBytesReader(nil, r.Body, limit)
	err := r.ParseForm()
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &mbe):
		return &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("the form is over the limit of %d bytes", limit)}
	}
	return &httpError{http.StatusBadRequest, fmt.Sprintf("the form cannot be read (%v): a form has at most %d fields", err, maxFormFields)}
}

// fail shows err on the error page, with the status it maps to.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, v *view, err error) {
	status, msg := statusOf(err)
	if status == http.StatusInternalServerError {
		d.log.Error("dashboard: serving a page", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if v == nil {
		v = &view{Open: d.auth.open(), ReadOnly: d.readOnly}
	}
	v.Title, v.Data = http.StatusText(status), msg
	d.render(w, status, "error", v)
}

// statusOf maps an error to the status and text a page shows.
func statusOf(err error) (int, string) {
	var he *httpError
	var nf *delayq.NotFoundError
	var ne *delayq.NotEmptyError
	var done *delayq.DoneError
	switch {
	case errors.As(err, &he):
		return he.status, he.msg
	case errors.As(err, &nf):
		return http.StatusNotFound, nf.Message()
	case errors.As(err, &done):
		return http.StatusNotFound, done.Message()
	case errors.As(err, &ne):
		return http.StatusConflict, ne.Message()
	case errors.Is(err, delayq.ErrNotFound):
		return http.StatusNotFound, "not found"
	case errors.Is(err, delayq.ErrInvalid):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, delayq.ErrWrongState):
		return http.StatusConflict, "the job is reserved or dead: only a delayed or ready job can be rescheduled"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "the store did not answer in time"
	}
	return http.StatusInternalServerError, "internal error: see the server's log"
}

// pageBudget bounds the bytes of one page. Each part of a page is bounded on its own (100
// topics, 50 jobs, a body's first shownBytes, ...), so that no page comes near it; render
// enforces it all the same, so that what a page builds in memory stays bounded whatever it
// is given.
const pageBudget = 4 << 20

// errOverBudget stops a page that grows past pageBudget.
var errOverBudget = errors.New("the page is over its budget")

// budgetBuffer is a buffer that refuses to grow past limit bytes.
type budgetBuffer struct {
	bytes.Buffer
	limit int
}

func (b *budgetBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		return 0, errOverBudget
	}
	return b.Buffer.Write(p)
}

// render writes template name with v, or an error when the template fails, or grows past
// pageBudget, before anything was written.
func (d *Dashboard) render(w http.ResponseWriter, status int, name string, v any) {
	buf := budgetBuffer{limit: pageBudget}
	if err := pages.ExecuteTemplate(&buf, name, v); err != nil {
		d.log.Error("dashboard: rendering a page", "template", name, "err", err)
		http.Error(w, "internal error: see the server's log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
