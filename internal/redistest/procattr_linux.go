package redistest

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel SIGKILL the server if the test binary dies
// without running its cleanups (a panic or a -timeout), so no redis-server
// outlives the test process.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
