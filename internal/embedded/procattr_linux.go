package embedded

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts redis-server in its own process group, so that a Ctrl-C in the terminal
// reaches only delayq, which then stops Redis last; and has the kernel send it SIGTERM (a clean
// shutdown that flushes the AOF) should delayq die without stopping it. The kernel sends that
// signal when the thread that started the child ends, so process.start keeps that thread.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
