//go:build unix && !linux

package childproc

import (
	"os/exec"
	"syscall"
)

// setProcAttr: only Linux has a parent-death signal; elsewhere the caller stops the process.
func setProcAttr(cmd *exec.Cmd, _ syscall.Signal, ownGroup bool, cred *syscall.Credential) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: ownGroup, Credential: cred}
}
