//go:build unix && !linux

package pgtest

import "syscall"

// procAttr runs the child as cred's user. Only Linux has a parent-death signal; elsewhere the
// cleanup of the test stops the process.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
