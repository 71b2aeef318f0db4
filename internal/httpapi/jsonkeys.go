package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// rawMessage is the type of request fields kept as JSON text (a job's body): their keys are
// the producer's business and are not checked.
var rawMessage = reflect.TypeFor[json.RawMessage]()

// checkKeys refuses what encoding/json lets through in a request: a key repeated in one object
// (the last would silently win) and a field name that matches only when case is ignored
// ("DELAY_MS" for delay_ms). It scans data along v's type and stops where encoding/json's
// Decoder.Token would first fail, leaving malformed JSON for the decoder to report.
//
// plain reports that data is one well-formed JSON value and white space, nested less deeply
// than encoding/json allows, whose objects of a struct type have only keys that name a field
// exactly, fields that encoding/json names as checkKeys does. Then json.Unmarshal decodes data
// into v as a Decoder that disallows unknown fields would, without another copy of data.
func checkKeys(data []byte, v any) (plain bool, err error) {
	s := keyScanner{data: data}
	switch err := s.value(reflect.TypeOf(v), fieldName{}); err {
	case nil:
		s.skipSpace()
		return !s.notPlain && s.pos == len(s.data), nil
	case errMalformed:
		return false, nil
	default:
		return false, err
	}
}

// maxDepth is encoding/json's limit of nesting, past which its decoder refuses a body.
const maxDepth = 10000

// maxPlainDepth bounds the nesting of plain data.
const maxPlainDepth = 1000

// errMalformed ends a scan at its first malformed byte.
var errMalformed = errors.New("malformed JSON")

// keyScanner reads JSON text from data[pos:]. It allocates only for keys with escapes and
// for objects of many keys.
type keyScanner struct {
	data     []byte
	pos      int
	depth    int  // of the objects and arrays that pos is in
	notPlain bool // the data is not plain, as checkKeys defines it
}

// fieldName names a value in errors: its key, or for an entry of a named map the map's name
// with the key in brackets (headers[a]), so that the error says which object it is in.
type fieldName struct {
	inMap string // the map's name, for an entry of a named map
	key   []byte
}

// String returns the name, "" for the request body itself.
func (f fieldName) String() string {
	if f.inMap != "" {
		return f.inMap + "[" + string(f.key) + "]"
	}
	return string(f.key)
}

// entry returns the name of the entry key of the map that f names.
func (f fieldName) entry(key []byte) fieldName {
	if f.inMap == "" && len(f.key) == 0 {
		return fieldName{key: key}
	}
	return fieldName{inMap: f.String(), key: key}
}

// mayHoldMap reports whether a value of type t may hold a map's objects, whose entries a
// name reaches: a map, or a slice or array, whose elements take the name of the slice.
func mayHoldMap(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && (t.Kind() == reflect.Map || t.Kind() == reflect.Slice || t.Kind() == reflect.Array)
}

// value reads one value, checking the keys of its objects against t (nil: not checked). It
// returns errMalformed at malformed JSON.
func (s *keyScanner) value(t reflect.Type, field fieldName) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessage {
		t = nil
	}
	s.skipSpace()
	switch c := s.peek(); {
	case c == '{':
		return s.object(t, field)
	case c == '[':
		return s.array(t, field)
	case c == '"':
		if _, ok := s.str(); !ok {
			return errMalformed
		}
		return nil
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return errMalformed
}

// object reads an object, its keys checked against t when t is not nil: no key twice, and
// for a struct no key that names a field only when case is ignored.
func (s *keyScanner) object(t reflect.Type, field fieldName) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	var fields map[string]reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		sf := jsonFields(t)
		fields = sf.types
		s.notPlain = s.notPlain || !sf.plain
	}
	isMap := t != nil && t.Kind() == reflect.Map
	var seen keySet
	s.skipSpace()
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		s.skipSpace()
		if s.peek() != '"' {
			return errMalformed
		}
		key, ok := s.key()
		if !ok {
			return errMalformed
		}
		var ft reflect.Type
		if t != nil {
			if seen.add(key) {
				name := fieldName{key: key}
				if isMap {
					name = field.entry(key)
				}
				return invalidf(name.String(), "appears twice in one object")
			}
			switch {
			case fields != nil:
				if ft, ok = fields[string(key)]; !ok {
					if err := inexactField(fields, string(key)); err != nil {
						return err
					}
					s.notPlain = true // an unknown field, for the decoder to refuse
				}
			case isMap:
				ft = t.Elem()
			}
		}
		s.skipSpace()
		if s.peek() != ':' {
			return errMalformed
		}
		s.pos++
		name := fieldName{key: key}
		if isMap && mayHoldMap(ft) {
			name = field.entry(key) // built only where a map's entry may need it
		}
		if err := s.value(ft, name); err != nil {
			return err
		}
		s.skipSpace()
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return errMalformed
		}
	}
}

// enter moves past the opening bracket of an object or an array. Past encoding/json's depth
// limit it returns errMalformed, which leaves the decoder to refuse the body: the scan recurses
// once per level, and a body of a million brackets must not take a goroutine's stack that
// deep.
func (s *keyScanner) enter() error {
	if s.depth >= maxDepth {
		return errMalformed
	}
	s.pos++
	s.depth++
	s.notPlain = s.notPlain || s.depth > maxPlainDepth
	return nil
}

// leave ends an object or an array.
func (s *keyScanner) leave() { s.depth-- }

