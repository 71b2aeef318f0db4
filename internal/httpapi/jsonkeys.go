package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
)

// rawMessage is the type of request fields kept as JSON text (a job's body): their keys are
// the producer's business and are not checked.
var rawMessage = reflect.TypeFor[json.RawMessage]()

// checkKeys refuses what encoding/json lets through in a request: a key repeated in one object
// (the last would silently win) and a field name that matches only when case is ignored
// ("DELAY_MS" for delay_ms). It walks data along v's type; malformed JSON is left for the
// decoder to report.
func checkKeys(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walkKeys(dec, reflect.TypeOf(v), ""); err != errMalformed {
		return err
	}
	return nil
}

// errMalformed ends a walk at its first malformed token. The decoder keeps failing at that
// token without moving past it, so a loop that went on reading would never end.
var errMalformed = errors.New("malformed JSON")

// walkKeys reads one value from dec, checking the keys of its objects against t (nil: not
// checked). field names the value in errors: a map's repeated key is field[key] (headers[a]),
// so that the error says which object it is in. It returns errMalformed at malformed JSON.
func walkKeys(dec *json.Decoder, t reflect.Type, field string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessage {
		t = nil
	}
	tok, err := dec.Token()
	if err != nil {
		return errMalformed
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return errMalformed
			}
			key, _ := kt.(string)
			name := key
			if t != nil && t.Kind() == reflect.Map && field != "" {
				name = field + "[" + key + "]"
			}
			if t != nil && seen[key] {
				return invalidf(name, "appears twice in one object")
			}
			seen[key] = true
			var ft reflect.Type
			switch {
			case fields != nil:
				f, ok := fields[key]
				if !ok {
					for name := range fields {
						if strings.EqualFold(name, key) {
							return invalidf("request body", "unknown field %q (field names are exact: %q)", key, name)
						}
					}
				}
				ft = f
			case t != nil && t.Kind() == reflect.Map:
				ft = t.Elem()
			}
			if err := walkKeys(dec, ft, name); err != nil {
				return err
			}
		}
		_, _ = dec.Token()
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walkKeys(dec, elem, field); err != nil {
				return err
			}
		}
		_, _ = dec.Token()
	}
	return nil
}

// fieldsByType caches jsonFields: a request type's fields never change, and reading them by
// reflection on every request cost a few microseconds each time.
var fieldsByType sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields returns the JSON names of struct t's fields with their types. The map is shared:
// callers only read it.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldsByType.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m, _ := fieldsByType.LoadOrStore(t, readJSONFields(t))
	return m.(map[string]reflect.Type)
}

func readJSONFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
