package webhook

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/delayq/delayq"

	"github.com/delayq/delayq/internal/testwait"
)

// TestDeliveriesMatchTheOpenAPICallback checks push deliveries against the delivery callback
// of the HTTP API's OpenAPI document: headers and body, with no field the document lacks.
func TestDeliveriesMatchTheOpenAPICallback(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../httpapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Closed, as the HTTP API's tests close the document's objects: a field the server sends
	// must be documented.
	doc.Components.Schemas["Delivery"].Value.AdditionalProperties.Has = openapi3.Ptr(false)
	enqueue := doc.Paths.Value("/v1/topics/{topic}/jobs").Post
	const expr = "{$request.body#/callback_url}"
	callback := enqueue.Callbacks["delivery"].Value.Value(expr)
	if callback == nil || callback.Post == nil {
		t.Fatalf("openapi.json has no POST %s callback on enqueue", expr)
	}
	route := &routers.Route{Spec: doc, Path: expr, PathItem: callback, Method: http.MethodPost, Operation: callback.Post}

	e := newEnv(t)
	rcv := newReceiver(t, e.rdb, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, s := range []delayq.Spec{
		{ID: "json", Body: []byte(`{"k": [1, null, "<&>"]}`), Format: delayq.FormatJSON},
		{ID: "binary", Body: []byte{0, 1, 0xff}, Format: delayq.FormatBinary},
		{ID: "none"},
	} {
		s.CallbackURL = rcv.url("/hook")
		e.enqueue(t, "contract", s)
	}
	e.start(t, Config{})
	testwait.For(t, 10*time.Second, "three deliveries", func() bool { return rcv.count() >= 3 })
	for _, d := range rcv.deliveries() {
		req, err := http.NewRequest(http.MethodPost, rcv.url(d.path), bytes.NewReader(d.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = d.header
		in := &openapi3filter.RequestValidationInput{Request: req, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("delivery %s does not match the document's callback: %v", d.body, err)
		}
	}
}
