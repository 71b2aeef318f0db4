package httpapi

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
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

// strictJSON decodes a request as JSON v2 does by default, member names matched exactly and a
// name given twice in one object refused, and refuses unknown members too. Escaped lone
// surrogates decode to U+FFFD, as they always have (the bytes are checked as UTF-8 before).
var strictJSON = json.JoinOptions(
	json.RejectUnknownMembers(true),
	jsontext.AllowInvalidUTF8(true),
	json.WithUnmarshalers(json.UnmarshalFromFunc(readRaw)),
)

// anyKeys reads JSON text as a job's body is read: any keys, escaped lone surrogates.
var anyKeys = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// readRaw reads a member kept as JSON text (a job's body, a batch's item) as it was sent: its
// keys are the producer's business, a key given twice included. A batch's items are decoded
// strictly one by one afterwards.
func readRaw(dec *jsontext.Decoder, raw *stdjson.RawMessage) error {
	var v jsontext.Value
	if err := json.UnmarshalDecode(dec, &v, jsontext.AllowDuplicateNames(true)); err != nil {
		return err
	}
	*raw = stdjson.RawMessage(v)
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
	if err := json.Unmarshal(data, v, strictJSON); err != nil {
		return decodeError(data, reflect.TypeOf(v), err)
	}
	return nil
}

// decodeError turns an error of decoding data into a value of type t into an invalid_argument
// naming the field.
func decodeError(data []byte, t reflect.Type, err error) error {
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	if errors.As(err, &sem) {
		// Malformed JSON past a value of the wrong type or an unknown field is reported first,
		// as it always was.
		var whole jsontext.Value
		if serr := json.Unmarshal(data, &whole, anyKeys); serr != nil {
			err = serr
		}
	}
	switch {
	case errors.As(err, &syn) && syn.Err == jsontext.ErrDuplicateName:
		return invalidf(fieldPath(t, syn.JSONPointer), "appears twice in one object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidf("request body", "malformed JSON: it ends too soon")
	case syn != nil && syn.JSONPointer == "" && syn.ByteOffset <= int64(len(data)) &&
		jsontext.Value(data[:syn.ByteOffset]).IsValid(anyKeys):
		return invalidf("request body", "has data after the JSON object")
	case syn != nil:
		return invalidf("request body", "malformed JSON at byte %d: %v", syn.ByteOffset, syn.Err)
	case errors.As(err, &sem) && sem.Err == json.ErrUnknownName:
		return unknownField(t, sem)
	case sem != nil && sem.JSONKind != 0 && sem.GoType != nil:
		got := jsonKindName(sem.JSONKind)
		if len(sem.JSONValue) > 0 && len(sem.JSONValue) < 100 {
			got += " " + string(sem.JSONValue)
		}
		return invalidf(fieldPath(t, sem.JSONPointer), "want %s, got %s", kindName(sem.GoType), got)
	}
	return invalidf("request body", "%s", strings.TrimPrefix(err.Error(), "json: "))
}

// unknownField refuses the member that sem points to, saying which field it names when case is
// ignored.
func unknownField(t reflect.Type, sem *json.SemanticError) error {
	where, name := sem.JSONPointer.Parent(), sem.JSONPointer.LastToken()
	field := "request body"
	if where != "" {
		field = fieldPath(t, where)
	}
	if st := sem.GoType; st != nil && st.Kind() == reflect.Struct {
		for f := range st.Fields() {
			if n := jsonName(f); n != "" && strings.EqualFold(n, name) {
				return invalidf(field, "unknown field %q (field names are exact: %q)", name, n)
			}
		}
	}
	return invalidf(field, "unknown field %q", name)
}

// fieldPath names the value that p points to in a value of type t as validation does: the
// fields of structs joined by dots, the keys of maps and the indices of arrays in brackets
// (job.headers[a], backoff_ms[1]).
func fieldPath(t reflect.Type, p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t != nil && t.Kind() == reflect.Struct:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			t = fieldType(t, tok)
		default:
			b.WriteString("[" + tok + "]")
			if t != nil && (t.Kind() == reflect.Map || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
				t = t.Elem()
			} else {
				t = nil
			}
		}
	}
	if b.Len() == 0 {
		return "request body"
	}
	return b.String()
}

// fieldType returns the type of the field of struct t that JSON names name, or nil.
func fieldType(t reflect.Type, name string) reflect.Type {
	for f := range t.Fields() {
		if jsonName(f) == name {
			return f.Type
		}
	}
	return nil
}

// jsonName returns the JSON name of an exported field f, "" for a field JSON leaves out.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch {
	case !f.IsExported() || name == "-":
		return ""
	case name == "":
		return f.Name
	}
	return name
}

// jsonKindName names a JSON kind as a request's sender would: string, number, …
func jsonKindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	case '[':
		return "array"
	case '{':
		return "object"
	}
	return k.String()
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
