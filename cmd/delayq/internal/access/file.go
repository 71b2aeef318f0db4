package access

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"unicode"
)

// maxFileBytes bounds a tokens file.
const maxFileBytes = 1 << 20

// File is a tokens file, the JSON of --auth-tokens-file.
type File struct {
	Tokens []FileToken `json:"tokens"`
}

// FileToken is one token of a tokens file: its secret, or the SHA-256 of its secret in hex,
// and who it is.
type FileToken struct {
	Name        string   `json:"name"`
	Token       string   `json:"token,omitempty"`
	TokenSHA256 string   `json:"token_sha256,omitempty"`
	Role        Role     `json:"role"`
	Topics      []string `json:"topics,omitempty"`
}

// topicPattern is a topic name (^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$), a prefix of one followed
// by "*", or "*".
var topicPattern = regexp.MustCompile(`^(\*|[A-Za-z0-9][A-Za-z0-9._-]{0,127}\*?)$`)

// ParseFile returns the principals of a tokens file, or what is wrong with it. Its errors name
// entries by their place and name, never by their token.
func ParseFile(data []byte) ([]*Principal, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a tokens file, {\"tokens\": [{\"name\", \"token\" or \"token_sha256\", \"role\", \"topics\"}]}: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	if len(f.Tokens) == 0 {
		return nil, errors.New("no tokens: a tokens file that would open the server to everyone is refused")
	}
	var ps []*Principal
	var errs []error
	names, sums, prints := map[string]bool{}, map[[sha256.Size]byte]bool{}, map[string]bool{}
	for i, t := range f.Tokens {
		p, err := t.principal()
		if err == nil && names[t.Name] {
			err = errors.New("the name is taken by an earlier token")
		}
		if err == nil && sums[p.sum] {
			err = errors.New("the same token as an earlier one")
		}
		if err == nil && prints[p.Fingerprint()] {
			err = fmt.Errorf("the fingerprint %s of an earlier token: make a new token", p.Fingerprint())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("token %d (%q): %w", i+1, t.Name, err))
			continue
		}
		names[t.Name], sums[p.sum], prints[p.Fingerprint()] = true, true, true
		ps = append(ps, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ps, nil
}

func (t FileToken) principal() (*Principal, error) {
	if t.Name == "" || len(t.Name) > 64 || strings.ContainsFunc(t.Name, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return nil, errors.New("name: want 1 to 64 printable bytes")
	}
	var sum [sha256.Size]byte
	switch {
	case (t.Token == "") == (t.TokenSHA256 == ""):
		return nil, errors.New(`want exactly one of "token" and "token_sha256"`)
	case t.Token != "":
		if err := CheckToken(t.Token); err != nil {
			return nil, fmt.Errorf("token: %w", err)
		}
		sum = sha256.Sum256([]byte(t.Token))
	default:
		b, err := hex.DecodeString(t.TokenSHA256)
		if err != nil || len(b) != sha256.Size {
			return nil, errors.New("token_sha256: want the 64 hex digits of the token's SHA-256 (printf %s \"$TOKEN\" | sha256sum)")
		}
		copy(sum[:], b)
	}
	switch t.Role {
	case Admin, Reader, Producer, Consumer:
	default:
		return nil, fmt.Errorf("role %q: want admin, reader, producer or consumer", t.Role)
	}
	for _, pat := range t.Topics {
		if !topicPattern.MatchString(pat) {
			return nil, fmt.Errorf("topics: %q is not a topic name, or one's beginning followed by *", pat)
		}
	}
	return NewPrincipal(t.Name, t.Role, t.Topics, sum), nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxFileBytes)
	}
	return data, nil
}
