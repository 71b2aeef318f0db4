package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The test servers' clients check every exchange against the served OpenAPI document, so that
// the document and the server cannot drift apart: every request must be one the document
// allows, unless the test sends it to be refused on purpose (env.badRequests), and every answer
// must be one the document allows, always.

// contract is the document as the checks read it.
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

// loadContract loads and validates the document once. The published document leaves its
// objects open, as the API promises new optional fields; the checks close every named object
// schema, so that a field the server sends must be documented.
var loadContract = sync.OnceValues(func() (*contract, error) {
	openapi3filter.RegisterBodyDecoder("text/html", func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(r)
		return string(b), err
	})
	doc, err := openapi3.NewLoader().LoadFromData(openAPIDoc)
	if err != nil {
		return nil, fmt.Errorf("loading openapi.json: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.json is not valid OpenAPI 3: %w", err)
	}
	closeObjects(doc)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &contract{doc: doc, router: router}, nil
})

// closeObjects makes every named schema that lists properties refuse any other property.
// Inline schemas are left as they are: they narrow a named one (an allOf branch that pins an
// error code) and must not refuse the properties it has.
func closeObjects(doc *openapi3.T) {
	for _, s := range doc.Components.Schemas {
		v := s.Value
		if len(v.Properties) > 0 && v.AdditionalProperties.Has == nil && v.AdditionalProperties.Schema == nil {
			v.AdditionalProperties.Has = openapi3.Ptr(false)
		}
	}
}

// offContractKey marks the context of a request sent outside the document on purpose.
type offContractKey struct{}

// contractTransport checks each exchange against the document and reports mismatches to t.
type contractTransport struct {
	t    testing.TB
	next http.RoundTripper
}

func withContract(t testing.TB, next http.RoundTripper) http.RoundTripper {
	t.Helper()
	if _, err := loadContract(); err != nil {
		t.Fatal(err)
	}
	return &contractTransport{t: t, next: next}
}

func (c *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err != nil {
		return resp, nil // the test sees the broken body itself
	}
	if err := checkExchange(req, reqBody, resp, respBody); err != nil {
		c.t.Errorf("contract: %s %s answered %d: %v\nrequest: %.300s\nanswer: %.300s", req.Method, req.URL.RequestURI(), resp.StatusCode, err, reqBody, respBody)
	}
	return resp, nil
}

// checkExchange reports how an exchange departs from the document, if it does.
func checkExchange(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	ct, err := loadContract()
	if err != nil {
		return err
	}
	probe := req.Clone(context.Background())
	probe.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := ct.findRoute(probe)
	if err != nil {
		return ct.checkOffRoute(probe, err, resp, respBody)
	}
	opts := &openapi3filter.Options{
		AuthenticationFunc:      openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus:   true,
		SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()},
	}
	in := &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route, Options: opts}
	if req.Context().Value(offContractKey{}) == nil {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			return fmt.Errorf("the request is not one the document allows (a test that sends it on purpose uses env.badRequests): %w", err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(respBody)), Options: opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("the answer is not one the document allows: %w", err)
	}
	return nil
}

// findRoute returns the document's operation for req and the values of its path parameters.
// The router matches the escaped path and leaves the values escaped; a value is what the path
// segment says once unescaped ("a%20b" is "a b"), as the server reads it.
func (ct *contract) findRoute(req *http.Request) (*routers.Route, map[string]string, error) {
	route, params, err := ct.router.FindRoute(req)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range params {
		if u, err := url.PathUnescape(v); err == nil {
			params[k] = u
		}
	}
	return route, params, nil
}

// checkOffRoute checks the answer to a request the document has no operation for: 404 for a
// path it does not have, 405 with the methods it has in Allow for a method it does not have on
// a path, or 401 for either where a token is needed; each with the error body.
func (ct *contract) checkOffRoute(req *http.Request, routeErr error, resp *http.Response, respBody []byte) error {
	want, code := http.StatusNotFound, codeNotFound
	if errors.Is(routeErr, routers.ErrMethodNotAllowed) {
		want, code = http.StatusMethodNotAllowed, codeMethodNotAllowed
	}
	if resp.StatusCode == http.StatusUnauthorized && (strings.HasPrefix(req.URL.Path, "/v1/") || req.URL.Path == "/metrics") {
		want, code = http.StatusUnauthorized, codeUnauthenticated
	}
	if resp.StatusCode != want {
		return fmt.Errorf("the document has no %s %s (%v): want %d", req.Method, req.URL.Path, routeErr, want)
	}
	if got := resp.Header.Get("Content-Type"); got != "application/json" {
		return fmt.Errorf("Content-Type %q, want application/json", got)
	}
	var body any
	if err := json.Unmarshal(respBody, &body); err != nil {
		return fmt.Errorf("the error body is not JSON: %w", err)
	}
	if err := ct.doc.Components.Schemas["Error"].Value.VisitJSON(body, openapi3.DisableSchemaErrorDetails()); err != nil {
		return fmt.Errorf("the error body is not an Error: %w", err)
	}
	if got := body.(map[string]any)["error"].(map[string]any)["code"]; got != code {
		return fmt.Errorf("error code %v, want %s", got, code)
	}
	if want == http.StatusMethodNotAllowed {
		var allowed []string
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			r := req.Clone(context.Background())
			r.Method = m
			if _, _, err := ct.router.FindRoute(r); err == nil {
				allowed = append(allowed, m)
			}
		}
		if got := allowHeader(resp.Header); !slices.Equal(got, allowed) {
			return fmt.Errorf("Allow lists %v; the document has %v on this path", got, allowed)
		}
	}
	return nil
}

// allowHeader returns the methods of an Allow header, sorted as checkOffRoute lists them,
// leaving out HEAD, which the server answers wherever it answers GET.
func allowHeader(h http.Header) []string {
	order := map[string]int{"GET": 0, "POST": 1, "PUT": 2, "PATCH": 3, "DELETE": 4}
	var out []string
	for _, v := range h.Values("Allow") {
		for _, m := range strings.Split(v, ",") {
			if m = strings.TrimSpace(m); m != "" && m != http.MethodHead {
				out = append(out, m)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		oa, ok := order[a]
		if !ok {
			oa = len(order)
		}
		ob, ok := order[b]
		if !ok {
			ob = len(order)
		}
		return oa - ob
	})
	return out
}
