package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgress(t *testing.T) {
	t.Parallel()
	// Not a terminal: nothing is drawn.
	var buf bytes.Buffer
	p := newProgress(&buf, 100)
	p.update(50, 10, 1)
	p.finish()
	if buf.Len() != 0 {
		t.Errorf("progress drew %q on a buffer", buf.String())
	}

	// On a terminal, a bar that redraws itself in place, then a line end.
	p = &progress{w: &buf, size: 200}
	p.update(50, 1000, 0)
	p.update(200, 2499, 1)
	p.finish()
	want := "\r[=======                       ]  25%  1000 added, 0 failed" +
		"\r[==============================] 100%  2499 added, 1 failed\n"
	if buf.String() != want {
		t.Errorf("progress drew\n%q\nwant\n%q", buf.String(), want)
	}

	// Of standard input, whose size is unknown: counts only.
	buf.Reset()
	p = &progress{w: &buf}
	p.update(1<<20, 7, 0)
	if !strings.HasSuffix(buf.String(), "7 added, 0 failed") {
		t.Errorf("progress without a size drew %q", buf.String())
	}
}