// inexactField refuses key when it names one of fields only when case is ignored.
func inexactField(fields map[string]reflect.Type, key string) error {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return invalidf("request body", "unknown field %q (field names are exact: %q)", key, name)
		}
	}
	return nil
}

// array reads an array, checking its elements' keys against t's element type when t is a
// slice or an array.
func (s *keyScanner) array(t reflect.Type, field fieldName) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	s.skipSpace()
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for {
		if err := s.value(elem, field); err != nil {
			return err
		}
		s.skipSpace()
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return errMalformed
		}
	}
}

// key reads a string and returns its value as encoding/json decodes it: the text itself when
// it has no escapes and is valid UTF-8, or else a decoded copy.
func (s *keyScanner) key() ([]byte, bool) {
	start := s.pos
	verbatim, ok := s.str()
	if !ok {
		return nil, false
	}
	if verbatim {
		return s.data[start+1 : s.pos-1], true
	}
	var k string
	if json.Unmarshal(s.data[start:s.pos], &k) != nil {
		return nil, false
	}
	return []byte(k), true
}

// str reads a string. verbatim reports that its text is its value: no escapes, valid UTF-8.
func (s *keyScanner) str() (verbatim, ok bool) {
	s.pos++ // "
	start := s.pos
	escaped, ascii := false, true
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return !escaped && (ascii || utf8.Valid(s.data[start:s.pos-1])), true
		case c < ' ':
			return false, false
		case c == '\\':
			escaped = true
			if !s.escape() {
				return false, false
			}
		default:
			ascii = ascii && c < utf8.RuneSelf
			s.pos++
		}
	}
	return false, false
}

// escape reads a backslash escape in a string.
func (s *keyScanner) escape() bool {
	s.pos++ // \
	switch s.peek() {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos++
		return true
	case 'u':
		if s.pos+5 > len(s.data) {
			return false
		}
		for _, c := range s.data[s.pos+1 : s.pos+5] {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
		s.pos += 5
		return true
	}
	return false
}

// number reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *keyScanner) number() error {
	if s.peek() == '-' {
		s.pos++
	}
	switch c := s.peek(); {
	case c == '0':
		s.pos++
	case '1' <= c && c <= '9':
		s.digits()
	default:
		return errMalformed
	}
	if s.peek() == '.' {
		s.pos++
		if s.digits() == 0 {
			return errMalformed
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.pos++
		if c := s.peek(); c == '+' || c == '-' {
			s.pos++
		}
		if s.digits() == 0 {
			return errMalformed
		}
	}
	return nil
}

// digits reads decimal digits and returns how many.
func (s *keyScanner) digits() int {
	start := s.pos
	for c := s.peek(); '0' <= c && c <= '9'; c = s.peek() {
		s.pos++
	}
	return s.pos - start
}

// literal reads word: true, false or null.
func (s *keyScanner) literal(word string) error {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(word)) {
		return errMalformed
	}
	s.pos += len(word)
	return nil
}

// skipSpace moves past JSON white space.
func (s *keyScanner) skipSpace() {
	for c := s.peek(); c == ' ' || c == '\t' || c == '\r' || c == '\n'; c = s.peek() {
		s.pos++
	}
}

// peek returns the byte at pos, or 0 at the end of data.
func (s *keyScanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// keySet holds the keys of one object, to find one given twice: the first few in place,
// more in a map, so that a large object costs linear time and a small one no allocation.
type keySet struct {
	few  [16][]byte
	n    int
	many map[string]struct{}
}

// add adds key and reports whether it was there already.
func (k *keySet) add(key []byte) (dup bool) {
	if k.many != nil {
		if _, dup = k.many[string(key)]; !dup {
			k.many[string(key)] = struct{}{}
		}
		return dup
	}
	for _, s := range k.few[:k.n] {
		if bytes.Equal(s, key) {
			return true
		}
	}
	if k.n < len(k.few) {
		k.few[k.n] = key
		k.n++
		return false
	}
	k.many = make(map[string]struct{}, 2*len(k.few))
	for _, s := range k.few {
		k.many[string(s)] = struct{}{}
	}
	k.many[string(key)] = struct{}{}
	return false
}

// structFields are the JSON names of a struct's fields with their types.
type structFields struct {
	types map[string]reflect.Type
	// plain reports that encoding/json names the fields so too: none is embedded, and each
	// name, made of letters, digits, '_' and '-', is given once.
	plain bool
}

// fieldsByType caches jsonFields: a request type's fields never change, and reading them by
// reflection on every request cost a few microseconds each time.
var fieldsByType sync.Map // reflect.Type → *structFields

// jsonFields returns the fields of struct t. They are shared: callers only read them.
func jsonFields(t reflect.Type) *structFields {
	if sf, ok := fieldsByType.Load(t); ok {
		return sf.(*structFields)
	}
	sf, _ := fieldsByType.LoadOrStore(t, readJSONFields(t))
	return sf.(*structFields)
}

// readJSONFields reads the fields of struct t.
func readJSONFields(t reflect.Type) *structFields {
	sf := &structFields{types: map[string]reflect.Type{}, plain: true}
	for f := range t.Fields() {
		if f.Anonymous {
			sf.plain = false
		}
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
		if _, twice := sf.types[name]; twice || strings.ContainsFunc(name, notPlainNameRune) {
			sf.plain = false
		}
		sf.types[name] = f.Type
	}
	return sf
}

// notPlainNameRune reports whether r is not a letter, a digit, '_' or '-'.
func notPlainNameRune(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-'
}
