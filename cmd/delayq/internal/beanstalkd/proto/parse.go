package proto

import (
	"math"
	"strings"
	"time"
)

const (
	// LineMax is beanstalkd's command buffer (LINE_BUF_SIZE): a command line, CRLF included,
	// must arrive within this many bytes.
	LineMax = 224
	// NameMax is the longest tube name.
	NameMax = 200
	// DefaultMaxJobSize is beanstalkd's default maximum job body (-z).
	DefaultMaxJobSize = 65535
	// nameChars are the bytes a tube name may hold; it may not start with '-'.
	nameChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-+/;.$_()"
)

// parser parses what follows a command's prefix.
type parser func(rest string) (Command, error)

// commands is beanstalkd's which_cmd: prefixes tried in this order, the first that the line
// starts with wins. The order matters because the prefixes overlap ("reserve" and
// "reserve-with-timeout ", "stats" and "stats-job "); a command without arguments must then be
// exactly its prefix, or the line is BAD_FORMAT rather than UNKNOWN_COMMAND.
var commands = []struct {
	prefix string
	parse  parser
}{
	{"put ", nil}, // a put header: the body follows, so the reader handles it
	{"peek ", idCommand(func(id uint64) Command { return Peek{id} })},
	{"peek-ready", bare(PeekReady{})},
	{"peek-delayed", bare(PeekDelayed{})},
	{"peek-buried", bare(PeekBuried{})},
	{"reserve-with-timeout ", parseReserveWithTimeout},
	{"reserve-job ", idCommand(func(id uint64) Command { return ReserveJob{id} })},
	{"reserve", bare(Reserve{})},
	{"delete ", idCommand(func(id uint64) Command { return Delete{id} })},
	{"release ", parseRelease},
	{"bury ", parseBury},
	{"kick ", parseKick},
	{"kick-job ", idCommand(func(id uint64) Command { return KickJob{id} })},
	{"touch ", idCommand(func(id uint64) Command { return Touch{id} })},
	{"stats-job ", idCommand(func(id uint64) Command { return StatsJob{id} })},
	{"stats-tube ", nameCommand(func(n string) Command { return StatsTube{n} })},
	{"stats", bare(Stats{})},
	{"use ", nameCommand(func(n string) Command { return Use{n} })},
	{"watch ", nameCommand(func(n string) Command { return Watch{n} })},
	{"ignore ", nameCommand(func(n string) Command { return Ignore{n} })},
	{"list-tubes-watched", bare(ListTubesWatched{})},
	{"list-tube-used", bare(ListTubeUsed{})},
	{"list-tubes", bare(ListTubes{})},
	{"quit", func(string) (Command, error) { return Quit{}, nil }},
	{"pause-tube", parsePauseTube},
}

// putHeader is a put line's arguments; size is the body length without its CRLF.
type putHeader struct {
	pri        uint32
	delay, ttr time.Duration
	size       uint64
	garbage    bool // something follows the size: BAD_FORMAT, unless the job is too big
}

// parseLine parses a command line without its CRLF. A put comes back as a *putHeader for the
// reader to fetch the body.
func parseLine(line string) (any, error) {
	// beanstalkd NUL-terminates the line and refuses it if a NUL came earlier.
	if strings.IndexByte(line, 0) >= 0 {
		return nil, ErrBadFormat
	}
	for _, c := range commands {
		if !strings.HasPrefix(line, c.prefix) {
			continue
		}
		if c.parse == nil {
			return parsePutHeader(line[len(c.prefix):])
		}
		return c.parse(line[len(c.prefix):])
	}
	return nil, ErrUnknownCommand
}

// bare parses a command that takes no arguments: anything after its name is BAD_FORMAT.
func bare(cmd Command) parser {
	return func(rest string) (Command, error) {
		if rest != "" {
			return nil, ErrBadFormat
		}
		return cmd, nil
	}
}

// idCommand parses a command whose one argument is a job id.
func idCommand(make func(uint64) Command) parser {
	return func(rest string) (Command, error) {
		id, _, err := readU64(rest, true)
		if err != nil {
			return nil, err
		}
		return make(id), nil
	}
}

// nameCommand parses a command whose argument, the rest of the line, is a tube name.
func nameCommand(make func(string) Command) parser {
	return func(rest string) (Command, error) {
		if !ValidName(rest) {
			return nil, ErrBadFormat
		}
		return make(rest), nil
	}
}

// ValidName reports whether s is a tube name beanstalkd accepts: 1 to 200 bytes of
// A-Za-z0-9 and "-+/;.$_()", not starting with '-'.
func ValidName(s string) bool {
	return len(s) > 0 && len(s) <= NameMax && nameSpan(s) == len(s) && s[0] != '-'
}

// nameSpan returns the length of s's leading run of name bytes (C's strspn).
func nameSpan(s string) int {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(nameChars, s[i]) < 0 {
			return i
		}
	}
	return len(s)
}

// parseReserveWithTimeout reads the timeout as beanstalkd does, with C's strtol into an int:
// no digits is 0, trailing text is ignored, and a negative timeout (or one that wraps to
// negative in 32 bits) waits for ever, which Timeout reports as a negative duration.
func parseReserveWithTimeout(rest string) (Command, error) {
	n, _, ok := strtol(rest)
	if !ok {
		return nil, ErrBadFormat
	}
	secs := int32(n)
	if secs < 0 {
		return ReserveWithTimeout{Timeout: -1}, nil
	}
	return ReserveWithTimeout{Timeout: time.Duration(secs) * time.Second}, nil
}

