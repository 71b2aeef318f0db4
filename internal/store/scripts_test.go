package store

import (
	"regexp"
	"slices"
	"strconv"
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
	got := prelude(lib, "return used() -- unused, in a comment", nil, nil)
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
// checks that every library function a script's text names is defined in it, and that a bare
// variant (bareWithout) defines all of them but those it leaves out, and none of those.
func TestEveryScriptGetsWhatItCalls(t *testing.T) {
	entries, _ := scriptFiles.ReadDir("scripts")
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".lua")
		if strings.HasPrefix(name, "lib") || name == "schedule_lib" {
			continue
		}
		lib := libText(name)
		body, _ := scriptFiles.ReadFile("scripts/" + e.Name())
		var defined []string
		for _, c := range append(splitLib(lib), splitLib(string(body))...) {
			if c.function != "" {
				defined = append(defined, c.function)
			}
		}
		variants := map[string][]string{e.Name(): nil}
		if without, ok := bareWithout[name]; ok {
			variants[e.Name()+" (bare)"] = without
		}
		for variant, without := range variants {
			code := withoutComments(assemble(lib, string(body), without...))
			for _, fn := range defined {
				called := regexp.MustCompile(`(^|[^A-Za-z0-9_.])` + fn + `\(`).MatchString(code)
				has := strings.Contains(code, "local function "+fn+"(")
				switch left := slices.Contains(without, fn); {
				case left && has:
					t.Errorf("%s defines %s, which it leaves out", variant, fn)
				case !left && called && !has:
					t.Errorf("%s calls %s but does not define it", variant, fn)
				}
			}
			for _, fn := range without {
				if !slices.Contains(defined, fn) {
					t.Errorf("%s leaves out %s, which it never defines", variant, fn)
				}
			}
		}
	}
}

// A script assembled without some functions leaves out those and what only they use, of its
// prelude and of its own text, and keeps the rest of its text as it was.
func TestAssembleLeavesOutFunctions(t *testing.T) {
	lib := `local function rare_helper()
  return 1
end

local function shared()
  return 2
end

local function rare()
  return rare_helper() + shared()
end
`
	body := `local n = 1

-- own_rare is rarely called.
local function own_rare()
  return rare()
end

local function own()
  return shared()
end

if n == 0 then return own_rare() end
return own()
`
	got := assemble(lib, body, "rare", "own_rare")
	for _, want := range []string{"local function shared()", "local function own()", "local n = 1\n", "if n == 0 then return own_rare() end\nreturn own()\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("script lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"local function rare(", "local function rare_helper(", "local function own_rare(", "own_rare is rarely"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("script keeps %q, which it leaves out:\n%s", unwanted, got)
		}
	}
	if whole := assemble(lib, body); !strings.HasSuffix(whole, "\n"+body) {
		t.Errorf("a script assembled without leaving anything out changed its own text:\n%s", whole)
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

// A partition's script is given only the keys it names, numbered from 1 in lib.lua's order, and
// the keys a call adds come after them: Redis makes a Lua string of every key a call passes.
func TestScriptsTakeOnlyTheKeysTheyName(t *testing.T) {
	names := []string{"JOBS", "DELAYED", "READY", "READY_PUSH", "RESERVED", "DEAD", "NOTIFY", "LEASES",
		"SETTINGS", "STARTS", "HISTORY", "CALL"}
	for name, sc := range map[string]*luaScript{"enqueue": enqueueScript, "upsert": upsertScript,
		"reserve": reserveScript, "bare reserve": reserveBareScript, "ack": ackScript, "bare ack": ackBareScript,
		"get": getScript, "cancel": cancelScript, "tick": tickScript, "dead_delete": deadDeleteScript} {
		text := withoutComments(sc.text)
		var want []int
		for i, key := range names {
			if regexp.MustCompile(`\b` + key + `\b`).MatchString(strings.ReplaceAll(text, "local "+key+" = ", "")) {
				want = append(want, i)
			}
		}
		if !slices.Equal(sc.keys, want) {
			t.Errorf("%s takes keys %v, names %v", name, sc.keys, want)
		}
		for k, i := range sc.keys {
			if def := "local " + names[i] + " = KEYS[" + strconv.Itoa(k+1) + "]"; !strings.Contains(text, def) {
				t.Errorf("%s lacks %q", name, def)
			}
		}
		if strings.Contains(text, "NKEYS") {
			t.Errorf("%s still names NKEYS", name)
		}
	}
	if slices.Contains(enqueueScript.keys, 2) || slices.Contains(enqueueScript.keys, 9) {
		t.Errorf("enqueue takes the ready set or the rate window (%v), which it never touches", enqueueScript.keys)
	}
}
