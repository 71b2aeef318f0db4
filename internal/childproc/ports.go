//go:build unix

package childproc

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
)

// Ports reserved by ReservePort in this process and not yet released, each with the ports
// reserved beside it.
var (
	portMu   sync.Mutex
	reserved = map[int][]int{}
)

// ReservePort picks a loopback port P such that P and P+offset, for each of offsets (a Redis
// Cluster node's bus port, say), are free on 127.0.0.1 and not reserved by another server of
// this process, and reserves them all until ReleasePort(P), so that servers started in
// parallel never pick the same port.
func ReservePort(offsets ...int) (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	taken := func(p int) bool {
		if _, ok := reserved[p]; ok {
			return true
		}
		for q, offs := range reserved {
			for _, o := range offs {
				if q+o == p {
					return true
				}
			}
		}
		return false
	}
next:
	for range 1000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("childproc: picking a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if taken(port) {
			l.Close()
			continue
		}
		for _, o := range offsets {
			if port+o > 65535 || taken(port+o) {
				l.Close()
				continue next
			}
			side, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+o)))
			if err != nil {
				l.Close()
				continue next
			}
			side.Close()
		}
		l.Close()
		reserved[port] = offsets
		return port, nil
	}
	return 0, errors.New("childproc: no free loopback port found (with the ports beside it free too)")
}

// ReleasePort releases a port of ReservePort and those reserved beside it; 0 is ignored.
func ReleasePort(port int) {
	if port == 0 {
		return
	}
	portMu.Lock()
	defer portMu.Unlock()
	delete(reserved, port)
}
