package store

import (
	"embed"
	"fmt"
	"regexp"
	"slices"
	"strconv"
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

// luaScript is a script as the store runs it: its text, and the keys of a partition it takes
// (see lib.lua), in the order it takes them: positions in keys.Partition's order (Key), and
// keys.Count for the call's record (CALL). A script of no partition (a schedule's, the
// beanstalkd front end's) has nil: its calls give their keys themselves.
type luaScript struct {
	*redis.Script
	keys []int
	text string // as sent to Redis
}

// loadScript returns the script scripts/<name>.lua with the part of its prelude it uses.
func loadScript(name string) *luaScript {
	return loadVariant(name, nil)
}

// loadScriptWith is loadScript with more prelude files after the usual ones: a variant of the
// script whose calls need functions the plain one goes without (see lib_conflict.lua).
func loadScriptWith(name string, more ...string) *luaScript {
	return loadVariant(name, more)
}

// loadScriptWithout is loadScript less the functions named in without (of its prelude or its
// own), and those only they use: a variant of the script for the calls that never reach them,
// which would otherwise make their closures on every call for nothing. Such a call must not
// reach them indeed: the variant would fail there, reading a global of that name that Redis
// does not have.
func loadScriptWithout(name string, without ...string) *luaScript {
	return loadVariant(name, nil, without...)
}

// loadVariant returns the script scripts/<name>.lua with the prelude files more after the usual
// ones, less the functions named in without.
func loadVariant(name string, more []string, without ...string) *luaScript {
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
	text := assemble(lib, string(body), without...)
	if !slices.Contains(libraries(name), "scripts/lib.lua") {
		return &luaScript{Script: redis.NewScript(text), text: text}
	}
	text, keys := numberKeys(text)
	return &luaScript{Script: redis.NewScript(text), keys: keys, text: text}
}

// keyLine is lib.lua's definition of one of a partition's keys: "local JOBS = KEYS[1]".
var keyLine = regexp.MustCompile(`(?m)^local ([A-Z_]+) = KEYS\[([0-9]+)\]$`)

// numberKeys numbers the keys a partition's script text defines (those of lib.lua it uses) from
// 1 in their order, puts their count in place of NKEYS, and returns the text with the keys'
// positions in keys.Partition's order (lib.lua's numbers less one).
func numberKeys(text string) (string, []int) {
	keys := []int{}
	text = keyLine.ReplaceAllStringFunc(text, func(line string) string {
		m := keyLine.FindStringSubmatch(line)
		n, err := strconv.Atoi(m[2])
		if err != nil {
			panic(err)
		}
		keys = append(keys, n-1)
		return fmt.Sprintf("local %s = KEYS[%d]", m[1], len(keys))
	})
	return inline(text, map[string]string{"NKEYS": strconv.Itoa(len(keys))}), keys
}

// assemble returns the text of a script: the part of its prelude lib that body uses, then body,
// with the constants of lib in place of their names, less the functions named in without.
func assemble(lib, body string, without ...string) string {
	consts := constants(splitLib(lib))
	left := map[string]bool{}
	for _, name := range without {
		left[name] = true
	}
	var kept strings.Builder
	for _, c := range splitLib(body) {
		if !left[c.function] {
			kept.WriteString(c.text)
		}
	}
	body = inline(kept.String(), consts)
	return prelude(lib, body, consts, left) + "\n" + body
}

var (
	functionStart = regexp.MustCompile(`^local function ([A-Za-z_][A-Za-z0-9_]*)\(`)
	localStart    = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_]*(?:, *[A-Za-z_][A-Za-z0-9_]*)*) *=`)
	identifier    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	// stringLiteral is a string in Lua code: a name in one ('controls') is no use of it.
	stringLiteral = regexp.MustCompile(`'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"`)
)

// libChunk is a top-level piece of lib.lua: a function with the comment above it, a one-line
// definition of locals ("local A, B = 1, 2"), or any other statement.
type libChunk struct {
	function string   // the function's name; "" for anything else
	locals   []string // the names a definition of locals declares
	text     string
}

