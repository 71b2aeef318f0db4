package delayq

import (
	"testing"

	"github.com/delayq/delayq/internal/core"
)

// zeroArg calls f with the zero value of its parameter's type, a type it never names: what
// another module could do with Client.Core, whose parameter's type it cannot import.
func zeroArg[K, R any](f func(K) R) R {
	var k K
	return f(k)
}

// Client.Core serves delayq's own packages, which hold core.Pass, and refuses any other key.
func TestCoreAcceptsOnlyThePassOfDelayqsPackages(t *testing.T) {
	c := &Client{}
	if c.Core(core.Pass) == nil {
		t.Fatal("Core(core.Pass) = nil")
	}
	for name, call := range map[string]func(){
		"a zero key":                       func() { c.Core(core.Key{}) },
		"a key made by a generic function": func() { zeroArg(c.Core) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Core accepted it")
				}
			}()
			call()
		})
	}
}
