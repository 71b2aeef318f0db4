package store

import (
	"strings"
	"testing"
)

func TestPreludeKeepsOnlyWhatAScriptUses(t *testing.T) {
	lib := `-- header
local A = 1

-- helper used by used
local function helper()
  return A
end

local function used()
  return helper()
end

-- never called
local function unused()
  return used()
end
local NOW = 5
`
	got := prelude(lib, "return used()")
	for _, want := range []string{"local A = 1", "local function helper()", "local function used()", "local NOW = 5"} {
		if !strings.Contains(got, want) {
			t.Errorf("prelude lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "unused") {
		t.Errorf("prelude keeps a function the script never calls:\n%s", got)
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
		full := prelude(lib, string(body)) + string(body)
		for _, fn := range defined {
			if strings.Contains(full, fn+"(") && !strings.Contains(full, "local function "+fn+"(") {
				t.Errorf("%s calls %s but its prelude does not define it", e.Name(), fn)
			}
		}
	}
}
