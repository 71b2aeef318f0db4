package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// refDecodeStrict is decodeStrict as it was before checkKeys scanned the bytes itself: the
// reference that the benchmarks and the differential tests compare with.
func refDecodeStrict(data []byte, v any) error {
	if !utf8.Valid(data) {
		return invalidf("request body", "is not valid UTF-8")
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return invalidf("request body", "must be a JSON object")
	}
	if err := refCheckKeys(data, v); err != nil {
		return err
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

// refCheckKeys is checkKeys as it was: a walk over encoding/json's tokens.
func refCheckKeys(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := refWalkKeys(dec, reflect.TypeOf(v), ""); err != errMalformed {
		return err
	}
	return nil
}

// refWalkKeys reads one value from dec, checking the keys of its objects against t (nil: not
// checked), as checkKeys did.
func refWalkKeys(dec *json.Decoder, t reflect.Type, field string) error {
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
			fields = jsonFields(t).types
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
			if err := refWalkKeys(dec, ft, name); err != nil {
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
			if err := refWalkKeys(dec, elem, field); err != nil {
				return err
			}
		}
		_, _ = dec.Token()
	}
	return nil
}
