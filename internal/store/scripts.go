package store

import (
	"embed"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

// libraries are the files of a script's shared prelude, in order. A partition's scripts share
// lib.lua (keys, records, leases) and lib_controls.lua (a topic's pause and limits); the
// scripts of a schedule's own slot (schedule_*.lua) share schedule_lib.lua; the beanstalkd front
// end's (beanstalkd_*.lua) stand alone.
func libraries(name string) []string {
	if strings.HasPrefix(name, "beanstalkd_") {
		return nil
	}
	if strings.HasPrefix(name, "schedule_") {
		return []string{"scripts/schedule_lib.lua"}
	}
	return []string{"scripts/lib.lua", "scripts/lib_controls.lua"}
}

// libText returns the prelude files of script name as one text.
func libText(name string) string {
	var lib strings.Builder
	for _, file := range libraries(name) {
		text, err := scriptFiles.ReadFile(file)
		if err != nil {
			panic(err)
		}
		lib.Write(text)
		lib.WriteString("\n")
	}
	return lib.String()
}

// loadScript returns the script scripts/<name>.lua with the part of its prelude it uses.
func loadScript(name string) *redis.Script {
	return loadScriptWith(name)
}

// loadScriptWith is loadScript with more prelude files after the usual ones: a variant of the
// script whose calls need functions the plain one goes without (see lib_conflict.lua).
func loadScriptWith(name string, more ...string) *redis.Script {
	body, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	lib := libText(name)
	for _, file := range more {
		text, err := scriptFiles.ReadFile(file)
		if err != nil {
			panic(err)
		}
		lib += string(text) + "\n"
	}
	return redis.NewScript(prelude(lib, string(body)) + "\n" + string(body))
}

var (
	functionStart = regexp.MustCompile(`^local function ([A-Za-z_][A-Za-z0-9_]*)\(`)
	localStart    = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_]*(?:, *[A-Za-z_][A-Za-z0-9_]*)*) *=`)
	identifier    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// libChunk is a top-level piece of lib.lua: a function with the comment above it, a one-line
// definition of locals ("local A, B = 1, 2"), or any other statement.
type libChunk struct {
	function string   // the function's name; "" for anything else
	locals   []string // the names a definition of locals declares
	text     string
}

// prelude returns the other statements of lib, and those of its functions and definitions of
// locals that body uses, directly or through other functions and definitions, in lib's order.
// Redis runs a script's whole text on every call: making a closure costs about half a
// microsecond, and each local, a register of the script's function that closures may capture
// as an upvalue, costs every closure made after it that captures an earlier one. So a script
// defines neither the twenty functions it never calls nor the constants it never reads. Every
// definition in lib must be pure (its only call, now_ms's TIME, reads), as it may be left out.
func prelude(lib, body string) string {
	chunks := splitLib(lib)
	needed := map[string]bool{}
	use := func(text string) {
		for _, id := range identifier.FindAllString(withoutComments(text), -1) {
			needed[id] = true
		}
	}
	use(body)
	for _, c := range chunks {
		if c.function == "" && c.locals == nil {
			use(c.text)
		}
	}
	kept := make([]bool, len(chunks))
	for grew := true; grew; {
		grew = false
		for i, c := range chunks {
			if !kept[i] && c.needed(needed) {
				kept[i] = true
				use(c.text) // its own references are in
				grew = true
			}
		}
	}
	var out strings.Builder
	for i, c := range chunks {
		if kept[i] || (c.function == "" && c.locals == nil) {
			out.WriteString(c.text)
		}
	}
	return out.String()
}

// needed tells whether a function or definition of locals is named in needed.
func (c libChunk) needed(needed map[string]bool) bool {
	if c.function != "" {
		return needed[c.function]
	}
	for _, name := range c.locals {
		if needed[name] {
			return true
		}
	}
	return false
}

// withoutComments returns Lua text with its comments ("--" to the end of the line, outside
// strings) cut: a function named in a comment ("so promote reads them") is not a use of it.
func withoutComments(text string) string {
	var out strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		var quote byte
		cut := len(line)
		for i := 0; i < len(line); i++ {
			c := line[i]
			switch {
			case quote != 0 && c == '\\':
				i++
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '\'' || c == '"':
				quote = c
			case c == '-' && i+1 < len(line) && line[i+1] == '-':
				cut = i
				i = len(line)
			}
		}
		out.WriteString(line[:cut])
		out.WriteByte('\n')
	}
	return out.String()
}

// splitLib cuts lib.lua into top-level chunks. A function runs from its "local function" line to
// the first line that is exactly "end"; comment lines directly above a chunk belong to it.
func splitLib(lib string) []libChunk {
	var chunks []libChunk
	var pending strings.Builder // comments waiting for the chunk they describe
	lines := strings.SplitAfter(lib, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "--"):
			pending.WriteString(line)
		case trimmed == "":
			chunks = append(chunks, libChunk{text: pending.String() + line})
			pending.Reset()
		default:
			c := libChunk{text: pending.String()}
			pending.Reset()
			if m := functionStart.FindStringSubmatch(line); m != nil {
				c.function = m[1]
				for ; i < len(lines) && strings.TrimRight(lines[i], "\r\n") != "end"; i++ {
					c.text += lines[i]
				}
				if i < len(lines) {
					c.text += lines[i]
				}
			} else {
				c.text += line
				if m := localStart.FindStringSubmatch(line); m != nil {
					for _, name := range strings.Split(m[1], ",") {
						c.locals = append(c.locals, strings.TrimSpace(name))
					}
				}
			}
			chunks = append(chunks, c)
		}
	}
	if pending.Len() > 0 {
		chunks = append(chunks, libChunk{text: pending.String()})
	}
	return chunks
}
