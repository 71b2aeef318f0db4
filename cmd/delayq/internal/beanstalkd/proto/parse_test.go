package proto

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReadCommandParsesArguments checks the parsed form of each command, including the odd
// forms beanstalkd accepts.
func TestReadCommandParsesArguments(t *testing.T) {
	cases := []struct {
		line string
		want Command
	}{
		{"put 1 2 3 5\r\nhello\r\n", Put{Pri: 1, Delay: 2 * time.Second, TTR: 3 * time.Second, Body: []byte("hello")}},
		{"put  4294967295  0 0 0\r\n\r\n", Put{Pri: 4294967295, Body: []byte{}}},
		{"use A-Za-z0-9-+/;.$_()\r\n", Use{"A-Za-z0-9-+/;.$_()"}},
		{"reserve\r\n", Reserve{}},
		{"reserve-with-timeout 7\r\n", ReserveWithTimeout{7 * time.Second}},
		{"reserve-with-timeout x\r\n", ReserveWithTimeout{0}},
		{"reserve-with-timeout  \t+2 x\r\n", ReserveWithTimeout{2 * time.Second}},
		{"reserve-with-timeout -1\r\n", ReserveWithTimeout{-1}},
		{"reserve-with-timeout 4294967295\r\n", ReserveWithTimeout{-1}},
		{"reserve-with-timeout 4294967296\r\n", ReserveWithTimeout{0}},
		{"reserve-job 18446744073709551615\r\n", ReserveJob{18446744073709551615}},
		{"delete 9\r\n", Delete{9}},
		{"release 9 8 7\r\n", Release{ID: 9, Pri: 8, Delay: 7 * time.Second}},
		{"bury 9 8\r\n", Bury{ID: 9, Pri: 8}},
		{"touch 9\r\n", Touch{9}},
		{"watch w\r\n", Watch{"w"}},
		{"ignore w\r\n", Ignore{"w"}},
		{"peek 9\r\n", Peek{9}},
		{"peek-ready\r\n", PeekReady{}},
		{"peek-delayed\r\n", PeekDelayed{}},
		{"peek-buried\r\n", PeekBuried{}},
		{"kick 3\r\n", Kick{3}},
		{"kick -1x\r\n", Kick{18446744073709551615}},
		{"kick-job 9\r\n", KickJob{9}},
		{"stats-job 9\r\n", StatsJob{9}},
		{"stats-tube t\r\n", StatsTube{"t"}},
		{"stats\r\n", Stats{}},
		{"list-tubes\r\n", ListTubes{}},
		{"list-tube-used\r\n", ListTubeUsed{}},
		{"list-tubes-watched\r\n", ListTubesWatched{}},
		{"quit\r\n", Quit{}},
		{"quit now\r\n", Quit{}},
		{"pause-tube t 5\r\n", PauseTube{Tube: "t", Delay: 5 * time.Second}},
		{"pause-tubet 5\r\n", PauseTube{Tube: "t", Delay: 5 * time.Second}},
	}
	for _, c := range cases {
		got, err := NewReader(strings.NewReader(c.line), 0).ReadCommand()
		if err != nil {
			t.Errorf("%q: %v", c.line, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", c.line, diff)
		}
	}
}

// TestReadCommandRefuses checks the error replies, and that the stream goes on after them
// where beanstalkd's does.
func TestReadCommandRefuses(t *testing.T) {
	cases := []struct {
		stream string
		want   []string // replies: an Error's text, or a command's name
	}{
		{"use -a\r\nuse a\r\n", []string{"BAD_FORMAT", "use"}},
		{"use " + strings.Repeat("a", 201) + "\r\n", []string{"BAD_FORMAT"}},
		{"frob\r\nuse\r\n", []string{"UNKNOWN_COMMAND", "UNKNOWN_COMMAND"}},
		{"stats \r\nreservex\r\n", []string{"BAD_FORMAT", "BAD_FORMAT"}},
		{"delete 18446744073709551616\r\nkick 1\r\n", []string{"BAD_FORMAT", "kick"}},
		{"put 0 0 1 3\r\nabcd\r\nuse a\r\n", []string{"EXPECTED_CRLF", "UNKNOWN_COMMAND"}},
		{"put 0 0 1 3\r\nab\r\nuse a\r\n", []string{"EXPECTED_CRLF", "UNKNOWN_COMMAND"}},
		{"put 0 0 1 3\r\nab\r\r\nuse a\r\n", []string{"put", "use"}}, // a body may hold a CR
		{"put 0 0 1 11\r\n0123456789a\r\nuse a\r\n", []string{"JOB_TOO_BIG", "use"}},
		{"put 0 0 1 11 x\r\n0123456789a\r\nuse a\r\n", []string{"JOB_TOO_BIG", "use"}},
		{"put 0 0 1 1 x\r\na\r\n", []string{"BAD_FORMAT", "UNKNOWN_COMMAND"}},
		{strings.Repeat("x", 230) + "\r\nuse a\r\n", []string{"BAD_FORMAT", "use"}},
		{strings.Repeat("x", 224) + "use a\r\nuse b\r\n", []string{"BAD_FORMAT", "use"}},
		{"use a\rb\r\n" + strings.Repeat("y", 300) + "\r\nuse c\r\n", []string{"BAD_FORMAT", "use"}},
		{"use a\x00\r\nuse b\r\n", []string{"BAD_FORMAT", "use"}},
	}
	for _, c := range cases {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(c.stream)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			if diff := cmp.Diff(c.want, readAll(NewReader(r, 10))); diff != "" {
				t.Errorf("%q (one byte at a time: %v) (-want +got):\n%s", c.stream, oneByte, diff)
			}
		}
	}
}

