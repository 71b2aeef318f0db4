package bench

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill the benchmark's redis-server when the benchmark dies
// without stopping it.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
