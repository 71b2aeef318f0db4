package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// This file holds a minimal RESP2 client used for the helper's own control
// traffic (readiness probes, INFO, CLUSTER INFO, SENTINEL ...). It is kept
// independent of go-redis on purpose: every probe is one short-lived
// connection with hard deadlines and no retries, pooling or protocol
// negotiation, which keeps the waits predictable.

// replyError is an error reply ("-ERR ...") sent by the server.
type replyError string

func (e replyError) Error() string { return string(e) }

// do sends one command to addr on a fresh connection and returns its reply:
// string (simple or bulk string), int64, []any, nil (null) or, for an error
// reply, a replyError as the error.
func do(addr string, timeout time.Duration, args ...string) (any, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := conn.Write(encodeCommand(args)); err != nil {
		return nil, err
	}
	return readReply(bufio.NewReader(conn))
}

// doString is do for commands whose reply is a string (INFO, CLUSTER INFO,
// CLUSTER NODES, PING).
func doString(addr string, timeout time.Duration, args ...string) (string, error) {
	r, err := do(addr, timeout, args...)
	if err != nil {
		return "", err
	}
	s, ok := r.(string)
	if !ok {
		return "", fmt.Errorf("%s: unexpected reply %T to %v", addr, r, args)
	}
	return s, nil
}

func encodeCommand(args []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return []byte(b.String())
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply line")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, replyError(line[1:])
	case ':':
		return strconv.ParseInt(line[1:], 10, 64)
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, 0, n)
		for i := 0; i < n; i++ {
			v, err := readReply(r)
			var re replyError
			if err != nil && !errors.As(err, &re) {
				return nil, err
			}
			if err != nil {
				v = re
			}
			out = append(out, v)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unsupported reply type %q", line)
	}
}

// infoField returns the value of field in an INFO-style "key:value" text.
func infoField(info, field string) (string, bool) {
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && k == field {
			return v, true
		}
	}
	return "", false
}

// pairs turns a flat [k1 v1 k2 v2 ...] reply into a map.
func pairs(r any) map[string]string {
	m := map[string]string{}
	arr, _ := r.([]any)
	for i := 0; i+1 < len(arr); i += 2 {
		k, _ := arr[i].(string)
		v, _ := arr[i+1].(string)
		m[k] = v
	}
	return m
}

// pairsList turns an array of flat key/value arrays into a slice of maps.
func pairsList(r any) []map[string]string {
	arr, _ := r.([]any)
	out := make([]map[string]string, 0, len(arr))
	for _, e := range arr {
		out = append(out, pairs(e))
	}
	return out
}
