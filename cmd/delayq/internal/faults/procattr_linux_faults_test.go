//go:build faults && linux

package faults_test

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes an agent die with the test process, so that none outlives a crashed run.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// lowerPriority makes a process yield the CPU to Redis (nice n), so that a measure of Redis's
// command times on a small machine is not a measure of the scheduler.
func lowerPriority(pid, n int) error {
	return syscall.Setpriority(syscall.PRIO_PROCESS, pid, n)
}