func parseRelease(rest string) (Command, error) {
	id, rest, err := readU64(rest, false)
	if err != nil {
		return nil, err
	}
	pri, rest, err := readU32(rest, false)
	if err != nil {
		return nil, err
	}
	delay, _, err := readDuration(rest, true)
	if err != nil {
		return nil, err
	}
	return Release{ID: id, Pri: pri, Delay: delay}, nil
}

func parseBury(rest string) (Command, error) {
	id, rest, err := readU64(rest, false)
	if err != nil {
		return nil, err
	}
	pri, _, err := readU32(rest, true)
	if err != nil {
		return nil, err
	}
	return Bury{ID: id, Pri: pri}, nil
}

// parseKick reads the bound with C's strtoul, as beanstalkd does: it must hold digits, and
// what follows them is ignored.
func parseKick(rest string) (Command, error) {
	n, end, ok := strtoul(rest)
	if !ok || len(end) == len(rest) {
		return nil, ErrBadFormat
	}
	return Kick{n}, nil
}

// parsePauseTube reads the name as beanstalkd does here: leading spaces skipped, then the run
// of name bytes, which must make a valid name; the delay must end the line. The prefix has no
// space: "pause-tubex 1" pauses tube "x".
func parsePauseTube(rest string) (Command, error) {
	rest = strings.TrimLeft(rest, " ")
	n := nameSpan(rest)
	if !ValidName(rest[:n]) {
		return nil, ErrBadFormat
	}
	d, _, err := readDuration(rest[n:], true)
	if err != nil {
		return nil, err
	}
	return PauseTube{Tube: rest[:n], Delay: d}, nil
}

// parsePutHeader reads `<pri> <delay> <ttr> <bytes>`, each a 32-bit number. Text after the
// size is BAD_FORMAT only once the size is known to fit: beanstalkd checks the limit first.
func parsePutHeader(rest string) (*putHeader, error) {
	var h putHeader
	var err error
	if h.pri, rest, err = readU32(rest, false); err != nil {
		return nil, err
	}
	if h.delay, rest, err = readDuration(rest, false); err != nil {
		return nil, err
	}
	if h.ttr, rest, err = readDuration(rest, false); err != nil {
		return nil, err
	}
	size, rest, err := readU32(rest, false)
	if err != nil {
		return nil, err
	}
	h.size = uint64(size)
	h.garbage = rest != ""
	return &h, nil
}

// readU64 is beanstalkd's read_u64: spaces skipped, then a decimal number that must start
// with a digit and fit in 64 bits. With atEnd the number must end the line; otherwise the
// unread rest is returned.
func readU64(s string, atEnd bool) (uint64, string, error) {
	s = strings.TrimLeft(s, " ")
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, "", ErrBadFormat
	}
	n, rest, overflow := digits(s)
	if overflow || (atEnd && rest != "") {
		return 0, "", ErrBadFormat
	}
	return n, rest, nil
}

// readU32 is readU64 limited to 32 bits (beanstalkd's read_u32).
func readU32(s string, atEnd bool) (uint32, string, error) {
	n, rest, err := readU64(s, atEnd)
	if err != nil || n > math.MaxUint32 {
		return 0, "", ErrBadFormat
	}
	return uint32(n), rest, nil
}

// readDuration is a 32-bit count of seconds.
func readDuration(s string, atEnd bool) (time.Duration, string, error) {
	n, rest, err := readU32(s, atEnd)
	return time.Duration(n) * time.Second, rest, err
}

// digits reads the leading decimal digits of s as strtoumax does: all of them, reporting
// overflow past 64 bits.
func digits(s string) (n uint64, rest string, overflow bool) {
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if n > (math.MaxUint64-d)/10 {
			overflow = true
		}
		n = n*10 + d
	}
	return n, s[i:], overflow
}

// strtoul is C's strtoul(s, &end, 10) on a 64-bit system: ok is false where it sets ERANGE.
// Without digits it returns 0 and s itself as the rest.
func strtoul(s string) (n uint64, rest string, ok bool) {
	neg, t := sign(s)
	if t == "" || t[0] < '0' || t[0] > '9' {
		return 0, s, true
	}
	n, rest, overflow := digits(t)
	if overflow {
		return 0, rest, false
	}
	if neg {
		n = -n
	}
	return n, rest, true
}

// strtol is C's strtol(s, &end, 10) on a 64-bit system: ok is false where it sets ERANGE.
func strtol(s string) (n int64, rest string, ok bool) {
	neg, t := sign(s)
	if t == "" || t[0] < '0' || t[0] > '9' {
		return 0, s, true
	}
	u, rest, overflow := digits(t)
	switch {
	case overflow, !neg && u > math.MaxInt64, neg && u > 1<<63:
		return 0, rest, false
	case neg:
		return int64(-u), rest, true
	}
	return int64(u), rest, true
}

// sign skips C's white space and an optional sign.
func sign(s string) (neg bool, rest string) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	if t != "" && (t[0] == '+' || t[0] == '-') {
		return t[0] == '-', t[1:]
	}
	return false, t
}