// prelude returns the other statements of lib, and those of its functions and definitions of
// locals that body uses, directly or through other functions and definitions, in lib's order,
// with consts in place of their names (body has them in place already) and their definitions
// left out, and never the functions in without. Redis runs a script's whole text on every call, and making a closure costs about
// half a microsecond and more for each local it captures (see constants), so a script defines
// neither the twenty functions it never calls nor the locals it never reads. Every definition
// in lib must be pure (its only call, now_ms's TIME, reads), as it may be left out.
func prelude(lib, body string, consts map[string]string, without map[string]bool) string {
	chunks := splitLib(lib)
	for i, c := range chunks {
		if c.constant(consts) || without[c.function] {
			chunks[i] = libChunk{} // in place everywhere, or left out: never kept
			continue
		}
		chunks[i].text = inline(c.text, consts)
	}
	needed := map[string]bool{}
	use := func(text string) {
		for _, id := range identifier.FindAllString(stringLiteral.ReplaceAllString(withoutComments(text), "''"), -1) {
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

var (
	// constantValue is what a constant's value may be: a number (decimal or hex), a sum or
	// product of numbers and so on (Lua folds it when it compiles the script), or a string
	// with no quote or backslash in it.
	constantValue = regexp.MustCompile(`^(?:[-+*/%^() ]|0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]+)?)+$|^'[^'\\]*'$`)
	// declarations find the names a piece of Lua declares: locals, a function's parameters,
	// the variables of a for loop.
	declarations = []*regexp.Regexp{
		regexp.MustCompile(`\blocal\s+(?:function\s+)?([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)`),
		regexp.MustCompile(`\bfunction\s*[A-Za-z0-9_.:]*\s*\(([^)]*)\)`),
		regexp.MustCompile(`\bfor\s+([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)`),
	}
	// literal is a constant's value that needs no parentheses around it.
	literal = regexp.MustCompile(`^(?:0x[0-9a-fA-F]+|[0-9]+|'[^']*')$`)
)

// constants returns the constants that lib's chunks define, each name with its value as Lua
// text: the names of a one-line definition of locals whose values are all literals, or
// arithmetic of literals and earlier constants ("local F_BODY, F_BACKOFF = 9, 10", "local
// PRINT_TAG = 0xa0 + PRINT_LEN"). A script has them in place of their names, so a closure that
// names one captures nothing for it: for each local a closure captures, Lua 5.1 walks the list
// of the locals captured so far that lie above it (luaF_findupval), and Redis makes every
// closure of a script on every call, so each constant a function named cost every call of
// every script that defines the function. A constant's name must not be declared again in any
// script, nor assigned to: assemble panics, as the script would read another value.
func constants(chunks []libChunk) map[string]string {
	consts := map[string]string{}
	for _, c := range chunks {
		if c.locals == nil {
			continue
		}
		_, values, _ := strings.Cut(withoutComments(c.text[strings.LastIndex(c.text, "\nlocal ")+1:]), "=")
		parts := splitValues(values)
		if len(parts) != len(c.locals) {
			continue
		}
		var found []string
		for _, v := range parts {
			v = strings.TrimSpace(inline(v, consts))
			if !constantValue.MatchString(v) {
				found = nil
				break
			}
			if !literal.MatchString(v) {
				v = "(" + v + ")"
			}
			found = append(found, v)
		}
		for i, v := range found {
			consts[c.locals[i]] = v
		}
	}
	return consts
}

// splitValues cuts the values of a definition at its commas outside strings and parentheses.
func splitValues(values string) []string {
	var parts []string
	var quote byte
	depth, start := 0, 0
	for i := 0; i < len(values); i++ {
		switch c := values[i]; {
		case quote != 0 && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '{' || c == '[':
			depth++
		case c == ')' || c == '}' || c == ']':
			depth--
		case c == ',' && depth == 0:
			parts = append(parts, values[start:i])
			start = i + 1
		}
	}
	return append(parts, values[start:])
}

// constant tells whether every name c defines is a constant.
func (c libChunk) constant(consts map[string]string) bool {
	if c.locals == nil {
		return false
	}
	for _, name := range c.locals {
		if _, ok := consts[name]; !ok {
			return false
		}
	}
	return true
}

// inline returns Lua text with each constant's name, outside comments and strings and other
// than as a field (t.NAME), in place by its value. It panics when the text declares a
// constant's name again or assigns to one.
func inline(text string, consts map[string]string) string {
	if len(consts) == 0 {
		return text
	}
	for _, re := range declarations {
		for _, m := range re.FindAllStringSubmatch(withoutComments(text), -1) {
			for _, name := range strings.Split(m[1], ",") {
				if _, ok := consts[strings.TrimSpace(name)]; ok {
					panic("scripts: the constant " + strings.TrimSpace(name) + " is declared again")
				}
			}
		}
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		var quote byte
		for i := 0; i < len(line); {
			c := line[i]
			switch {
			case quote != 0:
				if c == '\\' && i+1 < len(line) {
					out.WriteByte(c)
					i++
					c = line[i]
				} else if c == quote {
					quote = 0
				}
			case c == '\'' || c == '"':
				quote = c
			case c == '-' && i+1 < len(line) && line[i+1] == '-':
				out.WriteString(line[i:])
				i = len(line)
				continue
			case c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
				j := i + 1
				for j < len(line) && (line[j] == '_' || line[j] >= 'A' && line[j] <= 'Z' || line[j] >= 'a' && line[j] <= 'z' || line[j] >= '0' && line[j] <= '9') {
					j++
				}
				name := line[i:j]
				if v, ok := consts[name]; ok && !field(line, i, j) {
					name = v
				}
				out.WriteString(name)
				i = j
				continue
			}
			out.WriteByte(c)
			i++
		}
	}
	return out.String()
}

// field tells whether the name at line[i:j] names a field: t.NAME, t:NAME(), or a key of a
// table constructor ({NAME = v}). It panics when the name is assigned to otherwise.
func field(line string, i, j int) bool {
	before := strings.TrimRight(line[:i], " \t")
	if strings.HasSuffix(before, ".") && !strings.HasSuffix(before, "..") || strings.HasSuffix(before, ":") {
		return true
	}
	after := strings.TrimLeft(line[j:], " \t")
	if !strings.HasPrefix(after, "=") || strings.HasPrefix(after, "==") {
		return false
	}
	if strings.HasSuffix(before, "{") {
		return true
	}
	panic("scripts: the constant " + line[i:j] + " is assigned to")
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

// splitLib cuts lib.lua (or a script) into top-level chunks, which make up its whole text. A function runs from its "local function" line to
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
