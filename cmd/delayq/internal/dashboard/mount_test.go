package dashboard

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// "/" is the dashboard's overview and also a path of the API's document: a method it does not
// serve gets the API's 405, with Allow and the error body.
func TestRootAnswersOtherMethodsAsTheAPI(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.Tokens = []string{"tok"} })
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		req, err := http.NewRequest(method, s.url+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		a := s.do(req)
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		err = json.Unmarshal([]byte(a.body), &body)
		if a.status != http.StatusMethodNotAllowed || a.header.Get("Allow") == "" || err != nil || body.Error.Code != "method_not_allowed" {
			t.Errorf("%s /: %d, Allow %q, body %q", method, a.status, a.header.Get("Allow"), a.body)
		}
	}
}

// Without a session, HEAD on a page is sent to the login page as GET is, not refused.
func TestHeadWithoutASessionGoesToTheLogin(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.Tokens = []string{"tok"} })
	for _, path := range []string{"/", "/topics/t", "/search?q=j"} {
		req, err := http.NewRequest(http.MethodHead, s.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a := s.do(req); a.status != http.StatusSeeOther || !strings.HasPrefix(a.header.Get("Location"), "/login?next=") {
			t.Errorf("HEAD %s: %d %q", path, a.status, a.header.Get("Location"))
		}
	}
}