// readAll reads commands until the stream ends, naming each command or error reply.
func readAll(r *Reader) []string {
	var got []string
	for {
		cmd, err := r.ReadCommand()
		var perr Error
		switch {
		case errors.As(err, &perr):
			got = append(got, string(perr))
		case err != nil:
			return got
		default:
			got = append(got, cmd.Name())
		}
	}
}

// TestReplies checks every reply form's bytes.
func TestReplies(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Inserted(1)
	w.BuriedID(2)
	w.Buried()
	w.Reserved(3, []byte("ab"))
	w.Found(4, []byte{})
	w.OK(YAMLList([]string{"default", "x"}))
	w.Using("t")
	w.Watching(2)
	w.Kicked(5)
	w.KickedJob()
	w.Touched()
	w.Released()
	w.Deleted()
	w.Paused()
	w.Error(ErrDeadlineSoon)
	w.OK(YAMLMap([]Field{{"a", "1"}}))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "INSERTED 1\r\nBURIED 2\r\nBURIED\r\nRESERVED 3 2\r\nab\r\nFOUND 4 0\r\n\r\n" +
		"OK 18\r\n---\n- default\n- x\n\r\nUSING t\r\nWATCHING 2\r\nKICKED 5\r\nKICKED\r\n" +
		"TOUCHED\r\nRELEASED\r\nDELETED\r\nPAUSED\r\nDEADLINE_SOON\r\nOK 9\r\n---\na: 1\n\r\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestValidName checks the name rule: 1 to 200 bytes of the name charset, no leading '-'.
func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, "A-Za-z0-9-+/;.$_()": true, strings.Repeat("a", 200): true,
		"": false, "-a": false, "a b": false, "a\tb": false, "a{": false, "é": false,
		strings.Repeat("a", 201): false, "a-": true, "(a)": true,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

// FuzzReadCommand checks that no input panics the reader, and that the commands read do not
// depend on how the bytes were split into reads.
func FuzzReadCommand(f *testing.F) {
	for _, s := range []string{"put 0 0 1 2\r\nab\r\n", "use a\r\nwatch b\r\n", "put 0 0 1 11\r\n" +
		strings.Repeat("z", 13), strings.Repeat("x", 300) + "\r\n", "kick -1\r\nreserve-with-timeout 9\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		whole := readAll(NewReader(bytes.NewReader(stream), 10))
		split := readAll(NewReader(iotest.OneByteReader(bytes.NewReader(stream)), 10))
		if diff := cmp.Diff(whole, split); diff != "" {
			t.Errorf("%q: whole vs one byte at a time (-whole +split):\n%s", stream, diff)
		}
	})
}
