package access

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestParseFileRefusesBadFiles(t *testing.T) {
	t.Parallel()
	const tok = "a-token-of-enough-bytes"
	for name, c := range map[string]struct{ file, want string }{
		"not JSON":        {`{"tokens": [`, "not a tokens file"},
		"unknown field":   {`{"tokens": [], "extra": 1}`, "unknown field"},
		"no tokens":       {`{"tokens": []}`, "no tokens"},
		"two values":      {`{"tokens": [{"name": "a", "token": "` + tok + `", "role": "admin"}]} {}`, "more than one JSON value"},
		"no name":         {`{"tokens": [{"token": "` + tok + `", "role": "admin"}]}`, "name: want 1 to 64"},
		"short token":     {`{"tokens": [{"name": "a", "token": "tiny", "role": "admin"}]}`, "4 bytes is too short"},
		"both secrets":    {`{"tokens": [{"name": "a", "token": "` + tok + `", "token_sha256": "00", "role": "admin"}]}`, "exactly one of"},
		"no secret":       {`{"tokens": [{"name": "a", "role": "admin"}]}`, "exactly one of"},
		"bad hash":        {`{"tokens": [{"name": "a", "token_sha256": "abc", "role": "admin"}]}`, "64 hex digits"},
		"bad role":        {`{"tokens": [{"name": "a", "token": "` + tok + `", "role": "root"}]}`, `role "root"`},
		"bad topic":       {`{"tokens": [{"name": "a", "token": "` + tok + `", "role": "admin", "topics": ["a*b"]}]}`, `"a*b" is not a topic`},
		"same name twice": {`{"tokens": [{"name": "a", "token": "` + tok + `", "role": "admin"}, {"name": "a", "token": "` + tok + `-2", "role": "reader"}]}`, "name is taken"},
		"same token":      {`{"tokens": [{"name": "a", "token": "` + tok + `", "role": "admin"}, {"name": "b", "token": "` + tok + `", "role": "reader"}]}`, "same token"},
	} {
		_, err := ParseFile([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), tok) {
			t.Errorf("%s: the error shows the token: %v", name, err)
		}
	}
}

func TestTokenSHA256MatchesItsToken(t *testing.T) {
	t.Parallel()
	const tok = "a-token-of-enough-bytes"
	sum := sha256.Sum256([]byte(tok))
	ps, err := ParseFile([]byte(`{"tokens": [{"name": "hashed", "token_sha256": "` + strings.ToUpper(hex.EncodeToString(sum[:])) + `", "role": "reader"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	k := NewKeyring(ps)
	if p := k.Lookup(tok); p == nil || p.Name != "hashed" || p.Role != Reader {
		t.Errorf("Lookup of the token = %+v, want the hashed reader", p)
	}
	if p := k.Lookup(hex.EncodeToString(sum[:])); p != nil {
		t.Errorf("the hash itself is taken as a token: %+v", p)
	}
}

func TestAllowedByRoleAndTopics(t *testing.T) {
	t.Parallel()
	p := NewPrincipal("checkout", Producer, []string{"orders", "payments-*"}, [32]byte{})
	for _, c := range []struct {
		op    Op
		topic string
		ok    bool
	}{
		{Produce, "orders", true},
		{Produce, "payments-eu", true},
		{Produce, "payments", false},
		{Produce, "orders-old", false},
		{GetJob, "orders", true},
		{Consume, "orders", false},
		{Read, "", false},
		{Operate, "orders", false},
		{AnyToken, "", true},
	} {
		err := p.Allowed(c.op, c.topic)
		if (err == nil) != c.ok {
			t.Errorf("Allowed(%v, %q) = %v, want allowed %v", c.op, c.topic, err, c.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), `"checkout"`) || !strings.Contains(err.Error(), "producer")) {
			t.Errorf("the refusal does not name the token and its role: %v", err)
		}
	}
	if err := (*Principal)(nil).Allowed(Operate, "orders"); err != nil {
		t.Errorf("an open server's request refused: %v", err)
	}
	all := NewPrincipal("all", Consumer, []string{"*"}, [32]byte{})
	if err := all.Allowed(Consume, "anything"); err != nil {
		t.Errorf(`topics ["*"]: %v`, err)
	}
}
