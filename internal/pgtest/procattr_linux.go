package pgtest

import "syscall"

// procAttr runs the child as cred's user, killed with SIGKILL should this process die first.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}
