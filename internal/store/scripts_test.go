package store

import (
	"regexp"
	"strings"
	"testing"
)

func TestPreludeKeepsOnlyWhatAScriptUses(t *testing.T) {
	lib := `-- header: unused is only named in comments
local A = 1 -- not by unused
local S = 'a -- string' -- and unused once more
local B, C = A + 1, 2
local D = 4

-- helper used by used
local function helper()
  return A
end

local function used()
  return helper() + B
end

-- never called
local function unused()
  return used() + D
end
local NOW = 5
`
	got := prelude(lib, "return used() -- unused, in a comment", nil)
	for _, want := range []string{"local A = 1", "local B, C = A + 1, 2", "local function helper()", "local function used()"} {
		if !strings.Contains(got, want) {
			t.Errorf("prelude lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"local function unused", "local S =", "local D =", "local NOW ="} {
		if strings.Contains(got, unwanted) {
			t.Errorf("prelude keeps %q, which the script never uses:\n%s", unwanted, got)
		}
	}
}

// TestEveryScriptGetsWhatItCalls loads each script's prelude from its real library files and
// checks that every library function a script's text names is defined in it.
func TestEveryScriptGetsWhatItCalls(t *testing.T) {
	entries, _ := scriptFiles.ReadDir("scripts")
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".lua")
		if strings.HasPrefix(name, "lib") || name == "schedule_lib" {
			continue
		}
		lib := libText(name)
		var defined []string
		for _, c := range splitLib(lib) {
			if c.function != "" {
				defined = append(defined, c.function)
			}
		}
		body, _ := scriptFiles.ReadFile("scripts/" + e.Name())
		code := withoutComments(assemble(lib, string(body)))
		for _, fn := range defined {
			called := regexp.MustCompile(`(^|[^A-Za-z0-9_.])` + fn + `\(`).MatchString(code)
			if called && !strings.Contains(code, "local function "+fn+"(") {
				t.Errorf("%s calls %s but its prelude does not define it", e.Name(), fn)
			}
		}
	}
}

func TestAssemblePutsConstantsInPlace(t *testing.T) {
	lib := `local A = 1 -- a comment names A
local B, S = 0xa0 + A, 'a, b'
local K = KEYS[1]

local function f(t)
  return t.A, A, B, S, 'A', K, S..S -- A
end
`
	got := assemble(lib, "return f({A = 2})")
	for _, want := range []string{"return t.A, 1, (0xa0 + 1), 'a, b', 'A', K, 'a, b'..'a, b' -- A", "local K = KEYS[1]", "return f({A = 2})"} {
		if !strings.Contains(got, want) {
			t.Errorf("script lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"local A", "local S"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("script keeps %q, a constant in place everywhere:\n%s", unwanted, got)
		}
	}
}

func TestAssembleRefusesAConstantDeclaredAgainOrAssigned(t *testing.T) {
	lib := "local A = 1\n"
	for _, body := range []string{
		"local A = 2\nreturn A",
		"local x, A = 2, 3\nreturn A",
		"local function A() end",
		"local function f(x, A) return A end",
		"local f = function(A) return A end",
		"for A = 1, 2 do end",
		"for _, A in ipairs(KEYS) do end",
		"A = 2",
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("assemble took a script that declares or assigns the constant A:\n%s", body)
				}
			}()
			assemble(lib, body)
		}()
	}
	// A comparison, a field and a string are no assignment.
	assemble(lib, "local t = {}\nt.A = A == 1 and 'A = 1'\nreturn t")
}
