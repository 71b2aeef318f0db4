//go:build unix

package redisproc

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
)

// Ports reserved by ReservePort in this process, each with its cluster bus port.
var (
	portMu   sync.Mutex
	reserved = map[int]bool{}
)

// ReservePort picks a loopback port P such that both P and P+ClusterBusOffset (its cluster bus
// port) are free on 127.0.0.1 and not reserved by another server of this process, and reserves
// both until ReleasePort(P), so that servers started in parallel never pick the same port.
func ReservePort() (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	for range 1000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redisproc: picking a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if port+ClusterBusOffset > 65535 || reserved[port] || reserved[port+ClusterBusOffset] {
			l.Close()
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+ClusterBusOffset)))
		l.Close()
		if err != nil {
			continue
		}
		bus.Close()
		reserved[port] = true
		reserved[port+ClusterBusOffset] = true
		return port, nil
	}
	return 0, errors.New("redisproc: no free port P with P+10000 free found")
}

// ReleasePort releases a port of ReservePort; 0 is ignored.
func ReleasePort(port int) {
	if port == 0 {
		return
	}
	portMu.Lock()
	defer portMu.Unlock()
	delete(reserved, port)
	delete(reserved, port+ClusterBusOffset)
}
