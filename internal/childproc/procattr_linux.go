package childproc

import (
	"os/exec"
	"syscall"
)

func setProcAttr(cmd *exec.Cmd, deathSignal syscall.Signal, ownGroup bool, cred *syscall.Credential) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: deathSignal, Credential: cred}
}
