package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"
)

// smallBytes is the request limit of endpoints whose bodies hold no job: reserve, ack, nack,
// touch, release and reschedule.
const smallBytes = 64 << 10

// readJSON reads r's body, one JSON object of at most limit bytes sent as application/json,
// into v. When optional, an empty body leaves v as it is.
func readJSON(w http.ResponseWriter, r *http.Request, limit int64, v any, optional bool) error {
	if optional && r.ContentLength == 0 {
		return nil
	}
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	if r.ContentLength > limit {
		return tooLarge(limit)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(limit)
	}
	if err != nil {
		return &apiError{status: http.StatusBadRequest, code: codeInvalid, msg: "reading the request body: " + err.Error()}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if optional {
			return nil
		}
		return invalidf("request body", "is empty; want a JSON object")
	}
	return decodeStrict(data, v)
}

func tooLarge(limit int64) error {
	return &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
		msg: fmt.Sprintf("the request body is over the limit of %d bytes", limit)}
}

// checkContentType accepts application/json, with parameters, and a charset only of UTF-8.
func checkContentType(ct string) error {
	bad := &apiError{status: http.StatusUnsupportedMediaType, code: codeMediaType,
		msg: fmt.Sprintf("Content-Type %q: send application/json", ct)}
	if ct == "" {
		return bad
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return bad
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return bad
	}
	return nil
}

// decodeStrict decodes data, which must be exactly one JSON object in UTF-8 with no fields
// that v lacks, no key twice in one object and field names in their exact case, into v.
func decodeStrict(data []byte, v any) error {
	if !utf8.Valid(data) {
		return invalidf("request body", "is not valid UTF-8")
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return invalidf("request body", "must be a JSON object")
	}
	plain, err := checkKeys(data, v)
	if err != nil {
		return err
	}
	if plain {
		if err := json.Unmarshal(data, v); err != nil {
			return decodeError(err)
		}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalidf("request body", "has data after the JSON object")
	}
	return nil
}

// decodeError turns a JSON decoding error into an invalid_argument naming the field.
func decodeError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return invalidf("request body", "malformed JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "request body"
		}
		return invalidf(field, "want %s, got %s", kindName(typ.Type), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return invalidf("request body", "malformed JSON: it ends too soon")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return invalidf("request body", "unknown field %s", name)
	}
	return invalidf("request body", "%s", strings.TrimPrefix(err.Error(), "json: "))
}

// kindName names the JSON type that values of t take.
func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer within range"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}
