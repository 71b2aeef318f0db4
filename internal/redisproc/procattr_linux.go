package redisproc

import (
	"os/exec"
	"syscall"
)

func setProcAttr(cmd *exec.Cmd, deathSignal syscall.Signal, ownGroup bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: deathSignal}
}
