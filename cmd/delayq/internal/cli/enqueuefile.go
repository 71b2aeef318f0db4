package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiclient"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

const (
	// fileBatchJobs is the batch endpoint's default limit of jobs per request.
	fileBatchJobs = 1000
	// fileBatchBytes keeps a request under the server's default limit of 32 MiB per batch.
	fileBatchBytes = 16 << 20
	// maxLineBytes is far above what one job request may hold (1 MiB of body as base64, plus
	// its other fields); a longer line is reported rather than sent.
	maxLineBytes = 8 << 20
)

// lineFailure is a line of the file that was not added.
type lineFailure struct {
	Line  int          `json:"line"`
	ID    string       `json:"id,omitempty"` // the line's id, when it has one
	Error *apiv1.Error `json:"error"`
}

// fileSummary is what enqueue --file reports.
type fileSummary struct {
	Added int `json:"added"`
	// Existed counts the lines whose id named a job that on_conflict kept or replaced.
	Existed int           `json:"existed,omitempty"`
	Failed  []lineFailure `json:"failed"`
}

// fileBatch is the lines waiting to be sent.
type fileBatch struct {
	jobs  []json.RawMessage
	lines []int
	bytes int
}

// lineDefaults are what enqueue --file adds to each line with an id that does not give it
// (both need an id: a line without one is sent as it is).
type lineDefaults struct {
	uniqueFor  *time.Duration // unique_for_ms; nil: nothing added
	onConflict string         // on_conflict; "": nothing added
}

// apply returns line with the defaults it lacks inserted first, the rest byte for byte (the
// API keeps the JSON text of a body as it was sent). line is a JSON object.
func (d lineDefaults) apply(line []byte) ([]byte, error) {
	if d.uniqueFor == nil && d.onConflict == "" {
		return line, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return nil, err
	}
	if _, ok := fields["id"]; !ok {
		return line, nil
	}
	var add []byte
	if _, ok := fields["unique_for_ms"]; !ok && d.uniqueFor != nil {
		add = fmt.Appendf(add, `"unique_for_ms":%d,`, d.uniqueFor.Milliseconds())
	}
	if _, ok := fields["on_conflict"]; !ok && d.onConflict != "" {
		add = fmt.Appendf(add, `"on_conflict":%q,`, d.onConflict)
	}
	if len(add) == 0 {
		return line, nil
	}
	return append(append([]byte{'{'}, add...), line[1:]...), nil
}

// enqueueFile enqueues every line of a JSON Lines file into topic, through the batch endpoint,
// with the defaults each line lacks. It reports each line that failed, and returns an error
// when any did.
func enqueueFile(ctx context.Context, c *apiclient.Client, out *output, topic, path string, defaults lineDefaults) error {
	in, size, err := openInput(path)
	if err != nil {
		return err
	}
	defer in.Close()
	counted := &countingReader{r: in}
	r := bufio.NewReaderSize(counted, 1<<20)
	bar := newProgress(out.errw, size)
	sum := fileSummary{Failed: []lineFailure{}}
	var b fileBatch

	send := func() error {
		if len(b.jobs) == 0 {
			return nil
		}
		if err := b.send(ctx, c, out, topic, &sum); err != nil {
			return err
		}
		b = fileBatch{}
		bar.update(counted.n, sum.Added, len(sum.Failed))
		return nil
	}

	for lineNo := 1; err == nil; lineNo++ {
		var line []byte
		line, err = readLine(r)
		if err != nil && !errors.Is(err, io.EOF) {
			if errors.Is(err, errLineTooLong) {
				sum.Failed = append(sum.Failed, lineFailure{Line: lineNo, Error: &apiv1.Error{Code: "invalid_argument", Message: fmt.Sprintf("the line is over %d bytes", maxLineBytes)}})
				err = nil
				continue
			}
			bar.finish()
			return fmt.Errorf("--file: reading line %d: %w", lineNo, err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if msg := checkLine(line); msg != "" {
			sum.Failed = append(sum.Failed, lineFailure{Line: lineNo, ID: lineID(line), Error: &apiv1.Error{Code: "invalid_argument", Message: msg}})
			continue
		}
		if line, err = defaults.apply(line); err != nil {
			sum.Failed = append(sum.Failed, lineFailure{Line: lineNo, Error: &apiv1.Error{Code: "invalid_argument", Message: fmt.Sprintf("not a JSON object: %v", err)}})
			err = nil
			continue
		}
		if len(b.jobs) > 0 && b.bytes+len(line) > fileBatchBytes {
			if serr := send(); serr != nil {
				bar.finish()
				return sum.report(out, serr)
			}
		}
		b.jobs = append(b.jobs, json.RawMessage(line))
		b.lines = append(b.lines, lineNo)
		b.bytes += len(line) + 1
		if len(b.jobs) == fileBatchJobs {
			if serr := send(); serr != nil {
				bar.finish()
				return sum.report(out, serr)
			}
		}
	}
	serr := send()
	bar.finish()
	return sum.report(out, serr)
}

// openInput opens the file --file names, standard input for "-", and returns its size when
// known (0 otherwise).
func openInput(path string) (io.ReadCloser, int64, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), 0, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("--file: %w", err)
	}
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return f, size, nil
}

