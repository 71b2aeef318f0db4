package httpapi

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// The served document is a valid OpenAPI 3 document.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openAPIDoc)
	if err != nil {
		t.Fatalf("loading openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not valid OpenAPI 3: %v", err)
	}
}

// GET / is the dashboard of delayq server, and the document says so.
func TestOpenAPIDescribesTheDashboardAtRoot(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openAPIDoc)
	if err != nil {
		t.Fatalf("loading openapi.json: %v", err)
	}
	root := doc.Paths.Find("/")
	if root == nil || root.Get == nil {
		t.Fatal("the document has no GET /")
	}
	if s := root.Get.Summary; !strings.Contains(s, "web dashboard") || strings.Contains(s, "later") {
		t.Errorf("GET / summary = %q, want it to describe the web dashboard as served", s)
	}
}

// beyondSchema has the bad requests that the document accepts, and why: the server refuses
// them for what no schema can say, or what kin-openapi does not check.
var beyondSchema = map[string]string{
	"path id not utf-8":                  "a schema sees text, and the router reads invalid UTF-8 as U+FFFD",
	"json body over limit":               "the test server's body limit is smaller than the default",
	"base64 body over limit":             "the test server's body limit is smaller than the default",
	"request over limit":                 "a request's size is not a schema's",
	"batch request over limit":           "a request's size is not a schema's",
	"ack request over limit":             "a request's size is not a schema's",
	"run_at before 1970":                 "a time's range is not a schema's",
	"run_at year 1":                      "a time's range is not a schema's",
	"run_at beyond 10 years":             "the limit counts from the server's clock",
	"callback_url when push is disabled": "the server's configuration",
	"callback_url refused by check":      "the server's configuration",
	"trailing garbage":                   "JSON syntax: kin-openapi reads the first value",
	"two objects":                        "JSON syntax: kin-openapi reads the first value",
	"invalid UTF-8":                      "JSON syntax: kin-openapi reads invalid UTF-8 as U+FFFD",
	"repeated key":                       "a schema sees the decoded object, where a key is once",
	"repeated key in reserve":            "a schema sees the decoded object, where a key is once",
	"repeated header":                    "a schema sees the decoded object, where a key is once",
	"latin-1 charset":                    "kin-openapi matches media types without their parameters",
	"bad content type syntax":            "kin-openapi matches media types without their parameters",
	"reserve max float":                  "kin-openapi reads 2.0 as an integer, which OpenAPI 3.0's JSON Schema does not",
	"ack forged lease":                   "the state of the store",
	"ack a ready job":                    "the state of the store",
	"ack unknown job":                    "the state of the store",
	"nack forged lease":                  "the state of the store",
	"touch forged lease":                 "the state of the store",
	"release forged lease":               "the state of the store",
	"reschedule reserved":                "the state of the store",
	"reschedule dead":                    "the state of the store",
	"reschedule unknown":                 "the state of the store",
	"duplicate id":                       "the state of the store",
	"replace a reserved job":             "the state of the store",
	"replace a dead job":                 "the state of the store",
	"get unknown job":                    "the state of the store",
	"get job of unknown topic":           "the state of the store",
	"cancel unknown job":                 "the state of the store",
	"unknown topic":                      "the state of the store",

	"schedule cron of four fields":                    "a cron expression's meaning is not a schema's",
	"schedule cron field out of range":                "a cron expression's meaning is not a schema's",
	"schedule interval under 1 s":                     "a cron expression's meaning is not a schema's",
	"schedule interval in part seconds":               "a cron expression's meaning is not a schema's",
	"schedule cron never ticks":                       "a cron expression's meaning is not a schema's",
	"schedule end_at in the past":                     "a time's relation to now is not a schema's",
	"schedule end_at before the first tick":           "a cron expression's meaning is not a schema's",
	"schedule interval over ten years":                "a cron expression's meaning is not a schema's",
	"schedule start_at in the year 9999":              "a time's range is not a schema's",
	"schedule unknown time zone":                      "the time zone database",
	"schedule job body over limit":                    "the test server's body limit is smaller than the default",
	"schedule end before start":                       "a time's range is not a schema's",
	"get unknown schedule":                            "the state of the store",
	"delete unknown schedule":                         "the state of the store",
	"pause unknown schedule":                          "the state of the store",
	"resume unknown schedule":                         "the state of the store",
	"schedule job callback_url when push is disabled": "the server's configuration",
	"schedule job callback_url refused by check":      "the server's configuration",
	"resume unknown topic":                            "the state of the store",
	"lift limits of unknown topic":                    "the state of the store",
	"delete topic with jobs":                          "the state of the store",
	"delete unknown topic":                            "the state of the store",
}

// TestOpenAPIRefusesBadRequests checks that the document is as tight as the server: every
// request of badCases that the server refuses, the document refuses too (or has no operation
// for, when the server answers 404 for the path or 405), but those of beyondSchema, which it
// accepts.
func TestOpenAPIRefusesBadRequests(t *testing.T) {
	t.Parallel()
	ct, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range badCases {
		seen[c.name] = true
		ctype := c.ctype
		switch ctype {
		case "":
			ctype = "application/json"
		case "-":
			ctype = ""
		}
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(strings.ReplaceAll(c.body, "{lease}", "a-lease"))
		}
		req, err := http.NewRequest(c.method, "http://127.0.0.1"+c.path, body)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		want := "refused"
		switch {
		case c.status == http.StatusMethodNotAllowed || c.msg == "no route":
			want = "no operation"
		case beyondSchema[c.name] != "":
			want = "accepted"
		}
		got := "refused"
		var why error
		route, params, err := ct.findRoute(req)
		if err != nil {
			got = "no operation"
		} else {
			in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
			if why = openapi3filter.ValidateRequest(context.Background(), in); why == nil {
				got = "accepted"
			}
		}
		if got != want {
			t.Errorf("%s: %s %s %.80s: the document: %s (%v), want %s", c.name, c.method, c.path, c.body, got, why, want)
		}
	}
	for name := range beyondSchema {
		if !seen[name] {
			t.Errorf("beyondSchema names %q, which is not a bad case", name)
		}
	}
}
