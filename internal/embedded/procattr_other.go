//go:build unix && !linux

package embedded

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts redis-server in its own process group, so that a Ctrl-C in the terminal
// reaches only delayq, which then stops Redis last.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
