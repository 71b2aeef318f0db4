package proto

import (
	"bytes"
	"io"
)

// Reader reads commands from a connection the way beanstalkd does, byte for byte: a line
// that has not ended within LineMax bytes is BAD_FORMAT and those LineMax bytes are dropped
// (the next command starts right after them); a put's body must be exactly its size followed
// by CRLF, else EXPECTED_CRLF once size+2 bytes are in; a body over the size limit is read
// and dropped before JOB_TOO_BIG. Its memory is the line buffer plus one body of at most
// the size limit.
type Reader struct {
	r          io.Reader
	maxJobSize uint64
	buf        [LineMax]byte
	n          int // bytes in buf, the start of the next line first
}

// NewReader returns a Reader over r that refuses bodies over maxJobSize bytes
// (DefaultMaxJobSize if maxJobSize is 0).
func NewReader(r io.Reader, maxJobSize int) *Reader {
	if maxJobSize <= 0 {
		maxJobSize = DefaultMaxJobSize
	}
	return &Reader{r: r, maxJobSize: uint64(maxJobSize)}
}

// ReadCommand reads the next command. An Error (BAD_FORMAT, UNKNOWN_COMMAND, EXPECTED_CRLF,
// JOB_TOO_BIG) is the reply to send before reading on; any other error is the connection's.
func (r *Reader) ReadCommand() (Command, error) {
	line, err := r.readLine()
	if err != nil {
		return nil, err
	}
	parsed, err := parseLine(line)
	if err != nil {
		return nil, err
	}
	if h, ok := parsed.(*putHeader); ok {
		return r.readPut(h)
	}
	return parsed.(Command), nil
}

// readLine returns the next line without its CRLF. As in beanstalkd, a line that has not
// ended within LineMax bytes is dropped through its end, however far that is, and answered
// BAD_FORMAT only then; the LineMax bytes are dropped whole, a '\r' at their end included.
func (r *Reader) readLine() (string, error) {
	dropping := false
	for {
		if i := lineEnd(r.buf[:r.n]); i >= 0 {
			line := string(r.buf[:i])
			r.consume(i + 2)
			if dropping {
				return "", ErrBadFormat
			}
			return line, nil
		}
		if r.n == LineMax {
			r.n = 0
			dropping = true
		}
		m, err := r.r.Read(r.buf[r.n:])
		r.n += m
		if m == 0 && err != nil {
			return "", err
		}
	}
}

// lineEnd is beanstalkd's scan_line_end: only the first '\r' counts, and only if '\n' follows
// it; a line holding a lone '\r' goes on until the buffer is full. It returns the index of
// that '\r', or -1.
func lineEnd(b []byte) int {
	if len(b) < 2 {
		return -1
	}
	i := bytes.IndexByte(b[:len(b)-1], '\r')
	if i < 0 || b[i+1] != '\n' {
		return -1
	}
	return i
}

// Fill reads once into the line buffer, if it has room: a server waiting in reserve calls it
// to notice a client that has closed its sending side, which beanstalkd answers TIMED_OUT at
// once. It returns the read's error; bytes read wait for the next ReadCommand.
func (r *Reader) Fill() error {
	if r.n == LineMax {
		return nil
	}
	m, err := r.r.Read(r.buf[r.n:])
	r.n += m
	return err
}

// consume drops the first k buffered bytes.
func (r *Reader) consume(k int) {
	r.n = copy(r.buf[:], r.buf[k:r.n])
}

// Full reports whether the line buffer is full, so that Fill would not read.
func (r *Reader) Full() bool { return r.n == LineMax }

// readPut fetches the body that follows a put line.
func (r *Reader) readPut(h *putHeader) (Command, error) {
	if h.size > r.maxJobSize {
		// beanstalkd throws away size+2 bytes, counted in a signed 64-bit integer.
		if err := r.discard(int64(h.size) + 2); err != nil {
			return nil, err
		}
		return nil, ErrJobTooBig
	}
	if h.garbage {
		return nil, ErrBadFormat
	}
	body := make([]byte, h.size+2)
	k := copy(body, r.buf[:r.n])
	r.consume(k)
	if _, err := io.ReadFull(r.r, body[k:]); err != nil {
		return nil, noEOF(err)
	}
	if !bytes.HasSuffix(body, []byte("\r\n")) {
		return nil, ErrExpectedCRLF
	}
	return Put{Pri: h.pri, Delay: h.delay, TTR: h.ttr, Body: body[:h.size]}, nil
}

// discard reads and drops n bytes.
func (r *Reader) discard(n int64) error {
	if n <= 0 {
		return nil
	}
	k := int64(r.n)
	if k > n {
		k = n
	}
	r.consume(int(k))
	if _, err := io.CopyN(io.Discard, r.r, n-k); err != nil {
		return noEOF(err)
	}
	return nil
}

// noEOF turns a short read inside a body into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
