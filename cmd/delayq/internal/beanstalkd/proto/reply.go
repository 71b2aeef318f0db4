package proto

import (
	"bufio"
	"io"
	"strconv"
	"time"
)

// Writer writes replies. Each method buffers one reply; Flush sends what is buffered, so a
// server answering pipelined commands can send their replies together.
type Writer struct {
	w *bufio.Writer
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriter(w)} }

// Flush sends the buffered replies.
func (w *Writer) Flush() error { return w.w.Flush() }

// Error writes an error reply such as NOT_FOUND.
func (w *Writer) Error(e Error) { w.word(string(e)) }

// Inserted writes `INSERTED <id>`, the reply to a stored put.
func (w *Writer) Inserted(id uint64) { w.wordID("INSERTED", id) }

// BuriedID writes `BURIED <id>`: a put whose job was buried for lack of memory.
func (w *Writer) BuriedID(id uint64) { w.wordID("BURIED", id) }

// Buried writes `BURIED`, the reply to bury (and to a release that had to bury).
func (w *Writer) Buried() { w.word("BURIED") }

// Reserved writes `RESERVED <id> <bytes>` and the body.
func (w *Writer) Reserved(id uint64, body []byte) { w.job("RESERVED", id, body) }

// Found writes `FOUND <id> <bytes>` and the body, the reply to the peek commands.
func (w *Writer) Found(id uint64, body []byte) { w.job("FOUND", id, body) }

// OK writes `OK <bytes>` and a YAML document.
func (w *Writer) OK(yaml []byte) {
	w.w.WriteString("OK ")
	w.w.WriteString(strconv.Itoa(len(yaml)))
	w.w.WriteString("\r\n")
	w.w.Write(yaml)
	w.w.WriteString("\r\n")
}

// Using writes `USING <tube>`.
func (w *Writer) Using(tube string) { w.word("USING " + tube) }

// Watching writes `WATCHING <count>`.
func (w *Writer) Watching(n int) { w.word("WATCHING " + strconv.Itoa(n)) }

// Kicked writes `KICKED <count>`, the reply to kick.
func (w *Writer) Kicked(count uint64) { w.word("KICKED " + strconv.FormatUint(count, 10)) }

// KickedJob writes `KICKED`, the reply to kick-job.
func (w *Writer) KickedJob() { w.word("KICKED") }

// Touched writes `TOUCHED`.
func (w *Writer) Touched() { w.word("TOUCHED") }

// Released writes `RELEASED`.
func (w *Writer) Released() { w.word("RELEASED") }

// Deleted writes `DELETED`.
func (w *Writer) Deleted() { w.word("DELETED") }

// Paused writes `PAUSED`.
func (w *Writer) Paused() { w.word("PAUSED") }

func (w *Writer) word(s string) {
	w.w.WriteString(s)
	w.w.WriteString("\r\n")
}

func (w *Writer) wordID(word string, id uint64) {
	w.word(word + " " + strconv.FormatUint(id, 10))
}

func (w *Writer) job(word string, id uint64, body []byte) {
	w.word(word + " " + strconv.FormatUint(id, 10) + " " + strconv.Itoa(len(body)))
	w.w.Write(body)
	w.w.WriteString("\r\n")
}

// YAMLList renders names as beanstalkd's list replies do ("---\n- name\n" ...).
func YAMLList(names []string) []byte {
	b := []byte("---\n")
	for _, n := range names {
		b = append(b, "- "...)
		b = append(b, n...)
		b = append(b, '\n')
	}
	return b
}

// Field is one `key: value` line of a stats document.
type Field struct {
	Key, Value string
}

// YAMLMap renders fields, in order, as beanstalkd's stats replies do.
func YAMLMap(fields []Field) []byte {
	b := []byte("---\n")
	for _, f := range fields {
		b = append(b, f.Key...)
		b = append(b, ": "...)
		b = append(b, f.Value...)
		b = append(b, '\n')
	}
	return b
}

// seconds renders a duration as beanstalkd's whole seconds.
func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

func u64(n uint64) string { return strconv.FormatUint(n, 10) }