// send enqueues the batch's lines in one request and adds each line's outcome to sum. An
// error means the request as a whole failed, and no line's outcome is known.
func (b *fileBatch) send(ctx context.Context, c *apiclient.Client, out *output, topic string, sum *fileSummary) error {
	bctx, cancel := out.bound(ctx, 0)
	res, err := c.EnqueueBatchRaw(bctx, topic, b.jobs)
	cancel()
	if err == nil && len(res) != len(b.jobs) {
		err = fmt.Errorf("the server answered %d results for %d jobs", len(res), len(b.jobs))
	}
	if err != nil {
		return fmt.Errorf("sending lines %d to %d: %w", b.lines[0], b.lines[len(b.lines)-1], err)
	}
	for i, item := range res {
		switch {
		case item.Error != nil:
			sum.Failed = append(sum.Failed, lineFailure{Line: b.lines[i], ID: lineID(b.jobs[i]), Error: item.Error})
		case item.Job != nil && item.Job.Existed:
			sum.Existed++
		default:
			sum.Added++
		}
	}
	return nil
}

// report prints the summary and returns the error Run should end with: cause, or a count of
// the failed lines.
func (s *fileSummary) report(out *output, cause error) error {
	// Lines refused here and lines the server refused come in input order.
	sort.SliceStable(s.Failed, func(i, j int) bool { return s.Failed[i].Line < s.Failed[j].Line })
	if out.json {
		if err := out.printJSON(s); err != nil {
			return err
		}
	} else {
		existed := ""
		if s.Existed > 0 {
			existed = fmt.Sprintf(", %d kept or replaced", s.Existed)
		}
		fmt.Fprintf(out.w, "added %s%s, %d failed\n", plural(s.Added, "job"), existed, len(s.Failed))
		for _, f := range s.Failed {
			id := ""
			if f.ID != "" {
				id = fmt.Sprintf(" (id %q)", f.ID)
			}
			fmt.Fprintf(out.w, "  line %d%s: %s\n", f.Line, id, oneLine(f.Error.Error()))
		}
	}
	if cause != nil {
		return fmt.Errorf("stopped after adding %s: %w", plural(s.Added, "job"), cause)
	}
	if len(s.Failed) > 0 {
		return fmt.Errorf("%d of %s were not added", len(s.Failed), plural(s.Added+s.Existed+len(s.Failed), "job"))
	}
	return nil
}

// lineID returns the id a JSON Lines line gives its job, or "".
func lineID(line []byte) string {
	var j struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(line, &j)
	return j.ID
}

// plural writes n with word, in the plural unless n is 1: "1 job", "2 jobs".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// checkLine returns why a line cannot be sent as a job request, or "".
func checkLine(line []byte) string {
	if line[0] != '{' {
		return "not a JSON object"
	}
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		return fmt.Sprintf("not valid JSON: %v", err)
	}
	return ""
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line, with its end; a line longer than maxLineBytes is read
// through and reported as errLineTooLong.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong && len(line)+len(chunk) > maxLineBytes {
			tooLong, line = true, nil
		}
		if !tooLong {
			line = append(line, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case tooLong && (err == nil || errors.Is(err, io.EOF)):
			return nil, errLineTooLong
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		}
		return line, err
	}
}

// countingReader counts the bytes read through it, for the progress bar.
type countingReader struct {
	r io.Reader
	n int64
}

// Read reads from the underlying reader, counting the bytes.
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// progress draws a progress bar on a terminal; on anything else it draws nothing.
type progress struct {
	w     io.Writer // nil: not a terminal
	size  int64
	shown bool
}

func newProgress(w io.Writer, size int64) *progress {
	if !isTerminal(w) {
		return &progress{}
	}
	return &progress{w: w, size: size}
}

func (p *progress) update(read int64, added, failed int) {
	if p.w == nil {
		return
	}
	p.shown = true
	const width = 30
	if p.size > 0 {
		frac := min(float64(read)/float64(p.size), 1)
		n := int(frac * width)
		fmt.Fprintf(p.w, "\r[%s%s] %3.0f%%  %d added, %d failed", strings.Repeat("=", n), strings.Repeat(" ", width-n), frac*100, added, failed)
		return
	}
	fmt.Fprintf(p.w, "\r%d added, %d failed", added, failed)
}

func (p *progress) finish() {
	if p.w != nil && p.shown {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
